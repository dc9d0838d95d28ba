/*-------------------------------------------------------------------------
 *
 * handoff_queue.c
 *	  The session's end of a hand-off queue: a slot taken, the rows sent,
 *	  the queue closed, the acknowledgement awaited; and the writer an
 *	  append sink without a bucket key hands its rows to.
 *
 * Each wait here is bounded (liveness.c): a writer that shows no progress
 * for paimon_sink.handoff_timeout since the wait began, or that the
 * committer fenced, ends it with ERRCODE_QUERY_CANCELED; one that left ends
 * it with ERRCODE_CONNECTION_FAILURE; a writer that serves but keeps every
 * queue busy, or does not serve yet, with
 * ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE after the timeout.  In each
 * case the transaction is rolled back, and whatever part of its rows the
 * writer wrote belongs to an aborted xid.
 *
 * A bucket key routes every row of a bucket to one writer, which numbers
 * the bucket's rows; without one (an append sink, one bucket per
 * session), the bucket only names the stream, and a transaction whose
 * bucket's writer does not answer takes another bucket number, whose
 * writer does (handoff_queue_route).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "core/guc.h"
#include "core/wait_events.h"
#include "ipc/handoff_failure.h"
#include "ipc/handoff_queue.h"
#include "ipc/liveness.h"

/*
 * Bucket numbers beyond a sink's buckets that an append sink without a
 * bucket key may take, per writer, when none of its buckets' writers
 * answers: with one bucket (the default) there is no other.
 */
#define SPARE_BUCKETS_PER_WRITER 16

/* What becomes of a transaction whose hand-off failed. */
#define HANDOFF_OUTCOME "This transaction is rolled back, so none of its rows are staged."

/* The wait a hand-off error names. */
#define HANDOFF_WAIT "the hand-off of this transaction"

/*
 * take_slot takes a hand-off slot the writer has published (its queue
 * created, the writer attached as its receiver), or returns NULL when the
 * writer is not ready (or fenced) or every slot is busy.
 */
static HandoffSlot *
take_slot(WriterEntry *writer, ActiveHandoff *handoff)
{
	HandoffSlot *slot = NULL;

	SpinLockAcquire(&writer->mutex);
	for (int s = 0; writer->ready && !writer->fenced && s < writer->slot_count; s++)
	{
		HandoffSlot *candidate = &writer->slots[s];

		if (candidate->state == HANDOFF_FREE && candidate->published &&
			candidate->incarnation == writer->incarnation)
		{
			slot = candidate;
			slot->state = HANDOFF_ACTIVE;
			slot->sender_done = false;
			slot->generation++;
			slot->requester = MyProc;
			handoff->generation = slot->generation;
			handoff->incarnation = writer->incarnation;
			break;
		}
	}
	SpinLockRelease(&writer->mutex);
	return slot;
}

/*
 * handoff_queue_open takes a hand-off slot of writer writer_index of db and
 * attaches to its queue as the sender; the handle lives in
 * TopTransactionContext.  It waits on the writer's condition variable,
 * which the writer broadcasts when it publishes slots (after each use, and
 * when it starts): a fenced writer, or a serving one that shows no
 * progress for paimon_sink.handoff_timeout, raises ERRCODE_QUERY_CANCELED;
 * every slot busy or the writer not serving for that long,
 * ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE.
 */
ActiveHandoff *
handoff_queue_open(DatabaseEntry *db, int writer_index)
{
	WriterEntry *writer = shared_writer(db, writer_index);
	TimestampTz start = GetCurrentTimestamp();
	ActiveHandoff *handoff = MemoryContextAllocZero(TopTransactionContext, sizeof(ActiveHandoff));

	handoff->writer_index = writer_index;
	for (;;)
	{
		HandoffSlot *slot = take_slot(writer, handoff);
		long nap;
		long timeout;

		if (slot != NULL)
		{
			shm_mq *queue = shared_address(slot->queue_offset);

			ConditionVariableCancelSleep();
			/* this wakes the writer, attached as the receiver */
			shm_mq_set_sender(queue, MyProc);
			handoff->queue = shm_mq_attach(queue, NULL, NULL);
			handoff->writer = writer;
			handoff->slot = slot;
			return handoff;
		}

		nap = liveness_check_writer(writer, writer_index, 0, start, HANDOFF_WAIT, HANDOFF_OUTCOME);
		timeout = liveness_remaining_ms(start);
		if (timeout == 0)
			ereport(
				ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no sink writer accepted the rows of this transaction"),
				 errdetail("Every hand-off queue of writer %d was busy or the writer was not "
						   "running for %d ms.",
						   writer_index, PaimonSinkHandoffTimeoutMs),
				 errhint("Raise paimon_sink.queues_per_writer or paimon_sink.handoff_timeout.")));
		(void) ConditionVariableTimedSleep(&writer->slot_freed, Min(timeout, nap),
										   wait_event_for(WAIT_HANDOFF_QUEUE));
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * handoff_queue_close detaches our end of a hand-off queue; the slot is
 * free once the writer detached too, and the writer, woken, publishes it
 * again.
 */
void
handoff_queue_close(ActiveHandoff *handoff)
{
	HandoffSlot *slot = handoff->slot;
	PGPROC *writer_proc = NULL;

	shm_mq_detach(handoff->queue);
	handoff->queue = NULL;
	SpinLockAcquire(&handoff->writer->mutex);
	slot->sender_done = true;
	/* a failed use stays taken until this session saw its failure (handoff_failure.c) */
	if (handoff_slot_release_locked(slot))
		writer_proc = handoff->writer->proc;
	SpinLockRelease(&handoff->writer->mutex);
	if (writer_proc != NULL)
		SetLatch(&writer_proc->procLatch);
}

/*
 * writer_reads is the check of a send waiting for room (see
 * liveness_sendv): the writer must show progress.
 */
static bool
writer_reads(void *arg, TimestampTz wait_start)
{
	ActiveHandoff *handoff = arg;

	(void) liveness_check_writer(handoff->writer, handoff->writer_index, handoff->incarnation,
								 wait_start, HANDOFF_WAIT, HANDOFF_OUTCOME);
	return true;
}

/*
 * handoff_queue_send sends one message on a hand-off queue, waiting for
 * room while the writer shows progress; raises ERRCODE_CONNECTION_FAILURE
 * when the writer detached from it, ERRCODE_QUERY_CANCELED when it does not
 * answer.
 */
void
handoff_queue_send(ActiveHandoff *handoff, HandoffMessage *message, const char *rows, int length)
{
	shm_mq_iovec iov[2];
	shm_mq_result result;

	/* a streaming transaction learns of a failure at its next chunk, not at its commit */
	handoff_failure_raise(handoff->writer, handoff->slot, handoff->generation);
	iov[0].data = (const char *) message;
	iov[0].len = sizeof(*message);
	iov[1].data = rows;
	iov[1].len = length;
	result = liveness_sendv(handoff->queue, iov, length > 0 ? 2 : 1, writer_reads, handoff);
	if (result != SHM_MQ_SUCCESS)
		ereport(ERROR, (errcode(ERRCODE_CONNECTION_FAILURE),
						errmsg("lost the sink writer while handing off rows"),
						errdetail("The writer detached from its queue; this transaction is rolled "
								  "back, so none of its rows are staged."),
						errhint("Retry the transaction.")));
}

/*
 * handoff_queue_wait_ack waits until the writer wrote and logged this
 * hand-off.  The writer sets our latch when it acknowledges, its exit
 * callback for every hand-off it took and did not acknowledge, the
 * committer when it fences the writer.  Raises ERRCODE_CONNECTION_FAILURE
 * when the writer stopped first, ERRCODE_QUERY_CANCELED when it does not
 * answer (liveness_check_writer).
 */
void
handoff_queue_wait_ack(ActiveHandoff *handoff)
{
	TimestampTz start = GetCurrentTimestamp();

	for (;;)
	{
		bool done;
		bool lost;
		long nap;

		handoff_failure_raise(handoff->writer, handoff->slot, handoff->generation);
		SpinLockAcquire(&handoff->writer->mutex);
		done = handoff->slot->done_generation >= handoff->generation;
		lost = handoff->writer->incarnation != handoff->incarnation || handoff->writer->pid == 0;
		SpinLockRelease(&handoff->writer->mutex);
		if (done)
			return;
		/* first: a fenced writer's exit must not read as an ordinary stop */
		nap = liveness_check_writer(handoff->writer, handoff->writer_index, handoff->incarnation,
									start, HANDOFF_WAIT, HANDOFF_OUTCOME);
		if (lost)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("the sink writer stopped before staging the rows of this transaction"),
					 errdetail("This transaction is rolled back, so none of its rows are staged."),
					 errhint("Retry the transaction.")));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, nap,
						 wait_event_for(WAIT_HANDOFF_ACK));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * handoff_queue_writer_for routes a (sink, bucket) to a writer index of the
 * database: the session hands the stream to that writer, and writers use
 * the same function when they adopt files.
 */
int
handoff_queue_writer_for(int32 sink_id, int32 bucket)
{
	uint32 key[2] = {(uint32) sink_id, (uint32) bucket};

	return hash_bytes((const unsigned char *) key, sizeof(key)) % PaimonSinkWritersPerDatabase;
}

/*
 * handoff_queue_route picks the bucket number under which a transaction
 * hands a stream of an append sink without a bucket key (buckets: the
 * sink's) to a writer of db, and that writer's index in *writer_index:
 * the session's own bucket when its writer answers (liveness_writer_answers),
 * else the first of the sink's other buckets, then of the spare numbers
 * above them, whose writer answers and is another.  When none answers, the
 * session's own bucket: the hand-off then waits for its writer, bounded.
 */
int32
handoff_queue_route(DatabaseEntry *db, int32 sink_id, int32 bucket, int32 buckets,
					int *writer_index)
{
	int home = handoff_queue_writer_for(sink_id, bucket);
	int32 candidates = buckets + SPARE_BUCKETS_PER_WRITER * PaimonSinkWritersPerDatabase;

	*writer_index = home;
	if (liveness_writer_answers(shared_writer(db, home)))
		return bucket;
	for (int32 k = 1; k < candidates; k++)
	{
		/* the sink's buckets after the session's, then the spare numbers */
		int32 candidate = k < buckets ? (bucket + k) % buckets : k;
		int w = handoff_queue_writer_for(sink_id, candidate);

		if (w != home && liveness_writer_answers(shared_writer(db, w)))
		{
			*writer_index = w;
			return candidate;
		}
	}
	return bucket;
}
