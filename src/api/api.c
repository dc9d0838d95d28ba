/*-------------------------------------------------------------------------
 *
 * api.c
 *	  The thin SQL entry points that hand a sink's work to its database's
 *	  committer: prepare_commit, commit, checkpoint, recover, end_input,
 *	  remove_orphan_files and discard_missing_files; also expire_snapshots
 *	  and start_workers.
 *
 * Each checks its arguments and the caller's rights, submits one request
 * and returns what the committer did, read from the extension's tables.
 * prepare_commit and commit follow Paimon's prepareCommit/commit and
 * SeaTunnel's SinkWriter.prepareCommit / SinkCommitter.commit contracts;
 * their COMMENT ON texts in the extension script give argument types,
 * return shapes and SQLSTATEs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "commands/extension.h"
#include "datatype/timestamp.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"

#include "api/api.h"
#include "api/sink_group.h"
#include "api/sql_call.h"
#include "api/utility_hook.h"
#include "committer/committer.h"
#include "core/budget.h"
#include "core/constants.h"
#include "core/names.h"
#include "core/shared_state.h"
#include "metadata/catalog.h"
#include "metadata/fence.h"
#include "metadata/metadata.h"
#include "metadata/version.h"
#include "session/fdw_session.h"
#include "session/handoff.h"
#include "session/write_identity.h"

PG_FUNCTION_INFO_V1(paimon_sink_prepare_commit);
PG_FUNCTION_INFO_V1(paimon_sink_commit);
PG_FUNCTION_INFO_V1(paimon_sink_reject_failing_rows);
PG_FUNCTION_INFO_V1(paimon_sink_checkpoint);
PG_FUNCTION_INFO_V1(paimon_sink_start_workers);
PG_FUNCTION_INFO_V1(paimon_sink_recover);
PG_FUNCTION_INFO_V1(paimon_sink_end_input);
PG_FUNCTION_INFO_V1(paimon_sink_remove_orphan_files);
PG_FUNCTION_INFO_V1(paimon_sink_expire_snapshots);
PG_FUNCTION_INFO_V1(paimon_sink_discard_missing_files);

/*
 * start_request starts a request to the committer for a sink the caller
 * owns, after the checks every state-changing call shares.  When members
 * is not NULL, the name may be a sink group's (sink_group.c): the request
 * is then the group's (its first member's sink id and the group's id),
 * *members gets the member sinks (SinkInfo *, in the group's order; a list
 * of the one sink otherwise), and the commit user must be given (a group
 * has none of its own).  Other calls refuse a group's name with
 * ERRCODE_WRONG_OBJECT_TYPE.
 */
static SinkInfo *
start_request(FunctionCallInfo fcinfo, CommitterRequest *request, int kind, const char *action,
			  const char *function, List **members)
{
	int32 group_id;
	List *sinks = sink_group_owned_sinks(fcinfo, action, &group_id);
	SinkInfo *sink = linitial(sinks);

	if (group_id != 0 && members == NULL)
		ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
						errmsg("%s does not take a sink group", function),
						errdetail("\"%s\" names a sink group.", sql_text_argument(fcinfo, 0)),
						errhint("Call it for each member sink.")));
	if (group_id != 0 && PG_ARGISNULL(1))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("the commit user of a sink group must not be NULL"),
						errdetail("A sink group has no commit user of its own."),
						errhint("Pass the job's commit user.")));
	sql_refuse_transaction_block(function);
	sql_require_prepared_transactions();
	memset(request, 0, sizeof(*request));
	request->kind = kind;
	request->sink_id = sink->sink_id;
	request->group_id = group_id;
	request->writer_id = -1;
	if (members != NULL)
		*members = sinks;
	return sink;
}

/*
 * return_snapshots returns the snapshots of a commit request's sinks (one,
 * or a group's members, one after another in the group's order: the
 * members commit together, so the first member's marks before and after
 * bound each member's), in commit()'s shape, from the request's answer
 * (metadata_return_snapshots); also: as metadata_return_snapshots.
 */
static void
return_snapshots(FunctionCallInfo fcinfo, List *sinks, const CommitterRequest *request, int64 also)
{
	ListCell *lc;

	foreach (lc, sinks)
		metadata_return_snapshots(fcinfo, ((SinkInfo *) lfirst(lc))->sink_id, request->commit_user,
								  request->previous_last_committed, request->last_committed, also,
								  request->answered, request->answered_count);
}

/* submit submits a request to this database's committer and waits for it. */
static void
submit(CommitterRequest *request)
{
	int database_index = handoff_database_index(true);

	committer_submit(database_index, request);
}

/*
 * prepare_commit(sink_name text, commit_user text, checkpoint_id bigint,
 * writer_id integer, properties jsonb) is the barrier: the stream's staged
 * files are sealed and recorded as committables of checkpoint_id, with
 * writer_id's properties of the checkpoint (a jsonb object, NULL for none;
 * a retry of the writer id replaces them; the commit merges every writer
 * id's into the snapshot, see metadata_properties.c); returns the checkpoint's
 * committables (checkpoint_id, file_name, writer_id, bucket, row_count,
 * byte_count), or for an empty checkpoint one row of 0 rows with file_name
 * and bucket NULL.  An empty checkpoint while other streams of the sink
 * hold staged rows warns (01000), naming them.  Errors: 42704, 42501,
 * 22023 (invalid commit user; an id at or below the last committed one,
 * whose staged rows are dropped as a replay; an id below the last
 * prepared one; properties that are no object, or give a key another
 * writer id gave another value), 25001, 54000 (properties over 8 kB as
 * text), 55000 (after end_input(); properties from a session that
 * joined the commit user's fence epoch before a restore raised it).
 */
Datum
paimon_sink_prepare_commit(PG_FUNCTION_ARGS)
{
	CommitterRequest request;
	List *members;
	SinkInfo *sink = start_request(fcinfo, &request, REQUEST_PREPARE, "prepare",
								   "paimon_sink.prepare_commit()", &members);
	ListCell *lc;

	strlcpy(request.commit_user, sql_commit_user_argument(fcinfo, 1, sink),
			sizeof(request.commit_user));
	request.checkpoint_id = sql_checkpoint_argument(fcinfo, 2, CHECKPOINT_ID_PREPARE);
	request.writer_id = PG_ARGISNULL(3) ? -1 : PG_GETARG_INT32(3);
	if (!PG_ARGISNULL(3) && request.writer_id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("writer id must not be negative"),
				 errhint("Pass NULL to prepare every writer id of the commit user.")));
	/* held to the fence by the committer; a group's members share one epoch */
	request.check_fence = true;
	request.named_epoch = write_identity_call_epoch(fcinfo, 5, request.commit_user);
	if (PG_NARGS() > 6 && !PG_ARGISNULL(6))
	{
		if (request.group_id != 0)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("expected_rows does not take a sink group"),
					 errdetail("The members of a group are prepared one after another, each in "
							   "its own transaction."),
					 errhint("Prepare each member sink with its own expected_rows.")));
		request.expected_rows_given = true;
		request.expected_rows = PG_GETARG_INT64(6);
		if (request.expected_rows < 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("expected_rows must be zero or more")));
	}
	/* 0.1's four-argument declaration calls the same symbol */
	if (PG_NARGS() > 4 && !PG_ARGISNULL(4))
	{
		sql_properties_argument(PG_GETARG_JSONB_P(4), request.properties);
		/* fenced as the session's rows are: a zombie's positions never replace the job's */
		if (request.named_epoch >= 0)
			request.fence_epoch = (uint64) request.named_epoch;
		else
			request.fence_epoch = fdw_session_write_epoch(sink, request.commit_user,
														  FENCE_EPOCH_UNNAMED, "prepare_commit()");
	}
	/* a group's members one after another, its properties recorded with the first */
	foreach (lc, members)
	{
		request.sink_id = ((SinkInfo *) lfirst(lc))->sink_id;
		request.group_id = 0;
		submit(&request);
		request.properties[0] = '\0';
	}

	foreach (lc, members)
		metadata_return_committables(fcinfo, ((SinkInfo *) lfirst(lc))->sink_id,
									 request.commit_user, request.checkpoint_id, request.writer_id);
	return (Datum) 0;
}

/*
 * commit(sink_name text, commit_user text, checkpoint_id bigint) commits
 * every prepared checkpoint up to checkpoint_id, each as one snapshot, and
 * returns the snapshots it made and the existing one of checkpoint_id
 * (snapshot_id, commit_user, checkpoint_id, row_count, file_count,
 * committed_at, newly_committed); checkpoint_id committed without a
 * snapshot (empty) answers with snapshot_id and committed_at NULL and 0
 * rows (NULL when expiry may have forgotten its snapshot).  An id above
 * every prepared one has no row of its own (commit(N) with a large N
 * commits whatever is prepared).  Errors: 42704, 42501, 22023, 25001,
 * 55000, 58P01 and the load's own.
 */
Datum
paimon_sink_commit(PG_FUNCTION_ARGS)
{
	CommitterRequest request;
	List *members;
	SinkInfo *sink =
		start_request(fcinfo, &request, REQUEST_COMMIT, "commit", "paimon_sink.commit()", &members);

	strlcpy(request.commit_user, sql_commit_user_argument(fcinfo, 1, sink),
			sizeof(request.commit_user));
	request.checkpoint_id = sql_checkpoint_argument(fcinfo, 2, CHECKPOINT_ID_COMMIT);
	request.check_fence = true;
	request.named_epoch = write_identity_call_epoch(fcinfo, 3, request.commit_user);
	submit(&request);
	return_snapshots(fcinfo, members, &request, request.checkpoint_id);
	return (Datum) 0;
}

/*
 * reject_failing_rows(sink_name text, checkpoint_id bigint, commit_user text)
 * is the operator's way past a poison checkpoint: commit() of the commit
 * user's prepared checkpoints up to checkpoint_id (commit_user NULL: the
 * sink's own), with the rows the target refuses moved aside into
 * paimon_sink.rejected_row in each checkpoint's own prepared transaction
 * (rejects.c; Kafka Connect's errors.tolerance = all with its dead-letter
 * queue).  Being that commit, it happens once: a retry, or recovery after a
 * crash past the PREPARE, finds the checkpoint committed.  Returns rows in
 * the shape of commit(); for the sink's owner's members (a superuser is
 * one).  SQLSTATEs: as commit(); see the COMMENT ON in the extension script.
 */
Datum
paimon_sink_reject_failing_rows(PG_FUNCTION_ARGS)
{
	CommitterRequest request;
	SinkInfo *sink = start_request(fcinfo, &request, REQUEST_COMMIT, "move the refused rows of",
								   "paimon_sink.reject_failing_rows()", NULL);

	request.checkpoint_id = sql_checkpoint_argument(fcinfo, 1, CHECKPOINT_ID_COMMIT);
	strlcpy(request.commit_user, sql_commit_user_argument(fcinfo, 2, sink),
			sizeof(request.commit_user));
	request.reject_rows = true;
	submit(&request);
	return_snapshots(fcinfo, list_make1(sink), &request, request.checkpoint_id);
	return (Datum) 0;
}

/*
 * checkpoint(sink_name text) prepares and commits the next checkpoint of
 * the sink's own commit user; returns the snapshots made (none when nothing
 * was written), in the shape of commit().
 */
Datum
paimon_sink_checkpoint(PG_FUNCTION_ARGS)
{
	CommitterRequest request;
	SinkInfo *sink = start_request(fcinfo, &request, REQUEST_CHECKPOINT, "checkpoint",
								   "paimon_sink.checkpoint()", NULL);

	strlcpy(request.commit_user, sink->default_commit_user, sizeof(request.commit_user));
	submit(&request);
	return_snapshots(fcinfo, list_make1(sink), &request, -1);
	return (Datum) 0;
}

/*
 * start_workers() asks the launcher for this database's committer and
 * writers; CREATE EXTENSION and ALTER EXTENSION UPDATE call it.  Raises
 * ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE when the library was not
 * preloaded or the extension's version is not the library's (outside an
 * extension script), and ERRCODE_CONFIGURATION_LIMIT_EXCEEDED when the
 * worker budget (budget.c) has no room for this database: CREATE EXTENSION
 * then fails at once, with the budget's arithmetic in the detail, rather
 * than every write waiting paimon_sink.handoff_timeout later; ALTER
 * EXTENSION UPDATE only warns (refusing the update would help no one).
 * It warns (53400) when the room comes only once databases that dropped
 * the extension have let their workers go.
 */
Datum
paimon_sink_start_workers(PG_FUNCTION_ARGS)
{
	paimon_sink_require_ready();
	budget_require_workers(
		MyDatabaseId, !creating_extension || utility_hook_creating_extension() ? ERROR : WARNING,
		true);
	/* in an extension script the extension is not ours to see until it commits */
	(void) shared_want_database(MyDatabaseId, !creating_extension);
	/* from an extension script: the committer can see the extension only then */
	if (creating_extension)
		handoff_want_database_at_commit();
	PG_RETURN_VOID();
}

/*
 * recover(sink_name text, commit_user text, restored_checkpoint_id bigint,
 * mode text) restores a job's commit user to checkpoint
 * restored_checkpoint_id: commits its prepared checkpoints up to it,
 * discards what it staged or prepared after it, and returns
 * (last_committed_checkpoint bigint, recommitted_checkpoints integer,
 * discarded_checkpoints integer, discarded_files integer).  Mode 'restore'
 * returns; 'restore_and_fail' raises 55000 after a re-commit so the job
 * restarts (Paimon's behaviour).  Errors: 42704, 42501, 22023 (invalid
 * commit user or mode, the sink's own commit user, a stale restore below the
 * last committed checkpoint), 25001.
 */
Datum
paimon_sink_recover(PG_FUNCTION_ARGS)
{
	CommitterRequest request;
	List *members;
	SinkInfo *sink = start_request(fcinfo, &request, REQUEST_RECOVER, "recover",
								   "paimon_sink.recover()", &members);
	char *mode = PG_ARGISNULL(3) ? "restore" : sql_text_argument(fcinfo, 3);
	TupleDesc desc;
	Datum values[4];
	bool nulls[4] = {false, false, false, false};

	if (PG_ARGISNULL(1))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("the commit user to recover must not be NULL")));
	strlcpy(request.commit_user, sql_commit_user_argument(fcinfo, 1, sink),
			sizeof(request.commit_user));
	if (strcmp(request.commit_user, sink->default_commit_user) == 0)
		ereport(
			ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("cannot recover the own commit user of sink \"%s\"", sink->name),
			 errdetail("SQL sessions write with it; discarding what it staged would lose committed "
					   "transactions."),
			 errhint(
				 "recover() is for jobs with their own commit user (paimon_sink.commit_user).")));
	request.checkpoint_id = sql_checkpoint_argument(fcinfo, 2, CHECKPOINT_ID_RESTORE);
	if (strcmp(mode, "restore") == 0)
		request.mode = RECOVER_RESTORE;
	else if (strcmp(mode, "restore_and_fail") == 0)
		request.mode = RECOVER_RESTORE_AND_FAIL;
	else
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("invalid recover mode \"%s\"", paimon_sink_shown(mode)),
						errhint("Valid modes are: restore, restore_and_fail.")));
	submit(&request);

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "recover must return a row");
	values[0] = Int64GetDatum(request.last_committed);
	values[1] = Int32GetDatum(request.recommitted_checkpoints);
	values[2] = Int32GetDatum(request.discarded_checkpoints);
	values[3] = Int32GetDatum(request.discarded_files);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/*
 * end_input(sink_name text, commit_user text) ends a bounded input: prepares
 * the checkpoint 9223372036854775807 (Paimon's END_INPUT) and commits at once;
 * returns the snapshots made and the row of that checkpoint, as commit()
 * (0 rows when the input ended empty).  A retry (a reply lost) answers as
 * a retried commit() does; a later prepare of the commit user fails with
 * 55000.  Errors: those of prepare_commit and commit.
 */
Datum
paimon_sink_end_input(PG_FUNCTION_ARGS)
{
	CommitterRequest request;
	List *members;
	SinkInfo *sink = start_request(fcinfo, &request, REQUEST_END_INPUT, "end the input of",
								   "paimon_sink.end_input()", &members);

	strlcpy(request.commit_user, sql_commit_user_argument(fcinfo, 1, sink),
			sizeof(request.commit_user));
	request.check_fence = true;
	request.named_epoch = write_identity_call_epoch(fcinfo, 2, request.commit_user);
	submit(&request);
	return_snapshots(fcinfo, members, &request, PAIMON_SINK_END_INPUT_CHECKPOINT);
	return (Datum) 0;
}

/*
 * expire_snapshots(sink_name text, retain_last integer, older_than interval)
 * forgets the sink's snapshots beyond the newest retain_last committed more
 * than older_than ago, but each commit user's last; returns how many
 * (bigint).  Errors: 42704, 42501, 22004 (NULL older_than), 22023
 * (retain_last < 1, negative older_than).
 */
Datum
paimon_sink_expire_snapshots(PG_FUNCTION_ARGS)
{
	SinkInfo *sink = sql_owned_sink(fcinfo, "expire snapshots of");
	int32 retain_last = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1);
	Interval *older_than = PG_ARGISNULL(2) ? NULL : PG_GETARG_INTERVAL_P(2);
	int64 expired;

	if (retain_last < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("retain_last must be at least 1"),
				 errdetail("The newest snapshot of a sink is always kept.")));
	if (older_than == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("older_than must not be NULL")));
	if (sql_interval_sign(older_than) < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("older_than must be an age of zero or more"),
						errhint("Pass an age such as interval '1 hour'.")));
	expired =
		metadata_expire_snapshots(sink->sink_id, retain_last, sql_interval_ms(older_than), 0, true);
	PG_RETURN_INT64(expired);
}

/*
 * remove_orphan_files(sink_name text, older_than interval, dry_run boolean)
 * removes (or, in a dry run, lists) the sink's staged files older than
 * older_than that no writer holds and no prepared checkpoint records;
 * returns (file_name text, byte_count bigint, removed boolean).  Errors:
 * 42704, 42501, 22023 for a negative cut-off (a cut-off in the future), 25001.
 */
Datum
paimon_sink_remove_orphan_files(PG_FUNCTION_ARGS)
{
	CommitterRequest request;
	Interval *older_than = PG_ARGISNULL(1) ? NULL : PG_GETARG_INTERVAL_P(1);

	(void) start_request(fcinfo, &request, REQUEST_REMOVE_ORPHANS, "remove orphan files of",
						 "paimon_sink.remove_orphan_files()", NULL);
	if (older_than == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED), errmsg("older_than must not be NULL")));
	if (sql_interval_sign(older_than) < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("older_than must not be negative"),
						errdetail("A negative age puts the cut-off in the future, where files are "
								  "still being written."),
						errhint("Pass an age such as interval '1 day'.")));
	request.older_than_ms = sql_interval_ms(older_than);
	request.dry_run = PG_ARGISNULL(2) ? false : PG_GETARG_BOOL(2);
	submit(&request);

	metadata_return_maintenance_results(fcinfo, request.seq, false);
	return (Datum) 0;
}

/*
 * discard_missing_files(sink_name text, commit_user text) forgets, in the
 * commit user's pending checkpoints (NULL: the sink's own commit user), the
 * committables whose staged files are missing, so that the next commit()
 * or checkpoint() commits the rest; their rows are lost.  Returns the
 * committables forgotten (checkpoint_id bigint, file_name text, row_count
 * bigint, byte_count bigint), none when no file is missing, and warns with
 * the totals.  Errors: 42704, 42501, 22023 invalid commit user, 25001,
 * 55000, 58030 (or another file-access SQLSTATE) a staged file that
 * cannot be looked at (nothing discarded).
 */
Datum
paimon_sink_discard_missing_files(PG_FUNCTION_ARGS)
{
	CommitterRequest request;
	SinkInfo *sink =
		start_request(fcinfo, &request, REQUEST_DISCARD_MISSING, "discard missing files of",
					  "paimon_sink.discard_missing_files()", NULL);

	strlcpy(request.commit_user, sql_commit_user_argument(fcinfo, 1, sink),
			sizeof(request.commit_user));
	submit(&request);
	if (request.discarded_files > 0)
		ereport(WARNING,
				(errmsg_plural("discarded %d missing staged file of commit user \"%s\" of sink "
							   "\"%s\": its %lld rows are lost",
							   "discarded %d missing staged files of commit user \"%s\" of sink "
							   "\"%s\": their %lld rows are lost",
							   request.discarded_files, request.discarded_files,
							   request.commit_user, sink->name, (long long) request.discarded_rows),
				 errdetail("Pending checkpoints affected: %d. The next commit() or checkpoint() "
						   "commits what remains of them; one left with no file commits with no "
						   "snapshot, the commit user's marks moving over it.",
						   request.discarded_checkpoints),
				 errhint("The rows were committed by their transactions: write them again if they "
						 "can be found elsewhere.")));
	metadata_return_maintenance_results(fcinfo, request.seq, true);
	return (Datum) 0;
}
