/*-------------------------------------------------------------------------
 *
 * write_check.c
 *	  Refusing at write time a row whose commit could never load it.
 *
 * A row the target refuses only when the checkpoint commits poisons the
 * checkpoint (see rejects.c); what can be known when the row is written is
 * refused then, so that the writing transaction fails and nothing of it is
 * staged.  The foreign table's insert checks the target's NOT NULL and
 * CHECK constraints with ExecConstraints (fdw.c), as far as the row decides
 * them: a target column the sink does not stage (one added after
 * create_sink) is the load's to fill, with its default, identity or
 * generated value, so NOT NULL is checked only on columns whose value the
 * row gives (a staged column, or one generated from staged columns only),
 * and a CHECK constraint only when every column it reads is such a column;
 * the rest is the commit's.  A BEFORE ROW trigger of the target that the
 * load fires (on INSERT; an upsert sink's MERGE also fires those on UPDATE)
 * may change any value first, so then the row decides none of them.  This file says which, and adds btree index row
 * size: a key whose index tuple exceeds what a btree page holds (a third of
 * a page, 2704 bytes with 8 kB pages) fails every insert into that index
 * with SQLSTATE 54000, as nbtree's _bt_check_third_page says it.  The index
 * tuple is formed as nbtree forms it (index_form_tuple, which compresses a
 * long value), but only for a row whose key values could be that large:
 * a cheap sum of their sizes comes first, so ordinary rows cost an
 * addition per key column.  Checked are the target's valid btree indexes
 * on plain columns without a predicate; an expression or partial index
 * is left to the commit (its expressions are the owner's code to run).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/genam.h"
#include "access/heaptoast.h"
#include "access/itup.h"
#include "access/nbtree.h"
#include "access/sysattr.h"
#include "access/toast_internals.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_trigger.h"
#include "commands/trigger.h"
#include "nodes/readfuncs.h"
#include "optimizer/optimizer.h"
#include "storage/bufpage.h"
#include "utils/relcache.h"

#include "core/pg_compat.h"
#include "metadata/write_check.h"

/* One btree index of the target to check, on plain columns. */
typedef struct IndexCheck
{
	Relation index;
	int natts;			 /* key and INCLUDE columns */
	AttrNumber *attnums; /* of the target */
} IndexCheck;

struct IndexChecks
{
	Relation target;
	int count;
	IndexCheck *checks;
	Size max_item; /* BTMaxItemSize of a page of BLCKSZ */
};

/*
 * decided_by_row tells whether an expression over the target's columns (a
 * CHECK constraint, a generation expression: Vars of varno 1) reads only
 * columns whose value the row gives: no system column, and a whole-row
 * reference only when every column is the row's.
 */
static bool
decided_by_row(const char *expression, const bool *from_row, int natts)
{
	Bitmapset *read = NULL;
	int member = -1;

	pull_varattnos(stringToNode(expression), 1, &read);
	while ((member = bms_next_member(read, member)) >= 0)
	{
		AttrNumber attnum = member + FirstLowInvalidHeapAttributeNumber;

		if (attnum < 0)
			return false;
		for (int i = 0; attnum == InvalidAttrNumber && i < natts; i++)
			if (!from_row[i])
				return false;
		if (attnum > 0 && !from_row[attnum - 1])
			return false;
	}
	return true;
}

/*
 * fired_before_row tells whether the load of a sink's rows into target
 * fires a BEFORE ROW trigger, which may change any value of the row before
 * PostgreSQL checks it: one on INSERT, or for an upsert sink (whose commit
 * is a MERGE) also on UPDATE, that fires in the load's session, whose
 * session_replication_role the workers pin to origin: enabled, or enabled
 * always; not one disabled or enabled for replicas only.
 */
static bool
fired_before_row(Relation target, bool upsert)
{
	TriggerDesc *triggers = target->trigdesc;

	if (triggers == NULL)
		return false;
	for (int i = 0; i < triggers->numtriggers; i++)
	{
		Trigger *trigger = &triggers->triggers[i];

		if ((trigger->tgenabled == TRIGGER_FIRES_ON_ORIGIN ||
			 trigger->tgenabled == TRIGGER_FIRES_ALWAYS) &&
			TRIGGER_FOR_ROW(trigger->tgtype) && TRIGGER_FOR_BEFORE(trigger->tgtype) &&
			(TRIGGER_FOR_INSERT(trigger->tgtype) ||
			 (upsert && TRIGGER_FOR_UPDATE(trigger->tgtype))))
			return true;
	}
	return false;
}

/* generation_expression is the stored generation expression of attnum. */
static const char *
generation_expression(TupleConstr *constr, AttrNumber attnum)
{
	for (int d = 0; d < constr->num_defval; d++)
		if (constr->defval[d].adnum == attnum)
			return constr->defval[d].adbin;
	elog(ERROR, "no generation expression found for column number %d", attnum);
	return NULL;
}

/*
 * as_decided returns a copy of the target's relation whose tuple descriptor
 * keeps only the constraints the row decides: NOT NULL and generation on
 * the columns from_row, the CHECK constraints check_decided.  A copy, not
 * checks of our own, so that ExecConstraints raises PostgreSQL's own errors
 * (the failing row shown as the writer's privileges allow).  Its own
 * descriptor and pg_class row (relchecks counts the CHECK constraints kept,
 * as ExecRelCheck requires); the rest is the target's entry, which the
 * caller keeps open for as long as the copy is used.
 */
static Relation
as_decided(Relation target, const bool *from_row, const bool *check_decided)
{
	Relation decided = palloc(sizeof(RelationData));
	TupleDesc desc = CreateTupleDescCopyConstr(RelationGetDescr(target));
	TupleConstr *constr = desc->constr;
	int kept = 0;

	memcpy(decided, target, sizeof(RelationData));
	decided->rd_rel = palloc(CLASS_TUPLE_SIZE);
	memcpy(decided->rd_rel, target->rd_rel, CLASS_TUPLE_SIZE);
	decided->rd_att = desc;
	constr->has_not_null = false;
	constr->has_generated_stored = false;
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);

		if (!from_row[i])
		{
			attr->attnotnull = false;
			attr->attgenerated = '\0';
		}
		constr->has_not_null |= attr->attnotnull;
		constr->has_generated_stored |= attr->attgenerated == ATTRIBUTE_GENERATED_STORED;
	}
	for (int c = 0; c < constr->num_check; c++)
		if (check_decided[c])
			constr->check[kept++] = constr->check[c];
	constr->num_check = kept;
	decided->rd_rel->relchecks = kept;
	return decided;
}

/*
 * write_check_decided_target returns the relation a row written into a
 * sink is checked against with ExecConstraints and
 * ExecComputeStoredGenerated: the target itself when the row decides every
 * NOT NULL, CHECK and generated column of it, else a copy of the target's
 * relation that keeps only those it decides (as_decided).  target_map maps
 * each target column to the foreign table's column the sink stages it from
 * (0: none); upsert tells an upsert sink's.  A column's value comes from
 * the row when the sink stages it, or when it is generated from such
 * columns only, and from no row when the load fires a BEFORE ROW trigger
 * (fired_before_row); a dropped column is NULL in every row, the loaded
 * one too.  The result lives in the current memory context and is valid
 * while target is open.
 */
Relation
write_check_decided_target(Relation target, const AttrNumber *target_map, bool upsert)
{
	TupleDesc desc = RelationGetDescr(target);
	TupleConstr *constr = desc->constr;
	bool *from_row;
	bool *check_decided;
	bool every = true;
	bool triggered;

	if (constr == NULL)
		return target;
	triggered = fired_before_row(target, upsert);
	from_row = palloc(sizeof(bool) * desc->natts);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);

		from_row[i] =
			attr->attisdropped || (!triggered && attr->attgenerated == '\0' && target_map[i] > 0);
	}
	/* a generation expression reads no generated column: the staged ones are known */
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);

		if (attr->attisdropped || attr->attgenerated == '\0')
			continue;
		from_row[i] =
			decided_by_row(generation_expression(constr, attr->attnum), from_row, desc->natts);
		every &= from_row[i];
	}
	for (int i = 0; i < desc->natts; i++)
		every &= from_row[i] || !TupleDescAttr(desc, i)->attnotnull;
	check_decided = palloc(sizeof(bool) * Max(constr->num_check, 1));
	for (int c = 0; c < constr->num_check; c++)
	{
		check_decided[c] = decided_by_row(constr->check[c].ccbin, from_row, desc->natts);
		every &= check_decided[c];
	}
	if (every)
		return target;
	return as_decided(target, from_row, check_decided);
}

/*
 * write_check_begin opens the target's btree indexes on plain columns
 * (AccessShareLock, released at the transaction's end) for
 * write_check_row.
 */
IndexChecks *
write_check_begin(Relation target)
{
	IndexChecks *checks = palloc0(sizeof(IndexChecks));
	List *indexes = RelationGetIndexList(target);
	PGAlignedBlock page;
	ListCell *lc;

	PageInit(page.data, BLCKSZ, sizeof(BTPageOpaqueData));
	checks->max_item = BTMaxItemSizeOfPage((Page) page.data);
	checks->target = target;
	checks->checks = palloc0(sizeof(IndexCheck) * Max(list_length(indexes), 1));
	foreach (lc, indexes)
	{
		Relation index = index_open(lfirst_oid(lc), AccessShareLock);
		IndexCheck *check;

		if (index->rd_rel->relam != BTREE_AM_OID || !index->rd_index->indisvalid ||
			RelationGetIndexExpressions(index) != NIL || RelationGetIndexPredicate(index) != NIL)
		{
			index_close(index, AccessShareLock);
			continue;
		}
		check = &checks->checks[checks->count++];
		check->index = index;
		check->natts = index->rd_index->indnatts;
		check->attnums = palloc(sizeof(AttrNumber) * check->natts);
		for (int i = 0; i < check->natts; i++)
			check->attnums[i] = index->rd_index->indkey.values[i];
	}
	list_free(indexes);
	return checks;
}

/* write_check_wanted tells whether the target has an index to check. */
bool
write_check_wanted(const IndexChecks *checks)
{
	return checks != NULL && checks->count > 0;
}

/*
 * index_row_size is the size of the index tuple values would make, as
 * index_form_tuple computes it (an external value fetched, a long one
 * compressed as the index column asks), without its error for a tuple
 * beyond INDEX_SIZE_MASK: the caller says which limit it passes.
 */
static Size
index_row_size(Relation index, Datum *values, bool *isnull)
{
	TupleDesc desc = RelationGetDescr(index);
	Datum stored[INDEX_MAX_KEYS];
	bool hasnull = false;

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		stored[i] = values[i];
		if (isnull[i])
		{
			hasnull = true;
			continue;
		}
		if (att->attlen != -1)
			continue;
		if (VARATT_IS_EXTERNAL(DatumGetPointer(stored[i])))
			stored[i] = PointerGetDatum(
				detoast_external_attr((struct varlena *) DatumGetPointer(stored[i])));
		if (!VARATT_IS_EXTENDED(DatumGetPointer(stored[i])) &&
			VARSIZE(DatumGetPointer(stored[i])) > TOAST_INDEX_TARGET &&
			(att->attstorage == TYPSTORAGE_EXTENDED || att->attstorage == TYPSTORAGE_MAIN))
		{
			Datum compressed = toast_compress_datum(stored[i], att->attcompression);

			if (DatumGetPointer(compressed) != NULL)
				stored[i] = compressed;
		}
	}
	return MAXALIGN(IndexInfoFindDataOffset(hasnull ? INDEX_NULL_MASK : 0) +
					heap_compute_data_size(desc, stored, isnull));
}

/*
 * too_large tells whether the index row of values (the index's columns)
 * could be stored by no btree: beyond a third of a page (or beyond what an
 * index tuple can be at all); *size is its size.
 */
static bool
too_large(IndexChecks *checks, IndexCheck *check, Datum *values, bool *isnull, Size *size)
{
	Size bound = MAXALIGN(sizeof(IndexTupleData) + sizeof(bits8) * 4);
	TupleDesc desc = RelationGetDescr(check->index);

	/* a cheap bound first: a value is never larger in the index than given */
	for (int i = 0; i < check->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (isnull[i])
			continue;
		if (att->attlen == -1)
			bound += MAXALIGN(VARATT_IS_EXTERNAL(DatumGetPointer(values[i]))
								  ? toast_datum_size(values[i]) + VARHDRSZ
								  : VARSIZE_ANY(DatumGetPointer(values[i])));
		else if (att->attlen == -2)
			bound += MAXALIGN(strlen(DatumGetCString(values[i])) + 1);
		else
			bound += MAXALIGN(att->attlen);
	}
	if (bound <= checks->max_item)
		return false;
	*size = index_row_size(check->index, values, isnull);
	return *size > checks->max_item;
}

/*
 * write_check_row raises ERRCODE_PROGRAM_LIMIT_EXCEEDED, as PostgreSQL
 * would at the commit, when the row (in the target's layout) makes an index
 * tuple larger than a btree page holds (nbtree's message) or than an index
 * tuple can be (index_form_tuple's); it names the index in the detail and
 * as the error's constraint.
 */
void
write_check_row(IndexChecks *checks, TupleTableSlot *target_slot, const char *sink_name)
{
	for (int c = 0; c < checks->count; c++)
	{
		IndexCheck *check = &checks->checks[c];
		Datum values[INDEX_MAX_KEYS];
		bool isnull[INDEX_MAX_KEYS];
		const char *index_name = RelationGetRelationName(check->index);
		Size size;

		for (int i = 0; i < check->natts; i++)
		{
			values[i] = target_slot->tts_values[check->attnums[i] - 1];
			isnull[i] = target_slot->tts_isnull[check->attnums[i] - 1];
		}
		if (!too_large(checks, check, values, isnull, &size))
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 size > INDEX_SIZE_MASK
					 ? errmsg("index row requires %zu bytes, maximum size is %zu", size,
							  (Size) INDEX_SIZE_MASK)
					 : errmsg("index row size %zu exceeds btree version %u maximum %zu for index "
							  "\"%s\"",
							  size, BTREE_VERSION, checks->max_item, index_name),
				 errdetail("Refused when written into sink \"%s\": its commit into table \"%s\" "
						   "could never store this row in index \"%s\". Nothing of this "
						   "transaction is staged.",
						   sink_name, RelationGetRelationName(checks->target), index_name),
				 errhint("Values larger than 1/3 of a buffer page cannot be indexed.\n"
						 "Consider a function index of an MD5 hash of the value, or use full "
						 "text indexing."),
				 errtableconstraint(checks->target, index_name)));
	}
}

/*
 * write_check_oversized_index names the btree index of target whose row
 * for the given row (desc's first columns, matched to the target's by
 * name) is too large, or returns NULL: what a commit's 54000 "index row
 * requires ... bytes" does not say (rejects.c names it).
 */
char *
write_check_oversized_index(Relation target, TupleDesc desc, int columns, Datum *values,
							bool *nulls)
{
	IndexChecks *checks = write_check_begin(target);
	char *found = NULL;

	for (int c = 0; c < checks->count && found == NULL; c++)
	{
		IndexCheck *check = &checks->checks[c];
		Datum index_values[INDEX_MAX_KEYS];
		bool index_nulls[INDEX_MAX_KEYS];
		bool complete = true;
		Size size;

		for (int i = 0; i < check->natts; i++)
		{
			const char *name =
				NameStr(TupleDescAttr(RelationGetDescr(target), check->attnums[i] - 1)->attname);
			int column = 0;

			while (column < columns &&
				   strcmp(NameStr(TupleDescAttr(desc, column)->attname), name) != 0)
				column++;
			if (column == columns)
			{
				complete = false;
				break;
			}
			index_values[i] = values[column];
			index_nulls[i] = nulls[column];
		}
		if (complete && too_large(checks, check, index_values, index_nulls, &size))
			found = pstrdup(RelationGetRelationName(check->index));
	}
	write_check_end(checks);
	return found;
}

/* write_check_end closes the indexes write_check_begin opened. */
void
write_check_end(IndexChecks *checks)
{
	if (checks == NULL)
		return;
	for (int c = 0; c < checks->count; c++)
		index_close(checks->checks[c].index, NoLock);
	checks->count = 0;
}
