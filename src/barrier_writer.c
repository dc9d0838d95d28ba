/*-------------------------------------------------------------------------
 *
 * barrier_writer.c
 *	  The writer's end of the barrier protocol: answering the committer's
 *	  barrier requests on their reply queues.
 *
 * A barrier seals the streams it concerns against the snapshot the
 * committer took (the sealing itself is writer.c's), discards them when a
 * job restores from an earlier checkpoint, or lists their files for orphan
 * removal; the writer sends one record per file, and the sealed files it
 * reported stay until the committer confirms that barrier.  The committer's
 * end is in committer.c.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <unistd.h>

#include "barrier_writer.h"
#include "miscadmin.h"
#include "shared_state.h"
#include "storage/shm_mq.h"
#include "utils/snapshot.h"
#include "writer_internal.h"

static shm_mq_handle *barrier_queue; /* while answering a barrier */

/*
 * stream_matches tells whether a stream is one the barrier concerns: its
 * sink (by id and incarnation), and its commit user and writer id when the
 * barrier names them.  The barrier area is read without the mutex: the
 * committer wrote it before it set BARRIER_REQUESTED under the mutex, which
 * this writer read under the mutex, and leaves it alone until the writer
 * sets BARRIER_IDLE again.
 */
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
		if (unlink(file->path) != 0 && errno != ENOENT)
			ereport(WARNING, (errcode_for_file_access(),
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
 * barrier_writer_answer answers a barrier of the committer, if one waits:
 * what was received is made durable first, then every stream the barrier
 * concerns is sealed, discarded or listed, and its files are sent on the
 * reply queue, ended by BARRIER_RECORD_END.  The barrier's fields are read
 * without the mutex once BARRIER_REQUESTED was seen under it (see
 * stream_matches).
 */
void
barrier_writer_answer(void)
{
	SnapshotData snapshot;
	shm_mq_handle *queue;
	HASH_SEQ_STATUS status;
	Stream *stream;
	uint64 barrier_seq;
	bool failed = false;
	CommittableRecord end;
	int kind;

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
	writer_acknowledge_handoffs();
	forget_confirmed();

	memset(&snapshot, 0, sizeof(snapshot));
	snapshot.snapshot_type = SNAPSHOT_MVCC;
	snapshot.xmin = MyWriter->barrier_xmin;
	snapshot.xmax = MyWriter->barrier_xmax;
	snapshot.xcnt = MyWriter->barrier_xcnt;
	snapshot.xip = shared_address(MyWriter->barrier_xip_offset);

	queue = barrier_queue =
		shm_mq_attach(shared_address(MyWriter->barrier_queue_offset), NULL, NULL);

	hash_seq_init(&status, WriterStreams);
	while ((stream = hash_seq_search(&status)) != NULL)
	{
		ListCell *lc;

		if (!stream_matches(stream))
			continue;
		if (kind == BARRIER_SEAL)
			writer_seal_stream(stream, &snapshot, barrier_seq, MyWriter->barrier_fence_epoch);
		else if (kind == BARRIER_DISCARD)
			discard_stream(stream, queue, &failed);
		else if (kind == BARRIER_LIST)
		{
			foreach (lc, stream->open_files)
			{
				OpenFile *file = lfirst(lc);
				CommittableRecord record;

				memset(&record, 0, sizeof(record));
				record.kind = BARRIER_RECORD_COMMITTABLE;
				record.stream = stream->id;
				strlcpy(record.file_name, file->name, sizeof(record.file_name));
				if (!failed &&
					shm_mq_send(queue, sizeof(record), &record, false, true) != SHM_MQ_SUCCESS)
					failed = true;
			}
		}
		foreach (lc, stream->sealed)
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

/*
 * barrier_writer_exit detaches the reply queue of a barrier being answered,
 * so that the committer sees SHM_MQ_DETACHED instead of waiting, and leaves
 * the barrier area idle (from the writer's exit callback).
 */
void
barrier_writer_exit(void)
{
	if (barrier_queue != NULL)
		shm_mq_detach(barrier_queue);
	barrier_queue = NULL;
	SpinLockAcquire(&MyWriter->mutex);
	MyWriter->barrier_state = BARRIER_IDLE;
	SpinLockRelease(&MyWriter->mutex);
}
