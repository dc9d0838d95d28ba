/*-------------------------------------------------------------------------
 *
 * writer_barrier.c
 *	  The writer's end of the checkpoint barrier (the committer's is
 *	  committer/barrier.c, the records ipc/barrier_protocol.h).
 *
 * writer_barrier_answer, from the writer's loop, seals the streams the
 * barrier concerns against the committer's snapshot (the sealing itself is
 * writer_seal.c's), discards them when a job restores from an earlier
 * checkpoint, drops what it sealed when the prepare is a replay of a
 * committed checkpoint, lists their files for orphan removal, or counts
 * the rows each holds; it sends one record per file (or per stream), and
 * the sealed files it reported stay until the committer confirms that
 * barrier.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "storage/spin.h"
#include "utils/hsearch.h"
#include "utils/snapshot.h"

#include "core/shared_state.h"
#include "ipc/barrier_protocol.h"
#include "ipc/liveness.h"
#include "staging/staged_file.h"
#include "writer/writer_barrier.h"
#include "writer/writer_internal.h"
#include "writer/writer_open_stats.h"

static shm_mq_handle *barrier_queue; /* while answering a barrier */

/*
 * send_record sends one record (its iovcnt parts) on the reply queue,
 * unless a send failed before: the committer detached, or read nothing
 * for paimon_sink.handoff_timeout (liveness_committer_reads), when the
 * writer gives its answer up rather than wait on, and detaches.
 */
static void
send_record(shm_mq_handle *queue, shm_mq_iovec *iov, int iovcnt, bool *failed)
{
	if (*failed)
		return;
	if (liveness_sendv(queue, iov, iovcnt, liveness_committer_reads, MyWriter) != SHM_MQ_SUCCESS)
		*failed = true;
}

/*
 * stream_barrier_sink returns the sink of the barrier that a stream belongs
 * to, or NULL when the barrier does not concern the stream: its sink (by
 * id and incarnation) is one of the barrier's, and so are its commit user
 * (unless the barrier's sink names none) and its writer id (unless the
 * barrier names none).  The barrier area is read without the mutex: the
 * committer wrote it before it set BARRIER_REQUESTED under the mutex,
 * which this writer read under the mutex, and leaves it alone until the
 * writer sets BARRIER_IDLE again.
 */
static const BarrierSink *
stream_barrier_sink(const Stream *stream)
{
	if (MyWriter->barrier_writer_id >= 0 && stream->id.writer_id != MyWriter->barrier_writer_id)
		return NULL;
	for (int i = 0; i < MyWriter->barrier_sink_count; i++)
	{
		const BarrierSink *sink = &MyWriter->barrier_sinks[i];

		if (stream->id.sink_id == sink->sink_id &&
			memcmp(&stream->id.sink_uuid, &sink->sink_uuid, sizeof(pg_uuid_t)) == 0 &&
			(sink->commit_user[0] == '\0' ||
			 strcmp(stream->id.commit_user, sink->commit_user) == 0))
			return sink;
	}
	return NULL;
}

/*
 * discard_stream removes a stream's open files, each reported as removed
 * (BARRIER_RECORD_DISCARDED).  A job restores from an earlier checkpoint:
 * the rows it staged since are
 * replayed by its source, so the stream's open files go, each reported as
 * removed.  Sealed files are reported after it so that the committer removes
 * those no kept checkpoint records.
 */
static void
discard_stream(Stream *stream, shm_mq_handle *queue, bool *failed)
{
	ListCell *lc;

	foreach (lc, stream->open_files)
	{
		OpenFile *file = lfirst(lc);

		FileClose(file->file);
		if (staged_file_remove(file->path) != 0 && errno != ENOENT)
			ereport(WARNING, (errcode_for_file_access(),
							  errmsg("could not remove staged file \"%s\": %m", file->path)));
		else
		{
			CommittableRecord record;
			shm_mq_iovec iov;

			memset(&record, 0, sizeof(record));
			record.kind = BARRIER_RECORD_DISCARDED;
			record.stream = stream->id;
			strlcpy(record.file_name, file->name, sizeof(record.file_name));
			iov.data = (const char *) &record;
			iov.len = sizeof(record);
			send_record(queue, &iov, 1, failed);
		}
		pg_atomic_fetch_sub_u32(&MyWriter->files_open, 1);
		if (file->batches)
			pfree(file->batches);
		pfree(file);
	}
	list_free(stream->open_files);
	stream->open_files = NIL;
}

/*
 * send_stream_record sends a record of a stream on the reply queue (kind,
 * file name or "", rows); *failed is set, and nothing more is sent, once a
 * send fails.
 */
static void
send_stream_record(shm_mq_handle *queue, uint32 kind, const Stream *stream, const char *file_name,
				   int64 rows, bool *failed)
{
	CommittableRecord record;

	if (*failed)
		return;
	memset(&record, 0, sizeof(record));
	record.kind = kind;
	record.stream = stream->id;
	strlcpy(record.file_name, file_name, sizeof(record.file_name));
	record.row_count = rows;
	if (shm_mq_send(queue, sizeof(record), &record, false, true) != SHM_MQ_SUCCESS)
		*failed = true;
}

/*
 * drop_sealed removes the files of a stream that this barrier sealed (those
 * from index first of its sealed list on), each reported with its rows as
 * BARRIER_RECORD_DROPPED: a prepare refused because its checkpoint id is
 * committed already drops the rows written for it, as Paimon's committer
 * drops committables at or below the committed identifier.  Their removal
 * is logged and flushed first (staged_file_remove), so that no restart
 * adopts them again; carried copies of running transactions' batches are
 * in the stream's next file and count once their origin is gone.  Files of
 * an earlier barrier that was not confirmed stay: they may be recorded.
 */
static void
drop_sealed(Stream *stream, int first, shm_mq_handle *queue, bool *failed)
{
	ListCell *lc;

	foreach (lc, stream->sealed)
	{
		SealedFile *sealed = lfirst(lc);
		char path[MAXPGPATH];

		if (foreach_current_index(lc) < first)
			continue;
		staged_file_path(path, MyDatabaseId, stream->id.sink_id, sealed->record.file_name);
		if (staged_file_remove(path) != 0 && errno != ENOENT)
			ereport(WARNING, (errcode_for_file_access(),
							  errmsg("could not remove staged file \"%s\": %m", path),
							  errhint("paimon_sink.remove_orphan_files() removes it later.")));
		send_stream_record(queue, BARRIER_RECORD_DROPPED, stream, sealed->record.file_name,
						   sealed->record.row_count, failed);
		stream->sealed = foreach_delete_current(stream->sealed, lc);
		pfree(sealed->excluded);
		pfree(sealed);
	}
}

/*
 * publish_sinks_held recomputes WriterEntry.sinks_held from the streams
 * that hold files, open or sealed: at the end of a barrier answer, when no
 * barrier of the committer can look at it (it waits for this answer).
 */
static void
publish_sinks_held(void)
{
	HASH_SEQ_STATUS status;
	Stream *stream;
	uint64 held = 0;

	hash_seq_init(&status, WriterStreams);
	while ((stream = hash_seq_search(&status)) != NULL)
		if (stream->open_files != NIL || stream->sealed != NIL)
			held |= SINK_HELD_BIT(stream->id.sink_id);
	pg_atomic_write_u64(&MyWriter->sinks_held, held);
}

/* forget_confirmed forgets the sealed files the committer has recorded. */
static void
forget_confirmed(void)
{
	HASH_SEQ_STATUS status;
	Stream *stream;
	uint64 confirmed;

	SpinLockAcquire(&MyWriter->mutex);
	confirmed = MyWriter->confirmed_barrier_seq;
	SpinLockRelease(&MyWriter->mutex);

	hash_seq_init(&status, WriterStreams);
	while ((stream = hash_seq_search(&status)) != NULL)
	{
		ListCell *lc;

		foreach (lc, stream->sealed)
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
 * writer_barrier_answer answers a barrier of the committer, if one waits:
 * what was received is made durable first, then every stream the barrier
 * concerns is sealed, discarded or listed, and its files are sent on the
 * reply queue, ended by BARRIER_RECORD_END.  The barrier's fields are read
 * without the mutex once BARRIER_REQUESTED was seen under it (see
 * stream_barrier_sink).
 */
void
writer_barrier_answer(void)
{
	SnapshotData snapshot;
	shm_mq_handle *queue;
	HASH_SEQ_STATUS status;
	Stream *stream;
	uint64 barrier_seq;
	bool failed = false;
	CommittableRecord end;
	shm_mq_iovec end_iov;
	int kind;

	SpinLockAcquire(&MyWriter->mutex);
	/* a fenced writer answers nothing: its committer gave the barrier up */
	if (MyWriter->barrier_state != BARRIER_REQUESTED || MyWriter->fenced)
	{
		SpinLockRelease(&MyWriter->mutex);
		return;
	}
	MyWriter->barrier_state = BARRIER_ANSWERING;
	barrier_seq = MyWriter->barrier_seq;
	kind = MyWriter->barrier_kind;
	SpinLockRelease(&MyWriter->mutex);

	/*
	 * Everything received so far is acknowledged first.  Nothing is fsynced
	 * here: the files sealed go to the sync window (writer_window_add_sealed
	 * says why that is enough), which closes on its own schedule.
	 */
	writer_acknowledge_handoffs();
	forget_confirmed();

	memset(&snapshot, 0, sizeof(snapshot));
	snapshot.snapshot_type = SNAPSHOT_MVCC;
	snapshot.xmin = MyWriter->barrier_xmin;
	snapshot.xmax = MyWriter->barrier_xmax;
	snapshot.xcnt = MyWriter->barrier_xcnt;
	snapshot.xip = shared_address(MyWriter->barrier_xip_offset);

	/* the sender named before attaching: the committer's handle then covers its whole wait */
	shm_mq_set_sender(shared_address(MyWriter->barrier_queue_offset), MyProc);
	queue = barrier_queue =
		shm_mq_attach(shared_address(MyWriter->barrier_queue_offset), NULL, NULL);

	hash_seq_init(&status, WriterStreams);
	while ((stream = hash_seq_search(&status)) != NULL)
	{
		const BarrierSink *sink = stream_barrier_sink(stream);
		ListCell *lc;

		if (sink == NULL)
			continue;
		if (kind == BARRIER_STAGED)
		{
			/* only counted: nothing sealed, and no sealed file reported */
			int64 rows = (int64) writer_stream_committed_rows(stream, &snapshot);

			if (rows > 0)
				send_stream_record(queue, BARRIER_RECORD_STAGED, stream, "", rows, &failed);
			continue;
		}
		if (kind == BARRIER_SEAL || kind == BARRIER_DROP)
		{
			int first = list_length(stream->sealed);

			writer_seal_stream(stream, &snapshot, barrier_seq, sink->fence_epoch);
			if (kind == BARRIER_DROP)
				drop_sealed(stream, first, queue, &failed);
		}
		else if (kind == BARRIER_DISCARD)
			discard_stream(stream, queue, &failed);
		else if (kind == BARRIER_LIST)
		{
			foreach (lc, stream->open_files)
			{
				OpenFile *file = lfirst(lc);
				CommittableRecord record;
				shm_mq_iovec iov;

				memset(&record, 0, sizeof(record));
				record.kind = BARRIER_RECORD_COMMITTABLE;
				record.stream = stream->id;
				strlcpy(record.file_name, file->name, sizeof(record.file_name));
				iov.data = (const char *) &record;
				iov.len = sizeof(record);
				send_record(queue, &iov, 1, &failed);
			}
		}
		foreach (lc, stream->sealed)
		{
			SealedFile *sealed = lfirst(lc);
			shm_mq_iovec iov[2];

			sealed->reported_seq = barrier_seq;
			iov[0].data = (const char *) &sealed->record;
			iov[0].len = sizeof(sealed->record);
			iov[1].data = (const char *) sealed->excluded;
			iov[1].len = sizeof(int64) * sealed->record.excluded_count;
			send_record(queue, iov, 2, &failed);
		}
		if (kind == BARRIER_DISCARD)
		{
			list_free_deep(stream->sealed);
			stream->sealed = NIL;
		}
	}
	/*
	 * What it sealed, dropped or discarded leaves the open rows of
	 * sink_stats before the committer, which records the checkpoint after
	 * the end record, can answer: a reader never sees them open and pending
	 * at once.
	 */
	writer_open_stats_publish();
	memset(&end, 0, sizeof(end));
	end.kind = BARRIER_RECORD_END;
	end_iov.data = (const char *) &end;
	end_iov.len = sizeof(end);
	send_record(queue, &end_iov, 1, &failed);
	shm_mq_detach(queue);
	barrier_queue = NULL;
	publish_sinks_held();

	SpinLockAcquire(&MyWriter->mutex);
	MyWriter->barrier_state = BARRIER_IDLE;
	SpinLockRelease(&MyWriter->mutex);
}

/*
 * writer_barrier_exit detaches the reply queue of a barrier being answered,
 * so that the committer sees SHM_MQ_DETACHED instead of waiting, and leaves
 * the barrier area idle (from the writer's exit callback).
 */
void
writer_barrier_exit(void)
{
	if (barrier_queue != NULL)
		shm_mq_detach(barrier_queue);
	barrier_queue = NULL;
	SpinLockAcquire(&MyWriter->mutex);
	MyWriter->barrier_state = BARRIER_IDLE;
	SpinLockRelease(&MyWriter->mutex);
}
