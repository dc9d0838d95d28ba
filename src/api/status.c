/*-------------------------------------------------------------------------
 *
 * status.c
 *	  The status functions behind the extension's views:
 *	  last_committed_checkpoint, writer_status (the writers view),
 *	  commit_progress (what the committer is committing now),
 *	  checkpoint_schedule_status (its periodic checkpoints' schedule) and
 *	  load_ahead_status (what loaders loaded before their checkpoints),
 *	  open_staged (sink_stats' rows in writers' open files); and
 *	  reset_sink_stats, which starts the counters of sink_stats again.
 *
 * They read the catalog under the latest snapshot, or the shared state of
 * this database's workers under its locks; library_version is in
 * metadata/version.c, with the version checks.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "api/sink_group.h"
#include "api/sql_call.h"
#include "api/status.h"
#include "core/constants.h"
#include "core/guc.h"
#include "core/open_staged.h"
#include "core/shared_state.h"
#include "metadata/catalog.h"
#include "metadata/metadata.h"
#include "metadata/version.h"

PG_FUNCTION_INFO_V1(paimon_sink_last_committed_checkpoint);
PG_FUNCTION_INFO_V1(paimon_sink_writer_status);
PG_FUNCTION_INFO_V1(paimon_sink_commit_progress);
PG_FUNCTION_INFO_V1(paimon_sink_checkpoint_schedule_status);
PG_FUNCTION_INFO_V1(paimon_sink_load_ahead_status);
PG_FUNCTION_INFO_V1(paimon_sink_reset_sink_stats);
PG_FUNCTION_INFO_V1(paimon_sink_open_staged);

/*
 * last_committed_checkpoint(sink_name text, commit_user text) returns the
 * commit user's high-water mark (bigint; 0 before its first commit, NULL for
 * a commit user the sink has never seen).
 */
Datum
paimon_sink_last_committed_checkpoint(PG_FUNCTION_ARGS)
{
	SinkInfo *sink;
	CommitUserMarks marks;

	paimon_sink_require_ready();
	/* a sink group's mark is its first member's: the members commit together */
	sink = sink_group_first_sink(fcinfo);
	/* the latest snapshot: the committer may have committed after this statement began */
	if (!metadata_read_commit_user(sink->sink_id, sql_commit_user_argument(fcinfo, 1, sink), true,
								   &marks))
		PG_RETURN_NULL();
	PG_RETURN_INT64(marks.last_committed);
}

/*
 * status_database starts a status function: it makes its result set and
 * returns this database's shared entry, or NULL when no worker serves it
 * yet.  Raises
 * ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE when the library was not
 * preloaded or the extension's version is not the library's.
 */
static DatabaseEntry *
status_database(FunctionCallInfo fcinfo)
{
	int index;

	paimon_sink_require_ready();
	InitMaterializedSRF(fcinfo, 0);
	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	index = shared_find_database(MyDatabaseId);
	LWLockRelease(PaimonSinkState->lock);
	return index < 0 ? NULL : shared_database(index);
}

/*
 * writer_status() returns one row per writer of this database: (writer
 * integer, pid integer, ready boolean, rows_staged bigint, bytes_staged
 * bigint, files_open integer, queues_in_use integer, streams integer,
 * fsyncs bigint, handoffs bigint, fenced boolean, fences bigint,
 * last_fenced_at timestamptz).  fenced: the slot's process is fenced now
 * (until its next process starts); fences: how many of its processes were
 * fenced since the server started; last_fenced_at: the last, or NULL.
 */
Datum
paimon_sink_writer_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	DatabaseEntry *db = status_database(fcinfo);

	if (db == NULL)
		return (Datum) 0;
	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
	{
		WriterEntry *writer = shared_writer(db, w);
		Datum values[13];
		bool nulls[13] = {0};
		pid_t pid;
		bool ready;
		bool fenced;
		uint64 fences;
		TimestampTz fenced_at;

		/* The writer sets its pid and readiness together, the committer the fence, under its mutex. */
		SpinLockAcquire(&writer->mutex);
		pid = writer->pid;
		ready = writer->ready;
		fenced = writer->fenced;
		fences = writer->fences;
		fenced_at = writer->fenced_at;
		SpinLockRelease(&writer->mutex);
		values[0] = Int32GetDatum(w);
		values[1] = Int32GetDatum(pid);
		nulls[1] = pid == 0;
		values[2] = BoolGetDatum(ready);
		values[3] = Int64GetDatum(pg_atomic_read_u64(&writer->rows_staged));
		values[4] = Int64GetDatum(pg_atomic_read_u64(&writer->bytes_staged));
		values[5] = Int32GetDatum(pg_atomic_read_u32(&writer->files_open));
		values[6] = Int32GetDatum(pg_atomic_read_u32(&writer->queues_in_use));
		values[7] = Int32GetDatum(pg_atomic_read_u32(&writer->streams));
		values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&writer->fsyncs));
		values[9] = Int64GetDatum((int64) pg_atomic_read_u64(&writer->handoffs));
		values[10] = BoolGetDatum(fenced);
		values[11] = Int64GetDatum((int64) fences);
		values[12] = TimestampTzGetDatum(fenced_at);
		nulls[12] = fenced_at == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * progress_row adds the row of one commit in progress (a copy of its
 * CommitProgress) to commit_progress()'s result; a commit by loaders sums
 * their rows and files done.
 */
static void
progress_row(ReturnSetInfo *rsinfo, DatabaseEntry *db, const CommitProgress *progress)
{
	static const char *const phases[] = {"idle", "loading", "applying", "preparing"};
	Datum values[12];
	bool nulls[12] = {0};
	int64 rows_done = progress->rows_done;
	int32 files_done = progress->files_done;

	/* a loader's counters are its own, read without a lock: a view may lag them */
	if (progress->loaders > 0)
	{
		rows_done = files_done = 0;
		for (int i = 0;
			 i < progress->loaders && progress->first_loader + i < PaimonSinkLoadersPerDatabase;
			 i++)
		{
			LoaderEntry *loader = shared_loader(db, progress->first_loader + i);

			rows_done += (int64) pg_atomic_read_u64(&loader->rows_done);
			files_done += (int32) pg_atomic_read_u32(&loader->files_done);
		}
	}
	/* The committer's pid changes under the lock of the database entries. */
	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	values[0] = Int32GetDatum(db->committer_pid);
	LWLockRelease(PaimonSinkState->lock);
	values[1] = Int32GetDatum(progress->sink_id);
	values[2] = CStringGetTextDatum(progress->commit_user);
	values[3] = Int64GetDatum(progress->checkpoint_id);
	values[4] = CStringGetTextDatum(phases[progress->phase]);
	values[5] = Int32GetDatum(files_done);
	values[6] = Int32GetDatum(progress->files_total);
	values[7] = Int64GetDatum(rows_done);
	values[8] = Int64GetDatum(progress->rows_total);
	values[9] = TimestampTzGetDatum(progress->started_at);
	/* A role that knew the gid before the PREPARE could take it: the owner's only. */
	{
		SinkInfo sink;

		nulls[10] = progress->gid[0] == '\0' || !metadata_sink_by_id(progress->sink_id, &sink) ||
					!has_privs_of_role(GetUserId(), sink.owner);
		if (!nulls[10])
			values[10] = CStringGetTextDatum(progress->gid);
	}
	values[11] = Int32GetDatum(progress->loaders);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * commit_progress() returns the checkpoints this database's committer is
 * committing, if any: the one it loads itself and the one its loaders load
 * (pid integer, sink_id integer, commit_user text, checkpoint_id bigint,
 * phase text, files_done integer, files_total integer, rows_done bigint,
 * rows_total bigint, started_at timestamptz, gid text, loaders integer),
 * as pg_stat_progress_copy reports a COPY.  gid, drawn once the rows are
 * loaded, is NULL until then and for a caller that is not a member of the
 * sink's owner; loaders is 0 for the committer's own load, else the number
 * of loader workers, whose files and rows done are summed.  Error: 55000
 * library not preloaded.
 */
Datum
paimon_sink_commit_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DatabaseEntry *db = status_database(fcinfo);
	CommitProgress progress;

	if (db == NULL)
		return (Datum) 0;
	SpinLockAcquire(&db->progress.mutex);
	memcpy(&progress, &db->progress, sizeof(progress));
	SpinLockRelease(&db->progress.mutex);
	progress.loaders = 0;
	if (progress.phase != COMMIT_PHASE_IDLE)
		progress_row(rsinfo, db, &progress);
	SpinLockAcquire(&db->parallel_progress.mutex);
	memcpy(&progress, &db->parallel_progress, sizeof(progress));
	SpinLockRelease(&db->parallel_progress.mutex);
	if (progress.phase != COMMIT_PHASE_IDLE)
		progress_row(rsinfo, db, &progress);
	return (Datum) 0;
}

/*
 * checkpoint_schedule_status() returns one row per sink this database's
 * committer checkpoints periodically, as its schedule last saw them (none
 * before the committer read it; the counters count since the committer
 * started): (sink_id integer, interval_ms bigint, next_due timestamptz,
 * checkpoints bigint, overdue bigint, last_late_ms bigint, max_late_ms
 * bigint, last_run timestamptz).  overdue counts the slots skipped because
 * the sink was more than an interval behind; *_late_ms how long after its
 * deadline a periodic checkpoint started (ms).  Only the first
 * PAIMON_SINK_SCHEDULE_SHOWN sinks of the schedule are shown.  Error:
 * 55000 library not preloaded.
 */
Datum
paimon_sink_checkpoint_schedule_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DatabaseEntry *db = status_database(fcinfo);
	int count;

	if (db == NULL)
		return (Datum) 0;
	SpinLockAcquire(&db->schedule.mutex);
	count = db->schedule.count;
	SpinLockRelease(&db->schedule.mutex);
	for (int i = 0; i < count; i++)
	{
		ScheduleStatusEntry entry;
		Datum values[8];
		bool nulls[8] = {0};

		SpinLockAcquire(&db->schedule.mutex);
		memcpy(&entry, &db->schedule.entries[i], sizeof(entry));
		SpinLockRelease(&db->schedule.mutex);
		values[0] = Int32GetDatum(entry.sink_id);
		values[1] = Int64GetDatum(entry.interval_ms);
		values[2] = TimestampTzGetDatum(entry.next_due);
		values[3] = Int64GetDatum(entry.checkpoints);
		values[4] = Int64GetDatum(entry.overdue);
		values[5] = Int64GetDatum(entry.last_late_ms);
		values[6] = Int64GetDatum(entry.max_late_ms);
		nulls[5] = nulls[6] = entry.checkpoints == 0;
		values[7] = TimestampTzGetDatum(entry.last_run);
		nulls[7] = entry.last_run == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * load_ahead_status() returns one row: (loaders_started bigint,
 * checkpoints_taken bigint, loaders_stopped bigint, rows_loaded_ahead
 * bigint, bytes_loaded_ahead bigint, seconds_loading_ahead double
 * precision), this database's loading ahead since the server started;
 * zeros when no worker serves it yet.  Raises
 * ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE as status_database does.
 */
Datum
paimon_sink_load_ahead_status(PG_FUNCTION_ARGS)
{
	TupleDesc desc;
	Datum values[6];
	bool nulls[6] = {0};
	AheadStats *stats = NULL;
	int index;

	paimon_sink_require_ready();
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	index = shared_find_database(MyDatabaseId);
	LWLockRelease(PaimonSinkState->lock);
	if (index >= 0)
		stats = &shared_database(index)->ahead_stats;
	values[0] = Int64GetDatum(stats ? (int64) pg_atomic_read_u64(&stats->started) : 0);
	values[1] = Int64GetDatum(stats ? (int64) pg_atomic_read_u64(&stats->taken) : 0);
	values[2] = Int64GetDatum(stats ? (int64) pg_atomic_read_u64(&stats->stopped) : 0);
	values[3] = Int64GetDatum(stats ? (int64) pg_atomic_read_u64(&stats->rows) : 0);
	values[4] = Int64GetDatum(stats ? (int64) pg_atomic_read_u64(&stats->bytes) : 0);
	values[5] = Float8GetDatum(stats ? (double) pg_atomic_read_u64(&stats->us) / 1e6 : 0.0);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/*
 * open_staged(sink_id integer, commit_user text) returns one row:
 * (open_files bigint, open_rows bigint, open_bytes bigint, oldest_open_at
 * timestamptz), what this database's writers hold for the sink and commit
 * user in open staged files: files, rows and bytes (batch headers and
 * payloads) written and not yet sealed into a checkpoint, and when the
 * oldest of them was staged (NULL when none is).  Every column is NULL
 * when the counts are not known whole (open_staged_totals says when).
 * Shows counts only, no row data.  Raises what paimon_sink_require_ready
 * raises.
 */
Datum
paimon_sink_open_staged(PG_FUNCTION_ARGS)
{
	TupleDesc desc;
	Datum values[4];
	bool nulls[4] = {0};
	OpenStagedTotals totals;

	paimon_sink_require_ready();
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		memset(&totals, 0, sizeof(totals));
	else
		open_staged_totals(MyDatabaseId, PG_GETARG_INT32(0), text_to_cstring(PG_GETARG_TEXT_PP(1)),
						   &totals);
	if (!totals.complete)
	{
		for (int i = 0; i < 4; i++)
			nulls[i] = true;
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
	}
	values[0] = Int64GetDatum(totals.files);
	values[1] = Int64GetDatum(totals.rows);
	values[2] = Int64GetDatum(totals.bytes);
	values[3] = TimestampTzGetDatum(totals.oldest_at);
	nulls[3] = totals.oldest_at == 0;
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}

/*
 * require_reset_right raises ERRCODE_INSUFFICIENT_PRIVILEGE unless role,
 * or pg_monitor membership (monitor), may reset the sink's statistics.
 */
static void
require_reset_right(const SinkInfo *sink, Oid role, bool monitor)
{
	char *owner;

	if (monitor || has_privs_of_role(role, sink->owner))
		return;
	owner = OidIsValid(sink->owner) ? GetUserNameFromId(sink->owner, false) : "(none)";
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to reset the statistics of sink \"%s\"", sink->name),
			 errdetail("Only a member of the sink's owner, role \"%s\", or of pg_monitor may "
					   "reset its statistics.",
					   owner),
			 errhint("Run it as a member of role \"%s\" or of pg_monitor.", owner)));
}

/*
 * reset_sink_stats(sink_name text DEFAULT NULL) starts the counters of
 * sink_stats again from zero, with stats_reset now(), for every commit
 * user of the sink named, of each member of the sink group named, or
 * (NULL) of every sink the caller may reset, in the caller's transaction;
 * returns the number of (sink, commit user) rows reset (bigint).  A member
 * of the sink's owner (of each member's) or of pg_monitor may reset it.
 * Raises ERRCODE_UNDEFINED_OBJECT for a name that is neither a sink nor a
 * group, ERRCODE_INSUFFICIENT_PRIVILEGE for a caller that may not, and
 * what paimon_sink_require_ready raises.
 */
Datum
paimon_sink_reset_sink_stats(PG_FUNCTION_ARGS)
{
	Oid role = GetUserId();
	bool monitor = has_privs_of_role(role, ROLE_PG_MONITOR);
	char *name;
	SinkInfo *sink;
	SinkGroup *group;
	ListCell *lc;
	List *members = NIL;
	int64 reset = 0;

	paimon_sink_require_ready();
	if (PG_ARGISNULL(0))
		PG_RETURN_INT64(metadata_reset_sink_stats(0, monitor, role));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	sink = palloc0(sizeof(SinkInfo));
	if (metadata_sink_by_name(name, sink))
	{
		require_reset_right(sink, role, monitor);
		PG_RETURN_INT64(metadata_reset_sink_stats(sink->sink_id, true, role));
	}
	group = metadata_group_by_name(name);
	if (group == NULL)
		catalog_require_sink(name); /* raises its error */
	/* a group: every member's right first, so that a refusal resets none */
	foreach (lc, group->members)
	{
		SinkInfo *member = palloc0(sizeof(SinkInfo));

		if (!metadata_sink_by_id(lfirst_int(lc), member))
			continue;
		require_reset_right(member, role, monitor);
		members = lappend_int(members, member->sink_id);
	}
	foreach (lc, members)
		reset += metadata_reset_sink_stats(lfirst_int(lc), true, role);
	PG_RETURN_INT64(reset);
}
