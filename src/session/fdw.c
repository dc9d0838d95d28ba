/*-------------------------------------------------------------------------
 *
 * fdw.c
 *	  The foreign-data wrapper behind every sink's foreign table.
 *
 * Structure after contrib/postgres_fdw and file_fdw: a validator with a
 * table of valid options, the insert callbacks (BeginForeignModify,
 * ExecForeignInsert, BeginForeignInsert for COPY and partition routing) and
 * scan callbacks that refuse reading, pointing at the target table.  No
 * batch insert: it exists to save round trips, and here would only copy
 * every row once more.
 *
 * Every way in meets the same checks: a direct INSERT (through a view, a
 * rule or a trigger too, and postgres_fdw's remote INSERT) starts in
 * BeginForeignModify, COPY and rows routed from a partitioned table in
 * BeginForeignInsert; both check the commit user, and each row meets the
 * checks below.  ON CONFLICT is refused in both (the planner's
 * PlanForeignModify never runs for a routed partition), and so are rows
 * that an UPDATE moves or MERGE routes into the sink.
 *
 * The executor does not check constraints of foreign tables, so each row is
 * converted to the target's row type and checked with ExecConstraints here,
 * so that a bad row fails the INSERT or COPY that brought it, not a later
 * commit; only what the row decides is checked (write_check.c).
 *
 * The sink and layouts of each foreign table, cached for the session, and
 * the fence epochs it joined are fdw_session.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/reloptions.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/tupconvert.h"
#include "catalog/pg_foreign_table.h"
#include "commands/defrem.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "executor/nodeModifyTable.h"
#include "foreign/fdwapi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "parser/parsetree.h"
#include "port/pg_bswap.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "core/names.h"
#include "core/security.h"
#include "ipc/handoff_queue.h"
#include "metadata/catalog.h"
#include "metadata/write_check.h"
#include "session/fdw.h"
#include "session/fdw_session.h"
#include "session/handoff.h"
#include "session/write_identity.h"
#include "staging/value_encoding.h"

PG_FUNCTION_INFO_V1(paimon_sink_fdw_handler);
PG_FUNCTION_INFO_V1(paimon_sink_fdw_validator);

/* Row kinds of a change stream (Flink's RowKind, as Paimon takes them). */
typedef enum RowKind
{
	ROW_KIND_UPSERT,		/* +I, +U, or no kind given */
	ROW_KIND_UPDATE_BEFORE, /* -U, as written */
	ROW_KIND_DELETE,		/* -D as written; staged: delete the key */
	ROW_KIND_RETRACT		/* staged: retract the row version given (-U or -D) */
} RowKind;

/* Per-statement insert state. */
typedef struct SinkInsertState
{
	const SinkLayout *layout; /* lives until the transaction ends */
	StreamIdentity stream;
	uint64 fence_epoch; /* the commit user's, read by this statement */
	int fixed_bucket;
	Relation target;
	ResultRelInfo *target_info;
	TupleTableSlot *target_slot;
	EState *estate;
	StringInfoData line;
	MemoryContext row_context;
	IndexChecks *index_checks; /* the target's btree indexes (write_check.c) */
	bool whole_rows;		   /* the statement names every non-key column (a retraction's row) */
} SinkInsertState;

/* refuse_reading refuses (ERRCODE_FEATURE_NOT_SUPPORTED) any read of a sink's foreign table. */
static void
refuse_reading(Oid relid)
{
	const SinkInfo *sink = &fdw_sink_of_foreign_table(relid, NULL, NULL)->sink;

	ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					errmsg("cannot read from foreign table \"%s\" of sink \"%s\"",
						   get_rel_name(relid), sink->name),
					errdetail("A sink's foreign table only takes INSERT and COPY FROM; committed "
							  "rows land in the target table."),
					errhint("Query the target table \"%s\" instead.", get_rel_name(sink->target))));
}

/* sinkGetForeignRelSize refuses to plan a read. */
static void
sinkGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	refuse_reading(foreigntableid);
}

/* sinkGetForeignPaths refuses to plan a read. */
static void
sinkGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid)
{
	refuse_reading(foreigntableid);
}

/* sinkGetForeignPlan refuses to plan a read. */
static ForeignScan *
sinkGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid,
				   ForeignPath *best_path, List *tlist, List *scan_clauses, Plan *outer_plan)
{
	refuse_reading(foreigntableid);
	return NULL;
}

/* sinkBeginForeignScan refuses to start a read. */
static void
sinkBeginForeignScan(ForeignScanState *node, int eflags)
{
	refuse_reading(RelationGetRelid(node->ss.ss_currentRelation));
}

/* sinkIterateForeignScan returns no row: a scan never starts. */
static TupleTableSlot *
sinkIterateForeignScan(ForeignScanState *node)
{
	return NULL;
}

/* sinkReScanForeignScan does nothing: a scan never starts. */
static void
sinkReScanForeignScan(ForeignScanState *node)
{
}

/* sinkEndForeignScan does nothing: a scan never starts. */
static void
sinkEndForeignScan(ForeignScanState *node)
{
}

/*
 * refuse_on_conflict refuses (ERRCODE_FEATURE_NOT_SUPPORTED) an INSERT ...
 * ON CONFLICT into a sink's foreign table, named directly or reached by
 * partition routing: a conflict shows only when the checkpoint commits, and
 * then fails that commit and every later one.
 */
static void
refuse_on_conflict(Oid relid)
{
	const SinkInfo *sink = &fdw_sink_of_foreign_table(relid, NULL, NULL)->sink;
	bool upsert = SINK_IS_UPSERT(sink);

	ereport(
		ERROR,
		(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
		 errmsg("INSERT with ON CONFLICT is not supported on foreign table \"%s\" of sink \"%s\"",
				get_rel_name(relid), sink->name),
		 upsert ? errdetail("An upsert sink applies the latest version of each key when a "
							"checkpoint commits: a key already there is updated.")
				: errdetail("Rows reach the target when a checkpoint commits; a conflict "
							"is only known then, and fails that commit."),
		 upsert ? errhint("Insert without ON CONFLICT.")
				: errhint("Insert without ON CONFLICT, and keep conflicting rows out of "
						  "the sink, or use an upsert sink.")));
}

/*
 * refuse_routing refuses (ERRCODE_FEATURE_NOT_SUPPORTED) rows routed into a
 * sink's foreign table partition by an UPDATE that moves them out of
 * another partition, or by MERGE.  The moved row would leave its partition
 * when the statement's transaction commits but reach the target only when
 * a checkpoint commits (or never, if that commit refuses it); MERGE decides
 * what to insert by matching the target as it is now, which a sink's rows
 * join only later (PostgreSQL refuses MERGE on a foreign table as well).
 */
static void
refuse_routing(Oid relid, CmdType operation)
{
	const SinkInfo *sink = &fdw_sink_of_foreign_table(relid, NULL, NULL)->sink;

	if (operation == CMD_UPDATE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot move a row into foreign table \"%s\" of sink \"%s\" by UPDATE",
						get_rel_name(relid), sink->name),
				 errdetail("The row would leave its partition when this transaction commits, "
						   "but reach the target only when a checkpoint commits."),
				 errhint("Delete the row and insert it into the sink, or keep the UPDATE "
						 "within its partition.")));
	if (operation == CMD_MERGE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("MERGE cannot insert into foreign table \"%s\" of sink \"%s\"",
						get_rel_name(relid), sink->name),
				 errdetail("MERGE matches rows against the target as it is now; a sink's rows "
						   "reach it only when a checkpoint commits."),
				 errhint("Insert into the sink with INSERT ... SELECT.")));
	elog(ERROR, "unexpected command %d routing rows into foreign table \"%s\"", (int) operation,
		 get_rel_name(relid));
}

/* sinkPlanForeignModify refuses INSERT ... ON CONFLICT (refuse_on_conflict). */
static List *
sinkPlanForeignModify(PlannerInfo *root, ModifyTable *plan, Index resultRelation, int subplan_index)
{
	if (plan->onConflictAction != ONCONFLICT_NONE)
		refuse_on_conflict(planner_rt_fetch(resultRelation, root)->relid);
	return NIL;
}

/* sinkIsForeignRelUpdatable says that a sink takes INSERT only. */
static int
sinkIsForeignRelUpdatable(Relation rel)
{
	return (1 << CMD_INSERT);
}

/*
 * names_whole_rows tells whether a statement whose named columns are
 * inserted (ExecGetInsertedCols; none known: all) names every non-key
 * column: only then does a retraction carry the row it retracts, and not
 * the defaults of columns left out.
 */
static bool
names_whole_rows(const SinkLayout *layout, Bitmapset *inserted)
{
	if (!layout->upsert || bms_is_empty(inserted))
		return true;
	for (int i = 0; i < layout->column_count; i++)
	{
		AttrNumber attnum = layout->columns[i];

		if (attnum != layout->row_kind_attnum && !layout->is_key[attnum - 1] &&
			!bms_is_member(attnum - FirstLowInvalidHeapAttributeNumber, inserted))
			return false;
	}
	return true;
}

/*
 * refuse_from_worker refuses (ERRCODE_FEATURE_NOT_SUPPORTED) rows written
 * into a sink by one of paimon_sink's workers: a commit whose load writes
 * into a sink (its foreign table a partition of the target, a trigger of
 * the target inserting into one) could never end, for its transaction is
 * prepared and a transaction that wrote to a sink cannot be; each retry
 * would fail the same way at its PREPARE, naming neither cause.
 */
static void
refuse_from_worker(Relation rel, const SinkInfo *sink)
{
	if (security_in_worker())
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("a sink's commit cannot write into sink \"%s\"", sink->name),
				 errdetail("The load of a checkpoint wrote into foreign table \"%s\": its target "
						   "routes rows to it as a partition, or a trigger of the target inserts "
						   "into it. The commit's transaction is prepared, and a transaction "
						   "that wrote to a sink cannot be.",
						   RelationGetRelationName(rel)),
				 errhint("Detach foreign table \"%s\" from the target's partitions, or keep the "
						 "target's triggers from writing into sinks; the checkpoint waits "
						 "and commits once they do.",
						 RelationGetRelationName(rel))));
}

/* Set up the insert state of a statement (INSERT or COPY). */
static SinkInsertState *
begin_insert(ResultRelInfo *rinfo, EState *estate)
{
	Relation rel = rinfo->ri_RelationDesc;
	SinkInsertState *state = palloc0(sizeof(SinkInsertState));
	const SinkLayout *layout;
	const char *commit_user;
	WriteIdentity identity;

	/*
	 * The target is opened for constraint checks (the commit takes the real
	 * locks); its lock takes in invalidations, so the layout is read after.
	 */
	layout = fdw_sink_of_foreign_table(RelationGetRelid(rel), NULL, NULL);
	refuse_from_worker(rel, &layout->sink);
	state->target = catalog_open_target(&layout->sink, false, AccessShareLock);
	layout = fdw_sink_of_foreign_table(RelationGetRelid(rel), rel, state->target);
	state->layout = layout;
	state->estate = estate;

	/* write_as() in this transaction, else the session's settings */
	identity = write_identity_of(&layout->sink);
	commit_user = identity.commit_user;
	if (commit_user == NULL)
	{
		fdw_session_refuse_anonymous(&layout->sink);
		commit_user = layout->sink.default_commit_user;
	}
	paimon_sink_check_commit_user(commit_user);
	state->fence_epoch =
		fdw_session_write_epoch(&layout->sink, commit_user, identity.fence_epoch, "a write");
	state->stream.sink_id = layout->sink.sink_id;
	state->stream.sink_uuid = layout->sink.sink_uuid;
	state->stream.writer_id = identity.writer_id;
	strlcpy(state->stream.commit_user, commit_user, sizeof(state->stream.commit_user));
	state->fixed_bucket = MyProcPid % layout->sink.buckets;

	state->target_info = makeNode(ResultRelInfo);
	/* the target as far as a row decides it: columns the sink does not stage are the load's */
	InitResultRelInfo(state->target_info,
					  write_check_decided_target(state->target, layout->target_map, layout->upsert),
					  0, NULL, 0);
	state->target_slot = table_slot_create(state->target, &estate->es_tupleTable);
	state->index_checks = write_check_begin(state->target);
	state->whole_rows = names_whole_rows(layout, ExecGetInsertedCols(rinfo, estate));
	initStringInfo(&state->line);
	/* a block that holds a whole row's send buffers: a reset frees nothing */
	state->row_context =
		AllocSetContextCreate(CurrentMemoryContext, "paimon_sink row", ALLOCSET_DEFAULT_SIZES);
	return state;
}

/*
 * Check a row against the target's NOT NULL and CHECK constraints that the
 * row decides (write_check_decided_target), and the size of its btree
 * index rows (write_check.c): what the commit would refuse, refused now.
 * The target's columns the sink does not stage are NULL here, and are
 * neither checked nor used to compute a generated column.
 */
static void
check_target_constraints(SinkInsertState *state, TupleTableSlot *slot)
{
	TupleTableSlot *target_slot = state->target_slot;
	TupleDesc target_desc = RelationGetDescr(state->target_info->ri_RelationDesc);

	if (target_desc->constr == NULL && !write_check_wanted(state->index_checks))
		return;
	ExecClearTuple(target_slot);
	for (int i = 0; i < target_desc->natts; i++)
	{
		AttrNumber source = state->layout->target_map[i];

		if (source > 0)
		{
			target_slot->tts_values[i] = slot->tts_values[source - 1];
			target_slot->tts_isnull[i] = slot->tts_isnull[source - 1];
		}
		else
		{
			target_slot->tts_values[i] = (Datum) 0;
			target_slot->tts_isnull[i] = true;
		}
	}
	ExecStoreVirtualTuple(target_slot);
	if (target_desc->constr != NULL)
	{
		if (target_desc->constr->has_generated_stored)
			ExecComputeStoredGenerated(state->target_info, state->estate, target_slot, CMD_INSERT);
		ExecConstraints(state->target_info, target_slot, state->estate);
	}
	if (write_check_wanted(state->index_checks))
		write_check_row(state->index_checks, target_slot, state->layout->sink.name);
}

/*
 * Encode a row as one tuple of COPY's binary format (field count, then each
 * field's length and send-function bytes).  An upsert sink's row kind is
 * staged canonical: NULL for an upsert, "-D" for a delete of the key, whose
 * other columns than the key are staged as NULL (it needs only its key), and
 * "-R" for the retraction of the row version it carries (upsert.c).
 */
static void
encode_row_fields(SinkInsertState *state, TupleTableSlot *slot, RowKind kind)
{
	const SinkLayout *layout = state->layout;
	uint16 count = pg_hton16((uint16) layout->column_count);

	resetStringInfo(&state->line);
	appendBinaryStringInfo(&state->line, (char *) &count, sizeof(count));
	for (int i = 0; i < layout->column_count; i++)
	{
		AttrNumber attnum = layout->columns[i];
		uint32 length;

		if (attnum == layout->row_kind_attnum && layout->upsert)
		{
			length = pg_hton32(kind == ROW_KIND_UPSERT ? (uint32) -1 : 2);
			appendBinaryStringInfo(&state->line, (char *) &length, sizeof(length));
			if (kind != ROW_KIND_UPSERT)
				appendBinaryStringInfo(&state->line, kind == ROW_KIND_DELETE ? "-D" : "-R", 2);
			continue;
		}
		if (slot->tts_isnull[attnum - 1] ||
			(kind == ROW_KIND_DELETE && !layout->is_key[attnum - 1]))
		{
			length = pg_hton32((uint32) -1);
			appendBinaryStringInfo(&state->line, (char *) &length, sizeof(length));
			continue;
		}
		value_encoding_append(&state->line, layout->encodings[i], &layout->send_functions[i],
							  slot->tts_values[attnum - 1]);
	}
}

/*
 * The bucket of a row: a hash of its bucket key's values, by each type's
 * own hash function (so values that compare equal meet in one bucket), or
 * of the send-function bytes for a type without one.
 */
static int
row_bucket(SinkInsertState *state, TupleTableSlot *slot)
{
	const SinkLayout *layout = state->layout;
	uint32 hash = 0;

	if (layout->bucket_key_count == 0)
		return state->fixed_bucket;
	for (int k = 0; k < layout->bucket_key_count; k++)
	{
		AttrNumber attnum = layout->bucket_attnums[k];
		uint32 value_hash = 0;

		if (!slot->tts_isnull[attnum - 1])
		{
			Datum value = slot->tts_values[attnum - 1];

			if (layout->bucket_hash[k].fn_oid != InvalidOid)
				value_hash = DatumGetUInt32(
					FunctionCall1Coll(&layout->bucket_hash[k], layout->bucket_collation[k], value));
			else
			{
				int column = 0;
				bytea *bytes;

				while (layout->columns[column] != attnum)
					column++;
				bytes = SendFunctionCall(&layout->send_functions[column], value);
				value_hash =
					hash_bytes((unsigned char *) VARDATA(bytes), VARSIZE(bytes) - VARHDRSZ);
			}
		}
		hash = hash_combine(hash, value_hash);
	}
	return (int) (hash % layout->sink.buckets);
}

/*
 * Send functions of text-like types (text, varchar, json, enums, and
 * arrays or records of them) convert to the session's client encoding; the
 * committer reads the rows back in the database encoding.  So a session
 * whose client encoding is not the database's is switched to the database
 * encoding while a row is encoded and its bucket computed (a bucket key
 * without a hash function hashes its send bytes: the same in every
 * session), and back even on error: a SQL_ASCII session too unless the
 * database is UTF-8, and any session of a SQL_ASCII database, whose values
 * are bytes (send functions would check them in the client encoding, which
 * an INSERT into a table does not).  The encoding is read for each row: a
 * function of the statement may change it.  Xml values are staged in UTF-8
 * outside a UTF-8 database (value_encoding.c).  SetClientEncoding needs no
 * catalog access for either switch: the session's conversion is already
 * prepared.
 */
static void
encode_row(SinkInsertState *state, TupleTableSlot *slot, RowKind kind)
{
	int client_encoding = pg_get_client_encoding();
	int database_encoding = GetDatabaseEncoding();

	/* SQL_ASCII: nothing converts, and xml_send declares nothing (xml_recv reads UTF-8) */
	if (client_encoding == database_encoding ||
		(client_encoding == PG_SQL_ASCII && database_encoding == PG_UTF8))
	{
		encode_row_fields(state, slot, kind);
		state->stream.bucket = row_bucket(state, slot);
		return;
	}
	if (SetClientEncoding(database_encoding) < 0)
		elog(ERROR, "could not switch to the database encoding");
	PG_TRY();
	{
		encode_row_fields(state, slot, kind);
		/* a bucket key without a hash function hashes its send bytes: the same in every session */
		state->stream.bucket = row_bucket(state, slot);
	}
	PG_FINALLY();
	{
		if (SetClientEncoding(client_encoding) < 0)
			elog(FATAL, "could not restore the client encoding \"%s\"",
				 pg_encoding_to_char(client_encoding));
	}
	PG_END_TRY();
}

/*
 * An upsert sink's row: its kind (ERRCODE_INVALID_PARAMETER_VALUE for an
 * unknown one) and a key without NULLs (ERRCODE_NOT_NULL_VIOLATION).  The
 * error aborts the writing transaction, so nothing of it is staged.
 */
static RowKind
check_change(SinkInsertState *state, TupleTableSlot *slot)
{
	const SinkLayout *layout = state->layout;
	AttrNumber kind_attnum = layout->row_kind_attnum;
	RowKind kind = ROW_KIND_UPSERT;

	if (!slot->tts_isnull[kind_attnum - 1])
	{
		text *value = DatumGetTextPP(slot->tts_values[kind_attnum - 1]);
		const char *data = VARDATA_ANY(value);

		if (VARSIZE_ANY_EXHDR(value) == 2 &&
			(memcmp(data, "+I", 2) == 0 || memcmp(data, "+U", 2) == 0))
			kind = ROW_KIND_UPSERT;
		else if (VARSIZE_ANY_EXHDR(value) == 2 && memcmp(data, "-U", 2) == 0)
			kind = ROW_KIND_UPDATE_BEFORE;
		else if (VARSIZE_ANY_EXHDR(value) == 2 && memcmp(data, "-D", 2) == 0)
			kind = ROW_KIND_DELETE;
		else
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("invalid row kind \"%s\" for sink \"%s\"",
								   text_to_cstring(value), layout->sink.name),
							errdetail("Column \"%s\" takes +I (insert), +U (update after), -U "
									  "(update before) or -D (delete); NULL is an upsert.",
									  layout->sink.row_kind_column),
							errhint("Nothing of this transaction is staged.")));
	}
	for (int k = 0; k < layout->key_count; k++)
		if (slot->tts_isnull[layout->key_attnums[k] - 1])
			ereport(
				ERROR,
				(errcode(ERRCODE_NOT_NULL_VIOLATION),
				 errmsg("null value in key column \"%s\" of sink \"%s\"",
						NameStr(TupleDescAttr(slot->tts_tupleDescriptor, layout->key_attnums[k] - 1)
									->attname),
						layout->sink.name),
				 errdetail(
					 "Every change of an upsert sink names its row by the target's primary key."),
				 errhint("Nothing of this transaction is staged.")));
	return kind;
}

/*
 * staged_kind decides how an upsert sink stages a change (or that it drops
 * it: ROW_KIND_UPDATE_BEFORE): -U and -D are retractions, dropped with
 * ignore_update_before (-U) and ignore_delete (both, as Paimon's
 * ignore-delete); a retraction carries the row version it retracts when the
 * statement names every non-key column and one of them is not NULL (or the
 * target has key columns only), else it deletes the key.  A partial row does
 * not name a version: partial_update sinks delete the key.
 */
static RowKind
staged_kind(SinkInsertState *state, TupleTableSlot *slot, RowKind kind)
{
	const SinkLayout *layout = state->layout;
	bool all_key = true;

	if (kind == ROW_KIND_UPSERT)
		return kind;
	if (layout->sink.ignore_delete ||
		(kind == ROW_KIND_UPDATE_BEFORE && layout->sink.ignore_update_before))
		return ROW_KIND_UPDATE_BEFORE;
	if (layout->sink.partial_update || !state->whole_rows)
		return ROW_KIND_DELETE;
	for (int i = 0; i < layout->column_count; i++)
	{
		AttrNumber attnum = layout->columns[i];

		if (attnum == layout->row_kind_attnum || layout->is_key[attnum - 1])
			continue;
		if (!slot->tts_isnull[attnum - 1])
			return ROW_KIND_RETRACT;
		all_key = false;
	}
	/* a target of key columns only: the key is the whole row */
	return all_key ? ROW_KIND_RETRACT : ROW_KIND_DELETE;
}

/* Check, encode and buffer one row. */
static void
insert_row(SinkInsertState *state, TupleTableSlot *slot)
{
	MemoryContext old = MemoryContextSwitchTo(state->row_context);
	PendingStream *pending;
	RowKind kind = ROW_KIND_UPSERT;

	slot_getallattrs(slot);
	if (state->layout->upsert)
	{
		kind = staged_kind(state, slot, check_change(state, slot));
		if (kind == ROW_KIND_UPDATE_BEFORE)
		{
			MemoryContextSwitchTo(old);
			MemoryContextReset(state->row_context);
			return;
		}
	}
	/* a delete needs only its key; a partial row's NULLs keep target values */
	if (kind == ROW_KIND_UPSERT && !state->layout->sink.partial_update)
		check_target_constraints(state, slot);
	encode_row(state, slot, kind);
	MemoryContextSwitchTo(old);
	/* an append sink without a bucket key may hand its rows to any writer that answers */
	pending = handoff_stream(
		&state->stream, handoff_queue_writer_for(state->stream.sink_id, state->stream.bucket),
		state->fence_epoch,
		state->layout->bucket_key_count == 0 && !state->layout->upsert ? state->layout->sink.buckets
																	   : 0);
	handoff_append_row(pending, state->line.data, state->line.len);
	MemoryContextReset(state->row_context);
}

/* sinkBeginForeignModify starts an INSERT into a sink. */
static void
sinkBeginForeignModify(ModifyTableState *mtstate, ResultRelInfo *rinfo, List *fdw_private,
					   int subplan_index, int eflags)
{
	if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
		return;
	rinfo->ri_FdwState = begin_insert(rinfo, mtstate->ps.state);
}

/* sinkExecForeignInsert buffers one inserted row for the hand-off. */
static TupleTableSlot *
sinkExecForeignInsert(EState *estate, ResultRelInfo *rinfo, TupleTableSlot *slot,
					  TupleTableSlot *planSlot)
{
	insert_row(rinfo->ri_FdwState, slot);
	return slot;
}

/* end_insert closes the target an INSERT or COPY kept open. */
static void
end_insert(SinkInsertState *state)
{
	if (state == NULL)
		return;
	write_check_end(state->index_checks);
	state->index_checks = NULL;
	if (state->target != NULL)
		table_close(state->target, NoLock);
	state->target = NULL;
}

/* sinkEndForeignModify ends an INSERT into a sink. */
static void
sinkEndForeignModify(EState *estate, ResultRelInfo *rinfo)
{
	end_insert(rinfo->ri_FdwState);
}

/*
 * sinkBeginForeignInsert starts a COPY FROM into a sink, or the rows a
 * statement on a partitioned table routes into it.  PlanForeignModify never
 * ran for a partition rows are routed to, so an INSERT's ON CONFLICT is
 * refused here, as postgres_fdw checks it here, and so are an UPDATE moving
 * rows and MERGE.  COPY's ModifyTableState has no plan.
 */
static void
sinkBeginForeignInsert(ModifyTableState *mtstate, ResultRelInfo *rinfo)
{
	ModifyTable *plan = (ModifyTable *) mtstate->ps.plan;
	Oid relid = RelationGetRelid(rinfo->ri_RelationDesc);

	if (mtstate->operation != CMD_INSERT)
		refuse_routing(relid, mtstate->operation);
	if (plan != NULL && plan->onConflictAction != ONCONFLICT_NONE)
		refuse_on_conflict(relid);
	rinfo->ri_FdwState = begin_insert(rinfo, mtstate->ps.state);
}

/* sinkEndForeignInsert ends a COPY FROM into a sink. */
static void
sinkEndForeignInsert(EState *estate, ResultRelInfo *rinfo)
{
	end_insert(rinfo->ri_FdwState);
}

/* paimon_sink_fdw_handler returns the FdwRoutine of the paimon_sink wrapper. */
Datum
paimon_sink_fdw_handler(PG_FUNCTION_ARGS)
{
	FdwRoutine *routine = makeNode(FdwRoutine);

	routine->GetForeignRelSize = sinkGetForeignRelSize;
	routine->GetForeignPaths = sinkGetForeignPaths;
	routine->GetForeignPlan = sinkGetForeignPlan;
	routine->BeginForeignScan = sinkBeginForeignScan;
	routine->IterateForeignScan = sinkIterateForeignScan;
	routine->ReScanForeignScan = sinkReScanForeignScan;
	routine->EndForeignScan = sinkEndForeignScan;
	routine->IsForeignRelUpdatable = sinkIsForeignRelUpdatable;
	routine->PlanForeignModify = sinkPlanForeignModify;
	routine->BeginForeignModify = sinkBeginForeignModify;
	routine->ExecForeignInsert = sinkExecForeignInsert;
	routine->EndForeignModify = sinkEndForeignModify;
	routine->BeginForeignInsert = sinkBeginForeignInsert;
	routine->EndForeignInsert = sinkEndForeignInsert;
	PG_RETURN_POINTER(routine);
}

/*
 * paimon_sink_fdw_validator accepts only "sink_id" on foreign tables and no
 * option elsewhere (ERRCODE_FDW_INVALID_OPTION_NAME otherwise).
 */
Datum
paimon_sink_fdw_validator(PG_FUNCTION_ARGS)
{
	List *options = untransformRelOptions(PG_GETARG_DATUM(0));
	Oid catalog = PG_GETARG_OID(1);
	ListCell *lc;
	bool seen = false;

	foreach (lc, options)
	{
		DefElem *def = lfirst(lc);

		if (catalog != ForeignTableRelationId || strcmp(def->defname, "sink_id") != 0)
			ereport(ERROR, (errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
							errmsg("invalid option \"%s\"", def->defname),
							catalog == ForeignTableRelationId
								? errhint("Valid options in this context are: sink_id")
								: errhint("There are no valid options in this context.")));
		if (seen)
			ereport(ERROR,
					(errcode(ERRCODE_SYNTAX_ERROR), errmsg("conflicting or redundant options")));
		seen = true;
		(void) pg_strtoint32(defGetString(def));
	}
	PG_RETURN_VOID();
}
