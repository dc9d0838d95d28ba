/*-------------------------------------------------------------------------
 *
 * schema_change.c
 *	  ALTER TABLE on a sink's target: the changes a sink cannot follow are
 *	  refused as they are made.
 *
 * A sink follows its target's schema changes while rows wait
 * (column_follow.c): a renamed column, a widened type, a dropped column, a
 * column added with a default.  The utility hook refuses the others before
 * PostgreSQL runs them, so that they never strand what is staged: a type
 * the staged values may not fit (ERRCODE_DATATYPE_MISMATCH), the drop of a
 * primary-key column of an upsert sink, which keys its changes by it
 * (ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST), and a NOT NULL column without a
 * default, which neither the staged rows nor the sink's writers can fill
 * (ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE).  Statements on other
 * relations, or while the extension is not there, pass untouched.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_inherits.h"
#include "commands/extension.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "api/schema_change.h"
#include "metadata/column_follow.h"
#include "metadata/metadata.h"

/*
 * refuse_type_change refuses ALTER COLUMN name TYPE def->typeName when a
 * sink stages the column in a type whose values may not fit the new one.
 */
static void
refuse_type_change(Oid relid, List *sinks, const char *name, ColumnDef *def)
{
	AttrNumber attnum = get_attnum(relid, name);
	Oid type;
	int32 typmod;
	ListCell *lc;

	if (attnum == InvalidAttrNumber || def == NULL || def->typeName == NULL)
		return; /* PostgreSQL's own error follows */
	typenameTypeIdAndMod(NULL, def->typeName, &type, &typmod);
	foreach (lc, sinks)
	{
		SinkInfo *sink = lfirst(lc);
		int staged = column_follow_staged_index(sink, attnum);
		FollowedColumn followed;

		if (staged < 0)
			continue;
		memset(&followed, 0, sizeof(followed));
		followed.staged_type = sink->column_types[staged];
		followed.staged_typmod = -1;
		if (OidIsValid(sink->foreign_table))
		{
			AttrNumber in_foreign = get_attnum(sink->foreign_table, sink->column_names[staged]);
			Oid collation;

			if (in_foreign != InvalidAttrNumber)
				get_atttypetypmodcoll(sink->foreign_table, in_foreign, &followed.staged_type,
									  &followed.staged_typmod, &collation);
		}
		if (column_follow_widens(followed.staged_type, followed.staged_typmod, type, typmod))
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("cannot change the type of column \"%s\" of table \"%s\" to %s", name,
						get_rel_name(relid), format_type_with_typemod(type, typmod)),
				 errdetail("Sink \"%s\" stages the column as %s; its loads cast a staged column "
						   "only to a type that holds every value of it, by a cast PostgreSQL "
						   "marks implicit.",
						   sink->name,
						   format_type_with_typemod(followed.staged_type, followed.staged_typmod)),
				 errhint("Widen it instead (a cast PostgreSQL marks implicit, a longer varchar, a "
						 "numeric with more digits), or commit what is staged, drop the sink, "
						 "change the column and create the sink again.")));
	}
}

/*
 * refuse_key_drop refuses DROP COLUMN name when it is a primary-key column
 * of an upsert sink.
 */
static void
refuse_key_drop(Oid relid, List *sinks, const char *name)
{
	AttrNumber attnum = get_attnum(relid, name);
	ListCell *lc;

	if (attnum == InvalidAttrNumber)
		return;
	foreach (lc, sinks)
	{
		SinkInfo *sink = lfirst(lc);
		int staged = column_follow_staged_index(sink, attnum);
		ListCell *key;

		if (staged < 0 || !SINK_IS_UPSERT(sink))
			continue;
		foreach (key, sink->key_columns)
			if (strcmp(lfirst(key), sink->column_names[staged]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
						 errmsg("cannot drop column \"%s\" of table \"%s\": upsert sink \"%s\" "
								"keys its changes by it",
								name, get_rel_name(relid), sink->name),
						 errdetail("Upsert sink \"%s\" applies its staged changes by the primary "
								   "key it was created with.",
								   sink->name),
						 errhint("Commit what is staged and drop the sink with "
								 "paimon_sink.drop_sink() first, then drop the column.")));
	}
}

/* has_default tells whether a column being added gets a value without being written. */
static bool
has_default(ColumnDef *def)
{
	ListCell *lc;
	Oid type;
	int32 typmod;

	if (def->raw_default != NULL || def->cooked_default != NULL || def->identity != '\0' ||
		def->generated != '\0')
		return true;
	foreach (lc, def->constraints)
	{
		Constraint *constraint = lfirst(lc);

		if (constraint->contype == CONSTR_DEFAULT || constraint->contype == CONSTR_IDENTITY ||
			constraint->contype == CONSTR_GENERATED)
			return true;
	}
	/* a domain's default fills it too */
	typenameTypeIdAndMod(NULL, def->typeName, &type, &typmod);
	return get_typdefault(type) != NULL;
}

/* is_not_null tells whether a column being added is declared NOT NULL (or a primary key). */
static bool
is_not_null(ColumnDef *def)
{
	ListCell *lc;

	if (def->is_not_null)
		return true;
	foreach (lc, def->constraints)
	{
		Constraint *constraint = lfirst(lc);

		if (constraint->contype == CONSTR_NOTNULL || constraint->contype == CONSTR_PRIMARY)
			return true;
	}
	return false;
}

/*
 * refuse_add_not_null refuses ADD COLUMN of a NOT NULL column without a
 * default: no staged row and no write of the sinks could fill it.
 */
static void
refuse_add_not_null(Oid relid, List *sinks, ColumnDef *def)
{
	SinkInfo *sink = linitial(sinks);

	if (def == NULL || !is_not_null(def) || has_default(def))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("cannot add column \"%s\" NOT NULL without a default to table \"%s\": sink "
					"\"%s\" writes into it",
					def->colname, get_rel_name(relid), sink->name),
			 errdetail("Neither the rows sink \"%s\" holds staged nor its later writes have a "
					   "value for the new column.",
					   sink->name),
			 errhint("Add it with a DEFAULT (or as NULL, then SET NOT NULL once the sink writes "
					 "it).")));
}

/*
 * refuse_on refuses the subcommands of alter that a sink of relid (the
 * relation named, or a partition or child the statement recurses to)
 * could not follow.
 */
static void
refuse_on(Oid relid, AlterTableStmt *alter)
{
	List *sinks = metadata_sinks_of_target(relid);
	ListCell *lc;

	if (sinks == NIL)
		return;
	foreach (lc, alter->cmds)
	{
		AlterTableCmd *command = lfirst(lc);

		switch (command->subtype)
		{
			case AT_AlterColumnType:
				refuse_type_change(relid, sinks, command->name, (ColumnDef *) command->def);
				break;
			case AT_DropColumn:
				refuse_key_drop(relid, sinks, command->name);
				break;
			case AT_AddColumn:
				refuse_add_not_null(relid, sinks, (ColumnDef *) command->def);
				break;
			default:
				break;
		}
	}
}

/*
 * schema_change_refuse refuses, before PostgreSQL runs it, an ALTER TABLE
 * of a sink's target that the sink could not follow: a column's type
 * changed to one its staged values may not fit (ERRCODE_DATATYPE_MISMATCH),
 * a primary-key column of an upsert sink dropped
 * (ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST), a NOT NULL column without a
 * default added (ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE).  Each error
 * names the sink and the way forward; a sink of a partition or child the
 * statement recurses to counts as one of the table named.  Other
 * statements, and those of an extension's script, pass.
 */
void
schema_change_refuse(Node *statement)
{
	AlterTableStmt *alter;
	Oid relid;
	List *relids;
	ListCell *lc;
	ListCell *lr;
	bool relevant = false;

	if (!IsA(statement, AlterTableStmt))
		return;
	alter = (AlterTableStmt *) statement;
	if (alter->relation == NULL || alter->objtype != OBJECT_TABLE)
		return;
	foreach (lc, alter->cmds)
	{
		AlterTableCmd *command = lfirst(lc);

		relevant |= command->subtype == AT_AlterColumnType || command->subtype == AT_DropColumn ||
					command->subtype == AT_AddColumn;
	}
	/* an extension's script (ours among them) alters its own tables: no sink's target */
	if (!relevant || creating_extension || !OidIsValid(get_extension_oid("paimon_sink", true)))
		return;
	relid = RangeVarGetRelid(alter->relation, NoLock, true);
	if (!OidIsValid(relid))
		return;
	/* the statement recurses to partitions and children unless ONLY: so do the checks */
	relids =
		alter->relation->inh ? find_all_inheritors(relid, NoLock, NULL) : list_make1_oid(relid);
	foreach (lr, relids)
		refuse_on(lfirst_oid(lr), alter);
}
