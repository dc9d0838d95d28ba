/*-------------------------------------------------------------------------
 *
 * barrier.c
 *	  The checkpoint barrier between the committer and its writers: the
 *	  committer's end (the writer's is writer/writer_barrier.c, the
 *	  records ipc/barrier_protocol.h).
 *
 * The committer runs one barrier at a time, of one sink or of several (the
 * due periodic checkpoints committed together: one round trip for all of
 * them).  For each writer in turn it waits until the writer serves and has
 * no barrier under way, fills the writer's barrier area (the sinks and
 * their streams, the kind, the snapshot that splits the rows between this
 * checkpoint and the next) and creates the reply queue in it; the writer
 * seals its files and sends a record per file, then an end record.  The
 * committer reads every writer's queue as the records come.  No wait is
 * unbounded (liveness.c): a fenced writer fails the barrier at once, one
 * that shows no progress for paimon_sink.handoff_timeout is fenced and
 * fails it, and a writer whose committer reads nothing for that long gives
 * its answer up.  Once the transaction that recorded the files is durable,
 * the committer confirms the barrier's seq and the writers forget the
 * files.  The reply queue is attached with the writer's
 * BackgroundWorkerHandle when this committer started the writer, so that
 * a writer that stops reads as a detached queue.  The writer names itself
 * the queue's sender before it attaches, so that the handle covers every
 * wait of the committer's receive.
 *
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "committer/barrier.h"
#include "committer/work.h"
#include "core/fault.h"
#include "core/guc.h"
#include "core/wait_events.h"
#include "ipc/liveness.h"

/* The reply queues of the barrier under way, detached at exit. */
static shm_mq_handle **barrier_queues;

/* What becomes of a barrier that a writer does not answer. */
#define BARRIER_OUTCOME "Nothing of this checkpoint was prepared; the rows stay staged."

/*
 * idle_writer waits until a writer serves and has no barrier under way.
 * A writer that died meanwhile is started again here, not only between
 * requests: this request, and every write waiting for that writer, would
 * wait for it.
 */
static WriterEntry *
idle_writer(int index)
{
	WriterEntry *writer = shared_writer(MyDatabaseEntry, index);
	TimestampTz start = GetCurrentTimestamp();

	for (;;)
	{
		bool idle;

		SpinLockAcquire(&writer->mutex);
		idle = writer->ready && writer->barrier_state == BARRIER_IDLE;
		SpinLockRelease(&writer->mutex);
		if (idle)
			return writer;
		liveness_refuse_fenced(index, BARRIER_OUTCOME);
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), PaimonSinkHandoffTimeoutMs))
			ereport(
				ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("sink writer %d did not take the barrier", index),
				 errdetail("It was not running, or still answering an earlier barrier, for %d ms.",
						   PaimonSinkHandoffTimeoutMs),
				 errhint("Retry; nothing of this checkpoint was prepared.")));
		work_start_writers();
		/* a wait bounded by handoff_timeout: the sessions waiting on us wait too */
		liveness_committer_beat();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
						 wait_event_for(WAIT_BARRIER_WRITER_IDLE));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * writer_gone tells whether the writer answering on the queue has stopped
 * though it never detached (it died before attaching).  A writer this
 * committer started is asked through its handle, which the postmaster
 * keeps; one an earlier committer started is compared with the
 * incarnation the barrier was given to.
 */
static bool
writer_gone(int index, uint64 incarnation)
{
	BackgroundWorkerHandle *handle = work_writer_handle(index);
	WriterEntry *writer = shared_writer(MyDatabaseEntry, index);
	pid_t pid;
	bool gone;

	if (handle != NULL && GetBackgroundWorkerPid(handle, &pid) == BGWH_STOPPED)
		return true;
	SpinLockAcquire(&writer->mutex);
	gone = writer->incarnation != incarnation || writer->pid == 0;
	SpinLockRelease(&writer->mutex);
	return gone;
}

/*
 * receive_one reads what writer index's reply queue holds now, appending a
 * palloc'd copy of each record (its excluded offsets following it) to
 * *records; returns true once it read the end record.  *gone says that
 * the writer was found stopped at the previous look: a writer that stopped
 * may have sent its last records first, so the queue is read once more
 * before that is an error.
 */
static bool
receive_one(int index, shm_mq_handle *queue, bool gone, List **records)
{
	for (;;)
	{
		Size length;
		void *data;
		shm_mq_result result = shm_mq_receive(queue, &length, &data, true);

		if (result == SHM_MQ_SUCCESS)
		{
			CommittableRecord *record = data;

			if (record->kind == BARRIER_RECORD_END)
				return true;
			*records = lappend(*records, memcpy(palloc(length), data, length));
			continue;
		}
		if (result == SHM_MQ_DETACHED || gone)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("sink writer %d stopped during the barrier", index),
					 errdetail("Nothing of this checkpoint was prepared; the rows stay staged."),
					 errhint("Retry the prepare.")));
		return false;
	}
}

/*
 * receive_replies reads every writer's reply queue to its end record, all
 * of them as the records come (a writer whose queue is full never waits
 * for another's answer), appending the records to *records.  A writer that
 * shows no progress for paimon_sink.handoff_timeout since the barrier
 * began is fenced (liveness.c) and the barrier fails with
 * ERRCODE_QUERY_CANCELED; one that stopped, with ERRCODE_CONNECTION_FAILURE.
 */
static void
receive_replies(shm_mq_handle **queues, const uint64 *incarnations, List **records)
{
	TimestampTz start = GetCurrentTimestamp();
	bool *gone = palloc0(sizeof(bool) * PaimonSinkWritersPerDatabase);
	int remaining = 0;
	bool first = true;

	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
		if (queues[w] != NULL)
			remaining++;

	while (remaining > 0)
	{
		long nap = liveness_idle_nap_ms();

		/* waiting for writers, themselves bounded by handoff_timeout, is progress */
		liveness_committer_beat();

		for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
		{
			WriterEntry *writer = shared_writer(MyDatabaseEntry, w);
			long left;

			if (queues[w] == NULL)
				continue;
			if (receive_one(w, queues[w], gone[w], records))
			{
				shm_mq_detach(queues[w]);
				queues[w] = NULL;
				remaining--;
				if (first)
					fault_point("barrier_after_first_writer");
				first = false;
				continue;
			}
			gone[w] = writer_gone(w, incarnations[w]);
			if (gone[w])
			{
				nap = 0;
				continue;
			}
			left = liveness_wait_left(writer, incarnations[w], start);
			if (left < 0)
			{
				/* it showed no progress: the committer fences it before the error goes up */
				liveness_fence(w, "the barrier");
				liveness_raise(writer, w, "the barrier", BARRIER_OUTCOME);
			}
			nap = Min(nap, left);
			/* a writer of an earlier committer notifies nobody when it dies */
			if (work_writer_handle(w) == NULL)
				nap = Min(nap, 100);
		}
		if (remaining == 0 || nap == 0)
			continue;

		/*
		 * The writers' sends, their exits (a detach) and the stop of a
		 * writer this committer started (the postmaster notifies it) all
		 * set the latch.
		 */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, nap,
						 wait_event_for(WAIT_BARRIER));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(gone);
}

/*
 * holds_nothing_of tells whether writer index may be left out of a barrier
 * of the sinks: it serves (its files adopted) and holds no file of any of
 * them, open or sealed (WriterEntry.sinks_held).  Asked after the
 * barrier's snapshot was taken: a transaction visible in it committed
 * after its batches were acknowledged, so after the writer set the sink's
 * bit; the writer it skips holds nothing the barrier would seal, report,
 * discard or count.
 */
static bool
holds_nothing_of(int index, const BarrierSink *sinks, int count)
{
	WriterEntry *writer = shared_writer(MyDatabaseEntry, index);
	uint64 bits = 0;
	bool skip;

	for (int i = 0; i < count; i++)
		bits |= SINK_HELD_BIT(sinks[i].sink_id);
	SpinLockAcquire(&writer->mutex);
	skip = writer->ready && writer->barrier_state == BARRIER_IDLE &&
		   (pg_atomic_read_u64(&writer->sinks_held) & bits) == 0;
	SpinLockRelease(&writer->mutex);
	return skip;
}

/*
 * request_barrier asks writer index for the barrier, once it serves and no
 * other barrier is under way (idle_writer): the barrier area filled, the
 * reply queue created with the committer as its receiver and attached with
 * the writer's handle, seqs[index] and incarnations[index] set.
 */
static void
request_barrier(int index, const BarrierSink *sinks, int count, int32 writer_id, int kind,
				const SnapshotData *snapshot, uint64 *seqs, uint64 *incarnations)
{
	WriterEntry *writer = idle_writer(index);
	shm_mq *queue;
	PGPROC *proc;

	/* the writer reads its area only once it sees BARRIER_REQUESTED, set below */
	memcpy(shared_address(writer->barrier_xip_offset), snapshot->xip,
		   sizeof(TransactionId) * snapshot->xcnt);
	memcpy(writer->barrier_sinks, sinks, sizeof(BarrierSink) * count);
	queue = shm_mq_create(shared_address(writer->barrier_queue_offset), shared_queue_size());
	shm_mq_set_receiver(queue, MyProc);
	SpinLockAcquire(&writer->mutex);
	proc = writer->proc;
	writer->barrier_sink_count = count;
	writer->barrier_writer_id = writer_id;
	writer->barrier_kind = kind;
	writer->barrier_xmin = snapshot->xmin;
	writer->barrier_xmax = snapshot->xmax;
	writer->barrier_xcnt = snapshot->xcnt;
	seqs[index] = ++writer->barrier_seq;
	incarnations[index] = writer->incarnation;
	writer->barrier_state = BARRIER_REQUESTED;
	SpinLockRelease(&writer->mutex);
	barrier_queues[index] = shm_mq_attach(queue, NULL, work_writer_handle(index));
	SetLatch(&proc->procLatch);
}

/*
 * barrier_run_sinks runs one barrier for count sinks (at most
 * PAIMON_SINK_BARRIER_SINKS): every writer seals their streams' files
 * against one snapshot and reports their committables (or discards them,
 * or lists the files it holds, as kind says), one round trip for all of
 * them; a writer that holds nothing of any of them is not asked
 * (holds_nothing_of).  Returns a list of palloc'd records (with their
 * excluded offsets following each; a record's stream names its sink);
 * seqs (zeroed by the caller) gets each asked writer's barrier seq, for
 * barrier_confirm.  Raises what the wait for the writers raises
 * (receive_replies).
 */
List *
barrier_run_sinks(const BarrierSink *sinks, int count, int32 writer_id, int kind, uint64 *seqs)
{
	MemoryContext caller = CurrentMemoryContext;
	bool own_transaction = !IsTransactionState();
	Snapshot latest;
	SnapshotData snapshot;
	shm_mq_handle **queues;
	uint64 *incarnations = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	List *records = NIL;

	Assert(count > 0 && count <= PAIMON_SINK_BARRIER_SINKS);
	if (barrier_queues == NULL)
		barrier_queues = MemoryContextAllocZero(TopMemoryContext, sizeof(shm_mq_handle *) *
																	  PaimonSinkWritersPerDatabase);
	queues = barrier_queues;

	/*
	 * A snapshot needs a transaction (under REPEATABLE READ it lives in the
	 * transaction's memory): a barrier of orphan removal or recover() runs
	 * between transactions, so it takes one of its own.  Only its values
	 * are kept.
	 */
	if (own_transaction)
		StartTransactionCommand();
	latest = GetLatestSnapshot();
	snapshot = *latest;
	snapshot.xip = MemoryContextAlloc(caller, sizeof(TransactionId) * Max(1, latest->xcnt));
	memcpy(snapshot.xip, latest->xip, sizeof(TransactionId) * latest->xcnt);
	if (own_transaction)
		CommitTransactionCommand();
	MemoryContextSwitchTo(caller);

	/* a fenced writer fails the barrier before any writer is asked */
	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
		liveness_refuse_fenced(w, BARRIER_OUTCOME);

	PG_TRY();
	{
		/* no round trip to a writer that holds nothing of the sinks (seqs[w] stays 0) */
		for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
			if (!holds_nothing_of(w, sinks, count))
				request_barrier(w, sinks, count, writer_id, kind, &snapshot, seqs, incarnations);
		receive_replies(queues, incarnations, &records);
	}
	PG_CATCH();
	{
		barrier_detach_all();
		PG_RE_THROW();
	}
	PG_END_TRY();
	pfree(incarnations);
	return records;
}

/*
 * barrier_run runs a barrier of one sink (barrier_run_sinks): its streams
 * of commit_user (every commit user's when empty) and writer_id (every
 * writer id's when negative), the batches written before fence_epoch left
 * out of a seal.  Returns the records; seqs as barrier_run_sinks.
 */
List *
barrier_run(SinkInfo *sink, const char *commit_user, int32 writer_id, int kind, uint64 fence_epoch,
			uint64 *seqs)
{
	BarrierSink one;

	memset(&one, 0, sizeof(one));
	one.sink_id = sink->sink_id;
	one.sink_uuid = sink->sink_uuid;
	one.fence_epoch = fence_epoch;
	strlcpy(one.commit_user, commit_user, sizeof(one.commit_user));
	return barrier_run_sinks(&one, 1, writer_id, kind, seqs);
}

/*
 * barrier_confirm lets the writers forget the sealed files that this
 * barrier reported and a durable transaction recorded.  Exactly this
 * barrier: the files of an earlier one whose transaction failed are still
 * to be recorded.  Every barrier reaches every writer that holds files of
 * its sink and is confirmed (or not) before the next one starts, so one seq
 * per writer says it; a writer the barrier skipped (seq 0) keeps the
 * confirmation it had, which it may not have acted on yet.
 */
void
barrier_confirm(const uint64 *seqs)
{
	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
	{
		WriterEntry *writer = shared_writer(MyDatabaseEntry, w);

		if (seqs[w] == 0)
			continue;

		SpinLockAcquire(&writer->mutex);
		writer->confirmed_barrier_seq = seqs[w];
		SpinLockRelease(&writer->mutex);
	}
}

/*
 * barrier_detach_all detaches the reply queues of a barrier that failed or
 * that the exiting committer leaves: a writer answering must not wait for
 * us.
 */
void
barrier_detach_all(void)
{
	for (int w = 0; barrier_queues != NULL && w < PaimonSinkWritersPerDatabase; w++)
	{
		if (barrier_queues[w] != NULL)
			shm_mq_detach(barrier_queues[w]);
		barrier_queues[w] = NULL;
	}
}
