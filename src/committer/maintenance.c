/*-------------------------------------------------------------------------
 *
 * maintenance.c
 *	  The committer's maintenance of a sink: orphan file removal, snapshot
 *	  expiry after a commit and its failures carried to the next commit,
 *	  and the commit statistics.
 *
 * None of it is on the commit path: a failure is logged and never fails a
 * commit (Paimon's maintain() after a commit).  A failed expiry is
 * reported as a warning with the sink's next successful commit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/guc.h"
#include "utils/memutils.h"

#include "committer/barrier.h"
#include "committer/commit.h"
#include "committer/maintenance.h"
#include "committer/outcome_stats.h"
#include "committer/work.h"
#include "core/fault.h"
#include "core/guc.h"
#include "ipc/liveness.h"
#include "ipc/request.h"
#include "staging/staged_file.h"

/* A sink's failed maintenance, waiting for its next commit to be reported. */
typedef struct MaintenanceFailure
{
	int32 sink_id;
	char *message; /* in TopMemoryContext */
} MaintenanceFailure;

static List *maintenance_failures = NIL; /* of MaintenanceFailure, in TopMemoryContext */

/*
 * maintenance_remove_orphans serves remove_orphan_files(): staged files of the sink older than the cut-off
 * that no writer holds (open or sealed), and that no prepared checkpoint
 * records, are removed (or listed, in a dry run).  The committer serves one
 * request at a time, so no commit is in flight.  The folder is listed before
 * the writers are asked, so a file created meanwhile is never a candidate.
 * The outcome goes to paimon_sink.maintenance_result for the requester.
 */
void
maintenance_remove_orphans(int32 sink_id, CommitterRequest *request)
{
	char directory[MAXPGPATH];
	DIR *dir;
	struct dirent *entry;
	List *candidates = NIL;
	List *held;
	ListCell *lc;
	uint64 *seqs = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	time_t cutoff = time(NULL) - (time_t) (request->older_than_ms / 1000);
	SinkInfo *sink;

	work_begin();
	sink = work_require_sink(sink_id);
	work_end();

	staged_file_directory(directory, MyDatabaseId, sink_id);
	dir = AllocateDir(directory);
	while (dir != NULL && (entry = ReadDir(dir, directory)) != NULL)
	{
		char path[MAXPGPATH];
		struct stat st;

		liveness_committer_beat(); /* a large folder is long work */
		/* staged files, and headers a crash left under their temporary name */
		if (!staged_file_name_is_valid(entry->d_name) &&
			staged_file_temporary_creator(entry->d_name) < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", directory, entry->d_name);
		if (stat(path, &st) != 0 || st.st_mtime > cutoff)
			continue;
		candidates = lappend(candidates, pstrdup(entry->d_name));
		candidates = lappend(candidates, (void *) (intptr_t) st.st_size);
	}
	if (dir != NULL)
		FreeDir(dir);

	held = barrier_run(sink, "", -1, BARRIER_LIST, 0, seqs);

	work_begin();
	request->discarded_files = 0;
	for (int i = 0; i < list_length(candidates); i += 2)
	{
		char *name = list_nth(candidates, i);
		int64 bytes = (int64) (intptr_t) list_nth(candidates, i + 1);
		bool is_held = false;
		char path[MAXPGPATH];

		foreach (lc, held)
			if (strcmp(((CommittableRecord *) lfirst(lc))->file_name, name) == 0)
				is_held = true;
		if (is_held)
			continue;
		if (metadata_file_record(name) == FILE_PENDING)
			continue; /* a prepared checkpoint needs it */
		/* a name the folder listing gave: a staged file's or a temporary one's */
		snprintf(path, sizeof(path), "%s/%s", directory, name);
		if (!request->dry_run && staged_file_remove(path) != 0)
		{
			ereport(WARNING, (errcode_for_file_access(),
							  errmsg("could not remove orphan file \"%s\": %m", path)));
			continue;
		}
		/* a scheduled removal (seq 0) has no requester to read its results */
		if (request->seq != 0)
			metadata_add_maintenance_result(request->seq, name, bytes, !request->dry_run);
		request->discarded_files++;
	}
	work_end();
	if (!request->dry_run && request->discarded_files > 0)
		ereport(LOG, (errmsg("paimon_sink removed %d orphan files of sink %d",
							 request->discarded_files, sink_id)));
}

/*
 * Snapshot expiry runs off the commit path: a commit only counts itself
 * here, and the committer's loop expires a sink's snapshots as a duty, when
 * no request waits, at most once a second per sink or every
 * EXPIRY_EVERY_COMMITS of its commits, EXPIRY_BATCH candidates at a time (a
 * full batch makes it due again at once, after the requests).
 */
#define EXPIRY_INTERVAL_MS 1000
#define EXPIRY_EVERY_COMMITS 64
#define EXPIRY_BATCH 500

/* A sink's expiry: commits since it last ran, and whether a batch was left. */
typedef struct ExpiryState
{
	int32 sink_id;
	int commits;	/* since the last run */
	bool more_left; /* the last run expired a whole batch */
	TimestampTz last_run;
} ExpiryState;

static ExpiryState *expiries = NULL;
static int expiry_count = 0;
static int expiry_space = 0;

/* expiry_of returns the expiry state of a sink, adding it on first use. */
static ExpiryState *
expiry_of(int32 sink_id)
{
	for (int i = 0; i < expiry_count; i++)
		if (expiries[i].sink_id == sink_id)
			return &expiries[i];
	if (expiry_count == expiry_space)
	{
		expiry_space = Max(8, expiry_space * 2);
		expiries = expiries == NULL
					   ? MemoryContextAlloc(TopMemoryContext, sizeof(ExpiryState) * expiry_space)
					   : repalloc(expiries, sizeof(ExpiryState) * expiry_space);
	}
	memset(&expiries[expiry_count], 0, sizeof(ExpiryState));
	expiries[expiry_count].sink_id = sink_id;
	return &expiries[expiry_count++];
}

/* expiry_due_at returns when a sink's expiry is due (DT_NOEND: nothing to do). */
static TimestampTz
expiry_due_at(const ExpiryState *expiry)
{
	if (expiry->more_left || expiry->commits >= EXPIRY_EVERY_COMMITS)
		return 0;
	if (expiry->commits == 0)
		return DT_NOEND;
	return TimestampTzPlusMilliseconds(expiry->last_run, EXPIRY_INTERVAL_MS);
}

/*
 * expire_snapshots removes a batch of the sink's snapshots (the arg, an
 * ExpiryState) past paimon_sink.snapshots_retained and
 * paimon_sink.snapshot_retention.
 */
static void
expire_snapshots(void *arg)
{
	ExpiryState *expiry = arg;
	int64 expired;

	fault_point("committer_maintenance");
	work_begin();
	/* a crash losing the expiry only leaves it for the next run: no WAL flush */
	(void) set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	expired = metadata_expire_snapshots(expiry->sink_id, PaimonSinkSnapshotsRetained,
										PaimonSinkSnapshotRetentionMs, EXPIRY_BATCH, false);
	work_end();
	liveness_committer_beat(); /* each batch is a step; the loop goes on with the next */
	expiry->more_left = expired >= EXPIRY_BATCH;
	if (expired > 0)
		ereport(DEBUG1, (errmsg("paimon_sink expired %lld snapshots of sink %d",
								(long long) expired, expiry->sink_id)));
}

/*
 * maintenance_after_commit counts a commit of the sink for its snapshot
 * expiry (maintenance_expiry_schedule says when that is due); no SQL.
 */
void
maintenance_after_commit(int32 sink_id)
{
	expiry_of(sink_id)->commits++;
}

/*
 * maintenance_expiry_schedule returns when the snapshot expiry of some sink
 * is due next: DT_NOEND when no sink committed since its last expiry.
 */
TimestampTz
maintenance_expiry_schedule(void)
{
	TimestampTz due = DT_NOEND;

	for (int i = 0; i < expiry_count; i++)
		due = Min(due, expiry_due_at(&expiries[i]));
	return due;
}

/*
 * maintenance_expire_due runs the snapshot expiry of one sink that is due,
 * one batch; returns whether one was due.  A failure is logged and kept, to
 * be reported with the sink's next commit (maintenance_report_failure); the
 * expiry is tried again after the sink's next commit.
 */
bool
maintenance_expire_due(void)
{
	TimestampTz now = GetCurrentTimestamp();
	ErrorData *error = NULL;
	MaintenanceFailure *failure;
	ExpiryState *expiry = NULL;
	MemoryContext old;

	for (int i = 0; i < expiry_count && expiry == NULL; i++)
		if (expiry_due_at(&expiries[i]) <= now)
			expiry = &expiries[i];
	if (expiry == NULL)
		return false;
	expiry->commits = 0;
	expiry->last_run = now;
	if (work_try(expire_snapshots, expiry, &error))
		return true;
	expiry->more_left = false;
	failure = MemoryContextAllocZero(TopMemoryContext, sizeof(MaintenanceFailure));
	failure->sink_id = expiry->sink_id;
	failure->message = MemoryContextStrdup(
		TopMemoryContext, psprintf("paimon_sink maintenance after a commit of sink %d failed: %s",
								   expiry->sink_id, error->message));
	/* the list too: the loop's context is reset after each turn, the list lives on */
	old = MemoryContextSwitchTo(TopMemoryContext);
	maintenance_failures = lappend(maintenance_failures, failure);
	MemoryContextSwitchTo(old);
	ereport(LOG, (errmsg("%s", failure->message)));
	FreeErrorData(error);
	return true;
}

/*
 * maintenance_report_failure gives the outcome of a successful commit of a
 * sink the warning of its failed maintenance, once.
 */
void
maintenance_report_failure(CommitterRequest *outcome)
{
	ListCell *lc;

	foreach (lc, maintenance_failures)
	{
		MaintenanceFailure *failure = lfirst(lc);

		if (failure->sink_id == outcome->sink_id)
		{
			ErrorData warning;

			memset(&warning, 0, sizeof(warning));
			warning.elevel = WARNING;
			warning.sqlerrcode = ERRCODE_WARNING;
			warning.message = failure->message;
			warning.hint =
				"The commit itself succeeded; maintenance is tried again after the next one.";
			request_set_error(outcome, &warning);
			maintenance_failures = foreach_delete_current(maintenance_failures, lc);
			pfree(failure->message);
			pfree(failure);
			return;
		}
	}
}

/*
 * Commit statistics are kept here and written by a duty of the loop, at
 * most STATISTICS_INTERVAL_MS after a request counted them, in one
 * transaction for every sink: not a transaction per request.  The views
 * lag by at most that long.
 */
#define STATISTICS_INTERVAL_MS 1000

/* A sink's counts not written yet, and when its last commit was. */
typedef struct PendingTally
{
	int32 sink_id;
	CommitTally tally;
	int64 failures;
	TimestampTz last_committed_at; /* 0: no commit counted */
} PendingTally;

/* A sink's failures of one SQLSTATE not written yet, with the last message. */
typedef struct PendingFailure
{
	int32 sink_id;
	int sqlerrcode;
	int64 failures;
	TimestampTz last_failed_at;
	char *message; /* in TopMemoryContext */
} PendingFailure;

static List *pending_tallies = NIL;	 /* of PendingTally, in TopMemoryContext */
static List *pending_failures = NIL; /* of PendingFailure, in TopMemoryContext */
static TimestampTz statistics_written_at = 0;

/* pending_tally_of returns the counts of a sink not written yet, adding them on first use. */
static PendingTally *
pending_tally_of(int32 sink_id)
{
	ListCell *lc;
	PendingTally *pending;
	MemoryContext old;

	foreach (lc, pending_tallies)
		if (((PendingTally *) lfirst(lc))->sink_id == sink_id)
			return lfirst(lc);
	old = MemoryContextSwitchTo(TopMemoryContext);
	pending = palloc0(sizeof(PendingTally));
	pending->sink_id = sink_id;
	pending_tallies = lappend(pending_tallies, pending);
	MemoryContextSwitchTo(old);
	return pending;
}

/*
 * count_failure keeps a request's failure of a sink (its own, or a member
 * of the group it served), by SQLSTATE, with its message.
 */
static void
count_failure(int32 sink_id, const CommitterRequest *outcome)
{
	ListCell *lc;
	PendingFailure *pending = NULL;

	foreach (lc, pending_failures)
	{
		PendingFailure *failure = lfirst(lc);

		if (failure->sink_id == sink_id && failure->sqlerrcode == outcome->sqlerrcode)
			pending = failure;
	}
	if (pending == NULL)
	{
		/* the list too: a request's context is reset after it, the list lives on */
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		pending = palloc0(sizeof(PendingFailure));
		pending->sink_id = sink_id;
		pending->sqlerrcode = outcome->sqlerrcode;
		pending_failures = lappend(pending_failures, pending);
		MemoryContextSwitchTo(old);
	}
	if (pending->message != NULL)
		pfree(pending->message);
	pending->message = MemoryContextStrdup(TopMemoryContext, request_error_message(outcome));
	pending->failures++;
	pending->last_failed_at = GetCurrentTimestamp();
}

/*
 * maintenance_record_statistics counts what a request committed, or its
 * failure, for commit_statistics and commit_failures; kept in memory until
 * maintenance_write_statistics writes them.  No SQL.
 */
void
maintenance_record_statistics(const CommitterRequest *outcome)
{
	if (outcome->sink_id == 0 ||
		(CommitTallies.commits == 0 && CommitTallies.skipped == 0 && outcome->sqlerrcode == 0))
		return;
	maintenance_record_tally(outcome->sink_id, &CommitTallies);
	/* sink_stats' per commit user, written before the answer (outcome_stats.c) */
	outcome_stats_count(outcome->sink_id, outcome->commit_user, outcome->sqlerrcode != 0 ? 1 : 0,
						CommitTallies.skipped);
	if (outcome->sqlerrcode != 0)
	{
		pending_tally_of(outcome->sink_id)->failures++;
		count_failure(outcome->sink_id, outcome);
	}
}

/*
 * maintenance_record_member_failure counts a failed request of a sink
 * group as a failure of one more member, sink_id (the request's own sink,
 * its first member, is maintenance_record_statistics'), wherever the
 * request's sink counts it: commit_statistics, commit_failures (with its
 * message) and sink_stats.  No SQL; raises nothing but out of memory.
 */
void
maintenance_record_member_failure(int32 sink_id, const CommitterRequest *outcome)
{
	if (sink_id == 0 || sink_id == outcome->sink_id || outcome->sqlerrcode == 0)
		return;
	outcome_stats_count(sink_id, outcome->commit_user, 1, 0);
	pending_tally_of(sink_id)->failures++;
	count_failure(sink_id, outcome);
}

/*
 * maintenance_record_tally adds tally (commits, skips, reruns, rows and
 * bytes, the last commit's milliseconds) to sink_id's counts kept for
 * commit_statistics: for a request's own sink through
 * maintenance_record_statistics, and for the other members of a sink
 * group committed by one request (commit_group.c), each under its own
 * sink.  No SQL; raises nothing but out of memory.
 */
void
maintenance_record_tally(int32 sink_id, const CommitTally *tally)
{
	PendingTally *pending;

	if (tally->commits == 0 && tally->skipped == 0)
		return;
	pending = pending_tally_of(sink_id);
	pending->tally.commits += tally->commits;
	pending->tally.skipped += tally->skipped;
	pending->tally.retries += tally->retries;
	pending->tally.rows += tally->rows;
	pending->tally.bytes += tally->bytes;
	if (tally->commits > 0)
	{
		pending->tally.last_ms = tally->last_ms;
		pending->last_committed_at = GetCurrentTimestamp();
	}
}

/* maintenance_statistics_schedule returns when the counts kept are due to be written. */
TimestampTz
maintenance_statistics_schedule(void)
{
	if (pending_tallies == NIL)
		return DT_NOEND;
	return TimestampTzPlusMilliseconds(statistics_written_at, STATISTICS_INTERVAL_MS);
}

/* write_statistics writes every count kept into the statistics tables, in one transaction. */
static void
write_statistics(void *arg)
{
	ListCell *lc;

	work_begin();
	foreach (lc, pending_tallies)
	{
		PendingTally *pending = lfirst(lc);

		metadata_count_commits(pending->sink_id, &pending->tally, pending->failures,
							   pending->last_committed_at);
	}
	foreach (lc, pending_failures)
	{
		PendingFailure *pending = lfirst(lc);

		metadata_count_failure(pending->sink_id, pending->sqlerrcode, pending->failures,
							   pending->last_failed_at, pending->message);
	}
	work_end();
}

/*
 * maintenance_write_statistics writes the counts kept (commit_statistics
 * and commit_failures are unlogged: no WAL flush) and forgets them; returns
 * whether there were any.  A failure is logged, and the counts are lost.
 */
bool
maintenance_write_statistics(void)
{
	ListCell *lc;

	if (pending_tallies == NIL)
		return false;
	(void) work_try(write_statistics, NULL, NULL);
	statistics_written_at = GetCurrentTimestamp();
	list_free_deep(pending_tallies);
	pending_tallies = NIL;
	foreach (lc, pending_failures)
		pfree(((PendingFailure *) lfirst(lc))->message);
	list_free_deep(pending_failures);
	pending_failures = NIL;
	return true;
}
