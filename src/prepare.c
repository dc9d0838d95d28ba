/*-------------------------------------------------------------------------
 *
 * prepare.c
 *	  Preparing checkpoints: prepare_commit(), and the prepare half of
 *	  checkpoint() and end_input().
 *
 * A prepare checks the checkpoint id against the commit user's marks
 * (ids increase; committed ones are final; nothing after end_input), runs
 * the barrier and records the committables the writers report, in one
 * transaction that also raises the prepared mark.  Once that transaction
 * is durable the barrier is confirmed, so the writers forget the files.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "barrier.h"
#include "commit.h"
#include "prepare.h"
#include "utils/array.h"
#include "utils/guc.h"
#include "work.h"

/* check_checkpoint_id refuses a checkpoint id the commit user's marks do not allow. */
static void
check_checkpoint_id(const char *commit_user, int64 checkpoint_id, int64 last_prepared,
					int64 last_committed)
{
	if (last_committed == PAIMON_SINK_END_INPUT_CHECKPOINT)
		ereport(
			ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("commit user \"%s\" has ended its input", commit_user),
			 errdetail(
				 "end_input() committed its last checkpoint; nothing can be prepared after it."),
			 errhint("Use a new commit user for new input.")));
	if (checkpoint_id <= last_committed)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("checkpoint id %lld is not above the last committed checkpoint %lld of "
						"commit user \"%s\"",
						(long long) checkpoint_id, (long long) last_committed, commit_user),
				 errdetail("Checkpoint ids of a commit user increase; committed ones are final."),
				 errhint("Prepare checkpoint %lld or later, or ask "
						 "paimon_sink.last_committed_checkpoint() where the commit user stands.",
						 (long long) last_committed + 1)));
	if (checkpoint_id < last_prepared)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("checkpoint id %lld goes backwards: commit user \"%s\" already "
							   "prepared checkpoint %lld",
							   (long long) checkpoint_id, commit_user, (long long) last_prepared),
						errdetail("Checkpoint ids of a commit user must not decrease."),
						errhint("Prepare checkpoint %lld or later.", (long long) last_prepared)));
}

/*
 * barrier_and_record runs the barrier and records its committables as checkpoint_id in the
 * current transaction; record_empty also moves the prepared mark when the
 * barrier found nothing (a job's checkpoint happened even without rows).
 * Returns the number of committables recorded; seqs receives each writer's
 * barrier seq, to confirm once the transaction is durable.
 */
static int
barrier_and_record(SinkInfo *sink, const char *commit_user, int64 checkpoint_id, int32 writer_id,
				   uint64 fence_epoch, bool record_empty, uint64 *seqs)
{
	List *records;
	ListCell *lc;
	int recorded = 0;

	records = barrier_run(sink, commit_user, writer_id, BARRIER_SEAL, fence_epoch, seqs);
	foreach (lc, records)
	{
		CommittableRecord *record = lfirst(lc);
		CommittableEntry entry = {
			.file_name = record->file_name,
			.sink_id = record->stream.sink_id,
			.commit_user = record->stream.commit_user,
			.checkpoint_id = checkpoint_id,
			.writer_id = record->stream.writer_id,
			.bucket = record->stream.bucket,
			.row_count = record->row_count,
			.byte_count = record->byte_count,
			.max_sequence = record->max_sequence,
			.excluded_count = record->excluded_count,
			.excluded = (const int64 *) (record + 1),
		};

		if (metadata_record_committable(&entry))
			recorded++;
	}
	if (recorded > 0 || record_empty)
		metadata_move_marks(MARK_RAISE_PREPARED, sink->sink_id, commit_user, checkpoint_id);
	return recorded;
}

/*
 * prepare_recorded prepares checkpoint_id (checkpoint_id 0: the next one
 * of the sink's own commit user, copied into own_user, read under the lock
 * of its marks; commit_user is then NULL): barrier and record
 * the committables in one transaction.  Returns the number of committables
 * recorded, *prepared the checkpoint id.  With durable, the transaction's
 * commit is flushed and the barrier confirmed; without, the commit is not
 * flushed, seqs and *commit_end receive what prepare_confirm needs, and
 * the caller must call it once that commit is durable.  pending, unless
 * NULL, receives the commit user's prepared checkpoints up to checkpoint_id
 * (int64 *, in CommitterContext) and after its marks, as commit_pending
 * takes them, read in the same transaction.
 */
static int
prepare_recorded(int32 sink_id, const char *commit_user, char *own_user, int64 checkpoint_id,
				 int32 writer_id, bool record_empty, bool durable, uint64 *seqs, int64 *prepared,
				 XLogRecPtr *commit_end, List **pending, CommitUserMarks *after)
{
	int recorded;
	SinkInfo *sink;
	CommitUserMarks marks;

	work_begin();
	sink = work_require_sink(sink_id);
	if (checkpoint_id == 0)
		strlcpy(own_user, sink->default_commit_user, PAIMON_SINK_COMMIT_USER_MAXLEN + 1);
	if (commit_user == NULL)
		commit_user = own_user;
	marks = metadata_commit_user_marks(sink_id, commit_user, true);
	if (checkpoint_id == 0)
		checkpoint_id = Max(marks.last_prepared, marks.last_committed) + 1;
	check_checkpoint_id(commit_user, checkpoint_id, marks.last_prepared, marks.last_committed);
	recorded = barrier_and_record(sink, commit_user, checkpoint_id, writer_id, marks.fence_epoch,
								  record_empty, seqs);
	if (pending != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(CommitterContext);

		*pending = metadata_pending_checkpoints(sink_id, commit_user, checkpoint_id);
		MemoryContextSwitchTo(old);
		*after = metadata_commit_user_marks(sink_id, commit_user, false);
	}
	/* the PREPARE TRANSACTION that follows flushes this commit too */
	if (!durable)
		(void) set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);
	work_end();
	*prepared = checkpoint_id;
	*commit_end = XactLastCommitEnd;
	if (durable)
		barrier_confirm(seqs);
	return recorded;
}

/*
 * prepare_confirm makes the commit of prepare_recorded (ending at
 * commit_end) durable, when no later flush did, and confirms its barrier:
 * the writers forget the files.  Left unconfirmed (an error before), the
 * writers report the files again at the next barrier, which finds them
 * recorded.
 */
static void
prepare_confirm(const uint64 *seqs, XLogRecPtr commit_end)
{
	XLogFlush(commit_end); /* nothing to do once PREPARE TRANSACTION flushed past it */
	barrier_confirm(seqs);
}

/*
 * prepare_checkpoint prepares checkpoint_id: barrier and record the
 * committables in one durable transaction.  Returns the number of
 * committables recorded.
 */
int
prepare_checkpoint(int32 sink_id, const char *commit_user, int64 checkpoint_id, int32 writer_id,
				   bool record_empty)
{
	uint64 *seqs = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	int64 prepared;
	XLogRecPtr commit_end;

	return prepare_recorded(sink_id, commit_user, NULL, checkpoint_id, writer_id, record_empty,
							true, seqs, &prepared, &commit_end, NULL, NULL);
}

/*
 * prepare_and_commit serves checkpoint(): barrier, prepare and commit the
 * sink's own commit user's next checkpoint.  The committables are recorded
 * (committed) before the commit transaction: a writer that restarts while
 * that transaction is in doubt must find its sealed files recorded, or it
 * would adopt them again.  That commit is not flushed on its own: the
 * commit's PREPARE TRANSACTION flushes the WAL past it, and only then are
 * the writers told to forget the files.  A crash before loses both, as a
 * crash before the recording's commit would: the writers adopt the files.
 * What the commit needs to know (the prepared checkpoints, the marks) is
 * read in the recording's transaction: three transactions in all, one of
 * them prepared.
 */
void
prepare_and_commit(int32 sink_id, CommitterRequest *request)
{
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	uint64 *seqs = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	int64 checkpoint_id;
	XLogRecPtr commit_end;
	List *pending;
	CommitUserMarks marks;

	request->committable_count =
		prepare_recorded(sink_id, NULL, commit_user, 0, -1, false, false, seqs, &checkpoint_id,
						 &commit_end, &pending, &marks);
	strlcpy(request->commit_user, commit_user, sizeof(request->commit_user));
	/* a fresh checkpoint id: above the last committed one, none skipped */
	request->previous_last_committed = marks.last_committed;
	/*
	 * A failed commit leaves the checkpoint prepared, its files recorded: the
	 * writers forget them all the same.  Neither step can meet a lock the
	 * error left held (no error is raised while holding WALWriteLock or a
	 * spinlock).
	 */
	PG_TRY();
	{
		commit_pending(sink_id, commit_user, checkpoint_id, request, pending, marks);
	}
	PG_CATCH();
	{
		prepare_confirm(seqs, commit_end);
		PG_RE_THROW();
	}
	PG_END_TRY();
	prepare_confirm(seqs, commit_end);
}

/*
 * prepare_end_input serves end_input(): prepare the end-of-input
 * checkpoint and commit at once.
 */
void
prepare_end_input(int32 sink_id, const char *commit_user, CommitterRequest *request)
{
	request->committable_count =
		prepare_checkpoint(sink_id, commit_user, PAIMON_SINK_END_INPUT_CHECKPOINT, -1, true);
	commit_up_to(sink_id, commit_user, PAIMON_SINK_END_INPUT_CHECKPOINT, request);
}
