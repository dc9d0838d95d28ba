/*-------------------------------------------------------------------------
 *
 * loader_workers.c
 *	  The committer's side of its loader workers' lives, apart from any
 *	  one commit: the loaders of an earlier committer stopped before
 *	  recovery looks, its own terminated as it exits, and a loader's lock
 *	  wait on a prepared transaction seen.
 *
 * commit_parallel.c starts and watches the loaders of the commit in
 * flight; committer.c calls the start and exit parts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/array.h"
#include "utils/fmgrprotos.h"
#include "utils/timestamp.h"

#include "committer/loader_workers.h"
#include "core/guc.h"
#include "core/shared_state.h"
#include "core/wait_events.h"

/* How long a starting committer waits for the loaders of the committer before it. */
#define STALE_LOADER_WAIT_MS 60000

/*
 * loader_workers_blocked_by_prepared tells whether the process pid (a
 * loader) waits for a lock that a prepared transaction holds
 * (pg_blocking_pids lists those as 0).  Raises nothing of its own.
 */
bool
loader_workers_blocked_by_prepared(pid_t pid)
{
	ArrayType *blockers =
		DatumGetArrayTypeP(DirectFunctionCall1(pg_blocking_pids, Int32GetDatum(pid)));
	int count = ArrayGetNItems(ARR_NDIM(blockers), ARR_DIMS(blockers));
	int32 *values = (int32 *) ARR_DATA_PTR(blockers);
	bool blocked = false;

	for (int i = 0; i < count; i++)
		blocked = blocked || values[i] == 0;
	pfree(blockers);
	return blocked;
}

/*
 * loader_workers_stop_stale makes sure, at the committer's start, that no
 * loader of an earlier committer still runs: recovery must see every share
 * that will ever be prepared.  Entries not taken are freed (their worker,
 * if it starts, finds the incarnation changed and leaves); loaders that
 * run are terminated and waited for, up to STALE_LOADER_WAIT_MS, after
 * which the committer exits (FATAL) and the launcher starts it again.
 */
void
loader_workers_stop_stale(void)
{
	TimestampTz start = GetCurrentTimestamp();

	for (;;)
	{
		int running = 0;

		LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
		MyDatabaseEntry->waiting_count = 0;
		for (int i = 0; i < PaimonSinkLoadersPerDatabase; i++)
		{
			LoaderEntry *loader = shared_loader(MyDatabaseEntry, i);

			if (loader->pid == 0)
				loader->state = LOADER_FREE;
			else
			{
				running++;
				(void) kill(loader->pid, SIGTERM);
			}
		}
		LWLockRelease(PaimonSinkState->lock);
		if (running == 0)
			return;
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), STALE_LOADER_WAIT_MS))
			ereport(FATAL,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("paimon_sink committer cannot start: %d loaders of the committer "
							"before it do not stop",
							running),
					 errdetail("Recovery must see every share a loader may still prepare.")));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100,
						 wait_event_for(WAIT_WORKERS_EXIT));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * loader_workers_exit terminates, as the committer exits, the loaders it
 * started (an exit callback: raises nothing, waits for nothing; the next
 * committer waits for them).
 */
void
loader_workers_exit(void)
{
	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	for (int i = 0; i < PaimonSinkLoadersPerDatabase; i++)
	{
		LoaderEntry *loader = shared_loader(MyDatabaseEntry, i);

		if (loader->pid != 0 &&
			loader->committer_incarnation == MyDatabaseEntry->committer_incarnation)
			(void) kill(loader->pid, SIGTERM);
	}
	LWLockRelease(PaimonSinkState->lock);
}
