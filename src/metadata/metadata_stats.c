/*-------------------------------------------------------------------------
 *
 * metadata_stats.c
 *	  The SQL of the counters of sink_stats that no commit writes: failed
 *	  requests and commit() calls that found their checkpoint committed,
 *	  and reset_sink_stats().
 *
 * The counters are columns of commit_user_state (sql/paimon_sink--0.1--0.2.sql).
 * A commit counts itself in its own write of the commit user's marks
 * (metadata_heap.c, or metadata_record_snapshot's statement); what is
 * here runs in transactions of its own, under the rules of metadata.c
 * (schema-qualified names, plans kept by statement.c, RUN_AS_OWNER only
 * after the caller's rights were checked).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "metadata/metadata.h"
#include "metadata/statement.h"

/*
 * metadata_count_outcome adds failures and skipped (commit() calls that
 * found their checkpoint committed) to the commit user's counters of
 * sink_stats, in the caller's transaction.  The row is locked SKIP
 * LOCKED: a transaction in doubt of the commit user (prepared by this
 * committer, which alone commits it) or a drop_sink in progress holds it,
 * and waiting would stall the committer.  Returns COUNT_WRITTEN,
 * COUNT_LOCKED (nothing written: try again later) or COUNT_NO_ROW (the
 * commit user or its sink is gone: nothing to count).
 */
CountOutcome
metadata_count_outcome(int32 sink_id, const char *commit_user, int64 failures, int64 skipped)
{
	static Statement update = {
		"WITH target AS (SELECT x.ctid FROM paimon_sink.commit_user_state x "
		"  WHERE x.sink_id OPERATOR(pg_catalog.=) $1 AND x.commit_user OPERATOR(pg_catalog.=) $2 "
		"  FOR NO KEY UPDATE SKIP LOCKED) "
		"UPDATE paimon_sink.commit_user_state u SET "
		"failures = u.failures OPERATOR(pg_catalog.+) $3, "
		"skipped_as_committed = u.skipped_as_committed OPERATOR(pg_catalog.+) $4 "
		"FROM target t WHERE u.ctid OPERATOR(pg_catalog.=) t.ctid",
		SPI_OK_UPDATE};
	static Statement exists = {
		"SELECT pg_catalog.count(*) AS n FROM paimon_sink.commit_user_state x "
		"WHERE x.sink_id OPERATOR(pg_catalog.=) $1 AND x.commit_user OPERATOR(pg_catalog.=) $2",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user), ARG_INT8(failures), ARG_INT8(skipped)};

	if (statement_execute(&update, args, lengthof(args), 0) > 0)
		return COUNT_WRITTEN;
	return statement_int8(&exists, args, 2, 0, "n", 0) > 0 ? COUNT_LOCKED : COUNT_NO_ROW;
}

/*
 * metadata_reset_sink_stats sets the counters of sink_stats to zero and
 * stats_reset to now() for the commit users of sink_id (0: of every sink
 * whose owner role has the privileges of, unless all is true: of every
 * sink), in the caller's transaction, as the extension's owner (the caller
 * checked the rights); waits for a commit of those commit users in
 * progress.  Returns the number of rows reset.
 */
int64
metadata_reset_sink_stats(int32 sink_id, bool all, Oid role)
{
	static Statement statement = {
		"UPDATE paimon_sink.commit_user_state u SET commits = 0, rows_committed = 0, "
		"bytes_committed = 0, failures = 0, skipped_as_committed = 0, "
		"stats_reset = pg_catalog.now() "
		"WHERE ($1 OPERATOR(pg_catalog.=) 0 OR u.sink_id OPERATOR(pg_catalog.=) $1) "
		"AND ($2 OR EXISTS ("
		"  SELECT FROM paimon_sink.sink_definition s "
		"  JOIN pg_catalog.pg_foreign_table fd "
		"    ON fd.ftrelid OPERATOR(pg_catalog.=) s.foreign_table::pg_catalog.oid "
		"    AND ('sink_id=' OPERATOR(pg_catalog.||) s.sink_id) OPERATOR(pg_catalog.=) "
		"      ANY (fd.ftoptions) "
		"  JOIN pg_catalog.pg_class ft ON ft.oid OPERATOR(pg_catalog.=) fd.ftrelid "
		"  WHERE s.sink_id OPERATOR(pg_catalog.=) u.sink_id "
		"    AND pg_catalog.pg_has_role($3, ft.relowner, 'USAGE')))",
		SPI_OK_UPDATE};
	Arg args[] = {ARG_INT4(sink_id), ARG_BOOL(all), ARG_OID(role)};

	return (int64) statement_execute(&statement, args, lengthof(args), RUN_AS_OWNER);
}
