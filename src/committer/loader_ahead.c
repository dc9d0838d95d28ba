/*-------------------------------------------------------------------------
 *
 * loader_ahead.c
 *	  A loader loading a streamed transaction's rows while it runs, in the
 *	  transaction its checkpoint then finishes and prepares (loader.c).
 *
 * Writers publish the own staged files of a streamed transaction X of an
 * append sink, and how far each is logged (ipc/ahead_publish.c); the
 * committer starts a loader for X (load_ahead.c).  The loader begins a
 * transaction block as loader.c does and runs ONE COPY FROM whose data
 * source (ahead_read) gives the whole batches of X's files up to their
 * published ends, waiting on its latch while X runs (writers set it after
 * each append).  Once X committed, and so every batch of it is published
 * (a writer raises the end before it acknowledges the batch, and X commits
 * only after every acknowledgement), the COPY ends after the last batch.
 * If X aborts, the loader rolls back and exits: nothing is loaded.  The
 * rows are only ever in the loader's open transaction, so a crash or a
 * failover at any moment before its PREPARE loses that transaction only,
 * and the checkpoint loads the files the usual way.
 *
 * The loader then waits for its checkpoint, holding one transaction id
 * (the xmin horizon), RowExclusiveLock on the target and the uncommitted
 * rows, for at most paimon_sink.load_ahead_max_wait after X's commit.
 * When the committer gives it a checkpoint that takes all of X's files
 * (a whole assignment, as commit_parallel.c gives any loader), loader.c
 * loads the checkpoint's other files in the same transaction
 * (loader_ahead_rest names them), records the snapshot, raises the mark
 * and prepares under the checkpoint's gid.  Given up, stopped by the
 * committer (a checkpoint into the target that does not take X), or its
 * committer gone, it rolls back and exits.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/transam.h"
#include "access/xact.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "storage/latch.h"
#include "storage/lock.h"
#include "storage/proc.h"
#include "storage/procarray.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "apply/load.h"
#include "committer/commit_steps.h"
#include "committer/loader_ahead.h"
#include "core/fault.h"
#include "core/guc.h"
#include "core/wait_events.h"
#include "metadata/metadata.h"
#include "staging/staged_file.h"

/* How long one wait for more batches or for the checkpoint lasts at most. */
#define AHEAD_WAIT_MS 1000

/* This loader's entries (loader.c took them), and what it loads ahead. */
static DatabaseEntry *AheadDatabase;
static LoaderEntry *AheadLoader;
static uint64 ahead_xid;
static int32 ahead_sink_id;
static uint64 ahead_incarnation;
static uint64 ahead_loaded; /* the rows its COPY loaded */
static Oid ahead_target;	/* the sink's target, whose lock waiters it gives way to */

/* One file of X as the data source reads it. */
typedef struct AheadCursor
{
	char path[MAXPGPATH];
	File file;
	off_t offset; /* of the next batch */
} AheadCursor;

/* The data source's state (COPY's callback has no argument). */
static struct
{
	AheadCursor cursors[PAIMON_SINK_AHEAD_FILES];
	int opened;
	StringInfoData batch;
	int batch_position;
	bool header_sent;
	bool committed; /* X was seen committed: the ends read after that are final */
	bool done;
	bool first_seen;
} source;

/*
 * loader_ahead_take makes the worker the loader of the streamed
 * transaction its entry names, if the committer that started it still
 * serves the database; false otherwise (the worker leaves).
 */
bool
loader_ahead_take(DatabaseEntry *db, LoaderEntry *loader)
{
	bool taken;

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	taken = loader->state == LOADER_AHEAD_STARTED && loader->pid == 0 && db->committer_pid != 0 &&
			loader->committer_incarnation == db->committer_incarnation;
	if (taken)
	{
		loader->state = LOADER_AHEAD_LOADING;
		loader->pid = MyProcPid;
		loader->ahead_proc = MyProc;
		loader->ahead_started_at = GetCurrentTimestamp();
		ahead_xid = loader->ahead_xid;
		ahead_sink_id = loader->sink_id;
		ahead_incarnation = loader->committer_incarnation;
		ahead_target = loader->ahead_target;
	}
	LWLockRelease(PaimonSinkState->lock);
	AheadDatabase = db;
	AheadLoader = loader;
	return taken;
}

/*
 * still_wanted tells whether the loader may go on loading ahead or
 * waiting: its entry still loads ahead (or was given its checkpoint) and
 * the committer that started it still serves.
 */
static bool
still_wanted(bool *assigned)
{
	bool wanted;

	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	*assigned = AheadLoader->state == LOADER_ASSIGNED;
	wanted = (AheadLoader->state == LOADER_AHEAD_LOADING ||
			  AheadLoader->state == LOADER_LOADED_AHEAD || *assigned) &&
			 AheadDatabase->committer_incarnation == ahead_incarnation &&
			 AheadDatabase->committer_pid != 0;
	LWLockRelease(PaimonSinkState->lock);
	return wanted;
}

/* stop_unless_wanted raises the error that ends a loader no longer wanted. */
static void
stop_unless_wanted(void)
{
	bool assigned;

	if (!still_wanted(&assigned))
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("paimon_sink loader stops loading ahead"),
						errdetail("Its committer stopped it or is gone; nothing it loaded is "
								  "kept.")));
}

/*
 * next_batch puts into source.batch the next whole batch of X that any of
 * its files has, up to the file's published end; false when none has one
 * now.
 */
static bool
next_batch(void)
{
	int count;

	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	count = AheadLoader->ahead_file_count;
	LWLockRelease(PaimonSinkState->lock);
	for (int f = 0; f < count; f++)
	{
		AheadCursor *cursor = &source.cursors[f];
		off_t end = (off_t) pg_atomic_read_u64(&AheadLoader->ahead_files[f].end);
		StagedBatchHeader header;

		if (end == 0)
			continue;
		if (f >= source.opened)
		{
			if (f > source.opened)
				continue; /* files are opened in order */
			staged_file_path(cursor->path, MyDatabaseId, ahead_sink_id,
							 AheadLoader->ahead_files[f].name);
			cursor->file = staged_file_open(cursor->path, NULL, &cursor->offset, ERROR);
			if (cursor->file < 0)
				ereport(ERROR, (errcode_for_file_access(),
								errmsg("could not open staged file \"%s\": %m", cursor->path)));
			source.opened++;
		}
		if (cursor->offset >= end)
			continue;
		if (!staged_file_read_batch(cursor->file, cursor->path, cursor->offset, end, &header,
									&source.batch) ||
			header.full_xid != ahead_xid)
			ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
							errmsg("staged file \"%s\" has no batch of transaction %llu at "
								   "offset %lld",
								   cursor->path, (unsigned long long) ahead_xid,
								   (long long) cursor->offset),
							errdetail("Nothing loaded ahead is kept; the checkpoint loads the "
									  "file.")));
		cursor->offset += sizeof(header) + header.payload_length;
		source.batch_position = 0;
		pg_atomic_fetch_add_u64(&AheadLoader->rows_done, header.row_count);
		pg_atomic_fetch_add_u64(&AheadLoader->ahead_rows_read, header.row_count);
		pg_atomic_fetch_add_u64(&AheadLoader->ahead_bytes_read, header.payload_length);
		return true;
	}
	return false;
}

/*
 * waiting_for_loader returns the pid of a process that waits for a lock
 * this loader holds, 0 when none does: its transaction id (a tuple lock:
 * a key or a row of its uncommitted rows, X's own backend among them) or
 * its target in a mode that conflicts with RowExclusiveLock (ALTER TABLE,
 * TRUNCATE, DROP, LOCK TABLE).  The loader waits for X and for its
 * checkpoint on its latch, which the deadlock detector does not see: a
 * waiter on it may be what X waits for, directly or through others (a
 * cycle nothing would break), and rows loaded ahead must not hold up
 * anyone who would not wait without them.  So the loader gives way to
 * such a waiter: it rolls back, and the checkpoint loads the files the
 * usual way.  The lock table is read as pg_locks reads it
 * (GetLockStatusData), at most once a wait of the loader.
 */
static int
waiting_for_loader(void)
{
	LockData *locks = GetLockStatusData();
	int waiter = 0;

	for (int i = 0; i < locks->nelements && waiter == 0; i++)
	{
		LockInstanceData *lock = &locks->locks[i];
		const LOCKTAG *tag = &lock->locktag;

		if (lock->waitLockMode == NoLock || lock->pid == MyProcPid)
			continue;
		/* the load runs in a subtransaction: a waiter waits for its xid first */
		if ((tag->locktag_type == LOCKTAG_TRANSACTION &&
			 TransactionIdIsCurrentTransactionId((TransactionId) tag->locktag_field1)) ||
			(tag->locktag_type == LOCKTAG_RELATION && OidIsValid(ahead_target) &&
			 tag->locktag_field1 == MyDatabaseId && tag->locktag_field2 == ahead_target &&
			 lock->waitLockMode >= ShareLock))
			waiter = lock->pid;
	}
	pfree(locks->locks);
	pfree(locks);
	return waiter;
}

/* give_way raises the error that ends a loader another process waits for (waiting_for_loader). */
static void
give_way(int waiter)
{
	ereport(ERROR,
			(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
			 errmsg("paimon_sink loader stops loading transaction %llu ahead: process %d waits "
					"for it",
					(unsigned long long) ahead_xid, waiter),
			 errdetail("Process %d waits for a lock the loader holds; nothing the loader loaded "
					   "is kept, and the checkpoint loads the rows.",
					   waiter)));
}

/*
 * reload_settings reads the configuration again when asked; true while
 * paimon_sink.load_ahead is still on.
 */
static bool
reload_settings(void)
{
	if (ConfigReloadPending)
	{
		ConfigReloadPending = false;
		ProcessConfigFile(PGC_SIGHUP);
	}
	return PaimonSinkLoadAhead;
}

/*
 * wait_for_batches waits for more of X when none is published: X still
 * runs (a bounded wait on the latch), X committed (one more look at the
 * ends, final now, then the end of the data), or X aborted (an error: the
 * loader rolls back).
 */
static void
wait_for_batches(void)
{
	TransactionId xid = (TransactionId) ahead_xid;

	if (source.committed)
	{
		source.done = true;
		return;
	}
	if (TransactionIdIsInProgress(xid))
	{
		int events = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
							   AHEAD_WAIT_MS, wait_event_for(WAIT_LOAD_AHEAD_ROWS));

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		stop_unless_wanted();
		if (!reload_settings())
			ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
							errmsg("paimon_sink loader stops loading ahead: paimon_sink.load_ahead "
								   "is off"),
							errdetail("Nothing it loaded is kept.")));
		/* a second without a batch: X, or another, may be waiting for this loader */
		if (events & WL_TIMEOUT)
		{
			int waiter = waiting_for_loader();

			if (waiter != 0)
				give_way(waiter);
		}
		return;
	}
	if (!TransactionIdDidCommit(xid))
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("paimon_sink loader stops loading ahead: transaction %llu aborted",
							   (unsigned long long) ahead_xid),
						errdetail("Nothing of its rows is kept.")));
	source.committed = true;
}

/*
 * ahead_read is COPY's data source: the binary format's header, then the
 * whole batches of X's files as they are published, until X committed
 * and every batch is read.
 */
static int
ahead_read(void *outbuf, int minread, int maxread)
{
	int copied = 0;

	if (!source.header_sent)
	{
		load_copy_header(&source.batch);
		source.batch_position = 0;
		source.header_sent = true;
	}
	while (copied < minread)
	{
		int available = source.batch.len - source.batch_position;

		if (available > 0)
		{
			int take = Min(available, maxread - copied);

			memcpy((char *) outbuf + copied, source.batch.data + source.batch_position, take);
			source.batch_position += take;
			copied += take;
			continue;
		}
		if (source.done)
			break;
		CHECK_FOR_INTERRUPTS();
		if (next_batch())
		{
			if (!source.first_seen)
				fault_point("loader_ahead_loading"); /* its first batch read */
			source.first_seen = true;
			continue;
		}
		wait_for_batches();
	}
	return copied;
}

/*
 * set_loaded moves the entry to LOADED_AHEAD (unless the checkpoint was
 * already given) and says when: from then on paimon_sink.load_ahead_max_wait
 * runs.
 */
static void
set_loaded(void)
{
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	AheadLoader->ahead_done_at = GetCurrentTimestamp();
	if (AheadLoader->state == LOADER_AHEAD_LOADING)
		AheadLoader->state = LOADER_LOADED_AHEAD;
	LWLockRelease(PaimonSinkState->lock);
}

/*
 * load_ahead_copy begins the loader's transaction block and loads X's
 * rows with one COPY; the block stays open.  Returns the rows loaded.
 */
static uint64
load_ahead_copy(void)
{
	ConstraintsSetStmt *immediate = makeNode(ConstraintsSetStmt);
	MemoryContext context = CurrentMemoryContext;
	SinkInfo *sink = palloc0(sizeof(SinkInfo));
	char *saved_lock_timeout;
	uint64 rows;

	commit_begin_block(); /* as the committer's own commits begin theirs */
	if (!metadata_sink_by_id(ahead_sink_id, sink) || SINK_IS_UPSERT(sink) ||
		SINK_IS_OVERWRITE(sink) || sink->reject_on_error)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("paimon_sink loader stops loading ahead: sink %d is no longer an "
							   "append sink",
							   ahead_sink_id)));
	/* as the checkpoint's load: deferrable constraints are checked as the load ends */
	immediate->deferred = false;
	AfterTriggerSetState(immediate);
	memset(&source, 0, sizeof(source));
	initStringInfo(&source.batch);
	/*
	 * A lock wait of the COPY itself (a key X also inserted into the target
	 * directly) ends before the deadlock detector could choose X as the
	 * victim of a cycle through it: the loader gives way, X goes on.
	 */
	saved_lock_timeout = pstrdup(GetConfigOption("lock_timeout", false, false));
	(void) set_config_option("lock_timeout", psprintf("%d", Max(DeadlockTimeout / 2, 1)), PGC_SUSET,
							 PGC_S_SESSION, GUC_ACTION_SET, true, 0, false);
	rows = load_files_from(sink, ahead_read);
	(void) set_config_option("lock_timeout", saved_lock_timeout, PGC_SUSET, PGC_S_SESSION,
							 GUC_ACTION_SET, true, 0, false);
	for (int f = 0; f < source.opened; f++)
		FileClose(source.cursors[f].file);
	PopActiveSnapshot();
	SPI_finish();
	CommitTransactionCommand(); /* the statement; the block stays open */
	MemoryContextSwitchTo(context);
	return rows;
}

/*
 * loader_ahead_give_up ends a loader that loads ahead without its
 * checkpoint: its transaction rolled back, its entry refused until X ends
 * (so that X's later files are not published again), counted as stopped.
 * why is logged at DEBUG1.  Raises nothing.
 */
void
loader_ahead_give_up(const char *why)
{
	AbortOutOfAnyTransaction();
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	if (AheadLoader->pid == MyProcPid && AheadLoader->state != LOADER_ASSIGNED)
		AheadLoader->state = LOADER_AHEAD_REFUSED;
	LWLockRelease(PaimonSinkState->lock);
	pg_atomic_fetch_add_u64(&AheadDatabase->ahead_stats.stopped, 1);
	ereport(DEBUG1, (errmsg("paimon_sink loader gave up loading transaction %llu ahead: %s",
							(unsigned long long) ahead_xid, why)));
}

/*
 * files_left tells whether X's first file is still there: a dropped sink's
 * staged files are removed by its committer, and no checkpoint will take
 * them.
 */
static bool
files_left(void)
{
	struct stat st;

	return source.opened == 0 || stat(source.cursors[0].path, &st) == 0 || errno != ENOENT;
}

/*
 * give_up_unless_assigned refuses the entry under the lock unless the
 * committer gave it its checkpoint meanwhile: false (give up), or true
 * (the checkpoint was given: the loader goes on to it, and whoever waits
 * for it waits as for the committer's own load).
 */
static bool
give_up_unless_assigned(void)
{
	bool assigned;

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	assigned = AheadLoader->state == LOADER_ASSIGNED;
	if (!assigned)
		AheadLoader->state = LOADER_AHEAD_REFUSED;
	LWLockRelease(PaimonSinkState->lock);
	return assigned;
}

/*
 * wait_for_checkpoint waits until the committer gives the loader its
 * checkpoint (true), or it no longer may wait (false): stopped, its
 * committer gone, or paimon_sink.load_ahead_max_wait passed since X
 * committed (then its entry is refused under the lock, so that the
 * committer cannot give it a checkpoint meanwhile).
 */
static bool
wait_for_checkpoint(void)
{
	for (;;)
	{
		bool assigned;
		TimestampTz done_at;

		if (!still_wanted(&assigned))
			return false;
		if (assigned)
			return true;
		LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
		done_at = AheadLoader->ahead_done_at;
		if (AheadLoader->state != LOADER_ASSIGNED &&
			TimestampDifferenceExceeds(done_at, GetCurrentTimestamp(),
									   PaimonSinkLoadAheadMaxWaitMs))
		{
			AheadLoader->state = LOADER_AHEAD_REFUSED;
			LWLockRelease(PaimonSinkState->lock);
			return false;
		}
		LWLockRelease(PaimonSinkState->lock);
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, AHEAD_WAIT_MS,
						 wait_event_for(WAIT_LOAD_AHEAD_CHECKPOINT));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (!reload_settings())
			return give_up_unless_assigned(); /* off: nothing held between checkpoints */
		if (waiting_for_loader() != 0 || !files_left())
			return give_up_unless_assigned();
	}
}

/*
 * loader_ahead_run loads X's rows ahead and waits for the checkpoint that
 * takes them: true once it is given (loader.c then takes the assignment
 * and loads the rest); false when the loader gave up (its transaction
 * rolled back).  An error (X aborted, a damaged batch, a row the target
 * refuses) is raised as it comes; the caller gives up.
 */
bool
loader_ahead_run(void)
{
	uint64 rows;

	pgstat_report_activity(STATE_RUNNING, "loading a streamed transaction ahead");
	rows = ahead_loaded = load_ahead_copy();
	set_loaded();
	ereport(DEBUG1, (errmsg("paimon_sink loader loaded %llu rows of transaction %llu ahead",
							(unsigned long long) rows, (unsigned long long) ahead_xid)));
	pgstat_report_activity(STATE_IDLEINTRANSACTION, "waiting for its paimon_sink checkpoint");
	fault_point("loader_ahead_waiting");
	if (!wait_for_checkpoint())
	{
		loader_ahead_give_up("no checkpoint took its rows in time, or it was stopped");
		return false;
	}
	fault_point("loader_ahead_assigned");
	return true;
}

/*
 * loader_ahead_rest returns the checkpoint's files (LoadFile *) but X's,
 * which were loaded ahead; *rows gets the rows loaded ahead.  Each of X's
 * files must be there whole at the size it was read to, else an error
 * (nothing is prepared; the committer's retry loads the checkpoint).
 */
List *
loader_ahead_rest(List *files, uint64 *rows)
{
	List *rest = NIL;
	int matched = 0;
	ListCell *lc;

	foreach (lc, files)
	{
		LoadFile *file = lfirst(lc);
		bool ahead = false;

		for (int f = 0; f < source.opened && !ahead; f++)
			if (strcmp(file->path, source.cursors[f].path) == 0)
			{
				if (file->excluded_count > 0 || file->size != source.cursors[f].offset)
					ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
									errmsg("staged file \"%s\" changed after it was loaded ahead",
										   file->path),
									errdetail("Nothing of the checkpoint was applied.")));
				ahead = true;
				matched++;
			}
		if (!ahead)
			rest = lappend(rest, file);
	}
	if (matched != source.opened)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("the checkpoint does not take every file loaded ahead"),
						errdetail("Nothing of the checkpoint was applied.")));
	*rows = ahead_loaded;
	return rest;
}
