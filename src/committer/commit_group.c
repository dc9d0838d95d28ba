/*-------------------------------------------------------------------------
 *
 * commit_group.c
 *	  A sink group's checkpoints committed together: every member sink's
 *	  prepared checkpoints of one commit user, up to N, loaded and recorded
 *	  in ONE transaction, prepared and committed under one gid.
 *
 * A job replicating a whole database writes each table through its own
 * sink; committed table by table (as Paimon, Iceberg and the XA sinks
 * commit), a reader could see a checkpoint's child rows before their
 * parents, or one table's half of a transfer.  A group makes checkpoint N
 * of a commit user one decision across its members: each member's
 * checkpoints are committed with the very steps of a single sink's commit
 * (commit_steps.h: read the files, load, record the snapshot and raise the
 * mark), all inside one transaction block, which is then prepared and
 * committed.  A crash before the PREPARE leaves none of them committed (the
 * block is gone, every member's checkpoints stay prepared); after it,
 * recovery commits the gid as every checkpoint gid of ours, and with it
 * every member.  The gid is the one of a member's checkpoint that the
 * transaction commits (the first member loading the highest identifier),
 * so recovery proves it ours exactly as a single sink's.  The group's
 * properties are the first member's (the SQL entry points give them only
 * to it).  Parallel loaders are not used: one transaction holds the whole
 * group's rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "committer/commit.h"
#include "committer/commit_parallel.h"
#include "committer/commit_steps.h"
#include "committer/maintenance.h"
#include "committer/outcome_stats.h"
#include "committer/prepare.h"
#include "committer/work.h"
#include "core/fault.h"
#include "metadata/metadata.h"

/* One member of the group being committed: its marks before, its checkpoints to commit. */
typedef struct Member
{
	int32 sink_id;
	CommitUserMarks marks;
	List *identifiers; /* int64 *, ascending */
} Member;

/* The members commit_group_record_failure read (in CommitterContext). */
static List *failed_members = NIL;

/* One checkpoint of a member committed in the group's transaction. */
typedef struct MemberCheckpoint
{
	SinkInfo *sink;
	int64 checkpoint_id;
	int64 snapshot_id;
	uint64 loaded;
	List *files; /* LoadFile * */
	int64 bytes;
	UpsertCounts changes;
	TimestampTz start;
	CommitContext context;
} MemberCheckpoint;

/*
 * commit_group_members returns the sink ids of the group's members (an
 * integer List in CommitterContext), in the group's order, read in a
 * transaction of its own.  Raises ERRCODE_UNDEFINED_OBJECT when the group
 * was dropped while the request waited.
 */
List *
commit_group_members(int32 group_id)
{
	List *members;
	MemoryContext old;

	work_begin();
	old = MemoryContextSwitchTo(CommitterContext);
	members = metadata_group_members(group_id);
	MemoryContextSwitchTo(old);
	work_end();
	if (members == NIL)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("sink group %d does not exist", group_id),
						errdetail("It was dropped while the request waited.")));
	return members;
}

/*
 * read_members reads, in one transaction, each member's marks and its
 * prepared checkpoints up to checkpoint_id (Member *, in the group's order).
 */
static List *
read_members(List *sink_ids, const char *commit_user, int64 checkpoint_id)
{
	List *members = NIL;
	ListCell *lc;

	work_begin();
	foreach (lc, sink_ids)
	{
		MemoryContext old;
		Member *member = MemoryContextAllocZero(CommitterContext, sizeof(Member));

		member->sink_id = lfirst_int(lc);
		(void) work_require_sink(member->sink_id);
		member->marks = metadata_commit_user_marks(member->sink_id, commit_user, false);
		old = MemoryContextSwitchTo(CommitterContext);
		member->identifiers =
			metadata_pending_checkpoints(member->sink_id, commit_user, checkpoint_id);
		members = lappend(members, member);
		MemoryContextSwitchTo(old);
	}
	work_end();
	return members;
}

/*
 * raise_over_empty raises a member's committed mark over its empty
 * prepared checkpoints up to checkpoint_id (they have no committable), in
 * the open transaction, as commit_pending does for one sink.
 */
static void
raise_over_empty(Member *member, const char *commit_user, int64 checkpoint_id)
{
	int64 up_to = Min(checkpoint_id, member->marks.last_prepared);

	if (up_to > member->marks.last_committed)
	{
		metadata_move_marks(MARK_RAISE_COMMITTED, member->sink_id, commit_user, up_to);
		member->marks.last_committed = up_to;
	}
}

/*
 * load_member is one member's part of the group's transaction: each of its
 * checkpoints to commit read, loaded and recorded (its snapshot, its mark),
 * then its mark raised over empty ones; returns the MemberCheckpoints
 * (in CommitterContext), its files added to *files.
 */
static List *
load_member(Member *member, const char *commit_user, int64 checkpoint_id, List **files)
{
	List *done = NIL;
	ListCell *lc;

	foreach (lc, member->identifiers)
	{
		int64 identifier = *(int64 *) lfirst(lc);
		MemberCheckpoint *one = MemoryContextAllocZero(CommitterContext, sizeof(MemberCheckpoint));
		ErrorContextCallback callback;
		int64 rows = 0;
		int64 file_bytes = 0;
		const char *commit_kind;
		MemoryContext old;

		one->start = GetCurrentTimestamp();
		one->checkpoint_id = identifier;
		one->sink = commit_enter_checkpoint(member->sink_id, commit_user, identifier, &one->context,
											&callback);
		one->files = commit_read_checkpoint_files(one->sink, commit_user, identifier, &rows,
												  &one->bytes, &file_bytes);
		one->loaded = commit_load_checkpoint(one->sink, commit_user, identifier, one->files, rows,
											 &one->changes, &commit_kind);
		one->snapshot_id =
			commit_record_snapshot(member->sink_id, commit_user, identifier, one->loaded,
								   list_length(one->files), one->bytes, one->start, commit_kind);
		error_context_stack = callback.previous;
		member->marks.last_committed = Max(member->marks.last_committed, identifier);
		old = MemoryContextSwitchTo(CommitterContext);
		*files = list_concat(*files, one->files);
		done = lappend(done, one);
		MemoryContextSwitchTo(old);
	}
	raise_over_empty(member, commit_user, checkpoint_id);
	return done;
}

/*
 * commit_members commits the members' checkpoints in one transaction
 * block: each member loaded in turn (the fault point
 * committer_between_group_members fires between two members' loads), then
 * PREPARE TRANSACTION under the gid of the highest checkpoint loaded (its
 * first member's) and COMMIT PREPARED.  Any error before the PREPARE rolls
 * every member back: their checkpoints stay prepared.
 */
static void
commit_members(List *members, const char *commit_user, int64 checkpoint_id)
{
	List *done = NIL;
	List *files = NIL;
	MemberCheckpoint *decision = NULL;
	ErrorContextCallback callback;
	ListCell *lc;

	commit_begin_block();
	foreach (lc, members)
	{
		List *loaded;
		MemoryContext old;

		if (foreach_current_index(lc) > 0)
			fault_point("committer_between_group_members");
		loaded = load_member(lfirst(lc), commit_user, checkpoint_id, &files);
		old = MemoryContextSwitchTo(CommitterContext);
		done = list_concat(done, loaded);
		MemoryContextSwitchTo(old);
	}
	PopActiveSnapshot();
	SPI_finish();

	foreach (lc, done)
	{
		MemberCheckpoint *one = lfirst(lc);

		if (decision == NULL || one->checkpoint_id > decision->checkpoint_id)
			decision = one;
	}
	/* a PREPARE refused names the checkpoint whose gid it is */
	callback.callback = commit_error_context;
	callback.arg = &decision->context;
	commit_prepare_and_commit_gid(decision->sink, commit_user, decision->checkpoint_id, files,
								  &callback, COMMIT_WAY_ONE);
	foreach (lc, done)
	{
		MemberCheckpoint *one = lfirst(lc);
		int32 first_sink_id = ((Member *) linitial(members))->sink_id;
		CommitTally request_tally = CommitTallies;

		/* the first member's commits are the request's (serve.c); another's its own */
		if (one->sink->sink_id != first_sink_id)
			memset(&CommitTallies, 0, sizeof(CommitTallies));
		commit_log(one->sink, commit_user, one->checkpoint_id, one->snapshot_id, one->loaded,
				   one->files, one->bytes, &one->changes, one->start, 0);
		if (one->sink->sink_id != first_sink_id)
		{
			maintenance_record_tally(one->sink->sink_id, &CommitTallies);
			CommitTallies = request_tally;
		}
	}
	fault_point("committer_after_commit_prepared");
}

/*
 * commit_group_up_to serves commit() of a sink group: every member's
 * prepared checkpoints of commit_user up to checkpoint_id committed in one
 * prepared transaction (commit_members), the members' marks raised over
 * their empty prepared ones in it (or, when no member has a checkpoint
 * with rows, in one plain transaction).  The request gets the first
 * member's marks before and after: a group's members move together.
 */
void
commit_group_up_to(int32 group_id, const char *commit_user, int64 checkpoint_id,
				   CommitterRequest *request)
{
	List *members = read_members(commit_group_members(group_id), commit_user, checkpoint_id);
	Member *first = linitial(members);
	bool any = false;
	ListCell *lc;

	request->previous_last_committed = first->marks.last_committed;
	/* each member's skip is its own: the first's the request's (serve.c) */
	foreach (lc, members)
	{
		Member *member = lfirst(lc);
		CommitTally skip = {.skipped = 1};

		if (checkpoint_id > member->marks.last_committed)
			continue;
		if (member == first)
			CommitTallies.skipped++;
		else
		{
			maintenance_record_tally(member->sink_id, &skip);
			outcome_stats_count(member->sink_id, commit_user, 0, 1);
		}
	}
	foreach (lc, members)
		any = any || ((Member *) lfirst(lc))->identifiers != NIL;
	if (any)
	{
		commit_members(members, commit_user, checkpoint_id);
		/* the first member's commit is counted as the request's (serve.c) */
		foreach (lc, members)
		{
			if (foreach_current_index(lc) > 0)
				maintenance_after_commit(((Member *) lfirst(lc))->sink_id);
		}
	}
	else
	{
		work_begin();
		foreach (lc, members)
			raise_over_empty(lfirst(lc), commit_user, checkpoint_id);
		work_end();
	}
	request->last_committed = first->marks.last_committed;
	request->result_checkpoint_id = checkpoint_id;
}

/*
 * commit_group_end_input serves end_input() of a sink group: every member
 * whose input has not ended yet prepares the end-of-input checkpoint, then
 * the group commits it at once, as one.  A retry after a lost reply
 * prepares nothing again and answers as commit() does.
 */
void
commit_group_end_input(int32 group_id, const char *commit_user, CommitterRequest *request)
{
	List *members = read_members(commit_group_members(group_id), commit_user, 0);
	ListCell *lc;

	request->committable_count = 0;
	foreach (lc, members)
	{
		Member *member = lfirst(lc);

		if (member->marks.last_committed != PAIMON_SINK_END_INPUT_CHECKPOINT)
			request->committable_count +=
				prepare_checkpoint(member->sink_id, commit_user, PAIMON_SINK_END_INPUT_CHECKPOINT,
								   -1, NULL, 0, true, request);
	}
	commit_group_up_to(group_id, commit_user, PAIMON_SINK_END_INPUT_CHECKPOINT, request);
}

/* read_group_members is commit_group_record_failure's step: the group's members, or NIL. */
static void
read_group_members(void *arg)
{
	const CommitterRequest *outcome = arg;
	List *members;
	MemoryContext old;

	work_begin();
	old = MemoryContextSwitchTo(CommitterContext);
	members = metadata_group_members(outcome->group_id);
	MemoryContextSwitchTo(old);
	work_end();
	failed_members = members;
}

/*
 * commit_group_record_failure counts a failed commit() or end_input() of a
 * sink group as a failure of every member, not only of its first (the
 * request's sink, which maintenance_record_statistics counts): the group
 * commits its members as one, so each member's commit failed.  The members
 * are read in a transaction of their own, as the group is now; a group
 * dropped meanwhile (or a failed read, logged) leaves the failure with the
 * first member alone.  Raises nothing but out of memory.
 */
void
commit_group_record_failure(const CommitterRequest *outcome)
{
	ListCell *lc;

	if (outcome->group_id == 0 || outcome->sqlerrcode == 0)
		return;
	failed_members = NIL;
	if (!work_try(read_group_members, (void *) outcome, NULL))
		return;
	foreach (lc, failed_members)
		maintenance_record_member_failure(lfirst_int(lc), outcome);
	failed_members = NIL;
}

/*
 * commit_group_defers tells whether a request must wait for the parallel
 * commit in flight (commit_parallel_defers): for a sink group's request,
 * when any member must.  Never raises but on internal errors (a group
 * dropped meanwhile has no members: its request fails when served).
 */
bool
commit_group_defers(const CommitterRequest *request)
{
	List *members;
	ListCell *lc;
	bool defers = false;

	if (request->group_id == 0 || !commit_parallel_active())
		return commit_parallel_defers(request->sink_id);
	work_begin();
	members = metadata_group_members(request->group_id);
	work_end();
	foreach (lc, members)
		defers = defers || commit_parallel_defers(lfirst_int(lc));
	return defers;
}
