/*-------------------------------------------------------------------------
 *
 * commit_parallel.c
 *	  One large checkpoint of an append sink loaded off the committer: by
 *	  one loader worker in the checkpoint's own prepared transaction, or
 *	  (nonatomic) by several at once, each share in a prepared transaction
 *	  of its own, committed or rolled back as one.
 *
 * By default (paimon_sink.nonatomic_parallel_load off) the load is whole:
 * one loader loads every file of the checkpoint, records its snapshot and
 * raises the commit user's mark, all as the committer's own load would
 * (commit.c's steps), and prepares that one transaction under the
 * checkpoint's own gid.  A prepared checkpoint gid is complete, so it is
 * the decision itself: the committer commits it, and so does recovery
 * when the committer is gone.  The checkpoint then becomes visible at one
 * instant, to queries, standbys and logical decoding alike; the
 * committer serves other sinks while the loader loads.
 *
 * With nonatomic_parallel_load, the committer splits a checkpoint of at least paimon_sink.parallel_load_rows
 * rows over the database's paimon_sink.loaders_per_database loaders
 * (loader.c): share k of K is the batches whose position lies in the k-th
 * K-th of the checkpoint's bytes, its files laid end to end in the
 * catalog's order, so a checkpoint of one large file is split as well as
 * one of many.  When every share is prepared, commit.c records the
 * snapshot and raises the commit user's mark in the committer's own
 * transaction, prepared and committed under the checkpoint's gid: that is
 * the decision record (Citus's commit record).  Only then are the
 * loaders' gids committed.  Recovery follows the same rule
 * (recovery.c): a loader's gid is committed when its checkpoint is
 * committed (its id at or below the commit user's mark, which never
 * expires) and rolled back when it is not.
 *
 * Before the decision, any failure rolls back every share: a loader's
 * error (raised again in the committer whole, its SQLSTATE and fields
 * kept), a loader that exited or was killed, the committer's own error.
 * The checkpoint then stays prepared, as after a failed single load.  A
 * share waiting for a lock that another share's prepared transaction
 * holds (a key two shares both insert) would wait for ever, its sibling
 * waiting for the decision: the committer sees it (pg_blocking_pids shows
 * a prepared transaction), rolls the shares back and loads the checkpoint
 * itself, which raises the unique violation as a single load does.  So
 * does a checkpoint whose loaders cannot start (no worker slot) or when
 * max_prepared_transactions has no room for them; each is logged once.
 *
 * One parallel commit is in flight at a time.  Its state is here: which
 * loader entries, their handles and gids, the files.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "committer/commit_parallel.h"
#include "committer/load_ahead.h"
#include "committer/loader_workers.h"
#include "committer/recovery.h"
#include "committer/work.h"
#include "core/fault.h"
#include "core/guc.h"
#include "core/names.h"
#include "core/wait_events.h"
#include "core/worker_start.h"
#include "ipc/liveness.h"
#include "ipc/request.h"

/* How often the committer looks at loaders that do not wake it (a lock wait). */
#define LOADER_POLL_MS 1000

/* The parallel commit in flight. */
typedef struct ParallelCommit
{
	bool active;
	bool async;	  /* the committer goes on with other work meanwhile */
	bool decided; /* the decision is prepared: never roll the shares back */
	bool whole;	  /* one loader prepares the whole checkpoint under its own gid */
	int outcome;  /* LoadersState, once they no longer load */
	int failed;	  /* with LOADERS_FAILED: the part */
	TimestampTz blocked_checked_at;
	int32 sink_id;
	Oid target;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	int64 checkpoint_id;
	int first; /* its loader entries: first .. first + parts - 1 */
	int parts;
	int ahead; /* the entry (1-based) of a loader that loaded ahead; 0: none */
	BackgroundWorkerHandle *handles[PAIMON_SINK_MAX_LOADERS];
	char gids[PAIMON_SINK_MAX_LOADERS][GIDSIZE];
	/* sinks whose target commit_parallel_defers looked up */
	int looked_up;
	int32 looked_up_sinks[256];
	bool looked_up_conflicts[256];
} ParallelCommit;

static ParallelCommit inflight;
static uint64 generation = 0;

/* What was logged once in this committer's life. */
static bool logged_no_slots = false;
static bool logged_no_prepared = false;

/* What poll_loaders finds. */
typedef enum LoadersState
{
	LOADERS_RUNNING,
	LOADERS_PREPARED, /* every share */
	LOADERS_FAILED,	  /* one failed or exited */
	LOADERS_BLOCKED	  /* one waits for a lock another share's prepared transaction holds */
} LoadersState;

/*
 * commit_parallel_wanted tells whether the checkpoint of sink with rows
 * rows is loaded by loaders: an append sink, loaders configured, at least
 * paimon_sink.parallel_load_rows rows.  Upsert sinks are applied by the
 * committer (one MERGE).  Raises nothing.
 */
bool
commit_parallel_wanted(const SinkInfo *sink, int64 rows)
{
	return !SINK_IS_UPSERT(sink) && PaimonSinkLoadersPerDatabase > 0 &&
		   PaimonSinkParallelLoadRows > 0 && rows >= PaimonSinkParallelLoadRows;
}

/* commit_parallel_active tells whether a parallel commit is in flight. */
bool
commit_parallel_active(void)
{
	return inflight.active;
}

/*
 * commit_parallel_owns tells whether a gid of ours (its parts) is a share
 * of the parallel commit in flight: in-doubt resolution leaves it alone.
 */
bool
commit_parallel_owns(const GidParts *parts)
{
	return inflight.active && (parts->part >= 0 || inflight.whole) &&
		   parts->sink_id == inflight.sink_id && parts->checkpoint_id == inflight.checkpoint_id &&
		   strcmp(parts->commit_user, inflight.commit_user) == 0;
}

/*
 * commit_parallel_holds_gid tells whether gid is the one a whole load in
 * flight prepares under: the committer commits it once its loader
 * reports, so in-doubt resolution leaves it alone meanwhile (an earlier
 * attempt's gid of the same checkpoint is not, and is committed).
 */
bool
commit_parallel_holds_gid(const char *gid)
{
	return inflight.active && inflight.whole && strcmp(gid, inflight.gids[0]) == 0;
}

/*
 * set_progress shows the parallel commit in commit_progress: phase, and
 * at its start (files >= 0) what it commits.
 */
static void
set_progress(int phase, int files, int64 rows, const char *gid)
{
	CommitProgress *progress = &MyDatabaseEntry->parallel_progress;

	SpinLockAcquire(&progress->mutex);
	progress->phase = phase;
	if (files >= 0)
	{
		progress->sink_id = inflight.sink_id;
		progress->checkpoint_id = inflight.checkpoint_id;
		strlcpy(progress->commit_user, inflight.commit_user, sizeof(progress->commit_user));
		progress->files_total = files;
		progress->rows_total = rows;
		progress->started_at = GetCurrentTimestamp();
		progress->loaders = inflight.parts;
		progress->first_loader = inflight.first;
		progress->gid[0] = '\0';
	}
	if (gid != NULL)
		strlcpy(progress->gid, gid, sizeof(progress->gid));
	SpinLockRelease(&progress->mutex);
}

/* commit_parallel_progress shows the decision's phase and gid in commit_progress. */
void
commit_parallel_progress(int phase, const char *gid)
{
	set_progress(phase, -1, 0, gid);
}

/*
 * wait_for_loaders waits until every loader this commit started has
 * stopped, terminating those that still load when terminate is true.
 */
static void
wait_for_loaders(bool terminate)
{
	for (int i = 0; i < inflight.parts; i++)
	{
		pid_t pid;

		if (inflight.handles[i] == NULL)
			continue;
		if (terminate && GetBackgroundWorkerPid(inflight.handles[i], &pid) != BGWH_STOPPED)
			TerminateBackgroundWorker(inflight.handles[i]);
		(void) WaitForBackgroundWorkerShutdown(inflight.handles[i]);
		pfree(inflight.handles[i]);
		inflight.handles[i] = NULL;
	}
}

/*
 * is_inflight_share says whether a prepared transaction is a loader share
 * of the checkpoint in flight (ours, a part, same sink, commit user and
 * checkpoint id), of this attempt or an earlier one.
 */
static bool
is_inflight_share(const PreparedGid *entry)
{
	return entry->ours && entry->parts.part >= 0 && entry->parts.sink_id == inflight.sink_id &&
		   entry->parts.checkpoint_id == inflight.checkpoint_id &&
		   strcmp(entry->parts.commit_user, inflight.commit_user) == 0;
}

/*
 * rollback_shares rolls back every prepared transaction of ours that is a
 * loader's share of the checkpoint in flight (this attempt's, and any an
 * earlier attempt left), once no loader of it runs; a failure is logged
 * and left to the next in-doubt resolution, which rolls back an undecided
 * share too.  Returns how many it rolled back.
 */
static int
rollback_shares(void)
{
	int count = 0;
	List *gids;
	ListCell *lc;

	work_begin();
	gids = recovery_prepared_gids(CommitterContext);
	work_end();
	foreach (lc, gids)
	{
		PreparedGid *entry = lfirst(lc);
		MemoryContext old = CurrentMemoryContext;

		if (!is_inflight_share(entry))
			continue;
		PG_TRY();
		{
			StartTransactionCommand();
			FinishPreparedTransaction(entry->gid, false);
			CommitTransactionCommand();
			count++;
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(old);
			EmitErrorReport();
			FlushErrorState();
			AbortOutOfAnyTransaction();
			RecoveryInDoubtPossible = true;
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
	}
	return count;
}

/* rollback_step is rollback_shares as a step of work_try. */
static void
rollback_step(void *arg)
{
	(void) rollback_shares();
}

/*
 * end_commit frees the loader entries and forgets the commit in flight;
 * its loaders have stopped.
 */
static void
end_commit(void)
{
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	for (int i = 0; i < inflight.parts; i++)
		shared_loader(MyDatabaseEntry, inflight.first + i)->state = LOADER_FREE;
	LWLockRelease(PaimonSinkState->lock);
	set_progress(COMMIT_PHASE_IDLE, -1, 0, NULL);
	if (inflight.async)
		request_wait_end(MyDatabaseEntry);
	inflight.active = false;
	inflight.decided = false;
}

/*
 * abort_commit ends the commit in flight before its decision: its loaders
 * terminated and waited for, its shares rolled back.  Raises nothing.
 */
static void
abort_commit(void)
{
	wait_for_loaders(true);
	(void) work_try(rollback_step, NULL, NULL);
	/* a whole checkpoint prepared before its loader stopped is complete: recovery commits it */
	if (inflight.whole)
		RecoveryInDoubtPossible = true;
	end_commit();
}

/*
 * commit_parallel_cleanup is the committer's clean-up after an error of
 * the request that started the commit in flight (or went on with it): a
 * commit before its decision is aborted; after it, its loaders are waited
 * for and the shares left to the next in-doubt resolution, which commits
 * them (the checkpoint is committed).
 */
void
commit_parallel_cleanup(void)
{
	if (!inflight.active)
		return;
	if (inflight.decided)
	{
		wait_for_loaders(false);
		end_commit();
		RecoveryInDoubtPossible = true;
	}
	else
		abort_commit();
}

/*
 * start_loaders claims every loader entry for the checkpoint, writes each
 * its assignment and starts its worker; false (nothing left running) when
 * an entry is still taken or a worker cannot be registered.
 */
static bool
start_loaders(int64 total_bytes, int64 byte_count, TimestampTz start)
{
	bool free = true;

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	/* whole: the loader that loaded ahead, else the first free entry */
	inflight.first = inflight.ahead > 0 ? inflight.ahead - 1 : 0;
	for (int i = 0; inflight.whole && inflight.ahead == 0 && i < PaimonSinkLoadersPerDatabase; i++)
	{
		LoaderEntry *loader = shared_loader(MyDatabaseEntry, i);

		inflight.first = i;
		if (loader->state == LOADER_FREE && loader->pid == 0)
			break;
	}
	for (int i = 0; i < inflight.parts; i++)
	{
		LoaderEntry *loader = shared_loader(MyDatabaseEntry, inflight.first + i);

		free = free && (inflight.ahead > 0 ? (loader->state == LOADER_AHEAD_LOADING ||
											  loader->state == LOADER_LOADED_AHEAD)
										   : loader->state == LOADER_FREE && loader->pid == 0);
	}
	for (int i = 0; free && i < inflight.parts; i++)
	{
		LoaderEntry *loader = shared_loader(MyDatabaseEntry, inflight.first + i);

		loader->state = LOADER_ASSIGNED;
		loader->committer_incarnation = MyDatabaseEntry->committer_incarnation;
		loader->sink_id = inflight.sink_id;
		strlcpy(loader->commit_user, inflight.commit_user, sizeof(loader->commit_user));
		loader->checkpoint_id = inflight.checkpoint_id;
		loader->part = i;
		loader->parts = inflight.parts;
		loader->total_bytes = total_bytes;
		loader->whole = inflight.whole;
		loader->byte_count = byte_count;
		loader->start = start;
		strlcpy(loader->gid, inflight.gids[i], sizeof(loader->gid));
		loader->rows_loaded = 0;
		loader->snapshot_id = 0;
		loader->recorded_at = 0;
		loader->sqlerrcode = 0;
		loader->error_length = 0;
		pg_atomic_write_u64(&loader->rows_done, 0);
		pg_atomic_write_u32(&loader->files_done, 0);
	}
	LWLockRelease(PaimonSinkState->lock);
	if (!free)
	{
		/* an entry is still another's: end_commit must free none */
		inflight.parts = 0;
		return false;
	}

	for (int i = 0; i < inflight.parts; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		/* the loader that loaded ahead is woken: it goes on with the checkpoint */
		inflight.handles[i] = inflight.ahead > 0
								  ? load_ahead_take(inflight.ahead)
								  : worker_start_loader(MyDatabaseIndex, inflight.first + i);
		if (inflight.ahead > 0)
			load_ahead_wake(inflight.ahead);
		MemoryContextSwitchTo(old);
		if (inflight.handles[i] == NULL)
		{
			if (!logged_no_slots)
				ereport(LOG,
						(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
						 errmsg("paimon_sink committer loads large checkpoints itself: no worker "
								"slot for its loaders"),
						 errdetail("Loader %d of %d could not be registered. A database with "
								   "sinks needs 1 committer, %d writers and %d loaders within "
								   "max_worker_processes = %d, beside the launcher.",
								   i + 1, inflight.parts, PaimonSinkWritersPerDatabase,
								   PaimonSinkLoadersPerDatabase, max_worker_processes),
						 errhint("Raise max_worker_processes, or lower "
								 "paimon_sink.loaders_per_database.")));
			logged_no_slots = true;
			abort_commit();
			return false;
		}
	}
	return true;
}

/*
 * poll_loaders looks at the loaders of the commit in flight; *failed gets
 * the part that failed or exited first.
 */
static LoadersState
poll_loaders(int *failed, bool check_blocked)
{
	int prepared = 0;
	pid_t waiting = 0;

	for (int i = 0; i < inflight.parts; i++)
	{
		LoaderEntry *loader = shared_loader(MyDatabaseEntry, inflight.first + i);
		int state;
		pid_t pid;

		LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
		state = loader->state;
		pid = loader->pid;
		LWLockRelease(PaimonSinkState->lock);
		if (state == LOADER_PREPARED)
		{
			prepared++;
			continue;
		}
		if (state == LOADER_FAILED)
		{
			*failed = i;
			return LOADERS_FAILED;
		}
		if (GetBackgroundWorkerPid(inflight.handles[i], &pid) == BGWH_STOPPED)
		{
			/* it may have reported just before it stopped */
			LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
			state = loader->state;
			LWLockRelease(PaimonSinkState->lock);
			if (state == LOADER_PREPARED)
			{
				prepared++;
				continue;
			}
			*failed = i;
			return LOADERS_FAILED;
		}
		if (state == LOADER_LOADING && pid != 0 && waiting == 0)
			waiting = pid;
	}
	if (prepared == inflight.parts)
		return LOADERS_PREPARED;
	/* a deadlock needs a sibling prepared, holding what the waiting one needs */
	if (check_blocked && prepared > 0 && waiting != 0 &&
		loader_workers_blocked_by_prepared(waiting))
		return LOADERS_BLOCKED;
	return LOADERS_RUNNING;
}

/*
 * whole_prepared tells whether the gid of the whole load just aborted is
 * prepared: its loader exited after its PREPARE, before it reported.
 * Outside a transaction.
 */
static bool
whole_prepared(void)
{
	Oid owner;
	Oid database_id;
	bool prepared;

	work_begin();
	prepared = recovery_gid_in_use(inflight.gids[0], &owner, &database_id);
	work_end();
	return prepared;
}

/*
 * raise_failure raises the error of the loader part that failed, whole, or
 * when it exited without one, an error saying so: a whole load's loader
 * that exited after its PREPARE left the checkpoint complete, which
 * recovery commits.  The commit is already aborted.
 */
static void
raise_failure(int part, const char *error, uint32 length)
{
	if (length > 0)
		request_throw_error(error, length, "relayed from a paimon_sink loader");
	if (inflight.whole && whole_prepared())
		ereport(ERROR,
				(errcode(ERRCODE_CONNECTION_FAILURE),
				 errmsg("paimon_sink loader exited after it prepared checkpoint %lld of commit "
						"user \"%s\"",
						(long long) inflight.checkpoint_id, inflight.commit_user),
				 errdetail("The checkpoint is complete in prepared transaction \"%s\", which the "
						   "committer commits before its next request.",
						   inflight.gids[0]),
				 errhint("Commit again: the retry finds it committed.")));
	ereport(ERROR, (errcode(ERRCODE_CONNECTION_FAILURE),
					errmsg("paimon_sink loader %d of %d exited before it prepared its share",
						   part + 1, inflight.parts > 0 ? inflight.parts : part + 1),
					errdetail("Nothing of the checkpoint was applied; it stays prepared."),
					errhint("Commit again; the server log tells why the loader exited.")));
}

/*
 * settle_shares makes sure the prepared shares of the checkpoint are
 * exactly this attempt's, right before the decision: another one of ours
 * (an earlier attempt's, whose roll-back failed) is rolled back, since
 * recovery would commit every share of a committed checkpoint.  Raises an
 * error when one of this attempt's is not prepared.
 */
static void
settle_shares(void)
{
	List *gids;
	ListCell *lc;
	int found = 0;

	work_begin();
	gids = recovery_prepared_gids(CommitterContext);
	work_end();
	foreach (lc, gids)
	{
		PreparedGid *entry = lfirst(lc);
		bool this_attempt = false;

		if (!is_inflight_share(entry))
			continue;
		for (int i = 0; i < inflight.parts; i++)
			this_attempt = this_attempt || strcmp(inflight.gids[i], entry->gid) == 0;
		if (this_attempt)
		{
			found++;
			continue;
		}
		StartTransactionCommand();
		FinishPreparedTransaction(entry->gid, false);
		CommitTransactionCommand();
		MemoryContextSwitchTo(CommitterContext);
		ereport(LOG, (errmsg("paimon_sink committer rolled back prepared transaction \"%s\" of "
							 "an earlier attempt before the decision",
							 entry->gid)));
	}
	if (found != inflight.parts)
		elog(ERROR, "only %d of the %d loaders' shares of checkpoint %lld are prepared", found,
			 inflight.parts, (long long) inflight.checkpoint_id);
}

/*
 * commit_parallel_start starts the loaders for checkpoint_id of sink
 * (size: what the committer found of it) and returns PARALLEL_STARTED without waiting for them; or
 * PARALLEL_FALLBACK, nothing started, when they cannot (another parallel
 * commit in flight, no worker slot, too few prepared-transaction slots):
 * the caller loads the checkpoint itself.  With async, the committer goes
 * on with other work meanwhile: the sink's requests (and those of sinks
 * into the same target) wait.  Runs outside a transaction.
 */
ParallelLoad
commit_parallel_start(const SinkInfo *sink, const char *commit_user, int64 checkpoint_id,
					  const CheckpointSize *size, bool async)
{
	/* a loader that loaded ahead loads the checkpoint whole, whatever the setting */
	bool whole = !PaimonSinkNonatomicParallelLoad || size->ahead > 0;
	int parts = whole ? 1 : PaimonSinkLoadersPerDatabase;

	/* others that loaded ahead into the target would hold up the loaders' load */
	load_ahead_stop(sink->target, size->ahead);

	/* one parallel commit at a time: another one is loaded by the committer */
	if (inflight.active)
		return PARALLEL_FALLBACK;
	/* the loaders' and one of the committer's own, which goes on meanwhile */
	if (max_prepared_xacts < parts + 1)
	{
		if (!logged_no_prepared)
			ereport(LOG, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
						  errmsg("paimon_sink committer loads large checkpoints itself: too few "
								 "prepared transactions for its loaders"),
						  errdetail("A commit by loaders holds %d prepared transactions at once "
									"(1 per loader and 1 of the committer's own); "
									"max_prepared_transactions is %d.",
									parts + 1, max_prepared_xacts),
						  errhint("Raise max_prepared_transactions to at least %d per database "
								  "with sinks.",
								  parts + 1)));
		logged_no_prepared = true;
		return PARALLEL_FALLBACK;
	}

	memset(&inflight, 0, sizeof(inflight));
	inflight.sink_id = sink->sink_id;
	inflight.target = sink->target;
	strlcpy(inflight.commit_user, commit_user, sizeof(inflight.commit_user));
	inflight.checkpoint_id = checkpoint_id;
	inflight.parts = parts;
	inflight.async = async;
	inflight.whole = whole;
	inflight.ahead = size->ahead;
	if (whole)
		gid_build(inflight.gids[0], MyDatabaseId, sink->sink_id, checkpoint_id, commit_user);
	else
		for (int i = 0; i < parts; i++)
			gid_build_loader(inflight.gids[i], MyDatabaseId, sink->sink_id, checkpoint_id,
							 commit_user, i);
	inflight.active = true;
	generation++;
	set_progress(COMMIT_PHASE_LOADING, size->files, size->rows, NULL);
	if (!start_loaders(size->file_bytes, size->bytes, size->start))
	{
		end_commit();
		return PARALLEL_FALLBACK;
	}
	if (async)
	{
		/* its requests and those of sinks into the same target wait meanwhile */
		request_wait(MyDatabaseEntry, sink->sink_id);
		ereport(DEBUG1, (errmsg("paimon_sink committer goes on while %d loaders load checkpoint "
								"%lld of sink \"%s\"",
								parts, (long long) checkpoint_id, sink->name)));
	}
	return PARALLEL_STARTED;
}

/*
 * commit_parallel_loading tells whether the loaders of the commit in
 * flight still load (none failed, not all prepared, none blocked): the
 * committer's loop asks it before it goes on with the commit.  The lock
 * waits of the loaders are looked at once per LOADER_POLL_MS at most.
 */
bool
commit_parallel_loading(void)
{
	TimestampTz now;

	if (!inflight.active || inflight.outcome != LOADERS_RUNNING)
		return false;
	now = GetCurrentTimestamp();
	inflight.outcome =
		poll_loaders(&inflight.failed,
					 TimestampDifferenceExceeds(inflight.blocked_checked_at, now, LOADER_POLL_MS));
	if (inflight.outcome == LOADERS_RUNNING &&
		TimestampDifferenceExceeds(inflight.blocked_checked_at, now, LOADER_POLL_MS))
		inflight.blocked_checked_at = now;
	return inflight.outcome == LOADERS_RUNNING;
}

/*
 * commit_parallel_finish takes the outcome of the loaders of the commit in
 * flight, which no longer load: PARALLEL_LOADED, with *loaded the rows
 * they loaded (the caller then makes the decision and
 * commit_parallel_commit_shares commits them); PARALLEL_FALLBACK, with
 * nothing left prepared, when two shares blocked each other (the caller
 * loads the checkpoint itself).  A loader's error is raised again here
 * whole (its SQLSTATE, constraint, table ...), once every share is rolled
 * back.
 */
ParallelLoad
commit_parallel_finish(uint64 *loaded)
{
	if (inflight.outcome == LOADERS_FAILED)
	{
		LoaderEntry *loader = shared_loader(MyDatabaseEntry, inflight.first + inflight.failed);
		char *error = palloc(PAIMON_SINK_ERROR_SIZE);
		int failed = inflight.failed;
		uint32 length;

		LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
		length = loader->state == LOADER_FAILED ? loader->error_length : 0;
		memcpy(error, loader->error, length);
		LWLockRelease(PaimonSinkState->lock);
		abort_commit();
		raise_failure(failed, error, length);
	}
	if (inflight.outcome == LOADERS_BLOCKED)
	{
		ereport(LOG,
				(errmsg("paimon_sink committer loads checkpoint %lld of commit user \"%s\" "
						"of sink %d itself",
						(long long) inflight.checkpoint_id, inflight.commit_user, inflight.sink_id),
				 errdetail("A loader waited for a lock that another loader's prepared share "
						   "holds: the shares were rolled back.")));
		abort_commit();
		return PARALLEL_FALLBACK;
	}
	Assert(inflight.outcome == LOADERS_PREPARED);

	/* every share prepared: the loaders exit at once */
	wait_for_loaders(false);
	if (inflight.whole)
		inflight.decided = true; /* a prepared checkpoint gid is complete */
	else
		settle_shares();
	*loaded = 0;
	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	for (int i = 0; i < inflight.parts; i++)
		*loaded += (uint64) shared_loader(MyDatabaseEntry, inflight.first + i)->rows_loaded;
	LWLockRelease(PaimonSinkState->lock);
	return PARALLEL_LOADED;
}

/*
 * commit_parallel_load loads checkpoint_id of sink (size: what the
 * committer found of it) with the loaders and
 * waits until they are done, for a request that cannot go on without it
 * (recover()); what it returns and raises is commit_parallel_finish's, or
 * PARALLEL_FALLBACK when the loaders cannot start (no worker slot, too few
 * prepared-transaction slots, another parallel commit in flight).  Runs
 * outside a transaction.
 */
ParallelLoad
commit_parallel_load(const SinkInfo *sink, const char *commit_user, int64 checkpoint_id,
					 const CheckpointSize *size, uint64 *loaded)
{
	if (commit_parallel_start(sink, commit_user, checkpoint_id, size, false) != PARALLEL_STARTED)
		return PARALLEL_FALLBACK;
	while (commit_parallel_loading())
	{
		liveness_committer_beat(); /* waiting for loaders that load is progress */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, LOADER_POLL_MS,
						 wait_event_for(WAIT_LOADERS));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	return commit_parallel_finish(loaded);
}

/*
 * commit_parallel_defers tells whether sink_id must not be committed
 * while the asynchronous parallel commit in flight goes on: it is that
 * commit's sink, or its target is the same (its load could wait for a
 * share's prepared rows, which wait for the committer: a deadlock no one
 * would see).  Looks the target up once per sink and commit (a catalog
 * read, outside a transaction).  Raises only on internal errors.
 */
bool
commit_parallel_defers(int32 sink_id)
{
	SinkInfo sink;
	bool conflicts;

	if (!inflight.active || !inflight.async)
		return false;
	if (sink_id == inflight.sink_id)
		return true;
	for (int i = 0; i < inflight.looked_up; i++)
		if (inflight.looked_up_sinks[i] == sink_id)
			return inflight.looked_up_conflicts[i];
	work_begin();
	conflicts = metadata_sink_by_id(sink_id, &sink) && sink.target == inflight.target;
	work_end();
	if (inflight.looked_up < lengthof(inflight.looked_up_sinks))
	{
		inflight.looked_up_sinks[inflight.looked_up] = sink_id;
		inflight.looked_up_conflicts[inflight.looked_up] = conflicts;
		inflight.looked_up++;
	}
	return conflicts;
}

/*
 * commit_parallel_generation counts the parallel commits started: a
 * request that failed cleans up the commit in flight only when it started
 * it (or was resuming it).
 */
uint64
commit_parallel_generation(void)
{
	return generation;
}

/*
 * commit_parallel_decided tells the commit in flight that its decision is
 * prepared: from now on its shares are committed, never rolled back.
 */
void
commit_parallel_decided(void)
{
	inflight.decided = true;
}

/*
 * commit_parallel_abort ends the commit in flight when its decision failed
 * before it was prepared: every share rolled back.  Runs outside a
 * transaction; raises nothing.
 */
void
commit_parallel_abort(void)
{
	if (inflight.active && !inflight.decided)
		abort_commit();
}

/*
 * commit_parallel_whole tells whether the commit in flight, whose loaders
 * prepared, is whole: its loader prepared the checkpoint under its own
 * gid, snapshot and mark included, so there is no decision to make
 * (commit_parallel_commit_whole commits it).  *snapshot_id and
 * *recorded_at then get the snapshot the loader recorded and its
 * committed_at.
 */
bool
commit_parallel_whole(int64 *snapshot_id, TimestampTz *recorded_at)
{
	LoaderEntry *loader = shared_loader(MyDatabaseEntry, inflight.first);

	if (!inflight.active || !inflight.whole)
		return false;
	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	*snapshot_id = loader->snapshot_id;
	*recorded_at = loader->recorded_at;
	LWLockRelease(PaimonSinkState->lock);
	return true;
}

/*
 * commit_parallel_commit_whole commits the checkpoint its loader prepared
 * whole under the checkpoint's gid (COMMIT PREPARED: the checkpoint
 * becomes visible at once) and ends the commit in flight.  Runs outside a
 * transaction.  An error (the gid left in doubt) is raised as it comes;
 * commit_parallel_cleanup then leaves the gid to recovery, which commits
 * it.
 */
void
commit_parallel_commit_whole(void)
{
	Assert(inflight.active && inflight.whole && inflight.decided);
	commit_parallel_progress(COMMIT_PHASE_PREPARING, inflight.gids[0]);
	fault_point("committer_after_prepare");
	StartTransactionCommand();
	FinishPreparedTransaction(inflight.gids[0], true);
	CommitTransactionCommand();
	end_commit();
}

/*
 * commit_parallel_commit_shares commits the shares of the commit in
 * flight, once its decision is committed, and ends it.  A share that
 * cannot be committed now is logged and left to the next in-doubt
 * resolution, which commits it (its checkpoint is committed).  Returns the
 * number of loaders.
 */
int
commit_parallel_commit_shares(void)
{
	int parts = inflight.parts;

	for (int i = 0; i < parts; i++)
	{
		MemoryContext old = CurrentMemoryContext;

		PG_TRY();
		{
			StartTransactionCommand();
			FinishPreparedTransaction(inflight.gids[i], true);
			CommitTransactionCommand();
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(old);
			EmitErrorReport();
			FlushErrorState();
			AbortOutOfAnyTransaction();
			RecoveryInDoubtPossible = true;
		}
		PG_END_TRY();
		MemoryContextSwitchTo(old);
	}
	end_commit();
	return parts;
}
