/*-------------------------------------------------------------------------
 *
 * sink_ddl.c
 *	  create_sink and drop_sink: a sink's options and their checks, its
 *	  catalog rows, and its foreign table.
 *
 * create_sink reads its arguments into a SinkOptions, checks them (name,
 * mode, buckets, target, the caller's rights, an upsert sink's primary key
 * and row kind column, the bucket key), inserts the sink's definition,
 * creates the foreign table the sink's rows are written into and records
 * its layout.  drop_sink refuses while rows of the sink wait (unless
 * forced) or a commit of it is in doubt, and leaves the sink's files to the
 * committer.  Their COMMENT ON texts in the extension script give argument
 * types, return shapes and SQLSTATEs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_index.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "api/foreign_table.h"
#include "api/sink_ddl.h"
#include "api/sql_call.h"
#include "committer/recovery.h"
#include "core/budget.h"
#include "core/constants.h"
#include "core/names.h"
#include "core/pg_compat.h"
#include "core/shared_state.h"
#include "metadata/catalog.h"
#include "metadata/metadata.h"
#include "metadata/statement.h"
#include "metadata/version.h"
#include "session/handoff.h"
#include "staging/staged_file.h"

PG_FUNCTION_INFO_V1(paimon_sink_create_sink);
PG_FUNCTION_INFO_V1(paimon_sink_drop_sink);

/*
 * primary_key_columns returns the column names (char *) of a table's
 * primary key, in key order, or NIL when it has none.
 */
static List *
primary_key_columns(Oid relid)
{
	Relation rel = table_open(relid, AccessShareLock);
	Oid index = RelationGetImmediatePrimaryKeyIndex(rel);
	List *names = NIL;

	if (OidIsValid(index))
	{
		HeapTuple tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
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

/* target_has_rules tells whether a table has rules. */
static bool
target_has_rules(Oid relid)
{
	Relation rel = table_open(relid, AccessShareLock);
	bool rules = rel->rd_rel->relhasrules;

	table_close(rel, AccessShareLock);
	return rules;
}

/*
 * has_deferrable_primary_key tells whether a table has a deferrable primary
 * key, which the relcache does not count as its primary key.
 */
static bool
has_deferrable_primary_key(Oid relid)
{
	Relation rel = table_open(relid, AccessShareLock);
	List *indexes = RelationGetIndexList(rel);
	ListCell *lc;
	bool found = false;

	foreach (lc, indexes)
	{
		HeapTuple tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(lfirst_oid(lc)));

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
 * check_bucket_key_hashable refuses (ERRCODE_FEATURE_NOT_SUPPORTED) a
 * bucket key column whose type has no hash function.  An upsert sink
 * routes rows by that hash so that values that compare equal (1.0 and
 * 1.00) meet in one bucket, where their sequence numbers order them.
 */
static void
check_bucket_key_hashable(Oid target, Datum bucket_key)
{
	Datum *elements;
	int count;

	deconstruct_array(DatumGetArrayTypeP(bucket_key), TEXTOID, -1, false, TYPALIGN_INT, &elements,
					  NULL, &count);
	for (int i = 0; i < count; i++)
	{
		char *column = TextDatumGetCString(elements[i]);
		Oid type = get_atttype(target, get_attnum(target, column));

		if (!OidIsValid(lookup_type_cache(type, TYPECACHE_HASH_PROC)->hash_proc))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("bucket key column \"%s\" has type %s, which has no hash function",
							column, format_type_be(type)),
					 errdetail("An upsert sink routes each key to its bucket by a hash that equal "
							   "values share."),
					 errhint("Name other primary key columns in bucket_key, or create the sink "
							 "with buckets => 1.")));
	}
}

/* name_in_list tells whether a list of C strings holds a name. */
static bool
name_in_list(List *names, const char *name)
{
	ListCell *lc;

	foreach (lc, names)
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * check_create_rights checks the rights create_sink needs of its caller,
 * each refused with ERRCODE_INSUFFICIENT_PRIVILEGE and the GRANT to run: on
 * the target, those its commits use as the sink's owner (INSERT; an upsert
 * sink's MERGE also SELECT, UPDATE and DELETE; an overwrite sink's
 * replacement DELETE), CREATE on the target's
 * schema for the foreign table, and USAGE on the server paimon_sink.
 */
static void
check_create_rights(Oid target, bool upsert, bool overwrite)
{
	AclMode needed = ACL_INSERT | (upsert ? ACL_SELECT | ACL_UPDATE | ACL_DELETE : 0) |
					 (overwrite ? ACL_DELETE : 0);
	char *missing = catalog_missing_rights(target, GetUserId(), needed);
	const char *role = quote_identifier(GetUserNameFromId(GetUserId(), false));
	Oid schema = get_rel_namespace(target);
	ForeignServer *server = GetForeignServerByName("paimon_sink", false);

	if (missing != NULL)
		ereport(
			ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied for table %s", get_rel_name(target)),
			 errdetail(
				 "Commits of the sink %s the target as the sink's owner, the role creating it.",
				 upsert		 ? "read, insert into, update and delete from"
				 : overwrite ? "insert into and delete from"
							 : "insert into"),
			 errhint("GRANT %s ON TABLE %s TO %s;", missing,
					 quote_qualified_identifier(get_namespace_name(schema), get_rel_name(target)),
					 role)));
	if (object_aclcheck(NamespaceRelationId, schema, GetUserId(), ACL_CREATE) != ACLCHECK_OK)
		ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						errmsg("permission denied for schema %s", get_namespace_name(schema)),
						errdetail("create_sink creates the sink's foreign table in the target's "
								  "schema, owned by its caller."),
						errhint("GRANT CREATE ON SCHEMA %s TO %s;",
								quote_identifier(get_namespace_name(schema)), role)));
	if (object_aclcheck(ForeignServerRelationId, server->serverid, GetUserId(), ACL_USAGE) !=
		ACLCHECK_OK)
		ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						errmsg("permission denied for foreign server paimon_sink"),
						errdetail("Every sink's foreign table belongs to the server paimon_sink."),
						errhint("GRANT USAGE ON FOREIGN SERVER paimon_sink TO %s;", role)));
}

/*
 * What create_sink was asked for, as its arguments give it and as
 * check_sink_options completes it (the primary key and bucket key of an
 * upsert sink).
 */
typedef struct SinkOptions
{
	char *name;
	Oid target;
	char *mode;
	bool upsert;
	int32 buckets;
	Datum bucket_key;		   /* text[], or 0 */
	Datum checkpoint_interval; /* interval, or 0 */
	char *row_kind_column;	   /* upsert only */
	bool partial_update;
	char *on_error; /* 'stop' or 'reject' */
	bool overwrite; /* mode 'overwrite' */
	bool dynamic_partition_overwrite;
	List *primary_key; /* upsert: column names, char * */
	Datum key_names;   /* upsert: the primary key as text[], or 0 */

	/* upsert only: -U rows, or -U and -D rows, are dropped as they are written */
	bool ignore_update_before;
	bool ignore_delete;
} SinkOptions;

/* sink_options_from_arguments reads create_sink's arguments and defaults. */
static void
sink_options_from_arguments(FunctionCallInfo fcinfo, SinkOptions *options)
{
	memset(options, 0, sizeof(*options));
	options->name = sql_text_argument(fcinfo, 0);
	options->target = PG_ARGISNULL(1) ? InvalidOid : PG_GETARG_OID(1);
	options->mode = PG_ARGISNULL(2) ? "append" : sql_text_argument(fcinfo, 2);
	options->buckets = PG_ARGISNULL(3) ? 1 : PG_GETARG_INT32(3);
	options->bucket_key = PG_ARGISNULL(4) ? (Datum) 0 : PG_GETARG_DATUM(4);
	options->checkpoint_interval = PG_ARGISNULL(5) ? (Datum) 0 : PG_GETARG_DATUM(5);
	options->row_kind_column = sql_text_argument(fcinfo, 6);
	options->partial_update = PG_ARGISNULL(7) ? false : PG_GETARG_BOOL(7);
	options->on_error = PG_NARGS() > 8 && !PG_ARGISNULL(8) ? sql_text_argument(fcinfo, 8) : "stop";
	/* NULL: the merge engine's own; a partial row cannot retract a version, so -U is ignored */
	options->ignore_update_before =
		PG_NARGS() > 9 && !PG_ARGISNULL(9) ? PG_GETARG_BOOL(9) : options->partial_update;
	options->ignore_delete = PG_NARGS() > 10 && !PG_ARGISNULL(10) && PG_GETARG_BOOL(10);
	options->dynamic_partition_overwrite =
		PG_NARGS() > 11 && !PG_ARGISNULL(11) && PG_GETARG_BOOL(11);
}

/*
 * check_sink_basics checks the sink's name, checkpoint interval, mode,
 * buckets and target, and the caller's rights on the target.
 */
static void
check_sink_basics(SinkOptions *options)
{
	char *name = options->name;
	char relkind;

	if (name == NULL)
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("the sink name must not be NULL")));
	if (name[0] == '\0' || strlen(name) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid sink name \"%s\"", paimon_sink_shown(name)),
				 errdetail(
					 "A sink name has 1 to %d characters; it also names the sink's foreign table.",
					 NAMEDATALEN - 1)));
	if (options->checkpoint_interval != (Datum) 0 &&
		(sql_interval_sign(DatumGetIntervalP(options->checkpoint_interval)) <= 0 ||
		 sql_interval_ms(DatumGetIntervalP(options->checkpoint_interval)) > INT_MAX))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("checkpoint_interval must be positive and at most %d ms", INT_MAX),
				 errdetail("The range of paimon_sink.checkpoint_interval (about 24 days)."),
				 errhint("Pass NULL to use paimon_sink.checkpoint_interval, or an interval such "
						 "as interval '1 minute'.")));
	if (strcmp(options->on_error, "stop") != 0 && strcmp(options->on_error, "reject") != 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("invalid on_error \"%s\"", paimon_sink_shown(options->on_error)),
						errhint("Valid values are: stop (a refused row fails the commit), reject "
								"(it goes into paimon_sink.rejected_row).")));
	options->upsert = strcmp(options->mode, "upsert") == 0;
	options->overwrite = strcmp(options->mode, "overwrite") == 0;
	if (!options->upsert && !options->overwrite && strcmp(options->mode, "append") != 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("invalid sink mode \"%s\"", paimon_sink_shown(options->mode)),
						errhint("Valid modes are: append, upsert, overwrite.")));
	if (options->buckets < 1 || options->buckets > 1024)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("buckets must be between 1 and 1024, not %d", options->buckets)));
	if (!OidIsValid(options->target))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("the target table of a sink must not be NULL")));
	relkind = get_rel_relkind(options->target);
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
						errmsg("\"%s\" is not a table", get_rel_name(options->target)),
						errdetail("The target of a sink is an ordinary or partitioned table.")));
	/* no other session sees it, and its session's end would take the foreign table unchecked */
	if (get_rel_persistence(options->target) == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot create a sink on temporary table \"%s\"",
						get_rel_name(options->target)),
				 errdetail("Checkpoints are loaded by the committer, which cannot access another "
						   "session's temporary tables, and the session's end would drop the "
						   "sink's foreign table with the target."),
				 errhint("Create the sink on a permanent table.")));
	if (options->dynamic_partition_overwrite && !options->overwrite)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("dynamic_partition_overwrite needs an overwrite sink"),
						errhint("Create the sink with mode => 'overwrite'.")));
	if (options->dynamic_partition_overwrite && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("dynamic_partition_overwrite needs a partitioned target, and \"%s\" is not "
						"partitioned",
						get_rel_name(options->target)),
				 errhint("Leave dynamic_partition_overwrite out: the sink replaces the whole "
						 "target.")));
	check_create_rights(options->target, options->upsert, options->overwrite);
}

/*
 * check_upsert_target checks what an upsert sink needs of its target (an
 * immediate primary key, no rules) and its row kind column, and takes the
 * primary key as the default bucket key.  An append sink has no row kind
 * column and no partial update.
 */
static void
check_upsert_target(SinkOptions *options)
{
	Oid target = options->target;
	char *row_kind_column = options->row_kind_column;

	if (!options->upsert)
	{
		options->row_kind_column = NULL;
		if (options->partial_update || options->ignore_update_before || options->ignore_delete)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("%s needs an upsert sink",
								   options->partial_update		   ? "partial_update"
								   : options->ignore_update_before ? "ignore_update_before"
																   : "ignore_delete"),
							errhint("Create the sink with mode => 'upsert'.")));
		return;
	}
	if (options->partial_update && !options->ignore_update_before)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("a partial_update sink ignores update-before rows"),
				 errdetail("A partial row does not name the version it retracts, so a "
						   "partial_update sink ignores -U rows and deletes the key of -D rows."),
				 errhint("Leave ignore_update_before out, or set it to true.")));
	options->primary_key = primary_key_columns(target);
	if (options->primary_key == NIL && has_deferrable_primary_key(target))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("the primary key of table \"%s\" is deferrable", get_rel_name(target)),
				 errdetail("An upsert sink finds each key's row by the primary key when a "
						   "checkpoint commits; PostgreSQL uses only immediate keys for that."),
				 errhint("Make the primary key NOT DEFERRABLE, or create an append sink.")));
	if (options->primary_key == NIL)
		ereport(ERROR, (errcode(ERRCODE_INVALID_TABLE_DEFINITION),
						errmsg("table \"%s\" has no primary key", get_rel_name(target)),
						errdetail("An upsert sink applies the latest version of each key: the key "
								  "is the target's primary key."),
						errhint("Add a primary key to the target, or create an append sink.")));
	if (target_has_rules(target))
		ereport(
			ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("table \"%s\" has rules", get_rel_name(target)),
			 errdetail("An upsert sink applies a checkpoint with MERGE, which PostgreSQL does not "
					   "run on tables with rules."),
			 errhint("Drop the rules (a trigger can do their work), or create an append sink.")));
	if (row_kind_column == NULL || row_kind_column[0] == '\0' ||
		strlen(row_kind_column) >= NAMEDATALEN)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid row_kind_column \"%s\"", paimon_sink_shown(row_kind_column)),
				 errdetail("It names the foreign table's column of row kinds: 1 to %d characters.",
						   NAMEDATALEN - 1)));
	if (get_attnum(target, row_kind_column) != InvalidAttrNumber)
		ereport(ERROR, (errcode(ERRCODE_DUPLICATE_COLUMN),
						errmsg("row_kind_column \"%s\" is a column of table \"%s\"",
							   row_kind_column, get_rel_name(target)),
						errhint("Name the row kind column differently with row_kind_column.")));
	options->key_names = PointerGetDatum(strlist_to_textarray(options->primary_key));
	if (options->bucket_key == (Datum) 0)
		options->bucket_key = options->key_names;
}

/*
 * check_bucket_key checks the bucket key's columns: a one-dimensional array
 * of distinct columns of the target, for an upsert sink primary key columns
 * only, and hashable when there is more than one bucket.
 */
static void
check_bucket_key(const SinkOptions *options)
{
	Oid target = options->target;
	Datum *elements;
	bool *nulls;
	int count;

	if (options->bucket_key != (Datum) 0)
	{
		deconstruct_array(DatumGetArrayTypeP(options->bucket_key), TEXTOID, -1, false, TYPALIGN_INT,
						  &elements, &nulls, &count);
		if (ARR_NDIM(DatumGetArrayTypeP(options->bucket_key)) > 1)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("bucket_key must be a one-dimensional array of column names")));
		for (int i = 0; i < count; i++)
			for (int j = 0; j < i; j++)
				if (!nulls[i] && !nulls[j] &&
					strcmp(TextDatumGetCString(elements[i]), TextDatumGetCString(elements[j])) == 0)
					ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
									errmsg("bucket key column \"%s\" is named twice",
										   paimon_sink_shown(TextDatumGetCString(elements[i])))));
		for (int i = 0; i < count; i++)
			if (nulls[i] || get_attnum(target, TextDatumGetCString(elements[i])) <= 0)
				ereport(ERROR,
						(errcode(ERRCODE_UNDEFINED_COLUMN),
						 errmsg("bucket key column \"%s\" does not exist in table \"%s\"",
								nulls[i] ? "(null)"
										 : paimon_sink_shown(TextDatumGetCString(elements[i])),
								get_rel_name(target))));
		/* A key's versions must meet in one bucket, where their order is known. */
		for (int i = 0; i < count && options->upsert; i++)
			if (!name_in_list(options->primary_key, TextDatumGetCString(elements[i])))
				ereport(
					ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("bucket key column \"%s\" is not a primary key column of table \"%s\"",
							TextDatumGetCString(elements[i]), get_rel_name(target)),
					 errdetail("Versions of one key are ordered by sequence numbers of their "
							   "bucket, so a key must always go to the same bucket."),
					 errhint("Use primary key columns only, or leave bucket_key out (the whole "
							 "primary key).")));
		if (count == 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("bucket_key must name at least one column"),
							errhint("Leave bucket_key out for the default.")));
	}
	if (options->upsert && options->buckets > 1)
		check_bucket_key_hashable(target, options->bucket_key);
}

/*
 * sink_ddl_type_without_binary_io returns the type that has no binary send
 * or receive function among type and the types its values are made of (a
 * domain's base, an array's element, a composite's columns, a range's
 * subtype, a multirange's range), or InvalidOid when every one has both.
 * Raises nothing (an unknown type is an internal error).
 */
Oid
sink_ddl_type_without_binary_io(Oid type)
{
	HeapTuple tuple;
	Form_pg_type form;
	Oid missing = InvalidOid;
	Oid inner;

	check_stack_depth();
	type = getBaseType(type);
	tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for type %u", type);
	form = (Form_pg_type) GETSTRUCT(tuple);
	if (!OidIsValid(form->typsend) || !OidIsValid(form->typreceive))
		missing = type;
	else if (form->typtype == TYPTYPE_COMPOSITE)
	{
		TupleDesc desc = lookup_rowtype_tupdesc(type, -1);

		for (int i = 0; i < desc->natts && !OidIsValid(missing); i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				missing = sink_ddl_type_without_binary_io(TupleDescAttr(desc, i)->atttypid);
		ReleaseTupleDesc(desc);
	}
	else if (OidIsValid(inner = get_element_type(type)) ||
			 (form->typtype == TYPTYPE_RANGE && OidIsValid(inner = get_range_subtype(type))) ||
			 (form->typtype == TYPTYPE_MULTIRANGE &&
			  OidIsValid(inner = get_multirange_range(type))))
		missing = sink_ddl_type_without_binary_io(inner);
	ReleaseSysCache(tuple);
	return missing;
}

/*
 * sink_ddl_check_binary_io refuses (ERRCODE_FEATURE_NOT_SUPPORTED) a column
 * of table table_name that a sink could not stage: staged rows are in
 * COPY's binary format, so the column's type (and each type inside it)
 * needs a binary send and receive function.  Without the check the sink was
 * created (or the column added by alter_sink) and every write failed ("no
 * binary output function available for type aclitem").  Returns nothing.
 */
void
sink_ddl_check_binary_io(const char *table_name, Form_pg_attribute attr)
{
	Oid missing = sink_ddl_type_without_binary_io(attr->atttypid);

	if (OidIsValid(missing))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("column \"%s\" of table \"%s\" has type %s, which a sink cannot stage",
						NameStr(attr->attname), table_name, format_type_be(attr->atttypid)),
				 errdetail("Staged rows are in COPY's binary format, and type %s has no binary "
						   "send or receive function.",
						   format_type_be(missing)),
				 errhint("Give the column a type with binary input and output, or write "
						 "through a sink into a table without it.")));
}

/* check_binary_io applies sink_ddl_check_binary_io to each column a new sink would stage. */
static void
check_binary_io(Oid target)
{
	Relation rel = table_open(target, AccessShareLock);
	TupleDesc desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);

		if (!attr->attisdropped && attr->attgenerated == '\0')
			sink_ddl_check_binary_io(RelationGetRelationName(rel), attr);
	}
	table_close(rel, AccessShareLock);
}

/*
 * insert_sink_definition records the sink's definition, with a new commit
 * user of its own, and returns its sink id.
 */
static int32
insert_sink_definition(const SinkOptions *options)
{
	SinkDefinition definition = {
		.name = options->name,
		.target = options->target,
		.mode = options->mode,
		.buckets = options->buckets,
		.bucket_key = options->bucket_key,
		.checkpoint_interval = options->checkpoint_interval == (Datum) 0
								   ? NULL
								   : DatumGetIntervalP(options->checkpoint_interval),
		.row_kind_column = options->row_kind_column,
		.partial_update = options->partial_update,
		.key_columns = options->key_names,
		.on_error = options->on_error,
		.ignore_update_before = options->ignore_update_before,
		.ignore_delete = options->ignore_delete,
		.dynamic_partition_overwrite = options->dynamic_partition_overwrite,
	};

	return metadata_insert_sink(&definition);
}

/*
 * create_sink(sink_name text, target regclass, mode text, buckets integer,
 * bucket_key text[], checkpoint_interval interval, row_kind_column text,
 * partial_update boolean, on_error text, ignore_update_before boolean,
 * ignore_delete boolean, dynamic_partition_overwrite boolean) registers a
 * sink, creates its foreign table (named
 * after the sink, in the target's schema, owned by the caller) and its own
 * commit user, and returns (sink_name text, foreign_table regclass,
 * commit_user text).  An upsert sink (Paimon's primary-key table) needs a
 * primary key on the target, buckets within it, and the rights to read,
 * update and delete; its foreign table has one more column, of row kinds.
 * on_error ('stop' or 'reject', Kafka Connect's errors.tolerance with its
 * dead-letter queue) says what a commit does with a row the target refuses
 * (rejects.c).  ignore_update_before and ignore_delete (Paimon's options
 * of the same names) make an upsert sink drop -U rows, or -U and -D rows,
 * as they are written.  An overwrite sink (mode 'overwrite') replaces the
 * target, or with dynamic_partition_overwrite the partitions receiving
 * rows, once per commit user (overwrite.c).  SQLSTATEs: see the COMMENT ON
 * in the extension script.
 */
Datum
paimon_sink_create_sink(PG_FUNCTION_ARGS)
{
	SinkOptions options;
	SinkInfo existing;
	TupleDesc result_desc;
	int32 sink_id;
	Oid foreign_table;
	char *commit_user;
	Datum result_values[3];
	bool result_nulls[3] = {false, false, false};

	sink_options_from_arguments(fcinfo, &options);
	paimon_sink_require_ready();
	sql_require_prepared_transactions();
	if (get_call_result_type(fcinfo, NULL, &result_desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "create_sink must return a row");
	/*
	 * Held to the end: the layout is read from the target's columns, and an
	 * ALTER TABLE committing meanwhile (a column dropped) would leave the
	 * sink a column its target no longer has.
	 */
	if (OidIsValid(options.target))
		LockRelationOid(options.target, AccessShareLock);
	check_sink_basics(&options);
	check_upsert_target(&options);
	check_bucket_key(&options);
	check_binary_io(options.target);
	if (metadata_sink_by_name(options.name, &existing))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("sink \"%s\" already exists", options.name),
				 errhint("Choose another name, or drop the sink with paimon_sink.drop_sink().")));
	if (metadata_group_by_name(options.name) != NULL)
		ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
						errmsg("a sink group named \"%s\" exists", options.name),
						errdetail("Sinks and sink groups share one namespace: the functions that "
								  "take a sink name also take a group's."),
						errhint("Choose another name for the sink.")));

	sink_id = insert_sink_definition(&options);
	foreign_table = foreign_table_create(&(ForeignTableSpec){
		.sink_name = options.name,
		.sink_id = sink_id,
		.target = options.target,
		.partial_update = options.partial_update,
		.key_names = options.key_names,
		.row_kind_column = options.row_kind_column,
	});
	/* its layout is the foreign table's columns, and its commit user has its own row */
	metadata_set_sink_layout(sink_id, foreign_table);
	commit_user = metadata_add_default_commit_user(sink_id);

	/* at once, not at the first write: 53400 when the budget has no room for its workers */
	budget_require_workers(MyDatabaseId, ERROR, true);
	(void) shared_want_database(MyDatabaseId, true);
	/* The committer reads its schedule of periodic checkpoints again. */
	handoff_wake_committer_at_commit();
	result_values[0] = CStringGetTextDatum(options.name);
	result_values[1] = ObjectIdGetDatum(foreign_table);
	result_values[2] = CStringGetTextDatum(commit_user);
	PG_RETURN_DATUM(HeapTupleGetDatum(
		heap_form_tuple(BlessTupleDesc(result_desc), result_values, result_nulls)));
}

/*
 * staged_files_held counts the sink's staged files that no committed
 * checkpoint recorded: rows that
 * writers hold or a prepared checkpoint waits with (files of committed
 * checkpoints linger only until the committer removes them).  Each file
 * is looked up under a snapshot of its own, which sees what committed while
 * drop_sink waited.
 */
static int
staged_files_held(int32 sink_id)
{
	char directory[MAXPGPATH];
	DIR *dir;
	struct dirent *entry;
	int held = 0;

	staged_file_directory(directory, MyDatabaseId, sink_id);
	dir = AllocateDir(directory);
	while (dir != NULL && (entry = ReadDir(dir, directory)) != NULL)
	{
		if (!staged_file_name_is_valid(entry->d_name))
			continue;
		if (metadata_file_record(entry->d_name) != FILE_COMMITTED)
			held++;
	}
	if (dir != NULL)
		FreeDir(dir);
	return held;
}

/*
 * refuse_group_member refuses to drop a member of a sink group
 * (ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST): the group's checkpoints commit
 * it with the others.
 */
static void
refuse_group_member(const SinkInfo *sink)
{
	char *group = metadata_group_of_sink(sink->sink_id);

	if (group != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("sink \"%s\" belongs to sink group \"%s\"", sink->name, group),
				 errdetail("The group's checkpoints commit it with the group's other sinks."),
				 errhint("Drop the group first with paimon_sink.drop_sink_group(%s).",
						 quote_literal_cstr(group))));
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
	SinkInfo *sink = sql_owned_sink(fcinfo, "drop");
	bool force = PG_ARGISNULL(1) ? false : PG_GETARG_BOOL(1);
	ListCell *lc;

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

	/* a query of its own sees what committed while we waited */
	if (!metadata_sink_exists(sink->sink_id))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("sink \"%s\" does not exist", sink->name),
						errdetail("It was dropped while this call waited.")));
	refuse_group_member(sink);
	/* only ours: a transaction another role named like ours must not block the drop */
	foreach (lc, recovery_prepared_gids(CurrentMemoryContext))
	{
		PreparedGid *entry = lfirst(lc);

		if (entry->ours && entry->parts.sink_id == sink->sink_id)
			ereport(ERROR, (errcode(ERRCODE_OBJECT_IN_USE),
							errmsg("sink \"%s\" has an in-doubt prepared transaction", sink->name),
							errdetail("A commit of the sink is between PREPARE TRANSACTION and "
									  "COMMIT PREPARED (transaction \"%s\").",
									  entry->gid),
							errhint("Wait until the committer finished it (see "
									"paimon_sink.in_doubt), then drop the sink.")));
	}
	if (!force && metadata_count_pending_checkpoints(sink->sink_id) > 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("sink \"%s\" has prepared checkpoints that are not committed", sink->name),
				 errdetail("Dropping it would discard their rows."),
				 errhint("Commit them with paimon_sink.commit(), or drop with force => true to "
						 "discard them.")));

	if (!force && staged_files_held(sink->sink_id) > 0)
		ereport(
			ERROR,
			(errcode(ERRCODE_OBJECT_IN_USE),
			 errmsg("sink \"%s\" has rows staged that no checkpoint holds yet", sink->name),
			 errdetail("Committed transactions wrote them; dropping the sink would discard them."),
			 errhint("Commit them with paimon_sink.checkpoint() (or the job's prepare_commit and "
					 "commit), or drop with force => true to discard them.")));

	metadata_drop_sink(sink->sink_id);
	/* its files go once this commits (the committer reads the dropped_sink record) */
	handoff_wake_committer_at_commit();
	/* after the sink's rows: the drop guard (foreign_table.c) lets it go */
	/* only its own: a lost foreign table's oid may be another relation's now */
	if (OidIsValid(sink->owner))
		foreign_table_drop(sink->foreign_table);
	PG_RETURN_VOID();
}
