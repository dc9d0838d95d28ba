/*-------------------------------------------------------------------------
 *
 * metadata_properties.c
 *	  The SQL of checkpoint properties: a job's own properties of a
 *	  checkpoint (its source offsets), recorded per writer id at the
 *	  prepare, merged into the snapshot at the commit, and read back with
 *	  the commit user's last committed checkpoint.
 *
 * A job stores its source position with its data, in the same prepared
 * transaction, as Paimon's snapshot properties, Kafka's
 * sendOffsetsToTransaction and Delta's txn action do: after any failure,
 * the properties of the last committed checkpoint are exactly where its
 * source must resume.  Each prepare_commit() call of a checkpoint gives
 * the properties of its writer id (a subtask); they wait in
 * checkpoint_properties, one row per writer id (a retry of the same writer
 * id replaces its row: the latest prepare of a subtask wins), and the
 * commit merges the rows into one object, key by key.  Two writer ids that
 * give one key different values are refused at the second prepare
 * (22023), before its barrier: merged, one of the values would be lost
 * without anyone knowing which, and a job whose subtasks overwrite each
 * other's offsets resumes one of them from the wrong place.  Paimon's
 * properties come from its one committer, which has no such choice to
 * make; Flink's operator state, merged from subtasks, keys each subtask's
 * part by its index, which is what the hint suggests.
 *
 * The rest of the statements on the extension's own tables are in
 * metadata.c, under the same rules (see its file comment); these are apart
 * only so that each file stays within the line limit.  The merge itself is
 * in metadata.c's snapshot and mark statements, since it is part of them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "metadata/metadata.h"
#include "metadata/statement.h"

/* One key two writer ids gave different values, for the refusal. */
typedef struct PropertyConflict
{
	int32 writer_id;
	char *key;
	char *given;
	char *asked;
} PropertyConflict;

/* read_conflict reads a PropertyConflict. */
static void *
read_conflict(uint64 row, const void *arg)
{
	PropertyConflict *conflict = palloc(sizeof(PropertyConflict));

	conflict->writer_id = row_int4(row, "writer_id");
	conflict->key = row_text(row, "key");
	conflict->given = row_text(row, "given");
	conflict->asked = row_text(row, "asked");
	return conflict;
}

/* writer_name names a writer id for a message: -1 is every writer id. */
static char *
writer_name(int32 writer_id)
{
	return writer_id < 0 ? pstrdup("every writer id (writer_id NULL)")
						 : psprintf("writer id %d", writer_id);
}

/*
 * metadata_check_properties refuses (ERRCODE_INVALID_PARAMETER_VALUE) the
 * properties (jsonb text of an object) that writer_id gives checkpoint_id
 * when another writer id of the commit user gave one of their keys
 * another value; the same value is no conflict (subtasks that all know
 * it).  Run by the committer, in the prepare's transaction, before its
 * barrier.
 */
void
metadata_check_properties(const SinkInfo *sink, const char *commit_user, int64 checkpoint_id,
						  int32 writer_id, const char *properties)
{
	static Statement statement = {
		"SELECT o.writer_id, e.key, e.value::pg_catalog.text AS given, "
		"n.value::pg_catalog.text AS asked FROM paimon_sink.checkpoint_properties o "
		"CROSS JOIN LATERAL pg_catalog.jsonb_each(o.properties) e "
		"JOIN pg_catalog.jsonb_each($5::pg_catalog.jsonb) n ON n.key OPERATOR(pg_catalog.=) e.key "
		"WHERE o.sink_id OPERATOR(pg_catalog.=) $1 AND o.commit_user OPERATOR(pg_catalog.=) $2 "
		"AND o.checkpoint_id OPERATOR(pg_catalog.=) $3 AND o.writer_id OPERATOR(pg_catalog.<>) $4 "
		"AND n.value OPERATOR(pg_catalog.<>) e.value ORDER BY o.writer_id, e.key LIMIT 1",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink->sink_id), ARG_TEXT(commit_user), ARG_INT8(checkpoint_id),
				  ARG_INT4(writer_id), ARG_TEXT(properties)};
	PropertyConflict *conflict =
		statement_first(&statement, args, lengthof(args), 0, read_conflict, NULL);

	if (conflict == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("property \"%s\" of checkpoint %lld of commit user \"%s\" of sink \"%s\" "
					"already has another value",
					conflict->key, (long long) checkpoint_id, commit_user, sink->name),
			 errdetail("%s prepared it as %s; this prepare of %s gives %s. The properties of a "
					   "checkpoint's prepares are merged into one object, so a key must have one "
					   "value; nothing was prepared.",
					   writer_name(conflict->writer_id), conflict->given, writer_name(writer_id),
					   conflict->asked),
			 errhint("Give each subtask keys of its own (such as its source partitions, or "
					 "\"offset-<writer id>\"), or the same value in every prepare.")));
}

/*
 * metadata_record_properties records the properties (jsonb text of an
 * object) writer_id (-1: every writer id) gives checkpoint_id, replacing
 * what the same writer id gave it before (a retried prepare).  Run by the
 * committer, in the prepare's transaction.
 */
void
metadata_record_properties(int32 sink_id, const char *commit_user, int64 checkpoint_id,
						   int32 writer_id, const char *properties)
{
	static Statement statement = {
		"INSERT INTO paimon_sink.checkpoint_properties AS p (sink_id, commit_user, "
		"checkpoint_id, writer_id, properties) VALUES ($1, $2, $3, $4, $5::pg_catalog.jsonb) "
		"ON CONFLICT (sink_id, commit_user, checkpoint_id, writer_id) "
		"DO UPDATE SET properties = excluded.properties",
		SPI_OK_INSERT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user), ARG_INT8(checkpoint_id),
				  ARG_INT4(writer_id), ARG_TEXT(properties)};

	(void) statement_execute(&statement, args, lengthof(args), 0);
}

/*
 * metadata_discard_properties_after forgets the properties of a commit
 * user's checkpoints above restored (recover(): its source replays them).
 */
void
metadata_discard_properties_after(int32 sink_id, const char *commit_user, int64 restored)
{
	static Statement statement = {
		"DELETE FROM paimon_sink.checkpoint_properties p "
		"WHERE p.sink_id OPERATOR(pg_catalog.=) $1 AND p.commit_user OPERATOR(pg_catalog.=) $2 "
		"AND p.checkpoint_id OPERATOR(pg_catalog.>) $3",
		SPI_OK_DELETE};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user), ARG_INT8(restored)};

	(void) statement_execute(&statement, args, lengthof(args), 0);
}

/* read_last_commit reads a LastCommit. */
static void *
read_last_commit(uint64 row, const void *arg)
{
	LastCommit *last = palloc0(sizeof(LastCommit));
	bool isnull;
	Datum committed_at;

	last->checkpoint_id = row_int8(row, "last_committed_checkpoint");
	last->properties = row_text(row, "properties");
	last->snapshot_id = row_int8(row, "snapshot_id");
	committed_at = row_datum(row, "committed_at", &isnull);
	last->committed_at = isnull ? 0 : DatumGetTimestampTz(committed_at);
	last->fence_epoch = (uint64) row_int8(row, "fence_epoch");
	return last;
}

/*
 * metadata_last_commit reads a commit user's last committed checkpoint,
 * its properties (kept in commit_user_state, so snapshot expiry never
 * forgets them) and its snapshot (none when it committed empty), under the
 * latest snapshot (a session, after a commit of the committer); false when
 * the sink has never seen the commit user.
 */
bool
metadata_last_commit(int32 sink_id, const char *commit_user, LastCommit *last)
{
	static Statement statement = {
		"SELECT u.last_committed_checkpoint, u.last_committed_properties::pg_catalog.text "
		"AS properties, u.fence_epoch, l.snapshot_id, l.committed_at "
		"FROM paimon_sink.commit_user_state u LEFT JOIN paimon_sink.snapshot_log l "
		"ON l.sink_id OPERATOR(pg_catalog.=) u.sink_id "
		"AND l.snapshot_id OPERATOR(pg_catalog.=) u.last_snapshot_id "
		"AND l.commit_identifier OPERATOR(pg_catalog.=) u.last_committed_checkpoint "
		"WHERE u.sink_id OPERATOR(pg_catalog.=) $1 AND u.commit_user OPERATOR(pg_catalog.=) $2",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user)};
	LastCommit *found =
		statement_first(&statement, args, lengthof(args), RUN_LATEST, read_last_commit, NULL);

	if (found != NULL)
		*last = *found;
	return found != NULL;
}
