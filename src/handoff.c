/*-------------------------------------------------------------------------
 *
 * handoff.c
 *	  Buffering a transaction's sink rows and handing them to the writers
 *	  at pre-commit (the shape of postgres_fdw's pgfdw_xact_callback).
 *
 * Rows leave this backend tagged with the transaction's xid, and nothing
 * flushes a WAL record under that xid first: the commit record's flush is
 * the transaction's one sync.  A crash before the commit can then leave a
 * batch of this transaction on disk whose xid recovery hands to a new
 * transaction; staged_wal.c keeps such a batch from counting as that new
 * transaction's (the redo of a batch's record advances the next xid past
 * it, and the end of recovery cuts every batch whose xid is not below the
 * next xid off its file).  The commit is forced to be synchronous: the
 * rows are acknowledged before they are synced, and only the commit
 * record's flush makes their WAL record durable.
 *
 * A transaction that buffers more than paimon_sink.handoff_buffer_size
 * streams its full chunks to the writers while it runs (outside
 * subtransactions, whose rows a rollback could still take back), so that
 * the writers write while the statement runs, as logical replication
 * streams large in-progress transactions.  Inside a subtransaction full
 * chunks spill to a temporary file instead.  A streamed chunk is a batch
 * like any other: kept when the transaction commits, left out when it
 * aborts.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog.h"

#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "common/hashfn.h"
#include "fault.h"
#include "handoff.h"
#include "handoff_failure.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "pgstat.h"
#include "shared_state.h"
#include "storage/buffile.h"
#include "storage/latch.h"
#include "utils/resowner.h"
#include "utils/memutils.h"
#include "utils/lsyscache.h"
#include "utils/timestamp.h"

/* Rows are sent in chunks of about this many bytes. */
#define HANDOFF_CHUNK_BYTES (64 * 1024)

/*
 * A chunk of rows: in memory, or spilled to the transaction's temporary file
 * once the transaction buffers more than paimon_sink.handoff_buffer_size.
 */
typedef struct PendingChunk
{
	StringInfoData data;
	uint32 rows;
	bool spilled;
	int spill_fileno;
	off_t spill_offset;
	int spill_length;
} PendingChunk;

/* State of a stream when a subtransaction first appended to it. */
typedef struct SavepointMark
{
	int level;
	int chunk_count;
	int last_length;
	uint32 last_rows;
	uint64 rows;
} SavepointMark;

struct PendingStream
{
	StreamIdentity id;
	int writer_index;
	uint64 fence_epoch; /* the lowest any statement of it saw */
	List *chunks;		/* PendingChunk * */
	uint64 rows;
	List *marks; /* SavepointMark *, innermost last */
};

/* A queue this backend is sending on, so an abort can detach it. */
typedef struct ActiveHandoff
{
	WriterEntry *writer;
	HandoffSlot *slot;
	uint64 generation;
	uint64 incarnation;
	shm_mq_handle *queue;
} ActiveHandoff;

/* Per-transaction state, in TopTransactionContext. */
static List *pending_streams = NIL;
static PendingStream *last_stream = NULL;
static List *active_handoffs = NIL;
static ActiveHandoff **writer_handoffs = NULL; /* per writer, while open */
static bool sync_commit_forced = false;
static bool wake_committer_at_commit = false;
static bool want_database_at_commit = false;
static BufFile *spill_file = NULL;
static int spill_end_fileno = 0;
static off_t spill_end_offset = 0;
static Size bytes_in_memory = 0;

static void handoff_xact_callback(XactEvent event, void *arg);
static void stream_rows(PendingStream *stream);
static void handoff_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
									 SubTransactionId parentSubid, void *arg);

/* handoff_register_callbacks installs the transaction callbacks (from _PG_init). */
void
handoff_register_callbacks(void)
{
	RegisterXactCallback(handoff_xact_callback, NULL);
	RegisterSubXactCallback(handoff_subxact_callback, NULL);
}

/*
 * handoff_writer_for routes a (sink, bucket) to a writer index of the
 * database; writers use the same function when they adopt files.
 */
int
handoff_writer_for(int32 sink_id, int32 bucket)
{
	uint32 key[2] = {(uint32) sink_id, (uint32) bucket};

	return hash_bytes((const unsigned char *) key, sizeof(key)) % PaimonSinkWritersPerDatabase;
}

/*
 * handoff_stream returns this transaction's buffer for a stream, creating
 * it on first use.  fence_epoch is the commit user's epoch the calling
 * statement read: the transaction keeps the lowest, since a recover() after
 * its first write fences all of it.
 */
PendingStream *
handoff_stream(const StreamIdentity *stream, int writer_index, uint64 fence_epoch)
{
	ListCell *lc;
	PendingStream *pending;
	MemoryContext old;

	if (last_stream != NULL && memcmp(&last_stream->id, stream, sizeof(*stream)) == 0)
		pending = last_stream;
	else
	{
		pending = NULL;
		foreach (lc, pending_streams)
		{
			if (memcmp(&((PendingStream *) lfirst(lc))->id, stream, sizeof(*stream)) == 0)
			{
				pending = lfirst(lc);
				break;
			}
		}
	}
	if (pending != NULL)
	{
		pending->fence_epoch = Min(pending->fence_epoch, fence_epoch);
		return last_stream = pending;
	}
	old = MemoryContextSwitchTo(TopTransactionContext);
	pending = palloc0(sizeof(PendingStream));
	pending->id = *stream;
	pending->writer_index = writer_index;
	pending->fence_epoch = fence_epoch;
	pending_streams = lappend(pending_streams, pending);
	MemoryContextSwitchTo(old);
	return last_stream = pending;
}

/*
 * Move a full chunk to the transaction's temporary file.  The file belongs
 * to the top transaction's resource owner: a subtransaction that rolls back
 * must not close it under chunks its parent keeps.
 */
static void
spill_chunk(PendingChunk *chunk)
{
	if (spill_file == NULL)
	{
		ResourceOwner saved = CurrentResourceOwner;

		CurrentResourceOwner = TopTransactionResourceOwner;
		spill_file = BufFileCreateTemp(false);
		CurrentResourceOwner = saved;
	}
	/*
	 * Writes only append, at the end this code keeps: streaming reads spilled
	 * chunks back in between, and BufFile's SEEK_END would miss what its
	 * buffer has not written yet.
	 */
	if (BufFileSeek(spill_file, spill_end_fileno, spill_end_offset, SEEK_SET) != 0)
		ereport(ERROR, (errcode_for_file_access(),
						errmsg("could not seek in the spilled rows of this transaction: %m")));
	chunk->spill_fileno = spill_end_fileno;
	chunk->spill_offset = spill_end_offset;
	BufFileWrite(spill_file, chunk->data.data, chunk->data.len);
	BufFileTell(spill_file, &spill_end_fileno, &spill_end_offset);
	chunk->spill_length = chunk->data.len;
	chunk->spilled = true;
	bytes_in_memory -= chunk->data.len;
	pfree(chunk->data.data);
	chunk->data.data = NULL;
	chunk->data.len = 0;
}

/* The rows of a chunk, read back from the temporary file when spilled. */
static char *
chunk_rows(PendingChunk *chunk, int *length)
{
	char *buffer;

	if (!chunk->spilled)
	{
		*length = chunk->data.len;
		return chunk->data.data;
	}
	buffer = palloc(chunk->spill_length);
	if (BufFileSeek(spill_file, chunk->spill_fileno, chunk->spill_offset, SEEK_SET) != 0 ||
		BufFileRead(spill_file, buffer, chunk->spill_length) != (size_t) chunk->spill_length)
		ereport(ERROR, (errcode_for_file_access(),
						errmsg("could not read the spilled rows of this transaction: %m")));
	*length = chunk->spill_length;
	return buffer;
}

/* handoff_append_row appends one COPY text line (with its newline). */
void
handoff_append_row(PendingStream *stream, const char *row, int length)
{
	PendingChunk *chunk;
	int level = GetCurrentTransactionNestLevel();
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	if (level > 1)
	{
		SavepointMark *mark = stream->marks ? llast(stream->marks) : NULL;

		if (mark == NULL || mark->level < level)
		{
			mark = palloc(sizeof(SavepointMark));
			mark->level = level;
			mark->chunk_count = list_length(stream->chunks);
			mark->last_length = 0;
			mark->last_rows = 0;
			if (stream->chunks != NIL)
			{
				PendingChunk *last = llast(stream->chunks);

				mark->last_length = last->spilled ? last->spill_length : last->data.len;
				mark->last_rows = last->rows;
			}
			mark->rows = stream->rows;
			stream->marks = lappend(stream->marks, mark);
		}
	}

	chunk = stream->chunks ? llast(stream->chunks) : NULL;
	if (chunk != NULL && !chunk->spilled && chunk->data.len + length > HANDOFF_CHUNK_BYTES &&
		bytes_in_memory > (Size) PaimonSinkHandoffBufferKB * 1024 && level == 1)
	{
		/* the transaction holds too much: the stream's rows go to its writer */
		stream_rows(stream);
		chunk = llast(stream->chunks);
	}
	else if (chunk == NULL || chunk->spilled || chunk->data.len + length > HANDOFF_CHUNK_BYTES)
	{
		/* within a subtransaction, a full chunk goes to disk instead */
		if (chunk != NULL && !chunk->spilled &&
			bytes_in_memory > (Size) PaimonSinkHandoffBufferKB * 1024)
			spill_chunk(chunk);
		chunk = palloc0(sizeof(PendingChunk));
		initStringInfo(&chunk->data);
		stream->chunks = lappend(stream->chunks, chunk);
	}
	appendBinaryStringInfo(&chunk->data, row, length);
	bytes_in_memory += length;
	chunk->rows++;
	stream->rows++;
	MemoryContextSwitchTo(old);
}

/* Undo what subtransaction "level" and its children appended. */
static void
rollback_to_level(int level)
{
	ListCell *lc;

	foreach (lc, pending_streams)
	{
		PendingStream *stream = lfirst(lc);
		SavepointMark *restore = NULL;
		int keep = list_length(stream->marks);

		for (int i = list_length(stream->marks) - 1; i >= 0; i--)
		{
			SavepointMark *mark = list_nth(stream->marks, i);

			if (mark->level < level)
				break;
			restore = mark;
			keep = i;
		}
		if (restore == NULL)
			continue;
		for (int i = restore->chunk_count; i < list_length(stream->chunks); i++)
		{
			PendingChunk *dropped = list_nth(stream->chunks, i);

			if (!dropped->spilled)
				bytes_in_memory -= dropped->data.len;
		}
		stream->chunks = list_truncate(stream->chunks, restore->chunk_count);
		if (stream->chunks != NIL)
		{
			PendingChunk *last = llast(stream->chunks);

			if (last->spilled)
				last->spill_length = restore->last_length;
			else
			{
				bytes_in_memory -= last->data.len - restore->last_length;
				last->data.len = restore->last_length;
				last->data.data[last->data.len] = '\0';
			}
			last->rows = restore->last_rows;
		}
		stream->rows = restore->rows;
		stream->marks = list_truncate(stream->marks, keep);
	}
}

/* What subtransaction "level" appended now belongs to its parent. */
static void
release_level(int level)
{
	ListCell *lc;

	foreach (lc, pending_streams)
	{
		PendingStream *stream = lfirst(lc);
		SavepointMark *mark;
		SavepointMark *below;

		if (stream->marks == NIL)
			continue;
		mark = llast(stream->marks);
		if (mark->level != level)
			continue;
		below = list_length(stream->marks) > 1
					? list_nth(stream->marks, list_length(stream->marks) - 2)
					: NULL;
		if (level - 1 <= 1 || (below != NULL && below->level == level - 1))
			stream->marks = list_delete_last(stream->marks);
		else
			mark->level = level - 1;
	}
}

/*
 * handoff_subxact_callback takes back the rows of a subtransaction that
 * rolls back, and gives those of one that commits to its parent.
 */
static void
handoff_subxact_callback(SubXactEvent event, SubTransactionId mySubid, SubTransactionId parentSubid,
						 void *arg)
{
	if (pending_streams == NIL)
		return;
	if (event == SUBXACT_EVENT_ABORT_SUB)
		rollback_to_level(GetCurrentTransactionNestLevel());
	else if (event == SUBXACT_EVENT_COMMIT_SUB)
		release_level(GetCurrentTransactionNestLevel());
}

/* rows_pending tells whether this transaction buffered rows for a sink. */
static bool
rows_pending(void)
{
	ListCell *lc;

	foreach (lc, pending_streams)
	{
		if (((PendingStream *) lfirst(lc))->rows > 0)
			return true;
	}
	return false;
}

/*
 * workers_ready tells whether this database's committer and all its
 * writers serve.  A writer's readiness is read under its mutex; the
 * committer's flag, which only the committer writes, without a lock: a
 * stale value only moves the end of the caller's wait by one poll.
 */
static bool
workers_ready(DatabaseEntry *db)
{
	if (!db->committer_ready)
		return false;
	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
	{
		WriterEntry *writer = shared_writer(db, w);
		bool ready;

		SpinLockAcquire(&writer->mutex);
		ready = writer->ready;
		SpinLockRelease(&writer->mutex);
		if (!ready)
			return false;
	}
	return true;
}

/*
 * remaining_wait returns how many milliseconds of paimon_sink.handoff_timeout
 * are left since start, at most limit (limit -1: no other bound); 0 once the
 * timeout has passed.
 */
static long
remaining_wait(TimestampTz start, long limit)
{
	long left;

	if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), PaimonSinkHandoffTimeoutMs))
		return 0;
	left =
		PaimonSinkHandoffTimeoutMs - TimestampDifferenceMilliseconds(start, GetCurrentTimestamp());
	left = Max(left, 1);
	return limit < 0 ? left : Min(left, limit);
}

/*
 * handoff_database_index returns this database's entry and, when asked,
 * waits (interruptibly, up to paimon_sink.handoff_timeout) until its
 * committer and writers serve.  Raises ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE
 * when they do not in time, and at once when this transaction created or
 * updated the extension (they start on it only after it commits).  The
 * committer and each writer broadcast the database's workers_ready as they
 * start serving, so the wait sleeps on it.
 */
int
handoff_database_index(bool wait_for_writers)
{
	int index = shared_want_database(MyDatabaseId);
	DatabaseEntry *db = shared_database(index);
	TimestampTz start = GetCurrentTimestamp();

	if (!wait_for_writers)
		return index;
	for (;;)
	{
		long timeout;

		ConditionVariablePrepareToSleep(&db->workers_ready);
		if (workers_ready(db))
			break;

		/* they wait for our commit, and we for them: say so at once */
		if (catalog_extension_changed_here())
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the workers of paimon_sink cannot serve this transaction"),
					 errdetail("This transaction created or updated extension paimon_sink; its "
							   "committer and writers start on it only after it commits."),
					 errhint("Commit the CREATE EXTENSION or ALTER EXTENSION first.")));
		timeout = remaining_wait(start, -1);
		if (timeout == 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the writers of this database are not running"),
					 errdetail("No committer and writers served database \"%s\" within %d ms.",
							   get_database_name(MyDatabaseId), PaimonSinkHandoffTimeoutMs),
					 errhint("Check that paimon_sink is in shared_preload_libraries and that "
							 "max_worker_processes leaves room for the launcher, one committer and "
							 "paimon_sink.writers_per_database writers per database.")));
		(void) ConditionVariableTimedSleep(&db->workers_ready, timeout, PG_WAIT_EXTENSION);
	}
	ConditionVariableCancelSleep();
	return index;
}

/*
 * take_slot takes a hand-off slot the writer has published (its queue
 * created, the writer attached as its receiver), or returns NULL when the
 * writer is not ready or every slot is busy.
 */
static HandoffSlot *
take_slot(WriterEntry *writer, ActiveHandoff *handoff)
{
	HandoffSlot *slot = NULL;

	SpinLockAcquire(&writer->mutex);
	for (int s = 0; writer->ready && s < writer->slot_count; s++)
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
 * open_handoff takes a hand-off slot of a writer and attaches to its queue
 * as the sender.  It waits on the writer's condition variable, which the
 * writer broadcasts when it publishes slots (after each use, and when it
 * starts), up to paimon_sink.handoff_timeout; then it raises
 * ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE.
 */
static ActiveHandoff *
open_handoff(WriterEntry *writer)
{
	TimestampTz start = GetCurrentTimestamp();
	ActiveHandoff *handoff = MemoryContextAllocZero(TopTransactionContext, sizeof(ActiveHandoff));

	for (;;)
	{
		HandoffSlot *slot = take_slot(writer, handoff);
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
			active_handoffs = lappend(active_handoffs, handoff);
			return handoff;
		}

		timeout = remaining_wait(start, -1);
		if (timeout == 0)
			ereport(
				ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("no sink writer accepted the rows of this transaction"),
				 errdetail("Every hand-off queue of the writer was busy or the writer was not "
						   "running for %d ms.",
						   PaimonSinkHandoffTimeoutMs),
				 errhint("Raise paimon_sink.queues_per_writer or paimon_sink.handoff_timeout.")));
		(void) ConditionVariableTimedSleep(&writer->slot_freed, timeout, PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * close_handoff detaches our end of a hand-off queue; the slot is free
 * once the writer detached too, and the writer, woken, publishes it again.
 */
static void
close_handoff(ActiveHandoff *handoff)
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
 * send_message sends one message on a hand-off queue, or raises
 * ERRCODE_CONNECTION_FAILURE when the writer detached from it, or the
 * writer's failure to stage what this hand-off sent so far (53100 a full
 * disk, 58030 an I/O error: handoff_failure_raise).
 */
static void
send_message(ActiveHandoff *handoff, HandoffMessage *message, const char *rows, int length)
{
	shm_mq_iovec iov[2];
	shm_mq_result result;

	/* a streaming transaction learns of a failure at its next chunk, not at its commit */
	handoff_failure_raise(handoff->writer, handoff->slot, handoff->generation);
	iov[0].data = (const char *) message;
	iov[0].len = sizeof(*message);
	iov[1].data = rows;
	iov[1].len = length;
	result = shm_mq_sendv(handoff->queue, iov, length > 0 ? 2 : 1, false, true);
	if (result != SHM_MQ_SUCCESS)
		ereport(ERROR, (errcode(ERRCODE_CONNECTION_FAILURE),
						errmsg("lost the sink writer while handing off rows"),
						errdetail("The writer detached from its queue; this transaction is rolled "
								  "back, so none of its rows are staged."),
						errhint("Retry the transaction.")));
}

/*
 * wait_for_ack waits until the writer wrote and logged this hand-off, or
 * raises the writer's failure to stage it (handoff_failure_raise), or
 * ERRCODE_CONNECTION_FAILURE when the writer stopped first.  No
 * timeout: the writer sets our latch when it acknowledges, and its exit
 * callback sets it for every hand-off it took and did not acknowledge.
 */
static void
wait_for_ack(ActiveHandoff *handoff)
{
	for (;;)
	{
		bool done;
		bool lost;

		handoff_failure_raise(handoff->writer, handoff->slot, handoff->generation);
		SpinLockAcquire(&handoff->writer->mutex);
		done = handoff->slot->done_generation >= handoff->generation;
		lost = handoff->writer->incarnation != handoff->incarnation || handoff->writer->pid == 0;
		SpinLockRelease(&handoff->writer->mutex);
		if (done)
			return;
		if (lost)
			ereport(ERROR,
					(errcode(ERRCODE_CONNECTION_FAILURE),
					 errmsg("the sink writer stopped before staging the rows of this transaction"),
					 errdetail("This transaction is rolled back, so none of its rows are staged."),
					 errhint("Retry the transaction.")));
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_EXIT_ON_PM_DEATH, -1, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The transaction's xid, the tag of its batches; its commit is made
 * synchronous (see the file comment).  No WAL is flushed here: the commit
 * record's flush covers the batches' records, which precede it.
 */
static FullTransactionId
batch_xid(void)
{
	FullTransactionId full_xid = GetTopFullTransactionId();

	if (!sync_commit_forced)
	{
		ForceSyncCommit();
		sync_commit_forced = true;
	}
	return full_xid;
}

/* The transaction's open hand-off to writer w, opened on first use. */
static ActiveHandoff *
writer_handoff(int w)
{
	if (writer_handoffs == NULL)
		writer_handoffs = MemoryContextAllocZero(
			TopTransactionContext, sizeof(ActiveHandoff *) * PaimonSinkWritersPerDatabase);
	if (writer_handoffs[w] == NULL)
	{
		DatabaseEntry *db = shared_database(handoff_database_index(true));

		writer_handoffs[w] = open_handoff(shared_writer(db, w));
	}
	return writer_handoffs[w];
}

/* Send one chunk of a stream's rows; streamed: while the transaction runs. */
static void
send_chunk(ActiveHandoff *handoff, PendingStream *stream, PendingChunk *chunk,
		   FullTransactionId full_xid, bool streamed)
{
	HandoffMessage message;
	char *rows;
	int length;

	memset(&message, 0, sizeof(message));
	message.kind = HANDOFF_MESSAGE_CHUNK;
	message.streamed = streamed;
	message.full_xid = U64FromFullTransactionId(full_xid);
	message.fence_epoch = stream->fence_epoch;
	message.stream = stream->id;
	message.row_count = chunk->rows;
	rows = chunk_rows(chunk, &length);
	send_message(handoff, &message, rows, length);
	if (chunk->spilled)
		pfree(rows);
}

/*
 * Stream a stream's buffered rows to its writer now, in their order (the
 * spilled ones too); the last chunk, emptied, takes the rows that follow.
 * Only at the top level: no savepoint can take these rows back.
 */
static void
stream_rows(PendingStream *stream)
{
	FullTransactionId full_xid = batch_xid();
	ActiveHandoff *handoff = writer_handoff(stream->writer_index);
	PendingChunk *last = llast(stream->chunks);
	ListCell *lc;

	foreach (lc, stream->chunks)
	{
		PendingChunk *chunk = lfirst(lc);

		if (chunk->rows > 0)
			send_chunk(handoff, stream, chunk, full_xid, true);
		if (chunk == last)
			continue;
		if (!chunk->spilled)
		{
			bytes_in_memory -= chunk->data.len;
			pfree(chunk->data.data);
		}
		pfree(chunk);
	}
	list_free(stream->chunks);
	stream->chunks = list_make1(last);
	bytes_in_memory -= last->data.len;
	resetStringInfo(&last->data);
	last->rows = 0;
}

/*
 * Hand every pending row to its writer and wait until each writer logged
 * them (their records precede this transaction's commit record).
 */
static void
send_pending_rows(void)
{
	FullTransactionId full_xid = batch_xid();
	ListCell *lc;

	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
	{
		ActiveHandoff *handoff = writer_handoffs ? writer_handoffs[w] : NULL;
		HandoffMessage message;

		foreach (lc, pending_streams)
		{
			PendingStream *stream = lfirst(lc);
			ListCell *chunk_cell;

			if (stream->writer_index != w || stream->rows == 0)
				continue;
			foreach (chunk_cell, stream->chunks)
			{
				PendingChunk *chunk = lfirst(chunk_cell);

				if (chunk->rows == 0)
					continue;
				if (handoff == NULL)
					handoff = writer_handoff(w);
				send_chunk(handoff, stream, chunk, full_xid, false);
			}
		}
		if (handoff == NULL)
			continue;
		memset(&message, 0, sizeof(message));
		message.kind = HANDOFF_MESSAGE_END;
		message.full_xid = U64FromFullTransactionId(full_xid);
		send_message(handoff, &message, NULL, 0);
		close_handoff(handoff);
	}

	foreach (lc, active_handoffs)
		wait_for_ack(lfirst(lc));
	fault_point("backend_after_handoff");
}

/*
 * handoff_wake_committer_at_commit makes this transaction's commit tell the
 * database's committer that its sinks changed (create_sink: read the
 * schedule of periodic checkpoints again; drop_sink: its files can go).
 */
void
handoff_wake_committer_at_commit(void)
{
	wake_committer_at_commit = true;
}

/*
 * handoff_want_database_at_commit makes this transaction's commit ask for
 * the database's committer (again): one started while CREATE EXTENSION runs
 * finds no extension yet and leaves.
 */
void
handoff_want_database_at_commit(void)
{
	want_database_at_commit = true;
}

/* reset_state forgets this transaction's hand-off state at its end. */
static void
reset_state(void)
{
	wake_committer_at_commit = false;
	want_database_at_commit = false;
	if (spill_file != NULL)
		BufFileClose(spill_file);
	spill_file = NULL;
	spill_end_fileno = 0;
	spill_end_offset = 0;
	bytes_in_memory = 0;
	pending_streams = NIL;
	last_stream = NULL;
	active_handoffs = NIL;
	writer_handoffs = NULL;
	sync_commit_forced = false;
}

/*
 * handoff_xact_callback hands the rows over at pre-commit, refuses
 * PREPARE TRANSACTION of a transaction with rows, detaches the queues of
 * one that aborts, and tells the committer at commit what it asked for.
 */
static void
handoff_xact_callback(XactEvent event, void *arg)
{
	ListCell *lc;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
			if (rows_pending())
				send_pending_rows();
			break;
		case XACT_EVENT_PRE_PREPARE:
			if (rows_pending())
				ereport(
					ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot prepare a transaction that wrote to a sink"),
					 errdetail("Rows written to a paimon_sink foreign table are staged when the "
							   "transaction commits; a prepared transaction cannot stage them."),
					 errhint("Commit the transaction instead, and use paimon_sink.prepare_commit() "
							 "and paimon_sink.commit() for two-phase commits of sink data.")));
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			/* a queue still open tells its writer the batch is void */
			foreach (lc, active_handoffs)
			{
				ActiveHandoff *handoff = lfirst(lc);

				if (handoff->queue != NULL)
					close_handoff(handoff);
				/* a failure nobody raised: the slot may serve again */
				handoff_failure_forget(handoff->writer, handoff->slot, handoff->generation);
			}
			reset_state();
			break;
		case XACT_EVENT_COMMIT:
			if (want_database_at_commit)
				shared_extension_committed(MyDatabaseId);
			if (wake_committer_at_commit)
			{
				int index;

				/* a flag, not only the latch: a busy committer resets its latch */
				LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
				index = shared_find_database(MyDatabaseId);
				if (index >= 0)
					shared_database(index)->sinks_changed = true;
				if (index >= 0 && shared_database(index)->committer_proc != NULL)
					SetLatch(&shared_database(index)->committer_proc->procLatch);
				LWLockRelease(PaimonSinkState->lock);
			}
			reset_state();
			break;
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			reset_state();
			break;
		default:
			break;
	}
}
