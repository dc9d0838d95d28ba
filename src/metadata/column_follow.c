/*-------------------------------------------------------------------------
 *
 * column_follow.c
 *	  How a sink's staged columns follow its target's schema changes.
 *
 * Rows are staged in the layout of the sink's foreign table, made when the
 * sink was created (alter_sink() adds columns at its end: column_count is
 * the newest layout's); the target may change while rows wait.  Each staged
 * column records the attribute number of the target's column it loads
 * into (sink_definition.target_attnums), so a load follows a column
 * renamed since by that number; a column dropped since is skipped (the
 * load warns, naming it); a type widened since is cast (the casts
 * PostgreSQL marks implicit, and a longer varchar or a numeric with more
 * digits on both sides of the point); anything else fails the commit with
 * ERRCODE_DATATYPE_MISMATCH naming the column.  A column added since is
 * not staged: the load fills it as COPY does, by its default.  The
 * utility hook refuses the changes that could not be followed as they are
 * made (utility_hook.c), with column_follow_widens.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_type.h"
#include "parser/parse_coerce.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "metadata/column_follow.h"

/* numeric's type modifier: precision and scale (negative scales allowed since PostgreSQL 15) */
static void
numeric_typmod_parts(int32 typmod, int *precision, int *scale)
{
	int32 bits = typmod - VARHDRSZ;

	*precision = (bits >> 16) & 0xffff;
	*scale = ((bits & 0x7ff) ^ 1024) - 1024;
}

/*
 * column_follow_widens tells whether a value of type from_type (with
 * type modifier from_typmod, -1 for none) always fits type to_type
 * (to_typmod) once cast: the same type and modifier; a modifier that only
 * widens (varchar(n) to varchar(m >= n), numeric(p, s) to a numeric with
 * at least as many digits before and after the point) or none at all; or
 * a cast PostgreSQL marks implicit (int2 to int4 to int8, float4 to
 * float8, varchar to text) to a type without a modifier.  Raises nothing.
 */
bool
column_follow_widens(Oid from_type, int32 from_typmod, Oid to_type, int32 to_typmod)
{
	Oid function;

	if (from_type == to_type && from_typmod == to_typmod)
		return true;
	if (to_typmod >= 0)
	{
		int from_precision;
		int from_scale;
		int to_precision;
		int to_scale;

		/* a modifier that only widens, on the same type */
		if (from_type != to_type || from_typmod < 0)
			return false;
		switch (getBaseType(to_type))
		{
			case VARCHAROID:
			case VARBITOID:
				return to_typmod >= from_typmod;
			case NUMERICOID:
				numeric_typmod_parts(from_typmod, &from_precision, &from_scale);
				numeric_typmod_parts(to_typmod, &to_precision, &to_scale);
				return to_scale >= from_scale &&
					   to_precision - to_scale >= from_precision - from_scale;
			default:
				return false;
		}
	}
	/* no modifier on the target: the same type, or an implicit cast */
	if (from_type == to_type)
		return true;
	return find_coercion_pathway(to_type, from_type, COERCION_IMPLICIT, &function) !=
		   COERCION_PATH_NONE;
}

/*
 * column_follow_staged_index returns the index in the sink's staged
 * layout of the column that loads into target attribute target_attnum,
 * or -1 when none does.  Raises nothing.
 */
int
column_follow_staged_index(const SinkInfo *sink, AttrNumber target_attnum)
{
	for (int i = 0; i < sink->column_count; i++)
		if (sink->target_attnums != NULL && sink->target_attnums[i] == target_attnum &&
			target_attnum != InvalidAttrNumber)
			return i;
	return -1;
}

/*
 * column_follow says into *followed how the sink's staged column number
 * column (from 0, in the foreign table's order) loads into the relation
 * target (the sink's target, or a partition of it) as it is now: skipped
 * (the row kind, or dropped since), as staged, or cast.  The staged
 * type modifier is the foreign table's.  Raises ERRCODE_UNDEFINED_COLUMN
 * for a staged column that never had a target column,
 * ERRCODE_DATATYPE_MISMATCH for a type changed in a way that cannot be
 * followed, ERRCODE_INVALID_COLUMN_REFERENCE for a column now generated.
 */
void
column_follow(const SinkInfo *sink, Oid target, int column, FollowedColumn *followed)
{
	const char *name = sink->column_names[column];
	AttrNumber attnum = sink->target_attnums != NULL ? sink->target_attnums[column] : 0;
	AttrNumber staged_attnum =
		OidIsValid(sink->foreign_table) ? get_attnum(sink->foreign_table, name) : 0;
	HeapTuple tuple;
	Form_pg_attribute attr;

	memset(followed, 0, sizeof(*followed));
	followed->staged_name = name;
	/* with its foreign table gone (restore_foreign_table), the layout's own order */
	followed->staged_attnum = staged_attnum != InvalidAttrNumber ? staged_attnum : column + 1;
	followed->staged_type = sink->column_types[column];
	followed->staged_typmod = -1;
	if (staged_attnum != InvalidAttrNumber)
	{
		Oid collation;

		get_atttypetypmodcoll(sink->foreign_table, staged_attnum, &followed->staged_type,
							  &followed->staged_typmod, &collation);
	}
	if (sink->row_kind_column != NULL && strcmp(name, sink->row_kind_column) == 0)
	{
		followed->how = FOLLOW_NOT_LOADED;
		return;
	}
	/* a partition may number its columns otherwise: follow the sink's target, then by name */
	if (target != sink->target && attnum != InvalidAttrNumber)
	{
		char *now = get_attname(sink->target, attnum, true);

		attnum = now != NULL ? get_attnum(target, now) : InvalidAttrNumber;
		if (now == NULL)
		{
			followed->how = FOLLOW_DROPPED;
			return;
		}
	}
	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of sink \"%s\" is missing from target table \"%s\"", name,
						sink->name, get_rel_name(target)),
				 errdetail("Nothing of the checkpoint was applied; it stays pending."),
				 errhint("Restore the column, or commit what is staged and re-create the sink.")));
	tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(target), Int16GetDatum(attnum));
	if (!HeapTupleIsValid(tuple))
	{
		followed->how = FOLLOW_DROPPED;
		return;
	}
	attr = (Form_pg_attribute) GETSTRUCT(tuple);
	if (attr->attisdropped)
	{
		ReleaseSysCache(tuple);
		followed->how = FOLLOW_DROPPED;
		return;
	}
	followed->target_attnum = attnum;
	followed->target_name = pstrdup(NameStr(attr->attname));
	followed->target_type = attr->atttypid;
	followed->target_typmod = attr->atttypmod;
	followed->target_collation = attr->attcollation;
	/* create_sink stages no generated column: this one became one since */
	if (attr->attgenerated != '\0')
	{
		ReleaseSysCache(tuple);
		ereport(
			ERROR,
			(errcode(ERRCODE_INVALID_COLUMN_REFERENCE),
			 errmsg("column \"%s\" of target table \"%s\" is a generated column, but sink \"%s\" "
					"stages it",
					followed->target_name, get_rel_name(target), sink->name),
			 errdetail("A commit loads the staged value, and a generated column takes none."),
			 errhint("Restore the column, or commit what is staged and re-create the sink.")));
	}
	ReleaseSysCache(tuple);
	if (followed->target_type == followed->staged_type &&
		followed->target_typmod == followed->staged_typmod)
		followed->how = FOLLOW_SAME;
	else if (column_follow_widens(followed->staged_type, followed->staged_typmod,
								  followed->target_type, followed->target_typmod))
		followed->how = FOLLOW_CAST;
	else
		ereport(
			ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("column \"%s\" of target table \"%s\" has type %s, but sink \"%s\" stages "
					"%s",
					followed->target_name, get_rel_name(target),
					format_type_with_typemod(followed->target_type, followed->target_typmod),
					sink->name,
					format_type_with_typemod(followed->staged_type, followed->staged_typmod)),
			 errdetail("A load casts a staged column only to a type that holds every value of "
					   "its own; nothing of the checkpoint was applied; it stays pending."),
			 errhint("Change the column back to %s or wider, then commit again.",
					 format_type_with_typemod(followed->staged_type, followed->staged_typmod))));
}
