/*-------------------------------------------------------------------------
 *
 * metadata_layout.c
 *	  A sink's recorded staged layout: the foreign table's columns and types
 *	  and, for each, the attribute number of the target's column it loads
 *	  into (column_follow.c follows a renamed column by it).
 *
 * Apart from metadata.c only for the line limit: its SQL on the extension's
 * tables, run through statement.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "metadata/metadata.h"
#include "metadata/statement.h"

/*
 * metadata_read_target_attnums reads a sink's target_attnums (row of a
 * statement selecting target_attnums and target_attnums_relid)
 * into info->target_attnums (allocated, zeroed, column_count long).  A
 * sink without them, or whose target is another relation than the one
 * they were read from (a dump restored: its dropped columns are gone, the
 * numbers moved), takes the attribute numbers of its columns' names in the
 * target as it is now.
 */
void
metadata_read_target_attnums(uint64 row, SinkInfo *info)
{
	bool isnull;
	Datum attnums = row_datum(row, "target_attnums", &isnull);
	bool no_relid;
	Datum relid = row_datum(row, "target_attnums_relid", &no_relid);
	Datum *values;
	int count;

	/* numbers read from another relation (a dump restored) do not hold: by name */
	if (isnull || no_relid || DatumGetObjectId(relid) != info->target)
	{
		for (int i = 0; i < info->column_count; i++)
			info->target_attnums[i] = get_attnum(info->target, info->column_names[i]);
		return;
	}
	deconstruct_array(DatumGetArrayTypeP(attnums), INT2OID, sizeof(int16), true, TYPALIGN_SHORT,
					  &values, NULL, &count);
	if (count != info->column_count)
		elog(ERROR, "sink %d has %d column names and %d target attribute numbers", info->sink_id,
			 info->column_count, count);
	for (int i = 0; i < count; i++)
		info->target_attnums[i] = DatumGetInt16(values[i]);
}

/*
 * The SET items of an UPDATE of sink_definition that record the column
 * names and types of the foreign table $2, in its order.
 */
#define LAYOUT_FROM_FOREIGN_TABLE                                                                  \
	"column_names = (SELECT pg_catalog.array_agg(a.attname::pg_catalog.text ORDER BY a.attnum) "   \
	"  FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) $2 "                 \
	"  AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped), "                            \
	"column_types = (SELECT pg_catalog.array_agg(a.atttypid::pg_catalog.regtype ORDER BY "         \
	"a.attnum) "                                                                                   \
	"  FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) $2 "                 \
	"  AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped), "

/*
 * metadata_set_sink_layout records a new sink's foreign table and the row
 * layout its staged files carry (the foreign table's column names and
 * types, and the target attribute number of each, unless recorded
 * already for this target: a restored foreign table keeps them), as the
 * extension's owner.
 */
void
metadata_set_sink_layout(int32 sink_id, Oid foreign_table)
{
	static Statement statement = {
		"UPDATE paimon_sink.sink_definition d SET foreign_table = $2, " LAYOUT_FROM_FOREIGN_TABLE
		"target_attnums_relid = d.target_table::pg_catalog.oid, "
		"target_attnums = coalesce(CASE WHEN d.target_attnums_relid OPERATOR(pg_catalog.=) "
		"d.target_table::pg_catalog.oid THEN d.target_attnums END, (SELECT "
		"pg_catalog.array_agg(coalesce(t.attnum, 0::pg_catalog.int2) ORDER BY a.attnum) "
		"  FROM pg_catalog.pg_attribute a LEFT JOIN pg_catalog.pg_attribute t "
		"  ON t.attrelid OPERATOR(pg_catalog.=) d.target_table "
		"  AND t.attname OPERATOR(pg_catalog.=) a.attname AND t.attnum OPERATOR(pg_catalog.>) 0 "
		"  AND NOT t.attisdropped WHERE a.attrelid OPERATOR(pg_catalog.=) $2 "
		"  AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped)) "
		"WHERE d.sink_id OPERATOR(pg_catalog.=) $1",
		SPI_OK_UPDATE};
	Arg args[] = {ARG_INT4(sink_id), ARG_OID(foreign_table)};

	(void) statement_execute(&statement, args, lengthof(args), RUN_AS_OWNER);
}

/*
 * metadata_extend_sink_layout records a sink's layout after alter_sink
 * added columns at the end of its foreign table: the column names and
 * types read from the foreign table again, and target_attnums (int2[],
 * one per column, the old ones first) for its target, as the extension's
 * owner.  Raises what the UPDATE raises.
 */
void
metadata_extend_sink_layout(int32 sink_id, Oid foreign_table, Datum target_attnums)
{
	static Statement statement = {
		"UPDATE paimon_sink.sink_definition d SET " LAYOUT_FROM_FOREIGN_TABLE
		"target_attnums_relid = d.target_table::pg_catalog.oid, target_attnums = $3 "
		"WHERE d.sink_id OPERATOR(pg_catalog.=) $1 AND d.foreign_table::pg_catalog.oid "
		"OPERATOR(pg_catalog.=) $2",
		SPI_OK_UPDATE};
	Arg args[] = {ARG_INT4(sink_id), ARG_OID(foreign_table),
				  ARG_DATUM(INT2ARRAYOID, target_attnums, false)};

	if (statement_execute(&statement, args, lengthof(args), RUN_AS_OWNER) != 1)
		elog(ERROR, "sink %d lost its foreign table while its layout was recorded", sink_id);
}
