/*-------------------------------------------------------------------------
 *
 * alter_sink.c
 *	  alter_sink: a sink's foreign table brought in line with its target,
 *	  so that the columns added to the target since can be written.
 *
 * A sink stages rows in the layout of its foreign table (column_follow.c
 * maps them onto the target as it is at commit).  alter_sink adds at the
 * end of the foreign table each column of the target that no staged column
 * loads into (neither generated nor dropped), with the target's type and
 * type modifier, and records the longer layout in sink_definition in the
 * same transaction.  The layout only ever grows at its end, so each staged
 * row's field count names the layout it was written in: the first k
 * columns (load_layout.c fills the columns a row does not have as the
 * target fills a column an INSERT leaves out).  It never drops or retypes
 * a column of the foreign table: a target column dropped since stays (a
 * load skips its values), a widened one keeps the staged type (a load
 * casts it).  As Paimon's schema evolution: each data file keeps its
 * schema id, and the writer picks up the newest schema.
 *
 * Its ALTER FOREIGN TABLE takes AccessExclusiveLock on the foreign table,
 * so the transactions that write into it finish first, in the layout they
 * began with; sessions read the new layout at their next statement (the
 * ALTER invalidates their cached sink, fdw_session.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "api/alter_sink.h"
#include "api/foreign_table.h"
#include "api/sink_ddl.h"
#include "api/sql_call.h"
#include "metadata/catalog.h"
#include "metadata/column_follow.h"
#include "metadata/metadata.h"
#include "session/handoff.h"

PG_FUNCTION_INFO_V1(paimon_sink_alter_sink);

/* foreign_column_count counts the columns of a relation that are not dropped. */
static int
foreign_column_count(Oid relid)
{
	int count = 0;

	for (AttrNumber attnum = 1;; attnum++)
	{
		HeapTuple tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attnum));

		if (!HeapTupleIsValid(tuple))
			break;
		if (!((Form_pg_attribute) GETSTRUCT(tuple))->attisdropped)
			count++;
		ReleaseSysCache(tuple);
	}
	return count;
}

/*
 * refuse_taken_name raises ERRCODE_DUPLICATE_COLUMN for a target column
 * whose name a staged column of the sink already has, saying where that
 * staged column loads: the target's column it was renamed to, or none
 * (the row kind, or a column dropped since).  The foreign table's names
 * cannot change, so the way forward is another name, not a rename there.
 */
static void
refuse_taken_name(const SinkInfo *sink, const char *name)
{
	char *loads_into = NULL;

	for (int i = 0; i < sink->column_count; i++)
	{
		HeapTuple tuple;

		if (strcmp(sink->column_names[i], name) != 0 || sink->target_attnums[i] <= 0)
			continue;
		tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(sink->target),
								Int16GetDatum(sink->target_attnums[i]));
		if (!HeapTupleIsValid(tuple))
			continue;
		if (!((Form_pg_attribute) GETSTRUCT(tuple))->attisdropped)
			loads_into = pstrdup(NameStr(((Form_pg_attribute) GETSTRUCT(tuple))->attname));
		ReleaseSysCache(tuple);
	}
	ereport(ERROR,
			(errcode(ERRCODE_DUPLICATE_COLUMN),
			 errmsg("cannot add column \"%s\" to sink \"%s\": it stages a column of that name "
					"already",
					name, sink->name),
			 loads_into != NULL
				 ? errdetail("Its staged column \"%s\" loads into the target's column \"%s\", "
							 "renamed since.",
							 name, loads_into)
				 : errdetail("Its staged column \"%s\" is the row kind, or loads into a column "
							 "dropped from the target since.",
							 name),
			 errhint("Give the target's new column another name and call alter_sink() again; or "
					 "commit what is staged and create the sink again.")));
}

/*
 * alter_sink(sink_name text) adds at the end of the sink's foreign table
 * each column of its target that no staged column loads into and that is
 * neither generated nor dropped, in the target's order, and records the
 * layout, and sets the default of each staged column to its target
 * column's default now (foreign_table_sync_defaults); returns one row
 * (column_name text, data_type text) per column added, none when there was
 * nothing to add.  For
 * the sink's owner.  Raises ERRCODE_NULL_VALUE_NOT_ALLOWED for a NULL
 * name, ERRCODE_UNDEFINED_OBJECT for an unknown sink,
 * ERRCODE_INSUFFICIENT_PRIVILEGE for a caller that is not the sink's
 * owner, ERRCODE_UNDEFINED_TABLE for a sink without its foreign table or
 * target, ERRCODE_LOCK_NOT_AVAILABLE when lock_timeout ends the wait for
 * the transactions writing into the sink, ERRCODE_T_R_SERIALIZATION_FAILURE
 * when another alter_sink changed the sink meanwhile,
 * ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE in a transaction that wrote into
 * the sink, ERRCODE_DUPLICATE_COLUMN when the sink stages a column of a new
 * column's name (one dropped from the target since, or the row kind),
 * ERRCODE_FEATURE_NOT_SUPPORTED for a new column whose type has no binary
 * send or receive (as create_sink; nothing is added), and what ALTER
 * FOREIGN TABLE raises.
 */
Datum
paimon_sink_alter_sink(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	SinkInfo *sink = sql_owned_sink(fcinfo, "alter");
	char *name = pstrdup(sink->name);
	Datum *names;
	Datum *types;
	Datum *attnums;
	int added = 0;
	int columns;
	Relation target;

	InitMaterializedSRF(fcinfo, 0);
	/*
	 * The writers of the old layout finish first: they hold RowExclusiveLock
	 * on the foreign table until they commit.  The target's AccessShareLock
	 * keeps its columns as they are read here until this commits.
	 */
	LockRelationOid(sink->foreign_table, AccessExclusiveLock);
	target = catalog_open_target(sink, false, AccessShareLock);
	/* what committed while this waited: a snapshot taken now */
	PushActiveSnapshot(GetTransactionSnapshot());
	sink = catalog_require_sink(name);
	PopActiveSnapshot();
	catalog_check_owner(sink, "alter");
	/* a transaction's rows are staged in one layout: its rows so far have the old one */
	if (handoff_wrote_sink(sink->sink_id))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot alter sink \"%s\" in a transaction that wrote into it", sink->name),
				 errdetail("The rows of one transaction are staged in one layout."),
				 errhint("Commit the transaction first, then call alter_sink().")));
	if (foreign_column_count(sink->foreign_table) != sink->column_count)
		ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						errmsg("sink \"%s\" was altered while this call waited", sink->name),
						errhint("Call alter_sink again.")));

	columns = RelationGetNumberOfAttributes(target);
	table_close(target, NoLock);
	names = palloc(sizeof(Datum) * Max(1, columns));
	types = palloc(sizeof(Datum) * Max(1, columns));
	attnums = palloc(sizeof(Datum) * (sink->column_count + Max(1, columns)));
	for (int i = 0; i < sink->column_count; i++)
		attnums[i] = Int16GetDatum(sink->target_attnums[i]);
	for (AttrNumber attnum = 1; attnum <= columns; attnum++)
	{
		HeapTuple tuple =
			SearchSysCache2(ATTNUM, ObjectIdGetDatum(sink->target), Int16GetDatum(attnum));
		Form_pg_attribute attr;

		if (!HeapTupleIsValid(tuple))
			continue;
		attr = (Form_pg_attribute) GETSTRUCT(tuple);
		if (!attr->attisdropped && attr->attgenerated == '\0' &&
			column_follow_staged_index(sink, attnum) < 0)
		{
			/* a staged column of that name loads elsewhere: renamed, dropped, the row kind */
			if (get_attnum(sink->foreign_table, NameStr(attr->attname)) != InvalidAttrNumber)
				refuse_taken_name(sink, NameStr(attr->attname));
			names[added] = CStringGetTextDatum(NameStr(attr->attname));
			types[added] = ObjectIdGetDatum(attr->atttypid);
			attnums[sink->column_count + added] = Int16GetDatum(attnum);
			added++;
		}
		ReleaseSysCache(tuple);
	}
	/* the defaults of the columns staged so far follow the target's too */
	foreign_table_sync_defaults(sink, (Datum) 0);
	if (added == 0)
		return (Datum) 0;

	foreign_table_add_columns(
		sink, PointerGetDatum(construct_array(names, added, TEXTOID, -1, false, TYPALIGN_INT)),
		PointerGetDatum(construct_array(types, added, OIDOID, sizeof(Oid), true, TYPALIGN_INT)));
	metadata_extend_sink_layout(
		sink->sink_id, sink->foreign_table,
		PointerGetDatum(construct_array(attnums, sink->column_count + added, INT2OID, sizeof(int16),
										true, TYPALIGN_SHORT)));
	for (int i = 0; i < added; i++)
	{
		AttrNumber in_foreign = get_attnum(sink->foreign_table, TextDatumGetCString(names[i]));
		Oid type;
		int32 typmod;
		Oid collation;
		Datum values[2];
		bool nulls[2] = {false, false};

		get_atttypetypmodcoll(sink->foreign_table, in_foreign, &type, &typmod, &collation);
		values[0] = names[i];
		values[1] = CStringGetTextDatum(format_type_with_typemod(type, typmod));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
