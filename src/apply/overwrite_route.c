/*-------------------------------------------------------------------------
 *
 * overwrite_route.c
 *	  Which leaf partitions a checkpoint's staged rows go to, found before
 *	  they are loaded, for dynamic-partition overwrite.
 *
 * A dynamic-partition overwrite sink replaces the partitions its rows go
 * to, and must delete what they held before loading into them, or a job
 * rewriting the keys a partition held (a daily rebuild) fails on the
 * partition's own unique keys (overwrite.c).  So the staged rows are read
 * once before the load (load.c's reader, COPY's binary decoding) and each
 * is routed by PostgreSQL's own tuple routing (ExecFindPartition, as
 * COPY FROM routes it), in the target's row type: the sink's columns as
 * staged, a column the sink does not write by its default when that
 * default is not volatile (a volatile one, such as nextval() or
 * clock_timestamp(), would give another value, or take a sequence's
 * value, twice: NULL stands for it, and overwrite.c's check after the
 * load finds a partition it sent rows to unforeseen).  It runs as the
 * sink's owner, as the load does: partition key expressions and defaults
 * are the owner's code.
 *
 * A row no partition takes (or whose key expression fails) would be
 * refused by the load as well.  Under on_error 'stop' its error is raised
 * here, with its SQLSTATE (23514) and the row's partition key: the load
 * would raise it too, or first a 23505 on a key the rebuild rewrites,
 * which would hide the cause.  Under 'reject' the load moves it aside, so
 * routing is redone without it (up to ROUTE_SKIPPED_ROWS_MAX such rows,
 * each costing one more read of the rows); past that, routing gives up
 * and the caller falls back to finding the partitions after the load.  The routing runs in a subtransaction of its own so
 * that such an error leaves nothing behind.
 *
 * The cost: the staged rows are read and decoded twice (once here, once
 * by the load), and each routed, without the heap, index and WAL writes
 * that make up most of a load.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "executor/execPartition.h"
#include "executor/executor.h"
#include "nodes/execnodes.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"

#include "apply/load.h"
#include "apply/load_layout.h"
#include "apply/overwrite_route.h"
#include "apply/rejects.h"
#include "core/security.h"

/* Rows no partition takes that a routing under on_error 'reject' steps over. */
#define ROUTE_SKIPPED_ROWS_MAX 16

/* One routing of a checkpoint's staged rows. */
typedef struct Router
{
	Relation target;
	EState *estate;
	ModifyTableState *mtstate; /* a stand-in, as COPY FROM's */
	ResultRelInfo *root;
	PartitionTupleRouting *proute;
	TupleTableSlot *slot; /* a row in the target's row type */
	LoadLayout *follow;	  /* the staged columns onto the target now */
	int *source; /* per target attribute: its staged value's index (the foreign table's), or -1 */
	ExprState **defaults; /* per target attribute not staged: its default, or NULL */
	RoleSwitch saved;
	ResultRelInfo *last; /* the leaf the row before went to */
	HTAB *seen;			 /* leaves found, by Oid */
	List *leaves;		 /* the same, Oid, in the order found */
	int64 ordinal;		 /* the row being routed, from 1 */
	int64 skipped[ROUTE_SKIPPED_ROWS_MAX];
	int skipped_count;
} Router;

/*
 * route_begin sets up the routing of the sink's staged rows into its
 * target (open, locked by the caller) as the sink's owner.
 */
static void
route_begin(Router *router, SinkInfo *sink, Relation target)
{
	TupleDesc desc = RelationGetDescr(target);
	HASHCTL ctl;

	security_switch_role(catalog_commit_role(sink, RelationGetRelid(target), ACL_INSERT),
						 &router->saved);
	/* each staged column into the target's as it is now, as the load maps it */
	router->follow = load_layout_build(sink, target);
	router->target = target;
	router->estate = CreateExecutorState();
	router->root = makeNode(ResultRelInfo);
	InitResultRelInfo(router->root, target, 1, NULL, 0);
	router->mtstate = makeNode(ModifyTableState);
	router->mtstate->ps.plan = NULL;
	router->mtstate->ps.state = router->estate;
	router->mtstate->operation = CMD_INSERT;
	router->mtstate->mt_nrels = 1;
	router->mtstate->resultRelInfo = router->root;
	router->mtstate->rootResultRelInfo = router->root;
	router->proute = ExecSetupPartitionTupleRouting(router->estate, target);
	router->slot = MakeSingleTupleTableSlot(desc, &TTSOpsVirtual);
	router->source = palloc(sizeof(int) * desc->natts);
	router->defaults = palloc0(sizeof(ExprState *) * desc->natts);
	for (int i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);
		Node *expression;

		router->source[i] = -1;
		if (attr->attisdropped || attr->attgenerated)
			continue;
		for (int c = 0; c < router->follow->count; c++)
			if (router->follow->columns[c].target_attnum == attr->attnum)
				router->source[i] = router->follow->columns[c].staged_attnum - 1;
		if (router->source[i] >= 0)
			continue;
		expression = build_column_default(target, i + 1);
		if (expression != NULL && !contain_volatile_functions(expression))
			router->defaults[i] = ExecPrepareExpr((Expr *) expression, router->estate);
	}
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(Oid);
	ctl.hcxt = CurrentMemoryContext;
	router->seen = hash_create("paimon_sink routed partitions", 64, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	router->last = NULL;
	router->leaves = NIL;
	router->ordinal = 0;
}

/* route_end ends what route_begin set up, the role switch last. */
static void
route_end(Router *router)
{
	ExecCleanupTupleRouting(router->mtstate, router->proute);
	ExecDropSingleTupleTableSlot(router->slot);
	FreeExecutorState(router->estate);
	hash_destroy(router->seen);
	security_restore_role(&router->saved);
}

/*
 * route_row routes one staged row (values, nulls: in the foreign table's
 * layout) and notes the leaf partition it goes to; a row routing steps
 * over (skipped) is left out.
 */
static void
route_row(void *arg, Datum *values, bool *nulls)
{
	Router *router = arg;
	TupleTableSlot *slot = router->slot;
	int natts = slot->tts_tupleDescriptor->natts;
	ExprContext *econtext;
	ResultRelInfo *leaf;

	router->ordinal++;
	for (int i = 0; i < router->skipped_count; i++)
		if (router->skipped[i] == router->ordinal)
			return;
	ResetPerTupleExprContext(router->estate);
	econtext = GetPerTupleExprContext(router->estate);
	ExecClearTuple(slot);
	/* values is the reader's row, reset for the next: cast in its context */
	load_layout_cast_values(router->follow, values, nulls);
	for (int i = 0; i < natts; i++)
	{
		if (router->source[i] >= 0)
		{
			slot->tts_values[i] = values[router->source[i]];
			slot->tts_isnull[i] = nulls[router->source[i]];
		}
		else if (router->defaults[i] != NULL)
			slot->tts_values[i] =
				ExecEvalExprSwitchContext(router->defaults[i], econtext, &slot->tts_isnull[i]);
		else
		{
			slot->tts_values[i] = (Datum) 0;
			slot->tts_isnull[i] = true;
		}
	}
	ExecStoreVirtualTuple(slot);
	leaf = ExecFindPartition(router->mtstate, router->root, router->proute, slot, router->estate);
	if (leaf != router->last)
	{
		Oid relid = RelationGetRelid(leaf->ri_RelationDesc);
		bool found;

		router->last = leaf;
		(void) hash_search(router->seen, &relid, HASH_ENTER, &found);
		if (!found)
		{
			MemoryContext old = MemoryContextSwitchTo(router->estate->es_query_cxt);

			router->leaves = lappend_oid(router->leaves, relid);
			MemoryContextSwitchTo(old);
		}
	}
}

/*
 * has_foreign_leaf tells whether a partition of relid is a foreign table:
 * routing a row there would begin a foreign insert (its FDW's code), so
 * such a target is not routed before the load.
 */
static bool
has_foreign_leaf(Oid relid)
{
	ListCell *lc;

	foreach (lc, find_all_inheritors(relid, RowExclusiveLock, NULL))
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_FOREIGN_TABLE)
			return true;
	return false;
}

/*
 * overwrite_route_rows returns the leaf partitions (Oid list, each once,
 * in the memory context current at the call) of the sink's partitioned
 * target that the staged rows of files (LoadFile *) go to; reject says
 * whether the load will move a refused row aside (routing then steps over
 * a row no partition takes).  When the rows cannot be routed before the
 * load (more such rows than it steps over, a foreign partition), returns
 * NIL: the caller finds the partitions after the load.  In the commit's transaction.  Raises,
 * when reject is false, the error of a row routing refuses
 * (ERRCODE_CHECK_VIOLATION for a row no partition takes, or what its key
 * expression raises), nothing applied; what reading the staged files
 * raises (ERRCODE_DATA_CORRUPTED, file access errors); and any error
 * routing raises that no row causes (ERRCODE_INSUFFICIENT_PRIVILEGE, ...).
 */
List *
overwrite_route_rows(SinkInfo *sink, List *files, bool reject)
{
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	Router *router = palloc0(sizeof(Router));
	List *leaves = NIL;

	if (files == NIL || has_foreign_leaf(sink->target))
		return NIL;
	for (;;)
	{
		ErrorData *error = NULL;
		bool again = false;
		Relation target;

		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(context);
		PG_TRY();
		{
			target = catalog_open_target(sink, false, RowExclusiveLock);
			route_begin(router, sink, target);
			load_scan_files(sink, files, route_row, router);
			MemoryContextSwitchTo(context);
			router->leaves = list_copy(router->leaves);
			route_end(router);
			table_close(target, NoLock);
			ReleaseCurrentSubTransaction();
		}
		PG_CATCH();
		{
			MemoryContextSwitchTo(context);
			error = CopyErrorData();
			if (!rejects_row_error(error, NULL))
				PG_RE_THROW();
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
			load_abort();
		}
		PG_END_TRY();
		MemoryContextSwitchTo(context);
		CurrentResourceOwner = owner;
		if (error == NULL)
		{
			leaves = router->leaves;
			break;
		}
		/* on_error 'stop': the load would fail on the row too, or first on a key it rewrites */
		if (!reject)
		{
			error->hint =
				pstrdup("Nothing of the checkpoint was applied and it stays prepared: fix "
						"the cause (a partition that takes the row) and commit again, or "
						"move the row aside with paimon_sink.reject_failing_rows().");
			ReThrowError(error);
		}
		/* the row no partition takes: the load refuses it too, so step over it */
		for (int i = 0; i < router->skipped_count; i++)
			if (router->skipped[i] == router->ordinal)
				again = true; /* the failure is not this row's routing */
		if (again || router->ordinal == 0 || router->skipped_count == ROUTE_SKIPPED_ROWS_MAX)
		{
			ereport(DEBUG1, (errmsg("paimon_sink finds the partitions of sink \"%s\" after the "
									"load: routing its staged rows failed: %s",
									sink->name, error->message)));
			return NIL;
		}
		router->skipped[router->skipped_count++] = router->ordinal;
		FreeErrorData(error);
	}
	return leaves;
}
