/*-------------------------------------------------------------------------
 *
 * metadata_stats.c
 *	  The SQL of the counters of sink_stats that no commit writes: failed
 *	  requests and commit() calls that found their checkpoint committed,
 *	  and reset_sink_stats() (which records the counters in sink_stats_reset).
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
 * metadata_reset_sink_stats records the counters of sink_stats as the
 * caller's snapshot sees them, and now() as their stats_reset, for the
 * commit users of sink_id (0: of every sink whose owner role has the
 * privileges of, unless all is true: of every sink), in the caller's
 * transaction, as the extension's owner (the caller checked the rights).
 * It writes sink_stats_reset only: commit_user_state's row is not locked,
 * so a commit in progress is not waited for (its counts show after the
 * reset), and a reset in a transaction left open holds up no commit.
 * Returns the number of (sink, commit user) rows reset.
 */
int64
metadata_reset_sink_stats(int32 sink_id, bool all, Oid role)
{
	static Statement statement = {
		"INSERT INTO paimon_sink.sink_stats_reset AS r (sink_id, commit_user, commits, "
		"rows_committed, bytes_committed, failures, skipped_as_committed, stats_reset) "
		"SELECT u.sink_id, u.commit_user, u.commits, u.rows_committed, u.bytes_committed, "
		"u.failures, u.skipped_as_committed, pg_catalog.now() "
		"FROM paimon_sink.commit_user_state u "
		"WHERE ($1 OPERATOR(pg_catalog.=) 0 OR u.sink_id OPERATOR(pg_catalog.=) $1) "
		"AND ($2 OR EXISTS ("
		"  SELECT FROM paimon_sink.sink_definition s "
		"  JOIN pg_catalog.pg_foreign_table fd "
		"    ON fd.ftrelid OPERATOR(pg_catalog.=) s.foreign_table::pg_catalog.oid "
		"    AND ('sink_id=' OPERATOR(pg_catalog.||) s.sink_id) OPERATOR(pg_catalog.=) "
		"      ANY (fd.ftoptions) "
		"  JOIN pg_catalog.pg_class ft ON ft.oid OPERATOR(pg_catalog.=) fd.ftrelid "
		"  WHERE s.sink_id OPERATOR(pg_catalog.=) u.sink_id "
		"    AND pg_catalog.pg_has_role($3, ft.relowner, 'USAGE'))) "
		"ON CONFLICT (sink_id, commit_user) DO UPDATE SET commits = excluded.commits, "
		"rows_committed = excluded.rows_committed, bytes_committed = excluded.bytes_committed, "
		"failures = excluded.failures, skipped_as_committed = excluded.skipped_as_committed, "
		"stats_reset = excluded.stats_reset",
		SPI_OK_INSERT};
	Arg args[] = {ARG_INT4(sink_id), ARG_BOOL(all), ARG_OID(role)};

	return (int64) statement_execute(&statement, args, lengthof(args), RUN_AS_OWNER);
}
