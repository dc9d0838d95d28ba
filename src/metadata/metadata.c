/*-------------------------------------------------------------------------
 *
 * metadata.c
 *	  All SQL on the extension's own tables (schema paimon_sink), behind
 *	  typed functions.
 *
 * This is the only file that knows the tables' columns, as pg_cron's
 * job_metadata.c is for its catalog: callers see structs, never a query
 * text, a parameter array or a column number.  Statements run through
 * statement.c (plans kept, arguments typed, columns read by name).  Every
 * statement names its objects with their schema, so that it means the same
 * under any search_path; statements a user's session runs on tables the
 * user may not write run as the extension's owner (RUN_AS_OWNER: see
 * security.c), after the caller's rights were checked.
 *
 * Each function needs a transaction, connects to SPI itself (SPI
 * connections nest) and allocates what it returns in the memory context
 * current at its call; errors are statement.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "utils/array.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/uuid.h"

#include "core/constants.h"
#include "metadata/metadata.h"
#include "metadata/metadata_heap.h"
#include "metadata/metadata_sink_cache.h"
#include "metadata/statement.h"

/* ---------------------------------------------------------------- sinks */

/*
 * The sink's own foreign table, f (none: its columns NULL): the relation
 * of the recorded oid only when it is that sink's foreign table (its
 * option sink_id), not a later relation that took the oid of one lost
 * under 0.1 (a dump carries the dangling number).
 */
#define SINK_OWN_FOREIGN_TABLE                                                                     \
	"LEFT JOIN pg_catalog.pg_foreign_table fd ON fd.ftrelid OPERATOR(pg_catalog.=) "               \
	"d.foreign_table::pg_catalog.oid AND ('sink_id=' OPERATOR(pg_catalog.||) d.sink_id) "          \
	"OPERATOR(pg_catalog.=) ANY (fd.ftoptions) "                                                   \
	"LEFT JOIN pg_catalog.pg_class f ON f.oid OPERATOR(pg_catalog.=) fd.ftrelid "

#define SINK_SELECT                                                                                \
	"SELECT d.sink_id, d.sink_name, d.target_table::pg_catalog.oid AS target_table, "              \
	"d.foreign_table::pg_catalog.oid AS foreign_table, "                                           \
	"f.relowner AS owner_role, d.mode, d.buckets, d.bucket_key, "                                  \
	"d.default_commit_user, d.sink_uuid, d.column_names, "                                         \
	"d.column_types::pg_catalog.oid[] AS column_types, d.target_attnums, d.target_attnums_relid, " \
	"d.row_kind_column, "                                                                          \
	"d.partial_update, "                                                                           \
	"d.key_columns, d.on_error, d.ignore_update_before, d.ignore_delete, "                         \
	"d.dynamic_partition_overwrite FROM paimon_sink.sink_definition d " SINK_OWN_FOREIGN_TABLE

/*
 * read_sink reads a SinkInfo from a row of SINK_SELECT.  The sink's owner
 * is its foreign table's (InvalidOid while it has none): the one record of
 * it, which PostgreSQL keeps for DROP ROLE and REASSIGN OWNED.
 */
static void *
read_sink(uint64 row, const void *arg)
{
	SinkInfo *info = palloc0(sizeof(SinkInfo));
	bool isnull;
	Datum names = row_datum(row, "column_names", &isnull);

	info->sink_id = row_int4(row, "sink_id");
	info->name = row_text(row, "sink_name");
	info->target = DatumGetObjectId(row_datum(row, "target_table", NULL));
	info->foreign_table = DatumGetObjectId(row_datum(row, "foreign_table", NULL));
	/* NULL (no foreign table) reads as 0, InvalidOid */
	info->owner = DatumGetObjectId(row_datum(row, "owner_role", NULL));
	info->mode = row_text(row, "mode");
	info->buckets = row_int4(row, "buckets");
	info->bucket_key = row_text_list(row, "bucket_key");
	info->default_commit_user = row_text(row, "default_commit_user");
	memcpy(&info->sink_uuid, DatumGetUUIDP(row_datum(row, "sink_uuid", NULL)), sizeof(pg_uuid_t));
	if (!isnull)
	{
		Datum *name_values;
		Datum *type_values;
		int type_count;
		Datum types = row_datum(row, "column_types", &isnull);

		deconstruct_array(DatumGetArrayTypeP(names), TEXTOID, -1, false, TYPALIGN_INT, &name_values,
						  NULL, &info->column_count);

		if (isnull)
			elog(ERROR, "sink %d has column names but no column types", info->sink_id);
		deconstruct_array(DatumGetArrayTypeP(types), OIDOID, sizeof(Oid), true, TYPALIGN_INT,
						  &type_values, NULL, &type_count);
		if (type_count != info->column_count)
			elog(ERROR, "sink %d has %d column names and %d column types", info->sink_id,
				 info->column_count, type_count);
		info->column_names = palloc(sizeof(char *) * Max(1, info->column_count));
		info->column_types = palloc(sizeof(Oid) * Max(1, info->column_count));
		info->target_attnums = palloc0(sizeof(AttrNumber) * Max(1, info->column_count));
		for (int i = 0; i < info->column_count; i++)
		{
			info->column_names[i] = TextDatumGetCString(name_values[i]);
			info->column_types[i] = DatumGetObjectId(type_values[i]);
		}
		metadata_read_target_attnums(row, info);
	}
	info->row_kind_column = row_text(row, "row_kind_column");
	info->partial_update = row_bool(row, "partial_update");
	info->reject_on_error = strcmp(row_text(row, "on_error"), "reject") == 0;
	info->key_columns = row_text_list(row, "key_columns");
	info->ignore_update_before = row_bool(row, "ignore_update_before");
	info->ignore_delete = row_bool(row, "ignore_delete");
	info->dynamic_partition_overwrite = row_bool(row, "dynamic_partition_overwrite");
	return info;
}

/* lookup_sink runs a sink lookup and copies what it found into *info; true when found. */
static bool
lookup_sink(Statement *statement, Arg key, SinkInfo *info)
{
	SinkInfo *found = statement_first(statement, &key, 1, RUN_READ_ONLY, read_sink, NULL);

	if (found != NULL)
		*info = *found;
	return found != NULL;
}

/* metadata_sink_by_name fills info with the sink of that name; false when there is none. */
bool
metadata_sink_by_name(const char *name, SinkInfo *info)
{
	static Statement statement = {SINK_SELECT "WHERE d.sink_name OPERATOR(pg_catalog.=) $1",
								  SPI_OK_SELECT};

	return lookup_sink(&statement, (Arg) ARG_TEXT(name), info);
}

/* metadata_sink_by_id fills info with the sink of that id; false when there is none. */
bool
metadata_sink_by_id(int32 sink_id, SinkInfo *info)
{
	static Statement statement = {SINK_SELECT "WHERE d.sink_id OPERATOR(pg_catalog.=) $1",
								  SPI_OK_SELECT};
	SinkRowVersion version;
	SinkCacheResult cached = metadata_sink_cache_fetch(sink_id, info, &version);

	/* the committer reads its sink in every step: a copy of an unchanged row will do */
	if (cached != SINK_UNCACHED)
		return cached == SINK_CACHED;
	if (!lookup_sink(&statement, (Arg) ARG_INT4(sink_id), info))
		return false;
	metadata_sink_cache_store(info, &version);
	return true;
}

/*
 * metadata_sinks_of_target returns the sinks (SinkInfo *, in the caller's
 * memory context) whose target is relid, in sink id order; NIL for none.
 * Read as the extension's owner (an ALTER TABLE by any role asks) under the
 * latest snapshot, which also sees a sink this transaction created.
 */
List *
metadata_sinks_of_target(Oid relid)
{
	static Statement statement = {SINK_SELECT
								  "WHERE d.target_table::pg_catalog.oid OPERATOR(pg_catalog.=) $1 "
								  "ORDER BY d.sink_id",
								  SPI_OK_SELECT};
	Arg args[] = {ARG_OID(relid)};

	return statement_collect(&statement, args, lengthof(args), RUN_AS_OWNER | RUN_LATEST, read_sink,
							 NULL);
}

/*
 * metadata_sink_exists says whether the sink exists now, under a snapshot
 * taken for this statement (drop_sink checks again after it waited for a lock).
 */
bool
metadata_sink_exists(int32 sink_id)
{
	static Statement statement = {"SELECT 1 FROM paimon_sink.sink_definition d "
								  "WHERE d.sink_id OPERATOR(pg_catalog.=) $1",
								  SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id)};

	return statement_execute(&statement, args, lengthof(args), 0) > 0;
}

/* read_sink_ownership reads a SinkOwnership (owner 0 when its foreign table is gone). */
static void *
read_sink_ownership(uint64 row, const void *arg)
{
	SinkOwnership *found = palloc(sizeof(SinkOwnership));

	found->name = row_text(row, "sink_name");
	found->foreign_table = DatumGetObjectId(row_datum(row, "foreign_table", NULL));
	found->owner = DatumGetObjectId(row_datum(row, "owner", NULL));
	return found;
}

/*
 * metadata_sink_ownership returns the sinks (SinkOwnership *, by name)
 * whose foreign table is one of relids (an oid[] Datum, or 0) or is owned by
 * one of roles (the same), read as the extension's owner under the latest
 * snapshot, which also sees this transaction's changes: a drop_sink earlier
 * in it has forgotten its sink, and a sink created since a REPEATABLE READ
 * or SERIALIZABLE transaction took its snapshot is found (its foreign
 * table is the catalog's to see, and so to drop).
 */
List *
metadata_sink_ownership(Datum relids, Datum roles)
{
	static Statement statement = {
		"SELECT d.sink_name, d.foreign_table::pg_catalog.oid AS foreign_table, f.relowner AS owner "
		"FROM paimon_sink.sink_definition d " SINK_OWN_FOREIGN_TABLE
		"WHERE d.foreign_table::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
		"OR f.relowner OPERATOR(pg_catalog.=) ANY ($2) ORDER BY d.sink_name",
		SPI_OK_SELECT};
	Arg args[] = {ARG_DATUM(OIDARRAYOID, relids, relids == (Datum) 0),
				  ARG_DATUM(OIDARRAYOID, roles, roles == (Datum) 0)};

	return statement_collect(&statement, args, lengthof(args), RUN_AS_OWNER | RUN_LATEST,
							 read_sink_ownership, NULL);
}

/*
 * metadata_insert_sink records a new sink (as the extension's owner: the
 * caller's rights were checked) with a random default commit user, and
 * returns its sink id.  A name taken raises 23505 from the table's key.
 */
int32
metadata_insert_sink(const SinkDefinition *definition)
{
	static Statement statement = {
		"INSERT INTO paimon_sink.sink_definition (sink_name, "
		"target_table, mode, buckets, bucket_key, checkpoint_interval, "
		"row_kind_column, partial_update, key_columns, on_error, ignore_update_before, "
		"ignore_delete, dynamic_partition_overwrite, default_commit_user) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, "
		"pg_catalog.gen_random_uuid()::pg_catalog.text) RETURNING sink_id",
		SPI_OK_INSERT_RETURNING};
	Arg args[] = {
		ARG_TEXT(definition->name),
		ARG_OID(definition->target),
		ARG_TEXT(definition->mode),
		ARG_INT4(definition->buckets),
		ARG_DATUM(TEXTARRAYOID, definition->bucket_key, definition->bucket_key == (Datum) 0),
		ARG_DATUM(INTERVALOID, PointerGetDatum(definition->checkpoint_interval),
				  definition->checkpoint_interval == NULL),
		ARG_TEXT_OR_NULL(definition->row_kind_column),
		ARG_BOOL(definition->partial_update),
		ARG_DATUM(TEXTARRAYOID, definition->key_columns, definition->key_columns == (Datum) 0),
		ARG_TEXT(definition->on_error),
		ARG_BOOL(definition->ignore_update_before),
		ARG_BOOL(definition->ignore_delete),
		ARG_BOOL(definition->dynamic_partition_overwrite)};

	return (int32) statement_int8(&statement, args, lengthof(args), RUN_AS_OWNER, "sink_id", 0);
}

/*
 * metadata_add_default_commit_user gives a new sink the row of its own
 * commit user (as the extension's owner) and returns that commit user.
 */
char *
metadata_add_default_commit_user(int32 sink_id)
{
	static Statement statement = {
		"INSERT INTO paimon_sink.commit_user_state (sink_id, commit_user) "
		"SELECT d.sink_id, d.default_commit_user FROM paimon_sink.sink_definition d "
		"WHERE d.sink_id OPERATOR(pg_catalog.=) $1 RETURNING commit_user",
		SPI_OK_INSERT_RETURNING};
	Arg args[] = {ARG_INT4(sink_id)};
	List *commit_user =
		statement_texts(&statement, args, lengthof(args), RUN_AS_OWNER, "commit_user");

	if (commit_user == NIL)
		elog(ERROR, "sink %d has no definition", sink_id);
	return linitial(commit_user);
}

/*
 * metadata_drop_sink removes a sink's rows from every table, as the
 * extension's owner, and records it in dropped_sink: the committer removes
 * its staged files once this transaction committed (the "cleanup record"
 * pattern of Citus and pg_lake).
 */
void
metadata_drop_sink(int32 sink_id)
{
	static Statement statements[] = {
		{"DELETE FROM paimon_sink.committable x WHERE x.sink_id OPERATOR(pg_catalog.=) $1",
		 SPI_OK_DELETE},
		{"DELETE FROM paimon_sink.snapshot_log x WHERE x.sink_id OPERATOR(pg_catalog.=) $1",
		 SPI_OK_DELETE},
		{"DELETE FROM paimon_sink.commit_user_state x WHERE x.sink_id OPERATOR(pg_catalog.=) $1",
		 SPI_OK_DELETE},
		{"DELETE FROM paimon_sink.sink_stats_reset x WHERE x.sink_id OPERATOR(pg_catalog.=) $1",
		 SPI_OK_DELETE},
		{"DELETE FROM paimon_sink.checkpoint_properties x WHERE x.sink_id OPERATOR(pg_catalog.=) "
		 "$1",
		 SPI_OK_DELETE},
		{"DELETE FROM paimon_sink.sink_definition x WHERE x.sink_id OPERATOR(pg_catalog.=) $1",
		 SPI_OK_DELETE},
		{"INSERT INTO paimon_sink.dropped_sink (sink_id) VALUES ($1)", SPI_OK_INSERT}};
	Arg args[] = {ARG_INT4(sink_id)};

	for (int i = 0; i < lengthof(statements); i++)
		(void) statement_execute(&statements[i], args, lengthof(args), RUN_AS_OWNER);
}

/* metadata_dropped_sinks returns the ids of dropped sinks whose files may remain (int64 *). */
List *
metadata_dropped_sinks(void)
{
	static Statement statement = {"SELECT d.sink_id FROM paimon_sink.dropped_sink d",
								  SPI_OK_SELECT};

	return statement_int8s(&statement, NULL, 0, 0, "sink_id");
}

/* metadata_forget_dropped_sink removes a dropped sink's record once its folder is gone. */
void
metadata_forget_dropped_sink(int32 sink_id)
{
	static Statement statement = {"DELETE FROM paimon_sink.dropped_sink d "
								  "WHERE d.sink_id OPERATOR(pg_catalog.=) $1",
								  SPI_OK_DELETE};
	Arg args[] = {ARG_INT4(sink_id)};

	(void) statement_execute(&statement, args, lengthof(args), 0);
}

/* read_scheduled_sink reads a ScheduledSinkRow. */
static void *
read_scheduled_sink(uint64 row, const void *arg)
{
	ScheduledSinkRow *sink = palloc0(sizeof(ScheduledSinkRow));
	bool isnull;
	Datum interval = row_datum(row, "checkpoint_interval", &isnull);

	sink->sink_id = row_int4(row, "sink_id");
	sink->has_interval = !isnull;
	if (!isnull)
		sink->interval = *DatumGetIntervalP(interval);
	return sink;
}

/* metadata_schedule returns every sink with its checkpoint interval, by sink id (ScheduledSinkRow *). */
List *
metadata_schedule(void)
{
	static Statement statement = {"SELECT d.sink_id, d.checkpoint_interval "
								  "FROM paimon_sink.sink_definition d ORDER BY d.sink_id",
								  SPI_OK_SELECT};

	return statement_collect(&statement, NULL, 0, 0, read_scheduled_sink, NULL);
}

/* --------------------------------------------------------- commit users */

#define MARKS_SELECT                                                                               \
	"SELECT u.last_prepared_checkpoint, u.last_committed_checkpoint, u.fence_epoch, "              \
	"u.epoch_required "                                                                            \
	"FROM paimon_sink.commit_user_state u WHERE u.sink_id OPERATOR(pg_catalog.=) $1 "              \
	"AND u.commit_user OPERATOR(pg_catalog.=) $2"

/* read_marks reads a CommitUserMarks from a row of MARKS_SELECT. */
static void *
read_marks(uint64 row, const void *arg)
{
	CommitUserMarks *marks = palloc(sizeof(CommitUserMarks));

	marks->last_prepared = row_int8(row, "last_prepared_checkpoint");
	marks->last_committed = row_int8(row, "last_committed_checkpoint");
	marks->fence_epoch = (uint64) row_int8(row, "fence_epoch");
	marks->epoch_required = row_bool(row, "epoch_required");
	return marks;
}

/*
 * metadata_commit_user_marks returns a commit user's marks, creating its
 * row on first use; for_update locks the row (a commit or a restore moves
 * the marks).  Run by the committer.
 */
CommitUserMarks
metadata_commit_user_marks(int32 sink_id, const char *commit_user, bool for_update)
{
	static Statement create = {"INSERT INTO paimon_sink.commit_user_state (sink_id, commit_user) "
							   "VALUES ($1, $2) ON CONFLICT DO NOTHING",
							   SPI_OK_INSERT};
	static Statement locking = {MARKS_SELECT " FOR UPDATE", SPI_OK_SELECT};
	static Statement plain = {MARKS_SELECT, SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user)};
	CommitUserMarks found;
	CommitUserMarks *marks;

	/*
	 * read first, directly (metadata_heap.c: every prepare and commit reads
	 * them): the row is created once per commit user, not at every read
	 */
	if (metadata_heap_read_marks(sink_id, commit_user, for_update, &found))
		return found;
	(void) statement_execute(&create, args, lengthof(args), 0);
	marks =
		statement_first(for_update ? &locking : &plain, args, lengthof(args), 0, read_marks, NULL);
	if (marks == NULL)
		elog(ERROR, "commit user \"%s\" of sink %d has no row", commit_user, sink_id);
	return *marks;
}

/*
 * metadata_commit_user_state_table returns the oid of the extension's
 * commit_user_state table (InvalidOid without the extension), which
 * invalidate_commit_users names; a catalog lookup, so never from a cache
 * invalidation callback.
 */
Oid
metadata_commit_user_state_table(void)
{
	Oid schema = get_namespace_oid("paimon_sink", true);

	return OidIsValid(schema) ? get_relname_relid("commit_user_state", schema) : InvalidOid;
}

/*
 * invalidate_commit_users makes every session read the commit users' state
 * again in its next transaction: a relcache invalidation of
 * commit_user_state, sent when the transaction that raises a fence epoch or
 * ends a commit user's input commits (or is committed prepared).  A session
 * keeps the state it read until then (fdw_session_write_epoch), so that a
 * write does not read it every transaction.
 */
static void
invalidate_commit_users(void)
{
	Oid table = metadata_commit_user_state_table();

	if (OidIsValid(table))
		CacheInvalidateRelcacheByRelid(table);
}

/*
 * metadata_read_commit_user reads a commit user's marks without creating
 * its row; false when the sink has never seen it.  latest reads under the
 * latest snapshot (a session, after a commit of the committer).
 */
bool
metadata_read_commit_user(int32 sink_id, const char *commit_user, bool latest,
						  CommitUserMarks *marks)
{
	static Statement statement = {MARKS_SELECT, SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user)};
	CommitUserMarks *found = statement_first(&statement, args, lengthof(args),
											 latest ? RUN_LATEST : RUN_READ_ONLY, read_marks, NULL);

	if (found != NULL)
		*marks = *found;
	return found != NULL;
}

/*
 * The merge of a checkpoint's properties (rows p of checkpoint_properties,
 * one per writer id): one object of every key; NULL when no prepare gave
 * properties, {} when they were all empty.  A key is never given two
 * values (metadata_check_properties refuses it), so the order of the
 * rows does not matter.  Built as the text of an object from each key's
 * JSON string and value, not by jsonb_object_agg: its arguments are of
 * type "any", which no function a role plants can mimic, so the
 * search_path lint (010) could not show the name pinned.
 */
#define PROPERTIES_MERGED                                                                          \
	"CASE WHEN pg_catalog.count(*) OPERATOR(pg_catalog.>) 0 THEN coalesce(('{' "                   \
	"OPERATOR(pg_catalog.||) pg_catalog.string_agg(pg_catalog.to_jsonb(e.key)::pg_catalog.text "   \
	"OPERATOR(pg_catalog.||) ': ' OPERATOR(pg_catalog.||) e.value::pg_catalog.text, ', ') "        \
	"OPERATOR(pg_catalog.||) '}')::pg_catalog.jsonb, '{}'::pg_catalog.jsonb) END"
#define PROPERTIES_EACH "LEFT JOIN LATERAL pg_catalog.jsonb_each(p.properties) e ON true"

/*
 * metadata_move_marks moves a commit user's marks (MarkMove says how, to
 * checkpoint_id where it takes one):
 * - MARK_RAISE_PREPARED: the last prepared checkpoint to at least checkpoint_id;
 * - MARK_RAISE_COMMITTED: the last committed checkpoint to checkpoint_id, over
 *   empty prepared checkpoints (never lower); its properties become the commit
 *   user's last committed ones, and those of every checkpoint up to it are
 *   forgotten (an empty checkpoint has no snapshot to keep them);
 * - MARK_REWIND_PREPARED: the last prepared checkpoint down to the restored one,
 *   never below the last committed (a restore discarded those above it);
 * - MARK_NEW_FENCE_EPOCH: the fence epoch to checkpoint_id (recover(), one
 *   value for a group's members): batches written before it are left out of
 *   every later checkpoint, as Kafka fences a producer whose epoch is stale;
 * - MARK_JOB_FENCE_EPOCH: the same (restart_job()), and from then on every
 *   write and call for the commit user must name the epoch (fdw_session.c).
 */
void
metadata_move_marks(MarkMove move, int32 sink_id, const char *commit_user, int64 checkpoint_id)
{
#define MARKS_UPDATE "UPDATE paimon_sink.commit_user_state u SET "
#define MARKS_WHERE                                                                                \
	" WHERE u.sink_id OPERATOR(pg_catalog.=) $1 AND u.commit_user OPERATOR(pg_catalog.=) $2"
	static Statement statements[] = {
		[MARK_RAISE_PREPARED] = {MARKS_UPDATE
								 "last_prepared_checkpoint = "
								 "greatest(u.last_prepared_checkpoint, $3)" MARKS_WHERE,
								 SPI_OK_UPDATE},
		[MARK_RAISE_COMMITTED] = {"WITH gone AS (DELETE FROM paimon_sink.checkpoint_properties p "
								  "WHERE p.sink_id OPERATOR(pg_catalog.=) $1 AND p.commit_user "
								  "OPERATOR(pg_catalog.=) $2 AND p.checkpoint_id "
								  "OPERATOR(pg_catalog.<=) $3 RETURNING p.checkpoint_id, "
								  "p.properties) " MARKS_UPDATE
								  "last_committed_checkpoint = $3, last_committed_properties = "
								  "(SELECT " PROPERTIES_MERGED " FROM gone p " PROPERTIES_EACH
								  " WHERE p.checkpoint_id OPERATOR(pg_catalog.=) $3)" MARKS_WHERE
								  " AND u.last_committed_checkpoint OPERATOR(pg_catalog.<) $3",
								  SPI_OK_UPDATE},
		[MARK_REWIND_PREPARED] =
			{MARKS_UPDATE "last_prepared_checkpoint = greatest(u.last_committed_checkpoint, "
						  "least(u.last_prepared_checkpoint, $3))" MARKS_WHERE,
			 SPI_OK_UPDATE},
		[MARK_NEW_FENCE_EPOCH] = {MARKS_UPDATE "fence_epoch = $3" MARKS_WHERE, SPI_OK_UPDATE},
		[MARK_JOB_FENCE_EPOCH] = {
			MARKS_UPDATE "fence_epoch = $3, epoch_required = true" MARKS_WHERE, SPI_OK_UPDATE}};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user), ARG_INT8(checkpoint_id)};

	/* every prepare raises it: written directly (metadata_heap.c) */
	if (move == MARK_RAISE_PREPARED)
		metadata_heap_raise_prepared(sink_id, commit_user, checkpoint_id);
	else
		(void) statement_execute(&statements[move], args, lengthof(args), 0);
	/* what the sessions that write for the commit user refuse on */
	if (move == MARK_NEW_FENCE_EPOCH || move == MARK_JOB_FENCE_EPOCH ||
		checkpoint_id == PAIMON_SINK_END_INPUT_CHECKPOINT)
		invalidate_commit_users();
}

/* -------------------------------------------- committables and snapshots */

/*
 * metadata_record_committable records a sealed file for its checkpoint;
 * false when the file was recorded already (a barrier answered twice).
 */
bool
metadata_record_committable(const CommittableEntry *entry)
{
	/* one row a file, every prepare: written directly (metadata_heap.c) */
	return metadata_heap_record_committable(entry);
}

/* read_checkpoint_file reads a CheckpointFile. */
static void *
read_checkpoint_file(uint64 row, const void *arg)
{
	CheckpointFile *file = palloc0(sizeof(CheckpointFile));

	file->file_name = row_text(row, "file_name");
	file->row_count = row_int8(row, "row_count");
	file->byte_count = row_int8(row, "byte_count");
	file->excluded = row_int8_array(row, "excluded_offsets", &file->excluded_count);
	return file;
}

/*
 * metadata_checkpoint_files returns the files of a prepared checkpoint in
 * the order they were recorded (CheckpointFile *).
 */
List *
metadata_checkpoint_files(int32 sink_id, const char *commit_user, int64 checkpoint_id)
{
	static Statement statement = {
		"SELECT c.file_name, c.row_count, c.excluded_offsets, "
		"c.byte_count FROM paimon_sink.committable c WHERE c.sink_id OPERATOR(pg_catalog.=) $1 "
		"AND c.commit_user OPERATOR(pg_catalog.=) $2 AND c.checkpoint_id OPERATOR(pg_catalog.=) $3 "
		"AND c.snapshot_id IS NULL ORDER BY c.prepared_at, c.file_name",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user), ARG_INT8(checkpoint_id)};

	return statement_collect(&statement, args, lengthof(args), 0, read_checkpoint_file, NULL);
}

/*
 * metadata_pending_checkpoints returns the prepared, uncommitted checkpoint
 * ids of a commit user up to up_to, ascending (int64 *).
 */
List *
metadata_pending_checkpoints(int32 sink_id, const char *commit_user, int64 up_to)
{
	static Statement statement = {
		"SELECT DISTINCT c.checkpoint_id FROM paimon_sink.committable c "
		"WHERE c.sink_id OPERATOR(pg_catalog.=) $1 AND c.commit_user OPERATOR(pg_catalog.=) $2 "
		"AND c.snapshot_id IS NULL AND c.checkpoint_id OPERATOR(pg_catalog.<=) $3 "
		"ORDER BY c.checkpoint_id",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user), ARG_INT8(up_to)};

	return statement_int8s(&statement, args, lengthof(args), 0, "checkpoint_id");
}

/* metadata_count_pending_checkpoints counts a sink's prepared, uncommitted checkpoints (every commit user). */
int
metadata_count_pending_checkpoints(int32 sink_id)
{
	static Statement statement = {
		"SELECT pg_catalog.count(DISTINCT (c.commit_user, "
		"c.checkpoint_id)) AS count FROM paimon_sink.committable c "
		"WHERE c.sink_id OPERATOR(pg_catalog.=) $1 AND c.snapshot_id IS NULL",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id)};

	return (int) statement_int8(&statement, args, lengthof(args), 0, "count", 0);
}

/* metadata_count_pending_after counts a commit user's uncommitted checkpoints above restored. */
int
metadata_count_pending_after(int32 sink_id, const char *commit_user, int64 restored)
{
	static Statement statement = {
		"SELECT pg_catalog.count(DISTINCT c.checkpoint_id) AS count "
		"FROM paimon_sink.committable c WHERE c.sink_id OPERATOR(pg_catalog.=) $1 "
		"AND c.commit_user OPERATOR(pg_catalog.=) $2 AND c.checkpoint_id OPERATOR(pg_catalog.>) $3 "
		"AND c.snapshot_id IS NULL",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user), ARG_INT8(restored)};

	return (int) statement_int8(&statement, args, lengthof(args), 0, "count", 0);
}

/*
 * metadata_discard_pending_after forgets a commit user's uncommitted
 * checkpoints above restored and returns their file names (char *).
 */
List *
metadata_discard_pending_after(int32 sink_id, const char *commit_user, int64 restored)
{
	static Statement statement = {
		"DELETE FROM paimon_sink.committable c "
		"WHERE c.sink_id OPERATOR(pg_catalog.=) $1 AND c.commit_user OPERATOR(pg_catalog.=) $2 "
		"AND c.checkpoint_id OPERATOR(pg_catalog.>) $3 AND c.snapshot_id IS NULL "
		"RETURNING c.file_name",
		SPI_OK_DELETE_RETURNING};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user), ARG_INT8(restored)};

	return statement_texts(&statement, args, lengthof(args), 0, "file_name");
}

/*
 * metadata_forget_files forgets a commit user's pending committables of files (text[]), keeping
 * their buckets' top sequence numbers, and lists them for request_id; returns how many.
 */
int64
metadata_forget_files(int32 sink_id, const char *commit_user, Datum files, uint64 request_id)
{
	static Statement statement = {
		"WITH gone AS (DELETE FROM paimon_sink.committable c WHERE c.snapshot_id IS NULL AND "
		"c.sink_id OPERATOR(pg_catalog.=) $1 AND c.commit_user OPERATOR(pg_catalog.=) $2 AND "
		"c.file_name OPERATOR(pg_catalog.=) ANY ($3) RETURNING c.checkpoint_id, c.file_name, "
		"c.row_count, c.byte_count, c.bucket, c.max_sequence), sequences AS (INSERT INTO "
		"paimon_sink.bucket_sequence (sink_id, bucket, max_sequence) SELECT $1, g.bucket, "
		"pg_catalog.max(g.max_sequence) FROM gone g GROUP BY g.bucket ON CONFLICT (sink_id, "
		"bucket) DO UPDATE SET max_sequence = greatest(paimon_sink.bucket_sequence.max_sequence, "
		"excluded.max_sequence)) INSERT INTO paimon_sink.maintenance_result (request_id, "
		"file_name, byte_count, removed, checkpoint_id, row_count) SELECT $4, g.file_name, "
		"g.byte_count, false, g.checkpoint_id, g.row_count FROM gone g",
		SPI_OK_INSERT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user), ARG_DATUM(TEXTARRAYOID, files, false),
				  ARG_INT8((int64) request_id)};

	return (int64) statement_execute(&statement, args, lengthof(args), 0);
}

/*
 * next_snapshot_id returns the id the sink's next snapshot takes:
 * one above its newest (expiry never removes a sink's newest snapshot, so
 * ids only grow), 1 for none.  Read on the primary key, one entry.
 */
static int64
next_snapshot_id(int32 sink_id)
{
	static Statement next_id = {
		"SELECT coalesce(pg_catalog.max(l.snapshot_id), 0) "
		"OPERATOR(pg_catalog.+) 1 AS snapshot_id FROM paimon_sink.snapshot_log l "
		"WHERE l.sink_id OPERATOR(pg_catalog.=) $1",
		SPI_OK_SELECT};
	Arg sink[] = {ARG_INT4(sink_id)};

	return statement_int8(&next_id, sink, 1, 0, "snapshot_id", 1);
}

/*
 * metadata_record_snapshot records a committed checkpoint as the sink's
 * next snapshot, with its properties (the merge of its prepares'), marks
 * its committables and moves the commit user's marks (its properties
 * become the last committed ones), all in the caller's (to be prepared)
 * transaction; returns the snapshot id.
 */
int64
metadata_record_snapshot(const SnapshotEntry *entry)
{
	static Statement steps[] = {
		{"INSERT INTO paimon_sink.snapshot_log (sink_id, snapshot_id, commit_user, "
		 "commit_identifier, commit_kind, row_count, file_count, byte_count, load_ms, properties) "
		 "SELECT $1, $2, $3, $4, $9, $5, $6, $7, $8, " PROPERTIES_MERGED
		 " FROM paimon_sink.checkpoint_properties p " PROPERTIES_EACH
		 " WHERE p.sink_id OPERATOR(pg_catalog.=) $1 AND p.commit_user OPERATOR(pg_catalog.=) $3 "
		 "AND p.checkpoint_id OPERATOR(pg_catalog.=) $4",
		 SPI_OK_INSERT},
		{"UPDATE paimon_sink.committable c SET snapshot_id = $2 "
		 "WHERE c.sink_id OPERATOR(pg_catalog.=) $1 AND c.commit_user OPERATOR(pg_catalog.=) $3 "
		 "AND c.checkpoint_id OPERATOR(pg_catalog.=) $4 AND c.snapshot_id IS NULL",
		 SPI_OK_UPDATE},
		{"UPDATE paimon_sink.commit_user_state u SET last_committed_checkpoint = $4, "
		 "last_snapshot_id = $2, last_committed_at = pg_catalog.clock_timestamp(), "
		 "commits = u.commits OPERATOR(pg_catalog.+) 1, "
		 "rows_committed = u.rows_committed OPERATOR(pg_catalog.+) $5, "
		 "bytes_committed = u.bytes_committed OPERATOR(pg_catalog.+) $7, "
		 "last_committed_properties = (SELECT l.properties FROM paimon_sink.snapshot_log l "
		 "WHERE l.sink_id OPERATOR(pg_catalog.=) $1 AND l.snapshot_id OPERATOR(pg_catalog.=) $2) "
		 "WHERE u.sink_id OPERATOR(pg_catalog.=) $1 AND u.commit_user OPERATOR(pg_catalog.=) $3",
		 SPI_OK_UPDATE},
		/* committed: this checkpoint's and every earlier one's (empty, passed over) */
		{"DELETE FROM paimon_sink.checkpoint_properties p "
		 "WHERE p.sink_id OPERATOR(pg_catalog.=) $1 AND p.commit_user OPERATOR(pg_catalog.=) $3 "
		 "AND p.checkpoint_id OPERATOR(pg_catalog.<=) $4",
		 SPI_OK_DELETE}};
	/* without properties, the snapshot and the marks are written directly (metadata_heap.c) */
	int64 snapshot_id = 0;
	bool written = metadata_heap_record_snapshot(entry, &snapshot_id);
	Arg args[] = {ARG_INT4(entry->sink_id),
				  ARG_INT8(snapshot_id),
				  ARG_TEXT(entry->commit_user),
				  ARG_INT8(entry->checkpoint_id),
				  ARG_INT8(entry->row_count),
				  ARG_INT4(entry->file_count),
				  ARG_INT8(entry->byte_count),
				  ARG_DATUM(FLOAT8OID, Float8GetDatum(entry->load_ms), false),
				  ARG_TEXT(entry->commit_kind == NULL ? "APPEND" : entry->commit_kind)};

	if (!written)
		args[1] = (Arg) ARG_INT8(next_snapshot_id(entry->sink_id));
	/*
	 * the other steps take the first four arguments, the marks' the counts
	 * too (sink_stats); written: only the committables'
	 */
	for (int i = 0; i < lengthof(steps); i++)
		if (!written || i == 1)
			(void) statement_execute(&steps[i], args, i == 0 ? lengthof(args) : i == 2 ? 7 : 4, 0);
	/* the end of the commit user's input: its sessions refuse to write from then on */
	if (entry->checkpoint_id == PAIMON_SINK_END_INPUT_CHECKPOINT)
		invalidate_commit_users();
	return DatumGetInt64(args[1].value);
}

/* read_file_record reads a FileRecord from the committed column. */
static void *
read_file_record(uint64 row, const void *arg)
{
	FileRecord *record = palloc(sizeof(FileRecord));

	*record = row_bool(row, "committed") ? FILE_COMMITTED : FILE_PENDING;
	return record;
}

/*
 * metadata_file_record says whether a staged file is recorded, for a
 * committed checkpoint or a pending one.  A statement of its own: it sees
 * what committed while the caller waited.
 */
FileRecord
metadata_file_record(const char *file_name)
{
	static Statement statement = {
		"SELECT c.snapshot_id IS NOT NULL AS committed "
		"FROM paimon_sink.committable c WHERE c.file_name OPERATOR(pg_catalog.=) $1",
		SPI_OK_SELECT};
	Arg args[] = {ARG_TEXT(file_name)};
	FileRecord *record =
		statement_first(&statement, args, lengthof(args), 0, read_file_record, NULL);

	return record == NULL ? FILE_NOT_RECORDED : *record;
}

/* read_sink_file reads a SinkFile. */
static void *
read_sink_file(uint64 row, const void *arg)
{
	SinkFile *file = palloc(sizeof(SinkFile));

	file->sink_id = row_int4(row, "sink_id");
	file->file_name = row_text(row, "file_name");
	return file;
}

/*
 * metadata_committed_files returns the files of committed checkpoints still
 * recorded (SinkFile *): a crash between COMMIT PREPARED and their removal
 * leaves them.
 */
List *
metadata_committed_files(void)
{
	static Statement statement = {"SELECT c.sink_id, c.file_name FROM paimon_sink.committable c "
								  "WHERE c.snapshot_id IS NOT NULL",
								  SPI_OK_SELECT};

	return statement_collect(&statement, NULL, 0, 0, read_sink_file, NULL);
}

/* read_bucket_sequence reads a BucketSequenceRow. */
static void *
read_bucket_sequence(uint64 row, const void *arg)
{
	BucketSequenceRow *sequence = palloc(sizeof(BucketSequenceRow));

	sequence->sink_id = row_int4(row, "sink_id");
	sequence->bucket = row_int4(row, "bucket");
	sequence->max_sequence = row_int8(row, "max_sequence");
	return sequence;
}

/*
 * metadata_bucket_sequences returns the highest sequence number each bucket
 * of each sink has recorded (BucketSequenceRow *), from its committables and,
 * for expired ones, bucket_sequence: a restarted writer continues above it.
 */
List *
metadata_bucket_sequences(void)
{
	static Statement statement = {
		"SELECT s.sink_id, s.bucket, "
		"pg_catalog.max(s.max_sequence) AS max_sequence FROM ("
		"SELECT c.sink_id, c.bucket, c.max_sequence FROM paimon_sink.committable c UNION ALL "
		"SELECT b.sink_id, b.bucket, b.max_sequence FROM paimon_sink.bucket_sequence b) s "
		"GROUP BY s.sink_id, s.bucket",
		SPI_OK_SELECT};

	return statement_collect(&statement, NULL, 0, RUN_READ_ONLY, read_bucket_sequence, NULL);
}

/* read_checkpoint_state reads a CheckpointState. */
static void *
read_checkpoint_state(uint64 row, const void *arg)
{
	CheckpointState *state = palloc(sizeof(CheckpointState));
	bool isnull;

	state->sink_exists = row_bool(row, "sink_exists");
	state->pending = row_bool(row, "pending");
	state->last_committed = DatumGetInt64(row_datum(row, "last_committed", &isnull));
	state->commit_user_known = !isnull;
	return state;
}

/*
 * metadata_checkpoint_state says what the catalog knows of a checkpoint a
 * prepared transaction's gid names (recovery.c decides from it whether the
 * transaction is ours).
 */
CheckpointState
metadata_checkpoint_state(int32 sink_id, const char *commit_user, int64 checkpoint_id)
{
	static Statement statement = {
		"SELECT EXISTS (SELECT FROM paimon_sink.sink_definition d "
		"  WHERE d.sink_id OPERATOR(pg_catalog.=) $1) AS sink_exists, "
		"(SELECT u.last_committed_checkpoint FROM paimon_sink.commit_user_state u "
		"  WHERE u.sink_id OPERATOR(pg_catalog.=) $1 "
		"  AND u.commit_user OPERATOR(pg_catalog.=) $2) AS last_committed, "
		"EXISTS (SELECT FROM paimon_sink.committable c WHERE c.sink_id OPERATOR(pg_catalog.=) $1 "
		"  AND c.commit_user OPERATOR(pg_catalog.=) $2 AND c.checkpoint_id OPERATOR(pg_catalog.=) "
		"$3 "
		"  AND c.snapshot_id IS NULL) "
		/* an empty checkpoint that an overwrite sink commits has no committable */
		"OR $3 OPERATOR(pg_catalog.<=) (SELECT u.last_prepared_checkpoint "
		"  FROM paimon_sink.commit_user_state u WHERE u.sink_id OPERATOR(pg_catalog.=) $1 "
		"  AND u.commit_user OPERATOR(pg_catalog.=) $2) AS pending",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id), ARG_TEXT(commit_user), ARG_INT8(checkpoint_id)};

	return *(CheckpointState *) statement_first(&statement, args, lengthof(args), RUN_READ_ONLY,
												read_checkpoint_state, NULL);
}
