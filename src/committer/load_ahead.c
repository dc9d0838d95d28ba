/*-------------------------------------------------------------------------
 *
 * load_ahead.c
 *	  The committer's side of loading ahead: starting a loader for a
 *	  streamed transaction its writers published, giving it the
 *	  checkpoint that takes all its files, stopping it otherwise.
 *
 * Writers publish a streamed transaction's own files in a loader entry
 * (ipc/ahead_publish.c).  Each turn of its loop the committer looks at
 * the entries: one just claimed is loaded ahead when paimon_sink.load_ahead
 * is on and its sink is an append sink (not upsert, not overwrite, on_error
 * 'abort', in no sink group: those keep their own paths) — the committer
 * then starts its loader (loader_ahead.c), else marks it refused until the
 * transaction ends.  When a checkpoint of the sink and commit user takes
 * every file of the transaction whole (load_ahead_match), the committer
 * gives it to that loader as a whole assignment (commit_parallel.c, which
 * takes the loader's handle with load_ahead_take).  Before any other load
 * into the same target the committer stops the loaders that loaded ahead
 * into it (load_ahead_stop): their uncommitted rows would make that load
 * wait on their unique keys, and they wait for a checkpoint the committer
 * would never reach.  A stopped loader rolls back; its transaction's
 * files are loaded by their checkpoint the usual way.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/transam.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/procarray.h"
#include "utils/memutils.h"

#include "apply/load.h"
#include "committer/load_ahead.h"
#include "committer/work.h"
#include "core/guc.h"
#include "core/shared_state.h"
#include "core/worker_start.h"
#include "metadata/metadata.h"
#include "staging/staged_file.h"

/* The handles of the loaders this committer started to load ahead, by entry. */
static BackgroundWorkerHandle *handles[PAIMON_SINK_MAX_LOADERS];

/* What decide_step reads of an entry's sink. */
typedef struct AheadDecision
{
	int32 sink_id;
	bool eligible;
	Oid target;
} AheadDecision;

/*
 * decide_step reads the sink of an entry and says whether its
 * transaction may be loaded ahead (a step of work_try).
 */
static void
decide_step(void *arg)
{
	AheadDecision *decision = arg;
	SinkInfo sink;

	work_begin();
	decision->eligible = metadata_sink_by_id(decision->sink_id, &sink) && !SINK_IS_UPSERT(&sink) &&
						 !SINK_IS_OVERWRITE(&sink) && !sink.reject_on_error &&
						 metadata_group_of_sink(sink.sink_id) == NULL;
	decision->target = decision->eligible ? sink.target : InvalidOid;
	work_end();
}

/* xid_running tells whether the transaction of a full xid still runs. */
static bool
xid_running(uint64 full_xid)
{
	return TransactionIdIsInProgress((TransactionId) full_xid);
}

/*
 * start_loader decides about entry i, just claimed by a writer: refused,
 * or its loader started.
 */
static void
start_loader(int i)
{
	LoaderEntry *loader = shared_loader(MyDatabaseEntry, i);
	AheadDecision decision = {0};
	bool start = false;
	MemoryContext old;

	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	decision.sink_id = loader->sink_id;
	LWLockRelease(PaimonSinkState->lock);
	if (PaimonSinkLoadAhead && work_try(decide_step, &decision, NULL))
		start = decision.eligible;
	MemoryContextReset(CommitterContext);

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	if (loader->state == LOADER_AHEAD_WANTED)
	{
		loader->state = start ? LOADER_AHEAD_STARTED : LOADER_AHEAD_REFUSED;
		loader->committer_incarnation = MyDatabaseEntry->committer_incarnation;
		loader->ahead_target = decision.target;
	}
	else
		start = false;
	LWLockRelease(PaimonSinkState->lock);
	if (!start)
		return;
	old = MemoryContextSwitchTo(TopMemoryContext);
	handles[i] = worker_start_loader(MyDatabaseIndex, i);
	MemoryContextSwitchTo(old);
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	if (handles[i] == NULL)
		loader->state = LOADER_AHEAD_REFUSED; /* no worker slot: the checkpoint loads it */
	LWLockRelease(PaimonSinkState->lock);
	if (handles[i] != NULL)
		pg_atomic_fetch_add_u64(&MyDatabaseEntry->ahead_stats.started, 1);
}

/*
 * load_ahead_serve looks at the loader entries once per turn of the
 * committer's loop: starts (or refuses) the loaders of transactions that
 * writers just published, frees a refused entry once its transaction
 * ended, and forgets the loaders that stopped (given up, rolled back),
 * freeing their entries.  Raises nothing (a catalog read that fails
 * refuses the entry).
 */
void
load_ahead_serve(void)
{
	for (int i = 0; i < PaimonSinkLoadersPerDatabase; i++)
	{
		LoaderEntry *loader = shared_loader(MyDatabaseEntry, i);
		int state;
		uint64 xid;
		pid_t pid;

		if (handles[i] != NULL && GetBackgroundWorkerPid(handles[i], &pid) == BGWH_STOPPED)
		{
			pfree(handles[i]);
			handles[i] = NULL;
			LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
			/* exited without freeing its entry (killed): its transaction is gone */
			if (loader->pid == 0 &&
				(loader->state == LOADER_AHEAD_STARTED || loader->state == LOADER_AHEAD_LOADING ||
				 loader->state == LOADER_LOADED_AHEAD))
			{
				loader->state = LOADER_AHEAD_REFUSED;
				pg_atomic_fetch_add_u64(&MyDatabaseEntry->ahead_stats.stopped, 1);
			}
			LWLockRelease(PaimonSinkState->lock);
		}
		LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
		state = loader->state;
		xid = loader->ahead_xid;
		LWLockRelease(PaimonSinkState->lock);
		if (state == LOADER_AHEAD_WANTED && handles[i] == NULL)
			start_loader(i);
		else if (state == LOADER_AHEAD_REFUSED && !xid_running(xid))
		{
			LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
			if (loader->state == LOADER_AHEAD_REFUSED && loader->pid == 0)
				loader->state = LOADER_FREE;
			LWLockRelease(PaimonSinkState->lock);
		}
	}
}

/*
 * takes_file tells whether the checkpoint's files include file name whole
 * (no batch left out) at the size end the loader read it to.
 */
static bool
takes_file(const SinkInfo *sink, List *files, const char *name, uint64 end)
{
	ListCell *lc;

	foreach (lc, files)
	{
		LoadFile *file = lfirst(lc);
		struct stat st;

		if (strcmp(file->name, name) != 0)
			continue;
		return file->excluded_count == 0 && stat(file->path, &st) == 0 &&
			   (uint64) st.st_size == end;
	}
	return false;
}

/*
 * load_ahead_match returns the loader entry (1-based) that loaded ahead a
 * transaction whose files the checkpoint of sink and commit_user, with
 * files (LoadFile *), takes all of, whole; 0 when none does.  A loader
 * still reading is matched too: it goes on to the checkpoint once it has
 * read everything.  Raises nothing.
 */
int
load_ahead_match(const SinkInfo *sink, const char *commit_user, List *files)
{
	for (int i = 0; i < PaimonSinkLoadersPerDatabase; i++)
	{
		LoaderEntry *loader = shared_loader(MyDatabaseEntry, i);
		bool match;

		if (handles[i] == NULL)
			continue;
		LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
		match = (loader->state == LOADER_AHEAD_LOADING || loader->state == LOADER_LOADED_AHEAD) &&
				loader->sink_id == sink->sink_id && strcmp(loader->commit_user, commit_user) == 0 &&
				!loader->ahead_overflow && loader->ahead_file_count > 0 &&
				!xid_running(loader->ahead_xid);
		for (int f = 0; match && f < loader->ahead_file_count; f++)
			match = takes_file(sink, files, loader->ahead_files[f].name,
							   pg_atomic_read_u64(&loader->ahead_files[f].end));
		LWLockRelease(PaimonSinkState->lock);
		if (match)
			return i + 1;
	}
	return 0;
}

/*
 * load_ahead_stop stops every loader that loads ahead into target but the
 * one of entry except (1-based; 0: none) and waits until they are gone:
 * their transactions roll back.  Its wait is bounded by the loaders' own
 * interrupt checks (each wait of theirs is).  Raises nothing.
 */
void
load_ahead_stop(Oid target, int except)
{
	for (int i = 0; i < PaimonSinkLoadersPerDatabase; i++)
	{
		LoaderEntry *loader = shared_loader(MyDatabaseEntry, i);
		bool stop;

		if (handles[i] == NULL || i + 1 == except)
			continue;
		LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
		stop = loader->ahead_target == target;
		LWLockRelease(PaimonSinkState->lock);
		if (!stop)
			continue;
		TerminateBackgroundWorker(handles[i]);
		(void) WaitForBackgroundWorkerShutdown(handles[i]);
		pfree(handles[i]);
		handles[i] = NULL;
		LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
		/* refused until its transaction ends: its later files are not published again */
		if (loader->pid == 0 && loader->state != LOADER_FREE)
			loader->state = LOADER_AHEAD_REFUSED;
		LWLockRelease(PaimonSinkState->lock);
		pg_atomic_fetch_add_u64(&MyDatabaseEntry->ahead_stats.stopped, 1);
		ereport(DEBUG1, (errmsg("paimon_sink committer stopped the loader that loaded ahead into "
								"the target of sink %d",
								loader->sink_id)));
	}
}

/*
 * load_ahead_take hands the handle of entry's loader (1-based) to the
 * caller, which gives it its checkpoint (commit_parallel.c) and from then
 * on waits for it as for any loader; what the loader loaded until now, and
 * how long it spent loading it, is counted as loaded before its
 * checkpoint (load_ahead_status()).
 */
BackgroundWorkerHandle *
load_ahead_take(int entry)
{
	BackgroundWorkerHandle *handle = handles[entry - 1];
	LoaderEntry *loader = shared_loader(MyDatabaseEntry, entry - 1);
	AheadStats *stats = &MyDatabaseEntry->ahead_stats;
	TimestampTz started;
	TimestampTz done;

	handles[entry - 1] = NULL;
	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	started = loader->ahead_started_at;
	done = loader->ahead_done_at != 0 ? loader->ahead_done_at : GetCurrentTimestamp();
	LWLockRelease(PaimonSinkState->lock);
	pg_atomic_fetch_add_u64(&stats->taken, 1);
	pg_atomic_fetch_add_u64(&stats->rows, pg_atomic_read_u64(&loader->ahead_rows_read));
	pg_atomic_fetch_add_u64(&stats->bytes, pg_atomic_read_u64(&loader->ahead_bytes_read));
	if (started != 0 && done > started)
		pg_atomic_fetch_add_u64(&stats->us, (uint64) (done - started));
	return handle;
}

/* load_ahead_wake sets the latch of entry's loader (1-based): its checkpoint is given. */
void
load_ahead_wake(int entry)
{
	LoaderEntry *loader = shared_loader(MyDatabaseEntry, entry - 1);
	PGPROC *proc;

	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	proc = loader->ahead_proc;
	LWLockRelease(PaimonSinkState->lock);
	if (proc != NULL)
		SetLatch(&proc->procLatch);
}
