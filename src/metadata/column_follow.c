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
 * load warns, naming it); a type changed since is cast when the cast keeps
 * every staged value exactly, cannot fail and reads no setting
 * (column_follow_keeps_values); anything else fails the commit with
 * ERRCODE_DATATYPE_MISMATCH naming the column.  A column added since is
 * not staged: the load fills it as COPY does, by its default.  The
 * schema-change hook (api/schema_change.c) refuses the changes that could
 * not be followed as they are made, with the same rule.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_type.h"
#include "datatype/timestamp.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

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
 * A cast between two built-in types that keeps every value of its source
 * exactly, cannot fail and reads no setting: int2 to int4 to int8 and to
 * a float wide enough for all of its values, float4 to float8, an integer
 * to a numeric with enough digits before the point (digits), the string
 * types into one another (a length that does not shrink: lengths_hold),
 * cidr to inet.  Each is a cast PostgreSQL marks implicit, so that the
 * load (load_layout.c) builds it as ALTER TABLE converted the table's
 * rows.  timestamp or date to timestamptz is not one: its result depends
 * on TimeZone.
 */
typedef struct ExactCast
{
	Oid from;
	Oid to;
	int digits;		   /* to a numeric: the digits it needs before the point */
	bool lengths_hold; /* between string types: the target's length is checked */
} ExactCast;

static const ExactCast exact_casts[] = {
	{INT2OID, INT4OID, 0, false},	  {INT2OID, INT8OID, 0, false},
	{INT4OID, INT8OID, 0, false},	  {INT2OID, FLOAT4OID, 0, false},
	{INT2OID, FLOAT8OID, 0, false},	  {INT4OID, FLOAT8OID, 0, false},
	{FLOAT4OID, FLOAT8OID, 0, false}, {INT2OID, NUMERICOID, 5, false},
	{INT4OID, NUMERICOID, 10, false}, {INT8OID, NUMERICOID, 19, false},
	{VARCHAROID, TEXTOID, 0, true},	  {BPCHAROID, TEXTOID, 0, true},
	{TEXTOID, VARCHAROID, 0, true},	  {BPCHAROID, VARCHAROID, 0, true},
	{VARCHAROID, BPCHAROID, 0, true}, {CIDROID, INETOID, 0, false},
};

/*
 * string_length_holds tells whether a string of type modifier from_typmod
 * (varchar(n) or char(n); -1 for none) always fits the modifier to_typmod
 * of a string type.
 */
static bool
string_length_holds(int32 from_typmod, int32 to_typmod)
{
	return to_typmod < 0 || (from_typmod >= 0 && to_typmod >= from_typmod);
}

/*
 * fractional_digits returns the fractional digits of seconds a time type's
 * modifier keeps (MAX_TIMESTAMP_PRECISION without one); for an interval, -1
 * when the modifier restricts its fields.
 */
static int
fractional_digits(Oid type, int32 typmod)
{
	if (typmod < 0)
		return MAX_TIMESTAMP_PRECISION;
	if (type != INTERVALOID)
		return typmod;
	if (INTERVAL_RANGE(typmod) != INTERVAL_FULL_RANGE)
		return -1;
	return INTERVAL_PRECISION(typmod) == INTERVAL_FULL_PRECISION ? MAX_INTERVAL_PRECISION
																 : INTERVAL_PRECISION(typmod);
}

/*
 * typmod_widens tells whether a value of type (not a domain) with modifier
 * from_typmod keeps its value under modifier to_typmod: a longer string,
 * a numeric with at least as many digits before and after the point, a
 * time type keeping at least as many fractional digits, or no modifier
 * at all; any other type only when the modifiers are equal.
 */
static bool
typmod_widens(Oid type, int32 from_typmod, int32 to_typmod)
{
	int from_precision;
	int from_scale;
	int to_precision;
	int to_scale;

	if (from_typmod == to_typmod)
		return true;
	switch (type)
	{
		case VARCHAROID:
		case BPCHAROID:
		case VARBITOID:
			return string_length_holds(from_typmod, to_typmod);
		case NUMERICOID:
			if (to_typmod < 0)
				return true;
			if (from_typmod < 0)
				return false;
			numeric_typmod_parts(from_typmod, &from_precision, &from_scale);
			numeric_typmod_parts(to_typmod, &to_precision, &to_scale);
			return to_scale >= from_scale && to_precision - to_scale >= from_precision - from_scale;
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case TIMEOID:
		case TIMETZOID:
		case INTERVALOID:
			if (to_typmod < 0)
				return true;
			return fractional_digits(type, to_typmod) >= 0 &&
				   fractional_digits(type, to_typmod) >= fractional_digits(type, from_typmod);
		default:
			return false;
	}
}

/*
 * exact_cast_keeps tells whether the built-in cast from from_type to
 * to_type (neither a domain) keeps every value with the modifiers given.
 */
static bool
exact_cast_keeps(Oid from_type, int32 from_typmod, Oid to_type, int32 to_typmod)
{
	for (int i = 0; i < lengthof(exact_casts); i++)
	{
		const ExactCast *cast = &exact_casts[i];
		int precision;
		int scale;

		if (cast->from != from_type || cast->to != to_type)
			continue;
		if (cast->lengths_hold)
			return string_length_holds(from_typmod, to_typmod);
		if (to_typmod < 0)
			return true;
		if (cast->digits == 0)
			return false;
		numeric_typmod_parts(to_typmod, &precision, &scale);
		return scale >= 0 && precision - scale >= cast->digits;
	}
	return false;
}

/*
 * domain_constrained tells whether the domain type, or a domain it is
 * over, has a constraint: NOT NULL or a CHECK (the catalog read directly,
 * the same on every major).
 */
static bool
domain_constrained(Oid type)
{
	while (get_typtype(type) == TYPTYPE_DOMAIN)
	{
		HeapTuple tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
		Relation constraints;
		ScanKeyData key;
		SysScanDesc scan;
		bool found;
		Oid base;

		if (!HeapTupleIsValid(tuple))
			return true;
		found = ((Form_pg_type) GETSTRUCT(tuple))->typnotnull;
		base = ((Form_pg_type) GETSTRUCT(tuple))->typbasetype;
		ReleaseSysCache(tuple);
		constraints = table_open(ConstraintRelationId, AccessShareLock);
		ScanKeyInit(&key, Anum_pg_constraint_contypid, BTEqualStrategyNumber, F_OIDEQ,
					ObjectIdGetDatum(type));
		scan = systable_beginscan(constraints, ConstraintTypidIndexId, true, NULL, 1, &key);
		found |= HeapTupleIsValid(systable_getnext(scan));
		systable_endscan(scan);
		table_close(constraints, AccessShareLock);
		if (found)
			return true;
		type = base;
	}
	return false;
}

/*
 * column_follow_keeps_values tells whether every value of type from_type
 * (type modifier from_typmod, -1 for none) keeps its value when cast to
 * to_type (to_typmod), by a cast that cannot fail and whose result reads no
 * setting: the same type and modifier; a modifier that only widens (a
 * longer varchar, char or varbit, a numeric with at least as many digits
 * before and after the point, a time type keeping as many fractional
 * digits of seconds) or none; one of the exact casts between built-in
 * types (exact_casts: int2 to int4 to int8, an integer to a float wide
 * enough or to a numeric with enough digits before the point, float4 to
 * float8, varchar and char to text, varchar and char among themselves with
 * no shorter length, cidr to inet); an array whose elements keep their
 * values so.  A source domain counts as its base type; a target domain
 * only without constraints (NOT NULL or CHECK), as its base type.  The
 * one rule of both the schema-change hook (schema_change.c) and the load
 * (column_follow), so that they cannot disagree.  Raises nothing.
 */
bool
column_follow_keeps_values(Oid from_type, int32 from_typmod, Oid to_type, int32 to_typmod)
{
	Oid from_element;
	Oid to_element;

	check_stack_depth();
	if (from_type == to_type && from_typmod == to_typmod)
		return true;
	if (get_typtype(to_type) == TYPTYPE_DOMAIN)
	{
		if (domain_constrained(to_type))
			return false;
		to_type = getBaseTypeAndTypmod(to_type, &to_typmod);
	}
	if (get_typtype(from_type) == TYPTYPE_DOMAIN)
		from_type = getBaseTypeAndTypmod(from_type, &from_typmod);
	/* an array's modifier is its elements' */
	from_element = get_element_type(from_type);
	to_element = get_element_type(to_type);
	if (OidIsValid(from_element) && OidIsValid(to_element))
		return column_follow_keeps_values(from_element, from_typmod, to_element, to_typmod);
	if (from_type == to_type)
		return typmod_widens(from_type, from_typmod, to_typmod);
	return exact_cast_keeps(from_type, from_typmod, to_type, to_typmod);
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
	else if (column_follow_keeps_values(followed->staged_type, followed->staged_typmod,
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
			 errdetail("A load casts a staged column only by a cast that keeps every value of "
					   "its type exactly; nothing of the checkpoint was applied; it stays "
					   "pending."),
			 errhint("Change the column back to %s or wider, then commit again.",
					 format_type_with_typemod(followed->staged_type, followed->staged_typmod))));
}
