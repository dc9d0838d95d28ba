/*-------------------------------------------------------------------------
 *
 * write_check.c
 *	  Refusing at write time a row whose commit could never load it.
 *
 * A row the target refuses only when the checkpoint commits poisons the
 * checkpoint (see rejects.c); what can be known when the row is written is
 * refused then, so that the writing transaction fails and nothing of it is
 * staged.  The foreign table's insert already checks the target's NOT NULL
 * and CHECK constraints (fdw.c); this adds btree index row size: a key
 * whose index tuple exceeds what a btree page holds (a third of a page,
 * 2704 bytes with 8 kB pages) fails every insert into that index with
 * SQLSTATE 54000, as nbtree's _bt_check_third_page says it.  The index
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
#include "access/itup.h"
#include "access/nbtree.h"
#include "catalog/pg_am.h"
#include "storage/bufpage.h"
#include "utils/relcache.h"
#include "write_check.h"

/* One btree index of the target to check, on plain columns. */
typedef struct IndexCheck
{
	Relation index;
	int natts;			  /* key and INCLUDE columns */
	AttrNumber *attnums;  /* of the target */
} IndexCheck;

struct IndexChecks
{
	Relation target;
	int count;
	IndexCheck *checks;
	Size max_item; /* BTMaxItemSize of a page of BLCKSZ */
};

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
	checks->max_item = BTMaxItemSize((Page) page.data);
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
 * write_check_row raises ERRCODE_PROGRAM_LIMIT_EXCEEDED, as nbtree would at
 * the commit, when the row (in the target's layout) makes an index tuple
 * larger than a btree page holds, naming the index (as constraint too).
 */
void
write_check_row(IndexChecks *checks, TupleTableSlot *target_slot, const char *sink_name)
{
	TupleDesc desc = target_slot->tts_tupleDescriptor;

	for (int c = 0; c < checks->count; c++)
	{
		IndexCheck *check = &checks->checks[c];
		Datum values[INDEX_MAX_KEYS];
		bool isnull[INDEX_MAX_KEYS];
		Size bound = MAXALIGN(sizeof(IndexTupleData) + sizeof(bits8) * 4);
		IndexTuple tuple;
		Size size;

		for (int i = 0; i < check->natts; i++)
		{
			AttrNumber attnum = check->attnums[i];
			Form_pg_attribute att = TupleDescAttr(desc, attnum - 1);

			values[i] = target_slot->tts_values[attnum - 1];
			isnull[i] = target_slot->tts_isnull[attnum - 1];
			if (isnull[i])
				continue;
			/* at most this large in the index: a stored value is never expanded */
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
			continue;
		tuple = index_form_tuple(RelationGetDescr(check->index), values, isnull);
		size = MAXALIGN(IndexTupleSize(tuple));
		pfree(tuple);
		if (size <= checks->max_item)
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("index row size %zu exceeds btree version %u maximum %zu for index \"%s\"",
						size, BTREE_VERSION, checks->max_item,
						RelationGetRelationName(check->index)),
				 errdetail("Refused when written into sink \"%s\": its commit into table \"%s\" "
						   "could never load this row. Nothing of this transaction is staged.",
						   sink_name, RelationGetRelationName(checks->target)),
				 errhint("Values larger than 1/3 of a buffer page cannot be indexed.\n"
						 "Consider a function index of an MD5 hash of the value, or use full "
						 "text indexing."),
				 errtableconstraint(checks->target, RelationGetRelationName(check->index))));
	}
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
