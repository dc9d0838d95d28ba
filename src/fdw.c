/*-------------------------------------------------------------------------
 *
 * fdw.c
 *	  The foreign-data wrapper behind every sink's foreign table.
 *
 * Structure after contrib/postgres_fdw and file_fdw: a validator with a
 * table of valid options, the insert callbacks (BeginForeignModify,
 * ExecForeignInsert, BeginForeignInsert for COPY) and scan callbacks that
 * refuse reading, pointing at the target table.  No batch insert: it exists
 * to save round trips, and here would only copy every row once more.
 *
 * The executor does not check constraints of foreign tables, so each row is
 * converted to the target's row type and checked with ExecConstraints here,
 * so that a bad row fails the INSERT or COPY that brought it, not a later
 * commit.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/reloptions.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/tupconvert.h"
#include "catalog.h"
#include "catalog/pg_foreign_table.h"
#include "commands/defrem.h"
#include "common/hashfn.h"
#include "executor/executor.h"
#include "executor/nodeModifyTable.h"
#include "fdw.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
#include "handoff.h"
#include "mb/pg_wchar.h"
#include "metadata.h"
#include "miscadmin.h"
#include "names.h"
#include "nodes/makefuncs.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "parser/parsetree.h"
#include "port/pg_bswap.h"
#include "utils/builtins.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "write_check.h"
#include "utils/typcache.h"
#include "value_encoding.h"

PG_FUNCTION_INFO_V1(paimon_sink_fdw_handler);
PG_FUNCTION_INFO_V1(paimon_sink_fdw_validator);

/*
 * A sink as its foreign table's statements use it: the definition, and
 * what the layouts of the foreign table and the target give.
 */
typedef struct SinkLayout
{
	SinkInfo sink;
	int column_count;
	AttrNumber *columns;	  /* non-dropped foreign table attnums */
	FmgrInfo *send_functions; /* binary output, in the database encoding */
	ValueEncoding *encodings; /* value_encoding.c's way for each column */
	int bucket_key_count;
	AttrNumber *bucket_attnums; /* foreign table attnums, or NULL */
	FmgrInfo *bucket_hash;		/* the type's hash function, or fn_oid 0 */
	Oid *bucket_collation;
	AttrNumber *target_map; /* target attnum to foreign table attnum, by name */
	/* upsert sinks */
	bool upsert;
	AttrNumber row_kind_attnum;
	int key_count;			 /* the target's primary key */
	AttrNumber *key_attnums; /* foreign table attnums */
	bool *is_key;			 /* by foreign table attnum - 1 */
} SinkLayout;

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
	int client_encoding; /* to restore after encoding a row, or -1 */
	Relation target;
	ResultRelInfo *target_info;
	TupleTableSlot *target_slot;
	EState *estate;
	StringInfoData line;
	MemoryContext row_context;
	IndexChecks *index_checks; /* the target's btree indexes (write_check.c) */
	bool whole_rows;		   /* the statement names every non-key column (a retraction's row) */
} SinkInsertState;

/*
 * The sinks of the foreign tables this session used, by foreign table OID,
 * with both layouts checked: a statement reads no catalog for them.  An
 * entry is dropped when the relcache entry of its foreign table or target is
 * invalidated: drop_sink drops the foreign table, and ALTER TABLE or ALTER
 * FOREIGN TABLE ... OPTIONS of either invalidates it (postgres_fdw keeps its
 * connections the same way, dropping them on catalog invalidations).
 */
typedef struct SinkCacheEntry
{
	Oid foreign_table; /* hash key */
	bool valid;
	MemoryContext context; /* holds the layout's strings and arrays */
	SinkLayout layout;
} SinkCacheEntry;

static HTAB *sink_cache = NULL;

/* sink_cache_invalidate marks stale the cached sinks of a changed foreign table or target. */
static void
sink_cache_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	SinkCacheEntry *entry;

	hash_seq_init(&status, sink_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (relid == InvalidOid || entry->foreign_table == relid ||
			entry->layout.sink.target == relid)
			entry->valid = false;
	}
}

/* The sink id option of a foreign table, or -1. */
static int32
sink_id_option(Oid relid)
{
	ForeignTable *table = GetForeignTable(relid);
	ListCell *lc;

	foreach (lc, table->options)
	{
		DefElem *def = lfirst(lc);

		if (strcmp(def->defname, "sink_id") == 0)
			return pg_strtoint32(defGetString(def));
	}
	return -1;
}

/* What the layouts give each statement, computed once per entry. */
static void
derive_layout(SinkLayout *layout, Relation rel, Relation target)
{
	TupleDesc desc = RelationGetDescr(rel);
	TupleDesc target_desc = RelationGetDescr(target);
	ListCell *lc;
	int i = 0;

	layout->columns = palloc(sizeof(AttrNumber) * desc->natts);
	layout->send_functions = palloc(sizeof(FmgrInfo) * desc->natts);
	layout->encodings = palloc(sizeof(ValueEncoding) * desc->natts);
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, a);
		Oid send;
		bool varlena;

		if (attr->attisdropped)
			continue;
		getTypeBinaryOutputInfo(attr->atttypid, &send, &varlena);
		fmgr_info_cxt(send, &layout->send_functions[layout->column_count], CurrentMemoryContext);
		layout->encodings[layout->column_count] = value_encoding_of(send);
		layout->columns[layout->column_count++] = attr->attnum;
	}
	layout->bucket_key_count = list_length(layout->sink.bucket_key);
	layout->bucket_attnums = palloc(sizeof(AttrNumber) * Max(1, layout->bucket_key_count));
	foreach (lc, layout->sink.bucket_key)
	{
		AttrNumber attnum = get_attnum(RelationGetRelid(rel), lfirst(lc));

		if (attnum == InvalidAttrNumber)
			ereport(
				ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("bucket key column \"%s\" of sink \"%s\" is missing from its foreign table",
						(char *) lfirst(lc), layout->sink.name)));
		layout->bucket_attnums[i++] = attnum;
	}
	layout->bucket_hash = palloc0(sizeof(FmgrInfo) * Max(1, layout->bucket_key_count));
	layout->bucket_collation = palloc0(sizeof(Oid) * Max(1, layout->bucket_key_count));
	for (int k = 0; k < layout->bucket_key_count; k++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, layout->bucket_attnums[k] - 1);
		TypeCacheEntry *type = lookup_type_cache(attr->atttypid, TYPECACHE_HASH_PROC);

		/* equal values (1.0 and 1.00, or under a nondeterministic collation) meet */
		if (OidIsValid(type->hash_proc))
			fmgr_info_cxt(type->hash_proc, &layout->bucket_hash[k], CurrentMemoryContext);
		layout->bucket_collation[k] = attr->attcollation;
	}
	layout->upsert = SINK_IS_UPSERT(&layout->sink);
	layout->is_key = palloc0(sizeof(bool) * desc->natts);
	if (layout->upsert)
	{
		ListCell *key;
		int k = 0;

		/* the key is the one the sink was created with: its recorded names */
		(void) catalog_check_primary_key(&layout->sink, target);
		/* the layout check found the foreign table as create_sink made it */
		layout->row_kind_attnum = get_attnum(RelationGetRelid(rel), layout->sink.row_kind_column);
		Assert(layout->row_kind_attnum != InvalidAttrNumber);
		layout->key_count = list_length(layout->sink.key_columns);
		layout->key_attnums = palloc(sizeof(AttrNumber) * layout->key_count);
		foreach (key, layout->sink.key_columns)
		{
			AttrNumber attnum = get_attnum(RelationGetRelid(rel), lfirst(key));

			if (attnum == InvalidAttrNumber)
				elog(ERROR, "key column \"%s\" of sink \"%s\" is missing from its foreign table",
					 (char *) lfirst(key), layout->sink.name);
			layout->key_attnums[k++] = attnum;
			layout->is_key[attnum - 1] = true;
		}
	}
	layout->target_map = palloc0(sizeof(AttrNumber) * target_desc->natts);
	for (int a = 0; a < target_desc->natts; a++)
	{
		Form_pg_attribute attr = TupleDescAttr(target_desc, a);

		if (!attr->attisdropped)
			layout->target_map[a] = get_attnum(RelationGetRelid(rel), NameStr(attr->attname));
	}
}

/*
 * The sink of a foreign table, from the session's cache.  With rel and its
 * target open, the layouts are checked both ways and what they give each
 * statement is derived; without, only the definition is read (and the
 * entry stays to be checked).  An entry read again leaves its old memory to
 * the end of the transaction, where a running statement may still use it.
 * Raises ERRCODE_FDW_TABLE_NOT_FOUND when the table is not a sink's.
 */
static const SinkLayout *
sink_of_foreign_table(Oid relid, Relation rel, Relation target)
{
	SinkCacheEntry *entry;
	bool found;
	MemoryContext old;
	int32 sink_id;

	if (sink_cache == NULL)
	{
		HASHCTL ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(SinkCacheEntry);
		ctl.hcxt = CacheMemoryContext;
		sink_cache = hash_create("paimon_sink sinks of foreign tables", 16, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		CacheRegisterRelcacheCallback(sink_cache_invalidate, (Datum) 0);
	}
	entry = hash_search(sink_cache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		entry->valid = false;
		entry->context = NULL;
	}
	if (entry->valid)
		return &entry->layout;

	/*
	 * The layout is read in the catalog's shape: the library must match it.
	 * Checked here, on a cache miss, not on every statement: a new library
	 * needs a restart, whose backends start with an empty cache.
	 */
	paimon_sink_require_ready();

	if (entry->context != NULL)
		MemoryContextSetParent(entry->context, TopTransactionContext);
	entry->context =
		AllocSetContextCreate(CacheMemoryContext, "paimon_sink sink", ALLOCSET_SMALL_SIZES);
	memset(&entry->layout, 0, sizeof(entry->layout));
	sink_id = sink_id_option(relid);
	old = MemoryContextSwitchTo(entry->context);
	found = sink_id >= 0 && metadata_sink_by_id(sink_id, &entry->layout.sink) &&
			entry->layout.sink.foreign_table == relid;
	if (found && rel != NULL)
	{
		/* rows are staged in the layout fixed at create_sink, checked both ways */
		catalog_check_layout(&entry->layout.sink, relid, true);
		catalog_check_layout(&entry->layout.sink, RelationGetRelid(target), false);
		derive_layout(&entry->layout, rel, target);
	}
	MemoryContextSwitchTo(old);
	if (!found)
		ereport(
			ERROR,
			(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
			 errmsg("foreign table \"%s\" is not the foreign table of a sink", get_rel_name(relid)),
			 errdetail("Its sink_id option names no sink that owns this table."),
			 errhint("Create sinks and their foreign tables with paimon_sink.create_sink().")));
	entry->valid = rel != NULL;
	return &entry->layout;
}

/* refuse_reading refuses (ERRCODE_FEATURE_NOT_SUPPORTED) any read of a sink's foreign table. */
static void
refuse_reading(Oid relid)
{
	const SinkInfo *sink = &sink_of_foreign_table(relid, NULL, NULL)->sink;

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

/* INSERT ... ON CONFLICT cannot be honoured: conflicts show only at commit. */
static List *
sinkPlanForeignModify(PlannerInfo *root, ModifyTable *plan, Index resultRelation, int subplan_index)
{
	if (plan->onConflictAction != ONCONFLICT_NONE)
	{
		Oid relid = planner_rt_fetch(resultRelation, root)->relid;
		bool upsert = SINK_IS_UPSERT(&sink_of_foreign_table(relid, NULL, NULL)->sink);

		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("INSERT with ON CONFLICT is not supported on a sink's foreign table"),
				 upsert ? errdetail("An upsert sink applies the latest version of each key when a "
									"checkpoint commits: a key already there is updated.")
						: errdetail("Rows reach the target when a checkpoint commits; a conflict "
									"is only known then, and fails that commit."),
				 upsert ? errhint("Insert without ON CONFLICT.")
						: errhint("Insert without ON CONFLICT, and keep conflicting rows out of "
								  "the sink, or use an upsert sink.")));
	}
	return NIL;
}

/* sinkIsForeignRelUpdatable says that a sink takes INSERT only. */
static int
sinkIsForeignRelUpdatable(Relation rel)
{
	return (1 << CMD_INSERT);
}

/*
 * read_commit_user_state returns the commit user's fence epoch now (see
 * recover()), 0 for a commit user the sink has never seen, and refuses a
 * commit user whose input has ended, since its rows could never be committed.
 */
static uint64
read_commit_user_state(const SinkInfo *sink, const char *commit_user)
{
	CommitUserMarks marks;
	bool found = metadata_read_commit_user(sink->sink_id, commit_user, false, &marks);
	bool ended = found && marks.last_committed == PAIMON_SINK_END_INPUT_CHECKPOINT;

	if (ended)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("commit user \"%s\" of sink \"%s\" has ended its input", commit_user,
							   sink->name),
						errdetail("end_input() committed its last checkpoint; rows written now "
								  "could never be committed."),
						errhint("Write with a new commit user (paimon_sink.commit_user).")));
	return found ? marks.fence_epoch : 0;
}

/*
 * The fence epoch this session joined, per (sink, commit user): the one it
 * first wrote under, or the current one after it set paimon_sink.commit_user
 * again.  A job restored by recover() writes from new sessions; a session of
 * the failed attempt still running (a zombie) is refused from then on, as
 * Kafka refuses a producer whose epoch is stale.  The commit user's state is
 * read by the first statement of each transaction that writes for it: the
 * writers fence the rows themselves, this only refuses early.
 */
typedef struct SessionEpoch
{
	pg_uuid_t sink_uuid;
	uint64 fence_epoch;
	LocalTransactionId checked_in; /* the transaction that last read it */
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
} SessionEpoch;

static List *session_epochs = NIL;

/*
 * fdw_forget_fence_epochs: the session joins each commit user's current
 * fence epoch at its next write.  Called when paimon_sink.commit_user is set.
 */
void
fdw_forget_fence_epochs(void)
{
	list_free_deep(session_epochs);
	session_epochs = NIL;
}

/*
 * fdw_session_fence_epoch returns the commit user's fence epoch this
 * session joined at its first write (or prepare with properties); refuses
 * (ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE) once a recover() raised it
 * since.
 */
uint64
fdw_session_fence_epoch(const SinkInfo *sink, const char *commit_user)
{
	ListCell *lc;
	SessionEpoch *joined = NULL;
	uint64 current;

	foreach (lc, session_epochs)
	{
		SessionEpoch *entry = lfirst(lc);

		if (memcmp(&entry->sink_uuid, &sink->sink_uuid, sizeof(pg_uuid_t)) == 0 &&
			strcmp(entry->commit_user, commit_user) == 0)
		{
			joined = entry;
			break;
		}
	}
	if (joined != NULL && joined->checked_in == MyProc->lxid)
		return joined->fence_epoch;

	current = read_commit_user_state(sink, commit_user);
	if (joined == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		joined = palloc0(sizeof(SessionEpoch));
		joined->sink_uuid = sink->sink_uuid;
		joined->fence_epoch = current;
		strlcpy(joined->commit_user, commit_user, sizeof(joined->commit_user));
		session_epochs = lappend(session_epochs, joined);
		MemoryContextSwitchTo(old);
	}
	else if (joined->fence_epoch < current)
		ereport(
			ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg(
				 "commit user \"%s\" of sink \"%s\" was recovered after this session began writing",
				 commit_user, sink->name),
			 errdetail("recover() raised the commit user's fence epoch from %llu to %llu; rows of "
					   "the restored-from attempt are replayed by the job, never committed from "
					   "its old sessions.",
					   (unsigned long long) joined->fence_epoch, (unsigned long long) current),
			 errhint("Write from a new session, or set paimon_sink.commit_user again to join the "
					 "restored job.")));
	joined->checked_in = MyProc->lxid;
	return joined->fence_epoch;
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

/* Set up the insert state of a statement (INSERT or COPY). */
static SinkInsertState *
begin_insert(ResultRelInfo *rinfo, EState *estate)
{
	Relation rel = rinfo->ri_RelationDesc;
	SinkInsertState *state = palloc0(sizeof(SinkInsertState));
	const SinkLayout *layout;
	const char *commit_user;

	/*
	 * The target is opened for constraint checks (the commit takes the real
	 * locks); its lock takes in invalidations, so the layout is read after.
	 */
	layout = sink_of_foreign_table(RelationGetRelid(rel), NULL, NULL);
	state->target = catalog_open_target(&layout->sink, false, AccessShareLock);
	layout = sink_of_foreign_table(RelationGetRelid(rel), rel, state->target);
	state->layout = layout;
	state->estate = estate;

	commit_user = (PaimonSinkCommitUser != NULL && PaimonSinkCommitUser[0] != '\0')
					  ? PaimonSinkCommitUser
					  : layout->sink.default_commit_user;
	paimon_sink_check_commit_user(commit_user);
	state->fence_epoch = fdw_session_fence_epoch(&layout->sink, commit_user);
	state->stream.sink_id = layout->sink.sink_id;
	state->stream.sink_uuid = layout->sink.sink_uuid;
	state->stream.writer_id = PaimonSinkWriterId;
	strlcpy(state->stream.commit_user, commit_user, sizeof(state->stream.commit_user));
	state->fixed_bucket = MyProcPid % layout->sink.buckets;

	state->target_info = makeNode(ResultRelInfo);
	InitResultRelInfo(state->target_info, state->target, 0, NULL, 0);
	state->target_slot = table_slot_create(state->target, &estate->es_tupleTable);
	state->index_checks = write_check_begin(state->target);
	state->whole_rows = names_whole_rows(layout, ExecGetInsertedCols(rinfo, estate));
	state->client_encoding = pg_get_client_encoding();
	if (state->client_encoding == GetDatabaseEncoding() || state->client_encoding == PG_SQL_ASCII ||
		GetDatabaseEncoding() == PG_SQL_ASCII)
		state->client_encoding = -1; /* send functions do not convert */
	initStringInfo(&state->line);
	/* a block that holds a whole row's send buffers: a reset frees nothing */
	state->row_context =
		AllocSetContextCreate(CurrentMemoryContext, "paimon_sink row", ALLOCSET_DEFAULT_SIZES);
	return state;
}

/*
 * Check a row against the target's NOT NULL and CHECK constraints, and the
 * size of its btree index rows (write_check.c): what the commit would
 * refuse, refused now.
 */
static void
check_target_constraints(SinkInsertState *state, TupleTableSlot *slot)
{
	TupleTableSlot *target_slot = state->target_slot;
	TupleDesc target_desc = RelationGetDescr(state->target);

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
 * Send functions of text-like types (text, varchar, json, xml, enums, and
 * arrays or records of them) convert to the session's client encoding; the
 * committer reads the rows back in the database encoding.  So a session
 * whose client encoding converts is switched to the database encoding while
 * a row is encoded, and back even on error.  SetClientEncoding needs no
 * catalog access for either: the session's conversion is already prepared.
 */
static void
encode_row(SinkInsertState *state, TupleTableSlot *slot, RowKind kind)
{
	if (state->client_encoding < 0)
	{
		encode_row_fields(state, slot, kind);
		return;
	}
	if (SetClientEncoding(GetDatabaseEncoding()) < 0)
		elog(ERROR, "could not switch to the database encoding");
	PG_TRY();
	{
		encode_row_fields(state, slot, kind);
	}
	PG_FINALLY();
	{
		if (SetClientEncoding(state->client_encoding) < 0)
			elog(FATAL, "could not restore the client encoding \"%s\"",
				 pg_encoding_to_char(state->client_encoding));
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
	state->stream.bucket = row_bucket(state, slot);
	MemoryContextSwitchTo(old);
	/* an append sink without a bucket key may hand its rows to any writer that answers */
	pending = handoff_stream(
		&state->stream, handoff_writer_for(state->stream.sink_id, state->stream.bucket),
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

/* sinkBeginForeignInsert starts a COPY FROM (or a routed insert) into a sink. */
static void
sinkBeginForeignInsert(ModifyTableState *mtstate, ResultRelInfo *rinfo)
{
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
