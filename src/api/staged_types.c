/*-------------------------------------------------------------------------
 *
 * staged_types.c
 *	  The types whose values a sink stages: a change of their layout, or
 *	  of an enum's labels, is refused as it is made.
 *
 * A sink stages each value in the binary form of its foreign table's
 * column type: a composite value with the type's attributes of now, an
 * enum value by its label.  A load reads them back in the type as it is
 * at commit, so ALTER TYPE ... ADD, DROP or ALTER ATTRIBUTE (or ALTER
 * TABLE of a table whose row type it is) and ALTER TYPE ... RENAME VALUE
 * would leave staged values that read in neither layout.  The types a
 * sink stages are found through PostgreSQL's dependencies (pg_depend),
 * as find_composite_type_dependencies finds a type's uses: directly, or
 * through a domain, an array, a range or another composite type.  Called
 * by schema_change.c, on the relation it locked.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_depend.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_type.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "api/staged_types.h"
#include "metadata/metadata.h"

/* A column of a foreign table (a sink's, maybe) that holds values of a type. */
typedef struct StagedUse
{
	Oid foreign_table;
	AttrNumber attnum;
} StagedUse;

/*
 * collect_staged_uses appends to *uses the columns of foreign tables that
 * hold values of type, directly or through a domain, an array, a range or
 * a composite type (a table's row type among them), as PostgreSQL's
 * dependencies record them; *seen holds the types already followed.
 */
static void
collect_staged_uses(Oid type, List **seen, List **uses)
{
	Relation depend;
	ScanKeyData key[2];
	SysScanDesc scan;
	HeapTuple tuple;
	List *containers = NIL;
	ListCell *lc;

	check_stack_depth();
	if (!OidIsValid(type) || list_member_oid(*seen, type))
		return;
	*seen = lappend_oid(*seen, type);
	depend = table_open(DependRelationId, AccessShareLock);
	ScanKeyInit(&key[0], Anum_pg_depend_refclassid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(TypeRelationId));
	ScanKeyInit(&key[1], Anum_pg_depend_refobjid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(type));
	scan = systable_beginscan(depend, DependReferenceIndexId, true, NULL, 2, key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		Form_pg_depend found = (Form_pg_depend) GETSTRUCT(tuple);

		/* an array, domain or range of it */
		if (found->classid == TypeRelationId)
			containers = lappend_oid(containers, found->objid);
		/* a column: of a foreign table (a sink's, maybe), or of a relation with a row type */
		if (found->classid == RelationRelationId && found->objsubid > 0)
		{
			if (get_rel_relkind(found->objid) == RELKIND_FOREIGN_TABLE)
			{
				StagedUse *use = palloc(sizeof(StagedUse));

				use->foreign_table = found->objid;
				use->attnum = found->objsubid;
				*uses = lappend(*uses, use);
			}
			containers = lappend_oid(containers, get_rel_type_id(found->objid));
		}
	}
	systable_endscan(scan);
	table_close(depend, AccessShareLock);
	foreach (lc, containers)
		collect_staged_uses(lfirst_oid(lc), seen, uses);
}

/*
 * staging_sink returns the sink (its name) that stages values of type in
 * one of its columns, saying the column in *column; NULL when none does.
 */
static char *
staging_sink(Oid type, char **column)
{
	List *seen = NIL;
	List *uses = NIL;
	Datum *relids;
	List *sinks;
	ListCell *lc;
	int i = 0;

	collect_staged_uses(type, &seen, &uses);
	if (uses == NIL)
		return NULL;
	relids = palloc(sizeof(Datum) * list_length(uses));
	foreach (lc, uses)
		relids[i++] = ObjectIdGetDatum(((StagedUse *) lfirst(lc))->foreign_table);
	sinks = metadata_sink_ownership(
		PointerGetDatum(construct_array(relids, i, OIDOID, sizeof(Oid), true, TYPALIGN_INT)),
		(Datum) 0);
	if (sinks == NIL)
		return NULL;
	foreach (lc, uses)
	{
		StagedUse *use = lfirst(lc);

		if (use->foreign_table == ((SinkOwnership *) linitial(sinks))->foreign_table)
		{
			*column = get_attname(use->foreign_table, use->attnum, false);
			break;
		}
	}
	return ((SinkOwnership *) linitial(sinks))->name;
}

/*
 * staged_types_refuse_layout_change refuses a change of the columns of relid
 * (ADD, DROP, ALTER TYPE of an attribute of a composite type, or of a
 * column of a table, which changes its row type) when a sink stages values
 * of its row type: they are staged with the type's layout of now, and a
 * load reads them in its layout at commit.  Raises
 * ERRCODE_FEATURE_NOT_SUPPORTED naming the sink and its column.
 */
void
staged_types_refuse_layout_change(Oid relid, AlterTableStmt *alter)
{
	ListCell *lc;
	char *column = NULL;
	char *sink;

	foreach (lc, alter->cmds)
	{
		AlterTableType subtype = ((AlterTableCmd *) lfirst(lc))->subtype;

		if (subtype == AT_AddColumn || subtype == AT_DropColumn || subtype == AT_AlterColumnType)
			break;
	}
	if (lc == NULL || !OidIsValid(get_rel_type_id(relid)))
		return;
	sink = staging_sink(get_rel_type_id(relid), &column);
	if (sink == NULL)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot change the attributes of type %s: sink \"%s\" stages values of it",
					format_type_be(get_rel_type_id(relid)), sink),
			 errdetail("Column \"%s\" of sink \"%s\" stages values of the type in its layout of "
					   "now; a load reads them in the type's layout at commit.",
					   column, sink),
			 errhint("Commit what is staged and drop the sink with paimon_sink.drop_sink() "
					 "first, then change the type and create the sink again.")));
}

/*
 * staged_types_refuse_enum_rename refuses ALTER TYPE ... RENAME VALUE of an
 * enum whose values a sink stages: a staged value is its label, which
 * would name no value at commit.  Raises ERRCODE_FEATURE_NOT_SUPPORTED
 * naming the sink and its column; a role that does not own the type meets
 * PostgreSQL's own error.  Needs the extension at the library's version.
 */
void
staged_types_refuse_enum_rename(AlterEnumStmt *statement)
{
	Oid type;
	HeapTuple tuple;
	Oid owner;
	char *column = NULL;
	char *sink;

	if (statement->oldVal == NULL)
		return;
	type = LookupTypeNameOid(NULL, makeTypeNameFromNameList(statement->typeName), true);
	tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	if (!HeapTupleIsValid(tuple))
		return;
	owner = ((Form_pg_type) GETSTRUCT(tuple))->typowner;
	ReleaseSysCache(tuple);
	if (get_typtype(type) != TYPTYPE_ENUM || !has_privs_of_role(GetUserId(), owner))
		return;
	sink = staging_sink(type, &column);
	if (sink == NULL)
		return;
	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("cannot rename value \"%s\" of enum %s: sink \"%s\" stages values of it",
						   statement->oldVal, format_type_be(type), sink),
					errdetail("Column \"%s\" of sink \"%s\" stages each value by its label; a load "
							  "reads the label back at commit.",
							  column, sink),
					errhint("Commit what is staged and drop the sink with paimon_sink.drop_sink() "
							"first, then rename the value and create the sink again.")));
}
