/*-------------------------------------------------------------------------
 *
 * metadata_heap.c
 *	  The commit path's writes on the extension's tables without SQL: a
 *	  checkpoint's committables, its snapshot and its commit user's marks.
 *
 * A 1-row checkpoint's commit ran five statements to record its snapshot;
 * each paid SPI's plan check, executor start and end for a few index
 * entries, a large part of the committer's CPU for a small commit (the
 * performance page, "Small checkpoints").  Here the same rows are written
 * the way logical replication's apply worker writes a subscriber's tables
 * (execReplication.c): the relation opened in RowExclusiveLock, as the
 * statements took it; the row built in a slot; ExecSimpleRelationInsert and
 * ExecSimpleRelationUpdate, which check the constraints, maintain every
 * index with its unique check and queue the AFTER ROW triggers (the foreign
 * keys to sink_definition), fired as the "statement" ends; the updated row
 * found on the primary key and locked as UPDATE locks it
 * (RelationFindReplTupleByIndex).  A BEFORE trigger of a column not
 * written does not fire, as under the statement.  Permissions are not
 * checked: the statements ran as the committer's role, which owns them.
 *
 * Only the common case takes this path for a snapshot: a checkpoint
 * without properties (nothing to merge into JSON, nothing to delete);
 * metadata.c runs its statements for the others.  The columns named here are the tables' of
 * this version (sql/paimon_sink--0.1--0.2.sql): a missing one is an error.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "core/pg_compat.h"
#include "metadata/metadata_heap.h"

/* One of the extension's tables opened for the executor's simple modifications. */
typedef struct HeapTarget
{
	Relation rel;
	EState *estate;
	ResultRelInfo *info;
	TupleTableSlot *slot; /* a virtual slot of the table's row type */
} HeapTarget;

/* extension_relid returns the oid of the extension's relation of that name; raises 42P01 without it. */
static Oid
extension_relid(const char *name)
{
	Oid relid = get_relname_relid(name, get_namespace_oid("paimon_sink", false));

	if (!OidIsValid(relid))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("relation \"paimon_sink.%s\" does not exist", name)));
	return relid;
}

/* column_of returns the attribute number of a table's column; an internal error without it. */
static AttrNumber
column_of(Relation rel, const char *name)
{
	TupleDesc desc = RelationGetDescr(rel);

	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attribute = TupleDescAttr(desc, i);

		if (!attribute->attisdropped && strcmp(NameStr(attribute->attname), name) == 0)
			return attribute->attnum;
	}
	elog(ERROR, "paimon_sink: table \"%s\" has no column \"%s\"", RelationGetRelationName(rel),
		 name);
	return InvalidAttrNumber; /* keep the compiler quiet */
}

/* slot_set sets a column of a virtual slot being filled. */
static void
slot_set(TupleTableSlot *slot, Relation rel, const char *name, Datum value, bool isnull)
{
	AttrNumber attnum = column_of(rel, name);

	slot->tts_values[attnum - 1] = value;
	slot->tts_isnull[attnum - 1] = isnull;
}

/*
 * target_open opens an extension's table in RowExclusiveLock with an
 * executor state of one result relation, its indexes open and AFTER
 * triggers caught, as the apply worker's create_edata_for_relation does.
 */
static void
target_open(HeapTarget *target, const char *name)
{
	RangeTblEntry *rte = makeNode(RangeTblEntry);
	List *perminfos = NIL;

	target->rel = table_open(extension_relid(name), RowExclusiveLock);
	target->estate = CreateExecutorState();
	rte->rtekind = RTE_RELATION;
	rte->relid = RelationGetRelid(target->rel);
	rte->relkind = target->rel->rd_rel->relkind;
	rte->rellockmode = RowExclusiveLock;
	(void) addRTEPermissionInfo(&perminfos, rte);
	ExecInitRangeTableOfOne(target->estate, rte, perminfos);
	target->info = makeNode(ResultRelInfo);
	InitResultRelInfo(target->info, target->rel, 1, NULL, 0);
	/* where ExecGetTriggerResultRel finds it when the triggers fire */
	target->estate->es_opened_result_relations =
		lappend(target->estate->es_opened_result_relations, target->info);
	target->estate->es_output_cid = GetCurrentCommandId(true);
	target->estate->es_snapshot = GetActiveSnapshot();
	ExecOpenIndices(target->info, false);
	target->slot =
		ExecInitExtraTupleSlot(target->estate, RelationGetDescr(target->rel), &TTSOpsVirtual);
	AfterTriggerBeginQuery();
}

/*
 * target_close fires the queued AFTER triggers (a foreign key's check) and
 * closes what target_open opened; the lock is kept to the transaction's
 * end, as a statement's.
 */
static void
target_close(HeapTarget *target)
{
	ExecCloseIndices(target->info);
	AfterTriggerEndQuery(target->estate);
	ExecResetTupleTable(target->estate->es_tupleTable, false);
	FreeExecutorState(target->estate);
	table_close(target->rel, NoLock);
}

/*
 * text_key fills a scan key of a text column of an index with its
 * collation (text equality needs one).
 */
static void
text_key(ScanKey key, Relation rel, Relation index, int column, const char *name, const char *value)
{
	ScanKeyEntryInitialize(key, 0, column_of(rel, name), BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[column], F_TEXTEQ, CStringGetTextDatum(value));
}

/*
 * has_properties says whether the commit user has properties recorded for
 * the checkpoint or an earlier one: those the statements merge and delete.
 */
static bool
has_properties(const SnapshotEntry *entry, Snapshot snapshot)
{
	Relation rel = table_open(extension_relid("checkpoint_properties"), AccessShareLock);
	Relation index = index_open(extension_relid("checkpoint_properties_pkey"), AccessShareLock);
	ScanKeyData keys[3];
	SysScanDesc scan;
	bool found;

	ScanKeyInit(&keys[0], column_of(rel, "sink_id"), BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum(entry->sink_id));
	text_key(&keys[1], rel, index, 1, "commit_user", entry->commit_user);
	ScanKeyInit(&keys[2], column_of(rel, "checkpoint_id"), BTLessEqualStrategyNumber, F_INT8LE,
				Int64GetDatum(entry->checkpoint_id));
	scan = systable_beginscan_ordered(rel, index, snapshot, lengthof(keys), keys);
	found = systable_getnext_ordered(scan, ForwardScanDirection) != NULL;
	systable_endscan_ordered(scan);
	index_close(index, NoLock);
	table_close(rel, NoLock);
	return found;
}

/*
 * next_snapshot_id returns the id the sink's next snapshot takes: one
 * above its newest, read backwards on the primary key (expiry never removes
 * a sink's newest snapshot, so ids only grow), 1 for none.
 */
static int64
next_snapshot_id(Relation rel, int32 sink_id, Snapshot snapshot)
{
	Relation index = index_open(extension_relid("snapshot_log_pkey"), AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;
	int64 newest = 0;

	ScanKeyInit(&key, column_of(rel, "sink_id"), BTEqualStrategyNumber, F_INT4EQ,
				Int32GetDatum(sink_id));
	scan = systable_beginscan_ordered(rel, index, snapshot, 1, &key);
	tuple = systable_getnext_ordered(scan, BackwardScanDirection);
	if (tuple != NULL)
	{
		bool isnull;

		newest = DatumGetInt64(
			heap_getattr(tuple, column_of(rel, "snapshot_id"), RelationGetDescr(rel), &isnull));
	}
	systable_endscan_ordered(scan);
	index_close(index, NoLock);
	return newest + 1;
}

/* insert_snapshot inserts the snapshot's row into snapshot_log: metadata.c's INSERT, no properties. */
static void
insert_snapshot(const SnapshotEntry *entry, int64 snapshot_id)
{
	HeapTarget target;
	TupleTableSlot *slot;
	Relation rel;

	target_open(&target, "snapshot_log");
	slot = target.slot;
	rel = target.rel;
	ExecClearTuple(slot);
	memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
	slot_set(slot, rel, "sink_id", Int32GetDatum(entry->sink_id), false);
	slot_set(slot, rel, "snapshot_id", Int64GetDatum(snapshot_id), false);
	slot_set(slot, rel, "commit_user", CStringGetTextDatum(entry->commit_user), false);
	slot_set(slot, rel, "commit_identifier", Int64GetDatum(entry->checkpoint_id), false);
	slot_set(slot, rel, "commit_kind",
			 CStringGetTextDatum(entry->commit_kind == NULL ? "APPEND" : entry->commit_kind),
			 false);
	slot_set(slot, rel, "row_count", Int64GetDatum(entry->row_count), false);
	slot_set(slot, rel, "file_count", Int32GetDatum(entry->file_count), false);
	/* the column's default, now(): the transaction's start */
	slot_set(slot, rel, "committed_at", TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
			 false);
	slot_set(slot, rel, "byte_count", Int64GetDatum(entry->byte_count), false);
	slot_set(slot, rel, "load_ms", Float8GetDatum(entry->load_ms), false);
	ExecStoreVirtualTuple(slot);
	ExecSimpleRelationInsert(target.info, target.estate, slot);
	target_close(&target);
}

/*
 * update_commit_user updates the commit user's row of commit_user_state:
 * change sets the new values in a copy of the row (the other columns
 * unchanged).  The row is locked as an UPDATE of columns outside any key
 * locks it, waiting as it waits; a commit user without a row is left so,
 * as an UPDATE leaves it.
 */
static void
update_commit_user(int32 sink_id, const char *commit_user,
				   void (*change)(TupleTableSlot *row, Relation rel, const void *arg),
				   const void *arg)
{
	HeapTarget target;
	TupleTableSlot *found;
	Relation rel;
	int natts;

	target_open(&target, "commit_user_state");
	rel = target.rel;
	natts = RelationGetDescr(rel)->natts;
	ExecClearTuple(target.slot);
	memset(target.slot->tts_isnull, true, sizeof(bool) * natts);
	slot_set(target.slot, rel, "sink_id", Int32GetDatum(sink_id), false);
	slot_set(target.slot, rel, "commit_user", CStringGetTextDatum(commit_user), false);
	ExecStoreVirtualTuple(target.slot);
	found = table_slot_create(rel, &target.estate->es_tupleTable);
	if (RelationFindReplTupleByIndex(rel, extension_relid("commit_user_state_pkey"),
									 LockTupleNoKeyExclusive, target.slot, found))
	{
		TupleTableSlot *updated =
			ExecInitExtraTupleSlot(target.estate, RelationGetDescr(rel), &TTSOpsVirtual);
		EPQState epqstate;

		slot_getallattrs(found);
		ExecClearTuple(updated);
		memcpy(updated->tts_values, found->tts_values, sizeof(Datum) * natts);
		memcpy(updated->tts_isnull, found->tts_isnull, sizeof(bool) * natts);
		change(updated, rel, arg);
		ExecStoreVirtualTuple(updated);
		EvalPlanQualInit(&epqstate, target.estate, NULL, NIL, -1, NIL);
		ExecSimpleRelationUpdate(target.info, target.estate, &epqstate, found, updated);
		EvalPlanQualEnd(&epqstate);
	}
	target_close(&target);
}

/* The snapshot a commit user's marks move to, and what it counts in sink_stats. */
typedef struct CommittedMark
{
	int64 checkpoint_id;
	int64 snapshot_id;
	int64 row_count;
	int64 byte_count;
} CommittedMark;

/* add_to adds amount to a bigint counter of a row being changed (NULL counts as 0). */
static void
add_to(TupleTableSlot *row, Relation rel, const char *name, int64 amount)
{
	AttrNumber attnum = column_of(rel, name);
	int64 value = row->tts_isnull[attnum - 1] ? 0 : DatumGetInt64(row->tts_values[attnum - 1]);

	slot_set(row, rel, name, Int64GetDatum(value + amount), false);
}

/*
 * set_committed sets the marks of a committed snapshot and counts it (one
 * commit, its rows and bytes) in the same row version: metadata.c's UPDATE
 * of commit_user_state (the last committed properties are the snapshot's,
 * none).
 */
static void
set_committed(TupleTableSlot *row, Relation rel, const void *arg)
{
	const CommittedMark *mark = arg;

	add_to(row, rel, "commits", 1);
	add_to(row, rel, "rows_committed", mark->row_count);
	add_to(row, rel, "bytes_committed", mark->byte_count);
	slot_set(row, rel, "last_committed_checkpoint", Int64GetDatum(mark->checkpoint_id), false);
	slot_set(row, rel, "last_snapshot_id", Int64GetDatum(mark->snapshot_id), false);
	/* the clock, not the transaction's start: a commit may wait on locks first */
	slot_set(row, rel, "last_committed_at", TimestampTzGetDatum(GetCurrentTimestamp()), false);
	slot_set(row, rel, "last_committed_properties", (Datum) 0, true);
}

/* raise_prepared raises the last prepared checkpoint to at least the arg's (an int64 *). */
static void
raise_prepared(TupleTableSlot *row, Relation rel, const void *arg)
{
	AttrNumber attnum = column_of(rel, "last_prepared_checkpoint");
	int64 checkpoint_id = *(const int64 *) arg;

	if (row->tts_isnull[attnum - 1] || DatumGetInt64(row->tts_values[attnum - 1]) < checkpoint_id)
		slot_set(row, rel, "last_prepared_checkpoint", Int64GetDatum(checkpoint_id), false);
}

/*
 * metadata_heap_record_snapshot records a checkpoint without properties as
 * the sink's next snapshot and moves its commit user's marks to it, in the
 * caller's transaction, as metadata_record_snapshot's statements do;
 * returns false, having written nothing, when the commit user has
 * properties recorded up to the checkpoint (the statements merge and
 * delete them).  Sets *snapshot_id to the snapshot's id.  Raises what the
 * statements raise: 23505 for a snapshot recorded twice, 23503 for a sink
 * gone.
 */
bool
metadata_heap_record_snapshot(const SnapshotEntry *entry, int64 *snapshot_id)
{
	Relation log;

	/* what the statements before saw, as SPI makes it visible to each */
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	if (has_properties(entry, GetActiveSnapshot()))
	{
		PopActiveSnapshot();
		return false;
	}
	log = table_open(extension_relid("snapshot_log"), RowExclusiveLock);
	*snapshot_id = next_snapshot_id(log, entry->sink_id, GetActiveSnapshot());
	table_close(log, NoLock);
	insert_snapshot(entry, *snapshot_id);
	CommandCounterIncrement();
	{
		CommittedMark mark = {entry->checkpoint_id, *snapshot_id, entry->row_count,
							  entry->byte_count};

		update_commit_user(entry->sink_id, entry->commit_user, set_committed, &mark);
	}
	PopActiveSnapshot();
	CommandCounterIncrement();
	return true;
}

/*
 * metadata_heap_raise_prepared raises the commit user's last prepared
 * checkpoint to at least checkpoint_id, as metadata_move_marks'
 * MARK_RAISE_PREPARED statement does, in the caller's transaction.
 */
void
metadata_heap_raise_prepared(int32 sink_id, const char *commit_user, int64 checkpoint_id)
{
	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	update_commit_user(sink_id, commit_user, raise_prepared, &checkpoint_id);
	PopActiveSnapshot();
	CommandCounterIncrement();
}

/*
 * metadata_heap_record_committable records a sealed file for its
 * checkpoint, as metadata_record_committable's INSERT ... ON CONFLICT
 * (file_name) DO NOTHING does, in the caller's transaction; false when the
 * file was recorded already (a barrier answered twice), seen as ON
 * CONFLICT sees it, through a dirty snapshot on the primary key.  Raises
 * 23503 for a sink gone.
 */
bool
metadata_heap_record_committable(const CommittableEntry *entry)
{
	HeapTarget target;
	TupleTableSlot *slot;
	Relation rel;
	Relation index;
	ScanKeyData key;
	SysScanDesc scan;
	SnapshotData dirty;
	bool recorded;
	Datum *offsets = palloc(sizeof(Datum) * Max(1, entry->excluded_count));

	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	target_open(&target, "committable");
	rel = target.rel;
	index = index_open(extension_relid("committable_pkey"), AccessShareLock);
	text_key(&key, rel, index, 0, "file_name", entry->file_name);
	InitDirtySnapshot(dirty);
	scan = systable_beginscan(rel, RelationGetRelid(index), true, &dirty, 1, &key);
	recorded = systable_getnext(scan) != NULL;
	systable_endscan(scan);
	index_close(index, NoLock);
	if (!recorded)
	{
		for (int i = 0; i < entry->excluded_count; i++)
			offsets[i] = Int64GetDatum(entry->excluded[i]);
		slot = target.slot;
		ExecClearTuple(slot);
		memset(slot->tts_isnull, true, sizeof(bool) * slot->tts_tupleDescriptor->natts);
		slot_set(slot, rel, "file_name", CStringGetTextDatum(entry->file_name), false);
		slot_set(slot, rel, "sink_id", Int32GetDatum(entry->sink_id), false);
		slot_set(slot, rel, "commit_user", CStringGetTextDatum(entry->commit_user), false);
		slot_set(slot, rel, "checkpoint_id", Int64GetDatum(entry->checkpoint_id), false);
		slot_set(slot, rel, "writer_id", Int32GetDatum(entry->writer_id), false);
		slot_set(slot, rel, "bucket", Int32GetDatum(entry->bucket), false);
		slot_set(slot, rel, "row_count", Int64GetDatum(entry->row_count), false);
		slot_set(slot, rel, "byte_count", Int64GetDatum(entry->byte_count), false);
		slot_set(slot, rel, "excluded_offsets",
				 PointerGetDatum(construct_array(offsets, entry->excluded_count, INT8OID, 8,
												 FLOAT8PASSBYVAL, TYPALIGN_DOUBLE)),
				 false);
		slot_set(slot, rel, "max_sequence", Int64GetDatum(entry->max_sequence), false);
		/* the column's default, now(): the transaction's start */
		slot_set(slot, rel, "prepared_at",
				 TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()), false);
		ExecStoreVirtualTuple(slot);
		ExecSimpleRelationInsert(target.info, target.estate, slot);
	}
	target_close(&target);
	PopActiveSnapshot();
	CommandCounterIncrement();
	return !recorded;
}

/* marks_of reads a commit user's marks from its row in a slot. */
static void
marks_of(TupleTableSlot *row, Relation rel, CommitUserMarks *marks)
{
	bool isnull;

	marks->last_prepared =
		DatumGetInt64(slot_getattr(row, column_of(rel, "last_prepared_checkpoint"), &isnull));
	marks->last_committed =
		DatumGetInt64(slot_getattr(row, column_of(rel, "last_committed_checkpoint"), &isnull));
	marks->fence_epoch =
		(uint64) DatumGetInt64(slot_getattr(row, column_of(rel, "fence_epoch"), &isnull));
	marks->epoch_required =
		DatumGetBool(slot_getattr(row, column_of(rel, "epoch_required"), &isnull));
}

/*
 * metadata_heap_read_marks reads a commit user's marks into *marks, as
 * metadata_commit_user_marks' SELECT does (under a snapshot taken for it);
 * for_update locks the row first, as its FOR UPDATE does (the table in
 * RowShareLock, the row waited for and read in its newest version).
 * Returns false when the commit user has no row.
 */
bool
metadata_heap_read_marks(int32 sink_id, const char *commit_user, bool for_update,
						 CommitUserMarks *marks)
{
	Relation rel;
	Oid index_id = extension_relid("commit_user_state_pkey");
	TupleTableSlot *search;
	TupleTableSlot *found;
	bool exists;

	CommandCounterIncrement();
	PushActiveSnapshot(GetTransactionSnapshot());
	rel = table_open(extension_relid("commit_user_state"),
					 for_update ? RowShareLock : AccessShareLock);
	found = table_slot_create(rel, NULL);
	if (for_update)
	{
		search = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
		ExecClearTuple(search);
		memset(search->tts_isnull, true, sizeof(bool) * RelationGetDescr(rel)->natts);
		slot_set(search, rel, "sink_id", Int32GetDatum(sink_id), false);
		slot_set(search, rel, "commit_user", CStringGetTextDatum(commit_user), false);
		ExecStoreVirtualTuple(search);
		exists = RelationFindReplTupleByIndex(rel, index_id, LockTupleExclusive, search, found);
		ExecDropSingleTupleTableSlot(search);
	}
	else
	{
		Relation index = index_open(index_id, AccessShareLock);
		ScanKeyData keys[2];
		SysScanDesc scan;
		HeapTuple tuple;

		ScanKeyInit(&keys[0], column_of(rel, "sink_id"), BTEqualStrategyNumber, F_INT4EQ,
					Int32GetDatum(sink_id));
		text_key(&keys[1], rel, index, 1, "commit_user", commit_user);
		scan = systable_beginscan_ordered(rel, index, GetActiveSnapshot(), lengthof(keys), keys);
		tuple = systable_getnext_ordered(scan, ForwardScanDirection);
		exists = tuple != NULL;
		if (exists)
			ExecForceStoreHeapTuple(tuple, found, false);
		systable_endscan_ordered(scan);
		index_close(index, NoLock);
	}
	if (exists)
		marks_of(found, rel, marks);
	ExecDropSingleTupleTableSlot(found);
	table_close(rel, NoLock);
	PopActiveSnapshot();
	return exists;
}
