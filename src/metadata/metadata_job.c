/*-------------------------------------------------------------------------
 *
 * metadata_job.c
 *	  The SQL of a job's protocol: whether a sink has a job's commit user,
 *	  and the committables and rows a writer id sealed for a checkpoint.
 *
 * A job's commit user is one restart_job() handed a fence epoch
 * (commit_user_state.epoch_required): its writes and calls name the epoch
 * in their transaction, and the sink refuses rows that name no commit user
 * at all (fdw_session.c).  A subtask may tell prepare_commit() how many
 * rows it sent; the count sealed is read here (prepare.c).  Like the rest of
 * the statements on the extension's tables (metadata.c's file comment gives
 * the rules), these pin every name to its schema.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "core/constants.h"
#include "metadata/metadata.h"
#include "metadata/statement.h"

/*
 * metadata_sink_has_job: whether a commit user of the sink is a job's
 * (restart_job() fenced it) whose input has not ended.  Read by a session
 * under the latest snapshot.
 */
bool
metadata_sink_has_job(int32 sink_id)
{
	static Statement statement = {
		"SELECT pg_catalog.count(*) AS count FROM paimon_sink.commit_user_state u "
		"WHERE u.sink_id OPERATOR(pg_catalog.=) $1 AND u.epoch_required "
		"AND u.last_prepared_checkpoint OPERATOR(pg_catalog.<>) $2 "
		"AND u.last_committed_checkpoint OPERATOR(pg_catalog.<>) $2",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id), ARG_INT8(PAIMON_SINK_END_INPUT_CHECKPOINT)};

	return statement_int8(&statement, args, lengthof(args), RUN_LATEST, "count", 0) > 0;
}

/* read_count_rows reads a row of (count, row_count) into an int64 pair. */
static void *
read_count_rows(uint64 row, const void *arg)
{
	int64 *pair = palloc(sizeof(int64) * 2);

	pair[0] = row_int8(row, "count");
	pair[1] = row_int8(row, "row_count");
	return pair;
}

/*
 * metadata_count_committables counts the committables of a checkpoint of a
 * commit user (of one writer id, or of every one when writer_id < 0); rows,
 * unless NULL, receives the rows they hold.
 */
int
metadata_count_committables(int32 sink_id, const char *commit_user, int64 checkpoint_id,
							int32 writer_id, int64 *rows)
{
	static Statement statement = {
		"SELECT pg_catalog.count(*)::pg_catalog.int8 AS count, "
		"coalesce(pg_catalog.sum(c.row_count), 0)::pg_catalog.int8 AS row_count "
		"FROM paimon_sink.committable c "
		"WHERE c.sink_id OPERATOR(pg_catalog.=) $1 AND c.commit_user OPERATOR(pg_catalog.=) $2 "
		"AND c.checkpoint_id OPERATOR(pg_catalog.=) $3 "
		"AND ($4 OPERATOR(pg_catalog.<) 0 OR c.writer_id OPERATOR(pg_catalog.=) $4)",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user), ARG_INT8(checkpoint_id),
				  ARG_INT4(writer_id)};

	int64 *pair = statement_first(&statement, args, lengthof(args), 0, read_count_rows, NULL);

	if (rows != NULL)
		*rows = pair[1];
	return (int) pair[0];
}
