/*-------------------------------------------------------------------------
 *
 * overwrite.c
 *	  Overwrite sinks: the target (or the partitions receiving rows)
 *	  replaced once per job, in the prepared transaction of the job's
 *	  first commit.
 *
 * An overwrite sink (create_sink's mode 'overwrite', Paimon's INSERT
 * OVERWRITE) loads rows as an append sink does, but a job's output
 * replaces what the target held.  A job is a commit user: restart_job()
 * and recover() restore the same job, whose replacement is done already;
 * a new commit user is a new job and replaces again.  The first commit of
 * a commit user, empty or not, deletes the target's rows in the
 * transaction that loads its rows and records that it did in the commit
 * user's state (metadata_overwrite.c); that transaction is prepared and
 * committed as one, so a retry, a restore, a commit of a later checkpoint
 * after a lost commit, or a crash after the PREPARE (recovery commits
 * it) never replaces twice.  Later commits of the job append.  SeaTunnel's
 * streaming overwrite truncated before every checkpoint and kept only the
 * last one (PR #10279); Paimon's overwrite with no rows deleted nothing
 * (PR #9353): here an empty job empties the target, and the empty commit
 * is a snapshot of its own (commit_kind OVERWRITE), so a replay finds it.
 *
 * DELETE, not TRUNCATE: TRUNCATE would hold an ACCESS EXCLUSIVE lock on
 * the target from the load until COMMIT PREPARED (and, after a crash
 * between the two, until recovery), blocking every reader; it is not
 * MVCC-safe (a concurrent repeatable-read reader sees the table empty),
 * skips DELETE triggers and fails on a target a foreign key references.
 * DELETE takes row locks, readers see the old rows until the commit, and
 * its dead rows are left to VACUUM, as any bulk DELETE's are.
 *
 * Dynamic-partition overwrite (dynamic_partition_overwrite, Paimon's
 * dynamic-partition-overwrite): only the leaf partitions that receive rows
 * are replaced, each in the commit of the job that first brings it rows
 * (Paimon's batch INSERT OVERWRITE replaces the partitions it writes, once
 * per job); a commit without rows changes nothing (Paimon PR #4536).  A
 * partition is replaced before it is loaded into, so that a job may
 * rewrite the keys it held (a daily rebuild of a partition with the same
 * primary keys): the staged rows are routed first (overwrite_route.c), the
 * partitions they go to are emptied with DELETE, then the rows are loaded,
 * all in the commit's one transaction.  The DELETE and the load run in a
 * subtransaction; should a partition receive no row after all (each of
 * its rows refused and moved aside by on_error 'reject'), it is rolled
 * back and done again without that partition, which is left as it was.
 * Which partitions received rows is told by the statistics' own
 * per-transaction counts, with track_counts forced on for the commit.  A
 * partition the rows went to unforeseen (routing gave up before the load,
 * or a volatile default routed a row elsewhere) is still replaced after
 * the load, as before: what it held before the load is deleted, under a
 * snapshot taken before it, command id included, which does not see the
 * rows the load inserted (a key rewritten there fails with 23505).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "executor/executor.h"
#include "pgstat.h"
#include "storage/lockdefs.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/pgstat_internal.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "apply/load.h"
#include "apply/overwrite.h"
#include "apply/overwrite_route.h"
#include "apply/rejects.h"
#include "core/pg_compat.h"
#include "core/security.h"
#include "metadata/metadata.h"

/* What the commit being loaded replaces, from overwrite_begin to overwrite_end. */
static struct
{
	bool active;	 /* an overwrite sink's commit */
	bool replaced;	 /* whole target: this commit deleted its rows */
	Snapshot before; /* dynamic: the snapshot of the rows before the load */
	List *replacing; /* dynamic: leaves to empty before the load, Oid */
	char *commit_user;
	int64 checkpoint_id;
	OverwriteState state;
} run;

/*
 * overwrite_loads_here says whether the commit about to load for the
 * commit user replaces rows (so that it is loaded here, not by the
 * loaders, whose shares are other transactions): a whole-target overwrite
 * sink's first commit of the commit user, or any commit of a
 * dynamic-partition one.  In the commit's transaction.
 */
bool
overwrite_loads_here(const SinkInfo *sink, const char *commit_user)
{
	if (!SINK_IS_OVERWRITE(sink))
		return false;
	return sink->dynamic_partition_overwrite ||
		   metadata_overwrite_state(sink->sink_id, commit_user).checkpoint_id == 0;
}

/*
 * overwrite_empty_commit_due says whether the commit user's commit of
 * empty checkpoints must still be made as a commit of its own, which
 * empties the target: the first commit of a whole-target overwrite sink's
 * commit user.  In the caller's transaction; the caller read the sink
 * (commit.c: work_require_sink).
 */
bool
overwrite_empty_commit_due(const SinkInfo *sink, const char *commit_user)
{
	return SINK_IS_OVERWRITE(sink) && !sink->dynamic_partition_overwrite &&
		   metadata_overwrite_state(sink->sink_id, commit_user).checkpoint_id == 0;
}

/*
 * delete_rows deletes the rows of relation relid (only its own, with
 * only: not its inheritance children) that snapshot sees, as the sink's
 * owner (its rights, triggers and search_path pinned); returns how many.
 * The statement runs under snapshot itself, command id included, so that
 * rows this transaction inserted after it was taken are not seen: SPI
 * would advance a given snapshot's command id before a DELETE, as it must
 * for a statement of its own.
 */
static uint64
delete_rows(const SinkInfo *sink, Oid relid, bool only, Snapshot snapshot)
{
	/* ONLY, when given, goes with the name: the statement's one relation */
	char *sql =
		psprintf("DELETE FROM %s",
				 psprintf("%s%s", only ? "ONLY " : "",
						  quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
													 get_rel_name(relid))));
	RoleSwitch saved;
	List *queries;
	PlannedStmt *statement;
	QueryDesc *query;
	uint64 deleted;

	security_switch_role(catalog_commit_role(sink, relid, ACL_DELETE), &saved);
	queries = pg_analyze_and_rewrite_fixedparams(linitial_node(RawStmt, pg_parse_query(sql)), sql,
												 NULL, 0, NULL);
	if (list_length(queries) != 1)
		ereport(
			ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot replace the rows of table \"%s\": it has rules", get_rel_name(relid)),
			 errdetail("An overwrite sink deletes the rows it replaces with one DELETE.")));
	statement = pg_plan_query(linitial_node(Query, queries), sql, 0, NULL);
	CommandCounterIncrement();
	PushActiveSnapshot(snapshot);
	query =
		CreateQueryDesc(statement, sql, snapshot, InvalidSnapshot, None_Receiver, NULL, NULL, 0);
	ExecutorStart(query, 0);
	ExecutorRunOnce(query, ForwardScanDirection, 0);
	ExecutorFinish(query);
	deleted = query->estate->es_processed;
	ExecutorEnd(query);
	FreeQueryDesc(query);
	PopActiveSnapshot();
	CommandCounterIncrement();
	security_restore_role(&saved);
	return deleted;
}

/*
 * inserts_kept counts the rows the current transaction inserted into
 * relation relid and still holds: its statistics' per-transaction counts
 * of every subtransaction level still open, so not the inserts of
 * subtransactions rolled back (those PostgreSQL moves to the
 * relation's totals).  Read from the relation's pending statistics entry
 * itself: find_tabstat_entry returns, from PostgreSQL 17, a copy whose
 * per-transaction levels are gone (summed into counts that include the
 * rolled-back inserts), where it returned the entry before.
 */
static int64
inserts_kept(Oid relid)
{
	PgStat_EntryRef *entry_ref =
		pgstat_fetch_pending_entry(PGSTAT_KIND_RELATION, MyDatabaseId, relid);
	PgStat_TableStatus *entry;
	int64 inserted = 0;

	if (entry_ref == NULL)
		return 0;
	entry = (PgStat_TableStatus *) entry_ref->pending;
	for (PgStat_TableXactStatus *level = entry->trans; level != NULL; level = level->upper)
		inserted += level->tuples_inserted;
	return inserted;
}

/*
 * overwrite_begin starts what an overwrite sink's commit replaces, before
 * its load of files (LoadFile *) of checkpoint_id, in the commit's
 * transaction: for the commit user's first commit of a whole-target sink,
 * the target's rows deleted (a partitioned target's in every partition;
 * an ordinary one's own, not its inheritance children's, which the sink
 * does not write); for a dynamic-partition sink, the snapshot of the rows
 * the partitions hold before the load, the statistics counts on, by which
 * overwrite_load and overwrite_end find the partitions that received
 * rows, and the leaves the staged rows go to that no earlier commit of
 * the commit user replaced (overwrite_route.c), for overwrite_load to
 * empty.  Raises what reading and routing the staged rows raises
 * (overwrite_route_rows).
 */
void
overwrite_begin(SinkInfo *sink, const char *commit_user, int64 checkpoint_id, List *files)
{
	ListCell *lc;

	memset(&run, 0, sizeof(run));
	if (!SINK_IS_OVERWRITE(sink))
		return;
	run.active = true;
	run.state = metadata_overwrite_state(sink->sink_id, commit_user);
	if (!sink->dynamic_partition_overwrite)
	{
		if (run.state.checkpoint_id == 0)
		{
			(void) delete_rows(sink, sink->target,
							   get_rel_relkind(sink->target) != RELKIND_PARTITIONED_TABLE,
							   GetTransactionSnapshot());
			run.replaced = true;
		}
		return;
	}
	/* counted in the relations the load opens from now on; undone at the transaction's end */
	(void) set_config_option("track_counts", "on", PGC_SUSET, PGC_S_SESSION, GUC_ACTION_LOCAL, true,
							 0, false);
	run.before = RegisterSnapshot(GetLatestSnapshot());
	run.commit_user = pstrdup(commit_user);
	run.checkpoint_id = checkpoint_id;
	/* none when routing gave up: overwrite_end finds them after the load */
	foreach (lc,
			 overwrite_route_rows(sink, files, sink->reject_on_error || rejects_operator_call()))
		if (get_rel_relkind(lfirst_oid(lc)) == RELKIND_RELATION &&
			!list_member_oid(run.state.partitions, lfirst_oid(lc)))
			run.replacing = lappend_oid(run.replacing, lfirst_oid(lc));
}

/*
 * empty_then_load deletes the rows of each leaf of run.replacing, then
 * loads files, in a subtransaction: kept (released into the commit's
 * transaction), with *loaded the rows loaded, when every one of those
 * leaves kept a row the load inserted; otherwise rolled back, with
 * run.replacing now the leaves that did.  Returns whether it was kept.
 */
static bool
empty_then_load(SinkInfo *sink, List *files, uint64 *loaded)
{
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	List *received = NIL;
	ListCell *lc;
	uint64 rows;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(context);
	foreach (lc, run.replacing)
		(void) delete_rows(sink, lfirst_oid(lc), true, GetTransactionSnapshot());
	rows = load_files(sink, files);
	foreach (lc, run.replacing)
		if (inserts_kept(lfirst_oid(lc)) > 0)
			received = lappend_oid(received, lfirst_oid(lc));
	if (list_length(received) == list_length(run.replacing))
	{
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(context);
		CurrentResourceOwner = owner;
		*loaded = rows;
		return true;
	}
	RollbackAndReleaseCurrentSubTransaction();
	MemoryContextSwitchTo(context);
	CurrentResourceOwner = owner;
	run.replacing = received;
	return false;
}

/*
 * overwrite_load loads files (LoadFile *) into an overwrite sink's target
 * and returns the rows loaded; for a dynamic-partition sink, the leaves
 * overwrite_begin found are emptied first, in the commit's transaction.
 * Should a leaf emptied receive no row (all of its rows refused and moved
 * aside), the deletes and the load are undone and done again without it:
 * it is left as it was, as the rule for a partition without rows says.
 * Raises what the load and the DELETE raise.
 */
uint64
overwrite_load(SinkInfo *sink, List *files)
{
	int64 rows = 0;
	ListCell *lc;
	uint64 loaded;

	if (!run.active || !sink->dynamic_partition_overwrite || run.replacing == NIL)
		return load_files(sink, files);
	foreach (lc, files)
		rows += ((LoadFile *) lfirst(lc))->row_count;
	while (!empty_then_load(sink, files, &loaded))
	{
		/* the refused rows and the progress of the undone load are counted again */
		rejects_begin(sink, run.commit_user, run.checkpoint_id, rejects_operator_call());
		load_progress_start(sink->sink_id, run.commit_user, run.checkpoint_id, list_length(files),
							rows);
		if (run.replacing == NIL)
			return load_files(sink, files);
	}
	return loaded;
}

/*
 * overwrite_end finishes what overwrite_begin started, after the load:
 * for a dynamic-partition sink, each leaf partition that received rows
 * unforeseen (not emptied by overwrite_load) and that no earlier commit
 * of the commit user replaced has the rows it held before the load
 * deleted; what was replaced is recorded in the commit user's state, in
 * the commit's transaction.  Returns the snapshot's commit kind:
 * OVERWRITE when the commit replaced anything, else APPEND.
 */
const char *
overwrite_end(const SinkInfo *sink, const char *commit_user, int64 checkpoint_id)
{
	List *replaced;
	ListCell *lc;

	if (!run.active)
		return "APPEND";
	run.active = false;
	if (!sink->dynamic_partition_overwrite)
	{
		if (!run.replaced)
			return "APPEND";
		metadata_record_overwrite(sink->sink_id, commit_user, checkpoint_id, NIL);
		return "OVERWRITE";
	}
	replaced = run.replacing;
	foreach (lc, find_all_inheritors(sink->target, RowExclusiveLock, NULL))
	{
		Oid leaf = lfirst_oid(lc);

		if (get_rel_relkind(leaf) != RELKIND_RELATION || inserts_kept(leaf) == 0 ||
			list_member_oid(run.state.partitions, leaf) || list_member_oid(run.replacing, leaf))
			continue;
		(void) delete_rows(sink, leaf, true, run.before);
		replaced = lappend_oid(replaced, leaf);
	}
	UnregisterSnapshot(run.before);
	run.before = NULL;
	if (replaced == NIL)
		return "APPEND";
	metadata_record_overwrite(sink->sink_id, commit_user, checkpoint_id, replaced);
	return "OVERWRITE";
}
