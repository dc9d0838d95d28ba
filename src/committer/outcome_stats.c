/*-------------------------------------------------------------------------
 *
 * outcome_stats.c
 *	  The counters of sink_stats that no commit writes: requests that
 *	  failed and commit() calls that found their checkpoint committed, per
 *	  sink and commit user.
 *
 * A commit counts itself in its own transaction (metadata_heap.c); these
 * outcomes commit nothing, so the committer writes them in a transaction
 * of their own, before it answers the request: once commit() has returned
 * newly_committed = false, or raised, the count survives a crash.  They
 * are rare (a job's replayed commit after a restart, a failing
 * checkpoint), so the WAL flush of that transaction is not on the path of
 * ordinary commits.  A count whose row is locked (a transaction in doubt
 * of that commit user, which this committer itself commits first at its
 * next request; a drop_sink in progress) is kept and tried again by a
 * duty of the loop, at most a second later.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/memutils.h"

#include "committer/outcome_stats.h"
#include "committer/work.h"
#include "core/constants.h"
#include "metadata/metadata.h"

/* How long a count whose row was locked waits before it is tried again. */
#define OUTCOME_RETRY_MS 1000

/* The counts of one sink and commit user not written yet. */
typedef struct PendingOutcome
{
	int32 sink_id;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	int64 failures;
	int64 skipped;
	bool done; /* written (or its row gone) by the transaction being run */
} PendingOutcome;

static List *pending = NIL; /* of PendingOutcome, in TopMemoryContext */
static TimestampTz tried_at = 0;

/*
 * outcome_stats_count keeps failures and skipped commits of a sink's
 * commit user until outcome_stats_write writes them.  No SQL; raises
 * nothing but out of memory.
 */
void
outcome_stats_count(int32 sink_id, const char *commit_user, int64 failures, int64 skipped)
{
	ListCell *lc;
	PendingOutcome *entry = NULL;
	MemoryContext old;

	if (sink_id == 0 || commit_user == NULL || commit_user[0] == '\0' ||
		(failures == 0 && skipped == 0))
		return;
	foreach (lc, pending)
	{
		PendingOutcome *one = lfirst(lc);

		if (one->sink_id == sink_id && strcmp(one->commit_user, commit_user) == 0)
			entry = one;
	}
	if (entry == NULL)
	{
		old = MemoryContextSwitchTo(TopMemoryContext);
		entry = palloc0(sizeof(PendingOutcome));
		entry->sink_id = sink_id;
		strlcpy(entry->commit_user, commit_user, sizeof(entry->commit_user));
		pending = lappend(pending, entry);
		MemoryContextSwitchTo(old);
	}
	entry->failures += failures;
	entry->skipped += skipped;
}

/*
 * write_pending writes every count kept, in one transaction; a count
 * written, or whose row is gone, is marked done.
 */
static void
write_pending(void *arg)
{
	ListCell *lc;

	work_begin();
	foreach (lc, pending)
	{
		PendingOutcome *one = lfirst(lc);

		one->done = metadata_count_outcome(one->sink_id, one->commit_user, one->failures,
										   one->skipped) != COUNT_LOCKED;
	}
	work_end();
}

/*
 * outcome_stats_write writes the counts kept (the serving loop calls it
 * before it answers a request); those whose rows were locked stay for
 * outcome_stats_retry.  A failure is logged, and the counts are lost.
 */
void
outcome_stats_write(void)
{
	ListCell *lc;
	bool written;

	if (pending == NIL)
		return;
	foreach (lc, pending)
		((PendingOutcome *) lfirst(lc))->done = false;
	/* an error is logged and the counts are lost, as commit_stats' are: no retry loop */
	written = work_try(write_pending, NULL, NULL);
	tried_at = GetCurrentTimestamp();
	foreach (lc, pending)
	{
		PendingOutcome *one = lfirst(lc);

		if (!written || one->done)
		{
			pending = foreach_delete_current(pending, lc);
			pfree(one);
		}
	}
}

/* outcome_stats_schedule returns when the counts kept are due to be tried again (DT_NOEND: none). */
TimestampTz
outcome_stats_schedule(void)
{
	if (pending == NIL)
		return DT_NOEND;
	return TimestampTzPlusMilliseconds(tried_at, OUTCOME_RETRY_MS);
}

/* outcome_stats_retry is the duty that tries the counts kept again; returns whether there were any. */
bool
outcome_stats_retry(void)
{
	if (pending == NIL)
		return false;
	outcome_stats_write();
	return true;
}
