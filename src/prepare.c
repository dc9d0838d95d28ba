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

#include "barrier.h"
#include "commit.h"
#include "prepare.h"
#include "utils/array.h"
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
		int64 *excluded = (int64 *) (record + 1);
		Datum *offsets = palloc(sizeof(Datum) * Max(1, record->excluded_count));
		Oid types[10] = {TEXTOID, INT4OID, TEXTOID, INT8OID,	  INT4OID,
						 INT4OID, INT8OID, INT8OID, INT8ARRAYOID, INT8OID};
		Datum values[10];

		for (int i = 0; i < record->excluded_count; i++)
			offsets[i] = Int64GetDatum(excluded[i]);
		values[0] = work_text(record->file_name);
		values[1] = Int32GetDatum(record->stream.sink_id);
		values[2] = work_text(record->stream.commit_user);
		values[3] = Int64GetDatum(checkpoint_id);
		values[4] = Int32GetDatum(record->stream.writer_id);
		values[5] = Int32GetDatum(record->stream.bucket);
		values[6] = Int64GetDatum(record->row_count);
		values[7] = Int64GetDatum(record->byte_count);
		values[8] = PointerGetDatum(construct_array(offsets, record->excluded_count, INT8OID, 8,
													FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		values[9] = Int64GetDatum(record->max_sequence);
		work_execute(
			"INSERT INTO paimon_sink.committable (file_name, sink_id, commit_user, "
			"checkpoint_id, writer_id, bucket, row_count, byte_count, excluded_offsets, "
			"max_sequence) "
			"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (file_name) DO NOTHING",
			10, types, values, SPI_OK_INSERT);
		recorded += SPI_processed;
	}
	if (recorded > 0 || record_empty)
	{
		Oid types[3] = {INT4OID, TEXTOID, INT8OID};
		Datum values[3] = {Int32GetDatum(sink->sink_id), work_text(commit_user),
						   Int64GetDatum(checkpoint_id)};

		work_execute(
			"UPDATE paimon_sink.commit_user_state u SET last_prepared_checkpoint = "
			"greatest(u.last_prepared_checkpoint, $3) WHERE u.sink_id OPERATOR(pg_catalog.=) $1 "
			"AND u.commit_user OPERATOR(pg_catalog.=) $2",
			3, types, values, SPI_OK_UPDATE);
	}
	return recorded;
}

/*
 * prepare_checkpoint prepares checkpoint_id: barrier and record the
 * committables in one transaction.  Returns the number of committables
 * recorded.
 */
int
prepare_checkpoint(int32 sink_id, const char *commit_user, int64 checkpoint_id, int32 writer_id,
				   bool record_empty)
{
	int64 last_prepared;
	int64 last_committed;
	uint64 *seqs = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	int recorded;
	SinkInfo *sink;
	uint64 fence_epoch;

	work_begin();
	sink = work_require_sink(sink_id);
	work_marks(sink_id, commit_user, true, &last_prepared, &last_committed, &fence_epoch);
	check_checkpoint_id(commit_user, checkpoint_id, last_prepared, last_committed);
	recorded = barrier_and_record(sink, commit_user, checkpoint_id, writer_id, fence_epoch,
								  record_empty, seqs);
	work_end();
	barrier_confirm(seqs);
	return recorded;
}

/*
 * prepare_and_commit serves checkpoint(): barrier, prepare and commit the sink's own commit user.  The
 * committables are recorded (committed) before the commit transaction: a
 * writer that restarts while that transaction is in doubt must find its
 * sealed files recorded, or it would adopt them again.
 */
void
prepare_and_commit(int32 sink_id, CommitterRequest *request)
{
	SinkInfo *sink;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	int64 last_prepared;
	int64 last_committed;
	int64 checkpoint_id;

	work_begin();
	sink = work_require_sink(sink_id);
	strlcpy(commit_user, sink->default_commit_user, sizeof(commit_user));
	work_marks(sink_id, commit_user, false, &last_prepared, &last_committed, NULL);
	work_end();

	checkpoint_id = Max(last_prepared, last_committed) + 1;
	strlcpy(request->commit_user, commit_user, sizeof(request->commit_user));
	request->committable_count = prepare_checkpoint(sink_id, commit_user, checkpoint_id, -1, false);
	commit_up_to(sink_id, commit_user, checkpoint_id, request);
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
