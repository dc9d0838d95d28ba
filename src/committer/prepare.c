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
 * A prepare of a committed checkpoint id is refused, and the rows staged
 * for it are dropped at its barrier (a replay: Paimon's committer drops
 * committables at or below the committed identifier), so that they never
 * join a later checkpoint.  A prepare_commit() that carries properties (a
 * job's source offsets) records them for its writer id in the same
 * transaction as the committables, after refusing a value that another
 * writer id gave the same key (metadata_properties.c says why).  A prepare_commit()
 * or end_input() that finds
 * nothing while other streams of the sink hold staged rows warns, naming
 * them: a job that addresses the wrong stream learns it before it
 * acknowledges its source.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"

#include "committer/barrier.h"
#include "committer/commit.h"
#include "committer/prepare.h"
#include "committer/work.h"
#include "core/guc.h"
#include "ipc/request.h"
#include "ipc/stream_lock.h"
#include "metadata/metadata.h"

/*
 * check_checkpoint_id refuses a checkpoint id the commit user's marks do
 * not allow; dropped is the number of rows the refused prepare dropped (a
 * prepare of a committed id drops what was staged for it, see
 * drop_replayed).
 */
static void
check_checkpoint_id(const char *commit_user, int64 checkpoint_id, int64 last_prepared,
					int64 last_committed, int64 dropped)
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
		ereport(
			ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("checkpoint id %lld is not above the last committed checkpoint %lld of "
					"commit user \"%s\"",
					(long long) checkpoint_id, (long long) last_committed, commit_user),
			 dropped > 0
				 ? errdetail_plural("Checkpoint ids of a commit user increase; committed ones are "
									"final. The %lld row staged for it was dropped, as a replay of "
									"what checkpoint %lld committed; a row that was no replay must "
									"be written again, then prepared as checkpoint %lld or later.",
									"Checkpoint ids of a commit user increase; committed ones are "
									"final. The %lld rows staged for it were dropped, as a replay "
									"of what checkpoint %lld committed; rows that were no replay "
									"must be written again, then prepared as checkpoint %lld or "
									"later.",
									(unsigned long) Min(dropped, ULONG_MAX), (long long) dropped,
									(long long) checkpoint_id, (long long) last_committed + 1)
				 : errdetail("Checkpoint ids of a commit user increase; committed ones are final."),
			 errhint("A job restarted without its state must not go on under commit user \"%s\": "
					 "restore its state and call paimon_sink.recover(), or start it with a new "
					 "commit user. To go on under this one, prepare checkpoint %lld or later "
					 "(paimon_sink.last_committed_checkpoint() tells where it stands).",
					 commit_user, (long long) last_committed + 1)));
	if (checkpoint_id < last_prepared)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("checkpoint id %lld goes backwards: commit user \"%s\" already "
							   "prepared checkpoint %lld",
							   (long long) checkpoint_id, commit_user, (long long) last_prepared),
						errdetail("Checkpoint ids of a commit user must not decrease."),
						errhint("Prepare checkpoint %lld or later.", (long long) last_prepared)));
}

/*
 * check_properties_epoch refuses (ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE)
 * the properties of a prepare whose session joined the commit user's fence
 * epoch before a restore raised it (a session of the failed attempt still
 * running): its positions would replace those of the restored job's
 * subtask with the same writer id.  Its rows are fenced at the barrier; its
 * properties are fenced here, as Kafka refuses a stale producer epoch's
 * sendOffsetsToTransaction.
 */
static void
check_properties_epoch(const SinkInfo *sink, const char *commit_user, uint64 session_epoch,
					   uint64 current)
{
	if (session_epoch < current)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("commit user \"%s\" of sink \"%s\" was recovered after this session joined "
						"it",
						commit_user, sink->name),
				 errdetail("A restore raised the commit user's fence epoch from %llu to %llu; the "
						   "properties of the restored-from attempt are never prepared. Nothing "
						   "was prepared.",
						   (unsigned long long) session_epoch, (unsigned long long) current),
				 errhint("Prepare from a session of the restored job (restart_job(), or set "
						 "paimon_sink.commit_user again).")));
}

/*
 * check_sealed_rows refuses (ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE) a
 * prepare whose checkpoint holds for the writer id (every one when
 * writer_id < 0) another number of rows than the subtask says it sent:
 * rows of another identity were staged under its own, or its own under
 * another (a pooled connection that kept another client's settings), and
 * the checkpoint would not be what the job's positions say.  Raised before
 * the prepare's commit: nothing is recorded, the barrier is not confirmed,
 * and the writers report the sealed files again at the next barrier.
 */
static void
check_sealed_rows(const SinkInfo *sink, const char *commit_user, int64 checkpoint_id,
				  int32 writer_id, int64 expected)
{
	int64 rows;
	char writer[32];

	(void) metadata_count_committables(sink->sink_id, commit_user, checkpoint_id, writer_id, &rows);
	if (rows == expected)
		return;
	if (writer_id < 0)
		strlcpy(writer, "every writer id", sizeof(writer));
	else
		snprintf(writer, sizeof(writer), "writer id %d", writer_id);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("checkpoint %lld of commit user \"%s\" of sink \"%s\" holds %lld rows of %s, "
					"not the %lld it was sent",
					(long long) checkpoint_id, commit_user, sink->name, (long long) rows, writer,
					(long long) expected),
			 errdetail("Rows were staged under another identity than the one they were sent with "
					   "(a pooled connection that kept another client's settings), or rows of "
					   "another writer under this one. Nothing was prepared; the rows stay "
					   "staged."),
			 errhint("Name the identity in each writing transaction with paimon_sink.write_as(), "
					 "then restart the job with restart_job().")));
}

/*
 * drop_replayed serves a prepare of a checkpoint id at or below the commit
 * user's last committed one: the streams it names are sealed and what was
 * sealed is removed (BARRIER_DROP), so that rows written for a committed
 * checkpoint (a job replaying after a refused stale restore, or restarted
 * without its state) never join a later checkpoint; rows of transactions
 * still running stay for the next one.  Logs the count; returns the rows
 * dropped.  The barrier is not confirmed: nothing is recorded.
 */
static int64
drop_replayed(SinkInfo *sink, const char *commit_user, int64 checkpoint_id, int32 writer_id,
			  uint64 fence_epoch, int64 last_committed)
{
	uint64 *seqs = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	int64 rows = 0;
	int files = 0;
	ListCell *lc;

	foreach (lc, barrier_run(sink, commit_user, writer_id, BARRIER_DROP, fence_epoch, seqs))
	{
		CommittableRecord *record = lfirst(lc);

		if (record->kind != BARRIER_RECORD_DROPPED)
			continue;
		rows += record->row_count;
		files++;
	}
	if (files > 0)
		ereport(LOG,
				(errmsg("paimon_sink dropped %lld rows of commit user \"%s\" of sink \"%s\" "
						"written for checkpoint %lld, at or below its last committed checkpoint "
						"%lld",
						(long long) rows, commit_user, sink->name, (long long) checkpoint_id,
						(long long) last_committed),
				 errdetail("Their %d staged files were removed: a checkpoint id that is committed "
						   "never commits again, so rows written for it are a replay (as Paimon's "
						   "committer drops committables at or below the committed identifier).",
						   files)));
	return rows;
}

/* A stream that holds staged rows, for the warning of stranded rows. */
typedef struct StagedStream
{
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	int32 writer_id;
	int64 rows;
} StagedStream;

/* staged_stream_cmp orders StagedStreams by commit user, then writer id. */
static int
staged_stream_cmp(const ListCell *a, const ListCell *b)
{
	const StagedStream *x = lfirst(a);
	const StagedStream *y = lfirst(b);
	int c = strcmp(x->commit_user, y->commit_user);

	return c != 0 ? c : (x->writer_id > y->writer_id) - (x->writer_id < y->writer_id);
}

/*
 * warn_stranded puts into request a warning (01000) when the sink's writers
 * hold staged rows of committed transactions in streams other than the one
 * an empty prepare named (commit_user, and writer_id when >= 0), naming
 * each (commit user, writer id, rows): a job that prepared the wrong
 * stream would acknowledge its source and lose them.  One barrier that
 * only counts (BARRIER_STAGED), run only for an empty prepare, after its
 * transaction (it takes one of its own for its snapshot).
 */
static void
warn_stranded(SinkInfo *sink, const char *commit_user, int64 checkpoint_id, int32 writer_id,
			  CommitterRequest *request)
{
	uint64 *seqs = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	List *streams = NIL;
	ListCell *lc;
	int64 total = 0;
	int shown = 0;
	StringInfoData detail;
	ErrorData warning;
	char *stream_name;

	foreach (lc, barrier_run(sink, "", -1, BARRIER_STAGED, 0, seqs))
	{
		CommittableRecord *record = lfirst(lc);
		StagedStream *found = NULL;
		ListCell *s;

		if (record->kind != BARRIER_RECORD_STAGED ||
			(strcmp(record->stream.commit_user, commit_user) == 0 &&
			 (writer_id < 0 || record->stream.writer_id == writer_id)))
			continue;
		foreach (s, streams)
		{
			StagedStream *stream = lfirst(s);

			if (strcmp(stream->commit_user, record->stream.commit_user) == 0 &&
				stream->writer_id == record->stream.writer_id)
				found = stream;
		}
		if (found == NULL)
		{
			found = palloc0(sizeof(StagedStream));
			strlcpy(found->commit_user, record->stream.commit_user, sizeof(found->commit_user));
			found->writer_id = record->stream.writer_id;
			streams = lappend(streams, found);
		}
		found->rows += record->row_count;
		total += record->row_count;
	}
	if (streams == NIL)
		return;
	list_sort(streams, staged_stream_cmp);
	initStringInfo(&detail);
	appendStringInfoString(&detail, "Staged and not prepared: ");
	foreach (lc, streams)
	{
		StagedStream *stream = lfirst(lc);

		/* a bounded detail: the request carries at most PAIMON_SINK_ERROR_SIZE bytes */
		if (shown++ == 20)
		{
			appendStringInfo(&detail, "; and %d more streams", list_length(streams) - 20);
			break;
		}
		appendStringInfo(&detail, "%scommit user \"%s\" writer id %d: %lld rows",
						 shown > 1 ? "; " : "", stream->commit_user, stream->writer_id,
						 (long long) stream->rows);
	}
	appendStringInfoString(&detail, ". If they are this job's, acknowledging its source now would "
									"lose them.");
	stream_name = writer_id < 0
					  ? psprintf("commit user \"%s\"", commit_user)
					  : psprintf("commit user \"%s\" writer id %d", commit_user, writer_id);
	memset(&warning, 0, sizeof(warning));
	warning.elevel = WARNING;
	warning.sqlerrcode = ERRCODE_WARNING;
	warning.message =
		psprintf("checkpoint %lld of %s of sink \"%s\" prepared no rows, but %lld "
				 "rows of other streams of the sink are staged",
				 (long long) checkpoint_id, stream_name, sink->name, (long long) total);
	warning.detail = detail.data;
	warning.hint = "Rows go to the stream of the commit user and writer id of the session that "
				   "wrote them (settings paimon_sink.commit_user and paimon_sink.writer_id): "
				   "prepare that stream, or write with the settings this prepare names. Rows of "
				   "another subtask that prepares its own writer id for this checkpoint need "
				   "nothing.";
	request_set_error(request, &warning);
}

/* What stranded_step checks, after an empty prepare. */
typedef struct StrandedCheck
{
	SinkInfo *sink;
	const char *commit_user;
	int64 checkpoint_id;
	int32 writer_id;
	CommitterRequest *request;
} StrandedCheck;

/* stranded_step runs warn_stranded for work_try. */
static void
stranded_step(void *arg)
{
	StrandedCheck *check = arg;

	warn_stranded(check->sink, check->commit_user, check->checkpoint_id, check->writer_id,
				  check->request);
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
 * next_own_checkpoint returns the id of the next checkpoint of the sink's
 * own commit user (checkpoint()): one above what its marks hold, or
 * end_input()'s id once its input ended, which the checks after refuse.
 * Raises ERRCODE_PROGRAM_LIMIT_EXCEEDED, nothing changed, when the next id
 * would be end_input()'s: a checkpoint() must never end the input of the
 * commit user every SQL session writes with.
 */
static int64
next_own_checkpoint(const SinkInfo *sink, const char *commit_user, const CommitUserMarks *marks)
{
	int64 last = Max(marks->last_prepared, marks->last_committed);

	if (last == PAIMON_SINK_END_INPUT_CHECKPOINT)
		return last;
	if (last == PAIMON_SINK_END_INPUT_CHECKPOINT - 1)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("the own commit user \"%s\" of sink \"%s\" has no checkpoint id left",
						commit_user, sink->name),
				 errdetail("Its last checkpoint id is %lld; the next is end_input()'s, which "
						   "would end the input of the commit user the sink's SQL sessions write "
						   "with. Nothing was changed.",
						   (long long) last),
				 errhint("Commit its staged rows with paimon_sink.end_input(%s, %s); write "
						 "with another commit user (paimon_sink.commit_user) from then on.",
						 quote_literal_cstr(sink->name), quote_literal_cstr(commit_user))));
	return last + 1;
}

/*
 * prepare_recorded prepares checkpoint_id of commit_user, or with
 * commit_user NULL the next checkpoint of the sink's own commit user,
 * whose name is copied into own_user and whose id is read under the lock
 * of its marks (checkpoint_id is then not read): barrier and record the
 * committables in one transaction.  Returns the number of committables
 * recorded, *prepared the checkpoint id.  With durable, the transaction's
 * commit is flushed and the barrier confirmed; without, the commit is not
 * flushed, seqs and *commit_end receive what prepare_confirm needs, and
 * the caller must call it once that commit is durable.  pending, unless
 * NULL, receives the commit user's prepared checkpoints up to checkpoint_id
 * (int64 *, in CommitterContext) and after its marks, as commit_pending
 * takes them, read in the same transaction.  warn, unless NULL, is the
 * request that gets the warning of stranded rows when the checkpoint is
 * empty (warn_stranded), and whose expected rows, when it gives them, the
 * rows sealed for writer_id must be (check_sealed_rows).  properties, unless NULL, is the checkpoint's
 * properties from writer_id (jsonb text): checked against the other writer
 * ids' before the barrier, recorded after it, in the same transaction;
 * properties_epoch is the fence epoch of the session that gave them,
 * refused when a restore raised the commit user's since.
 */
static int
prepare_recorded(int32 sink_id, const char *commit_user, char *own_user, int64 checkpoint_id,
				 int32 writer_id, const char *properties, uint64 properties_epoch,
				 bool record_empty, bool durable, uint64 *seqs, int64 *prepared,
				 XLogRecPtr *commit_end, List **pending, CommitUserMarks *after,
				 CommitterRequest *warn)
{
	int recorded;
	SinkInfo *sink;
	CommitUserMarks marks;
	bool empty;
	bool next_own = commit_user == NULL;

	Assert(!next_own || own_user != NULL);
	work_begin();
	sink = work_require_sink(sink_id);
	/* every transaction writing under the commit user is over, and new ones wait */
	if (!next_own && checkpoint_id == PAIMON_SINK_END_INPUT_CHECKPOINT)
		stream_lock_for_end_input(sink_id, sink->name, commit_user);
	if (next_own)
	{
		strlcpy(own_user, sink->default_commit_user, PAIMON_SINK_COMMIT_USER_MAXLEN + 1);
		commit_user = own_user;
	}
	marks = metadata_commit_user_marks(sink_id, commit_user, true);
	if (next_own)
		checkpoint_id = next_own_checkpoint(sink, commit_user, &marks);
	/* the request was checked (request_check): only an id a checkpoint can have drops rows */
	if (checkpoint_id <= marks.last_committed &&
		marks.last_committed != PAIMON_SINK_END_INPUT_CHECKPOINT)
		check_checkpoint_id(commit_user, checkpoint_id, marks.last_prepared, marks.last_committed,
							drop_replayed(sink, commit_user, checkpoint_id, writer_id,
										  marks.fence_epoch, marks.last_committed));
	check_checkpoint_id(commit_user, checkpoint_id, marks.last_prepared, marks.last_committed, 0);
	/* refused before the barrier: nothing is sealed for a prepare that fails */
	if (properties != NULL)
	{
		check_properties_epoch(sink, commit_user, properties_epoch, marks.fence_epoch);
		metadata_check_properties(sink, commit_user, checkpoint_id, writer_id, properties);
	}
	recorded = barrier_and_record(sink, commit_user, checkpoint_id, writer_id, marks.fence_epoch,
								  record_empty, seqs);
	if (warn != NULL && warn->expected_rows_given)
		check_sealed_rows(sink, commit_user, checkpoint_id, writer_id, warn->expected_rows);
	if (properties != NULL)
		metadata_record_properties(sink_id, commit_user, checkpoint_id, writer_id, properties);
	empty = warn != NULL && recorded == 0 &&
			metadata_count_committables(sink_id, commit_user, checkpoint_id, writer_id, NULL) == 0;
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
	if (empty)
	{
		StrandedCheck check = {sink, commit_user, checkpoint_id, writer_id, warn};

		/* only a diagnosis: its failure (a writer that stopped) is logged, the prepare stands */
		(void) work_try(stranded_step, &check, NULL);
	}
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
 * committables recorded.  properties, unless NULL, are writer_id's
 * properties of the checkpoint (jsonb text of an object), recorded with
 * them.  warn, unless NULL, gets the warning of stranded rows when the
 * checkpoint is empty.  A committed checkpoint_id is refused
 * (ERRCODE_INVALID_PARAMETER_VALUE) after the rows staged for it are
 * dropped, and so is a property another writer id gave another value; a
 * prepare after end_input() raises ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE.
 */
int
prepare_checkpoint(int32 sink_id, const char *commit_user, int64 checkpoint_id, int32 writer_id,
				   const char *properties, uint64 properties_epoch, bool record_empty,
				   CommitterRequest *warn)
{
	uint64 *seqs = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	int64 prepared;
	XLogRecPtr commit_end;

	return prepare_recorded(sink_id, commit_user, NULL, checkpoint_id, writer_id, properties,
							properties_epoch, record_empty, true, seqs, &prepared, &commit_end,
							NULL, NULL, warn);
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
		prepare_recorded(sink_id, NULL, commit_user, -1, -1, NULL, 0, false, false, seqs,
						 &checkpoint_id, &commit_end, &pending, &marks, NULL);
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
 * checkpoint and commit at once.  A retry after a lost reply (the input
 * already ended) answers as commit() does: nothing is prepared again.
 */
void
prepare_end_input(int32 sink_id, const char *commit_user, CommitterRequest *request)
{
	CommitUserMarks marks;

	work_begin();
	(void) work_require_sink(sink_id);
	marks = metadata_commit_user_marks(sink_id, commit_user, false);
	work_end();
	if (marks.last_committed != PAIMON_SINK_END_INPUT_CHECKPOINT)
		request->committable_count = prepare_checkpoint(
			sink_id, commit_user, PAIMON_SINK_END_INPUT_CHECKPOINT, -1, NULL, 0, true, request);
	commit_up_to(sink_id, commit_user, PAIMON_SINK_END_INPUT_CHECKPOINT, request);
}
