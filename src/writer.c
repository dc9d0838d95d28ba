/*-------------------------------------------------------------------------
 *
 * writer.c
 *	  The writer background worker.
 *
 * A writer owns the streams (sink, commit user, writer id, bucket) that
 * handoff_writer_for routes to it.  Each stream has open files, the last of
 * which takes new batches, and sealed files whose committables were reported
 * to the committer but not yet confirmed as recorded.
 *
 * Every batch carries the 64-bit xid of the transaction that wrote it.  At a
 * barrier the committer passes the snapshot it took at the barrier; a batch
 * goes into the checkpoint when its transaction is visible in that snapshot,
 * is left out when its transaction aborted, and is carried forward (copied
 * into the stream's next file) when its transaction was still running: so a
 * checkpoint holds exactly the transactions that committed before the
 * barrier, on every writer alike.  Sealed files are never rewritten; their
 * committable lists the offsets of the batches they leave out.
 *
 * After any restart the writer adopts the staged files that no committable
 * refers to and rebuilds the same state from them: a carried copy counts
 * only when the file it came from was recorded (or is gone, committed).
 *
 * The loop follows src/test/modules/worker_spi: latch waits with
 * postmaster-death exit, SIGTERM via die(), SIGHUP reloads settings.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "access/transam.h"
#include "access/xact.h"
#include "catalog.h"
#include "fault.h"
#include "handoff.h"
#include "launcher.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "security.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "shared_state.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/procarray.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/snapshot.h"
#include "writer.h"

/*
 * Adjacent batch records of one transaction (same epoch, same fate) share
 * one entry, so a writer's memory does not grow with the size of a load:
 * they are always classified alike.  Their offsets are read back from the
 * file when a barrier leaves them out or carries them.
 */
typedef struct BatchInfo
{
	off_t		offset;
	uint64		length;			/* headers and payloads of its records */
	uint64		rows;
	uint32		records;
	uint64		full_xid;
	uint64		fence_epoch;
	bool		dead;			/* carried copies whose originals stand */
} BatchInfo;

typedef struct OpenFile
{
	char		name[STAGED_FILE_NAME_LENGTH + 1];
	char		path[MAXPGPATH];
	File		file;
	off_t		size;
	bool		appendable;
	bool		dirty;
	uint64		owner_xid;		/* a streaming transaction's own file, or 0 */
	int			batch_count;
	int			batch_capacity;
	uint32		record_count;	/* batch records in the file */
	uint64		max_sequence;	/* the highest sequence number in the file */
	BatchInfo  *batches;
} OpenFile;

typedef struct SealedFile
{
	CommittableRecord record;
	int64	   *excluded;
	uint64		reported_seq;
} SealedFile;

typedef struct Stream
{
	StreamIdentity id;			/* hash key */
	List	   *open_files;		/* OpenFile *; one shared file may be appendable */
	List	   *sealed;			/* SealedFile * */
} Stream;

/*
 * The next sequence number of each (sink, bucket) this writer stages.
 * Every bucket has one writer, so one counter orders all versions of a key
 * (Paimon's writers number records per bucket the same way).  A restarted
 * writer continues above the highest number its staged files and the
 * recorded committables hold.
 */
typedef struct BucketSequence
{
	int32		sink_id;		/* hash key, with bucket */
	int32		bucket;
	uint64		next;
} BucketSequence;

/* What this writer knows about each hand-off slot. */
typedef struct SlotReader
{
	shm_mq_handle *queue;
	uint64		generation;
	bool		got_end;
} SlotReader;

typedef struct PendingAck
{
	HandoffSlot *slot;
	uint64		generation;
	PGPROC	   *requester;
} PendingAck;

static DatabaseEntry *MyDatabaseEntry;
static WriterEntry *MyWriter;
static int	MyWriterIndex;
static uint64 MyIncarnation;
static HTAB *streams;
static HTAB *sequences;
static SlotReader *readers;
static PendingAck *pending_acks;
static int	pending_ack_count;
static MemoryContext writer_context;
static shm_mq_handle *barrier_queue;	/* while answering a barrier */

/* writer_start registers a writer worker; NULL when no slot is free. */
BackgroundWorkerHandle *
writer_start(int database_index, int writer_index)
{
	char		name[BGW_MAXLEN];

	snprintf(name, sizeof(name), "paimon_sink writer %d", writer_index);
	return launcher_start_worker("paimon_sink_writer_main", "paimon_sink writer", name,
								 Int32GetDatum((database_index << 16) | writer_index));
}

static Stream *
get_stream(const StreamIdentity *id)
{
	StreamIdentity key;
	bool		found;
	Stream	   *stream;

	memset(&key, 0, sizeof(key));
	key.sink_uuid = id->sink_uuid;
	key.sink_id = id->sink_id;
	key.writer_id = id->writer_id;
	key.bucket = id->bucket;
	strlcpy(key.commit_user, id->commit_user, sizeof(key.commit_user));
	stream = hash_search(streams, &key, HASH_ENTER, &found);
	if (!found)
	{
		stream->open_files = NIL;
		stream->sealed = NIL;
		pg_atomic_write_u32(&MyWriter->streams, (uint32) hash_get_num_entries(streams));
	}
	return stream;
}

static void
add_batch(OpenFile *file, off_t offset, uint32 length, uint32 rows, uint64 full_xid,
		  uint64 fence_epoch, bool dead)
{
	BatchInfo  *batch = file->batch_count > 0 ? &file->batches[file->batch_count - 1] : NULL;

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
		file->batches = file->batches == NULL ?
			MemoryContextAlloc(writer_context, sizeof(BatchInfo) * file->batch_capacity) :
			repalloc(file->batches, sizeof(BatchInfo) * file->batch_capacity);
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
 * The stream's appendable file, created on first need: the shared one
 * (owner_xid 0), or the own file of a transaction that streams its rows
 * while it runs.  A barrier that finds that transaction still running
 * leaves its file open instead of copying its batches forward, so a long
 * load costs no copy per checkpoint.
 */
static OpenFile *
current_file(Stream *stream, uint64 owner_xid)
{
	OpenFile   *file;
	ListCell   *lc;
	MemoryContext old;

	foreach(lc, stream->open_files)
	{
		file = lfirst(lc);
		if (file->appendable && file->owner_xid == owner_xid)
			return file;
	}
	old = MemoryContextSwitchTo(writer_context);
	file = palloc0(sizeof(OpenFile));
	file->owner_xid = owner_xid;
	file->file = staged_file_create(MyDatabaseId, MyWriterIndex, &stream->id, file->name, &file->size);
	pg_atomic_fetch_add_u64(&MyWriter->fsyncs, 2);	/* the file and its folder */
	staged_file_path(file->path, MyDatabaseId, stream->id.sink_id, file->name);
	file->appendable = true;
	stream->open_files = lappend(stream->open_files, file);
	pg_atomic_fetch_add_u32(&MyWriter->files_open, 1);
	MemoryContextSwitchTo(old);
	return file;
}

static BucketSequence *
bucket_sequence(int32 sink_id, int32 bucket)
{
	BucketSequence key;
	BucketSequence *entry;
	bool		found;

	key.sink_id = sink_id;
	key.bucket = bucket;
	entry = hash_search(sequences, &key, HASH_ENTER, &found);
	if (!found)
		entry->next = 1;
	return entry;
}

/* Sequence numbers up to last are taken: the bucket continues above. */
static void
raise_sequence(int32 sink_id, int32 bucket, uint64 last)
{
	BucketSequence *entry = bucket_sequence(sink_id, bucket);

	entry->next = Max(entry->next, last + 1);
}

/*
 * Append one batch to a stream's current file (streamed: its own file).
 * A new batch takes the next sequence numbers of its bucket
 * (first_sequence 0); a carried copy passes its original ones.
 */
static void
append_batch(Stream *stream, uint64 full_xid, uint64 fence_epoch, uint32 rows,
			 const char *payload, uint32 length, const char *origin_name, off_t origin_offset,
			 bool streamed, uint64 first_sequence)
{
	OpenFile   *file = current_file(stream, streamed ? full_xid : 0);
	StagedBatchHeader header;
	off_t		offset = file->size;

	if (first_sequence == 0)
	{
		BucketSequence *sequence = bucket_sequence(stream->id.sink_id, stream->id.bucket);

		first_sequence = sequence->next;
		sequence->next += rows;
	}
	memset(&header, 0, sizeof(header));
	header.first_sequence = first_sequence;
	if (rows > 0)
		file->max_sequence = Max(file->max_sequence, first_sequence + rows - 1);
	header.payload_length = length;
	header.full_xid = full_xid;
	header.fence_epoch = fence_epoch;
	header.row_count = rows;
	if (origin_name != NULL)
	{
		header.origin_offset = origin_offset;
		(void) staged_file_name_to_uuid(origin_name, header.origin_file);
	}
	file->size = staged_file_append(file->file, file->path, offset, &header, payload);
	file->dirty = true;
	/* a streaming transaction's rows head for the disk before its commit fsyncs them */
	if (streamed)
		FileWriteback(file->file, offset, file->size - offset, WAIT_EVENT_DATA_FILE_FLUSH);
	add_batch(file, offset, file->size - offset, rows, full_xid, fence_epoch, false);
	pg_atomic_fetch_add_u64(&MyWriter->rows_staged, rows);
	pg_atomic_fetch_add_u64(&MyWriter->bytes_staged, length);
}

/* fsync a staged file, counted for the writers view */
static void
writer_sync(File file, const char *path)
{
	staged_file_sync(file, path);
	pg_atomic_fetch_add_u64(&MyWriter->fsyncs, 1);
}

static void
sync_dirty_files(void)
{
	HASH_SEQ_STATUS status;
	Stream	   *stream;

	hash_seq_init(&status, streams);
	while ((stream = hash_seq_search(&status)) != NULL)
	{
		ListCell   *lc;

		foreach(lc, stream->open_files)
		{
			OpenFile   *file = lfirst(lc);

			if (file->dirty)
				writer_sync(file->file, file->path);
			file->dirty = false;
		}
	}
}

/* Acknowledge every hand-off received whole, after one grouped fsync. */
static void
acknowledge_handoffs(void)
{
	if (pending_ack_count == 0)
		return;
	fault_point("writer_after_receive");
	if (PaimonSinkGroupFsyncDelayMs > 0)
		pg_usleep(PaimonSinkGroupFsyncDelayMs * 1000L);
	sync_dirty_files();
	SpinLockAcquire(&MyWriter->mutex);
	for (int i = 0; i < pending_ack_count; i++)
	{
		HandoffSlot *slot = pending_acks[i].slot;

		slot->done_generation = Max(slot->done_generation, pending_acks[i].generation);
	}
	SpinLockRelease(&MyWriter->mutex);
	for (int i = 0; i < pending_ack_count; i++)
		SetLatch(&pending_acks[i].requester->procLatch);
	pg_atomic_fetch_add_u64(&MyWriter->handoffs, pending_ack_count);
	pending_ack_count = 0;
	fault_point("writer_after_ack");
}

/* Detach our end of a slot's queue; free the slot when the sender is done. */
static void
release_reader(int index)
{
	HandoffSlot *slot = &MyWriter->slots[index];
	bool		freed = false;

	if (readers[index].queue != NULL)
		shm_mq_detach(readers[index].queue);
	readers[index].queue = NULL;
	SpinLockAcquire(&MyWriter->mutex);
	slot->receiver_done = true;
	if (slot->sender_done)
	{
		slot->state = HANDOFF_FREE;
		freed = true;
	}
	SpinLockRelease(&MyWriter->mutex);
	pg_atomic_fetch_sub_u32(&MyWriter->queues_in_use, 1);
	if (freed)
		ConditionVariableBroadcast(&MyWriter->slot_freed);
}

/* Read what the hand-off queues hold; returns true when anything arrived. */
static bool
poll_handoffs(void)
{
	bool		progress = false;

	for (int s = 0; s < MyWriter->slot_count; s++)
	{
		HandoffSlot *slot = &MyWriter->slots[s];
		SlotReader *reader = &readers[s];

		if (reader->queue == NULL)
		{
			bool		attach;
			uint64		generation;
			PGPROC	   *requester;

			SpinLockAcquire(&MyWriter->mutex);
			attach = slot->state == HANDOFF_ACTIVE && slot->published &&
				!slot->receiver_done && slot->incarnation == MyIncarnation &&
				slot->generation != reader->generation;
			generation = slot->generation;
			requester = slot->requester;
			SpinLockRelease(&MyWriter->mutex);
			if (!attach)
				continue;
			(void) requester;
			reader->queue = shm_mq_attach(shared_address(slot->queue_offset), NULL, NULL);
			reader->generation = generation;
			reader->got_end = false;
			pg_atomic_fetch_add_u32(&MyWriter->queues_in_use, 1);
		}

		for (;;)
		{
			Size		length;
			void	   *data;
			shm_mq_result result = shm_mq_receive(reader->queue, &length, &data, true);
			HandoffMessage message;

			if (result == SHM_MQ_WOULD_BLOCK)
				break;
			progress = true;
			if (result == SHM_MQ_DETACHED)
			{
				/* the sender gave up before its end message: the batch is void */
				release_reader(s);
				break;
			}
			if (length < sizeof(HandoffMessage))
				elog(ERROR, "paimon_sink writer received a short hand-off message");
			memcpy(&message, data, sizeof(message));
			if (message.kind == HANDOFF_MESSAGE_CHUNK)
				append_batch(get_stream(&message.stream), message.full_xid, message.fence_epoch,
							 message.row_count, (char *) data + sizeof(message),
							 length - sizeof(message), NULL, 0, message.streamed, 0);
			else if (message.kind == HANDOFF_MESSAGE_END)
			{
				PendingAck *ack = &pending_acks[pending_ack_count++];

				ack->slot = slot;
				ack->generation = reader->generation;
				ack->requester = slot->requester;
				release_reader(s);
				break;
			}
		}
	}
	return progress;
}

/* Batch classes at a barrier. */
typedef enum BatchClass
{
	BATCH_TAKE,
	BATCH_DROP,
	BATCH_CARRY,
	BATCH_FENCED
} BatchClass;

/*
 * A batch's transaction began writing before the commit user's last
 * recover() (its epoch is older than the barrier's): the job restored from
 * a checkpoint and replays those rows itself, so they are left out whether
 * that transaction committed before, during or after the recovery.
 */
static BatchClass
classify(const BatchInfo *batch, Snapshot snapshot, uint64 fence_epoch)
{
	FullTransactionId next = ReadNextFullTransactionId();
	TransactionId xid = (TransactionId) batch->full_xid;

	if (batch->dead)
		return BATCH_DROP;
	if (batch->fence_epoch < fence_epoch)
		return BATCH_FENCED;
	if (batch->full_xid > U64FromFullTransactionId(next) ||
		U64FromFullTransactionId(next) - batch->full_xid > (uint64) 1 << 30)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("staged batch has transaction id %llu outside the range still known",
						(unsigned long long) batch->full_xid),
				 errdetail("The next transaction id is %llu.",
						   (unsigned long long) U64FromFullTransactionId(next))));
	if (!XidInMVCCSnapshot(xid, snapshot))
		return TransactionIdDidCommit(xid) ? BATCH_TAKE : BATCH_DROP;
	/* running at the barrier: carry it unless it has aborted since */
	if (TransactionIdIsInProgress(xid) || TransactionIdDidCommit(xid))
		return BATCH_CARRY;
	return BATCH_DROP;
}

static bool
stream_matches(const Stream *stream)
{
	return stream->id.sink_id == MyWriter->barrier_sink_id &&
		memcmp(&stream->id.sink_uuid, &MyWriter->barrier_sink_uuid, sizeof(pg_uuid_t)) == 0 &&
		(MyWriter->barrier_commit_user[0] == '\0' ||
		 strcmp(stream->id.commit_user, MyWriter->barrier_commit_user) == 0) &&
		(MyWriter->barrier_writer_id < 0 || stream->id.writer_id == MyWriter->barrier_writer_id);
}

/*
 * A job restores from an earlier checkpoint: the rows it staged since are
 * replayed by its source, so the stream's open files go, each reported as
 * removed.  Sealed files are reported after it so that the committer removes
 * those no kept checkpoint records.
 */
static void
discard_stream(Stream *stream, shm_mq_handle *queue, bool *failed)
{
	ListCell   *lc;

	foreach(lc, stream->open_files)
	{
		OpenFile   *file = lfirst(lc);

		FileClose(file->file);
		if (unlink(file->path) != 0 && errno != ENOENT)
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not remove staged file \"%s\": %m", file->path)));
		else if (!*failed)
		{
			CommittableRecord record;

			memset(&record, 0, sizeof(record));
			record.kind = BARRIER_RECORD_DISCARDED;
			record.stream = stream->id;
			strlcpy(record.file_name, file->name, sizeof(record.file_name));
			if (shm_mq_send(queue, sizeof(record), &record, false, true) != SHM_MQ_SUCCESS)
				*failed = true;
		}
		pg_atomic_fetch_sub_u32(&MyWriter->files_open, 1);
		if (file->batches)
			pfree(file->batches);
		pfree(file);
	}
	list_free(stream->open_files);
	stream->open_files = NIL;
}

/* Seal every open file of a stream against the barrier's snapshot. */
static void
seal_stream(Stream *stream, Snapshot snapshot, uint64 barrier_seq, uint64 fence_epoch)
{
	List	   *files = stream->open_files;
	ListCell   *lc;
	StringInfoData payload;
	bool		carried = false;
	uint64		fenced_rows = 0;
	List	   *kept = NIL;
	MemoryContext old_files;

	if (files == NIL)
		return;
	stream->open_files = NIL;
	initStringInfo(&payload);
	foreach(lc, files)
	{
		OpenFile   *file = lfirst(lc);
		MemoryContext old;
		SealedFile *sealed;
		int			excluded = 0;

		/* a streaming transaction still running keeps its own file open */
		if (file->owner_xid != 0 && file->batch_count > 0 &&
			classify(&file->batches[0], snapshot, fence_epoch) == BATCH_CARRY)
		{
			old = MemoryContextSwitchTo(writer_context);
			kept = lappend(kept, file);
			MemoryContextSwitchTo(old);
			continue;
		}
		old = MemoryContextSwitchTo(writer_context);
		sealed = palloc0(sizeof(SealedFile));

		sealed->excluded = palloc(sizeof(int64) * Max(1, file->record_count));
		MemoryContextSwitchTo(old);
		sealed->record.kind = BARRIER_RECORD_COMMITTABLE;
		sealed->record.stream = stream->id;
		strlcpy(sealed->record.file_name, file->name, sizeof(sealed->record.file_name));
		sealed->record.max_sequence = (int64) file->max_sequence;
		for (int b = 0; b < file->batch_count; b++)
		{
			BatchInfo  *batch = &file->batches[b];
			BatchClass	class = classify(batch, snapshot, fence_epoch);
			off_t		offset = batch->offset;

			if (class == BATCH_TAKE)
			{
				sealed->record.row_count += batch->rows;
				sealed->record.byte_count += batch->length;
				continue;
			}
			if (class == BATCH_FENCED)
				fenced_rows += batch->rows;
			/* each record of the entry is left out; a carried one is copied */
			while (offset < batch->offset + (off_t) batch->length)
			{
				StagedBatchHeader header;

				if (class == BATCH_CARRY ?
					!staged_file_read_batch(file->file, file->path, offset, file->size, &header,
											&payload) :
					!staged_file_read_header(file->file, file->path, offset, file->size, &header))
					ereport(ERROR,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("staged file \"%s\" has an unreadable batch at offset %lld",
									file->path, (long long) offset)));
				if (class == BATCH_CARRY)
				{
					append_batch(stream, batch->full_xid, batch->fence_epoch, header.row_count,
								 payload.data, payload.len, file->name, offset, false,
								 header.first_sequence);
					carried = true;
				}
				sealed->excluded[excluded++] = offset;
				offset += sizeof(header) + header.payload_length;
			}
		}
		sealed->record.excluded_count = excluded;
		sealed->reported_seq = barrier_seq;
		if (file->dirty)
			writer_sync(file->file, file->path);
		FileClose(file->file);
		pg_atomic_fetch_sub_u32(&MyWriter->files_open, 1);
		if (file->batches)
			pfree(file->batches);
		pfree(file);
		old = MemoryContextSwitchTo(writer_context);
		stream->sealed = lappend(stream->sealed, sealed);
		MemoryContextSwitchTo(old);
	}
	list_free(files);
	pfree(payload.data);
	old_files = MemoryContextSwitchTo(writer_context);
	stream->open_files = list_concat(kept, stream->open_files);
	MemoryContextSwitchTo(old_files);
	if (fenced_rows > 0)
		ereport(LOG,
				(errmsg("paimon_sink left out %llu rows of commit user \"%s\" of sink %d written before its last recover()",
						(unsigned long long) fenced_rows, stream->id.commit_user, stream->id.sink_id),
				 errdetail("Their transactions began writing under fence epoch %llu or lower; the job replays them from its restored checkpoint.",
						   (unsigned long long) fence_epoch - 1)));
	/* carried copies must be durable before the committable leaving them out is */
	if (carried)
		sync_dirty_files();
}

/* Forget sealed files the committer has recorded. */
static void
forget_confirmed(void)
{
	HASH_SEQ_STATUS status;
	Stream	   *stream;
	uint64		confirmed;

	SpinLockAcquire(&MyWriter->mutex);
	confirmed = MyWriter->confirmed_barrier_seq;
	SpinLockRelease(&MyWriter->mutex);

	hash_seq_init(&status, streams);
	while ((stream = hash_seq_search(&status)) != NULL)
	{
		ListCell   *lc;

		foreach(lc, stream->sealed)
		{
			SealedFile *sealed = lfirst(lc);

			/*
			 * Only the files the confirmed barrier reported: those of a
			 * barrier whose transaction failed wait for their stream's next
			 * barrier, even when a later barrier of other streams succeeded.
			 */
			if (sealed->reported_seq == confirmed)
			{
				stream->sealed = foreach_delete_current(stream->sealed, lc);
				pfree(sealed->excluded);
				pfree(sealed);
			}
		}
	}
}

/*
 * Forget the streams of dropped sinks: their folder is gone (the committer
 * removes it once the drop committed, and no row can reach them anymore).
 */
static void
forget_dropped_sinks(void)
{
	HASH_SEQ_STATUS status;
	Stream	   *stream;

	hash_seq_init(&status, streams);
	while ((stream = hash_seq_search(&status)) != NULL)
	{
		char		directory[MAXPGPATH];
		struct stat st;
		ListCell   *lc;

		staged_file_directory(directory, MyDatabaseId, stream->id.sink_id);
		if (stat(directory, &st) == 0 || errno != ENOENT)
			continue;
		foreach(lc, stream->open_files)
		{
			OpenFile   *file = lfirst(lc);

			FileClose(file->file);
			pg_atomic_fetch_sub_u32(&MyWriter->files_open, 1);
			if (file->batches)
				pfree(file->batches);
			pfree(file);
		}
		list_free(stream->open_files);
		list_free_deep(stream->sealed);
		hash_search(streams, &stream->id, HASH_REMOVE, NULL);
		pg_atomic_write_u32(&MyWriter->streams, (uint32) hash_get_num_entries(streams));
	}
}

/* Answer a barrier of the committer, if one waits. */
static void
answer_barrier(void)
{
	SnapshotData snapshot;
	shm_mq_handle *queue;
	HASH_SEQ_STATUS status;
	Stream	   *stream;
	uint64		barrier_seq;
	bool		failed = false;
	CommittableRecord end;
	int			kind;

	SpinLockAcquire(&MyWriter->mutex);
	if (MyWriter->barrier_state != BARRIER_REQUESTED)
	{
		SpinLockRelease(&MyWriter->mutex);
		return;
	}
	MyWriter->barrier_state = BARRIER_ANSWERING;
	barrier_seq = MyWriter->barrier_seq;
	kind = MyWriter->barrier_kind;
	SpinLockRelease(&MyWriter->mutex);

	/* everything received so far is made durable first */
	acknowledge_handoffs();
	forget_confirmed();

	memset(&snapshot, 0, sizeof(snapshot));
	snapshot.snapshot_type = SNAPSHOT_MVCC;
	snapshot.xmin = MyWriter->barrier_xmin;
	snapshot.xmax = MyWriter->barrier_xmax;
	snapshot.xcnt = MyWriter->barrier_xcnt;
	snapshot.xip = shared_address(MyWriter->barrier_xip_offset);

	queue = barrier_queue = shm_mq_attach(shared_address(MyWriter->barrier_queue_offset),
										  NULL, NULL);

	hash_seq_init(&status, streams);
	while ((stream = hash_seq_search(&status)) != NULL)
	{
		ListCell   *lc;

		if (!stream_matches(stream))
			continue;
		if (kind == BARRIER_SEAL)
			seal_stream(stream, &snapshot, barrier_seq, MyWriter->barrier_fence_epoch);
		else if (kind == BARRIER_DISCARD)
			discard_stream(stream, queue, &failed);
		else if (kind == BARRIER_LIST)
		{
			foreach(lc, stream->open_files)
			{
				OpenFile   *file = lfirst(lc);
				CommittableRecord record;

				memset(&record, 0, sizeof(record));
				record.kind = BARRIER_RECORD_COMMITTABLE;
				record.stream = stream->id;
				strlcpy(record.file_name, file->name, sizeof(record.file_name));
				if (!failed && shm_mq_send(queue, sizeof(record), &record, false, true) != SHM_MQ_SUCCESS)
					failed = true;
			}
		}
		foreach(lc, stream->sealed)
		{
			SealedFile *sealed = lfirst(lc);
			shm_mq_iovec iov[2];

			sealed->reported_seq = barrier_seq;
			if (failed)
				continue;
			iov[0].data = (const char *) &sealed->record;
			iov[0].len = sizeof(sealed->record);
			iov[1].data = (const char *) sealed->excluded;
			iov[1].len = sizeof(int64) * sealed->record.excluded_count;
			if (shm_mq_sendv(queue, iov, 2, false, true) != SHM_MQ_SUCCESS)
				failed = true;
		}
		if (kind == BARRIER_DISCARD)
		{
			list_free_deep(stream->sealed);
			stream->sealed = NIL;
		}
	}
	memset(&end, 0, sizeof(end));
	end.kind = BARRIER_RECORD_END;
	if (!failed)
		(void) shm_mq_send(queue, sizeof(end), &end, false, true);
	shm_mq_detach(queue);
	barrier_queue = NULL;

	SpinLockAcquire(&MyWriter->mutex);
	MyWriter->barrier_state = BARRIER_IDLE;
	SpinLockRelease(&MyWriter->mutex);
}

/* Is a staged file recorded as a committable? */
static bool
file_is_recorded(const char *file_name)
{
	Oid			type = TEXTOID;
	Datum		value = CStringGetTextDatum(file_name);

	if (SPI_execute_plan(catalog_plan("SELECT 1 FROM paimon_sink.committable c "
									  "WHERE c.file_name OPERATOR(pg_catalog.=) $1", 1, &type),
						 &value, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read paimon_sink.committable");
	return SPI_processed > 0;
}

/* Adopt one unrecorded staged file into its stream. */
static void
adopt_file(const char *path, const char *name)
{
	StreamIdentity id;
	off_t		offset;
	off_t		size;
	File		handle;
	OpenFile   *file;
	Stream	   *stream;
	MemoryContext old;
	SinkInfo	sink;

	memset(&id, 0, sizeof(id));
	handle = staged_file_open(path, &id, &offset, LOG);
	if (handle < 0)
		return;					/* removed meanwhile, or not a staged file */
	if (handoff_writer_for(id.sink_id, id.bucket) != MyWriterIndex || file_is_recorded(name))
	{
		FileClose(handle);
		return;
	}
	/* a file of an earlier sink with the same id (before DROP EXTENSION) */
	if (!catalog_sink_by_id(id.sink_id, &sink) ||
		memcmp(&sink.sink_uuid, &id.sink_uuid, sizeof(pg_uuid_t)) != 0)
	{
		ereport(LOG,
				(errmsg("paimon_sink writer leaves staged file \"%s\" alone: it belongs to no existing sink",
						path),
				 errhint("paimon_sink.remove_orphan_files() removes it.")));
		FileClose(handle);
		return;
	}

	old = MemoryContextSwitchTo(writer_context);
	file = palloc0(sizeof(OpenFile));
	MemoryContextSwitchTo(old);
	strlcpy(file->name, name, sizeof(file->name));
	strlcpy(file->path, path, sizeof(file->path));
	file->file = handle;
	size = FileSize(handle);
	for (;;)
	{
		StagedBatchHeader header;
		bool		dead = false;

		if (!staged_file_read_batch(handle, path, offset, size, &header, NULL))
			break;
		if (header.origin_offset != 0)
		{
			char		origin_name[STAGED_FILE_NAME_LENGTH + 1];
			char		origin_path[MAXPGPATH];
			struct stat st;

			uuid_unparse_lower(header.origin_file, origin_name);
			strcat(origin_name, ".stage");
			staged_file_path(origin_path, MyDatabaseId, id.sink_id, origin_name);
			/* the copy stands only if its original was left out for good */
			dead = !file_is_recorded(origin_name) && stat(origin_path, &st) == 0;
		}
		add_batch(file, offset, sizeof(header) + header.payload_length, header.row_count,
				  header.full_xid, header.fence_epoch, dead);
		if (header.row_count > 0)
		{
			uint64		last = header.first_sequence + header.row_count - 1;

			file->max_sequence = Max(file->max_sequence, last);
			raise_sequence(id.sink_id, id.bucket, last);
		}
		offset += sizeof(header) + header.payload_length;
	}
	if (offset < size)
	{
		ereport(LOG,
				(errmsg("paimon_sink writer truncates the torn tail of staged file \"%s\" at %lld of %lld bytes",
						path, (long long) offset, (long long) size)));
		if (FileTruncate(handle, offset, PG_WAIT_IO) != 0)
			ereport(ERROR,
					(errcode_for_file_access(),
					 errmsg("could not truncate staged file \"%s\": %m", path)));
		writer_sync(handle, path);
	}
	file->size = offset;
	file->appendable = false;
	stream = get_stream(&id);
	old = MemoryContextSwitchTo(writer_context);
	stream->open_files = lappend(stream->open_files, file);
	MemoryContextSwitchTo(old);
	pg_atomic_fetch_add_u32(&MyWriter->files_open, 1);
	for (int b = 0; b < file->batch_count; b++)
		pg_atomic_fetch_add_u64(&MyWriter->rows_staged, file->batches[b].rows);
}

/* Adopt the staged files of this writer's streams after a (re)start. */
static void
adopt_files(void)
{
	char		database_path[MAXPGPATH];
	DIR		   *sinks;
	struct dirent *sink_entry;

	snprintf(database_path, sizeof(database_path), "%s/%u", PAIMON_SINK_DIRECTORY, MyDatabaseId);
	sinks = AllocateDir(database_path);
	if (sinks == NULL)
		return;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	/* committed files are gone: their committables (or, expired, bucket_sequence) keep their numbers */
	if (SPI_execute("SELECT s.sink_id, s.bucket, pg_catalog.max(s.max_sequence) AS max_sequence FROM ("
					"SELECT c.sink_id, c.bucket, c.max_sequence FROM paimon_sink.committable c UNION ALL "
					"SELECT b.sink_id, b.bucket, b.max_sequence FROM paimon_sink.bucket_sequence b) s "
					"GROUP BY s.sink_id, s.bucket", true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read paimon_sink.committable");
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		int32		sink_id = DatumGetInt32(SPI_getbinval(tuple, desc, 1, &isnull));
		int32		bucket = DatumGetInt32(SPI_getbinval(tuple, desc, 2, &isnull));

		if (handoff_writer_for(sink_id, bucket) == MyWriterIndex)
			raise_sequence(sink_id, bucket,
						   (uint64) DatumGetInt64(SPI_getbinval(tuple, desc, 3, &isnull)));
	}
	while ((sink_entry = ReadDir(sinks, database_path)) != NULL)
	{
		char		sink_path[MAXPGPATH];
		DIR		   *files;
		struct dirent *file_entry;

		if (strspn(sink_entry->d_name, "0123456789") != strlen(sink_entry->d_name) ||
			sink_entry->d_name[0] == '\0')
			continue;
		snprintf(sink_path, sizeof(sink_path), "%s/%s", database_path, sink_entry->d_name);
		files = AllocateDir(sink_path);
		while ((file_entry = ReadDir(files, sink_path)) != NULL)
		{
			char		path[MAXPGPATH];

			snprintf(path, sizeof(path), "%s/%s", sink_path, file_entry->d_name);
			/* a header this writer was making when it ended never became a file */
			if (staged_file_temporary_creator(file_entry->d_name) == MyWriterIndex)
			{
				if (unlink(path) != 0 && errno != ENOENT)
					ereport(WARNING,
							(errcode_for_file_access(),
							 errmsg("could not remove temporary staged file \"%s\": %m", path)));
				continue;
			}
			if (!staged_file_name_is_valid(file_entry->d_name))
				continue;
			adopt_file(path, file_entry->d_name);
		}
		FreeDir(files);
	}
	FreeDir(sinks);
	PopActiveSnapshot();
	SPI_finish();
	CommitTransactionCommand();
}

/* At exit: detach our queue ends, so senders never wait on a dead writer. */
static void
writer_exit(int code, Datum arg)
{
	SpinLockAcquire(&MyWriter->mutex);
	MyWriter->pid = 0;
	MyWriter->proc = NULL;
	MyWriter->ready = false;
	SpinLockRelease(&MyWriter->mutex);

	for (int s = 0; s < MyWriter->slot_count; s++)
	{
		HandoffSlot *slot = &MyWriter->slots[s];
		PGPROC	   *requester = NULL;

		if (readers[s].queue != NULL)
			shm_mq_detach(readers[s].queue);
		readers[s].queue = NULL;
		SpinLockAcquire(&MyWriter->mutex);
		if (slot->state == HANDOFF_ACTIVE && slot->incarnation == MyIncarnation)
		{
			slot->receiver_done = true;
			if (slot->sender_done)
				slot->state = HANDOFF_FREE;
			requester = slot->requester;
		}
		SpinLockRelease(&MyWriter->mutex);
		if (requester != NULL)
			SetLatch(&requester->procLatch);
	}
	if (barrier_queue != NULL)
		shm_mq_detach(barrier_queue);
	barrier_queue = NULL;
	SpinLockAcquire(&MyWriter->mutex);
	MyWriter->barrier_state = BARRIER_IDLE;
	SpinLockRelease(&MyWriter->mutex);
	ConditionVariableBroadcast(&MyWriter->slot_freed);
	if (MyDatabaseEntry->committer_proc != NULL)
		SetLatch(&MyDatabaseEntry->committer_proc->procLatch);
}

/* paimon_sink_writer_main is the entry point of a writer worker. */
void
paimon_sink_writer_main(Datum main_arg)
{
	int			argument = DatumGetInt32(main_arg);
	int			database_index = argument >> 16;
	HASHCTL		hash;

	MyWriterIndex = argument & 0xFFFF;
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	MyDatabaseEntry = shared_database(database_index);
	MyWriter = shared_writer(MyDatabaseEntry, MyWriterIndex);
	BackgroundWorkerInitializeConnectionByOid(MyDatabaseEntry->database_id, InvalidOid, 0);
	pgstat_report_appname("paimon_sink writer");
	/* over ALTER DATABASE/ROLE ... SET: its role, search_path, durability */
	security_pin_worker_settings();

	writer_context = AllocSetContextCreate(TopMemoryContext, "paimon_sink writer",
										   ALLOCSET_DEFAULT_SIZES);
	memset(&hash, 0, sizeof(hash));
	hash.keysize = sizeof(StreamIdentity);
	hash.entrysize = sizeof(Stream);
	hash.hcxt = writer_context;
	streams = hash_create("paimon_sink streams", 64, &hash, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	hash.keysize = sizeof(int32) * 2;
	hash.entrysize = sizeof(BucketSequence);
	sequences = hash_create("paimon_sink bucket sequences", 64, &hash,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	readers = MemoryContextAllocZero(writer_context, sizeof(SlotReader) * MyWriter->slot_count);
	pending_acks = MemoryContextAllocZero(writer_context, sizeof(PendingAck) * MyWriter->slot_count);

	SpinLockAcquire(&MyWriter->mutex);
	MyWriter->pid = MyProcPid;
	MyWriter->proc = MyProc;
	MyWriter->ready = false;
	MyIncarnation = ++MyWriter->incarnation;
	MyWriter->barrier_state = BARRIER_IDLE;
	SpinLockRelease(&MyWriter->mutex);
	pg_atomic_write_u64(&MyWriter->rows_staged, 0);
	pg_atomic_write_u64(&MyWriter->bytes_staged, 0);
	pg_atomic_write_u32(&MyWriter->files_open, 0);
	pg_atomic_write_u32(&MyWriter->queues_in_use, 0);
	pg_atomic_write_u32(&MyWriter->streams, 0);
	before_shmem_exit(writer_exit, 0);

	pgstat_report_activity(STATE_RUNNING, "adopting staged files");
	adopt_files();

	SpinLockAcquire(&MyWriter->mutex);
	MyWriter->ready = true;
	SpinLockRelease(&MyWriter->mutex);
	pgstat_report_activity(STATE_IDLE, NULL);

	for (;;)
	{
		bool		progress;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
		progress = poll_handoffs();
		acknowledge_handoffs();
		answer_barrier();
		if (MyDatabaseEntry->committer_pid == 0 && !progress)
			proc_exit(0);		/* the committer restarts its writers */
		if (!progress)
		{
			int			events = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
										   1000, PG_WAIT_EXTENSION);

			if (events & WL_TIMEOUT)
				forget_dropped_sinks();
		}
	}
}
