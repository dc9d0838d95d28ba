/*-------------------------------------------------------------------------
 *
 * barrier.c
 *	  The checkpoint barrier, the committer's end.
 *
 * The committer runs one barrier at a time.  For each writer in turn it
 * waits until the writer serves and has no barrier under way, fills the
 * writer's barrier area (the stream, the kind, the snapshot that splits
 * the rows between this checkpoint and the next) and creates the reply
 * queue in it; the writer seals its files and sends a record per file,
 * then an end record.  Once the transaction that recorded the files is
 * durable, the committer confirms the barrier's seq and the writers forget
 * the files.  The reply queue is attached with the writer's
 * BackgroundWorkerHandle when this committer started the writer, so that
 * a writer that stops reads as a detached queue.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "barrier.h"
#include "fault.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "work.h"

/* The reply queues of the barrier under way, detached at exit. */
static shm_mq_handle **barrier_queues;

/*
 * idle_writer waits until a writer serves and has no barrier under way.
 * A writer that died meanwhile is started again here, not only between
 * requests: this request, and every write waiting for that writer, would
 * wait for it.
 */
static WriterEntry *
idle_writer(int index)
{
	WriterEntry *writer = shared_writer(CommitterDatabase, index);
	TimestampTz start = GetCurrentTimestamp();

	for (;;)
	{
		bool idle;

		SpinLockAcquire(&writer->mutex);
		idle = writer->ready && writer->barrier_state == BARRIER_IDLE;
		SpinLockRelease(&writer->mutex);
		if (idle)
			return writer;
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), PaimonSinkHandoffTimeoutMs))
			ereport(
				ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("sink writer %d did not take the barrier", index),
				 errdetail("It was not running, or still answering an earlier barrier, for %d ms.",
						   PaimonSinkHandoffTimeoutMs),
				 errhint("Retry; nothing of this checkpoint was prepared.")));
		work_start_writers();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
						 PG_WAIT_EXTENSION);
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
	WriterEntry *writer = shared_writer(CommitterDatabase, index);
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
 * receive_replies reads writer index's reply queue to its end record,
 * appending a palloc'd copy of each record (its excluded offsets
 * following it) to *records.
 */
static void
receive_replies(int index, shm_mq_handle *queue, uint64 incarnation, List **records)
{
	bool gone = false;

	for (;;)
	{
		Size length;
		void *data;
		shm_mq_result result = shm_mq_receive(queue, &length, &data, true);

		if (result == SHM_MQ_SUCCESS)
		{
			CommittableRecord *record = data;

			if (record->kind == BARRIER_RECORD_END)
				return;
			*records = lappend(*records, memcpy(palloc(length), data, length));
			continue;
		}
		/* a writer that stopped may have sent its last records first: read once more */
		if (result == SHM_MQ_DETACHED || gone)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("sink writer %d stopped during the barrier", index),
					 errdetail("Nothing of this checkpoint was prepared; the rows stay staged."),
					 errhint("Retry the prepare.")));
		gone = writer_gone(index, incarnation);
		if (gone)
			continue;

		/*
		 * The writer's send, its exit (a detach) and the stop of a writer
		 * this committer started (the postmaster notifies it) all set the
		 * latch; the timeout is for a writer of an earlier committer, which
		 * notifies nobody when it dies.
		 */
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 work_writer_handle(index) != NULL ? 1000 : 100, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * barrier_run runs a barrier: every writer seals the stream's files
 * against one snapshot and reports its committables (or discards them, or
 * lists the files it holds, as kind says).  Returns a list of palloc'd
 * records (with their excluded offsets following each); seqs gets each
 * writer's barrier seq, for barrier_confirm.
 */
List *
barrier_run(SinkInfo *sink, const char *commit_user, int32 writer_id, int kind, uint64 fence_epoch,
			uint64 *seqs)
{
	MemoryContext caller = CurrentMemoryContext;
	bool own_transaction = !IsTransactionState();
	Snapshot latest;
	SnapshotData snapshot;
	shm_mq_handle **queues;
	uint64 *incarnations = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	List *records = NIL;

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

	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
	{
		WriterEntry *writer = idle_writer(w);
		shm_mq *queue;
		PGPROC *proc;

		memcpy(shared_address(writer->barrier_xip_offset), snapshot.xip,
			   sizeof(TransactionId) * snapshot.xcnt);
		queue = shm_mq_create(shared_address(writer->barrier_queue_offset), shared_queue_size());
		shm_mq_set_receiver(queue, MyProc);
		SpinLockAcquire(&writer->mutex);
		proc = writer->proc;

		/*
		 * The writer's end attaches without naming itself the sender, so
		 * the committer does; shm_mq then looks at the handle only before
		 * the first receive, and receive_replies asks it itself.
		 */
		shm_mq_set_sender(queue, proc);
		writer->barrier_sink_id = sink->sink_id;
		writer->barrier_sink_uuid = sink->sink_uuid;
		strlcpy(writer->barrier_commit_user, commit_user, sizeof(writer->barrier_commit_user));
		writer->barrier_writer_id = writer_id;
		writer->barrier_kind = kind;
		writer->barrier_fence_epoch = fence_epoch;
		writer->barrier_xmin = snapshot.xmin;
		writer->barrier_xmax = snapshot.xmax;
		writer->barrier_xcnt = snapshot.xcnt;
		seqs[w] = ++writer->barrier_seq;
		incarnations[w] = writer->incarnation;
		writer->barrier_state = BARRIER_REQUESTED;
		SpinLockRelease(&writer->mutex);
		queues[w] = shm_mq_attach(queue, NULL, work_writer_handle(w));
		SetLatch(&proc->procLatch);
	}

	PG_TRY();
	{
		for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
		{
			receive_replies(w, queues[w], incarnations[w], &records);
			shm_mq_detach(queues[w]);
			queues[w] = NULL;
			if (w == 0)
				fault_point("barrier_after_first_writer");
		}
	}
	PG_CATCH();
	{
		barrier_detach_all();
		PG_RE_THROW();
	}
	PG_END_TRY();
	return records;
}

/*
 * barrier_confirm lets the writers forget the sealed files that this
 * barrier reported and a durable transaction recorded.  Exactly this
 * barrier: the files of an earlier one whose transaction failed are still
 * to be recorded.  Every barrier reaches every writer and is confirmed (or
 * not) before the next one starts, so one seq per writer says it.
 */
void
barrier_confirm(const uint64 *seqs)
{
	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
	{
		WriterEntry *writer = shared_writer(CommitterDatabase, w);

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
