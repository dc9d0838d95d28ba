/*-------------------------------------------------------------------------
 *
 * writer_seal.c
 *	  Sealing a writer's streams at a checkpoint barrier: which batches a
 *	  checkpoint takes, leaves out or carries forward.
 *
 * At a barrier the committer passes the snapshot it took at the barrier; a
 * batch goes into the checkpoint when its transaction is visible in that
 * snapshot, is left out when its transaction aborted (or began writing
 * before the commit user's last recover()), and is carried forward (copied
 * into the stream's next file) when its transaction was still running: so
 * a checkpoint holds exactly the transactions that committed before the
 * barrier, on every writer alike.  Sealed files are never rewritten; their
 * committable lists the offsets of the batches they leave out.  The rest of
 * the writer (its loop, hand-off receive, the files it appends to) is
 * writer.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "storage/procarray.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/snapshot.h"

#include "core/shared_state.h"
#include "ipc/barrier_protocol.h"
#include "ipc/liveness.h"
#include "writer/writer_internal.h"

/* Batch classes at a barrier (see classify). */
typedef enum BatchClass
{
	BATCH_TAKE,
	BATCH_DROP,
	BATCH_CARRY,
	BATCH_FENCED
} BatchClass;

/*
 * classify decides a batch's fate at a barrier: taken when its transaction
 * committed before the barrier's snapshot, carried when it was running,
 * dropped when it aborted.  A batch whose transaction began writing before
 * the commit user's last recover() (its epoch is older than the barrier's)
 * is fenced: the job restored from a checkpoint and replays those rows
 * itself, so they are left out whether that transaction committed before,
 * during or after the recovery.
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
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
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

/*
 * writer_stream_committed_rows counts the rows of a stream's open files
 * whose transactions committed before snapshot, as a barrier would take
 * them (fence epochs aside): what a prepare of the stream would record.
 */
uint64
writer_stream_committed_rows(const Stream *stream, Snapshot snapshot)
{
	uint64 rows = 0;
	ListCell *lc;

	foreach (lc, stream->open_files)
	{
		OpenFile *file = lfirst(lc);

		for (int b = 0; b < file->batch_count; b++)
			if (classify(&file->batches[b], snapshot, 0) == BATCH_TAKE)
				rows += file->batches[b].rows;
	}
	return rows;
}

/*
 * writer_seal_stream seals every open file of a stream against the
 * barrier's snapshot: each batch is taken, left out (aborted, or fenced by a
 * later recover()) or carried into the stream's next file (still running);
 * a streaming transaction still running keeps its own file open.
 */
void
writer_seal_stream(Stream *stream, Snapshot snapshot, uint64 barrier_seq, uint64 fence_epoch)
{
	List *files = stream->open_files;
	ListCell *lc;
	StringInfoData payload;
	bool carried = false;
	uint64 fenced_rows = 0;
	List *kept = NIL;
	MemoryContext old_files;

	if (files == NIL)
		return;
	stream->open_files = NIL;
	initStringInfo(&payload);
	foreach (lc, files)
	{
		OpenFile *file = lfirst(lc);
		MemoryContext old;
		SealedFile *sealed;
		int excluded = 0;

		/* a streaming transaction still running keeps its own file open */
		if (file->owner_xid != 0 && file->batch_count > 0 &&
			classify(&file->batches[0], snapshot, fence_epoch) == BATCH_CARRY)
		{
			old = MemoryContextSwitchTo(WriterContext);
			kept = lappend(kept, file);
			MemoryContextSwitchTo(old);
			continue;
		}
		old = MemoryContextSwitchTo(WriterContext);
		sealed = palloc0(sizeof(SealedFile));

		sealed->excluded = palloc(sizeof(int64) * Max(1, file->record_count));
		MemoryContextSwitchTo(old);
		sealed->record.kind = BARRIER_RECORD_COMMITTABLE;
		sealed->record.stream = stream->id;
		strlcpy(sealed->record.file_name, file->name, sizeof(sealed->record.file_name));
		sealed->record.max_sequence = (int64) file->max_sequence;
		for (int b = 0; b < file->batch_count; b++)
		{
			BatchInfo *batch = &file->batches[b];
			BatchClass class = classify(batch, snapshot, fence_epoch);
			off_t offset = batch->offset;

			liveness_beat(MyWriter);
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

				liveness_beat(MyWriter); /* a long transaction's records, one by one */
				if (class == BATCH_CARRY ? !staged_file_read_batch(file->file, file->path, offset,
																   file->size, &header, &payload)
										 : !staged_file_read_header(file->file, file->path, offset,
																	file->size, &header))
					ereport(ERROR,
							(errcode(ERRCODE_DATA_CORRUPTED),
							 errmsg("staged file \"%s\" has an unreadable batch at offset %lld",
									file->path, (long long) offset)));
				if (class == BATCH_CARRY)
				{
					OpenFile *into = writer_append_batch(
						stream, batch->full_xid, batch->fence_epoch, header.row_count, payload.data,
						payload.len, file->name, offset, false, header.first_sequence);

					/* a carried batch keeps its first staging's time (writer_open_stats.c) */
					if (file->staged_at != 0 && file->staged_at < into->staged_at)
						into->staged_at = file->staged_at;
					carried = true;
				}
				sealed->excluded[excluded++] = offset;
				offset += sizeof(header) + header.payload_length;
			}
		}
		sealed->record.excluded_count = excluded;
		sealed->reported_seq = barrier_seq;
		/* a failed write whose tail could not be cut then (writer_append_batch) */
		if (FileSize(file->file) > file->size)
			staged_file_truncate(file->file, file->path, file->size, FileSize(file->file));
		/* fsynced as the window closes, not before the barrier's reply */
		if (file->dirty)
			writer_window_add_sealed(file->path);
		FileClose(file->file);
		pg_atomic_fetch_sub_u32(&MyWriter->files_open, 1);
		if (file->batches)
			pfree(file->batches);
		pfree(file);
		old = MemoryContextSwitchTo(WriterContext);
		stream->sealed = lappend(stream->sealed, sealed);
		MemoryContextSwitchTo(old);
	}
	list_free(files);
	pfree(payload.data);
	old_files = MemoryContextSwitchTo(WriterContext);
	stream->open_files = list_concat(kept, stream->open_files);
	MemoryContextSwitchTo(old_files);
	if (fenced_rows > 0)
		ereport(LOG, (errmsg("paimon_sink left out %llu rows of commit user \"%s\" of sink %d "
							 "written before its last recover()",
							 (unsigned long long) fenced_rows, stream->id.commit_user,
							 stream->id.sink_id),
					  errdetail("Their transactions began writing under fence epoch %llu or lower; "
								"the job replays them from its restored checkpoint.",
								(unsigned long long) fence_epoch - 1)));
	/* carried copies (and their new file) must be durable before the committable leaving them out is */
	if (carried)
		writer_sync_window();
}
