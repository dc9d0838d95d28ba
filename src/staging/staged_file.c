/*-------------------------------------------------------------------------
 *
 * staged_file.c
 *	  Creating, appending to and reading staged files.
 *
 * Paths are built from the database oid, the sink id and a libuuid name
 * only: nothing a user typed ever becomes part of a path.  A new file and
 * its entry in its folder are fsynced by the writer when its sync window
 * closes (writer.c), before a committable refers to the file and before a
 * checkpoint whose redo point follows the file's record completes; until
 * then the file's record is what makes it durable.  A new folder is
 * fsynced into its parent at once (rare, and no record names folders).
 *
 * Every change made here is also a WAL record of paimon_sink's resource
 * manager (staged_wal.c): the creation with its header, each batch record,
 * a torn tail cut and a removal.  So every node that replays the WAL has
 * the same files, and a batch is in the WAL before the commit record of the
 * transaction it belongs to (its writer logs it before acknowledging).
 *
 * A new file and a batch are logged just after they are written, a cut
 * and a removal just before they are made.  A checkpoint does not wait for
 * a process between the two steps unless it holds DELAY_CHKPT_START with a
 * virtual transaction id: a writer does while its sync window is open
 * (writer.c), which covers its creations and batches, but the order below
 * does not rely on it, and cuts and removals are made outside a window (by
 * a writer adopting files, a barrier's discard, the committer).  The redo
 * of a base backup starts at its checkpoint: a creation or batch logged
 * before that checkpoint and written after the backup copied the folder
 * would be in neither the copy nor the redo, leaving a committed batch out (a hole that cuts the file
 * there, or a missing file whose later batches redo skips).  Written
 * first, it is in the copy whenever its record is older than the
 * checkpoint.  Bytes written and never logged (a crash between the two)
 * belong to no committed transaction: the acknowledgement comes after the
 * record, and a transaction commits only once acknowledged.  A cut or a
 * removal logged first and made after the copy is made again by the
 * writer (a torn tail) or by the committer (committed files), or fenced
 * (files recover() discarded).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "access/xlog.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "port/pg_crc32c.h"

#include "core/fault.h"
#include "staging/staged_file.h"
#include "staging/staged_wal.h"

/* staged_file_directory fills path (MAXPGPATH) with a sink's folder. */
void
staged_file_directory(char *path, Oid database_id, int32 sink_id)
{
	snprintf(path, MAXPGPATH, "%s/%u/%d", PAIMON_SINK_DIRECTORY, database_id, sink_id);
}

/*
 * staged_file_path fills path (MAXPGPATH) with a staged file's path.  The
 * name must be a staged file's ("<uuid>.stage"): a name read from the
 * catalog (which a restored dump fills) never becomes a path otherwise.
 * Raises ERRCODE_DATA_CORRUPTED for any other name; callers that must not
 * fail check staged_file_name_is_valid first.
 */
void
staged_file_path(char *path, Oid database_id, int32 sink_id, const char *file_name)
{
	if (!staged_file_name_is_valid(file_name))
		ereport(
			ERROR,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("\"%s\" is not the name of a staged file of sink %d", file_name, sink_id),
			 errdetail("Staged files are named <uuid>.stage; no other name is made into a path."),
			 errhint("The name comes from paimon_sink.committable; a superuser deletes that row (a "
					 "restored dump may have brought it).")));
	snprintf(path, MAXPGPATH, "%s/%u/%d/%s", PAIMON_SINK_DIRECTORY, database_id, sink_id,
			 file_name);
}

/*
 * path_identity reads the database oid, sink id and file name back from a
 * path staged_file_path built (or a temporary header's); the WAL records
 * name files by these.  Any other path is a bug: an error.
 */
static void
path_identity(const char *path, Oid *database_id, int32 *sink_id, char *name)
{
	char rebuilt[MAXPGPATH];
	char format[64];

	snprintf(format, sizeof(format), "%s/%%u/%%d/%%%ds", PAIMON_SINK_DIRECTORY,
			 STAGED_WAL_NAME_BYTES - 1);
	if (sscanf(path, format, database_id, sink_id, name) != 3)
		elog(ERROR, "\"%s\" is not the path of a staged file", path);
	snprintf(rebuilt, sizeof(rebuilt), "%s/%u/%d/%s", PAIMON_SINK_DIRECTORY, *database_id, *sink_id,
			 name);
	if (strcmp(rebuilt, path) != 0)
		elog(ERROR, "\"%s\" is not the path of a staged file", path);
}

/* staged_file_name_is_valid accepts "<lower-case uuid>.stage" only. */
bool
staged_file_name_is_valid(const char *file_name)
{
	uint8 uuid[STAGED_FILE_UUID_BYTES];

	return staged_file_name_to_uuid(file_name, uuid);
}

/*
 * staged_file_temporary_creator: for "<uuid>.stage.<writer>.tmp", the name a
 * file has until its header is durable, the index of the writer creating it;
 * -1 for any other name.  A crash can leave such a file behind; only its
 * creator removes it (when it starts), so no writer removes one being made.
 */
int
staged_file_temporary_creator(const char *file_name)
{
	char staged[STAGED_FILE_NAME_LENGTH + 1];
	const char *rest;
	char *end;
	long creator;

	if (strlen(file_name) <= STAGED_FILE_NAME_LENGTH + 1)
		return -1;
	strlcpy(staged, file_name, sizeof(staged));
	rest = file_name + STAGED_FILE_NAME_LENGTH;
	if (!staged_file_name_is_valid(staged) || rest[0] != '.' || strspn(rest + 1, "0123456789") == 0)
		return -1;
	errno = 0;
	creator = strtol(rest + 1, &end, 10);
	if (errno != 0 || creator > PG_INT16_MAX || strcmp(end, ".tmp") != 0)
		return -1;
	return (int) creator;
}

/* staged_file_name_to_uuid parses the uuid part of a staged file's name. */
bool
staged_file_name_to_uuid(const char *file_name, uint8 *uuid)
{
	char text[37];

	if (strlen(file_name) != STAGED_FILE_NAME_LENGTH || strcmp(file_name + 36, ".stage") != 0)
		return false;
	memcpy(text, file_name, 36);
	text[36] = '\0';
	return uuid_parse(text, uuid) == 0;
}

/*
 * staging_errcode is the SQLSTATE of a failed write to the staged-file
 * tree, from errno: a full file system (ENOSPC, and EDQUOT, a quota that
 * is full) is 53100 disk_full, EIO 58030 io_error, others as
 * errcode_for_file_access says.
 */
static int
staging_errcode(int error)
{
	if (error == ENOSPC
#ifdef EDQUOT
		|| error == EDQUOT
#endif
	)
		return ERRCODE_DISK_FULL;
	if (error == EIO)
		return ERRCODE_IO_ERROR;
	return 0;
}

/*
 * report_staging_failure raises the error of a failed change to the
 * staged-file tree: the verb ("write", "create", ...) and the object
 * ("staged file", "directory") with its path, errno's text, a detail
 * naming the sink's folder and, for a full disk, what to do.  errno is
 * the failure's.
 */
static void
report_staging_failure(const char *verb, const char *object, const char *path, const char *folder)
{
	int error = errno;
	int code = staging_errcode(error);

	errno = error;
	ereport(ERROR,
			(code != 0 ? errcode(code) : errcode_for_file_access(),
			 errmsg("could not %s %s \"%s\": %m", verb, object, path),
			 errdetail("The staged files of this sink are in folder \"%s\" of the data directory.",
					   folder),
			 code == ERRCODE_DISK_FULL
				 ? errhint("Free space on the file system that holds that folder: writes to the "
						   "sink go on by themselves, and checkpoints still commit what is staged.")
				 : 0));
}

/*
 * staged_write writes length bytes at offset, as FileWrite does; returns
 * false with errno set (ENOSPC for a short write that set none) when not
 * all were written.  A failure injected at "staged_write" writes the first
 * half and fails, as a file system that fills up does.
 */
static bool
staged_write(File file, const char *data, int length, off_t offset)
{
	int injected = fault_errno("staged_write");

	errno = 0;
	if (injected != 0)
	{
		(void) FileWrite(file, unconstify(char *, data), length / 2, offset, PG_WAIT_IO);
		errno = injected;
		return false;
	}
	if (FileWrite(file, unconstify(char *, data), length, offset, PG_WAIT_IO) == length)
		return true;
	if (errno == 0)
		errno = ENOSPC;
	return false;
}

/*
 * Create a folder if it is missing, and fsync its parent when created.
 * folder is the sink's, for the message.
 */
static void
ensure_directory(const char *path, const char *parent, const char *folder)
{
	if (MakePGDirectory(path) == 0)
		fsync_fname(parent, true);
	else if (errno != EEXIST)
		report_staging_failure("create", "directory", path, folder);
}

/*
 * staged_file_create creates a new staged file for a stream with its
 * header, logs it, and returns it open for writing; nothing is fsynced (the
 * caller syncs the file and its folder, directory, MAXPGPATH bytes, before
 * anything but the WAL refers to it; before_log runs just before the
 * record is inserted: the writer's sync window opens there, so that a
 * writer stopped between a change and its record holds no checkpoint
 * back).  file_name (STAGED_FILE_NAME_LENGTH
 * + 1 bytes) receives its name and *size the offset where batches start.
 * creator, the writer's index, names the temporary file the header is
 * written in, so that no other writer adopting files sees a file under its
 * name without its header (see staged_file_temporary_creator).
 */
File
staged_file_create(Oid database_id, int creator, const StreamIdentity *stream, char *file_name,
				   off_t *size, char *directory, void (*before_log)(void))
{
	char database_path[MAXPGPATH];
	char path[MAXPGPATH];
	char temporary[MAXPGPATH + 16];
	uuid_t uuid;
	StagedFileHeader header;
	File file;

	snprintf(database_path, sizeof(database_path), "%s/%u", PAIMON_SINK_DIRECTORY, database_id);
	staged_file_directory(directory, database_id, stream->sink_id);
	ensure_directory(PAIMON_SINK_DIRECTORY, ".", directory);
	ensure_directory(database_path, PAIMON_SINK_DIRECTORY, directory);
	ensure_directory(directory, database_path, directory);

	uuid_generate(uuid);
	uuid_unparse_lower(uuid, file_name);
	strcat(file_name, ".stage");
	staged_file_path(path, database_id, stream->sink_id, file_name);
	snprintf(temporary, sizeof(temporary), "%s.%d.tmp", path, creator);

	memset(&header, 0, sizeof(header));
	header.magic = STAGED_FILE_MAGIC;
	header.version = STAGED_FILE_VERSION;
	header.commit_user_length = strlen(stream->commit_user);
	header.sink_uuid = stream->sink_uuid;
	header.sink_id = stream->sink_id;
	header.writer_id = stream->writer_id;
	header.bucket = stream->bucket;
	strlcpy(header.commit_user, stream->commit_user, sizeof(header.commit_user));

	/* a file appears under its name only with its header written */
	file = PathNameOpenFile(temporary, O_RDWR | O_CREAT | O_EXCL | PG_BINARY);
	if (file < 0)
		report_staging_failure("create", "staged file", path, directory);

	/* a failure leaves no file: nothing was logged, and redo never makes temporary files */
	if (!staged_write(file, (char *) &header, sizeof(header), 0))
	{
		int error = errno;

		FileClose(file);
		(void) unlink(temporary);
		errno = error;
		report_staging_failure("write", "staged file", path, directory);
	}
	/*
	 * No fsync: after a crash of the operating system the file may be
	 * missing or lack its header.  Its record, once durable, makes it again
	 * (redo); without it the file holds no batch of a committed transaction
	 * (their records follow this one), and a writer adopting files leaves
	 * a file without its header alone.
	 */
	if (rename(temporary, path) != 0)
	{
		int error = errno;

		FileClose(file);
		(void) unlink(temporary);
		errno = error;
		report_staging_failure("rename", "staged file", temporary, directory);
	}

	/* then the WAL (see the top of this file); redo makes it under its name at once */
	fault_point("writer_before_wal");
	before_log();
	(void) staged_wal_log(XLOG_STAGED_CREATE, database_id, stream->sink_id, file_name, 0,
						  (char *) &header, sizeof(header), NULL, 0);

	/*
	 * Open it again by its own name: fd.c reopens a file by the name it was
	 * opened with when its descriptor cache closes it (past
	 * max_files_per_process open files), and the temporary name is gone.
	 */
	FileClose(file);
	file = PathNameOpenFile(path, O_RDWR | PG_BINARY);
	if (file < 0)
		ereport(ERROR,
				(errcode_for_file_access(), errmsg("could not open staged file \"%s\": %m", path)));
	*size = sizeof(header);
	return file;
}

/*
 * staged_file_open opens an existing staged file for reading and appending,
 * checks its header and returns its stream; NULL stream skips that.  It
 * returns -1 (with errno) when the file cannot be opened, and reports a
 * header that is not ours at elevel (ERRCODE_DATA_CORRUPTED), returning -1
 * when that is below ERROR.
 */
File
staged_file_open(const char *path, StreamIdentity *stream, off_t *data_start, int elevel)
{
	StagedFileHeader header;
	File file;
	int nread;

	file = PathNameOpenFile(path, O_RDWR | PG_BINARY);
	if (file < 0)
		return file;
	nread = FileRead(file, (char *) &header, sizeof(header), 0, PG_WAIT_IO);
	if (nread != sizeof(header) || header.magic != STAGED_FILE_MAGIC ||
		header.version != STAGED_FILE_VERSION ||
		header.commit_user_length > PAIMON_SINK_COMMIT_USER_MAXLEN)
	{
		FileClose(file);
		ereport(
			elevel,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("staged file \"%s\" has an invalid header", path),
			 errdetail("The file is shorter than a header or was not written by paimon_sink %d.",
					   STAGED_FILE_VERSION)));
		errno = EINVAL;
		return -1;
	}
	if (stream != NULL)
	{
		stream->sink_uuid = header.sink_uuid;
		stream->sink_id = header.sink_id;
		stream->writer_id = header.writer_id;
		stream->bucket = header.bucket;
		memcpy(stream->commit_user, header.commit_user, header.commit_user_length);
		stream->commit_user[header.commit_user_length] = '\0';
	}
	*data_start = sizeof(header);
	return file;
}

/* batch_checksum returns the CRC-32C of a batch header and its payload. */
static uint32
batch_checksum(StagedBatchHeader *header, const char *payload)
{
	pg_crc32c crc;
	uint32 saved = header->checksum;

	header->checksum = 0;
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, header, sizeof(*header));
	COMP_CRC32C(crc, payload, header->payload_length);
	FIN_CRC32C(crc);
	header->checksum = saved;
	return crc;
}

/*
 * staged_file_append writes one batch record at offset, then its WAL record
 * (see the top of this file), and returns the offset after it.  The file is
 * named by its database, sink and name (for the record) and by its path
 * (staged_file_path's, for messages), which the writer keeps, so that the
 * write path derives nothing; before_log runs just before the record is
 * inserted (as for staged_file_create).  Nothing is fsynced or flushed: the
 * commit record of the batch's transaction follows its record, and the
 * writer fsyncs the file when its sync window closes (writer.c).
 */
off_t
staged_file_append(File file, Oid database_id, int32 sink_id, const char *name, const char *path,
				   off_t offset, StagedBatchHeader *header, const char *payload,
				   void (*before_log)(void))
{
	header->magic = STAGED_BATCH_MAGIC;
	header->checksum = batch_checksum(header, payload);

	if (!staged_write(file, (char *) header, sizeof(*header), offset) ||
		!staged_write(file, payload, header->payload_length, offset + sizeof(*header)))
	{
		int error = errno;
		char folder[MAXPGPATH];

		/*
		 * What was written of the batch goes again: it was not logged (no
		 * node replays it), and a shorter batch written at the same offset
		 * later would leave its bytes behind, to be read as records.  The
		 * caller checks the cut (a file it failed to cut takes no more
		 * batches).
		 */
		(void) FileTruncate(file, offset, PG_WAIT_IO);
		staged_file_directory(folder, database_id, sink_id);
		errno = error;
		report_staging_failure("write", "staged file", path, folder);
	}
	fault_point("writer_before_wal");
	before_log();
	(void) staged_wal_log(XLOG_STAGED_APPEND, database_id, sink_id, name, (uint64) offset,
						  (char *) header, sizeof(*header), payload, header->payload_length);
	return offset + sizeof(*header) + header->payload_length;
}

/*
 * staged_file_truncate logs that a staged file ends at length, and cuts it
 * there (and fsyncs it) when it is longer (size): a torn tail.  The record
 * is written even when nothing is cut: a writer adopting a file after a
 * crash says so for every file, because a node replaying the WAL may hold
 * bytes this one lost (an APPEND record flushed, its write lost with the
 * page cache); its redo cuts them, never lengthens.  Raises an I/O error
 * on failure.
 */
void
staged_file_truncate(File file, const char *path, off_t length, off_t size)
{
	Oid database_id;
	int32 sink_id;
	char name[STAGED_WAL_NAME_BYTES];

	path_identity(path, &database_id, &sink_id, name);
	(void) staged_wal_log(XLOG_STAGED_TRUNCATE, database_id, sink_id, name, (uint64) length, NULL,
						  0, NULL, 0);
	if (size <= length)
		return;
	if (FileTruncate(file, length, PG_WAIT_IO) != 0)
		ereport(ERROR, (errcode_for_file_access(),
						errmsg("could not truncate staged file \"%s\": %m", path)));
	staged_file_sync(file, path, ERROR);
}

/* log_removal writes the REMOVE record of a staged file (or a temporary header). */
static XLogRecPtr
log_removal(const char *path)
{
	Oid database_id;
	int32 sink_id;
	char name[STAGED_WAL_NAME_BYTES];

	path_identity(path, &database_id, &sink_id, name);
	return staged_wal_log(XLOG_STAGED_REMOVE, database_id, sink_id, name, 0, NULL, 0, NULL, 0);
}

/*
 * staged_file_remove removes a staged file (or a temporary header) once
 * its WAL record is durable; returns unlink's result, with errno.  Never
 * the file before its record: a crash in between would leave the file on
 * every node that replays the WAL and gone here, where nothing would
 * remove it again; a standby promoted once its committable expired would
 * adopt it and load its rows a second time.
 */
int
staged_file_remove(const char *path)
{
	XLogFlush(log_removal(path));
	return unlink(path);
}

/*
 * staged_file_log_removals writes the REMOVE records of a list of paths
 * (char *) of staged files about to be removed, without a flush; returns
 * the end of the last one (InvalidXLogRecPtr for none), for
 * staged_file_unlink_logged.  A caller that can wait for another's WAL
 * flush (the committer: see commit.c) spares the flush
 * staged_file_remove_list makes.
 */
XLogRecPtr
staged_file_log_removals(List *paths)
{
	XLogRecPtr lsn = InvalidXLogRecPtr;
	ListCell *lc;

	foreach (lc, paths)
		lsn = log_removal(lfirst(lc));
	return lsn;
}

/*
 * staged_file_unlink_logged removes the staged files of a list of paths
 * whose REMOVE records end at logged, once those are durable (a no-op
 * flush when a later flush made them so); returns how many it removed.  A
 * file already gone counts as removed; any other failure is reported at
 * elevel.
 */
int
staged_file_unlink_logged(List *paths, XLogRecPtr logged, int elevel)
{
	ListCell *lc;
	int removed = 0;

	if (XLogRecPtrIsInvalid(logged))
		return 0;
	XLogFlush(logged);
	foreach (lc, paths)
	{
		if (unlink(lfirst(lc)) == 0 || errno == ENOENT)
			removed++;
		else
			ereport(elevel, (errcode_for_file_access(),
							 errmsg("could not remove staged file \"%s\": %m", (char *) lfirst(lc)),
							 errhint("paimon_sink.remove_orphan_files() removes it later.")));
	}
	return removed;
}

/*
 * staged_file_remove_list removes the staged files of a list of paths
 * (char *) as staged_file_remove does, with one WAL flush for them all;
 * returns how many it removed.  A file already gone counts as removed; any
 * other failure is reported at elevel.
 */
int
staged_file_remove_list(List *paths, int elevel)
{
	return staged_file_unlink_logged(paths, staged_file_log_removals(paths), elevel);
}

/*
 * staged_file_remove_directory removes a dropped sink's folder with its
 * files, after a durable WAL record of it; returns rmtree's result (false
 * when some file could not go, with a warning).
 */
bool
staged_file_remove_directory(Oid database_id, int32 sink_id)
{
	char directory[MAXPGPATH];

	staged_file_directory(directory, database_id, sink_id);
	XLogFlush(
		staged_wal_log(XLOG_STAGED_REMOVE_SINK, database_id, sink_id, NULL, 0, NULL, 0, NULL, 0));
	return rmtree(directory, true);
}

/*
 * staged_file_sync fsyncs a staged file; a failure is reported at elevel
 * as data_sync_elevel filters it: PANIC unless data_sync_retry is on, and
 * PANIC always when elevel is.  Never retried in place, never ignored: as
 * for PostgreSQL's data files, the kernel may have dropped the dirty pages
 * of a failed writeback, a later fsync could then succeed without them,
 * and the one copy left of the staged bytes is their WAL records, which
 * crash recovery rewrites (the writer's sync window keeps a checkpoint
 * from passing them, writer_window.c).  A failure injected at
 * "staged_fsync" (errno enospc or eio) fails it alike.
 */
void
staged_file_sync(File file, const char *path, int elevel)
{
	int injected = fault_errno("staged_fsync");

	if (injected != 0 || FileSync(file, PG_WAIT_IO) != 0)
	{
		if (injected != 0)
			errno = injected;
		ereport(
			elevel >= PANIC ? PANIC : data_sync_elevel(elevel),
			(errcode_for_file_access(), errmsg("could not fsync staged file \"%s\": %m", path)));
	}
}

/*
 * staged_file_read_header reads only the header of the batch record at
 * offset (to step over records, as a left-out range is listed); false when
 * no record starts there.  Raises an I/O error as staged_file_read_batch.
 */
bool
staged_file_read_header(File file, const char *path, off_t offset, off_t file_size,
						StagedBatchHeader *header)
{
	if (offset + (off_t) sizeof(*header) > file_size)
		return false;
	if (FileRead(file, (char *) header, sizeof(*header), offset, PG_WAIT_IO) != sizeof(*header))
		ereport(ERROR,
				(errcode_for_file_access(), errmsg("could not read staged file \"%s\": %m", path)));
	return header->magic == STAGED_BATCH_MAGIC &&
		   offset + (off_t) sizeof(*header) + header->payload_length <= file_size;
}

/*
 * staged_file_read_batch reads the batch record at offset.  It returns false
 * when no whole, valid record starts there (the torn tail of a file whose
 * writer died before fsync); payload, when not NULL, receives the rows.
 */
bool
staged_file_read_batch(File file, const char *path, off_t offset, off_t file_size,
					   StagedBatchHeader *header, StringInfo payload)
{
	StringInfoData local;
	StringInfo buffer = payload;
	bool valid;

	if (!staged_file_read_header(file, path, offset, file_size, header))
		return false;
	if (buffer == NULL)
	{
		initStringInfo(&local);
		buffer = &local;
	}
	resetStringInfo(buffer);
	enlargeStringInfo(buffer, header->payload_length);
	if (FileRead(file, buffer->data, header->payload_length, offset + sizeof(*header),
				 PG_WAIT_IO) != (int) header->payload_length)
		ereport(ERROR,
				(errcode_for_file_access(), errmsg("could not read staged file \"%s\": %m", path)));
	buffer->len = header->payload_length;
	buffer->data[buffer->len] = '\0';
	valid = batch_checksum(header, buffer->data) == header->checksum;
	if (buffer == &local)
		pfree(local.data);
	return valid;
}
