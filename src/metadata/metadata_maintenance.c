/*-------------------------------------------------------------------------
 *
 * metadata_maintenance.c
 *	  The SQL of snapshot expiry, maintenance results, commit statistics and
 *	  the result sets of the catalog's SQL functions.
 *
 * The rest of the statements on the extension's own tables are in
 * metadata.c, under the same rules (see its file comment): schema-qualified
 * names, plans kept by statement.c, RUN_AS_OWNER only after the caller's
 * rights were checked.  They are apart only so that each file stays within
 * the line limit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/lsyscache.h"

#include "metadata/metadata.h"
#include "metadata/statement.h"

/* ------------------------------------------------------ snapshot expiry */

/*
 * metadata_expire_snapshots forgets the snapshots of a sink beyond its
 * newest retain_last (>= 1) committed more than older_than_ms milliseconds
 * ago, except each commit user's last, with their committables; the highest
 * sequence number of each bucket those held is kept in bucket_sequence.
 * limit > 0 looks at no more than the limit oldest candidates (the
 * committer's expiry, in batches); 0 looks at all of them.  Returns the
 * number of snapshots expired.  Follows Paimon's snapshot expiry
 * (num-retained, time-retained); high-water marks live in commit_user_state,
 * untouched.
 *
 * Its cost is bounded by the key, not by the snapshots kept: the cut is the
 * (retain_last + 1)-th newest snapshot id, read backwards on the primary key
 * (sink_id, snapshot_id); the candidates are the oldest ones up to it, read
 * forwards on that key, at most limit of them; the age is checked on those
 * only (snapshot ids follow commit time, so the oldest are the first to be
 * old enough; one younger than an older one waits for a later run), and
 * their committables are found by committable_committed.  Before any of
 * that, the oldest candidate alone is read: while it is too young, so are
 * all the others, and the run reads a few index entries, not a batch of
 * young candidates (a loop of small commits ran it every 64 commits, 15%
 * of the committer's CPU).
 */
int64
metadata_expire_snapshots(int32 sink_id, int32 retain_last, int64 older_than_ms, int64 limit,
						  bool as_catalog_owner)
{
	static Statement statement = {
		"WITH cut AS ("
		"  SELECT l.snapshot_id FROM paimon_sink.snapshot_log l "
		"  WHERE l.sink_id OPERATOR(pg_catalog.=) $1 "
		"  AND (SELECT f.committed_at FROM paimon_sink.snapshot_log f "
		"    WHERE f.sink_id OPERATOR(pg_catalog.=) $1 "
		"    AND NOT EXISTS (SELECT FROM paimon_sink.commit_user_state u "
		"      WHERE u.sink_id OPERATOR(pg_catalog.=) $1 "
		"      AND u.last_snapshot_id OPERATOR(pg_catalog.=) f.snapshot_id) "
		"    ORDER BY f.snapshot_id LIMIT 1) OPERATOR(pg_catalog.<) $3 "
		"  ORDER BY l.snapshot_id DESC OFFSET $2 LIMIT 1), "
		"oldest AS ("
		"  SELECT l.snapshot_id, l.committed_at FROM paimon_sink.snapshot_log l "
		"  WHERE l.sink_id OPERATOR(pg_catalog.=) $1 "
		"    AND l.snapshot_id OPERATOR(pg_catalog.<=) (SELECT c.snapshot_id FROM cut c) "
		"    AND NOT EXISTS (SELECT FROM paimon_sink.commit_user_state u "
		"      WHERE u.sink_id OPERATOR(pg_catalog.=) $1 "
		"      AND u.last_snapshot_id OPERATOR(pg_catalog.=) l.snapshot_id) "
		"  ORDER BY l.snapshot_id LIMIT $4), "
		"expired AS ("
		"  SELECT o.snapshot_id FROM oldest o WHERE o.committed_at OPERATOR(pg_catalog.<) $3), "
		"files AS ("
		"  DELETE FROM paimon_sink.committable c USING expired e "
		"  WHERE c.sink_id OPERATOR(pg_catalog.=) $1 "
		"  AND c.snapshot_id OPERATOR(pg_catalog.=) e.snapshot_id "
		"  RETURNING c.bucket, c.max_sequence), "
		"sequences AS ("
		"  INSERT INTO paimon_sink.bucket_sequence (sink_id, bucket, max_sequence) "
		"  SELECT $1, f.bucket, pg_catalog.max(f.max_sequence) FROM files f GROUP BY f.bucket "
		"  ON CONFLICT (sink_id, bucket) DO UPDATE SET max_sequence = "
		"    greatest(paimon_sink.bucket_sequence.max_sequence, excluded.max_sequence)) "
		"DELETE FROM paimon_sink.snapshot_log l USING expired e "
		"WHERE l.sink_id OPERATOR(pg_catalog.=) $1 "
		"AND l.snapshot_id OPERATOR(pg_catalog.=) e.snapshot_id",
		SPI_OK_DELETE};
	/* now() is the transaction's start, as the commit times are */
	TimestampTz cutoff =
		TimestampTzPlusMilliseconds(GetCurrentTransactionStartTimestamp(), -older_than_ms);
	Arg args[] = {ARG_INT4(sink_id), ARG_INT8((int64) retain_last),
				  ARG_DATUM(TIMESTAMPTZOID, TimestampTzGetDatum(cutoff), false),
				  ARG_DATUM(INT8OID, Int64GetDatum(limit), limit <= 0)};

	return (int64) statement_execute(&statement, args, lengthof(args),
									 as_catalog_owner ? RUN_AS_OWNER : 0);
}

/* ------------------------------------------- maintenance and statistics */

/* metadata_add_maintenance_result records one file an orphan removal found, for its requester. */
void
metadata_add_maintenance_result(uint64 request_id, const char *file_name, int64 byte_count,
								bool removed)
{
	static Statement statement = {"INSERT INTO paimon_sink.maintenance_result (request_id, "
								  "file_name, byte_count, removed) VALUES ($1, $2, $3, $4)",
								  SPI_OK_INSERT};
	Arg args[] = {ARG_INT8((int64) request_id), ARG_TEXT(file_name), ARG_INT8(byte_count),
				  ARG_BOOL(removed)};

	(void) statement_execute(&statement, args, lengthof(args), 0);
}

/*
 * metadata_count_commits adds what a sink's requests committed, and how
 * many failed, to its commit_statistics row (unlogged: no WAL flush);
 * last_committed_at (0: no commit) is when the last of those commits was.
 * A dropped sink counts nothing, and neither does one a transaction is
 * dropping: its definition is locked, not waited for (that drop deletes
 * the statistics row, so waiting would stall the committer as long as the
 * transaction stays open, and then fail the foreign key, and with it every
 * sink's counts of the write); locked FOR KEY SHARE, the definition
 * cannot go before this commits.  A drop rolled back loses those counts.
 */
void
metadata_count_commits(int32 sink_id, const CommitTally *tally, int64 failures,
					   TimestampTz last_committed_at)
{
	static Statement statement = {
		"INSERT INTO paimon_sink.commit_statistics AS s "
		"(sink_id, commits, skipped, retries, rows_committed, bytes_committed, last_commit_ms, "
		"failures, last_committed_at) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9 "
		"WHERE EXISTS (SELECT FROM paimon_sink.sink_definition d "
		"  WHERE d.sink_id OPERATOR(pg_catalog.=) $1 FOR KEY SHARE SKIP LOCKED) "
		"ON CONFLICT (sink_id) DO UPDATE SET commits = s.commits OPERATOR(pg_catalog.+) $2, "
		"skipped = s.skipped OPERATOR(pg_catalog.+) $3, "
		"retries = s.retries OPERATOR(pg_catalog.+) $4, "
		"rows_committed = s.rows_committed OPERATOR(pg_catalog.+) $5, "
		"bytes_committed = s.bytes_committed OPERATOR(pg_catalog.+) $6, "
		"last_commit_ms = coalesce($7, s.last_commit_ms), "
		"failures = s.failures OPERATOR(pg_catalog.+) $8, "
		"last_committed_at = coalesce(excluded.last_committed_at, s.last_committed_at)",
		SPI_OK_INSERT};
	Arg args[] = {
		ARG_INT4(sink_id),
		ARG_INT8(tally->commits),
		ARG_INT8(tally->skipped),
		ARG_INT8(tally->retries),
		ARG_INT8(tally->rows),
		ARG_INT8(tally->bytes),
		ARG_DATUM(FLOAT8OID, Float8GetDatum(tally->last_ms), tally->commits == 0),
		ARG_INT8(failures),
		ARG_DATUM(TIMESTAMPTZOID, TimestampTzGetDatum(last_committed_at), last_committed_at == 0)};

	(void) statement_execute(&statement, args, lengthof(args), 0);
}

/*
 * metadata_count_failure counts failures (how many) of a sink's requests
 * by SQLSTATE, the last at last_failed_at with message; a sink dropped or
 * being dropped counts nothing, as in metadata_count_commits.
 */
void
metadata_count_failure(int32 sink_id, int sqlerrcode, int64 failures, TimestampTz last_failed_at,
					   const char *message)
{
	static Statement statement = {
		"INSERT INTO paimon_sink.commit_failures AS f "
		"(sink_id, sqlstate, failures, last_failed_at, last_message) "
		"SELECT $1, $2, $3, $4, $5 WHERE EXISTS (SELECT FROM "
		"paimon_sink.sink_definition d WHERE d.sink_id OPERATOR(pg_catalog.=) $1 "
		"FOR KEY SHARE SKIP LOCKED) "
		"ON CONFLICT (sink_id, sqlstate) DO UPDATE SET "
		"failures = f.failures OPERATOR(pg_catalog.+) $3, last_failed_at = $4, "
		"last_message = $5",
		SPI_OK_INSERT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(unpack_sql_state(sqlerrcode)), ARG_INT8(failures),
				  ARG_DATUM(TIMESTAMPTZOID, TimestampTzGetDatum(last_failed_at), false),
				  ARG_TEXT(message)};

	(void) statement_execute(&statement, args, lengthof(args), 0);
}

/* ------------------------------------------------ result sets of SQL functions */

/*
 * metadata_return_committables returns the committables of a checkpoint
 * (of one writer id, or every one when writer_id < 0) as the result set
 * (checkpoint_id, file_name, writer_id, bucket, row_count, byte_count):
 * prepare_commit()'s shape.  A checkpoint with none answers all the same,
 * with one row of 0 rows and bytes (file_name and bucket NULL; writer_id
 * the one asked for, or NULL), so that an empty checkpoint never reads as
 * no answer.
 */
void
metadata_return_committables(FunctionCallInfo fcinfo, int32 sink_id, const char *commit_user,
							 int64 checkpoint_id, int32 writer_id)
{
	static Statement statement = {
		"WITH f AS (SELECT c.checkpoint_id, c.file_name, c.writer_id, c.bucket, "
		"c.row_count, c.byte_count FROM paimon_sink.committable c "
		"WHERE c.sink_id OPERATOR(pg_catalog.=) $1 AND c.commit_user OPERATOR(pg_catalog.=) $2 "
		"AND c.checkpoint_id OPERATOR(pg_catalog.=) $3 "
		"AND ($4 OPERATOR(pg_catalog.<) 0 OR c.writer_id OPERATOR(pg_catalog.=) $4)) "
		"SELECT f.checkpoint_id, f.file_name, f.writer_id, f.bucket, f.row_count, f.byte_count "
		"FROM f UNION ALL "
		"SELECT $3, NULL::pg_catalog.text, "
		"CASE WHEN $4 OPERATOR(pg_catalog.>=) 0 THEN $4 END, NULL::pg_catalog.int4, "
		"0::pg_catalog.int8, 0::pg_catalog.int8 WHERE NOT EXISTS (SELECT FROM f) "
		"ORDER BY 3, 4, 2",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user), ARG_INT8(checkpoint_id),
				  ARG_INT4(writer_id)};

	statement_return_rows(fcinfo, &statement, args, lengthof(args), 0);
}

/*
 * snapshot_array makes a one-dimensional array of n values of a built-in
 * type of 4 or 8 bytes passed by value.
 */
static Datum
snapshot_array(Datum *values, int n, Oid type)
{
	int16 length;
	bool by_value;
	char align;

	get_typlenbyvalalign(type, &length, &by_value, &align);
	return PointerGetDatum(construct_array(values, n, type, length, by_value, align));
}

/*
 * metadata_return_snapshots returns a commit user's snapshots with a commit
 * identifier in (after, up_to], and the one of identifier also, as the
 * result set (snapshot_id, commit_user, checkpoint_id, row_count,
 * file_count, committed_at, newly_committed): commit()'s shape.  When also
 * (> 0) is committed (at or below up_to) without a snapshot, it answers all
 * the same, with snapshot_id and committed_at NULL: its row_count and
 * file_count are 0 when it is known to have been empty (committed by this
 * call, or a snapshot of the commit user below it, or none at all, is
 * kept: expiry removes a commit user's oldest snapshots first and never its
 * last), and NULL when expiry may have forgotten its snapshot.
 *
 * The snapshots in (after, up_to] are the ones the request made: its answer
 * lists them (answered, answered_count in all, of every sink of the
 * request; the first PAIMON_SINK_ANSWERED_SNAPSHOTS stored), and they are
 * returned from there, since the committer's expiry may forget a snapshot
 * before the requester reads its answer (TAP 043).  A request that made more
 * than the answer holds reads them from snapshot_log, from the first one it
 * made on (then an expiry in between may drop a row).
 *
 * This runs after every checkpoint() and commit(), so its cost must not
 * grow with the snapshots kept: the read of the range, when there is one,
 * is bounded on either index (the unique key by commit identifier, the
 * primary key by the first snapshot id made, whichever the plan takes: with
 * a sink's statistics stale the two look alike), and each branch of the
 * query runs only when its one-time filter holds (the skipped identifier's:
 * a retried commit(N) of an N committed before).  An OR of the two ranges
 * was a filter over every kept snapshot of the commit user.
 */
void
metadata_return_snapshots(FunctionCallInfo fcinfo, int32 sink_id, const char *commit_user,
						  int64 after, int64 up_to, int64 also, const AnsweredSnapshot *answered,
						  int answered_count)
{
	static Statement statement = {
		"SELECT a.snapshot_id, $2, a.checkpoint_id, a.row_count, a.file_count, a.committed_at, "
		"true FROM ROWS FROM (pg_catalog.unnest($6), pg_catalog.unnest($7), pg_catalog.unnest($8), "
		"pg_catalog.unnest($9), pg_catalog.unnest($10)) "
		"AS a (snapshot_id, checkpoint_id, row_count, file_count, committed_at) "
		"WHERE $11 "
		"UNION ALL "
		"SELECT l.snapshot_id, l.commit_user, l.commit_identifier, "
		"l.row_count, l.file_count, l.committed_at, "
		"l.commit_identifier OPERATOR(pg_catalog.>) $3 "
		"FROM paimon_sink.snapshot_log l WHERE l.sink_id OPERATOR(pg_catalog.=) $1 "
		"AND l.commit_user OPERATOR(pg_catalog.=) $2 "
		"AND l.commit_identifier OPERATOR(pg_catalog.>) $3 "
		"AND l.commit_identifier OPERATOR(pg_catalog.<=) $4 "
		"AND l.snapshot_id OPERATOR(pg_catalog.>=) $12 AND NOT $11 "
		"UNION ALL "
		"SELECT s.snapshot_id, s.commit_user, s.commit_identifier, "
		"s.row_count, s.file_count, s.committed_at, "
		"s.commit_identifier OPERATOR(pg_catalog.>) $3 "
		"FROM paimon_sink.snapshot_log s WHERE s.sink_id OPERATOR(pg_catalog.=) $1 "
		"AND s.commit_user OPERATOR(pg_catalog.=) $2 "
		"AND s.commit_identifier OPERATOR(pg_catalog.=) $5 "
		"AND $5 OPERATOR(pg_catalog.>) 0 "
		"AND NOT ($5 OPERATOR(pg_catalog.>) $3 AND $5 OPERATOR(pg_catalog.<=) $4) "
		"UNION ALL "
		"SELECT NULL::pg_catalog.int8, $2, $5, e.known::pg_catalog.int8, e.known, "
		"NULL::pg_catalog.timestamptz, $5 OPERATOR(pg_catalog.>) $3 FROM (SELECT CASE WHEN "
		"$5 OPERATOR(pg_catalog.>) $3 OR NOT EXISTS (SELECT FROM paimon_sink.snapshot_log a "
		"WHERE a.sink_id OPERATOR(pg_catalog.=) $1 AND a.commit_user OPERATOR(pg_catalog.=) $2) "
		"OR EXISTS (SELECT FROM paimon_sink.snapshot_log b "
		"WHERE b.sink_id OPERATOR(pg_catalog.=) $1 AND b.commit_user OPERATOR(pg_catalog.=) $2 "
		"AND b.commit_identifier OPERATOR(pg_catalog.<) $5) THEN 0 END AS known) e "
		"WHERE $5 OPERATOR(pg_catalog.>) 0 AND $5 OPERATOR(pg_catalog.<=) $4 "
		"AND NOT ($11 AND $5 OPERATOR(pg_catalog.=) ANY ($7)) "
		"AND NOT EXISTS (SELECT FROM paimon_sink.snapshot_log c "
		"WHERE c.sink_id OPERATOR(pg_catalog.=) $1 AND c.commit_user OPERATOR(pg_catalog.=) $2 "
		"AND c.commit_identifier OPERATOR(pg_catalog.=) $5) "
		"ORDER BY 3",
		SPI_OK_SELECT};
	int stored = Min(answered_count, PAIMON_SINK_ANSWERED_SNAPSHOTS);
	Datum *snapshot_ids = palloc(sizeof(Datum) * Max(1, stored));
	Datum *checkpoint_ids = palloc(sizeof(Datum) * Max(1, stored));
	Datum *row_counts = palloc(sizeof(Datum) * Max(1, stored));
	Datum *file_counts = palloc(sizeof(Datum) * Max(1, stored));
	Datum *committed_ats = palloc(sizeof(Datum) * Max(1, stored));
	int64 first_snapshot_id = 0;
	int n = 0;

	for (int i = 0; i < stored; i++)
	{
		const AnsweredSnapshot *one = &answered[i];

		if (one->sink_id != sink_id)
			continue;
		snapshot_ids[n] = Int64GetDatum(one->snapshot_id);
		checkpoint_ids[n] = Int64GetDatum(one->checkpoint_id);
		row_counts[n] = Int64GetDatum(one->row_count);
		file_counts[n] = Int32GetDatum(one->file_count);
		committed_ats[n] = TimestampTzGetDatum(one->committed_at);
		if (first_snapshot_id == 0 || one->snapshot_id < first_snapshot_id)
			first_snapshot_id = one->snapshot_id;
		n++;
	}
	{
		Arg args[] = {
			ARG_INT4(sink_id),
			ARG_TEXT(commit_user),
			ARG_INT8(after),
			ARG_INT8(up_to),
			ARG_INT8(also),
			ARG_DATUM(INT8ARRAYOID, snapshot_array(snapshot_ids, n, INT8OID), false),
			ARG_DATUM(INT8ARRAYOID, snapshot_array(checkpoint_ids, n, INT8OID), false),
			ARG_DATUM(INT8ARRAYOID, snapshot_array(row_counts, n, INT8OID), false),
			ARG_DATUM(INT4ARRAYOID, snapshot_array(file_counts, n, INT4OID), false),
			ARG_DATUM(TIMESTAMPTZARRAYOID, snapshot_array(committed_ats, n, TIMESTAMPTZOID), false),
			ARG_BOOL(answered_count <= PAIMON_SINK_ANSWERED_SNAPSHOTS),
			ARG_INT8(first_snapshot_id)};

		statement_return_rows(fcinfo, &statement, args, lengthof(args), 0);
	}
}

/*
 * metadata_return_maintenance_results returns, and forgets, what a request found, as the result
 * set: an orphan removal's (file_name, byte_count, removed), or (discarded) the committables
 * discard_missing_files forgot (checkpoint_id, file_name, row_count, byte_count).  As the owner.
 */
void
metadata_return_maintenance_results(FunctionCallInfo fcinfo, uint64 request_id, bool discarded)
{
	static Statement statements[] = {
		{"WITH outcome AS (DELETE FROM paimon_sink.maintenance_result r "
		 "  WHERE r.request_id OPERATOR(pg_catalog.=) $1 "
		 "  RETURNING r.file_name, r.byte_count, r.removed) "
		 "SELECT o.file_name, o.byte_count, o.removed FROM outcome o ORDER BY o.file_name",
		 SPI_OK_SELECT},
		{"WITH outcome AS (DELETE FROM paimon_sink.maintenance_result r WHERE r.request_id "
		 "OPERATOR(pg_catalog.=) $1 RETURNING r.checkpoint_id, r.file_name, r.row_count, "
		 "r.byte_count) SELECT o.checkpoint_id, o.file_name, o.row_count, o.byte_count "
		 "FROM outcome o ORDER BY o.checkpoint_id, o.file_name",
		 SPI_OK_SELECT}};
	Arg args[] = {ARG_INT8((int64) request_id)};

	statement_return_rows(fcinfo, &statements[discarded], args, lengthof(args), RUN_AS_OWNER);
}
