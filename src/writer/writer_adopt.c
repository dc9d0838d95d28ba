/*-------------------------------------------------------------------------
 *
 * writer_adopt.c
 *	  Rebuilding a writer's streams from its staged files after a restart.
 *
 * A writer that starts adopts the staged files of its buckets that no
 * committable refers to, and rebuilds from them the state it had: their
 * batches with their transactions and fence epochs, and each bucket's next
 * sequence number.  A carried copy counts only when the file it came from
 * was recorded (or is gone, committed).
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
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "core/constants.h"
#include "ipc/handoff_queue.h"
#include "metadata/catalog.h"
#include "metadata/metadata.h"
#include "staging/staged_file.h"
#include "staging/staged_wal.h"
#include "writer/writer_adopt.h"
#include "writer/writer_internal.h"

/*
 * file_is_recorded tells whether a staged file is recorded as a committable
 * (of a pending or a committed checkpoint).
 */
static bool
file_is_recorded(const char *file_name)
{
	return metadata_file_record(file_name) != FILE_NOT_RECORDED;
}

/*
 * batch_may_count tells whether a batch's transaction committed or may
 * still commit.  One that did neither never reaches a checkpoint.  An xid
 * outside the range still known counts: the barrier reports it.
 */
static bool
batch_may_count(const BatchInfo *batch)
{
	uint64 next = U64FromFullTransactionId(ReadNextFullTransactionId());
	TransactionId xid = (TransactionId) batch->full_xid;

	if (batch->dead)
		return false;
	if (batch->full_xid >= next || next - batch->full_xid > (uint64) 1 << 30)
		return true;
	return TransactionIdIsInProgress(xid) || TransactionIdDidCommit(xid);
}

/*
 * adopt_file adopts one staged file that no committable records into its
 * stream: it reads its batches (a carried copy counts only when its
 * original was recorded or is gone), raises its bucket's sequence above
 * them and cuts a torn tail.  A file of another writer, a recorded one and
 * one of no existing sink are left alone.
 *
 * A crash can leave a file here that its WAL records do not describe: a
 * file and its batches are written before they are logged (staged_file.c),
 * and the crash can lose records not yet flushed, while the page cache
 * keeps the file.  Such a file or tail holds no acknowledged batch, since a
 * writer acknowledges only after logging; it must not reach a checkpoint
 * that a node replaying the WAL could not commit.  So every adopted file's
 * end is logged (nodes that replay cut what they hold beyond it), and a
 * file with no batch of a committed or running transaction is removed
 * rather than adopted.
 */
static void
adopt_file(const char *path, const char *name)
{
	StreamIdentity id;
	off_t offset;
	off_t size;
	File handle;
	OpenFile *file;
	Stream *stream;
	MemoryContext old;
	SinkInfo sink;
	bool may_count = false;

	memset(&id, 0, sizeof(id));
	handle = staged_file_open(path, &id, &offset, LOG);
	if (handle < 0)
		return; /* removed meanwhile, or not a staged file */
	if (handoff_queue_writer_for(id.sink_id, id.bucket) != MyWriterIndex || file_is_recorded(name))
	{
		FileClose(handle);
		return;
	}
	/* a file of an earlier sink with the same id (before DROP EXTENSION) */
	if (!metadata_sink_by_id(id.sink_id, &sink) ||
		memcmp(&sink.sink_uuid, &id.sink_uuid, sizeof(pg_uuid_t)) != 0)
	{
		ereport(LOG, (errmsg("paimon_sink writer leaves staged file \"%s\" alone: it belongs to no "
							 "existing sink",
							 path),
					  errhint("paimon_sink.remove_orphan_files() removes it.")));
		FileClose(handle);
		return;
	}

	old = MemoryContextSwitchTo(WriterContext);
	file = palloc0(sizeof(OpenFile));
	MemoryContextSwitchTo(old);
	strlcpy(file->name, name, sizeof(file->name));
	strlcpy(file->path, path, sizeof(file->path));
	file->file = handle;
	size = FileSize(handle);
	for (;;)
	{
		StagedBatchHeader header;
		bool dead = false;

		if (!staged_file_read_batch(handle, path, offset, size, &header, NULL))
			break;
		if (header.origin_offset != 0)
		{
			char origin_name[STAGED_FILE_NAME_LENGTH + 1];
			char origin_path[MAXPGPATH];
			struct stat st;

			uuid_unparse_lower(header.origin_file, origin_name);
			strcat(origin_name, ".stage");
			staged_file_path(origin_path, MyDatabaseId, id.sink_id, origin_name);
			/* the copy stands only if its original was left out for good */
			dead = !file_is_recorded(origin_name) && stat(origin_path, &st) == 0;
		}
		writer_add_batch(file, offset, sizeof(header) + header.payload_length, header.row_count,
						 header.full_xid, header.fence_epoch, dead);
		if (header.row_count > 0)
		{
			uint64 last = header.first_sequence + header.row_count - 1;

			file->max_sequence = Max(file->max_sequence, last);
			writer_raise_sequence(id.sink_id, id.bucket, last);
		}
		offset += sizeof(header) + header.payload_length;
	}
	if (offset < size)
	{
		ereport(LOG, (errmsg("paimon_sink writer truncates the torn tail of staged file \"%s\" at "
							 "%lld of %lld bytes",
							 path, (long long) offset, (long long) size)));
		pg_atomic_fetch_add_u64(&MyWriter->fsyncs, 1);
	}
	staged_file_truncate(handle, path, offset, size);
	for (int b = 0; b < file->batch_count; b++)
		if (batch_may_count(&file->batches[b]))
			may_count = true;
	if (!may_count)
	{
		FileClose(handle);
		if (file->batches)
			pfree(file->batches);
		pfree(file);
		if (staged_file_remove(path) != 0 && errno != ENOENT)
			ereport(WARNING, (errcode_for_file_access(),
							  errmsg("could not remove staged file \"%s\": %m", path)));
		else
			ereport(LOG, (errmsg("paimon_sink writer removed staged file \"%s\": it holds no row "
								 "of a committed or running transaction",
								 path)));
		return;
	}
	file->size = offset;
	file->appendable = false;
	/* its first staging's time is not recorded: its age counts from here */
	file->staged_at = GetCurrentTimestamp();
	stream = writer_get_stream(&id);
	pg_atomic_fetch_or_u64(&MyWriter->sinks_held, SINK_HELD_BIT(id.sink_id));
	old = MemoryContextSwitchTo(WriterContext);
	stream->open_files = lappend(stream->open_files, file);
	MemoryContextSwitchTo(old);
	pg_atomic_fetch_add_u32(&MyWriter->files_open, 1);
	for (int b = 0; b < file->batch_count; b++)
		pg_atomic_fetch_add_u64(&MyWriter->rows_staged, file->batches[b].rows);
}

/*
 * writer_adopt_files adopts the staged files of this writer's streams
 * after a (re)start, and continues each bucket's sequence above what its
 * committables and bucket_sequence hold.  It runs its own transaction.
 */
void
writer_adopt_files(void)
{
	char database_path[MAXPGPATH];
	DIR *sinks;
	struct dirent *sink_entry;
	ListCell *lc;

	/* batches a recovery without redo left uncut (staged_wal.c), before any writer serves */
	staged_wal_cut_if_no_redo();
	snprintf(database_path, sizeof(database_path), "%s/%u", PAIMON_SINK_DIRECTORY, MyDatabaseId);
	sinks = AllocateDir(database_path);
	if (sinks == NULL)
		return;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	/* committed files are gone: their committables (or, expired, bucket_sequence) keep their numbers */
	foreach (lc, metadata_bucket_sequences())
	{
		BucketSequenceRow *sequence = lfirst(lc);

		if (handoff_queue_writer_for(sequence->sink_id, sequence->bucket) == MyWriterIndex)
			writer_raise_sequence(sequence->sink_id, sequence->bucket,
								  (uint64) sequence->max_sequence);
	}
	while ((sink_entry = ReadDir(sinks, database_path)) != NULL)
	{
		char sink_path[MAXPGPATH];
		DIR *files;
		struct dirent *file_entry;

		if (strspn(sink_entry->d_name, "0123456789") != strlen(sink_entry->d_name) ||
			sink_entry->d_name[0] == '\0')
			continue;
		snprintf(sink_path, sizeof(sink_path), "%s/%s", database_path, sink_entry->d_name);
		files = AllocateDir(sink_path);
		while ((file_entry = ReadDir(files, sink_path)) != NULL)
		{
			char path[MAXPGPATH];

			snprintf(path, sizeof(path), "%s/%s", sink_path, file_entry->d_name);
			/*
			 * A header this writer was making when it ended never became a
			 * file.  Its removal needs no WAL record: redo never makes
			 * temporary files (it creates a file under its name at once).
			 */
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
	CommitTransactionCommand();
}
