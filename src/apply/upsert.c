/*-------------------------------------------------------------------------
 *
 * upsert.c
 *	  Committing a checkpoint of an upsert sink.
 *
 * Staged rows of an upsert sink are changes: an upsert or a delete of the
 * row named by the target's primary key, or the retraction of a row version
 * (fdw.c: a -U or -D that carries the whole row), numbered per bucket as
 * they reached their writer.  Committing a checkpoint applies, per key, only
 * its latest version in that checkpoint that is not retracted, as Paimon's
 * deduplicate merge engine keeps the record with the highest sequence
 * number; with partial_update, a version's NULL columns take the value of
 * the one before it, back to a delete, and then keep the target's (Paimon's
 * partial-update merge engine).
 *
 * A retraction cancels the newest earlier version of its key that equals it
 * (every column IS NOT DISTINCT FROM), and else the target's row if that
 * equals it, never another version: Flink's SinkUpsertMaterializer, which
 * keeps a key-changing UPDATE's change stream (the retraction of (k, v) and
 * the insert of (k + 1, v), in any order) from deleting the new row of k.
 * Read newest first, retractions wait for an older version equal to them;
 * the first upsert none waits for decides, as before, and retractions left
 * over at the oldest version become deletes of the target's row on the
 * condition that it equals them.
 *
 * One pass, whatever the number of versions: COPY FROM's own machinery
 * decodes the staged rows (the foreign table has their layout, as file_fdw
 * reads a foreign table's file), a tuplesort orders them by key and, within
 * a key, newest first (it spills past maintenance_work_mem), and the first
 * row of each key decides.  The outcome, one row per key, goes into a
 * tuplestore that one MERGE reads as an ephemeral named relation (as trigger
 * transition tables are read): matched keys are updated or deleted, the
 * others inserted.  MERGE joins the changes with the target instead of
 * probing the index once per row as INSERT ... ON CONFLICT does (and it
 * meets each key once, which both require).  It runs as the sink's owner in
 * a security-restricted operation, so triggers, constraints and partitions
 * behave as for any statement of the owner.  A row of the key inserted into
 * the target by someone else meanwhile fails the commit (23505); it is
 * retried whole, nothing lost.
 *
 * A version staged before alter_sink() added columns (an older layout,
 * decoded with NULL in them) carries its number of fields to the outcome:
 * the MERGE leaves those columns to the target, its value on UPDATE and
 * their default on INSERT, and a retraction compares only the columns it
 * carries.  With partial_update a column counts as written when any version
 * merged into the outcome was staged with it.
 *
 * The MERGE, its reruns and the redo of a failed one are upsert_merge.c's;
 * this file derives the layout both read, and sorts and deduplicates.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tupdesc.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/rls.h"
#include "utils/syscache.h"
#include "utils/tuplesort.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "apply/load_layout.h"
#include "apply/upsert.h"
#include "apply/upsert_merge.h"
#include "core/security.h"

/* One key's versions, newest first, while the sorted rows are read. */
typedef struct KeyGroup
{
	bool open;
	bool decided;		 /* nothing older changes the outcome */
	bool upsert;		 /* the outcome has an upserted row */
	bool deleted_before; /* partial_update: a delete precedes it */
	bool emitted;		 /* its row is in the store */
	int waiting;		 /* retractions waiting for an older version equal to them */
	int waiting_size;
	Datum **waiting_values; /* each by change_desc column, in context */
	bool **waiting_nulls;
	int *waiting_fields; /* each one's staged fields (its layout) */
	Datum *key;
	Datum *values; /* by change_desc column */
	bool *nulls;
	int missing; /* partial_update: NULL columns not yet filled */
	int fields;	 /* the staged fields of the outcome's row: its version's layout */
	MemoryContext context;
} KeyGroup;

/*
 * An operator as OPERATOR(schema.name): the MERGE names the key's equality
 * with its schema, so that neither the pinned search_path misses a key
 * type's own "=" nor anything else is found.
 */
static char *
qualified_operator(Oid operator)
{
	HeapTuple tuple = SearchSysCache1(OPEROID, ObjectIdGetDatum(operator));
	Form_pg_operator form;
	char *result;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for operator %u", operator);
	form = (Form_pg_operator) GETSTRUCT(tuple);
	result = psprintf("OPERATOR(%s.%s)", quote_identifier(get_namespace_name(form->oprnamespace)),
					  NameStr(form->oprname));
	ReleaseSysCache(tuple);
	return result;
}

/*
 * derive_row_equality finds how a retraction's non-key columns compare with
 * a version's: by the type's default "=" (as IS NOT DISTINCT FROM uses it),
 * or, for a type without one (json, point), by its text.
 */
static void
derive_row_equality(ApplyLayout *layout)
{
	layout->change_equal = palloc0(sizeof(FmgrInfo) * layout->columns);
	layout->change_equal_operator = palloc0(sizeof(char *) * layout->columns);
	layout->change_output = palloc0(sizeof(FmgrInfo) * layout->columns);
	for (int c = 0; c < layout->columns; c++)
	{
		Form_pg_attribute attr = TupleDescAttr(layout->change_desc, c);
		TypeCacheEntry *type;
		Oid output;
		bool varlena;

		if (layout->change_key_index[c] >= 0)
			continue;
		type = lookup_type_cache(attr->atttypid, TYPECACHE_EQ_OPR);
		if (OidIsValid(type->eq_opr))
		{
			fmgr_info(get_opcode(type->eq_opr), &layout->change_equal[c]);
			layout->change_equal_operator[c] = qualified_operator(type->eq_opr);
			continue;
		}
		getTypeOutputInfo(attr->atttypid, &output, &varlena);
		fmgr_info(output, &layout->change_output[c]);
	}
}

/*
 * derive_apply_layout derives the layout of an upsert apply from the sink:
 * the staged columns, the key, and the rows it sorts and merges, in the
 * staged rows' row type as follow gives them (load_layout_desc: the
 * target's names and types now, the columns dropped since marked so).
 */
static void
derive_apply_layout(ApplyLayout *layout, const SinkInfo *sink, LoadLayout *follow)
{
	TupleDesc desc = load_layout_desc(follow, RelationGetDescr(layout->foreign));
	Oid index = catalog_check_primary_key(sink, layout->target);
	Relation index_rel;

	layout->natts = desc->natts;
	layout->partial_update = sink->partial_update;
	layout->row_kind_attnum = get_attnum(RelationGetRelid(layout->foreign), sink->row_kind_column);
	if (layout->row_kind_attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the foreign table of upsert sink \"%s\" lost its row kind column \"%s\"",
						sink->name, sink->row_kind_column),
				 errdetail("Nothing of the checkpoint was applied."),
				 errhint("Restore the column and commit again.")));

	/* keys compare as the primary key's index compares them */
	index_rel = index_open(index, AccessShareLock);
	layout->key_constraint = pstrdup(RelationGetRelationName(index_rel));
	layout->key_count = IndexRelationGetNumberOfKeyAttributes(index_rel);
	layout->key_attnums = palloc(sizeof(AttrNumber) * layout->key_count);
	layout->key_names = palloc(sizeof(char *) * layout->key_count);
	layout->key_collations = palloc(sizeof(Oid) * layout->key_count);
	layout->key_equal = palloc(sizeof(FmgrInfo) * layout->key_count);
	layout->key_less = palloc(sizeof(Oid) * layout->key_count);
	layout->key_equal_operator = palloc(sizeof(char *) * layout->key_count);
	for (int k = 0; k < layout->key_count; k++)
	{
		AttrNumber target_attnum = index_rel->rd_index->indkey.values[k];
		char *name = pstrdup(
			NameStr(TupleDescAttr(RelationGetDescr(layout->target), target_attnum - 1)->attname));
		Oid equal = get_opfamily_member(index_rel->rd_opfamily[k], index_rel->rd_opcintype[k],
										index_rel->rd_opcintype[k], BTEqualStrategyNumber);

		int staged = column_follow_staged_index(sink, target_attnum);

		layout->key_names[k] = name;
		/* by attribute number: followed across a rename */
		layout->key_attnums[k] = staged >= 0 && follow->columns[staged].how != FOLLOW_DROPPED
									 ? follow->columns[staged].staged_attnum
									 : InvalidAttrNumber;
		layout->key_collations[k] = index_rel->rd_indcollation[k];
		if (layout->key_attnums[k] == InvalidAttrNumber || !OidIsValid(equal))
			ereport(
				ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("primary key column \"%s\" of the target of sink \"%s\" is not staged",
						name, sink->name),
				 errdetail("Nothing of the checkpoint was applied."),
				 errhint("Restore the primary key the sink was created with and commit again.")));
		fmgr_info(get_opcode(equal), &layout->key_equal[k]);
		layout->key_equal_operator[k] = qualified_operator(equal);
		layout->key_less[k] =
			get_opfamily_member(index_rel->rd_opfamily[k], index_rel->rd_opcintype[k],
								index_rel->rd_opcintype[k], BTLessStrategyNumber);
	}

	layout->sort_desc = CreateTemplateTupleDesc(desc->natts + 2);
	for (int a = 1; a <= desc->natts; a++)
		TupleDescCopyEntry(layout->sort_desc, a, desc, a);
	TupleDescInitEntry(layout->sort_desc, desc->natts + 1, "sequence", INT8OID, -1, 0);
	TupleDescInitEntry(layout->sort_desc, desc->natts + 2, "fields", INT4OID, -1, 0);
	layout->staged_count = sink->column_count;
	layout->layouts_read = palloc0(sizeof(bool) * (sink->column_count + 1));

	layout->change_attnums = palloc(sizeof(AttrNumber) * desc->natts);
	layout->change_key_index = palloc(sizeof(int) * desc->natts);
	for (int a = 1; a <= desc->natts; a++)
		if (a != layout->row_kind_attnum && !TupleDescAttr(desc, a - 1)->attisdropped)
			layout->change_attnums[layout->columns++] = a;
	layout->change_desc = CreateTemplateTupleDesc(layout->columns + 4);
	layout->change_staged_index = palloc(sizeof(int) * Max(1, layout->columns));
	for (int c = 0; c < layout->columns; c++)
	{
		TupleDescCopyEntry(layout->change_desc, c + 1, desc, layout->change_attnums[c]);
		layout->change_staged_index[c] = -1;
		for (int i = 0; i < follow->count; i++)
			if (follow->columns[i].staged_attnum == layout->change_attnums[c])
				layout->change_staged_index[c] = i;
		layout->change_key_index[c] = -1;
		for (int k = 0; k < layout->key_count; k++)
			if (layout->key_attnums[k] == layout->change_attnums[c])
				layout->change_key_index[c] = k;
	}
	TupleDescInitEntry(layout->change_desc, layout->columns + 1, "delete", BOOLOID, -1, 0);
	TupleDescInitEntry(layout->change_desc, layout->columns + 2, "replace", BOOLOID, -1, 0);
	TupleDescInitEntry(layout->change_desc, layout->columns + 3, "retract", BOOLOID, -1, 0);
	TupleDescInitEntry(layout->change_desc, layout->columns + 4, "fields", INT4OID, -1, 0);
	derive_row_equality(layout);
	index_close(index_rel, AccessShareLock);
}

/* Sorted by key (the index's order), then newest first. */
static Tuplesortstate *
begin_sort(ApplyLayout *layout)
{
	int nkeys = layout->key_count + 1;
	AttrNumber *attnums = palloc(sizeof(AttrNumber) * nkeys);
	Oid *operators = palloc(sizeof(Oid) * nkeys);
	Oid *collations = palloc(sizeof(Oid) * nkeys);
	bool *nulls_first = palloc0(sizeof(bool) * nkeys);

	for (int k = 0; k < layout->key_count; k++)
	{
		attnums[k] = layout->key_attnums[k];
		operators[k] = layout->key_less[k];
		collations[k] = layout->key_collations[k];
	}
	attnums[layout->key_count] = layout->natts + 1;
	operators[layout->key_count] = lookup_type_cache(INT8OID, TYPECACHE_GT_OPR)->gt_opr;
	collations[layout->key_count] = InvalidOid;
	return tuplesort_begin_heap(layout->sort_desc, nkeys, attnums, operators, collations,
								nulls_first, maintenance_work_mem, NULL, TUPLESORT_NONE);
}

/* slot_fields returns the staged fields of a sorted version: the layout it was written in. */
static int
slot_fields(ApplyLayout *layout, TupleTableSlot *slot)
{
	return DatumGetInt32(slot->tts_values[layout->natts + 1]);
}

/* is_delete tells whether a staged version is a delete (-D) or a retraction (-R). */
static bool
is_delete(ApplyLayout *layout, TupleTableSlot *slot)
{
	return !slot->tts_isnull[layout->row_kind_attnum - 1];
}

/* is_retraction tells whether a staged version retracts the row it carries (-R). */
static bool
is_retraction(ApplyLayout *layout, TupleTableSlot *slot)
{
	text *kind;

	if (slot->tts_isnull[layout->row_kind_attnum - 1])
		return false;
	kind = DatumGetTextPP(slot->tts_values[layout->row_kind_attnum - 1]);
	return VARSIZE_ANY_EXHDR(kind) == 2 && memcmp(VARDATA_ANY(kind), "-R", 2) == 0;
}

/*
 * same_row tells whether two rows of a key (by change_desc column, or the
 * other by foreign table attnum when by_attnum) have equal non-key columns,
 * NULL matching NULL, among the first fields staged columns: a column one
 * of them was not staged with (an older layout) is not compared.
 */
static bool
same_row(ApplyLayout *layout, Datum *values, bool *nulls, Datum *other, bool *other_nulls,
		 bool by_attnum, int fields)
{
	for (int c = 0; c < layout->columns; c++)
	{
		int o = by_attnum ? layout->change_attnums[c] - 1 : c;
		Oid collation = TupleDescAttr(layout->change_desc, c)->attcollation;

		if (layout->change_key_index[c] >= 0 || layout->change_staged_index[c] >= fields)
			continue;
		if (nulls[c] || other_nulls[o])
		{
			if (nulls[c] != other_nulls[o])
				return false;
			continue;
		}
		if (OidIsValid(layout->change_equal[c].fn_oid)
				? !DatumGetBool(
					  FunctionCall2Coll(&layout->change_equal[c], collation, values[c], other[o]))
				: strcmp(OutputFunctionCall(&layout->change_output[c], values[c]),
						 OutputFunctionCall(&layout->change_output[c], other[o])) != 0)
			return false;
	}
	return true;
}

/* wait_retraction keeps a retraction until an older version equal to it is read. */
static void
wait_retraction(ApplyLayout *layout, KeyGroup *group, TupleTableSlot *slot)
{
	MemoryContext old = MemoryContextSwitchTo(group->context);
	Datum *values = palloc(sizeof(Datum) * layout->columns);
	bool *nulls = palloc(sizeof(bool) * layout->columns);

	for (int c = 0; c < layout->columns; c++)
	{
		AttrNumber attnum = layout->change_attnums[c];
		Form_pg_attribute attr = TupleDescAttr(layout->change_desc, c);

		nulls[c] = slot->tts_isnull[attnum - 1];
		values[c] = nulls[c]
						? (Datum) 0
						: datumCopy(slot->tts_values[attnum - 1], attr->attbyval, attr->attlen);
	}
	if (group->waiting == group->waiting_size)
	{
		group->waiting_size = Max(4, group->waiting_size * 2);
		group->waiting_values =
			group->waiting_values == NULL
				? palloc(sizeof(Datum *) * group->waiting_size)
				: repalloc(group->waiting_values, sizeof(Datum *) * group->waiting_size);
		group->waiting_nulls =
			group->waiting_nulls == NULL
				? palloc(sizeof(bool *) * group->waiting_size)
				: repalloc(group->waiting_nulls, sizeof(bool *) * group->waiting_size);
		group->waiting_fields =
			group->waiting_fields == NULL
				? palloc(sizeof(int) * group->waiting_size)
				: repalloc(group->waiting_fields, sizeof(int) * group->waiting_size);
	}
	group->waiting_values[group->waiting] = values;
	group->waiting_nulls[group->waiting] = nulls;
	group->waiting_fields[group->waiting] = slot_fields(layout, slot);
	group->waiting++;
	MemoryContextSwitchTo(old);
}

/* cancel_retraction: an upsert a waiting retraction equals is retracted (both go). */
static bool
cancel_retraction(ApplyLayout *layout, KeyGroup *group, TupleTableSlot *slot)
{
	for (int w = 0; w < group->waiting; w++)
		if (same_row(layout, group->waiting_values[w], group->waiting_nulls[w], slot->tts_values,
					 slot->tts_isnull, true,
					 Min(group->waiting_fields[w], slot_fields(layout, slot))))
		{
			group->waiting--;
			group->waiting_values[w] = group->waiting_values[group->waiting];
			group->waiting_nulls[w] = group->waiting_nulls[group->waiting];
			group->waiting_fields[w] = group->waiting_fields[group->waiting];
			return true;
		}
	return false;
}

/* same_key tells whether a staged version has the key of the group. */
static bool
same_key(ApplyLayout *layout, KeyGroup *group, TupleTableSlot *slot)
{
	for (int k = 0; k < layout->key_count; k++)
		if (!DatumGetBool(FunctionCall2Coll(&layout->key_equal[k], layout->key_collations[k],
											group->key[k],
											slot->tts_values[layout->key_attnums[k] - 1])))
			return false;
	return true;
}

/*
 * A key's outcome: its row (deleted: its key; retracted: the row the target's
 * must equal to be deleted), and whether it replaces.
 */
static void
emit(ApplyLayout *layout, KeyGroup *group, Tuplestorestate *changes, bool delete, bool replace,
	 bool retract)
{
	int columns = layout->columns;

	if (!retract && delete)
	{
		for (int c = 0; c < columns; c++)
		{
			int k = layout->change_key_index[c];

			group->nulls[c] = k < 0;
			group->values[c] = k < 0 ? (Datum) 0 : group->key[k];
		}
		layout->deletes++;
	}
	else if (!retract)
		layout->upserts++;
	/* a retraction's key is counted once by the caller, whatever its changes */
	group->values[columns] = BoolGetDatum(delete);
	group->values[columns + 1] = BoolGetDatum(replace);
	group->values[columns + 2] = BoolGetDatum(retract);
	group->values[columns + 3] = Int32GetDatum(group->fields);
	group->nulls[columns] = group->nulls[columns + 1] = group->nulls[columns + 2] = false;
	group->nulls[columns + 3] = false;
	tuplestore_putvalues(changes, layout->change_desc, group->values, group->nulls);
	group->emitted = true;
}

/*
 * The newest version of a key opens its group.  A delete, or an upsert
 * without partial_update, decides at once; a partial row waits for older
 * versions to fill its NULL columns, and a retraction for an older version
 * equal to it.
 */
static void
open_group(ApplyLayout *layout, KeyGroup *group, TupleTableSlot *slot, Tuplestorestate *changes)
{
	MemoryContext old;

	MemoryContextReset(group->context);
	old = MemoryContextSwitchTo(group->context);
	group->open = true;
	group->emitted = false;
	group->deleted_before = false;
	group->waiting = group->waiting_size = 0;
	group->waiting_values = NULL;
	group->waiting_nulls = NULL;
	group->waiting_fields = NULL;
	group->upsert = !is_delete(layout, slot);
	group->decided = !group->upsert || !layout->partial_update;
	group->fields = slot_fields(layout, slot);
	for (int k = 0; k < layout->key_count; k++)
	{
		Form_pg_attribute attr = TupleDescAttr(layout->sort_desc, layout->key_attnums[k] - 1);

		group->key[k] =
			datumCopy(slot->tts_values[layout->key_attnums[k] - 1], attr->attbyval, attr->attlen);
	}
	if (!layout->partial_update && is_retraction(layout, slot))
	{
		group->decided = false;
		MemoryContextSwitchTo(old);
		wait_retraction(layout, group, slot);
		return;
	}
	if (!group->upsert)
		emit(layout, group, changes, true, false, false);
	else
	{
		group->missing = 0;
		for (int c = 0; c < layout->columns; c++)
		{
			AttrNumber attnum = layout->change_attnums[c];
			Form_pg_attribute attr = TupleDescAttr(layout->change_desc, c);

			group->nulls[c] = slot->tts_isnull[attnum - 1];
			if (group->nulls[c])
				group->missing++;
			else if (group->decided)
				group->values[c] = slot->tts_values[attnum - 1]; /* put at once */
			else
				group->values[c] =
					datumCopy(slot->tts_values[attnum - 1], attr->attbyval, attr->attlen);
		}
		if (group->decided || group->missing == 0)
		{
			group->decided = true;
			emit(layout, group, changes, false, false, false);
		}
	}
	MemoryContextSwitchTo(old);
}

/*
 * Without partial_update, an older version is read while retractions wait:
 * a retraction waits too, an upsert equal to one goes with it, any other
 * upsert, or a delete, decides.
 */
static void
retract_older(ApplyLayout *layout, KeyGroup *group, TupleTableSlot *slot, Tuplestorestate *changes)
{
	if (is_retraction(layout, slot))
		wait_retraction(layout, group, slot);
	else if (is_delete(layout, slot))
	{
		group->decided = true;
		emit(layout, group, changes, true, false, false);
	}
	else if (!cancel_retraction(layout, group, slot))
	{
		for (int c = 0; c < layout->columns; c++)
		{
			AttrNumber attnum = layout->change_attnums[c];

			group->nulls[c] = slot->tts_isnull[attnum - 1];
			group->values[c] = slot->tts_values[attnum - 1];
		}
		group->fields = slot_fields(layout, slot);
		group->decided = true;
		group->upsert = true;
		emit(layout, group, changes, false, false, false);
	}
}

/*
 * The retractions still waiting at a key's oldest version retract the
 * target's row, if it equals one of them: one change each (equal ones
 * once, so that the target's row meets at most one), the key counted once
 * as a delete.
 */
static void
retract_target(ApplyLayout *layout, KeyGroup *group, Tuplestorestate *changes)
{
	for (int w = 0; w < group->waiting; w++)
	{
		bool repeated = false;

		for (int earlier = 0; earlier < w && !repeated; earlier++)
			repeated =
				same_row(layout, group->waiting_values[earlier], group->waiting_nulls[earlier],
						 group->waiting_values[w], group->waiting_nulls[w], false,
						 Min(group->waiting_fields[earlier], group->waiting_fields[w]));
		if (repeated)
			continue;
		memcpy(group->values, group->waiting_values[w], sizeof(Datum) * layout->columns);
		memcpy(group->nulls, group->waiting_nulls[w], sizeof(bool) * layout->columns);
		group->fields = group->waiting_fields[w];
		emit(layout, group, changes, true, false, true);
	}
	if (group->waiting > 0)
		layout->deletes++;
}

/* partial_update: an older version fills what the newer ones left NULL. */
static void
merge_older(ApplyLayout *layout, KeyGroup *group, TupleTableSlot *slot)
{
	MemoryContext old = MemoryContextSwitchTo(group->context);

	if (is_delete(layout, slot))
	{
		/* versions before a delete do not count */
		group->deleted_before = true;
		group->decided = true;
	}
	else
	{
		/* a column that some merged version had counts as written (NULL or not) */
		group->fields = Max(group->fields, slot_fields(layout, slot));
		for (int c = 0; c < layout->columns; c++)
		{
			AttrNumber attnum = layout->change_attnums[c];
			Form_pg_attribute attr = TupleDescAttr(layout->change_desc, c);

			if (group->nulls[c] && !slot->tts_isnull[attnum - 1])
			{
				group->values[c] =
					datumCopy(slot->tts_values[attnum - 1], attr->attbyval, attr->attlen);
				group->nulls[c] = false;
				group->missing--;
			}
		}
		group->decided = group->missing == 0;
	}
	MemoryContextSwitchTo(old);
}

/*
 * partial_update: the merged row goes in; after a delete the key starts
 * afresh, so the row replaces the target's whole.
 */
static void
close_group(ApplyLayout *layout, KeyGroup *group, Tuplestorestate *changes)
{
	if (group->open && group->upsert && !group->emitted)
		emit(layout, group, changes, false, group->deleted_before, false);
	else if (group->open && !group->decided && !layout->partial_update)
		retract_target(layout, group, changes);
	group->open = false;
}

/*
 * upsert_apply applies one checkpoint's changes to the target of an upsert
 * sink: the staged rows read through read (COPY FROM's data-source
 * callback, binary format, the foreign table's layout), each numbered by
 * row_sequence right after COPY returned it; applying is called once all
 * are read.  Fills counts.  Runs as the
 * sink's owner.  Raises ERRCODE_DATA_CORRUPTED for a staged row with a NULL
 * key or an unknown row kind, ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE when
 * the target lost its primary key, ERRCODE_FEATURE_NOT_SUPPORTED for a
 * target with row-level security, and whatever the statements raise
 * (constraint violations, privileges).
 */
void
upsert_apply(const SinkInfo *sink, copy_data_source_cb read, row_sequence_cb row_sequence,
			 apply_phase_cb applying, UpsertCounts *counts)
{
	MemoryContext apply_context =
		AllocSetContextCreate(CurrentMemoryContext, "paimon_sink upsert", ALLOCSET_DEFAULT_SIZES);
	MemoryContext row_context;
	MemoryContext old = MemoryContextSwitchTo(apply_context);
	ApplyLayout layout;
	RoleSwitch saved;
	CopyFromState cstate;
	Tuplesortstate *sort;
	Tuplestorestate *changes;
	TupleTableSlot *sort_slot;
	TupleTableSlot *read_slot;
	KeyGroup group;
	LoadLayout *follow;

	memset(counts, 0, sizeof(*counts));
	memset(&layout, 0, sizeof(layout));
	layout.target = catalog_open_target(sink, false, RowExclusiveLock);
	layout.foreign = catalog_open_target(sink, true, AccessShareLock);
	/* as the sink's owner: its triggers, defaults and types' code run as for its own statement */
	security_switch_role(catalog_commit_role(sink, RelationGetRelid(layout.target),
											 ACL_SELECT | ACL_INSERT | ACL_UPDATE | ACL_DELETE),
						 &saved);
	/* a maintenance operation's memory, for the MERGE's join too */
	(void) set_config_option("work_mem", GetConfigOption("maintenance_work_mem", false, false),
							 PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
	/* each staged column into the target's as it is now: renamed, widened, dropped since */
	follow = load_layout_build(sink, layout.target);
	if (check_enable_rls(RelationGetRelid(layout.target), InvalidOid, false) == RLS_ENABLED)
		ereport(
			ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot load sink \"%s\" into table \"%s\" with row-level security", sink->name,
					RelationGetRelationName(layout.target)),
			 errhint("Disable row-level security on the target, or let its owner own the sink.")));
	derive_apply_layout(&layout, sink, follow);

	/* every version, decoded by COPY, into the sort */
	sort = begin_sort(&layout);
	sort_slot = MakeSingleTupleTableSlot(layout.sort_desc, &TTSOpsVirtual);
	row_context =
		AllocSetContextCreate(apply_context, "paimon_sink upsert row", ALLOCSET_DEFAULT_SIZES);
	cstate = BeginCopyFrom(NULL, layout.foreign, NULL, NULL, false, read, NIL,
						   list_make1(makeDefElem("format", (Node *) makeString("binary"), -1)));
	for (;;)
	{
		bool more;
		int fields;

		MemoryContextReset(row_context);
		MemoryContextSwitchTo(row_context);
		ExecClearTuple(sort_slot);
		more = NextCopyFrom(cstate, NULL, sort_slot->tts_values, sort_slot->tts_isnull);
		if (more)
			load_layout_cast_values(follow, sort_slot->tts_values, sort_slot->tts_isnull);
		MemoryContextSwitchTo(apply_context);
		if (!more)
			break;
		sort_slot->tts_values[layout.natts] = Int64GetDatum((int64) row_sequence(&fields));
		sort_slot->tts_isnull[layout.natts] = false;
		/* the layout it was staged in: a row of an older one lacks the columns added since */
		if (fields < 0 || fields > layout.staged_count)
			fields = layout.staged_count;
		layout.layouts_read[fields] = true;
		sort_slot->tts_values[layout.natts + 1] = Int32GetDatum(fields);
		sort_slot->tts_isnull[layout.natts + 1] = false;
		for (int k = 0; k < layout.key_count; k++)
			if (sort_slot->tts_isnull[layout.key_attnums[k] - 1])
				ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
								errmsg("a staged row of sink \"%s\" has a NULL key", sink->name),
								errdetail("Nothing of the checkpoint was applied.")));
		if (!sort_slot->tts_isnull[layout.row_kind_attnum - 1] &&
			strcmp(TextDatumGetCString(sort_slot->tts_values[layout.row_kind_attnum - 1]), "-D") !=
				0 &&
			!is_retraction(&layout, sort_slot))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("a staged row of sink \"%s\" has an unknown row kind", sink->name),
					 errdetail("Nothing of the checkpoint was applied.")));
		ExecStoreVirtualTuple(sort_slot);
		tuplesort_puttupleslot(sort, sort_slot);
		counts->versions++;
	}
	EndCopyFrom(cstate);
	MemoryContextDelete(row_context);
	applying();
	tuplesort_performsort(sort);

	/* per key, the newest version decides */
	changes = tuplestore_begin_heap(false, false, maintenance_work_mem);
	read_slot = MakeSingleTupleTableSlot(layout.sort_desc, &TTSOpsMinimalTuple);
	memset(&group, 0, sizeof(group));
	group.context =
		AllocSetContextCreate(apply_context, "paimon_sink upsert key", ALLOCSET_SMALL_SIZES);
	group.key = palloc(sizeof(Datum) * layout.key_count);
	group.values = palloc(sizeof(Datum) * (layout.columns + 4));
	group.nulls = palloc(sizeof(bool) * (layout.columns + 4));
	while (tuplesort_gettupleslot(sort, true, false, read_slot, NULL))
	{
		slot_getallattrs(read_slot);
		if (group.open && same_key(&layout, &group, read_slot))
		{
			if (group.decided)
				continue;
			if (layout.partial_update)
				merge_older(&layout, &group, read_slot);
			else
				retract_older(&layout, &group, read_slot, changes);
			continue;
		}
		close_group(&layout, &group, changes);
		open_group(&layout, &group, read_slot, changes);
	}
	close_group(&layout, &group, changes);
	ExecDropSingleTupleTableSlot(read_slot);
	ExecDropSingleTupleTableSlot(sort_slot);
	tuplesort_end(sort);
	counts->upserts = layout.upserts;
	counts->deletes = layout.deletes;
	counts->keys = layout.upserts + layout.deletes;
	if (tuplestore_tuple_count(changes) > 0)
		counts->changed = upsert_merge_run(&layout, changes, &counts->retries);
	tuplestore_end(changes);
	load_layout_warn_dropped(follow, counts->versions);

	security_restore_role(&saved);
	table_close(layout.foreign, NoLock);
	table_close(layout.target, NoLock);
	MemoryContextSwitchTo(old);
	MemoryContextDelete(apply_context);
}
