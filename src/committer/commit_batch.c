/*-------------------------------------------------------------------------
 *
 * commit_batch.c
 *	  The due periodic checkpoints of a database committed together: one
 *	  barrier round, one recording transaction and one prepared
 *	  transaction for up to PAIMON_SINK_BARRIER_SINKS sinks.
 *
 * A whole-database sync writes each table through a sink of its own, and
 * checkpointed one by one, a committer made about 500 snapshots a second:
 * each took a barrier round trip to the writers, three transactions and
 * two WAL flushes (PREPARE TRANSACTION, COMMIT PREPARED).  Here the sinks
 * due together share them.  Each member keeps what it has alone: its own
 * commit user's next checkpoint id, its committables and marks, its own
 * snapshot; (sink, commit user, checkpoint id) stays the key.
 *
 * First one transaction reads every member's marks, runs ONE barrier for
 * all of them (barrier_run_sinks) and records each member's committables
 * as its next checkpoint, raising its prepared mark, as prepare.c does for
 * one sink; like checkpoint()'s, its commit is not flushed on its own and
 * the barrier is confirmed once the PREPARE below has flushed past it (a
 * batch of idle sinks, which recorded nothing, flushes nothing).
 * Then one transaction block commits the recorded checkpoints with the
 * single sink's steps (commit_steps.h: read the files, load, record the
 * snapshot and raise the mark), each member inside a subtransaction of
 * its own, and is prepared under the gid of its first member's checkpoint
 * and committed: a checkpoint gid of ours is complete whatever it holds,
 * so recovery commits it as any other (as a sink group's, commit_group.c).
 * A crash before the PREPARE leaves every member's checkpoint prepared
 * (recorded) and nothing loaded; after it, recovery commits all of them.
 *
 * A member whose load fails must not fail the others: its subtransaction
 * is rolled back (its rows and catalog changes gone, the target's locks
 * and the role switch undone by the subtransaction's abort) and it is
 * committed on its own afterwards (serve.c), where it fails or succeeds as
 * a sink alone would, its error logged and its schedule told.  A savepoint
 * per member, not one transaction per attempt, because a failure then
 * costs only the failing member's work.  The subtransactions bound a
 * batch: each member takes two subtransaction ids (its own, and the
 * load's, load.c), and a transaction with more than 64 of them overflows
 * its PGPROC's cache of them (PGPROC_MAX_CACHED_SUBXIDS): every snapshot
 * taken while it is open or prepared then looks subtransactions up in
 * pg_subtrans.  So a batch has at most 32 members.
 *
 * Not batched, but committed the ordinary way: the sinks whose commit
 * commit.c routes specially (an overwrite sink's replacing commit, a sink
 * whose on_error moves rows aside, a checkpoint the loaders load), a sink
 * with a prepared checkpoint left from before (a failed commit's), and a
 * sink whose checkpoint would take the batch past BATCH_ROWS rows.  Only
 * sinks of one owner share a batch: each member's target code runs as its
 * owner in the batch's transaction, and one owner's code must not make
 * another owner's commits fail or wait (a trigger's NOTIFY refuses the
 * PREPARE of everything with it, for one).  Another owner's sink stays due
 * for the next batch.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "executor/spi.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"

#include "apply/load.h"
#include "committer/barrier.h"
#include "committer/commit.h"
#include "committer/commit_batch.h"
#include "committer/commit_parallel.h"
#include "committer/commit_steps.h"
#include "committer/work.h"
#include "core/fault.h"
#include "core/guc.h"
#include "core/security.h"

/*
 * The rows one batch commits at most: a member whose checkpoint would take
 * it further commits on its own, so that a batch's transaction, which
 * holds every member's target locks, stays short.
 */
#define BATCH_ROWS 10000

/* What the batch knows of one member between its steps. */
typedef struct MemberState
{
	BatchMember *member;
	SinkInfo *sink;
	int64 checkpoint_id; /* its next checkpoint */
	bool included;		 /* in the batch's transaction */
	bool loaded_ok;		 /* loaded and recorded there */
	/* its commit in the batch's transaction */
	uint64 loaded;
	int64 snapshot_id;
	List *files; /* LoadFile * */
	int64 bytes;
	UpsertCounts changes;
	TimestampTz start;
	CommitContext context;
} MemberState;

/*
 * batchable tells whether a sink's commit is an ordinary load that may
 * share a transaction: not an overwrite sink's (its commit may replace the
 * target's rows), not one that moves refused rows aside (rejects.c redoes
 * a failed load in many subtransactions).
 */
static bool
batchable(const SinkInfo *sink)
{
	return !SINK_IS_OVERWRITE(sink) && !sink->reject_on_error && OidIsValid(sink->owner);
}

/*
 * take_members reads the members' sinks and marks in the open transaction
 * and takes those that may be batched, each as its own commit user's next
 * checkpoint: states and sinks (the barrier's) get one entry per member
 * taken; returns how many.  The marks are locked, as prepare.c locks them.
 * A member not taken is BATCH_ALONE (the ordinary way: a sink dropped, not
 * batchable, with a prepared checkpoint pending, or out of checkpoint
 * ids) or BATCH_NOT_TAKEN (another owner's than the first member's).
 */
static int
take_members(BatchMember *members, int count, MemberState *states, BarrierSink *sinks)
{
	Oid owner = InvalidOid;
	int taken = 0;

	for (int i = 0; i < count; i++)
	{
		BatchMember *member = &members[i];
		SinkInfo *sink = MemoryContextAllocZero(CommitterContext, sizeof(SinkInfo));
		MemoryContext old = MemoryContextSwitchTo(CommitterContext);
		bool found = metadata_sink_by_id(member->sink_id, sink);
		CommitUserMarks marks;
		int64 last;

		MemoryContextSwitchTo(old);
		member->outcome = BATCH_ALONE;
		member->checkpoint_id = 0;
		if (!found || !batchable(sink))
			continue;
		if (OidIsValid(owner) && sink->owner != owner)
		{
			member->outcome = BATCH_NOT_TAKEN;
			continue;
		}
		marks = metadata_commit_user_marks(member->sink_id, sink->default_commit_user, true);
		last = Max(marks.last_prepared, marks.last_committed);
		if (marks.last_prepared > marks.last_committed ||
			last >= PAIMON_SINK_END_INPUT_CHECKPOINT - 1)
			continue;
		owner = sink->owner;
		strlcpy(member->commit_user, sink->default_commit_user, sizeof(member->commit_user));
		states[taken].member = member;
		states[taken].sink = sink;
		states[taken].checkpoint_id = last + 1;
		memset(&sinks[taken], 0, sizeof(BarrierSink));
		sinks[taken].sink_id = member->sink_id;
		sinks[taken].sink_uuid = sink->sink_uuid;
		sinks[taken].fence_epoch = marks.fence_epoch;
		strlcpy(sinks[taken].commit_user, sink->default_commit_user,
				sizeof(sinks[taken].commit_user));
		taken++;
	}
	return taken;
}

/*
 * record_members runs one barrier for the members taken and records each
 * one's committables as its checkpoint in the open transaction, raising
 * the prepared mark of each member that recorded any (an empty one moves
 * nothing, as an empty periodic checkpoint of one sink).  seqs gets the
 * writers' barrier seqs, to confirm once the transaction is durable.
 */
static void
record_members(MemberState *states, int taken, const BarrierSink *sinks, uint64 *seqs)
{
	ListCell *lc;

	foreach (lc, barrier_run_sinks(sinks, taken, -1, BARRIER_SEAL, seqs))
	{
		CommittableRecord *record = lfirst(lc);
		MemberState *state = NULL;
		CommittableEntry entry;

		for (int i = 0; i < taken && state == NULL; i++)
			if (states[i].member->sink_id == record->stream.sink_id)
				state = &states[i];
		if (state == NULL)
			elog(ERROR, "sink %d answered a barrier it was not asked", record->stream.sink_id);
		entry.file_name = record->file_name;
		entry.sink_id = record->stream.sink_id;
		entry.commit_user = record->stream.commit_user;
		entry.checkpoint_id = state->checkpoint_id;
		entry.writer_id = record->stream.writer_id;
		entry.bucket = record->stream.bucket;
		entry.row_count = record->row_count;
		entry.byte_count = record->byte_count;
		entry.max_sequence = record->max_sequence;
		entry.excluded_count = record->excluded_count;
		entry.excluded = (const int64 *) (record + 1);
		if (metadata_record_committable(&entry))
		{
			state->member->committables++;
			state->member->rows += record->row_count;
		}
	}
	for (int i = 0; i < taken; i++)
		if (states[i].member->committables > 0)
			metadata_move_marks(MARK_RAISE_PREPARED, states[i].member->sink_id,
								states[i].member->commit_user, states[i].checkpoint_id);
}

/*
 * load_member commits one member's recorded checkpoint in the batch's open
 * transaction block, inside a subtransaction of its own: entered, its files
 * read and loaded, its snapshot recorded and its mark raised.  Returns
 * whether it did; on an error the subtransaction is rolled back, what the
 * load left open is closed, and the member is left to commit on its own
 * (where its error is raised again, and logged, if it persists).
 */
static bool
load_member(MemberState *state)
{
	BatchMember *member = state->member;
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorContextCallback *saved_stack = error_context_stack;
	volatile bool ok = false;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(context);
	PG_TRY();
	{
		ErrorContextCallback callback;
		int64 rows = 0;
		int64 file_bytes = 0;
		const char *commit_kind;

		state->start = GetCurrentTimestamp();
		/* the sink and marks read as the checkpoint was recorded, in this request */
		commit_enter_known(state->sink, member->commit_user, state->checkpoint_id, &state->context,
						   &callback);
		state->files =
			commit_read_checkpoint_files(state->sink, member->commit_user, state->checkpoint_id,
										 &rows, &state->bytes, &file_bytes);
		state->loaded =
			commit_load_checkpoint(state->sink, member->commit_user, state->checkpoint_id,
								   state->files, rows, &state->changes, &commit_kind);
		state->snapshot_id = commit_record_snapshot(
			member->sink_id, member->commit_user, state->checkpoint_id, state->loaded,
			list_length(state->files), state->bytes, state->start, commit_kind);
		error_context_stack = callback.previous;
		ReleaseCurrentSubTransaction();
		ok = true;
	}
	PG_CATCH();
	{
		ErrorData *error;

		error_context_stack = saved_stack;
		MemoryContextSwitchTo(context);
		error = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(context);
		load_abort();
		load_progress_update(COMMIT_PHASE_IDLE, 0, 0);
		/* what the owner's code left in the session goes with its failure too */
		security_forget_session_state();
		(void) commit_failure_hint(error->sqlerrcode);
		ereport(DEBUG1,
				(errmsg("paimon_sink commits checkpoint %lld of sink %d on its own: in a batch "
						"it failed with SQLSTATE %s: %s",
						(long long) state->checkpoint_id, member->sink_id,
						unpack_sql_state(error->sqlerrcode), error->message)));
		FreeErrorData(error);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(context);
	CurrentResourceOwner = owner;
	return ok;
}

/*
 * include_members chooses the members the batch's transaction commits:
 * those that recorded a checkpoint, in order, as long as the batch's rows
 * stay within BATCH_ROWS, none that the loaders would load.  Returns how
 * many; the others stay BATCH_ALONE with their recorded checkpoint.
 */
static int
include_members(MemberState *states, int taken)
{
	int64 rows = 0;
	int included = 0;

	for (int i = 0; i < taken; i++)
	{
		BatchMember *member = states[i].member;

		if (member->checkpoint_id == 0 || rows + member->rows > BATCH_ROWS ||
			commit_parallel_wanted(states[i].sink, member->rows))
			continue;
		states[i].included = true;
		rows += member->rows;
		included++;
	}
	return included;
}

/*
 * commit_members commits the included members' recorded checkpoints in one
 * transaction block (load_member each; the fault point
 * committer_between_batch_members fires between two), then PREPARE
 * TRANSACTION under the gid of the first member loaded and COMMIT
 * PREPARED; each member committed is logged and becomes BATCH_COMMITTED
 * with its tally.  A block where no member loaded is rolled back.  An
 * error of the PREPARE or after it leaves the members BATCH_ALONE: their
 * commit on their own finds them committed once the in-doubt gid is.
 */
static void
commit_members(MemberState *states, int taken)
{
	List *files = NIL;
	MemberState *decision = NULL;
	ErrorContextCallback callback;
	bool first = true;

	commit_begin_block();
	for (int i = 0; i < taken; i++)
	{
		MemoryContext old;

		if (!states[i].included)
			continue;
		if (!first)
			fault_point("committer_between_batch_members");
		first = false;
		if (!load_member(&states[i]))
			continue;
		states[i].loaded_ok = true;
		if (decision == NULL)
			decision = &states[i];
		old = MemoryContextSwitchTo(CommitterContext);
		files = list_concat(files, states[i].files);
		MemoryContextSwitchTo(old);
	}
	PopActiveSnapshot();
	SPI_finish();
	if (decision == NULL)
	{
		AbortOutOfAnyTransaction();
		MemoryContextSwitchTo(CommitterContext);
		return;
	}

	/* a PREPARE refused names the checkpoint whose gid it is */
	callback.callback = commit_error_context;
	callback.arg = &decision->context;
	commit_prepare_and_commit_gid(decision->sink, decision->member->commit_user,
								  decision->checkpoint_id, files, &callback, COMMIT_WAY_BATCH);
	for (int i = 0; i < taken; i++)
	{
		MemberState *state = &states[i];

		if (!state->loaded_ok)
			continue;
		state->member->outcome = BATCH_COMMITTED;
		memset(&CommitTallies, 0, sizeof(CommitTallies));
		commit_log(state->sink, state->member->commit_user, state->checkpoint_id,
				   state->snapshot_id, state->loaded, state->files, state->bytes, &state->changes,
				   state->start, 0);
		state->member->tally = CommitTallies;
	}
	memset(&CommitTallies, 0, sizeof(CommitTallies));
	fault_point("committer_after_commit_prepared");
}

/*
 * commit_batch_periodic runs the periodic checkpoints of members (count of
 * them, at most PAIMON_SINK_BARRIER_SINKS) together: the members taken
 * (take_members) share one barrier and one recording transaction; those
 * with rows share one prepared transaction (commit_members).  Each member
 * gets its outcome: BATCH_EMPTY, BATCH_COMMITTED (with its tally),
 * BATCH_NOT_TAKEN, or BATCH_ALONE, with checkpoint_id the checkpoint
 * recorded for it (a commit of its own commits it) or 0 (its whole
 * periodic checkpoint is still to run).  Raises what the barrier or the
 * catalog raise; the outcomes then say what was done, the rest is
 * BATCH_ALONE.
 */
void
commit_batch_periodic(BatchMember *members, int count)
{
	MemberState *states = palloc0(sizeof(MemberState) * count);
	BarrierSink *sinks = palloc0(sizeof(BarrierSink) * count);
	uint64 *seqs = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	XLogRecPtr commit_end;
	int taken;
	bool recorded = false;

	Assert(count <= PAIMON_SINK_BARRIER_SINKS);
	work_begin();
	taken = take_members(members, count, states, sinks);
	if (taken > 0)
		record_members(states, taken, sinks, seqs);
	/* the PREPARE TRANSACTION that follows flushes this commit too */
	(void) set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_LOCAL, true, 0, false);
	work_end();
	commit_end = XactLastCommitEnd;
	for (int i = 0; i < taken; i++)
	{
		BatchMember *member = states[i].member;

		if (member->committables == 0)
			member->outcome = BATCH_EMPTY;
		else
			member->checkpoint_id = states[i].checkpoint_id;
		recorded = recorded || member->committables > 0;
	}
	/* a batch that recorded nothing has nothing to make durable (idle sinks flush nothing) */
	if (!recorded)
		commit_end = InvalidXLogRecPtr;

	/*
	 * A failed commit leaves the checkpoints recorded: the writers forget
	 * their files all the same, once the recording is durable (see
	 * prepare.c's prepare_and_commit).
	 */
	PG_TRY();
	{
		if (include_members(states, taken) > 0)
			commit_members(states, taken);
	}
	PG_CATCH();
	{
		XLogFlush(commit_end);
		barrier_confirm(seqs);
		PG_RE_THROW();
	}
	PG_END_TRY();
	XLogFlush(commit_end);
	barrier_confirm(seqs);
}
