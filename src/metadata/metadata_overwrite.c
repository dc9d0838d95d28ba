/*-------------------------------------------------------------------------
 *
 * metadata_overwrite.c
 *	  The SQL of overwrite sinks: what a commit user's job has replaced of
 *	  its target so far.
 *
 * An overwrite sink replaces its target once per job, a job being a commit
 * user (overwrite.c).  Whether the job replaced it already, and which leaf
 * partitions it replaced under dynamic_partition_overwrite, lives in the
 * commit user's row of commit_user_state, written in the prepared
 * transaction of the commit that replaced them: a retry, a restore, or a
 * crash after the PREPARE finds it there and replaces nothing again.
 *
 * The rest of the statements on the extension's own tables are in
 * metadata.c, under the same rules (see its file comment); these are apart
 * so that each file stays within the line limit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/array.h"

#include "metadata/metadata.h"
#include "metadata/statement.h"

/* read_overwrite_state reads an OverwriteState from a row of metadata_overwrite_state's query. */
static void *
read_overwrite_state(uint64 row, const void *arg)
{
	OverwriteState *state = palloc0(sizeof(OverwriteState));
	bool isnull;
	Datum checkpoint = row_datum(row, "overwrite_checkpoint", &isnull);
	Datum partitions;

	state->checkpoint_id = isnull ? 0 : DatumGetInt64(checkpoint);
	partitions = row_datum(row, "partitions", &isnull);
	if (!isnull)
	{
		Datum *values;
		int count;

		deconstruct_array(DatumGetArrayTypeP(partitions), OIDOID, sizeof(Oid), true, TYPALIGN_INT,
						  &values, NULL, &count);
		for (int i = 0; i < count; i++)
			state->partitions = lappend_oid(state->partitions, DatumGetObjectId(values[i]));
	}
	return state;
}

/*
 * metadata_overwrite_state returns what the commit user's job has replaced
 * of the sink's target so far (nothing when it has no row yet); read in
 * the commit's transaction, under the lock its marks hold.
 */
OverwriteState
metadata_overwrite_state(int32 sink_id, const char *commit_user)
{
	static Statement statement = {
		"SELECT u.overwrite_checkpoint, u.overwritten_partitions::pg_catalog.oid[] AS partitions "
		"FROM paimon_sink.commit_user_state u WHERE u.sink_id OPERATOR(pg_catalog.=) $1 "
		"AND u.commit_user OPERATOR(pg_catalog.=) $2",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user)};
	OverwriteState *state =
		statement_first(&statement, args, lengthof(args), 0, read_overwrite_state, NULL);
	OverwriteState none = {0};

	return state == NULL ? none : *state;
}

/*
 * metadata_record_overwrite records, in the commit's (to be prepared)
 * transaction, that checkpoint_id replaced the target for the commit user
 * (kept when an earlier checkpoint did), and the leaf partitions it
 * replaced (partitions, Oid; NIL for none).
 */
void
metadata_record_overwrite(int32 sink_id, const char *commit_user, int64 checkpoint_id,
						  List *partitions)
{
	static Statement statement = {
		"UPDATE paimon_sink.commit_user_state u SET "
		"overwrite_checkpoint = coalesce(u.overwrite_checkpoint, $3), "
		"overwritten_partitions = CASE WHEN $4 IS NULL THEN u.overwritten_partitions "
		"ELSE pg_catalog.array_cat(u.overwritten_partitions, $4::pg_catalog.regclass[]) END "
		"WHERE u.sink_id OPERATOR(pg_catalog.=) $1 AND u.commit_user OPERATOR(pg_catalog.=) $2",
		SPI_OK_UPDATE};
	Datum *values = palloc(sizeof(Datum) * Max(1, list_length(partitions)));
	ListCell *lc;
	int count = 0;
	Datum array;

	foreach (lc, partitions)
		values[count++] = ObjectIdGetDatum(lfirst_oid(lc));
	array =
		PointerGetDatum(construct_array(values, count, OIDOID, sizeof(Oid), true, TYPALIGN_INT));
	{
		Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user), ARG_INT8(checkpoint_id),
					  ARG_DATUM(OIDARRAYOID, array, partitions == NIL)};

		if (statement_execute(&statement, args, lengthof(args), 0) != 1)
			elog(ERROR, "commit user \"%s\" of sink %d has no state to record its overwrite in",
				 commit_user, sink_id);
	}
}
