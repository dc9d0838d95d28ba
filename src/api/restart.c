/*-------------------------------------------------------------------------
 *
 * restart.c
 *	  A job's restart: restart_job() and last_commit(), the SQL entry points
 *	  that give a job back the last committed checkpoint with the properties
 *	  it stored in it (its source offsets).
 *
 * A job keeps its source position in the checkpoint's properties
 * (prepare_commit's properties argument), committed in the same prepared
 * transaction as its rows, as Paimon's snapshot properties, Kafka's
 * sendOffsetsToTransaction and Delta's txn action do; it needs no store of
 * its own.  Its restart is then one call, restart_job(): wait (bounded) for
 * the database's committer and writers, which a crash-restart is still
 * bringing back; restore the commit user (recover(): finish its in-doubt
 * transactions, commit its prepared checkpoints up to the restored one,
 * discard the rest, raise its fence epoch and make the commit user a
 * job's); and return the last committed checkpoint with its properties,
 * where the source resumes, and the new fence epoch, which the job's
 * subtasks name in every writing transaction (write_as()) and call.
 * Kafka's initTransactions() is the same one step for a producer: fence
 * the old epoch, finish what it left, and go on under the new one, which
 * the producer holds, not its connection.  Restored by commit user, not by
 * writer id: a new attempt may run more or fewer subtasks than the failed
 * one.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "commands/dbcommands.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "api/sink_group.h"
#include "api/sql_call.h"
#include "committer/committer.h"
#include "core/constants.h"
#include "core/guc.h"
#include "ipc/request.h"
#include "metadata/catalog.h"
#include "metadata/metadata.h"
#include "metadata/version.h"
#include "session/handoff.h"

PG_FUNCTION_INFO_V1(paimon_sink_last_commit);
PG_FUNCTION_INFO_V1(paimon_sink_restart_job);

/*
 * fill_last_commit puts a LastCommit into the first columns of a result
 * row: checkpoint_id, properties, snapshot_id, committed_at.
 */
static void
fill_last_commit(const LastCommit *last, Datum *values, bool *nulls)
{
	values[0] = Int64GetDatum(last->checkpoint_id);
	nulls[1] = last->properties == NULL;
	if (!nulls[1])
		values[1] = DirectFunctionCall1(jsonb_in, CStringGetDatum(last->properties));
	nulls[2] = last->snapshot_id == 0;
	values[2] = Int64GetDatum(last->snapshot_id);
	nulls[3] = last->snapshot_id == 0;
	values[3] = TimestampTzGetDatum(last->committed_at);
}

/*
 * last_commit(sink_name text, commit_user text) returns the commit user's
 * last committed checkpoint: (checkpoint_id bigint, properties jsonb,
 * snapshot_id bigint, committed_at timestamptz); checkpoint_id 0 before the
 * first commit; properties NULL when that checkpoint carried none;
 * snapshot_id and committed_at NULL when it committed empty (no snapshot).
 * No row for a commit user the sink has never seen.  Never forgotten by
 * snapshot expiry: the properties live with the high-water mark.  Errors:
 * 42704, 22023 (invalid commit user), 55000.
 */
Datum
paimon_sink_last_commit(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SinkInfo *sink;
	LastCommit last;
	Datum values[4];
	bool nulls[4] = {false, false, false, false};

	paimon_sink_require_ready();
	if (PG_ARGISNULL(0))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("the sink name must not be NULL")));
	/* a sink group's last commit is its first member's: the members commit together */
	sink = sink_group_first_sink(fcinfo);
	InitMaterializedSRF(fcinfo, 0);
	if (!metadata_last_commit(sink->sink_id, sql_commit_user_argument(fcinfo, 1, sink), &last))
		return (Datum) 0;
	fill_last_commit(&last, values, nulls);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/*
 * restart_job(sink_name text, commit_user text, timeout_ms integer,
 * restored_checkpoint_id bigint) restarts a job in one call: waits up to
 * timeout_ms milliseconds for this database's committer and writers to
 * serve, restores the commit user as recover(..., 'restore') does to
 * restored_checkpoint_id (NULL: its last committed checkpoint, as the
 * committer finds it) and makes it a job's: the new fence epoch, which
 * every write and call for it names from then on (write_as(), fence.c),
 * as Kafka's initTransactions() hands a producer its epoch.  It sets no
 * session setting: through a pooler the session is not the job's.  Returns (checkpoint_id bigint, properties jsonb, snapshot_id bigint,
 * committed_at timestamptz, recommitted_checkpoints integer,
 * discarded_checkpoints integer, discarded_files integer, fence_epoch
 * bigint): the last committed checkpoint, as last_commit() returns it, and
 * what the restore did, with the new fence epoch.  Errors: 42704, 42501,
 * 22023 (invalid commit user, the sink's own, a negative timeout, a
 * restored checkpoint id below 0, a stale restore),
 * 25001, 53400 (the worker budget has no room for the database's workers),
 * 55000, 57014 (the workers did not serve within timeout_ms; also a
 * writer that did not answer the restore's barrier), 08006.
 */
Datum
paimon_sink_restart_job(PG_FUNCTION_ARGS)
{
	int32 group_id;
	/* a sink group restores every member together; it answers with its first member's commit */
	SinkInfo *sink = linitial(sink_group_owned_sinks(fcinfo, "restart a job of", &group_id));
	CommitterRequest *request = palloc0(sizeof(CommitterRequest));
	int32 timeout_ms = PG_ARGISNULL(2) ? -1 : PG_GETARG_INT32(2);
	TupleDesc desc;
	LastCommit last;
	Datum values[8];
	bool nulls[8] = {false, false, false, false, false, false, false, false};

	sql_refuse_transaction_block("paimon_sink.restart_job()");
	sql_require_prepared_transactions();
	if (PG_ARGISNULL(1))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("the commit user of the job must not be NULL")));
	strlcpy(request->commit_user, sql_commit_user_argument(fcinfo, 1, sink),
			sizeof(request->commit_user));
	if (strcmp(request->commit_user, sink->default_commit_user) == 0)
		ereport(
			ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("cannot restart a job under the own commit user of sink \"%s\"", sink->name),
			 errdetail("SQL sessions write with it; discarding what it staged would lose "
					   "committed transactions."),
			 errhint("A job has a commit user of its own, stable across its restarts.")));
	if (timeout_ms < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("timeout_ms must be zero or more")));
	/* NULL: where the commit user stands when the committer takes the request */
	request->restore_last_committed = PG_ARGISNULL(3);
	if (!PG_ARGISNULL(3))
		request->checkpoint_id = sql_checkpoint_argument(fcinfo, 3, CHECKPOINT_ID_RESTORE);
	if (!handoff_wait_for_workers(timeout_ms))
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("the workers of paimon_sink did not serve database \"%s\" within %d ms",
						get_database_name(MyDatabaseId), timeout_ms),
				 errdetail("restart_job() waits for the committer and the %d writers of the "
						   "database before it restores commit user \"%s\"; nothing was "
						   "restored.",
						   PaimonSinkWritersPerDatabase, request->commit_user),
				 errhint("Call it again (a crash-restart may still be bringing them back); the "
						 "writers view shows which do not serve. Check max_worker_processes and "
						 "the server log.")));

	request->kind = REQUEST_RECOVER;
	request->sink_id = sink->sink_id;
	request->group_id = group_id;
	request->writer_id = -1;
	request->mode = RECOVER_RESTORE;
	request->job_restart = true;
	committer_submit(handoff_database_index(true), request);

	if (!metadata_last_commit(sink->sink_id, request->commit_user, &last))
		elog(ERROR, "commit user \"%s\" has no row after its restore", request->commit_user);
	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "restart_job must return a row");
	fill_last_commit(&last, values, nulls);
	values[4] = Int32GetDatum(request->recommitted_checkpoints);
	values[5] = Int32GetDatum(request->discarded_checkpoints);
	values[6] = Int32GetDatum(request->discarded_files);
	values[7] = Int64GetDatum((int64) last.fence_epoch);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
