/*-------------------------------------------------------------------------
 *
 * foreign_table.c
 *	  A sink's foreign table, and its owner as the sink's: made by
 *	  create_sink, restored by restore_foreign_table(), dropped only with
 *	  its sink, and its owner a role that DROP ROLE refuses.
 *
 * A sink's owner is its foreign table's owner (pg_class.relowner), the one
 * record of it.  PostgreSQL keeps it in pg_shdepend as any object's owner:
 * REASSIGN OWNED and ALTER FOREIGN TABLE ... OWNER TO move the sink, and
 * DROP ROLE refuses a role that owns one (TimescaleDB's hypertables are
 * their tables' owners' the same way).  The utility hook refuses DROP ROLE
 * first, naming the sinks and the ways on, as TimescaleDB refuses the
 * owner of a job.
 *
 * The foreign table goes only with its sink (drop_sink, DROP EXTENSION):
 * without it a sink has no owner to commit as, and an upsert sink no row
 * type.  The object access hook notes each of our foreign tables dropped
 * inside a utility statement (DROP FOREIGN TABLE, DROP OWNED, DROP TABLE
 * or DROP SCHEMA ... CASCADE, the DROP of a partitioned parent); as that
 * statement ends, a sink that still names one refuses the whole statement
 * (2BP01).  The end, not the hook: DROP EXTENSION drops the foreign tables
 * before the extension, and only its end shows the catalog gone with them.
 * An event trigger on sql_drop would see the same list (Citus and
 * TimescaleDB follow drops with one) but can be disabled, and does not
 * fire with session_replication_role = replica.  A sink that lost its
 * foreign table all the same (under 0.1, or with the library not loaded)
 * gets it back from restore_foreign_table(), which the update to 0.2 calls
 * for each.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/objectaddress.h"
#include "catalog/pg_class.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "api/foreign_table.h"
#include "api/sql_call.h"
#include "core/security.h"
#include "metadata/catalog.h"
#include "metadata/metadata.h"
#include "metadata/statement.h"
#include "metadata/version.h"

PG_FUNCTION_INFO_V1(paimon_sink_restore_foreign_table);

/* One of our foreign tables dropped by the utility statement of a level. */
typedef struct DroppedTable
{
	Oid relid;
	char *name; /* schema-qualified */
	int level;	/* the nesting level of the utility statement that dropped it */
} DroppedTable;

static object_access_hook_type previous_object_access_hook = NULL;

/* The foreign tables dropped by the utility statements running (in TopMemoryContext). */
static List *dropped_tables = NIL;

/* How deep utility statements nest now: 0 outside any. */
static int statement_level = 0;

/* alter_sink's own ALTER FOREIGN TABLE ... ADD COLUMN runs: the refusal lets it through. */
static bool adding_columns = false;

/* run_utility runs a utility statement as the caller, in an SPI connection of its own. */
static void
run_utility(const char *statement)
{
	SPI_connect();
	if (SPI_execute(statement, false, 0) != SPI_OK_UTILITY)
		elog(ERROR, "could not run \"%s\"", statement);
	SPI_finish();
}

/* qualified_name returns a relation's schema-qualified, quoted name. */
static char *
qualified_name(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/*
 * table_columns returns the column list of a sink's foreign table (in the
 * caller's memory context): the target's columns that are not generated
 * (layout_names 0), or the recorded layout (layout_names text[] and
 * layout_types oid[], the row kind column among them); each column with
 * the type, collation and default of the target's column of that name and
 * type, if any; an upsert sink's row kind column last when the target's.
 * Read from pg_catalog as the caller, with SPI.
 */
static char *
table_columns(const ForeignTableSpec *spec, Datum layout_names, Datum layout_types,
			  const char *separator)
{
	/*
	 * With partial_update a column left out must read as NULL (keep the
	 * target's value), so only key columns keep their defaults.
	 */
	static Statement statement = {
		"WITH l AS (SELECT a.attname::pg_catalog.text AS name, a.atttypid AS type, "
		"a.attnum::pg_catalog.int8 AS ord "
		"FROM pg_catalog.pg_attribute a WHERE $4 IS NULL AND a.attrelid OPERATOR(pg_catalog.=) $1 "
		"AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped "
		"AND a.attgenerated OPERATOR(pg_catalog.=) '' "
		"UNION ALL SELECT u.name, u.type, u.ord "
		"FROM ROWS FROM (pg_catalog.unnest($4), pg_catalog.unnest($5)) WITH ORDINALITY "
		"AS u (name, type, ord)) "
		"SELECT pg_catalog.string_agg(pg_catalog.format('%I %s%s%s', l.name, "
		"pg_catalog.format_type(l.type, a.atttypmod), "
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
		"ELSE '' END), $6 ORDER BY l.ord) AS columns "
		"FROM l JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) l.type "
		"LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) $1 "
		"AND a.attname::pg_catalog.text OPERATOR(pg_catalog.=) l.name "
		"AND a.atttypid OPERATOR(pg_catalog.=) l.type AND a.attnum OPERATOR(pg_catalog.>) 0 "
		"AND NOT a.attisdropped AND a.attgenerated OPERATOR(pg_catalog.=) '' "
		"LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid OPERATOR(pg_catalog.=) a.attrelid "
		"AND d.adnum OPERATOR(pg_catalog.=) a.attnum",
		SPI_OK_SELECT};
	Arg args[] = {ARG_OID(spec->target),
				  ARG_BOOL(spec->partial_update),
				  ARG_DATUM(TEXTARRAYOID, spec->key_names, spec->key_names == (Datum) 0),
				  ARG_DATUM(TEXTARRAYOID, layout_names, layout_names == (Datum) 0),
				  ARG_DATUM(OIDARRAYOID, layout_types, layout_names == (Datum) 0),
				  ARG_TEXT(separator)};
	List *found = statement_texts(&statement, args, lengthof(args), 0, "columns");
	char *columns = found == NIL ? NULL : linitial(found);

	if (columns == NULL)
		ereport(ERROR, (errcode(ERRCODE_INVALID_TABLE_DEFINITION),
						errmsg("table \"%s\" has no columns a sink could write",
							   get_rel_name(spec->target))));
	if (layout_names == (Datum) 0 && spec->row_kind_column != NULL)
		columns =
			psprintf("%s, %s pg_catalog.text", columns, quote_identifier(spec->row_kind_column));
	return columns;
}

/*
 * make_foreign_table creates a sink's foreign table with these columns in
 * the target's schema, owned by the caller, so that the target cannot be
 * dropped from under it, with a comment saying what it is for; returns
 * its oid.
 */
static Oid
make_foreign_table(const ForeignTableSpec *spec, const char *columns)
{
	Oid namespace = get_rel_namespace(spec->target);
	char *schema = get_namespace_name(namespace);
	char *name = quote_qualified_identifier(schema, spec->sink_name);
	Oid relid;
	ObjectAddress foreign_table;
	ObjectAddress target;

	run_utility(psprintf("CREATE FOREIGN TABLE %s (%s) SERVER paimon_sink OPTIONS (sink_id '%d')",
						 name, columns, spec->sink_id));
	CommandCounterIncrement();
	relid = get_relname_relid(spec->sink_name, namespace);
	ObjectAddressSet(foreign_table, RelationRelationId, relid);
	ObjectAddressSet(target, RelationRelationId, spec->target);
	recordDependencyOn(&foreign_table, &target, DEPENDENCY_NORMAL);
	run_utility(psprintf(
		"COMMENT ON FOREIGN TABLE %s IS %s", name,
		quote_literal_cstr(psprintf("paimon_sink sink %s: INSERT or COPY rows here; they land in "
									"%s when a checkpoint commits",
									spec->sink_name, qualified_name(spec->target)))));
	return relid;
}

/*
 * foreign_table_create creates a new sink's foreign table (named after the
 * sink, in the target's schema, with the target's columns that are not
 * generated) owned by the caller, who so becomes the sink's owner, and
 * returns its oid.  Raises ERRCODE_INVALID_TABLE_DEFINITION for a target
 * with no column to write, and what CREATE FOREIGN TABLE raises.
 */
Oid
foreign_table_create(const ForeignTableSpec *spec)
{
	return make_foreign_table(spec, table_columns(spec, (Datum) 0, (Datum) 0, ", "));
}

/* foreign_table_drop drops a sink's foreign table (drop_sink), if it still exists. */
void
foreign_table_drop(Oid relid)
{
	if (OidIsValid(relid) && get_rel_name(relid) != NULL)
		run_utility(psprintf("DROP FOREIGN TABLE %s", qualified_name(relid)));
}

/* oid_array returns an oid[] Datum of a List of Oids. */
static Datum
oid_array(List *oids)
{
	Datum *values = palloc(sizeof(Datum) * Max(1, list_length(oids)));
	ListCell *lc;

	foreach (lc, oids)
		values[foreach_current_index(lc)] = ObjectIdGetDatum(lfirst_oid(lc));
	return PointerGetDatum(
		construct_array(values, list_length(oids), OIDOID, sizeof(Oid), true, TYPALIGN_INT));
}

/* is_sink_table tells whether a relation is a foreign table of the server paimon_sink. */
static bool
is_sink_table(Oid relid)
{
	Oid server;
	HeapTuple tuple;
	bool ours;

	if (get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE)
		return false;
	server = get_foreign_server_oid("paimon_sink", true);
	tuple = SearchSysCache1(FOREIGNTABLEREL, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tuple))
		return false;
	ours = OidIsValid(server) && ((Form_pg_foreign_table) GETSTRUCT(tuple))->ftserver == server;
	ReleaseSysCache(tuple);
	return ours;
}

/*
 * note_drop is the object access hook: before a relation is dropped inside
 * a utility statement, it notes it when it is one of our foreign tables,
 * for foreign_table_end_statement.  It raises nothing itself.
 */
static void
note_drop(ObjectAccessType access, Oid classId, Oid objectId, int subId, void *arg)
{
	if (previous_object_access_hook)
		previous_object_access_hook(access, classId, objectId, subId, arg);
	if (access == OAT_DROP && classId == RelationRelationId && subId == 0 && statement_level > 0 &&
		is_sink_table(objectId))
	{
		char *name = qualified_name(objectId);
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);
		DroppedTable *entry = palloc(sizeof(DroppedTable));

		entry->relid = objectId;
		entry->name = pstrdup(name);
		entry->level = statement_level;
		dropped_tables = lappend(dropped_tables, entry);
		MemoryContextSwitchTo(old);
	}
}

/* foreign_table_install_hook chains note_drop into object_access_hook (from _PG_init). */
void
foreign_table_install_hook(void)
{
	previous_object_access_hook = object_access_hook;
	object_access_hook = note_drop;
}

/*
 * take_dropped removes the notes of utility statements at level and
 * deeper, and returns copies of them in the caller's memory context
 * (copy: false returns NIL, for an error's cleanup).
 */
static List *
take_dropped(int level, bool copy)
{
	List *kept = NIL;
	List *taken = NIL;
	ListCell *lc;
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	foreach (lc, dropped_tables)
		if (((DroppedTable *) lfirst(lc))->level < level)
			kept = lappend(kept, lfirst(lc));
	MemoryContextSwitchTo(old);
	foreach (lc, dropped_tables)
	{
		DroppedTable *entry = lfirst(lc);

		if (entry->level < level)
			continue;
		if (copy)
		{
			DroppedTable *taken_entry = palloc(sizeof(DroppedTable));

			taken_entry->relid = entry->relid;
			taken_entry->name = pstrdup(entry->name);
			taken_entry->level = entry->level;
			taken = lappend(taken, taken_entry);
		}
		pfree(entry->name);
		pfree(entry);
	}
	list_free(dropped_tables);
	dropped_tables = kept;
	return taken;
}

/*
 * foreign_table_begin_statement is called as a utility statement starts
 * (utility_hook.c); returns its nesting level, for the calls below.
 */
int
foreign_table_begin_statement(void)
{
	return ++statement_level;
}

/*
 * foreign_table_abort_statement forgets what the utility statement of
 * level noted: it failed, and its drops roll back with it.  Raises nothing.
 */
void
foreign_table_abort_statement(int level)
{
	(void) take_dropped(level, false);
	statement_level = level - 1;
}

/*
 * drop_owned_hint returns the hint of a DROP OWNED that would drop a
 * sink's foreign table: REASSIGN OWNED first.
 */
static char *
drop_owned_hint(DropOwnedStmt *statement)
{
	StringInfoData roles;
	ListCell *lc;

	initStringInfo(&roles);
	foreach (lc, statement->roles)
		appendStringInfo(&roles, "%s%s", roles.len > 0 ? ", " : "",
						 quote_identifier(get_rolespec_name(lfirst(lc))));
	return psprintf("Give the sink another owner first with REASSIGN OWNED BY %s TO new_owner "
					"(a sink moves with its foreign table), or drop it with "
					"paimon_sink.drop_sink().",
					roles.data);
}

/*
 * foreign_table_end_statement is called as the utility statement of level
 * ends without error: it refuses (ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST)
 * when the statement dropped the foreign table of a sink that still
 * exists, naming the sink and what to do instead.  drop_sink forgets its
 * sink before it drops the foreign table, and DROP EXTENSION takes the
 * catalog with it: both pass.
 */
void
foreign_table_end_statement(Node *statement, int level)
{
	List *taken;
	List *relids = NIL;
	List *sinks;
	SinkOwnership *first;
	const char *table = NULL;
	StringInfoData names;
	ListCell *lc;

	statement_level = level - 1;
	if (dropped_tables == NIL)
		return;
	taken = take_dropped(level, true);
	if (taken == NIL || !OidIsValid(get_extension_oid("paimon_sink", true)))
		return;
	foreach (lc, taken)
		relids = lappend_oid(relids, ((DroppedTable *) lfirst(lc))->relid);
	sinks = metadata_sink_ownership(oid_array(relids), (Datum) 0);
	if (sinks == NIL)
		return;
	first = linitial(sinks);
	foreach (lc, taken)
		if (((DroppedTable *) lfirst(lc))->relid == first->foreign_table)
			table = ((DroppedTable *) lfirst(lc))->name;
	initStringInfo(&names);
	foreach (lc, sinks)
		appendStringInfo(&names, "%s\"%s\"", names.len > 0 ? ", " : "",
						 ((SinkOwnership *) lfirst(lc))->name);
	ereport(
		ERROR,
		(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
		 errmsg("cannot drop foreign table %s because sink \"%s\" writes through it", table,
				first->name),
		 errdetail("A sink's foreign table goes only with the sink (drop_sink): its owner is "
				   "the sink's, and without it the sink's staged rows and prepared checkpoints "
				   "could not commit.%s",
				   list_length(sinks) > 1
					   ? psprintf(" Sinks whose foreign table the statement drops: %s.", names.data)
					   : ""),
		 IsA(statement, DropOwnedStmt)
			 ? errhint("%s", drop_owned_hint((DropOwnedStmt *) statement))
			 : errhint("Drop the sink first with SELECT paimon_sink.drop_sink(%s) (it refuses "
					   "while rows wait to commit, unless force => true), then run the "
					   "statement again.",
					   quote_literal_cstr(first->name))));
}

/*
 * refuse_layout_change raises ERRCODE_FEATURE_NOT_SUPPORTED for a change of
 * a sink's foreign table that its rows' layout or its tie to the sink
 * would not survive (what, a phrase: "add a column to").
 */
static void
refuse_layout_change(Oid relid, const char *what)
{
	List *sinks = metadata_sink_ownership(oid_array(list_make1_oid(relid)), (Datum) 0);
	const char *name = sinks != NIL ? ((SinkOwnership *) linitial(sinks))->name : "?";

	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot %s foreign table %s of sink \"%s\"", what, qualified_name(relid), name),
			 errdetail("Its columns are the layout the sink stages rows in, and its option sink_id "
					   "ties it to the sink: rows already staged are loaded in that layout."),
			 errhint("To write a column added to the target, call paimon_sink.alter_sink(%s), "
					 "which adds it here; for another layout, commit what is staged and create "
					 "a sink for it with paimon_sink.create_sink(). The table's name, schema, "
					 "owner, grants and defaults may change freely.",
					 quote_literal_cstr(name))));
}

/*
 * foreign_table_refuse_alter refuses (ERRCODE_FEATURE_NOT_SUPPORTED) an
 * ALTER FOREIGN TABLE (or ALTER TABLE) of a sink's foreign table that adds,
 * drops, renames or retypes a column, changes its options, or gives it a
 * parent or a type: the staged rows' layout and the load depend on its
 * columns, and writes would fail until it was undone.  Owner, name,
 * schema, grants, defaults and constraints stay free to change.  A
 * statement on another relation, or while the extension is not there,
 * passes.
 */
void
foreign_table_refuse_alter(Node *statement)
{
	Oid relid;
	ListCell *lc;

	if (adding_columns || !OidIsValid(get_extension_oid("paimon_sink", true)))
		return;
	if (IsA(statement, RenameStmt))
	{
		RenameStmt *rename = (RenameStmt *) statement;

		if (rename->renameType != OBJECT_COLUMN || rename->relation == NULL)
			return;
		relid = RangeVarGetRelid(rename->relation, NoLock, true);
		if (OidIsValid(relid) && is_sink_table(relid))
			refuse_layout_change(relid, "rename a column of");
		return;
	}
	if (!IsA(statement, AlterTableStmt) || ((AlterTableStmt *) statement)->relation == NULL)
		return;
	relid = RangeVarGetRelid(((AlterTableStmt *) statement)->relation, NoLock, true);
	if (!OidIsValid(relid) || !is_sink_table(relid))
		return;
	foreach (lc, ((AlterTableStmt *) statement)->cmds)
	{
		AlterTableCmd *command = lfirst(lc);

		switch (command->subtype)
		{
			case AT_AddColumn:
				refuse_layout_change(relid, "add a column to");
				break;
			case AT_DropColumn:
				refuse_layout_change(relid, "drop a column of");
				break;
			case AT_AlterColumnType:
				refuse_layout_change(relid, "change a column's type in");
				break;
			case AT_AlterColumnGenericOptions:
			case AT_GenericOptions:
				refuse_layout_change(relid, "change the options of");
				break;
			case AT_AddInherit:
			case AT_DropInherit:
			case AT_AddOf:
			case AT_DropOf:
				refuse_layout_change(relid, "change the parent or type of");
				break;
			default:
				break;
		}
	}
}

/*
 * foreign_table_refuse_drop_role refuses DROP ROLE
 * (ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST) while a role it names owns a sink
 * of this database, naming the sink and the ways on, before PostgreSQL
 * refuses it for the foreign table ("owner of foreign table ...").  Sinks
 * of other databases are PostgreSQL's to report.
 */
void
foreign_table_refuse_drop_role(DropRoleStmt *statement)
{
	List *roles = NIL;
	List *sinks;
	SinkOwnership *first;
	char *owner;
	StringInfoData names;
	ListCell *lc;

	if (!OidIsValid(get_extension_oid("paimon_sink", true)))
		return;
	foreach (lc, statement->roles)
	{
		RoleSpec *spec = lfirst(lc);
		Oid role =
			spec->roletype == ROLESPEC_CSTRING ? get_role_oid(spec->rolename, true) : InvalidOid;

		if (OidIsValid(role))
			roles = lappend_oid(roles, role);
	}
	if (roles == NIL)
		return;
	sinks = metadata_sink_ownership((Datum) 0, oid_array(roles));
	if (sinks == NIL)
		return;
	first = linitial(sinks);
	owner = GetUserNameFromId(first->owner, false);
	initStringInfo(&names);
	foreach (lc, sinks)
		if (((SinkOwnership *) lfirst(lc))->owner == first->owner)
			appendStringInfo(&names, "%s\"%s\"", names.len > 0 ? ", " : "",
							 ((SinkOwnership *) lfirst(lc))->name);
	ereport(
		ERROR,
		(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
		 errmsg("role \"%s\" cannot be dropped because it owns sink \"%s\"", owner, first->name),
		 errdetail("A sink's owner is the owner of its foreign table (%s), and its commits run "
				   "with that role's rights. Sinks of role \"%s\" in this database: %s.",
				   qualified_name(first->foreign_table), owner, names.data),
		 errhint("Give the sink another owner with REASSIGN OWNED BY %s TO new_owner (or ALTER "
				 "FOREIGN TABLE %s OWNER TO new_owner), or drop it with SELECT "
				 "paimon_sink.drop_sink(%s).",
				 quote_identifier(owner), qualified_name(first->foreign_table),
				 quote_literal_cstr(first->name))));
}

/*
 * layout_array returns a sink's recorded layout: its column names (text[])
 * or, with types, their types (oid[]).
 */
static Datum
layout_array(const SinkInfo *sink, bool types)
{
	Datum *values = palloc(sizeof(Datum) * Max(1, sink->column_count));

	for (int i = 0; i < sink->column_count; i++)
		values[i] = types ? ObjectIdGetDatum(sink->column_types[i])
						  : CStringGetTextDatum(sink->column_names[i]);
	return PointerGetDatum(
		types ? construct_array(values, sink->column_count, OIDOID, sizeof(Oid), true, TYPALIGN_INT)
			  : construct_array(values, sink->column_count, TEXTOID, -1, false, TYPALIGN_INT));
}

/*
 * spec_of_sink fills a foreign table's spec from an existing sink: its
 * name, id, target, partial_update and upsert key columns.
 */
static void
spec_of_sink(ForeignTableSpec *spec, const SinkInfo *sink)
{
	memset(spec, 0, sizeof(*spec));
	spec->sink_name = sink->name;
	spec->sink_id = sink->sink_id;
	spec->target = sink->target;
	spec->partial_update = sink->partial_update;
	if (sink->key_columns != NIL)
		spec->key_names = PointerGetDatum(strlist_to_textarray(sink->key_columns));
}

/*
 * foreign_table_add_columns adds to the end of a sink's foreign table the
 * target's columns named in names (text[]) with their types (oid[]), in
 * that order: each with the target column's type modifier, collation and
 * default (an identity column's sequence; none but a key's under
 * partial_update), as create_sink makes them.  The one ALTER FOREIGN TABLE
 * of a sink's columns that foreign_table_refuse_alter lets through; it
 * takes AccessExclusiveLock on the foreign table, waiting (up to
 * lock_timeout) for the transactions that write into it.  Raises what
 * ALTER FOREIGN TABLE raises.
 */
void
foreign_table_add_columns(const SinkInfo *sink, Datum names, Datum types)
{
	ForeignTableSpec spec;
	char *columns;

	spec_of_sink(&spec, sink);
	columns = table_columns(&spec, names, types, ", ADD COLUMN ");
	adding_columns = true;
	PG_TRY();
	{
		run_utility(psprintf("ALTER FOREIGN TABLE %s ADD COLUMN %s",
							 qualified_name(sink->foreign_table), columns));
	}
	PG_FINALLY();
	{
		adding_columns = false;
	}
	PG_END_TRY();
	CommandCounterIncrement();
}

/*
 * foreign_table_sync_defaults sets the default of each column of a sink's
 * foreign table that loads into a column of its target to that column's
 * default now (an identity column's sequence; under partial_update none but
 * a key's or an identity's, as create_sink makes them; none when the target
 * has none), so that a row written without the column stages what an
 * INSERT into the target would take.  only (text[], or (Datum) 0 for all)
 * names the target's columns to follow; a column whose staged type is no
 * longer the target's (widened since) keeps its default.  It runs as the
 * sink's owner (the foreign table's), whoever changed the target, with the
 * search_path pinned, and alters only the columns whose default differs.
 * Raises what ALTER FOREIGN TABLE raises (ERRCODE_LOCK_NOT_AVAILABLE when
 * lock_timeout ends its wait for the transactions writing into the sink).
 */
void
foreign_table_sync_defaults(const SinkInfo *sink, Datum only)
{
	static Statement statement = {
		"WITH s AS (SELECT s.name, s.target_attnum FROM ROWS FROM "
		"(pg_catalog.unnest($2::pg_catalog.text[]), pg_catalog.unnest($3::pg_catalog.int2[])) "
		"AS s (name, target_attnum)), "
		"w AS (SELECT f.attnum, f.attname, "
		"CASE WHEN a.attidentity OPERATOR(pg_catalog.<>) '' "
		"THEN pg_catalog.format('pg_catalog.nextval(%L::pg_catalog.regclass)', "
		"pg_catalog.pg_get_serial_sequence(a.attrelid::pg_catalog.regclass::pg_catalog.text, "
		"a.attname::pg_catalog.text)) "
		"WHEN $5 AND a.attname::pg_catalog.text OPERATOR(pg_catalog.<>) ALL ($6) THEN NULL "
		"ELSE pg_catalog.pg_get_expr(d.adbin, d.adrelid) END AS want, "
		"pg_catalog.pg_get_expr(fd.adbin, fd.adrelid) AS have "
		"FROM s JOIN pg_catalog.pg_attribute f ON f.attrelid OPERATOR(pg_catalog.=) $1 "
		"AND f.attname::pg_catalog.text OPERATOR(pg_catalog.=) s.name AND NOT f.attisdropped "
		"JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) $4 "
		"AND a.attnum OPERATOR(pg_catalog.=) s.target_attnum AND NOT a.attisdropped "
		"AND a.attgenerated OPERATOR(pg_catalog.=) '' "
		"AND a.atttypid OPERATOR(pg_catalog.=) f.atttypid "
		"LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid OPERATOR(pg_catalog.=) a.attrelid "
		"AND d.adnum OPERATOR(pg_catalog.=) a.attnum "
		"LEFT JOIN pg_catalog.pg_attrdef fd ON fd.adrelid OPERATOR(pg_catalog.=) f.attrelid "
		"AND fd.adnum OPERATOR(pg_catalog.=) f.attnum "
		"WHERE $7::pg_catalog.text[] IS NULL "
		"OR a.attname::pg_catalog.text OPERATOR(pg_catalog.=) ANY ($7)) "
		"SELECT pg_catalog.string_agg(pg_catalog.format('ALTER COLUMN %I %s', w.attname, "
		"CASE WHEN w.want IS NULL THEN 'DROP DEFAULT' "
		"ELSE 'SET DEFAULT ' OPERATOR(pg_catalog.||) w.want END), ', ' ORDER BY w.attnum) "
		"AS commands FROM w WHERE (w.want IS NULL) OPERATOR(pg_catalog.<>) (w.have IS NULL) "
		"OR w.want OPERATOR(pg_catalog.<>) w.have",
		SPI_OK_SELECT};
	Datum *attnums = palloc(sizeof(Datum) * Max(1, sink->column_count));
	Datum key_names = sink->key_columns != NIL
						  ? PointerGetDatum(strlist_to_textarray(sink->key_columns))
						  : (Datum) 0;
	RoleSwitch saved;
	List *found;
	char *commands;

	if (!OidIsValid(sink->owner) || get_rel_name(sink->foreign_table) == NULL)
		return;
	for (int i = 0; i < sink->column_count; i++)
		attnums[i] = Int16GetDatum(sink->target_attnums[i]);
	{
		Arg args[] = {
			ARG_OID(sink->foreign_table),
			ARG_DATUM(TEXTARRAYOID, layout_array(sink, false), false),
			ARG_DATUM(INT2ARRAYOID,
					  PointerGetDatum(construct_array(attnums, sink->column_count, INT2OID,
													  sizeof(int16), true, TYPALIGN_SHORT)),
					  false),
			ARG_OID(sink->target),
			ARG_BOOL(sink->partial_update),
			ARG_DATUM(TEXTARRAYOID, key_names, key_names == (Datum) 0),
			ARG_DATUM(TEXTARRAYOID, only, only == (Datum) 0)};

		/* the owner may alter its foreign table; the pinned path qualifies what the defaults name */
		security_switch_role(sink->owner, &saved);
		found = statement_texts(&statement, args, lengthof(args), 0, "commands");
		commands = found == NIL ? NULL : linitial(found);
		if (commands != NULL)
			run_utility(psprintf("ALTER FOREIGN TABLE %s %s", qualified_name(sink->foreign_table),
								 commands));
		security_restore_role(&saved);
	}
	CommandCounterIncrement();
}

/*
 * restore_foreign_table(sink_name text, owner regrole) gives a sink whose
 * foreign table was dropped a new one, and so an owner again, and returns
 * it (regclass): named after the sink, in the target's schema, with the
 * layout the sink stages rows in (each column with the type modifier,
 * collation and default of the target's column of that name and type),
 * owned by owner (never NULL: ERRCODE_NULL_VALUE_NOT_ALLOWED; the role
 * the commits will run as is named, not guessed).  A sink that has its
 * foreign table is left as it is.  For a superuser:
 * ERRCODE_INSUFFICIENT_PRIVILEGE otherwise; ERRCODE_UNDEFINED_OBJECT for an
 * unknown sink or role,
 * ERRCODE_UNDEFINED_TABLE when the target was dropped too, and what CREATE
 * FOREIGN TABLE raises (42P07: another relation has the name).  Run by the
 * update to 0.2, it keeps the new table out of the extension's members.
 */
Datum
paimon_sink_restore_foreign_table(PG_FUNCTION_ARGS)
{
	char *name = sql_text_argument(fcinfo, 0);
	SinkInfo *sink;
	Oid owner;
	Oid relid;
	ForeignTableSpec spec;

	paimon_sink_require_ready();
	if (!superuser())
		ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						errmsg("permission denied to restore the foreign table of a sink"),
						errdetail("Only a superuser may: the sink's owner is gone with it.")));
	if (name == NULL)
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("the sink name must not be NULL")));
	sink = catalog_require_sink(name);
	if (OidIsValid(sink->owner))
		PG_RETURN_OID(sink->foreign_table);
	if (get_rel_name(sink->target) == NULL)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("the target table of sink \"%s\" was dropped", sink->name),
						errdetail("Its staged rows and prepared checkpoints have nowhere to go."),
						errhint("Drop the sink with paimon_sink.drop_sink(%s, force => true).",
								quote_literal_cstr(sink->name))));
	/* no default: the owner's rights are what the sink's commits run with */
	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("the owner of the restored foreign table of sink \"%s\" must not be NULL",
						sink->name),
				 errdetail("A sink's owner is its foreign table's owner, and its commits run with "
						   "that role's rights, its target's triggers included."),
				 errhint("Name the role that should own the sink: it needs INSERT on the target "
						 "(an upsert sink also SELECT, UPDATE and DELETE; an overwrite sink "
						 "DELETE).")));
	owner = PG_GETARG_OID(1);
	if (GetUserNameFromId(owner, true) == NULL)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("role with OID %u does not exist", owner)));

	spec_of_sink(&spec, sink);
	relid = make_foreign_table(
		&spec, table_columns(&spec, layout_array(sink, false), layout_array(sink, true), ", "));
	/* created by an extension script (the update), it would be the extension's */
	if (creating_extension)
		deleteDependencyRecordsForClass(RelationRelationId, relid, ExtensionRelationId,
										DEPENDENCY_EXTENSION);
	CommandCounterIncrement();
	catalog_check_layout(sink, relid, true);
	run_utility(psprintf("ALTER FOREIGN TABLE %s OWNER TO %s", qualified_name(relid),
						 quote_identifier(GetUserNameFromId(owner, false))));
	metadata_set_sink_layout(sink->sink_id, relid);
	ereport(NOTICE, (errmsg("restored foreign table %s of sink \"%s\", owned by role \"%s\"",
							qualified_name(relid), sink->name, GetUserNameFromId(owner, false)),
					 errhint("Grant INSERT on it again to the roles that write into the sink.")));
	PG_RETURN_OID(relid);
}
