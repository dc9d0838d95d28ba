/*-------------------------------------------------------------------------
 *
 * functions.c
 *	  The SQL-callable functions of schema paimon_sink: create_sink,
 *	  drop_sink, prepare_commit, commit, checkpoint,
 *	  last_committed_checkpoint, and the status of writers.  Their COMMENT ON
 *	  texts in the extension script give argument types, return shapes and
 *	  SQLSTATEs; prepare_commit and commit follow Paimon's
 *	  prepareCommit/commit and SeaTunnel's SinkWriter.prepareCommit /
 *	  SinkCommitter.commit contracts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "catalog.h"
#include "catalog/namespace.h"
#include "catalog/dependency.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "access/table.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
#include "commands/extension.h"
#include "committer.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "foreign/foreign.h"
#include "handoff.h"
#include "miscadmin.h"
#include "names.h"
#include "recovery.h"
#include "security.h"
#include "shared_state.h"
#include "staged_file.h"
#include "storage/fd.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/array.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"
#include "datatype/timestamp.h"

PG_FUNCTION_INFO_V1(paimon_sink_create_sink);
PG_FUNCTION_INFO_V1(paimon_sink_drop_sink);
PG_FUNCTION_INFO_V1(paimon_sink_prepare_commit);
PG_FUNCTION_INFO_V1(paimon_sink_commit);
PG_FUNCTION_INFO_V1(paimon_sink_checkpoint);
PG_FUNCTION_INFO_V1(paimon_sink_last_committed_checkpoint);
PG_FUNCTION_INFO_V1(paimon_sink_writer_status);
PG_FUNCTION_INFO_V1(paimon_sink_start_workers);
PG_FUNCTION_INFO_V1(paimon_sink_recover);
PG_FUNCTION_INFO_V1(paimon_sink_end_input);
PG_FUNCTION_INFO_V1(paimon_sink_remove_orphan_files);
PG_FUNCTION_INFO_V1(paimon_sink_expire_snapshots);
PG_FUNCTION_INFO_V1(paimon_sink_commit_progress);
PG_FUNCTION_INFO_V1(paimon_sink_library_version);

static char *
text_argument(FunctionCallInfo fcinfo, int index)
{
	return PG_ARGISNULL(index) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(index));
}

/* Refuse a transaction block (ERRCODE_ACTIVE_SQL_TRANSACTION), as COMMIT PREPARED does. */
static void
refuse_transaction_block(const char *function)
{
	if (IsTransactionBlock())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("%s cannot run inside a transaction block", function),
				 errdetail("It commits in its own transactions, which the surrounding transaction could not undo."),
				 errhint("Call it on its own, outside BEGIN ... COMMIT.")));
	PreventInTransactionBlock(true, function);
}

static void
require_prepared_transactions(void)
{
	if (max_prepared_xacts == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("paimon_sink needs prepared transactions"),
				 errdetail("max_prepared_transactions is 0; every checkpoint is committed with PREPARE TRANSACTION and COMMIT PREPARED."),
				 errhint("Set max_prepared_transactions to at least 1 per database with sinks and restart the server.")));
}

/*
 * Run a query under the latest snapshot and return its rows as the result
 * set; as_catalog_owner runs it as the extension's owner (see
 * catalog_execute), for a table of the extension's own that the caller may
 * not read.
 */
static void
return_query(FunctionCallInfo fcinfo, const char *query, int nargs, Oid *types, Datum *values,
			 bool as_catalog_owner)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SPIPlanPtr	plan;
	RoleSwitch	saved;
	int			result;

	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	plan = catalog_plan(query, nargs, types);
	if (as_catalog_owner)
		security_switch_role(catalog_extension_owner(), &saved);
	/* the committer committed after this statement's snapshot was taken */
	result = SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(), InvalidSnapshot,
								  !as_catalog_owner, false, 0);
	if (as_catalog_owner)
		security_restore_role(&saved);
	if (result != SPI_OK_SELECT)
		elog(ERROR, "could not run \"%s\"", query);
	for (uint64 i = 0; i < SPI_processed; i++)
		tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
	SPI_finish();
}

/* Resolve a sink for a call that needs its owner's rights. */
static SinkInfo *
owned_sink(FunctionCallInfo fcinfo, const char *action)
{
	char	   *name = text_argument(fcinfo, 0);
	SinkInfo   *sink;

	paimon_sink_require_ready();
	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the sink name must not be NULL")));
	sink = catalog_require_sink(name);
	catalog_check_owner(sink, action);
	return sink;
}

static char *
commit_user_argument(FunctionCallInfo fcinfo, int index, SinkInfo *sink)
{
	char	   *commit_user = text_argument(fcinfo, index);

	if (commit_user == NULL)
		commit_user = sink->default_commit_user;
	paimon_sink_check_commit_user(commit_user);
	return commit_user;
}

/* The column names (char *) of a table's primary key, in key order, or NIL. */
static List *
primary_key_columns(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	Oid			index = RelationGetPrimaryKeyIndex(rel);
	List	   *names = NIL;

	if (OidIsValid(index))
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
		Form_pg_index form;

		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for index %u", index);
		form = (Form_pg_index) GETSTRUCT(tuple);
		for (int k = 0; k < form->indnkeyatts; k++)
			names = lappend(names, get_attname(relid, form->indkey.values[k], false));
		ReleaseSysCache(tuple);
	}
	table_close(rel, AccessShareLock);
	return names;
}

static bool
target_has_rules(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	bool		rules = rel->rd_rel->relhasrules;

	table_close(rel, AccessShareLock);
	return rules;
}

/* Has the table a primary key that is deferrable (which relcache ignores)? */
static bool
has_deferrable_primary_key(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	bool		found = false;

	foreach(lc, indexes)
	{
		HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));

		if (HeapTupleIsValid(tuple))
		{
			Form_pg_index form = (Form_pg_index) GETSTRUCT(tuple);

			found |= form->indisprimary && !form->indimmediate;
			ReleaseSysCache(tuple);
		}
	}
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * A bucket key column of an upsert sink needs its type's hash function:
 * rows are routed by it so that values that compare equal (1.0 and 1.00)
 * meet in one bucket, where their sequence numbers order them.
 */
static void
check_bucket_key_hashable(Oid target, Datum bucket_key)
{
	Datum	   *elements;
	int			count;

	deconstruct_array(DatumGetArrayTypeP(bucket_key), TEXTOID, -1, false, TYPALIGN_INT,
					  &elements, NULL, &count);
	for (int i = 0; i < count; i++)
	{
		char	   *column = TextDatumGetCString(elements[i]);
		Oid			type = get_atttype(target, get_attnum(target, column));

		if (!OidIsValid(lookup_type_cache(type, TYPECACHE_HASH_PROC)->hash_proc))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("bucket key column \"%s\" has type %s, which has no hash function",
							column, format_type_be(type)),
					 errdetail("An upsert sink routes each key to its bucket by a hash that equal values share."),
					 errhint("Name other primary key columns in bucket_key, or create the sink with buckets => 1.")));
	}
}

static bool
name_in_list(List *names, const char *name)
{
	ListCell   *lc;

	foreach(lc, names)
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * The rights create_sink needs of its caller, each refused with
 * ERRCODE_INSUFFICIENT_PRIVILEGE and the GRANT to run: on the target, those
 * its commits use as the sink's owner (INSERT; an upsert sink's MERGE also
 * SELECT, UPDATE and DELETE), CREATE on the target's schema for the foreign
 * table, and USAGE on the server paimon_sink.
 */
static void
check_create_rights(Oid target, bool upsert)
{
	AclMode		needed = ACL_INSERT | (upsert ? ACL_SELECT | ACL_UPDATE | ACL_DELETE : 0);
	AclMode		have = pg_class_aclmask(target, GetUserId(), needed, ACLMASK_ALL);
	const char *role = quote_identifier(GetUserNameFromId(GetUserId(), false));
	Oid			schema = get_rel_namespace(target);
	ForeignServer *server = GetForeignServerByName("paimon_sink", false);

	if (have != needed)
	{
		static const struct
		{
			AclMode		mode;
			const char *name;
		}			rights[] = {{ACL_SELECT, "SELECT"}, {ACL_INSERT, "INSERT"},
		{ACL_UPDATE, "UPDATE"}, {ACL_DELETE, "DELETE"}};
		StringInfoData missing;

		initStringInfo(&missing);
		for (int i = 0; i < lengthof(rights); i++)
			if ((needed & ~have & rights[i].mode) != 0)
				appendStringInfo(&missing, "%s%s", missing.len > 0 ? ", " : "", rights[i].name);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", get_rel_name(target)),
				 errdetail("Commits of the sink %s the target as the sink's owner, the role creating it.",
						   upsert ? "read, insert into, update and delete from" : "insert into"),
				 errhint("GRANT %s ON TABLE %s TO %s;", missing.data,
						 quote_qualified_identifier(get_namespace_name(schema), get_rel_name(target)),
						 role)));
	}
	if (pg_namespace_aclcheck(schema, GetUserId(), ACL_CREATE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for schema %s", get_namespace_name(schema)),
				 errdetail("create_sink creates the sink's foreign table in the target's schema, owned by its caller."),
				 errhint("GRANT CREATE ON SCHEMA %s TO %s;", quote_identifier(get_namespace_name(schema)),
						 role)));
	if (pg_foreign_server_aclcheck(server->serverid, GetUserId(), ACL_USAGE) != ACLCHECK_OK)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for foreign server paimon_sink"),
				 errdetail("Every sink's foreign table belongs to the server paimon_sink."),
				 errhint("GRANT USAGE ON FOREIGN SERVER paimon_sink TO %s;", role)));
}

/*
 * create_sink(sink_name text, target regclass, mode text, buckets integer,
 * bucket_key text[], checkpoint_interval interval, row_kind_column text,
 * partial_update boolean) registers a sink, creates its foreign table (named
 * after the sink, in the target's schema, owned by the caller) and its own
 * commit user, and returns (sink_name text, foreign_table regclass,
 * commit_user text).  An upsert sink (Paimon's primary-key table) needs a
 * primary key on the target, buckets within it, and the rights to read,
 * update and delete; its foreign table has one more column, of row kinds.
 * SQLSTATEs: see the COMMENT ON in the extension script.
 */
Datum
paimon_sink_create_sink(PG_FUNCTION_ARGS)
{
	char	   *name = text_argument(fcinfo, 0);
	Oid			target = PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1);
	char	   *mode = PG_ARGISNULL(2) ? "append" : text_argument(fcinfo, 2);
	int32		buckets = PG_ARGISNULL(3) ? 1 : PG_GETARG_INT32(3);
	Datum		bucket_key = PG_ARGISNULL(4) ? (Datum) 0 : PG_GETARG_DATUM(4);
	Datum		interval = PG_ARGISNULL(5) ? (Datum) 0 : PG_GETARG_DATUM(5);
	char	   *row_kind_column = text_argument(fcinfo, 6);
	bool		partial_update = PG_ARGISNULL(7) ? false : PG_GETARG_BOOL(7);
	bool		upsert;
	List	   *primary_key = NIL;
	Datum		key_names = (Datum) 0;
	SinkInfo	existing;
	TupleDesc	result_desc;
	char		relkind;
	char	   *schema;
	char	   *columns;
	char	   *foreign_table_name;
	int32		sink_id;
	Oid			foreign_table;
	bool		isnull;
	Datum		result_values[3];
	bool		result_nulls[3] = {false, false, false};

	paimon_sink_require_ready();
	require_prepared_transactions();
	if (get_call_result_type(fcinfo, NULL, &result_desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "create_sink must return a row");

	if (name == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the sink name must not be NULL")));
	if (name[0] == '\0' || strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid sink name \"%s\"", name ? name : ""),
				 errdetail("A sink name has 1 to %d characters; it also names the sink's foreign table.",
						   NAMEDATALEN - 1)));
	if (interval != (Datum) 0 &&
		DatumGetIntervalP(interval)->time <= 0 && DatumGetIntervalP(interval)->day <= 0 &&
		DatumGetIntervalP(interval)->month <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("checkpoint_interval must be positive")));
	upsert = strcmp(mode, "upsert") == 0;
	if (!upsert && strcmp(mode, "append") != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid sink mode \"%s\"", mode),
				 errhint("Valid modes are: append, upsert.")));
	if (buckets < 1 || buckets > 1024)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("buckets must be between 1 and 1024, not %d", buckets)));
	if (!OidIsValid(target))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the target table of a sink must not be NULL")));
	relkind = get_rel_relkind(target);
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", get_rel_name(target)),
				 errdetail("The target of a sink is an ordinary or partitioned table.")));
	check_create_rights(target, upsert);
	if (upsert)
	{
		primary_key = primary_key_columns(target);
		if (primary_key == NIL && has_deferrable_primary_key(target))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("the primary key of table \"%s\" is deferrable", get_rel_name(target)),
					 errdetail("An upsert sink finds each key's row by the primary key when a checkpoint commits; PostgreSQL uses only immediate keys for that."),
					 errhint("Make the primary key NOT DEFERRABLE, or create an append sink.")));
		if (primary_key == NIL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("table \"%s\" has no primary key", get_rel_name(target)),
					 errdetail("An upsert sink applies the latest version of each key: the key is the target's primary key."),
					 errhint("Add a primary key to the target, or create an append sink.")));
		if (target_has_rules(target))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("table \"%s\" has rules", get_rel_name(target)),
					 errdetail("An upsert sink applies a checkpoint with MERGE, which PostgreSQL does not run on tables with rules."),
					 errhint("Drop the rules (a trigger can do their work), or create an append sink.")));
		if (row_kind_column == NULL || row_kind_column[0] == '\0' ||
			strlen(row_kind_column) >= NAMEDATALEN)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid row_kind_column \"%s\"", row_kind_column ? row_kind_column : ""),
					 errdetail("It names the foreign table's column of row kinds: 1 to %d characters.",
							   NAMEDATALEN - 1)));
		if (get_attnum(target, row_kind_column) != InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_COLUMN),
					 errmsg("row_kind_column \"%s\" is a column of table \"%s\"", row_kind_column,
							get_rel_name(target)),
					 errhint("Name the row kind column differently with row_kind_column.")));
		key_names = PointerGetDatum(strlist_to_textarray(primary_key));
		if (bucket_key == (Datum) 0)
			bucket_key = key_names;
	}
	else
	{
		row_kind_column = NULL;
		if (partial_update)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("partial_update needs an upsert sink"),
					 errhint("Create the sink with mode => 'upsert'.")));
	}
	if (bucket_key != (Datum) 0)
	{
		Datum	   *elements;
		bool	   *nulls;
		int			count;

		deconstruct_array(DatumGetArrayTypeP(bucket_key), TEXTOID, -1, false, TYPALIGN_INT,
						  &elements, &nulls, &count);
		if (ARR_NDIM(DatumGetArrayTypeP(bucket_key)) > 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("bucket_key must be a one-dimensional array of column names")));
		for (int i = 0; i < count; i++)
			for (int j = 0; j < i; j++)
				if (!nulls[i] && !nulls[j] &&
					strcmp(TextDatumGetCString(elements[i]), TextDatumGetCString(elements[j])) == 0)
					ereport(ERROR,
							(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							 errmsg("bucket key column \"%s\" is named twice",
									TextDatumGetCString(elements[i]))));
		for (int i = 0; i < count; i++)
			if (nulls[i] || get_attnum(target, TextDatumGetCString(elements[i])) <= 0)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("bucket key column \"%s\" does not exist in table \"%s\"",
								nulls[i] ? "(null)" : TextDatumGetCString(elements[i]),
								get_rel_name(target))));
		/* a key's versions must meet in one bucket, where their order is known */
		for (int i = 0; i < count && upsert; i++)
			if (!name_in_list(primary_key, TextDatumGetCString(elements[i])))
				ereport(ERROR,
						(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						 errmsg("bucket key column \"%s\" is not a primary key column of table \"%s\"",
								TextDatumGetCString(elements[i]), get_rel_name(target)),
						 errdetail("Versions of one key are ordered by sequence numbers of their bucket, so a key must always go to the same bucket."),
						 errhint("Use primary key columns only, or leave bucket_key out (the whole primary key).")));
		if (count == 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("bucket_key must name at least one column"),
					 errhint("Leave bucket_key out for the default.")));
	}
	if (upsert && buckets > 1)
		check_bucket_key_hashable(target, bucket_key);
	if (catalog_sink_by_name(name, &existing))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("sink \"%s\" already exists", name),
				 errhint("Choose another name, or drop the sink with paimon_sink.drop_sink().")));

	schema = get_namespace_name(get_rel_namespace(target));
	foreign_table_name = quote_qualified_identifier(schema, name);

	SPI_connect();
	{
		Oid			types[10] = {TEXTOID, OIDOID, OIDOID, TEXTOID, INT4OID, TEXTARRAYOID,
		INTERVALOID, TEXTOID, BOOLOID, TEXTARRAYOID};
		Datum		values[10] = {CStringGetTextDatum(name), ObjectIdGetDatum(target),
			ObjectIdGetDatum(GetUserId()), CStringGetTextDatum(mode),
			Int32GetDatum(buckets), bucket_key, interval,
			row_kind_column ? CStringGetTextDatum(row_kind_column) : (Datum) 0,
		BoolGetDatum(partial_update), key_names};
		char		nulls[10] = {' ', ' ', ' ', ' ', ' ', bucket_key ? ' ' : 'n',
		interval ? ' ' : 'n', row_kind_column ? ' ' : 'n', ' ', key_names ? ' ' : 'n'};

		catalog_execute("INSERT INTO paimon_sink.sink_definition (sink_name, target_table, owner_role, "
						"mode, buckets, bucket_key, checkpoint_interval, row_kind_column, partial_update, "
						"key_columns, default_commit_user) "
						"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, "
						"pg_catalog.gen_random_uuid()::pg_catalog.text) "
						"RETURNING sink_id", 10, types, values, nulls, true);
		sink_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											  &isnull));
	}
	{
		Oid			types[3] = {OIDOID, BOOLOID, TEXTARRAYOID};
		Datum		values[3] = {ObjectIdGetDatum(target), BoolGetDatum(partial_update), key_names};
		char		nulls[3] = {' ', ' ', key_names ? ' ' : 'n'};

		/*
		 * With partial_update a column left out must read as NULL (keep the
		 * target's value), so only key columns keep their defaults.
		 */
		catalog_execute("SELECT pg_catalog.string_agg(pg_catalog.format('%I %s%s%s', a.attname, "
						"pg_catalog.format_type(a.atttypid, a.atttypmod), "
						"CASE WHEN a.attcollation OPERATOR(pg_catalog.<>) t.typcollation "
						"THEN ' COLLATE ' OPERATOR(pg_catalog.||) "
						"a.attcollation::pg_catalog.regcollation::pg_catalog.text ELSE '' END, "
						"CASE WHEN a.attidentity OPERATOR(pg_catalog.<>) '' "
						"THEN pg_catalog.format(' DEFAULT pg_catalog.nextval(%L::pg_catalog.regclass)', "
						"pg_catalog.pg_get_serial_sequence(a.attrelid::pg_catalog.regclass::pg_catalog.text, "
						"a.attname::pg_catalog.text)) "
						"WHEN d.adbin IS NOT NULL AND NOT ($2 AND a.attname::pg_catalog.text "
						"OPERATOR(pg_catalog.<>) ALL ($3)) "
						"THEN ' DEFAULT ' OPERATOR(pg_catalog.||) pg_catalog.pg_get_expr(d.adbin, d.adrelid) "
						"ELSE '' END), ', ' ORDER BY a.attnum) "
						"FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t "
						"ON t.oid OPERATOR(pg_catalog.=) a.atttypid "
						"LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid OPERATOR(pg_catalog.=) a.attrelid "
						"AND d.adnum OPERATOR(pg_catalog.=) a.attnum "
						"WHERE a.attrelid OPERATOR(pg_catalog.=) $1 AND a.attnum OPERATOR(pg_catalog.>) 0 "
						"AND NOT a.attisdropped AND a.attgenerated OPERATOR(pg_catalog.=) ''",
						3, types, values, nulls, false);
		columns = SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1);
		if (columns == NULL)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_TABLE_DEFINITION),
					 errmsg("table \"%s\" has no columns a sink could write", get_rel_name(target))));
		if (row_kind_column != NULL)
			columns = psprintf("%s, %s pg_catalog.text", columns, quote_identifier(row_kind_column));
	}
	/* the caller creates, and so owns, the foreign table */
	catalog_execute(psprintf("CREATE FOREIGN TABLE %s (%s) SERVER paimon_sink OPTIONS (sink_id '%d')",
							 foreign_table_name, columns, sink_id),
					0, NULL, NULL, NULL, false);
	CommandCounterIncrement();
	foreign_table = get_relname_relid(name, get_rel_namespace(target));
	{
		/* the target cannot be dropped from under its sink */
		ObjectAddress foreign_table_address;
		ObjectAddress target_address;

		ObjectAddressSet(foreign_table_address, RelationRelationId, foreign_table);
		ObjectAddressSet(target_address, RelationRelationId, target);
		recordDependencyOn(&foreign_table_address, &target_address, DEPENDENCY_NORMAL);
	}
	catalog_execute(psprintf("COMMENT ON FOREIGN TABLE %s IS %s", foreign_table_name,
							 quote_literal_cstr(psprintf("paimon_sink sink %s: INSERT or COPY rows here; they land in %s when a checkpoint commits",
														 name, quote_qualified_identifier(schema, get_rel_name(target))))),
					0, NULL, NULL, NULL, false);
	{
		Oid			types[2] = {INT4OID, OIDOID};
		Datum		values[2] = {Int32GetDatum(sink_id), ObjectIdGetDatum(foreign_table)};

		catalog_execute("UPDATE paimon_sink.sink_definition d SET foreign_table = $2, "
						"column_names = (SELECT pg_catalog.array_agg(a.attname::pg_catalog.text ORDER BY a.attnum) "
						"  FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) $2 "
						"  AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped), "
						"column_types = (SELECT pg_catalog.array_agg(a.atttypid::pg_catalog.regtype ORDER BY a.attnum) "
						"  FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) $2 "
						"  AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped) "
						"WHERE d.sink_id OPERATOR(pg_catalog.=) $1",
						2, types, values, NULL, true);
		catalog_execute("INSERT INTO paimon_sink.commit_user_state (sink_id, commit_user) "
						"SELECT d.sink_id, d.default_commit_user FROM paimon_sink.sink_definition d "
						"WHERE d.sink_id OPERATOR(pg_catalog.=) $1 "
						"RETURNING commit_user", 1, types, values, NULL, true);
		result_values[2] = CStringGetTextDatum(SPI_getvalue(SPI_tuptable->vals[0],
															SPI_tuptable->tupdesc, 1));
	}
	SPI_finish();

	(void) shared_want_database(MyDatabaseId);
	/* the committer reads its schedule of periodic checkpoints again */
	handoff_wake_committer_at_commit();
	result_values[0] = CStringGetTextDatum(name);
	result_values[1] = ObjectIdGetDatum(foreign_table);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(result_desc),
													  result_values, result_nulls)));
}

/*
 * The sink's staged files that no committed checkpoint recorded: rows that
 * writers hold or a prepared checkpoint waits with (files of committed
 * checkpoints linger only until the committer removes them).  The caller is
 * connected to SPI.
 */
static int
staged_files_held(int32 sink_id)
{
	char		directory[MAXPGPATH];
	DIR		   *dir;
	struct dirent *entry;
	int			held = 0;

	staged_file_directory(directory, MyDatabaseId, sink_id);
	dir = AllocateDir(directory);
	while (dir != NULL && (entry = ReadDir(dir, directory)) != NULL)
	{
		Oid			type = TEXTOID;
		Datum		value;

		if (!staged_file_name_is_valid(entry->d_name))
			continue;
		value = CStringGetTextDatum(entry->d_name);
		catalog_execute("SELECT 1 FROM paimon_sink.committable c "
						"WHERE c.file_name OPERATOR(pg_catalog.=) $1 AND c.snapshot_id IS NOT NULL",
						1, &type, &value, NULL, false);
		if (SPI_processed == 0)
			held++;
	}
	if (dir != NULL)
		FreeDir(dir);
	return held;
}

/*
 * drop_sink(sink_name text, force boolean) removes a sink, its foreign
 * table and catalog rows; its staged files are removed by the committer
 * after this transaction commits.  Refuses (ERRCODE_OBJECT_IN_USE) while a
 * prepared transaction of the sink is in doubt, and without force while
 * checkpoints are prepared but not committed or writers hold staged rows
 * of it.
 */
Datum
paimon_sink_drop_sink(PG_FUNCTION_ARGS)
{
	SinkInfo   *sink = owned_sink(fcinfo, "drop");
	bool		force = PG_ARGISNULL(1) ? false : PG_GETARG_BOOL(1);
	Oid			type = INT4OID;
	Datum		value = Int32GetDatum(sink->sink_id);
	bool		isnull;
	ListCell   *lc;

	/*
	 * Lock out writers first: a transaction that wrote into the foreign
	 * table hands its rows to the writers only as it commits, after the
	 * checks below would have found nothing staged.  Not AccessExclusive: a
	 * commit in doubt holds AccessShare on an upsert sink's foreign table,
	 * and must meet the in-doubt check below, not a wait.  Then the sink
	 * again: a drop that waited may find it gone.
	 */
	if (OidIsValid(sink->foreign_table))
		LockRelationOid(sink->foreign_table, ShareRowExclusiveLock);

	SPI_connect();
	/* a query of its own sees what committed while we waited */
	catalog_execute("SELECT 1 FROM paimon_sink.sink_definition d WHERE d.sink_id OPERATOR(pg_catalog.=) $1",
					1, &type, &value,
					NULL, false);
	if (SPI_processed == 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("sink \"%s\" does not exist", sink->name),
				 errdetail("It was dropped while this call waited.")));
	/* only ours: a transaction another role named like ours must not block the drop */
	foreach(lc, recovery_prepared_gids(CurrentMemoryContext))
	{
		PreparedGid *entry = lfirst(lc);

		if (entry->ours && entry->parts.sink_id == sink->sink_id)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_IN_USE),
					 errmsg("sink \"%s\" has an in-doubt prepared transaction", sink->name),
					 errdetail("A commit of the sink is between PREPARE TRANSACTION and COMMIT PREPARED (transaction \"%s\").",
							   entry->gid),
					 errhint("Wait until the committer finished it (see paimon_sink.in_doubt), then drop the sink.")));
	}
	catalog_execute("SELECT pg_catalog.count(DISTINCT (c.commit_user, c.checkpoint_id)) "
					"FROM paimon_sink.committable c "
					"WHERE c.sink_id OPERATOR(pg_catalog.=) $1 AND c.snapshot_id IS NULL",
					1, &type, &value, NULL, false);
	if (!force &&
		DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull)) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("sink \"%s\" has prepared checkpoints that are not committed", sink->name),
				 errdetail("Dropping it would discard their rows."),
				 errhint("Commit them with paimon_sink.commit(), or drop with force => true to discard them.")));

	if (!force && staged_files_held(sink->sink_id) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("sink \"%s\" has rows staged that no checkpoint holds yet", sink->name),
				 errdetail("Committed transactions wrote them; dropping the sink would discard them."),
				 errhint("Commit them with paimon_sink.checkpoint() (or the job's prepare_commit and commit), or drop with force => true to discard them.")));

	catalog_execute("DELETE FROM paimon_sink.committable x WHERE x.sink_id OPERATOR(pg_catalog.=) $1",
					1, &type, &value, NULL, true);
	catalog_execute("DELETE FROM paimon_sink.snapshot_log x WHERE x.sink_id OPERATOR(pg_catalog.=) $1",
					1, &type, &value, NULL, true);
	catalog_execute("DELETE FROM paimon_sink.commit_user_state x WHERE x.sink_id OPERATOR(pg_catalog.=) $1",
					1, &type, &value, NULL, true);
	catalog_execute("DELETE FROM paimon_sink.sink_definition x WHERE x.sink_id OPERATOR(pg_catalog.=) $1",
					1, &type, &value, NULL, true);
	/* its files go once this commits (the committer reads this record) */
	handoff_wake_committer_at_commit();
	catalog_execute("INSERT INTO paimon_sink.dropped_sink (sink_id) VALUES ($1)", 1, &type, &value,
					NULL, true);
	if (OidIsValid(sink->foreign_table) && get_rel_name(sink->foreign_table) != NULL)
		catalog_execute(psprintf("DROP FOREIGN TABLE %s",
								 quote_qualified_identifier(get_namespace_name(get_rel_namespace(sink->foreign_table)),
															get_rel_name(sink->foreign_table))),
						0, NULL, NULL, NULL, false);
	SPI_finish();
	PG_RETURN_VOID();
}

/*
 * Start a request to the committer for a sink the caller owns: the checks
 * every state-changing call shares.
 */
static SinkInfo *
start_request(FunctionCallInfo fcinfo, CommitterRequest *request, int kind, const char *action,
			  const char *function)
{
	SinkInfo   *sink = owned_sink(fcinfo, action);

	refuse_transaction_block(function);
	require_prepared_transactions();
	memset(request, 0, sizeof(*request));
	request->kind = kind;
	request->sink_id = sink->sink_id;
	request->writer_id = -1;
	return sink;
}

/* A non-NULL bigint argument (ERRCODE_NULL_VALUE_NOT_ALLOWED otherwise). */
static int64
checkpoint_argument(FunctionCallInfo fcinfo, int index)
{
	if (PG_ARGISNULL(index))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("checkpoint id must not be NULL")));
	return PG_GETARG_INT64(index);
}

/* Submit a request to this database's committer and wait for it. */
static void
submit(CommitterRequest *request)
{
	int			database_index = handoff_database_index(true);

	committer_submit(database_index, request);
}

/*
 * prepare_commit(sink_name text, commit_user text, checkpoint_id bigint,
 * writer_id integer) is the barrier: the stream's staged files are sealed
 * and recorded as committables of checkpoint_id; returns the checkpoint's
 * committables (checkpoint_id, file_name, writer_id, bucket, row_count,
 * byte_count).
 */
Datum
paimon_sink_prepare_commit(PG_FUNCTION_ARGS)
{
	CommitterRequest request;
	SinkInfo   *sink = start_request(fcinfo, &request, REQUEST_PREPARE, "prepare",
									 "paimon_sink.prepare_commit()");
	Oid			types[4] = {INT4OID, TEXTOID, INT8OID, INT4OID};
	Datum		values[4];

	strlcpy(request.commit_user, commit_user_argument(fcinfo, 1, sink), sizeof(request.commit_user));
	request.checkpoint_id = checkpoint_argument(fcinfo, 2);
	request.writer_id = PG_ARGISNULL(3) ? -1 : PG_GETARG_INT32(3);
	if (!PG_ARGISNULL(3) && request.writer_id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("writer id must not be negative"),
				 errhint("Pass NULL to prepare every writer id of the commit user.")));
	submit(&request);

	values[0] = Int32GetDatum(sink->sink_id);
	values[1] = CStringGetTextDatum(request.commit_user);
	values[2] = Int64GetDatum(request.checkpoint_id);
	values[3] = Int32GetDatum(request.writer_id);
	return_query(fcinfo,
				 "SELECT c.checkpoint_id, c.file_name, c.writer_id, c.bucket, c.row_count, c.byte_count "
				 "FROM paimon_sink.committable c WHERE c.sink_id OPERATOR(pg_catalog.=) $1 "
				 "AND c.commit_user OPERATOR(pg_catalog.=) $2 AND c.checkpoint_id OPERATOR(pg_catalog.=) $3 "
				 "AND ($4 OPERATOR(pg_catalog.<) 0 OR c.writer_id OPERATOR(pg_catalog.=) $4) "
				 "ORDER BY c.writer_id, c.bucket, c.file_name",
				 4, types, values, false);
	return (Datum) 0;
}

static void
return_snapshots(FunctionCallInfo fcinfo, int32 sink_id, const char *commit_user,
				 int64 previous_last_committed, int64 last_committed, int64 asked)
{
	Oid			types[5] = {INT4OID, TEXTOID, INT8OID, INT8OID, INT8OID};
	Datum		values[5] = {Int32GetDatum(sink_id), CStringGetTextDatum(commit_user),
		Int64GetDatum(previous_last_committed), Int64GetDatum(last_committed),
	Int64GetDatum(asked)};

	return_query(fcinfo,
				 "SELECT l.snapshot_id, l.commit_user, l.commit_identifier, l.row_count, l.file_count, "
				 "l.committed_at, l.commit_identifier OPERATOR(pg_catalog.>) $3 "
				 "FROM paimon_sink.snapshot_log l WHERE l.sink_id OPERATOR(pg_catalog.=) $1 "
				 "AND l.commit_user OPERATOR(pg_catalog.=) $2 "
				 "AND ((l.commit_identifier OPERATOR(pg_catalog.>) $3 "
				 "AND l.commit_identifier OPERATOR(pg_catalog.<=) $4) "
				 "OR l.commit_identifier OPERATOR(pg_catalog.=) $5) "
				 "ORDER BY l.commit_identifier",
				 5, types, values, false);
}

/*
 * commit(sink_name text, commit_user text, checkpoint_id bigint) commits
 * every prepared checkpoint up to checkpoint_id, each as one snapshot, and
 * returns the snapshots it made and the existing one of checkpoint_id
 * (snapshot_id, commit_user, checkpoint_id, row_count, file_count,
 * committed_at, newly_committed).
 */
Datum
paimon_sink_commit(PG_FUNCTION_ARGS)
{
	CommitterRequest request;
	SinkInfo   *sink = start_request(fcinfo, &request, REQUEST_COMMIT, "commit",
									 "paimon_sink.commit()");

	strlcpy(request.commit_user, commit_user_argument(fcinfo, 1, sink), sizeof(request.commit_user));
	request.checkpoint_id = checkpoint_argument(fcinfo, 2);
	submit(&request);
	return_snapshots(fcinfo, sink->sink_id, request.commit_user, request.previous_last_committed,
					 request.last_committed, request.checkpoint_id);
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
	SinkInfo   *sink = start_request(fcinfo, &request, REQUEST_CHECKPOINT, "checkpoint",
									 "paimon_sink.checkpoint()");

	strlcpy(request.commit_user, sink->default_commit_user, sizeof(request.commit_user));
	submit(&request);
	return_snapshots(fcinfo, sink->sink_id, request.commit_user, request.previous_last_committed,
					 request.last_committed, -1);
	return (Datum) 0;
}

/*
 * last_committed_checkpoint(sink_name text, commit_user text) returns the
 * commit user's high-water mark (bigint; 0 before its first commit, NULL for
 * a commit user the sink has never seen).
 */
Datum
paimon_sink_last_committed_checkpoint(PG_FUNCTION_ARGS)
{
	SinkInfo   *sink;
	char	   *commit_user;
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2];
	SPIPlanPtr	plan;
	bool		isnull = true;
	Datum		result = (Datum) 0;

	paimon_sink_require_ready();
	sink = catalog_require_sink(text_argument(fcinfo, 0));
	commit_user = commit_user_argument(fcinfo, 1, sink);
	values[0] = Int32GetDatum(sink->sink_id);
	values[1] = CStringGetTextDatum(commit_user);

	SPI_connect();
	plan = catalog_plan("SELECT u.last_committed_checkpoint FROM paimon_sink.commit_user_state u "
						"WHERE u.sink_id OPERATOR(pg_catalog.=) $1 "
						"AND u.commit_user OPERATOR(pg_catalog.=) $2", 2, types);
	if (SPI_execute_snapshot(plan, values, NULL, GetLatestSnapshot(), InvalidSnapshot, true,
							 false, 1) == SPI_OK_SELECT && SPI_processed == 1)
		result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	SPI_finish();
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}

/*
 * A status function's start: its result set, and this database's shared
 * entry, or NULL when no worker serves it yet.  Raises
 * ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE when the library was not
 * preloaded or the extension's version is not the library's.
 */
static DatabaseEntry *
status_database(FunctionCallInfo fcinfo)
{
	int			index;

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
 * fsyncs bigint, handoffs bigint).
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
		Datum		values[10];
		bool		nulls[10] = {0};

		values[0] = Int32GetDatum(w);
		values[1] = Int32GetDatum(writer->pid);
		nulls[1] = writer->pid == 0;
		values[2] = BoolGetDatum(writer->ready);
		values[3] = Int64GetDatum(pg_atomic_read_u64(&writer->rows_staged));
		values[4] = Int64GetDatum(pg_atomic_read_u64(&writer->bytes_staged));
		values[5] = Int32GetDatum(pg_atomic_read_u32(&writer->files_open));
		values[6] = Int32GetDatum(pg_atomic_read_u32(&writer->queues_in_use));
		values[7] = Int32GetDatum(pg_atomic_read_u32(&writer->streams));
		values[8] = Int64GetDatum((int64) pg_atomic_read_u64(&writer->fsyncs));
		values[9] = Int64GetDatum((int64) pg_atomic_read_u64(&writer->handoffs));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * commit_progress() returns the checkpoint this database's committer is
 * committing, if any: (pid integer, sink_id integer, commit_user text,
 * checkpoint_id bigint, phase text, files_done integer, files_total integer,
 * rows_done bigint, rows_total bigint, started_at timestamptz, gid text), as
 * pg_stat_progress_copy reports a COPY; gid, drawn once the rows are
 * loaded, is NULL until then and for a caller that is not a member of the
 * sink's owner.  Error: 55000 library not preloaded.
 */
Datum
paimon_sink_commit_progress(PG_FUNCTION_ARGS)
{
	static const char *const phases[] = {"idle", "loading", "applying", "preparing"};
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	DatabaseEntry *db = status_database(fcinfo);
	CommitProgress progress;
	Datum		values[11];
	bool		nulls[11] = {0};

	if (db == NULL)
		return (Datum) 0;
	SpinLockAcquire(&db->progress.mutex);
	memcpy(&progress, &db->progress, sizeof(progress));
	SpinLockRelease(&db->progress.mutex);
	if (progress.phase == COMMIT_PHASE_IDLE)
		return (Datum) 0;
	values[0] = Int32GetDatum(db->committer_pid);
	values[1] = Int32GetDatum(progress.sink_id);
	values[2] = CStringGetTextDatum(progress.commit_user);
	values[3] = Int64GetDatum(progress.checkpoint_id);
	values[4] = CStringGetTextDatum(phases[progress.phase]);
	values[5] = Int32GetDatum(progress.files_done);
	values[6] = Int32GetDatum(progress.files_total);
	values[7] = Int64GetDatum(progress.rows_done);
	values[8] = Int64GetDatum(progress.rows_total);
	values[9] = TimestampTzGetDatum(progress.started_at);
	/* a role that knows the gid before the PREPARE could take it: the owner's only */
	{
		SinkInfo	sink;

		nulls[10] = progress.gid[0] == '\0' || !catalog_sink_by_id(progress.sink_id, &sink) ||
			!has_privs_of_role(GetUserId(), sink.owner);
		if (!nulls[10])
			values[10] = CStringGetTextDatum(progress.gid);
	}
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	return (Datum) 0;
}

/*
 * start_workers() asks the launcher for this database's committer and
 * writers; CREATE EXTENSION calls it.  Raises
 * ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE when the library was not
 * preloaded or the extension's version is not the library's (outside an
 * extension script).
 */
Datum
paimon_sink_start_workers(PG_FUNCTION_ARGS)
{
	paimon_sink_require_ready();
	(void) shared_want_database(MyDatabaseId);
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
	SinkInfo   *sink = start_request(fcinfo, &request, REQUEST_RECOVER, "recover",
									 "paimon_sink.recover()");
	char	   *mode = PG_ARGISNULL(3) ? "restore" : text_argument(fcinfo, 3);
	TupleDesc	desc;
	Datum		values[4];
	bool		nulls[4] = {false, false, false, false};

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the commit user to recover must not be NULL")));
	strlcpy(request.commit_user, commit_user_argument(fcinfo, 1, sink), sizeof(request.commit_user));
	if (strcmp(request.commit_user, sink->default_commit_user) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot recover the own commit user of sink \"%s\"", sink->name),
				 errdetail("SQL sessions write with it; discarding what it staged would lose committed transactions."),
				 errhint("recover() is for jobs with their own commit user (paimon_sink.commit_user).")));
	request.checkpoint_id = checkpoint_argument(fcinfo, 2);
	if (strcmp(mode, "restore") == 0)
		request.mode = RECOVER_RESTORE;
	else if (strcmp(mode, "restore_and_fail") == 0)
		request.mode = RECOVER_RESTORE_AND_FAIL;
	else
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid recover mode \"%s\"", mode),
				 errhint("Valid modes are: restore, restore_and_fail.")));
	submit(&request);

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "recover must return a row");
	values[0] = Int64GetDatum(request.last_committed);
	values[1] = Int32GetDatum((int32) Min(request.last_committed - request.previous_last_committed,
										  PG_INT32_MAX));
	values[2] = Int32GetDatum(request.discarded_checkpoints);
	values[3] = Int32GetDatum(request.discarded_files);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}

/*
 * end_input(sink_name text, commit_user text) ends a bounded input: prepares
 * the checkpoint 9223372036854775807 (Paimon's END_INPUT) and commits at once;
 * returns the snapshots made, as commit().  A later prepare of the commit
 * user fails with 55000.
 */
Datum
paimon_sink_end_input(PG_FUNCTION_ARGS)
{
	CommitterRequest request;
	SinkInfo   *sink = start_request(fcinfo, &request, REQUEST_END_INPUT, "end the input of",
									 "paimon_sink.end_input()");

	strlcpy(request.commit_user, commit_user_argument(fcinfo, 1, sink), sizeof(request.commit_user));
	submit(&request);
	return_snapshots(fcinfo, sink->sink_id, request.commit_user, request.previous_last_committed,
					 request.last_committed, PAIMON_SINK_END_INPUT_CHECKPOINT);
	return (Datum) 0;
}

/* An interval in milliseconds (a month is 30 days, as interval comparison takes it). */
static int64
interval_milliseconds(const Interval *interval)
{
	return interval->time / 1000 +
		((int64) interval->day + (int64) interval->month * DAYS_PER_MONTH) * SECS_PER_DAY * 1000;
}

/*
 * expire_snapshots(sink_name text, retain_last integer, older_than interval)
 * forgets the sink's snapshots beyond the newest retain_last committed more
 * than older_than ago, but each commit user's last; returns how many
 * (bigint).  Errors: 42704, 42501, 22023 (retain_last < 1, negative or NULL
 * older_than).
 */
Datum
paimon_sink_expire_snapshots(PG_FUNCTION_ARGS)
{
	SinkInfo   *sink = owned_sink(fcinfo, "expire snapshots of");
	int32		retain_last = PG_ARGISNULL(1) ? 0 : PG_GETARG_INT32(1);
	int64		older_than = PG_ARGISNULL(2) ? -1 : interval_milliseconds(PG_GETARG_INTERVAL_P(2));
	int64		expired;

	if (retain_last < 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("retain_last must be at least 1"),
				 errdetail("The newest snapshot of a sink is always kept.")));
	if (older_than < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("older_than must be an age of zero or more"),
				 errhint("Pass an age such as interval '1 hour'.")));
	SPI_connect();
	expired = catalog_expire_snapshots(sink->sink_id, retain_last, older_than, true);
	SPI_finish();
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
	Interval   *older_than = PG_ARGISNULL(1) ? NULL : PG_GETARG_INTERVAL_P(1);
	Oid			type = INT8OID;
	Datum		value;
	int64		milliseconds;

	(void) start_request(fcinfo, &request, REQUEST_REMOVE_ORPHANS, "remove orphan files of",
						 "paimon_sink.remove_orphan_files()");
	if (older_than == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("older_than must not be NULL")));
	milliseconds = interval_milliseconds(older_than);
	if (milliseconds < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("older_than must not be negative"),
				 errdetail("A negative age puts the cut-off in the future, where files are still being written."),
				 errhint("Pass an age such as interval '1 day'.")));
	request.older_than_ms = milliseconds;
	request.dry_run = PG_ARGISNULL(2) ? false : PG_GETARG_BOOL(2);
	submit(&request);

	value = Int64GetDatum((int64) request.seq);
	/* the outcome is the extension's own table, read once */
	return_query(fcinfo,
				 "WITH outcome AS (DELETE FROM paimon_sink.maintenance_result r "
				 "  WHERE r.request_id OPERATOR(pg_catalog.=) $1 "
				 "  RETURNING r.file_name, r.byte_count, r.removed) "
				 "SELECT o.file_name, o.byte_count, o.removed FROM outcome o ORDER BY o.file_name",
				 1, &type, &value, true);
	return (Datum) 0;
}

/*
 * library_version() returns the version of the loaded library (text, such
 * as '0.2'), where \dx shows the version of the extension's catalog.  It
 * checks nothing and raises nothing, so that it answers when the two
 * differ; every later library keeps it, with this signature.
 */
Datum
paimon_sink_library_version(PG_FUNCTION_ARGS)
{
	PG_RETURN_TEXT_P(cstring_to_text(PAIMON_SINK_VERSION));
}
