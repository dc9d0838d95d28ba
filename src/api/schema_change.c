/*-------------------------------------------------------------------------
 *
 * schema_change.c
 *	  ALTER TABLE on a sink's target: the changes a sink cannot follow are
 *	  refused as they are made, and a changed default is followed into the
 *	  sinks' foreign tables.
 *
 * A sink follows its target's schema changes while rows wait
 * (column_follow.c): a renamed column, a type changed by a cast that keeps
 * every value, a dropped column, a column added with a default.  The
 * utility hook refuses the others before PostgreSQL runs them, so that they
 * never strand what is staged: a type the staged values may not keep, or a
 * change by USING (ERRCODE_DATATYPE_MISMATCH, ERRCODE_FEATURE_NOT_SUPPORTED);
 * the drop of a primary-key column of an upsert sink, which keys its
 * changes by it, or of the last column a sink loads
 * (ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST); a column left NOT NULL without a
 * default that a sink does not write, however it got so (added, SET NOT
 * NULL, its default or identity dropped, a primary key), which neither the
 * staged rows nor the sink's writers can fill
 * (ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE), in the target or in a
 * partition of it (made NOT NULL alone, or attached so) where the target
 * has no default; and a change of the layout of a composite type, or of
 * the labels of an enum, whose values a sink stages
 * (ERRCODE_FEATURE_NOT_SUPPORTED), which staged values could not be read
 * back in (staged_types.c).
 *
 * The relation is looked up and locked as ALTER TABLE itself does it
 * (AlterTableLookupRelation, with the statement's lock level), which also
 * makes PostgreSQL's own ownership check, before anything is read of it:
 * a role that may not alter the table gets PostgreSQL's error, and no
 * concurrent change comes between the check and the change.  Statements
 * on other relations, of an extension's script, or while the extension's
 * catalog is not the library's version, pass untouched.
 *
 * After PostgreSQL ran an ALTER TABLE that set or dropped a default, the
 * foreign table of each sink of the table (or of a table it recursed to)
 * takes the new default of its staged column (foreign_table.c, as the
 * sink's owner): a row written through the sink without the column stages
 * what an INSERT into the target takes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/namespace.h"
#include "catalog/objectaddress.h"
#include "catalog/partition.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "commands/tablecmds.h"
#include "parser/parse_type.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "api/foreign_table.h"
#include "api/schema_change.h"
#include "api/sink_ddl.h"
#include "api/staged_types.h"
#include "metadata/column_follow.h"
#include "metadata/extension.h"
#include "metadata/metadata.h"
#include "metadata/version.h"

/*
 * What one column of a relation will be once the statement has run, as
 * far as a sink cares: whether a row that leaves it out can be stored.
 */
typedef struct ColumnFate
{
	char *name;
	AttrNumber attnum; /* the column it is now; InvalidAttrNumber for one the statement adds */
	Oid type;
	bool not_null;
	bool has_default; /* a default, identity or generated value, or the type's default */
	bool touched;	  /* the statement made it NOT NULL or took its default away */
	bool dropped;
} ColumnFate;

/* extension_ready tells whether the hook may read this database's sinks. */
static bool
extension_ready(void)
{
	char *installed;

	/* an extension's script (ours among them) alters its own tables: no sink's target */
	if (creating_extension || !OidIsValid(get_extension_oid("paimon_sink", true)))
		return false;
	/* a catalog not yet updated to the library's version (ALTER EXTENSION UPDATE pending) */
	installed = extension_installed_version();
	return installed != NULL && strcmp(installed, PAIMON_SINK_VERSION) == 0;
}

/* type_not_null tells whether type is a domain (or over one) declared NOT NULL. */
static bool
type_not_null(Oid type)
{
	while (OidIsValid(type) && get_typtype(type) == TYPTYPE_DOMAIN)
	{
		HeapTuple tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
		Form_pg_type form;
		bool not_null;

		if (!HeapTupleIsValid(tuple))
			return false;
		form = (Form_pg_type) GETSTRUCT(tuple);
		not_null = form->typnotnull;
		type = form->typbasetype;
		ReleaseSysCache(tuple);
		if (not_null)
			return true;
	}
	return false;
}

/* type_has_default tells whether a column of type takes the type's default when left out. */
static bool
type_has_default(Oid type)
{
	return OidIsValid(type) && get_typdefault(type) != NULL;
}

/*
 * is_serial tells whether a column's type name is one of the serial types,
 * which are no types: CREATE and ALTER TABLE make them an integer with a
 * sequence's default, recognised as transformColumnDefinition does.
 */
static bool
is_serial(TypeName *name)
{
	static const char *const serials[] = {"smallserial", "serial2",	  "serial",
										  "serial4",	 "bigserial", "serial8"};
	char *typname;

	if (name == NULL || list_length(name->names) != 1 || name->pct_type)
		return false;
	typname = strVal(linitial(name->names));
	for (int i = 0; i < lengthof(serials); i++)
		if (strcmp(typname, serials[i]) == 0)
			return true;
	return false;
}

/* is_null_constant tells whether a raw default is NULL (PostgreSQL stores no default then). */
static bool
is_null_constant(Node *expression)
{
	while (expression != NULL && IsA(expression, TypeCast))
		expression = ((TypeCast *) expression)->arg;
	return expression != NULL && IsA(expression, A_Const) && ((A_Const *) expression)->isnull;
}

/* column_type returns the type a column being added is declared with, or InvalidOid. */
static Oid
column_type(ColumnDef *def)
{
	if (def->typeName == NULL || is_serial(def->typeName))
		return InvalidOid;
	return LookupTypeNameOid(NULL, def->typeName, true);
}

/* has_default tells whether a column being added gets a value without being written. */
static bool
has_default(ColumnDef *def)
{
	ListCell *lc;
	Oid type;

	if ((def->raw_default != NULL && !is_null_constant(def->raw_default)) ||
		def->cooked_default != NULL || def->identity != '\0' || def->generated != '\0')
		return true;
	foreach (lc, def->constraints)
	{
		Constraint *constraint = lfirst(lc);

		if ((constraint->contype == CONSTR_DEFAULT && !is_null_constant(constraint->raw_expr)) ||
			constraint->contype == CONSTR_IDENTITY || constraint->contype == CONSTR_GENERATED)
			return true;
	}
	if (is_serial(def->typeName))
		return true;
	type = column_type(def);
	/* a type that does not exist: PostgreSQL's own error follows */
	return !OidIsValid(type) || type_has_default(type);
}

/* is_not_null tells whether a column being added is NOT NULL (or a primary key, or of a NOT NULL domain). */
static bool
is_not_null(ColumnDef *def)
{
	ListCell *lc;

	if (def->is_not_null || is_serial(def->typeName))
		return true;
	foreach (lc, def->constraints)
	{
		Constraint *constraint = lfirst(lc);

		if (constraint->contype == CONSTR_NOTNULL || constraint->contype == CONSTR_PRIMARY)
			return true;
	}
	return type_not_null(column_type(def));
}

/*
 * fate_of returns the fate of column name of relid among fates, made from
 * the catalog when the statement has not touched it yet; NULL for a column
 * the relation does not have (PostgreSQL's own error follows).
 */
static ColumnFate *
fate_of(List **fates, Oid relid, const char *name)
{
	ListCell *lc;
	HeapTuple tuple;
	Form_pg_attribute attr;
	ColumnFate *fate;

	foreach (lc, *fates)
	{
		fate = lfirst(lc);
		if (!fate->dropped && strcmp(fate->name, name) == 0)
			return fate;
	}
	tuple = SearchSysCacheAttName(relid, name);
	if (!HeapTupleIsValid(tuple))
		return NULL;
	attr = (Form_pg_attribute) GETSTRUCT(tuple);
	fate = palloc0(sizeof(ColumnFate));
	fate->name = pstrdup(name);
	fate->attnum = attr->attnum;
	fate->type = attr->atttypid;
	fate->not_null = attr->attnotnull || type_not_null(attr->atttypid);
	fate->has_default = attr->atthasdef || attr->attidentity != '\0' ||
						attr->attgenerated != '\0' || type_has_default(attr->atttypid);
	ReleaseSysCache(tuple);
	/* a column the relation has, but not as a user column */
	if (fate->attnum <= 0)
		return NULL;
	*fates = lappend(*fates, fate);
	return fate;
}

/* make_not_null marks a column NOT NULL once the statement has run. */
static void
make_not_null(ColumnFate *fate)
{
	if (fate == NULL)
		return;
	fate->touched |= !fate->not_null;
	fate->not_null = true;
}

/* lose_default marks a column as without a default of its own once the statement has run. */
static void
lose_default(ColumnFate *fate)
{
	if (fate == NULL)
		return;
	fate->touched |= fate->has_default;
	fate->has_default = type_has_default(fate->type);
}

/*
 * key_columns returns the names (String nodes) of the columns a PRIMARY
 * KEY constraint being added to relid covers: its column list, or the
 * index it is made of (USING INDEX).
 */
static List *
key_columns(Oid relid, Constraint *constraint)
{
	List *names = NIL;
	Oid index;
	HeapTuple tuple;

	if (constraint->indexname == NULL)
		return constraint->keys;
	index = get_relname_relid(constraint->indexname, get_rel_namespace(relid));
	if (!OidIsValid(index))
		return NIL; /* PostgreSQL's own error follows */
	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
	if (!HeapTupleIsValid(tuple))
		return NIL;
	for (int k = 0; k < ((Form_pg_index) GETSTRUCT(tuple))->indnkeyatts; k++)
	{
		char *name = get_attname(relid, ((Form_pg_index) GETSTRUCT(tuple))->indkey.values[k], true);

		if (name != NULL)
			names = lappend(names, makeString(name));
	}
	ReleaseSysCache(tuple);
	return names;
}

/*
 * column_fates returns what the statement's subcommands leave of the
 * columns of relid they name (ColumnFate *): added, dropped, made NOT
 * NULL, their default taken away.  A column added IF NOT EXISTS that
 * exists, or dropped IF EXISTS that does not, is skipped, as PostgreSQL
 * skips it.
 */
static List *
column_fates(Oid relid, AlterTableStmt *alter)
{
	List *fates = NIL;
	ListCell *lc;

	foreach (lc, alter->cmds)
	{
		AlterTableCmd *command = lfirst(lc);
		ColumnDef *def = (ColumnDef *) command->def;
		ColumnFate *fate;
		ListCell *key;

		switch (command->subtype)
		{
			case AT_AddColumn:
				if (def == NULL || (command->missing_ok && fate_of(&fates, relid, def->colname)))
					break;
				fate = palloc0(sizeof(ColumnFate));
				fate->name = def->colname;
				fate->type = column_type(def);
				fate->not_null = is_not_null(def);
				fate->has_default = has_default(def);
				fate->touched = fate->not_null;
				fates = lappend(fates, fate);
				break;
			case AT_DropColumn:
				fate = fate_of(&fates, relid, command->name);
				if (fate != NULL)
					fate->dropped = true;
				break;
			case AT_SetNotNull:
				make_not_null(fate_of(&fates, relid, command->name));
				break;
			case AT_DropNotNull:
				fate = fate_of(&fates, relid, command->name);
				if (fate != NULL)
					fate->not_null = type_not_null(fate->type);
				break;
			case AT_ColumnDefault:
				fate = fate_of(&fates, relid, command->name);
				if (command->def == NULL || is_null_constant(command->def))
					lose_default(fate);
				else if (fate != NULL)
					fate->has_default = true;
				break;
			case AT_AddIdentity:
				fate = fate_of(&fates, relid, command->name);
				if (fate != NULL)
					fate->has_default = true;
				make_not_null(fate);
				break;
			case AT_DropIdentity:
			case AT_DropExpression:
				lose_default(fate_of(&fates, relid, command->name));
				break;
			case AT_AlterColumnType:
				fate = fate_of(&fates, relid, command->name);
				if (fate != NULL && def != NULL && def->typeName != NULL)
				{
					fate->type = LookupTypeNameOid(NULL, def->typeName, true);
					if (type_not_null(fate->type))
						make_not_null(fate);
				}
				break;
			case AT_AddConstraint:
				if (command->def == NULL || !IsA(command->def, Constraint))
					break;
				if (((Constraint *) command->def)->contype != CONSTR_PRIMARY &&
					((Constraint *) command->def)->contype != CONSTR_NOTNULL)
					break;
				foreach (key, key_columns(relid, (Constraint *) command->def))
					make_not_null(fate_of(&fates, relid, strVal(lfirst(key))));
				break;
			default:
				break;
		}
	}
	return fates;
}

/*
 * staged_type says into *type and *typmod the type sink stages its column
 * staged (an index of its layout) in: its foreign table's, with the
 * modifier, or the recorded one when the foreign table is gone.
 */
static void
staged_type(const SinkInfo *sink, int staged, Oid *type, int32 *typmod)
{
	*type = sink->column_types[staged];
	*typmod = -1;
	if (OidIsValid(sink->foreign_table))
	{
		AttrNumber in_foreign = get_attnum(sink->foreign_table, sink->column_names[staged]);
		Oid collation;

		if (in_foreign != InvalidAttrNumber)
			get_atttypetypmodcoll(sink->foreign_table, in_foreign, type, typmod, &collation);
	}
}

/*
 * bare_column tells whether a USING expression is the column itself, or
 * a plain cast of it to type (typmod): what ALTER COLUMN TYPE does
 * without USING, for the casts column_follow_keeps_values allows.
 */
static bool
bare_column(Node *expression, const char *name, Oid type, int32 typmod)
{
	if (expression == NULL)
		return true;
	if (IsA(expression, TypeCast))
	{
		TypeCast *cast = (TypeCast *) expression;
		Oid cast_type;
		int32 cast_typmod;

		typenameTypeIdAndMod(NULL, cast->typeName, &cast_type, &cast_typmod);
		if (cast_type != type || cast_typmod != typmod)
			return false;
		expression = cast->arg;
	}
	return IsA(expression, ColumnRef) && IsA(llast(((ColumnRef *) expression)->fields), String) &&
		   strcmp(strVal(llast(((ColumnRef *) expression)->fields)), name) == 0;
}

/*
 * refuse_type_change refuses ALTER COLUMN name TYPE def->typeName when a
 * sink stages the column in a type whose values the new one may not keep,
 * or when USING converts the table's rows otherwise than a load would
 * convert the staged ones.
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
		Oid from_type;
		int32 from_typmod;

		if (staged < 0)
			continue;
		staged_type(sink, staged, &from_type, &from_typmod);
		if (!bare_column(def->raw_default, name, type, typmod))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot change the type of column \"%s\" of table \"%s\" with USING: "
							"sink \"%s\" stages the column",
							name, get_rel_name(relid), sink->name),
					 errdetail("USING converts the rows in the table; a load casts the rows sink "
							   "\"%s\" holds staged by the type's own cast, and they would end "
							   "otherwise.",
							   sink->name),
					 errhint("Change the type without USING, or commit what is staged, drop the "
							 "sink, change the column and create the sink again.")));
		if (column_follow_keeps_values(from_type, from_typmod, type, typmod))
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("cannot change the type of column \"%s\" of table \"%s\" to %s", name,
						get_rel_name(relid), format_type_with_typemod(type, typmod)),
				 errdetail("Sink \"%s\" stages the column as %s; its loads cast a staged column "
						   "only by a cast that keeps every value exactly, cannot fail and reads "
						   "no setting, and to a domain only without constraints.",
						   sink->name, format_type_with_typemod(from_type, from_typmod)),
				 errhint("Widen it instead (int2 to int4 to int8, float4 to float8, a longer "
						 "varchar, a numeric with more digits), or commit what is staged, drop "
						 "the sink, change the column and create the sink again.")));
	}
}

/* column_exists tells whether relid has a column attnum, not dropped. */
static bool
column_exists(Oid relid, AttrNumber attnum)
{
	HeapTuple tuple;
	bool exists;

	if (attnum == InvalidAttrNumber)
		return false;
	tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attnum));
	if (!HeapTupleIsValid(tuple))
		return false;
	exists = !((Form_pg_attribute) GETSTRUCT(tuple))->attisdropped;
	ReleaseSysCache(tuple);
	return exists;
}

/* is_key tells whether name is one of an upsert sink's primary-key columns. */
static bool
is_key(const SinkInfo *sink, const char *name)
{
	ListCell *lc;

	foreach (lc, sink->key_columns)
		if (strcmp(lfirst(lc), name) == 0)
			return true;
	return false;
}

/*
 * refuse_drops refuses the drops among fates that a sink of relid could not
 * follow: a primary-key column of an upsert sink, and the last column a
 * sink loads.
 */
static void
refuse_drops(Oid relid, List *sinks, List *fates)
{
	ListCell *lc;

	foreach (lc, sinks)
	{
		SinkInfo *sink = lfirst(lc);
		int loaded = 0;
		int left = 0;
		const char *last = NULL;

		for (int i = 0; i < sink->column_count; i++)
		{
			AttrNumber attnum = sink->target_attnums != NULL ? sink->target_attnums[i] : 0;
			bool dropped = false;
			ListCell *lf;

			if ((sink->row_kind_column != NULL &&
				 strcmp(sink->column_names[i], sink->row_kind_column) == 0) ||
				!column_exists(relid, attnum))
				continue;
			loaded++;
			foreach (lf, fates)
			{
				ColumnFate *fate = lfirst(lf);

				if (fate->dropped && fate->attnum == attnum)
				{
					dropped = true;
					last = fate->name;
				}
			}
			left += dropped ? 0 : 1;
			if (dropped && SINK_IS_UPSERT(sink) && is_key(sink, sink->column_names[i]))
				ereport(
					ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("cannot drop column \"%s\" of table \"%s\": upsert sink \"%s\" keys "
							"its changes by it",
							last, get_rel_name(relid), sink->name),
					 errdetail("Upsert sink \"%s\" applies its staged changes by the primary key "
							   "it was created with.",
							   sink->name),
					 errhint("Commit what is staged and drop the sink with "
							 "paimon_sink.drop_sink() first, then drop the column.")));
		}
		if (loaded > 0 && left == 0)
			ereport(ERROR,
					(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
					 errmsg("cannot drop column \"%s\" of table \"%s\": it is the last column "
							"sink \"%s\" loads",
							last, get_rel_name(relid), sink->name),
					 errdetail("A sink loads its staged rows into the columns it stages; with "
							   "none of them left, no row of sink \"%s\" could load.",
							   sink->name),
					 errhint("Commit what is staged and drop the sink with "
							 "paimon_sink.drop_sink() first, then drop the column.")));
	}
}

/*
 * refuse_not_null refuses a column of relid left NOT NULL without a value
 * for the rows of a sink of target (relid itself, or a partitioned table
 * relid is a partition of: the load inserts into target, whose default
 * the partition's column takes) that the sink does not stage: neither its
 * staged rows nor its writes could fill it.  fates are relid's.
 */
static void
refuse_not_null(Oid relid, Oid target, List *sinks, List *fates)
{
	ListCell *lf;
	ListCell *lc;

	foreach (lf, fates)
	{
		ColumnFate *fate = lfirst(lf);
		List *scratch = NIL;
		ColumnFate *loaded = target == relid ? fate : fate_of(&scratch, target, fate->name);

		if (!fate->touched || fate->dropped || !fate->not_null || loaded == NULL ||
			loaded->has_default)
			continue;
		foreach (lc, sinks)
		{
			SinkInfo *sink = lfirst(lc);

			if (loaded->attnum != InvalidAttrNumber &&
				column_follow_staged_index(sink, loaded->attnum) >= 0)
				continue;
			if (fate->attnum == InvalidAttrNumber)
				ereport(ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("cannot add column \"%s\" NOT NULL without a default to table "
								"\"%s\": sink \"%s\" writes into it",
								fate->name, get_rel_name(relid), sink->name),
						 errdetail("Neither the rows sink \"%s\" holds staged nor its later "
								   "writes have a value for the new column.",
								   sink->name),
						 errhint("Add it with a DEFAULT.")));
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot leave column \"%s\" of table \"%s\" NOT NULL without a "
							"default: sink \"%s\" does not write it",
							fate->name, get_rel_name(relid), sink->name),
					 errdetail("Neither the rows sink \"%s\" holds staged nor its later writes "
							   "have a value for the column.",
							   sink->name),
					 errhint("Give the column a DEFAULT first, or leave it nullable.")));
		}
	}
}

/*
 * attached_fates returns the NOT NULL columns of the table an ATTACH
 * PARTITION attaches (ColumnFate *, as made NOT NULL by the statement), and
 * says the table in *attached; NIL when it does not exist.
 */
static List *
attached_fates(AlterTableCmd *command, Oid *attached)
{
	List *fates = NIL;
	HeapTuple class;
	AttrNumber count;

	/* no lock: ATTACH takes its own on the table, and a weaker one first would be upgraded */
	*attached = RangeVarGetRelid(((PartitionCmd *) command->def)->name, NoLock, true);
	if (!OidIsValid(*attached))
		return NIL; /* PostgreSQL's own error follows */
	class = SearchSysCache1(RELOID, ObjectIdGetDatum(*attached));
	if (!HeapTupleIsValid(class))
		return NIL;
	count = ((Form_pg_class) GETSTRUCT(class))->relnatts;
	ReleaseSysCache(class);
	for (AttrNumber attnum = 1; attnum <= count; attnum++)
	{
		HeapTuple tuple =
			SearchSysCache2(ATTNUM, ObjectIdGetDatum(*attached), Int16GetDatum(attnum));
		Form_pg_attribute attr;
		ColumnFate *fate;

		if (!HeapTupleIsValid(tuple))
			continue;
		attr = (Form_pg_attribute) GETSTRUCT(tuple);
		if (!attr->attisdropped && attr->attnotnull)
		{
			fate = palloc0(sizeof(ColumnFate));
			fate->name = pstrdup(NameStr(attr->attname));
			fate->attnum = attr->attnum;
			fate->type = attr->atttypid;
			fate->not_null = true;
			fate->touched = true;
			fates = lappend(fates, fate);
		}
		ReleaseSysCache(tuple);
	}
	return fates;
}

/*
 * refuse_for_targets refuses what the statement on relid (the relation it
 * names) leaves NOT NULL without a value for the rows of a sink of a
 * partitioned table above relid, or, for a partition it attaches, of relid
 * or a table above it.
 */
static void
refuse_for_targets(Oid relid, AlterTableStmt *alter)
{
	List *targets = list_make1_oid(relid);
	List *fates = NIL;
	ListCell *lc;
	ListCell *lt;

	if (get_rel_relispartition(relid))
	{
		targets = list_concat(targets, get_partition_ancestors(relid));
		fates = column_fates(relid, alter);
		for_each_from(lt, targets, 1)
			refuse_not_null(relid, lfirst_oid(lt), metadata_sinks_of_target(lfirst_oid(lt)), fates);
	}
	foreach (lc, alter->cmds)
	{
		AlterTableCmd *command = lfirst(lc);
		Oid attached;

		if (command->subtype != AT_AttachPartition || command->def == NULL ||
			!IsA(command->def, PartitionCmd))
			continue;
		fates = attached_fates(command, &attached);
		foreach (lt, targets)
			refuse_not_null(attached, lfirst_oid(lt), metadata_sinks_of_target(lfirst_oid(lt)),
							fates);
	}
}

/*
 * refuse_without_binary_io refuses (ERRCODE_FEATURE_NOT_SUPPORTED) a column
 * added to relid (name NULL), or column name retyped, of a type without
 * binary send or receive: a load's binary COPY needs them for every column
 * of the table, so no checkpoint of sink could commit (as create_sink).
 */
static void
refuse_without_binary_io(Oid relid, SinkInfo *sink, ColumnDef *def, const char *name)
{
	Oid type = column_type(def);
	Oid missing = OidIsValid(type) ? sink_ddl_type_without_binary_io(type) : InvalidOid;

	if (OidIsValid(missing))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot %s column \"%s\" of table \"%s\" type %s: sink \"%s\" loads "
						"into it",
						name == NULL ? "give new" : "change", name == NULL ? def->colname : name,
						get_rel_name(relid), format_type_be(type), sink->name),
				 errdetail("A load copies rows into the table in COPY's binary format, which "
						   "needs a binary send and receive function for each of its columns, "
						   "and type %s has none.",
						   format_type_be(missing)),
				 errhint("Give the column a type with binary input and output, or drop the sink "
						 "first.")));
}

/*
 * refuse_on refuses the subcommands of alter that a sink of relid (the
 * relation named, or a partition or child the statement recurses to)
 * could not follow.
 */
static void
refuse_on(Oid relid, AlterTableStmt *alter)
{
	List *sinks;
	List *fates;
	ListCell *lc;

	staged_types_refuse_layout_change(relid, alter);
	sinks = metadata_sinks_of_target(relid);
	if (sinks == NIL)
		return;
	foreach (lc, alter->cmds)
	{
		AlterTableCmd *command = lfirst(lc);

		if (command->subtype == AT_AlterColumnType)
			refuse_type_change(relid, sinks, command->name, (ColumnDef *) command->def);
		if ((command->subtype == AT_AlterColumnType || command->subtype == AT_AddColumn) &&
			command->def != NULL && IsA(command->def, ColumnDef))
			refuse_without_binary_io(relid, linitial(sinks), (ColumnDef *) command->def,
									 command->subtype == AT_AddColumn ? NULL : command->name);
	}
	fates = column_fates(relid, alter);
	refuse_drops(relid, sinks, fates);
	refuse_not_null(relid, relid, sinks, fates);
}

/* relevant tells whether a subcommand is one a sink may not follow. */
static bool
relevant(AlterTableType subtype)
{
	switch (subtype)
	{
		case AT_AddColumn:
		case AT_DropColumn:
		case AT_AlterColumnType:
		case AT_SetNotNull:
		case AT_ColumnDefault:
		case AT_DropIdentity:
		case AT_DropExpression:
		case AT_AddIdentity:
		case AT_AddConstraint:
		case AT_AttachPartition:
			return true;
		default:
			return false;
	}
}

/*
 * schema_change_refuse refuses, before PostgreSQL runs it, an ALTER TABLE
 * of a sink's target that the sink could not follow: a column's type
 * changed to one its staged values may not keep
 * (ERRCODE_DATATYPE_MISMATCH) or by USING (ERRCODE_FEATURE_NOT_SUPPORTED),
 * a primary-key column of an upsert sink or the last column a sink loads
 * dropped (ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST), a column a sink does not
 * write left NOT NULL without a default, in its target or in a partition
 * of it (ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE); and an ALTER TYPE (or
 * ALTER TABLE) changing the attributes of a composite type, or ALTER TYPE
 * renaming an enum's value, whose values a sink stages
 * (ERRCODE_FEATURE_NOT_SUPPORTED).  The relation is locked, and its
 * owner checked, as ALTER TABLE does it (a role that may not alter it gets
 * PostgreSQL's ERRCODE_INSUFFICIENT_PRIVILEGE); ALTER TABLE IF EXISTS of
 * none passes.  Each error names the sink and the way forward; a sink of a
 * partition or child the statement recurses to counts as one of the table
 * named.  Other statements, those of an extension's script, and all while
 * the extension's catalog is not the library's version, pass.
 */
void
schema_change_refuse(Node *statement)
{
	AlterTableStmt *alter;
	LOCKMODE lockmode;
	Oid relid;
	List *relids;
	ListCell *lc;
	bool any = false;

	if (IsA(statement, AlterEnumStmt) && extension_ready())
		staged_types_refuse_enum_rename((AlterEnumStmt *) statement);
	if (!IsA(statement, AlterTableStmt))
		return;
	alter = (AlterTableStmt *) statement;
	if (alter->relation == NULL ||
		(alter->objtype != OBJECT_TABLE && alter->objtype != OBJECT_FOREIGN_TABLE &&
		 alter->objtype != OBJECT_TYPE))
		return;
	foreach (lc, alter->cmds)
		any |= relevant(((AlterTableCmd *) lfirst(lc))->subtype);
	if (!any || !extension_ready())
		return;
	/* as ProcessUtilitySlow does: PostgreSQL's ownership check, and the lock ALTER TABLE takes */
	lockmode = AlterTableGetLockLevel(alter->cmds);
	relid = AlterTableLookupRelation(alter, lockmode);
	if (!OidIsValid(relid))
		return; /* IF EXISTS of none: PostgreSQL's notice follows */
	/* the statement recurses to partitions and children unless ONLY: so do the checks */
	relids =
		alter->relation->inh ? find_all_inheritors(relid, lockmode, NULL) : list_make1_oid(relid);
	foreach (lc, relids)
		refuse_on(lfirst_oid(lc), alter);
	refuse_for_targets(relid, alter);
}

/*
 * schema_change_follow_defaults keeps the defaults of sinks' foreign tables
 * in step after an ALTER TABLE that set or dropped the default of columns
 * of a sink's target (or of a table it recurses to): a row written through
 * the sink without such a column then stages the target's new default, as
 * an INSERT into the target would take it.  Called after PostgreSQL ran the
 * statement; each foreign table is altered as its sink's owner
 * (foreign_table_sync_defaults).  Other statements, and all while the
 * extension's catalog is not the library's version, pass.  Raises what
 * ALTER FOREIGN TABLE raises.
 */
void
schema_change_follow_defaults(Node *statement)
{
	AlterTableStmt *alter;
	List *columns = NIL;
	Oid relid;
	List *relids;
	ListCell *lc;

	if (!IsA(statement, AlterTableStmt))
		return;
	alter = (AlterTableStmt *) statement;
	if (alter->relation == NULL || alter->objtype != OBJECT_TABLE)
		return;
	foreach (lc, alter->cmds)
	{
		AlterTableCmd *command = lfirst(lc);

		if (command->subtype == AT_ColumnDefault && command->name != NULL)
			columns = lappend(columns, command->name);
	}
	if (columns == NIL || !extension_ready())
		return;
	/* the statement holds its lock on the table and those it recursed to */
	relid = RangeVarGetRelid(alter->relation, NoLock, true);
	if (!OidIsValid(relid))
		return;
	relids =
		alter->relation->inh ? find_all_inheritors(relid, NoLock, NULL) : list_make1_oid(relid);
	foreach (lc, relids)
	{
		ListCell *sink_cell;

		foreach (sink_cell, metadata_sinks_of_target(lfirst_oid(lc)))
			foreign_table_sync_defaults(lfirst(sink_cell),
										PointerGetDatum(strlist_to_textarray(columns)));
	}
}
