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
 * The queues themselves (slots, sends, the acknowledgement, each wait
 * bounded by the writer's liveness) and the choice of a writer for an
 * append sink without a bucket key are handoff_queue.c's.
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

#include "access/transam.h"
#include "access/xact.h"
#include "access/xlog.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "nodes/pg_list.h"
#include "pgstat.h"
#include "storage/buffile.h"
#include "storage/latch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "core/budget.h"
#include "core/fault.h"
#include "core/guc.h"
#include "core/shared_state.h"
#include "core/wait_events.h"
#include "ipc/handoff_failure.h"
#include "ipc/handoff_queue.h"
#include "ipc/liveness.h"
#include "ipc/stream_lock.h"
#include "metadata/catalog.h"
#include "metadata/extension.h"
#include "session/fdw_session.h"
#include "session/handoff.h"

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
	int32 route_buckets; /* > 0: an append sink without a bucket key (its buckets) */
	bool routed;		 /* its writer and bucket are picked (handoff_queue_route) */
	int32 routed_bucket; /* the bucket it is handed off under */
	uint64 fence_epoch;	 /* the lowest any statement of it saw */
	bool locked;		 /* holds its commit user's lock (stream_lock.c) */
	List *chunks;		 /* PendingChunk * */
	uint64 rows;
	List *marks; /* SavepointMark *, innermost last */
};

/* Per-transaction state, in TopTransactionContext. */
static List *pending_streams = NIL;
static PendingStream *last_stream = NULL;
static List *active_handoffs = NIL;
static ActiveHandoff **writer_handoffs = NULL; /* per writer, while open */
static bool sync_commit_forced = false;
static bool wake_committer_at_commit = false;
static bool want_database_at_commit = false;

/*
 * A DROP ran: the pre-commit looks whether the extension is gone, and the
 * commit then tells the launcher (extension_gone_at_commit, with the count
 * of CREATE EXTENSION commits it saw).
 */
static bool check_extension_at_commit = false;
static bool extension_gone_at_commit = false;
static uint64 extension_commits_seen = 0;
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
 * handoff_stream returns this transaction's buffer for a stream, creating
 * it on first use.  fence_epoch is the commit user's epoch the calling
 * statement read: the transaction keeps the lowest, since a recover() after
 * its first write fences all of it.  route_buckets is the sink's buckets
 * when it is an append sink without a bucket key, whose stream may go to
 * another writer than writer_index under another bucket number when that
 * writer does not answer (handoff_queue_route, at the first hand-off);
 * else 0.
 */
PendingStream *
handoff_stream(const StreamIdentity *stream, int writer_index, uint64 fence_epoch,
			   int32 route_buckets)
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
	pending->route_buckets = route_buckets;
	pending->routed_bucket = stream->bucket;
	pending->fence_epoch = fence_epoch;
	pending_streams = lappend(pending_streams, pending);
	MemoryContextSwitchTo(old);
	return last_stream = pending;
}

/*
 * handoff_wrote_sink tells whether this transaction holds rows written into
 * the sink sink_id (they wait to be handed to its writers at commit, or
 * were streamed to them already).  Rows a rolled back savepoint took back
 * do not count: the subtransaction callback took them off the stream's
 * count.  Raises nothing.
 */
bool
handoff_wrote_sink(int32 sink_id)
{
	ListCell *lc;

	foreach (lc, pending_streams)
	{
		PendingStream *stream = lfirst(lc);

		if (stream->id.sink_id == sink_id && stream->rows > 0)
			return true;
	}
	return false;
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
 * writers serve (a fenced writer whose process has not left counts: the
 * database goes on without it, see liveness.c).  The committer's flag,
 * which only the committer writes, is read without a lock: a stale value
 * only moves the end of the caller's wait by one poll.
 */
static bool
workers_ready(DatabaseEntry *db)
{
	if (!db->committer_ready)
		return false;
	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
		if (!liveness_writer_serves(shared_writer(db, w)))
			return false;
	return true;
}

/*
 * await_workers waits (interruptibly) until deadline for db's committer and
 * writers to serve, and returns whether they do (false: not in time).
 * Raises ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE at once when this
 * transaction created or updated the extension (they start on it only after
 * it commits), and ERRCODE_CONFIGURATION_LIMIT_EXCEEDED at once when the
 * worker budget has no room for them (budget.c): they would not come within
 * the wait.  The committer and each writer broadcast the database's
 * workers_ready as they start serving (and a committer the budget turns away
 * as it leaves), so the wait sleeps on it.
 */
static bool
await_workers(DatabaseEntry *db, TimestampTz deadline)
{
	bool ready;

	for (;;)
	{
		long remaining;

		ConditionVariablePrepareToSleep(&db->workers_ready);
		if ((ready = workers_ready(db)))
			break;

		/* they wait for our commit, and we for them: say so at once */
		if (extension_changed_here())
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("the workers of paimon_sink cannot serve this transaction"),
					 errdetail("This transaction created or updated extension paimon_sink; its "
							   "committer and writers start on it only after it commits."),
					 errhint("Commit the CREATE EXTENSION or ALTER EXTENSION first.")));
		/* before the remaining wait: a database the budget cannot serve waits for nothing */
		budget_require_workers(MyDatabaseId, ERROR, false);
		remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
		if (remaining <= 0)
			break;
		/* a second at most: the flag of a committer is read without its broadcast */
		(void) ConditionVariableTimedSleep(&db->workers_ready, Min(remaining, 1000),
										   wait_event_for(WAIT_WORKERS_READY));
	}
	ConditionVariableCancelSleep();
	return ready;
}

/*
 * handoff_database_index returns this database's entry and, when asked,
 * waits (interruptibly, up to paimon_sink.handoff_timeout) until its
 * committer and writers serve.  Raises ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE
 * when they do not in time, and the errors of await_workers at once.
 */
int
handoff_database_index(bool wait_for_writers)
{
	int index = shared_want_database(MyDatabaseId, true);
	TimestampTz deadline;

	if (!wait_for_writers)
		return index;
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), PaimonSinkHandoffTimeoutMs);
	if (!await_workers(shared_database(index), deadline))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the writers of this database are not running"),
				 errdetail("No committer and writers served database \"%s\" within %d ms.",
						   get_database_name(MyDatabaseId), PaimonSinkHandoffTimeoutMs),
				 errhint("Check that paimon_sink is in shared_preload_libraries and that "
						 "max_worker_processes leaves room for the launchers, one committer and "
						 "paimon_sink.writers_per_database writers per database, and for the "
						 "other background workers that run (parallel query, logical "
						 "replication).")));
	return index;
}

/*
 * handoff_wait_for_workers waits (interruptibly) up to timeout_ms
 * milliseconds until this database's committer and writers serve, and
 * returns whether they do (false: not in time).  restart_job() waits so for
 * the workers a crash-restart is still bringing back, with its own bound.
 * Raises the errors of await_workers at once.
 */
bool
handoff_wait_for_workers(long timeout_ms)
{
	DatabaseEntry *db = shared_database(shared_want_database(MyDatabaseId, true));

	return await_workers(db, TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms));
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
		MemoryContext old;

		writer_handoffs[w] = handoff_queue_open(db, w);
		old = MemoryContextSwitchTo(TopTransactionContext);
		active_handoffs = lappend(active_handoffs, writer_handoffs[w]);
		MemoryContextSwitchTo(old);
	}
	return writer_handoffs[w];
}

/*
 * route_stream picks, at a stream's first hand-off, the writer and bucket
 * of an append sink's stream without a bucket key: its own bucket's writer
 * when that answers, else another that does (handoff_queue_route).  Its
 * later chunks follow: a transaction's rows of one stream go to one writer.
 */
static void
route_stream(PendingStream *stream)
{
	if (stream->routed || stream->route_buckets == 0)
		return;
	stream->routed_bucket =
		handoff_queue_route(shared_database(handoff_database_index(false)), stream->id.sink_id,
							stream->id.bucket, stream->route_buckets, &stream->writer_index);
	stream->routed = true;
}

/*
 * lock_stream takes, before a stream's first hand-off, the lock that orders
 * the transaction against end_input() of the stream's commit user
 * (stream_lock.c), then takes in what committed meanwhile and refuses the
 * commit user if its input ended since the transaction's first write
 * (fdw_session_refuse_ended): its rows could never commit.  Raises
 * ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE for that, and what a lock wait
 * raises.
 */
static void
lock_stream(PendingStream *stream)
{
	if (stream->locked)
		return;
	stream_lock_for_write(stream->id.sink_id, stream->id.commit_user);
	AcceptInvalidationMessages();
	fdw_session_refuse_ended(stream->id.sink_id, &stream->id.sink_uuid, stream->id.commit_user);
	stream->locked = true;
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
	message.stream.bucket = stream->routed_bucket;
	message.row_count = chunk->rows;
	rows = chunk_rows(chunk, &length);
	handoff_queue_send(handoff, &message, rows, length);
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
	ActiveHandoff *handoff;
	PendingChunk *last = llast(stream->chunks);
	ListCell *lc;

	lock_stream(stream);
	route_stream(stream);
	handoff = writer_handoff(stream->writer_index);
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

	foreach (lc, pending_streams)
	{
		if (((PendingStream *) lfirst(lc))->rows == 0)
			continue;
		lock_stream(lfirst(lc));
		route_stream(lfirst(lc));
	}
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
		handoff_queue_send(handoff, &message, NULL, 0);
		handoff_queue_close(handoff);
	}

	foreach (lc, active_handoffs)
		handoff_queue_wait_ack(lfirst(lc));
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

/*
 * handoff_check_extension_at_commit makes this transaction's pre-commit
 * look whether extension paimon_sink is still installed (the utility hook
 * calls it after any DROP): if not, its commit tells the launcher to stop
 * wanting the database's workers.  A check of the catalog as the
 * transaction leaves it, so that a DROP rolled back to a savepoint, or
 * followed by CREATE EXTENSION, changes nothing.
 */
void
handoff_check_extension_at_commit(void)
{
	check_extension_at_commit = true;
}

/* reset_state forgets this transaction's hand-off state at its end. */
static void
reset_state(void)
{
	wake_committer_at_commit = false;
	want_database_at_commit = false;
	check_extension_at_commit = false;
	extension_gone_at_commit = false;
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
			if (check_extension_at_commit && !OidIsValid(get_extension_oid("paimon_sink", true)))
			{
				extension_gone_at_commit = true;
				extension_commits_seen = shared_extension_commits(MyDatabaseId);
			}
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
					handoff_queue_close(handoff);
				/* a failure nobody raised: the slot may serve again */
				handoff_failure_forget(handoff->writer, handoff->slot, handoff->generation);
			}
			reset_state();
			break;
		case XACT_EVENT_COMMIT:
			/* gone at the pre-commit: what this transaction created of it is gone too */
			if (extension_gone_at_commit)
				shared_extension_dropped(MyDatabaseId, extension_commits_seen);
			if (want_database_at_commit && !extension_gone_at_commit)
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
