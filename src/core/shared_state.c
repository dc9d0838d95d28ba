/*-------------------------------------------------------------------------
 *
 * shared_state.c
 *	  Sizing, creation and look-up of paimon_sink's shared memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/transam.h"
#include "access/twophase.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/shmem.h"
#include "utils/errcodes.h"

#include "core/guc.h"
#include "core/shared_state.h"
#include "core/wait_events.h"

PaimonSinkShared *PaimonSinkState = NULL;

/* True once _PG_init ran from shared_preload_libraries. */
bool PaimonSinkPreloaded = false;

/*
 * The database entry this process serves, as PostgreSQL has MyProc: a
 * committer's (work_init sets it) or a writer's (set at its start); NULL
 * in other processes.
 */
int MyDatabaseIndex;
DatabaseEntry *MyDatabaseEntry = NULL;

/* queue_bytes returns the size in bytes of one hand-off or reply queue. */
static Size
queue_bytes(void)
{
	return MAXALIGN((Size) PaimonSinkQueueSizeKB * 1024);
}

/* shared_queue_size returns the size in bytes of every queue. */
Size
shared_queue_size(void)
{
	return queue_bytes();
}

/* Largest number of xids a snapshot can list. */
static Size
snapshot_xid_capacity(void)
{
	return (Size) MaxBackends + max_prepared_xacts + 1;
}

/* writer_entry_size returns the bytes of one writer: its entry, slots, queues and snapshot xids. */
static Size
writer_entry_size(void)
{
	Size size;

	size = MAXALIGN(offsetof(WriterEntry, slots) + sizeof(HandoffSlot) * PaimonSinkQueuesPerWriter);
	size = add_size(size, mul_size(PaimonSinkQueuesPerWriter, queue_bytes()));
	size = add_size(size, MAXALIGN(sizeof(TransactionId) * snapshot_xid_capacity()));
	size = add_size(size, queue_bytes());
	return size;
}

/* loader_entry_size returns the bytes of one loader entry, aligned. */
static Size
loader_entry_size(void)
{
	return MAXALIGN(sizeof(LoaderEntry));
}

/* database_entry_size returns the bytes of one database entry, its writers and its loaders. */
static Size
database_entry_size(void)
{
	Size size;

	size = MAXALIGN(offsetof(DatabaseEntry, writer_offsets) +
					sizeof(Size) * PaimonSinkWritersPerDatabase);
	size = add_size(size, mul_size(PaimonSinkWritersPerDatabase, writer_entry_size()));
	size = add_size(size, mul_size(PaimonSinkLoadersPerDatabase, loader_entry_size()));
	return size;
}

/* header_size returns the bytes of the state's header and its offsets. */
static Size
header_size(void)
{
	return MAXALIGN(offsetof(PaimonSinkShared, database_offsets) +
					sizeof(Size) * PaimonSinkMaxDatabases);
}

/* total_size returns the bytes of the whole state. */
static Size
total_size(void)
{
	return add_size(header_size(), mul_size(PaimonSinkMaxDatabases, database_entry_size()));
}

/* shared_state_request asks for the shared memory and the lock (shmem_request_hook). */
void
shared_state_request(void)
{
	RequestAddinShmemSpace(total_size());
	RequestNamedLWLockTranche("paimon_sink", 1);
}

/* shared_address turns an offset from the start of the state into an address. */
void *
shared_address(Size offset)
{
	return (char *) PaimonSinkState + offset;
}

/* shared_database returns the database entry of an index. */
DatabaseEntry *
shared_database(int index)
{
	Assert(index >= 0 && index < PaimonSinkState->database_count);
	return (DatabaseEntry *) shared_address(PaimonSinkState->database_offsets[index]);
}

/* shared_writer returns writer index of a database entry. */
WriterEntry *
shared_writer(DatabaseEntry *db, int index)
{
	Assert(index >= 0 && index < PaimonSinkState->writers_per_database);
	return (WriterEntry *) shared_address(db->writer_offsets[index]);
}

/* shared_loader returns loader index of a database entry. */
LoaderEntry *
shared_loader(DatabaseEntry *db, int index)
{
	Assert(index >= 0 && index < PaimonSinkLoadersPerDatabase);
	return (LoaderEntry *) shared_address(db->loader_offset + index * loader_entry_size());
}

/* shared_state_init creates or attaches to the state (shmem_startup_hook). */
void
shared_state_init(void)
{
	bool found;
	Size offset;

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	PaimonSinkState = ShmemInitStruct("paimon_sink", total_size(), &found);
	if (!found)
	{
		memset(PaimonSinkState, 0, total_size());
		PaimonSinkState->lock = &(GetNamedLWLockTranche("paimon_sink"))->lock;
		PaimonSinkState->database_count = PaimonSinkMaxDatabases;
		PaimonSinkState->writers_per_database = PaimonSinkWritersPerDatabase;
		SpinLockInit(&PaimonSinkState->faults.mutex);
		offset = header_size();
		for (int d = 0; d < PaimonSinkMaxDatabases; d++)
		{
			DatabaseEntry *db;
			Size writer_offset;

			PaimonSinkState->database_offsets[d] = offset;
			db = shared_database(d);
			ConditionVariableInit(&db->request_done);
			ConditionVariableInit(&db->workers_ready);
			pg_atomic_init_u64(&db->committer_heartbeat, 0);
			SpinLockInit(&db->progress.mutex);
			SpinLockInit(&db->parallel_progress.mutex);
			SpinLockInit(&db->schedule.mutex);
			db->progress.phase = COMMIT_PHASE_IDLE;
			db->parallel_progress.phase = COMMIT_PHASE_IDLE;
			writer_offset = offset + MAXALIGN(offsetof(DatabaseEntry, writer_offsets) +
											  sizeof(Size) * PaimonSinkWritersPerDatabase);
			for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
			{
				WriterEntry *writer;
				Size area;

				db->writer_offsets[w] = writer_offset;
				writer = shared_writer(db, w);
				SpinLockInit(&writer->mutex);
				ConditionVariableInit(&writer->slot_freed);
				pg_atomic_init_u64(&writer->rows_staged, 0);
				pg_atomic_init_u64(&writer->bytes_staged, 0);
				pg_atomic_init_u32(&writer->files_open, 0);
				pg_atomic_init_u32(&writer->queues_in_use, 0);
				pg_atomic_init_u32(&writer->streams, 0);
				pg_atomic_init_u64(&writer->fsyncs, 0);
				pg_atomic_init_u64(&writer->handoffs, 0);
				pg_atomic_init_u32(&writer->open_staged_omitted, 0);
				pg_atomic_init_u64(&writer->sinks_held, 0);
				pg_atomic_init_u64(&writer->heartbeat, 0);
				writer->fences = 0;
				writer->fenced_at = 0;
				writer->slot_count = PaimonSinkQueuesPerWriter;
				area = writer_offset + MAXALIGN(offsetof(WriterEntry, slots) +
												sizeof(HandoffSlot) * PaimonSinkQueuesPerWriter);
				for (int s = 0; s < PaimonSinkQueuesPerWriter; s++)
				{
					writer->slots[s].queue_offset = area;
					area += queue_bytes();
				}
				writer->barrier_xip_offset = area;
				area += MAXALIGN(sizeof(TransactionId) * snapshot_xid_capacity());
				writer->barrier_queue_offset = area;
				writer_offset += writer_entry_size();
			}
			db->loader_offset = writer_offset;
			for (int l = 0; l < PaimonSinkLoadersPerDatabase; l++)
			{
				LoaderEntry *loader = shared_loader(db, l);

				pg_atomic_init_u64(&loader->rows_done, 0);
				pg_atomic_init_u32(&loader->files_done, 0);
				pg_atomic_init_u64(&loader->ahead_rows_read, 0);
				pg_atomic_init_u64(&loader->ahead_bytes_read, 0);
				for (int f = 0; f < PAIMON_SINK_AHEAD_FILES; f++)
					pg_atomic_init_u64(&loader->ahead_files[f].end, 0);
			}
			pg_atomic_init_u64(&db->ahead_stats.started, 0);
			pg_atomic_init_u64(&db->ahead_stats.taken, 0);
			pg_atomic_init_u64(&db->ahead_stats.stopped, 0);
			pg_atomic_init_u64(&db->ahead_stats.rows, 0);
			pg_atomic_init_u64(&db->ahead_stats.bytes, 0);
			pg_atomic_init_u64(&db->ahead_stats.us, 0);
			offset += database_entry_size();
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/*
 * shared_find_database returns the entry index of a database, or -1.
 * The caller holds PaimonSinkState->lock.
 */
int
shared_find_database(Oid database_id)
{
	for (int d = 0; d < PaimonSinkState->database_count; d++)
	{
		DatabaseEntry *db = shared_database(d);

		if (db->state != DATABASE_UNUSED && db->database_id == database_id)
			return d;
	}
	return -1;
}

/*
 * shared_try_want_database is shared_want_database that returns -1 rather
 * than raise an error when every entry is taken (for a commit callback).
 */
static int
shared_try_want_database(Oid database_id, bool has_extension)
{
	int index;
	bool changed = false;

	/* the common case, on every commit that wrote to a sink: nothing to do */
	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	index = shared_find_database(database_id);
	if (index >= 0 && shared_database(index)->state == DATABASE_WANTED &&
		(shared_database(index)->extension_seen || !has_extension))
	{
		LWLockRelease(PaimonSinkState->lock);
		return index;
	}
	LWLockRelease(PaimonSinkState->lock);

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	index = shared_find_database(database_id);
	if (index < 0)
	{
		/* a free entry, or one of a database without sinks whose workers left */
		for (int d = 0; d < PaimonSinkState->database_count; d++)
		{
			DatabaseEntry *db = shared_database(d);
			bool reusable = db->state == DATABASE_UNUSED;

			if (db->state == DATABASE_NO_EXTENSION && db->committer_pid == 0)
			{
				reusable = true;
				for (int w = 0; w < PaimonSinkState->writers_per_database; w++)
				{
					WriterEntry *writer = shared_writer(db, w);

					SpinLockAcquire(&writer->mutex);
					reusable = reusable && writer->pid == 0;
					SpinLockRelease(&writer->mutex);
				}
				for (int l = 0; l < PaimonSinkLoadersPerDatabase; l++)
					reusable = reusable && shared_loader(db, l)->pid == 0;
				for (int l = 0; reusable && l < PaimonSinkLoadersPerDatabase; l++)
					shared_loader(db, l)->state = LOADER_FREE;
				for (int r = 0; reusable && r < PAIMON_SINK_REQUESTS_PER_DATABASE; r++)
					db->requests[r].state = REQUEST_FREE;
			}
			if (reusable)
			{
				db->database_id = database_id;
				db->state = DATABASE_WANTED;
				db->extension_seen = has_extension;
				db->committer_failed_at = 0;
				index = d;
				changed = true;
				break;
			}
		}
	}
	else if (shared_database(index)->state != DATABASE_WANTED)
	{
		shared_database(index)->state = DATABASE_WANTED;
		shared_database(index)->extension_seen = has_extension;
		changed = true;
	}
	else if (has_extension && !shared_database(index)->extension_seen)
	{
		/* a probe's entry: the launcher now holds the database to the budget */
		shared_database(index)->extension_seen = true;
		changed = true;
	}
	LWLockRelease(PaimonSinkState->lock);

	if (changed)
		shared_wake_launcher();
	return index;
}

/*
 * shared_want_database marks a database as needing a committer and returns
 * its entry index; ERRCODE_CONFIGURATION_LIMIT_EXCEEDED when every entry is
 * taken.  has_extension says that the caller knows the extension to be
 * installed (its function runs there), rather than asking for a probe: the
 * launcher probes a database only while the worker budget has room, and
 * reports one known to have the extension that it cannot serve.  It wakes
 * the launcher when the state changed.
 */
int
shared_want_database(Oid database_id, bool has_extension)
{
	int index = shared_try_want_database(database_id, has_extension);

	if (index < 0)
		ereport(ERROR, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
						errmsg("too many databases use paimon_sink"),
						errdetail("All %d database entries are in use.", PaimonSinkMaxDatabases),
						errhint("Raise paimon_sink.max_databases and restart the server.")));
	return index;
}

/*
 * shared_extension_committed is called when a transaction that created or
 * updated the extension commits: it wants the database's workers again and
 * counts the commit, so that a committer that looked before it does not
 * take the extension for missing.  Raises no error (a commit callback).
 */
void
shared_extension_committed(Oid database_id)
{
	int index = shared_try_want_database(database_id, true);

	if (index < 0)
		return;
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	shared_database(index)->extension_commits++;
	LWLockRelease(PaimonSinkState->lock);
}

/*
 * shared_extension_commits returns the count of CREATE/ALTER EXTENSION
 * commits in a database (0 without an entry), for
 * shared_extension_dropped.
 */
uint64
shared_extension_commits(Oid database_id)
{
	int index;
	uint64 commits = 0;

	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	index = shared_find_database(database_id);
	if (index >= 0)
		commits = shared_database(index)->extension_commits;
	LWLockRelease(PaimonSinkState->lock);
	return commits;
}

/*
 * shared_extension_dropped is called when a transaction that found the
 * extension gone at its pre-commit commits: the database's workers are no
 * longer wanted, so the launcher stops trying to start them (a database
 * the budget cannot serve has no committer to notice the drop) and the
 * committer, woken, leaves at once.  Nothing changes when a CREATE
 * EXTENSION committed since commits_seen was read.  Raises no error (a
 * commit callback).
 */
void
shared_extension_dropped(Oid database_id, uint64 commits_seen)
{
	int index;
	DatabaseEntry *db;

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	index = shared_find_database(database_id);
	if (index < 0 || shared_database(index)->extension_commits != commits_seen)
	{
		LWLockRelease(PaimonSinkState->lock);
		return;
	}
	db = shared_database(index);
	db->state = DATABASE_NO_EXTENSION;
	db->extension_seen = false;
	if (db->committer_proc != NULL)
		SetLatch(&db->committer_proc->procLatch);
	LWLockRelease(PaimonSinkState->lock);
	shared_wake_launcher();
}

/* shared_wake_launcher sets the launcher's latch, if it runs. */
void
shared_wake_launcher(void)
{
	PGPROC *launcher;

	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	launcher = PaimonSinkState->launcher_proc;
	if (launcher != NULL)
		SetLatch(&launcher->procLatch);
	LWLockRelease(PaimonSinkState->lock);
}

/*
 * shared_database_wanted tells whether a database's workers are wanted
 * (DatabaseState DATABASE_WANTED).
 */
bool
shared_database_wanted(Oid database_id)
{
	int index;
	bool wanted;

	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	index = shared_find_database(database_id);
	wanted = index >= 0 && shared_database(index)->state == DATABASE_WANTED;
	LWLockRelease(PaimonSinkState->lock);
	return wanted;
}

/*
 * shared_stop_database stops the committer, writers and loaders of a database and
 * waits (up to 5 s) until they left; the launcher does not restart them.
 */
void
shared_stop_database(Oid database_id)
{
	int index;
	DatabaseEntry *db;

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	index = shared_find_database(database_id);
	if (index < 0)
	{
		LWLockRelease(PaimonSinkState->lock);
		return;
	}
	db = shared_database(index);
	db->state = DATABASE_NO_EXTENSION;
	db->extension_seen = false;
	LWLockRelease(PaimonSinkState->lock);

	for (int attempt = 0; attempt < 50; attempt++)
	{
		bool running = false;
		pid_t pid;

		LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
		pid = db->committer_pid;
		LWLockRelease(PaimonSinkState->lock);

		if (pid != 0)
		{
			running = true;
			(void) kill(pid, SIGTERM);
		}
		for (int w = 0; w < PaimonSinkState->writers_per_database; w++)
		{
			WriterEntry *writer = shared_writer(db, w);

			SpinLockAcquire(&writer->mutex);
			pid = writer->pid;
			SpinLockRelease(&writer->mutex);
			if (pid != 0)
			{
				running = true;
				(void) kill(pid, SIGTERM);
			}
		}
		for (int l = 0; l < PaimonSinkLoadersPerDatabase; l++)
		{
			LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
			pid = shared_loader(db, l)->pid;
			LWLockRelease(PaimonSinkState->lock);
			if (pid != 0)
			{
				running = true;
				(void) kill(pid, SIGTERM);
			}
		}
		if (!running)
			return;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100,
						 wait_event_for(WAIT_WORKERS_EXIT));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/* shared_require_preload raises an error unless loaded at server start. */
void
shared_require_preload(void)
{
	if (!PaimonSinkPreloaded || PaimonSinkState == NULL)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("paimon_sink must be loaded via shared_preload_libraries"),
						errhint("Add paimon_sink to shared_preload_libraries in postgresql.conf "
								"and restart the server.")));
}
