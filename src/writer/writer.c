/*-------------------------------------------------------------------------
 *
 * writer.c
 *	  The writer background worker: its loop, the receiving end of the
 *	  hand-off queues, its streams and their files (sealed by writer_seal.c).
 *
 * A writer owns the streams (sink, commit user, writer id, bucket) that
 * handoff_queue_writer_for routes to it.  Each stream has open files, the
 * last of which takes new batches, and sealed files whose committables were
 * reported to the committer but not yet confirmed as recorded.
 *
 * Every batch carries the 64-bit xid of the transaction that wrote it.  At a
 * barrier the committer passes the snapshot it took at the barrier; a batch
 * goes into the checkpoint when its transaction is visible in that snapshot,
 * is left out when its transaction aborted, and is carried forward (copied
 * into the stream's next file) when its transaction was still running: so a
 * checkpoint holds exactly the transactions that committed before the
 * barrier, on every writer alike.  Sealed files are never rewritten; their
 * committable lists the offsets of the batches they leave out.  Sealing is
 * writer_seal.c's, answering the barrier writer_barrier.c's; rebuilding the
 * streams from the staged files after a restart is writer_adopt.c's.
 *
 * Hand-off slots: the writer creates each free slot's queue, attaches to it
 * as the receiver and only then publishes the slot; a sender takes only a
 * published slot of the writer's current incarnation.  So the receiver is
 * always attached while a sender sends, and when the writer exits (its exit
 * callback detaches every queue) a sender sees SHM_MQ_DETACHED at once
 * instead of waiting on a queue nobody reads.  The exit callback also wakes
 * every session still waiting for an acknowledgement.
 *
 * Sync windows: a writer acknowledges a hand-off once its batches are
 * written and logged, and fsyncs its files in windows that PostgreSQL's
 * checkpoints wait for (writer_window.c).
 *
 * Liveness: the writer's heartbeat moves at every turn of its loop and
 * every message it receives; a writer that shows no progress for
 * paimon_sink.handoff_timeout is fenced by the committer (liveness.c), and
 * a fenced writer acknowledges nothing more and exits.
 *
 * The loop follows src/test/modules/worker_spi: latch waits with
 * postmaster-death exit, SIGTERM via die(), SIGHUP reloads settings.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/transam.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"

#include "core/constants.h"
#include "core/fault.h"
#include "core/names.h"
#include "core/security.h"
#include "core/shared_state.h"
#include "ipc/barrier_protocol.h"
#include "ipc/handoff_failure.h"
#include "ipc/liveness.h"
#include "session/handoff.h"
#include "writer/writer.h"
#include "writer/writer_adopt.h"
#include "writer/writer_barrier.h"
#include "writer/writer_internal.h"
#include "writer/writer_open_stats.h"

/*
 * The next sequence number of each (sink, bucket) this writer stages.
 * Every bucket has one writer, so one counter orders all versions of a key
 * (Paimon's writers number records per bucket the same way).  A restarted
 * writer continues above the highest number its staged files and the
 * recorded committables hold.
 */
typedef struct BucketSequence
{
	int32 sink_id; /* hash key, with bucket */
	int32 bucket;
	uint64 next;
} BucketSequence;

/*
 * This writer's end of each hand-off slot: the queue it created and
 * attached to as the receiver before publishing the slot (see
 * arm_free_slots), and whether a sender has used it yet.
 */
typedef struct SlotReader
{
	shm_mq_handle *queue;
	bool in_use; /* counted in queues_in_use */
	bool failed; /* this use could not be staged: the rest of it is dropped */
} SlotReader;

/* A hand-off received whole, its batches logged, to acknowledge. */
typedef struct PendingAck
{
	HandoffSlot *slot;
	uint64 generation;
	PGPROC *requester;
} PendingAck;

WriterEntry *MyWriter;
int MyWriterIndex;
HTAB *WriterStreams;
MemoryContext WriterContext;

static uint64 MyIncarnation;
static HTAB *sequences;
static SlotReader *readers;
static PendingAck *pending_acks;
static int pending_ack_count;
static int pending_ack_capacity;

/*
 * writer_get_stream returns the stream of an identity, created empty on
 * first use.
 */
Stream *
writer_get_stream(const StreamIdentity *id)
{
	StreamIdentity key;
	bool found;
	Stream *stream;

	memset(&key, 0, sizeof(key));
	key.sink_uuid = id->sink_uuid;
	key.sink_id = id->sink_id;
	key.writer_id = id->writer_id;
	key.bucket = id->bucket;
	strlcpy(key.commit_user, id->commit_user, sizeof(key.commit_user));
	stream = hash_search(WriterStreams, &key, HASH_ENTER, &found);
	if (!found)
	{
		stream->open_files = NIL;
		stream->sealed = NIL;
		pg_atomic_write_u32(&MyWriter->streams, (uint32) hash_get_num_entries(WriterStreams));
	}
	return stream;
}

/*
 * writer_add_batch records a batch record of a file, merged into the last
 * entry when it continues that entry's transaction with the same fate.
 */
void
writer_add_batch(OpenFile *file, off_t offset, uint32 length, uint32 rows, uint64 full_xid,
				 uint64 fence_epoch, bool dead)
{
	BatchInfo *batch = file->batch_count > 0 ? &file->batches[file->batch_count - 1] : NULL;

	file->record_count++;
	if (batch != NULL && batch->full_xid == full_xid && batch->fence_epoch == fence_epoch &&
		batch->dead == dead && batch->offset + (off_t) batch->length == offset)
	{
		batch->length += length;
		batch->rows += rows;
		batch->records++;
		return;
	}
	if (file->batch_count == file->batch_capacity)
	{
		file->batch_capacity = Max(16, file->batch_capacity * 2);
		file->batches =
			file->batches == NULL
				? MemoryContextAlloc(WriterContext, sizeof(BatchInfo) * file->batch_capacity)
				: repalloc(file->batches, sizeof(BatchInfo) * file->batch_capacity);
	}
	batch = &file->batches[file->batch_count++];
	batch->offset = offset;
	batch->length = length;
	batch->rows = rows;
	batch->records = 1;
	batch->full_xid = full_xid;
	batch->fence_epoch = fence_epoch;
	batch->dead = dead;
}

/*
 * current_file returns the stream's appendable file, created on first
 * need: the shared one (owner_xid 0), or the own file of a transaction that
 * streams its rows while it runs.  A barrier that finds that transaction still running
 * leaves its file open instead of copying its batches forward, so a long
 * load costs no copy per checkpoint.
 */
static OpenFile *
current_file(Stream *stream, uint64 owner_xid)
{
	OpenFile *file;
	ListCell *lc;
	MemoryContext old;
	char directory[MAXPGPATH];

	foreach (lc, stream->open_files)
	{
		file = lfirst(lc);
		if (file->appendable && file->owner_xid == owner_xid)
			return file;
	}
	/* before any batch of the file is acknowledged: a barrier must not skip us */
	pg_atomic_fetch_or_u64(&MyWriter->sinks_held, SINK_HELD_BIT(stream->id.sink_id));
	old = MemoryContextSwitchTo(WriterContext);
	file = palloc0(sizeof(OpenFile));
	file->owner_xid = owner_xid;
	file->file = staged_file_create(MyDatabaseId, MyWriterIndex, &stream->id, file->name,
									&file->size, directory, writer_open_window);
	staged_file_path(file->path, MyDatabaseId, stream->id.sink_id, file->name);
	file->appendable = true;
	file->dirty = true; /* its header: synced as the window closes, with its folder */
	writer_window_add_directory(directory);
	stream->open_files = lappend(stream->open_files, file);
	pg_atomic_fetch_add_u32(&MyWriter->files_open, 1);
	MemoryContextSwitchTo(old);
	/* a loader may load it while the transaction runs (load ahead) */
	if (owner_xid != 0)
		ahead_publish(MyDatabaseEntry, stream->id.sink_id, stream->id.commit_user, owner_xid,
					  file->name, &file->ahead);
	return file;
}

/*
 * bucket_sequence returns the next-sequence entry of a (sink, bucket),
 * starting at 1.
 */
static BucketSequence *
bucket_sequence(int32 sink_id, int32 bucket)
{
	BucketSequence key;
	BucketSequence *entry;
	bool found;

	key.sink_id = sink_id;
	key.bucket = bucket;
	entry = hash_search(sequences, &key, HASH_ENTER, &found);
	if (!found)
		entry->next = 1;
	return entry;
}

/*
 * writer_raise_sequence records that sequence numbers up to last are
 * taken: the bucket continues above.
 */
void
writer_raise_sequence(int32 sink_id, int32 bucket, uint64 last)
{
	BucketSequence *entry = bucket_sequence(sink_id, bucket);

	entry->next = Max(entry->next, last + 1);
}

/*
 * writer_append_batch appends one batch to a stream's current file (streamed: its
 * own file).
 * A new batch takes the next sequence numbers of its bucket
 * (first_sequence 0); a carried copy passes its original ones.  When the
 * write fails, nothing of the batch counts: it was not logged, its
 * sequence numbers are not taken, and staged_file_append cut the file back
 * to where the batch began; a file it could not cut takes no more batches,
 * and the barrier that seals it cuts it (writer_seal_stream).  Returns the
 * file the batch went into; the batch counts among the writer's open rows
 * (writer_open_stats.c) from then on.
 */
OpenFile *
writer_append_batch(Stream *stream, uint64 full_xid, uint64 fence_epoch, uint32 rows,
					const char *payload, uint32 length, const char *origin_name,
					off_t origin_offset, bool streamed, uint64 first_sequence)
{
	OpenFile *file = current_file(stream, streamed ? full_xid : 0);
	StagedBatchHeader header;
	off_t offset = file->size;
	BucketSequence *sequence = NULL;
	bool first_batch = file->batch_count == 0;

	if (first_sequence == 0)
	{
		sequence = bucket_sequence(stream->id.sink_id, stream->id.bucket);
		first_sequence = sequence->next;
	}
	memset(&header, 0, sizeof(header));
	header.first_sequence = first_sequence;
	header.payload_length = length;
	header.full_xid = full_xid;
	header.fence_epoch = fence_epoch;
	header.row_count = rows;
	if (origin_name != NULL)
	{
		header.origin_offset = origin_offset;
		(void) staged_file_name_to_uuid(origin_name, header.origin_file);
	}
	PG_TRY();
	{
		file->size = staged_file_append(file->file, MyDatabaseId, stream->id.sink_id, file->name,
										file->path, offset, &header, payload, writer_open_window);
	}
	PG_CATCH();
	{
		/* a tail that could not be cut: nothing goes after it */
		if (FileSize(file->file) != offset)
			file->appendable = false;
		PG_RE_THROW();
	}
	PG_END_TRY();
	if (sequence != NULL)
		sequence->next += rows;
	if (rows > 0)
		file->max_sequence = Max(file->max_sequence, first_sequence + rows - 1);
	file->dirty = true;
	/* a streaming transaction's rows head for the disk before its window fsyncs them */
	if (streamed)
		FileWriteback(file->file, offset, file->size - offset, WAIT_EVENT_DATA_FILE_FLUSH);
	writer_add_batch(file, offset, file->size - offset, rows, full_xid, fence_epoch, false);
	if (streamed)
		ahead_published(&file->ahead, (uint64) file->size);
	pg_atomic_fetch_add_u64(&MyWriter->rows_staged, rows);
	pg_atomic_fetch_add_u64(&MyWriter->bytes_staged, length);
	if (file->staged_at == 0)
		file->staged_at = GetCurrentTimestamp();
	writer_open_stats_added(stream, file, first_batch, rows, (uint64) (file->size - offset));
	return file;
}

/* writer_sync fsyncs a staged file (failures at elevel, see staged_file_sync), counted. */
void
writer_sync(File file, const char *path, int elevel)
{
	staged_file_sync(file, path, elevel);
	pg_atomic_fetch_add_u64(&MyWriter->fsyncs, 1);
}

/*
 * arm_free_slots makes every free hand-off slot ready for its next sender:
 * it creates the slot's queue, attaches this writer to it as the receiver
 * and only then publishes the slot, with this writer's incarnation.  A
 * sender takes only such a slot, so it always finds the receiver attached,
 * and this writer's exit (which detaches) reads as SHM_MQ_DETACHED on its
 * side.  Senders waiting for a slot are woken.
 */
static void
arm_free_slots(void)
{
	bool armed = false;

	for (int s = 0; s < MyWriter->slot_count; s++)
	{
		HandoffSlot *slot = &MyWriter->slots[s];
		shm_mq *queue;
		MemoryContext old;
		bool free_slot;

		if (readers[s].queue != NULL)
			continue;
		/* A free slot is no sender's: none takes one this writer did not publish. */
		SpinLockAcquire(&MyWriter->mutex);
		free_slot = slot->state == HANDOFF_FREE;
		SpinLockRelease(&MyWriter->mutex);
		if (!free_slot)
			continue;
		queue = shm_mq_create(shared_address(slot->queue_offset), shared_queue_size());
		shm_mq_set_receiver(queue, MyProc);
		old = MemoryContextSwitchTo(WriterContext);
		readers[s].queue = shm_mq_attach(queue, NULL, NULL);
		MemoryContextSwitchTo(old);
		readers[s].in_use = false;
		readers[s].failed = false;
		SpinLockAcquire(&MyWriter->mutex);
		slot->incarnation = MyIncarnation;
		slot->sender_done = false;
		slot->receiver_done = false;
		handoff_failure_reset_locked(slot);
		slot->published = true;
		SpinLockRelease(&MyWriter->mutex);
		armed = true;
	}
	if (armed)
		ConditionVariableBroadcast(&MyWriter->slot_freed);
}

/*
 * release_reader detaches this writer's end of a slot's queue after a use.
 * The slot is free once the sender detached too; arm_free_slots publishes
 * it again.
 */
static void
release_reader(int index)
{
	HandoffSlot *slot = &MyWriter->slots[index];

	if (readers[index].queue != NULL)
		shm_mq_detach(readers[index].queue);
	readers[index].queue = NULL;
	SpinLockAcquire(&MyWriter->mutex);
	slot->receiver_done = true;
	(void) handoff_slot_release_locked(slot);
	SpinLockRelease(&MyWriter->mutex);
	if (readers[index].in_use)
		pg_atomic_fetch_sub_u32(&MyWriter->queues_in_use, 1);
	readers[index].in_use = false;
}

/*
 * add_pending_ack remembers a hand-off received whole (its slot's
 * generation and requester, read under the mutex the sender wrote them
 * under), its batches written and logged, to be acknowledged.
 */
static void
add_pending_ack(HandoffSlot *slot)
{
	PendingAck *ack;

	/* A slot freed and taken again within one poll brings a second hand-off. */
	if (pending_ack_count == pending_ack_capacity)
	{
		pending_ack_capacity *= 2;
		pending_acks = repalloc(pending_acks, sizeof(PendingAck) * pending_ack_capacity);
	}
	ack = &pending_acks[pending_ack_count++];
	ack->slot = slot;
	SpinLockAcquire(&MyWriter->mutex);
	ack->generation = slot->generation;
	ack->requester = slot->requester;
	SpinLockRelease(&MyWriter->mutex);
}

/*
 * stage_chunk stages one chunk a hand-off brought.  A failure to stage it
 * that the writer survives (a full disk, an I/O error: see
 * handoff_failure_relayable) goes to the hand-off's session instead of
 * ending the writer: the slot gets the error, the rest of the hand-off is
 * dropped, and nothing of the failed batch was logged or stays in its
 * file (writer_append_batch).  Any other error ends the writer, as before.
 */
static void
stage_chunk(int index, const HandoffMessage *message, const char *rows, Size length)
{
	MemoryContext old = CurrentMemoryContext;

	PG_TRY();
	{
		(void) writer_append_batch(writer_get_stream(&message->stream), message->full_xid,
								   message->fence_epoch, message->row_count, rows, length, NULL, 0,
								   message->streamed, 0);
	}
	PG_CATCH();
	{
		ErrorData *edata;

		MemoryContextSwitchTo(old);
		edata = CopyErrorData();
		if (!handoff_failure_relayable(edata))
			PG_RE_THROW();
		FlushErrorState();
		/* in the server log too, with the writer's own context */
		edata->elevel = LOG;
		ThrowErrorData(edata);
		handoff_failure_record(MyWriter, &MyWriter->slots[index], edata);
		FreeErrorData(edata);
		readers[index].failed = true;
	}
	PG_END_TRY();
}

/*
 * check_message ends the writer (an error, as a short message does) on a
 * hand-off message that no session sends: an unknown kind, or a chunk whose
 * stream names no sink, writer id or bucket, or an invalid commit user, or
 * carries no row.  A message is the writer's untrusted input: its stream
 * identity is compared and copied as strings and used to name files.  The
 * sender's transaction then fails (its writer stopped) and rolls back.
 */
static void
check_message(const HandoffMessage *message)
{
	const StreamIdentity *stream = &message->stream;
	const char *problem;

	if (message->kind == HANDOFF_MESSAGE_END)
		return;
	if (message->kind != HANDOFF_MESSAGE_CHUNK || stream->sink_id <= 0 || stream->writer_id < 0 ||
		stream->bucket < 0 || message->row_count == 0 ||
		memchr(stream->commit_user, '\0', sizeof(stream->commit_user)) == NULL ||
		!paimon_sink_commit_user_is_valid(stream->commit_user, &problem))
		elog(ERROR, "paimon_sink writer received a hand-off message no session sends (kind %u)",
			 message->kind);
}

/*
 * poll_handoffs arms the free slots and reads what the hand-off queues
 * hold; returns true when anything arrived.
 */
static bool
poll_handoffs(void)
{
	bool progress = false;

	arm_free_slots();
	for (int s = 0; s < MyWriter->slot_count; s++)
	{
		HandoffSlot *slot = &MyWriter->slots[s];
		SlotReader *reader = &readers[s];

		while (reader->queue != NULL)
		{
			Size length;
			void *data;
			shm_mq_result result = shm_mq_receive(reader->queue, &length, &data, true);
			HandoffMessage message;

			/* Also while no sender has taken the slot yet. */
			if (result == SHM_MQ_WOULD_BLOCK)
				break;
			progress = true;
			liveness_beat(MyWriter);
			if (!reader->in_use)
			{
				reader->in_use = true;
				pg_atomic_fetch_add_u32(&MyWriter->queues_in_use, 1);
			}
			if (result == SHM_MQ_DETACHED)
			{
				/* The sender gave up before its end message: the batch is void. */
				release_reader(s);
				break;
			}
			if (length < sizeof(HandoffMessage))
				elog(ERROR, "paimon_sink writer received a short hand-off message");
			memcpy(&message, data, sizeof(message));
			check_message(&message);
			if (message.kind == HANDOFF_MESSAGE_CHUNK && !reader->failed)
				stage_chunk(s, &message, (char *) data + sizeof(message), length - sizeof(message));
			else if (message.kind == HANDOFF_MESSAGE_END)
			{
				/* a failed use is not acknowledged: its session raises the failure */
				if (!reader->failed)
					add_pending_ack(slot);
				release_reader(s);
				break;
			}
		}
	}
	return progress;
}

/*
 * exit_fenced ends a writer whose process the committer fenced (liveness.c)
 * without acknowledging anything more: the sessions of the hand-offs it
 * holds fail, their transactions roll back.
 */
static void
exit_fenced(void)
{
	ereport(LOG, (errmsg("paimon_sink writer %d exits: the committer fenced it after it showed no "
						 "progress",
						 MyWriterIndex),
				  errdetail("It acknowledges none of the %d hand-offs it holds; their transactions "
							"are rolled back.",
							pending_ack_count)));
	proc_exit(1);
}

/*
 * writer_acknowledge_handoffs acknowledges every hand-off received whole
 * and wakes the sessions that wait for them.  Their batches are written
 * and logged; nothing is fsynced or flushed here: each session's commit
 * record follows the records, and the sync window fsyncs the files.  A
 * fenced writer acknowledges nothing and exits: the fence is read under
 * the same hold of the mutex as the acknowledgements are made, so every
 * batch acknowledged was written before the fence (liveness.c relies on it).
 */
void
writer_acknowledge_handoffs(void)
{
	bool fenced;

	if (pending_ack_count == 0)
		return;
	fault_point("writer_after_receive");
	SpinLockAcquire(&MyWriter->mutex);
	fenced = MyWriter->fenced;
	for (int i = 0; i < pending_ack_count && !fenced; i++)
	{
		HandoffSlot *slot = pending_acks[i].slot;

		slot->done_generation = Max(slot->done_generation, pending_acks[i].generation);
	}
	SpinLockRelease(&MyWriter->mutex);
	if (fenced)
		exit_fenced();
	for (int i = 0; i < pending_ack_count; i++)
		SetLatch(&pending_acks[i].requester->procLatch);
	pg_atomic_fetch_add_u64(&MyWriter->handoffs, pending_ack_count);
	pending_ack_count = 0;
	fault_point("writer_after_ack");
}

/*
 * forget_dropped_sinks forgets the streams of dropped sinks: their folder is gone (the committer
 * removes it once the drop committed, and no row can reach them anymore).
 */
static void
forget_dropped_sinks(void)
{
	HASH_SEQ_STATUS status;
	Stream *stream;
	bool forgot = false;

	hash_seq_init(&status, WriterStreams);
	while ((stream = hash_seq_search(&status)) != NULL)
	{
		char directory[MAXPGPATH];
		struct stat st;
		ListCell *lc;

		staged_file_directory(directory, MyDatabaseId, stream->id.sink_id);
		if (stat(directory, &st) == 0 || errno != ENOENT)
			continue;
		foreach (lc, stream->open_files)
		{
			OpenFile *file = lfirst(lc);

			FileClose(file->file);
			pg_atomic_fetch_sub_u32(&MyWriter->files_open, 1);
			if (file->batches)
				pfree(file->batches);
			pfree(file);
		}
		list_free(stream->open_files);
		list_free_deep(stream->sealed);
		hash_search(WriterStreams, &stream->id, HASH_REMOVE, NULL);
		pg_atomic_write_u32(&MyWriter->streams, (uint32) hash_get_num_entries(WriterStreams));
		forgot = true;
	}
	if (forgot)
		writer_open_stats_publish();
}

/*
 * writer_exit detaches this writer's end of every hand-off queue and of a
 * barrier's reply queue, so that no sender and no committer waits on a
 * dead writer: they see SHM_MQ_DETACHED.  It wakes every session whose
 * hand-off it took but did not acknowledge (those find the writer gone),
 * the senders waiting for a slot, and the committer, which restarts it.
 */
static void
writer_exit(int code, Datum arg)
{
	PGPROC *committer;

	/*
	 * What this writer wrote is fsynced before a checkpoint may pass it: its
	 * acknowledged batches may belong to committed transactions.  The
	 * window's transaction is aborted by ShutdownPostgres, after this.
	 */
	writer_window_exit();

	SpinLockAcquire(&MyWriter->mutex);
	MyWriter->pid = 0;
	MyWriter->proc = NULL;
	MyWriter->ready = false;
	SpinLockRelease(&MyWriter->mutex);
	/* its open files are counted again by the next process, as it adopts them */
	writer_open_stats_exit();

	for (int s = 0; s < MyWriter->slot_count; s++)
	{
		HandoffSlot *slot = &MyWriter->slots[s];
		PGPROC *requester = NULL;

		if (readers[s].queue != NULL)
			shm_mq_detach(readers[s].queue);
		readers[s].queue = NULL;
		SpinLockAcquire(&MyWriter->mutex);
		if (slot->incarnation == MyIncarnation && slot->state == HANDOFF_ACTIVE)
		{
			slot->receiver_done = true;
			(void) handoff_slot_release_locked(slot);
			requester = slot->requester;
		}
		else if (slot->incarnation == MyIncarnation)
			slot->published = false; /* armed, not taken: no sender may take it now */
		SpinLockRelease(&MyWriter->mutex);
		if (requester != NULL)
			SetLatch(&requester->procLatch);
	}
	/* Their slots may be free already: only this list still names them. */
	for (int i = 0; i < pending_ack_count; i++)
		SetLatch(&pending_acks[i].requester->procLatch);
	writer_barrier_exit();
	ConditionVariableBroadcast(&MyWriter->slot_freed);

	/*
	 * Read once: the committer clears it when it exits.  A PGPROC is never
	 * freed, so setting the latch of one that a new process took is only a
	 * spurious wake-up.
	 */
	committer = MyDatabaseEntry->committer_proc;
	if (committer != NULL)
		SetLatch(&committer->procLatch);
}

/* paimon_sink_writer_main is the entry point of a writer worker. */
void
paimon_sink_writer_main(Datum main_arg)
{
	int argument = DatumGetInt32(main_arg);
	int database_index = argument >> 16;
	HASHCTL hash;

	MyWriterIndex = argument & 0xFFFF;
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	MyDatabaseIndex = database_index;
	MyDatabaseEntry = shared_database(database_index);
	MyWriter = shared_writer(MyDatabaseEntry, MyWriterIndex);
	BackgroundWorkerInitializeConnectionByOid(MyDatabaseEntry->database_id, InvalidOid, 0);
	pgstat_report_appname("paimon_sink writer");
	/* over ALTER DATABASE/ROLE ... SET: its role, search_path, durability */
	security_pin_worker_settings();

	WriterContext =
		AllocSetContextCreate(TopMemoryContext, "paimon_sink writer", ALLOCSET_DEFAULT_SIZES);
	memset(&hash, 0, sizeof(hash));
	hash.keysize = sizeof(StreamIdentity);
	hash.entrysize = sizeof(Stream);
	hash.hcxt = WriterContext;
	WriterStreams =
		hash_create("paimon_sink streams", 64, &hash, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	hash.keysize = sizeof(int32) * 2;
	hash.entrysize = sizeof(BucketSequence);
	sequences = hash_create("paimon_sink bucket sequences", 64, &hash,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	readers = MemoryContextAllocZero(WriterContext, sizeof(SlotReader) * MyWriter->slot_count);
	pending_ack_capacity = MyWriter->slot_count;
	pending_acks = MemoryContextAllocZero(WriterContext, sizeof(PendingAck) * pending_ack_capacity);

	SpinLockAcquire(&MyWriter->mutex);
	MyWriter->pid = MyProcPid;
	MyWriter->proc = MyProc;
	MyWriter->ready = false;
	MyIncarnation = ++MyWriter->incarnation;
	MyWriter->barrier_state = BARRIER_IDLE;
	/* a fence was of the process before this one */
	MyWriter->fenced = false;
	MyWriter->fenced_pid = 0;
	MyWriter->fenced_kill_sent = false;
	SpinLockRelease(&MyWriter->mutex);
	liveness_beat(MyWriter);
	pg_atomic_write_u64(&MyWriter->rows_staged, 0);
	pg_atomic_write_u64(&MyWriter->bytes_staged, 0);
	pg_atomic_write_u32(&MyWriter->files_open, 0);
	pg_atomic_write_u64(&MyWriter->sinks_held, 0); /* adoption sets the bits of what it adopts */
	pg_atomic_write_u32(&MyWriter->queues_in_use, 0);
	pg_atomic_write_u32(&MyWriter->streams, 0);
	writer_open_stats_start();
	before_shmem_exit(writer_exit, 0);

	pgstat_report_activity(STATE_RUNNING, "adopting staged files");
	writer_adopt_files();
	/* counted before the writer serves: until then sink_stats reports its counts unknown */
	writer_open_stats_publish();

	arm_free_slots();
	liveness_beat(MyWriter);
	SpinLockAcquire(&MyWriter->mutex);
	MyWriter->ready = true;
	SpinLockRelease(&MyWriter->mutex);
	/* Senders that waited for this writer find its slots now. */
	ConditionVariableBroadcast(&MyWriter->slot_freed);
	ConditionVariableBroadcast(&MyDatabaseEntry->workers_ready);
	pgstat_report_activity(STATE_IDLE, NULL);

	for (;;)
	{
		bool progress;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		/* the committer sends SIGTERM as it fences: this only makes sure */
		if (MyWriter->fenced)
			exit_fenced();
		liveness_beat(MyWriter);
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		progress = poll_handoffs();
		writer_acknowledge_handoffs();
		writer_barrier_answer();
		if (writer_window_due())
			writer_close_window();
		/*
		 * Read without the lock: a stale value only moves this exit by one
		 * turn of the loop, and a writer that leaves too early is started
		 * again by the committer, which restarts its writers.
		 */
		if (MyDatabaseEntry->committer_pid == 0 && !progress)
			proc_exit(0);
		if (!progress)
		{
			bool idle = !writer_window_is_open();
			long timeout = writer_window_timeout(liveness_idle_nap_ms());
			/* its WAL and I/O counts reach pg_stat_wal and pg_stat_io as an idle backend's do */
			long stats_ms = liveness_report_statistics();
			int events;

			if (stats_ms > 0)
				timeout = Min(timeout, stats_ms);
			events = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, timeout,
							   writer_window_wait_event());

			if ((events & WL_TIMEOUT) && idle)
				forget_dropped_sinks();
		}
	}
}
