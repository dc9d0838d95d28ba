/*-------------------------------------------------------------------------
 *
 * staged_wal.c
 *	  paimon_sink's custom WAL resource manager: writing the records of
 *	  staged-file changes, their redo, and their description.
 *
 * staged_file.c writes a record with each change it makes to a staged
 * file (a new file and a batch just after they are written, a cut and a
 * removal just before; staged_file.c says why), so that the WAL holds every
 * byte of every staged file in the order it was written.  Redo applies a record to the same path and fsyncs it at once,
 * as PostgreSQL's own redo of files outside the buffer manager does
 * (relmap_redo, heap_xlog_logical_rewrite): a restartpoint may move the
 * redo start past the record, and nothing else would sync the file.
 *
 * Redo is idempotent.  Crash recovery replays records whose changes are
 * already on disk; writing the same bytes at the same offset again changes
 * nothing.  A file that an APPEND or TRUNCATE names and that is missing
 * was removed later in the WAL (a base backup may copy the folder after
 * the removal): the record is skipped, as PostgreSQL skips pages of a
 * relation dropped later, and a file whose removal never comes is named in
 * a warning at the end of redo.  A CREATE never empties a file that exists.
 *
 * The records carry the database oid, the sink id and the uuid of the
 * file's name only; the path is rebuilt from them, so a record can name no
 * other file.
 *
 * Transaction ids.  A session hands its rows over without flushing any WAL
 * record of its xid (handoff.c), and a writer writes a batch before it
 * logs it, so a crash can leave a batch on disk (the page cache outlives
 * PostgreSQL) whose xid recovery hands to a new transaction: that batch
 * would then count as committed.  Two rules close it.  The redo of a batch
 * record advances the next xid past the batch's xid, as the redo of
 * PostgreSQL's own records does (AdvanceNextFullTransactionIdPastXid), so
 * the xid of a batch in the WAL is never handed out again.  And every
 * staged file is cut before its first batch whose xid is not below the
 * next xid that recovery ends with: such a batch's record was neither
 * replayed (its redo would have advanced the next xid) nor older than the
 * redo start (the checkpoint's next xid, read after its redo point, would
 * be above it), so it was never logged, never acknowledged, and belongs to
 * no committed transaction; nor does any batch after it in its file, whose
 * records would follow its own in the WAL.
 *
 * The end of redo does not always come.  PostgreSQL runs rm_startup and
 * rm_cleanup only when there is a record to replay after the checkpoint;
 * when there is none ("redo is not required": a crash right after an
 * end-of-recovery checkpoint, or after any checkpoint with nothing flushed
 * since) recovery calls no resource manager, and ends with the
 * checkpoint's next xid.  So the postmaster, as it sets up shared memory
 * before each start of the startup process (the first start and every
 * crash restart), keeps the next xid of the control file's checkpoint
 * (staged_wal_note_checkpoint); when that recovery then ran no rm_cleanup,
 * the first writer to adopt files, before any writer serves, cuts every
 * staged file against that xid, logs each cut and fsyncs it
 * (staged_wal_cut_if_no_redo).  Exactly that xid: a later one (an online
 * checkpoint's after restart) is above xids already handed out again, and
 * the pre-redo xid when redo did run would cut logged batches, and batches
 * of the library before 0.2 that no record describes.  After a clean
 * shutdown there is nothing to cut: its checkpoint's next xid is above
 * every xid ever handed out.  What this leaves open: a transaction that got
 * a dead batch's xid again and committed before the first writer adopted,
 * then a crash with redo, whose rm_cleanup no longer sees the batch as dead.
 * Recovery to a target cuts the batches of transactions after the target
 * that a base backup copied, by the rule of rm_cleanup.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uuid/uuid.h>

#include "access/transam.h"
#include "access/xlog.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogreader.h"
#include "catalog/pg_control.h"
#include "common/controldata_utils.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/lwlock.h"
#include "utils/memutils.h"

#include "core/constants.h"
#include "core/shared_state.h"
#include "staging/staged_file.h"
#include "staging/staged_wal.h"

/* The record format is the WAL's: a change to it must still read the old one. */
StaticAssertDecl(sizeof(xl_staged_file) == 40, "xl_staged_file is 40 bytes");

static void staged_wal_redo(XLogReaderState *record);
static void staged_wal_desc(StringInfo buf, XLogReaderState *record);
static const char *staged_wal_identify(uint8 info);
static void staged_wal_cleanup(void);

/* Files redo found missing and no later removal has named yet (startup process). */
static List *skipped_files = NIL;

static const RmgrData staged_rmgr = {
	.rm_name = PAIMON_SINK_RMGR_NAME,
	.rm_redo = staged_wal_redo,
	.rm_desc = staged_wal_desc,
	.rm_identify = staged_wal_identify,
	.rm_cleanup = staged_wal_cleanup,
};

/*
 * staged_wal_register registers the resource manager; from _PG_init, while
 * shared_preload_libraries is processed (RegisterCustomRmgr raises an error
 * otherwise, and FATAL-s at start when the id is taken).
 */
void
staged_wal_register(void)
{
	RegisterCustomRmgr(PAIMON_SINK_RMGR_ID, unconstify(RmgrData *, &staged_rmgr));
}

/*
 * staged_wal_log writes one record of kind info (XLOG_STAGED_*) for a file
 * of a sink, followed by up to two pieces of data (NULL for none), and
 * returns its end LSN.  Nothing flushes it: a record that a commit depends
 * on precedes that commit's record, whose flush covers it.
 */
XLogRecPtr
staged_wal_log(uint8 info, Oid database_id, int32 sink_id, const char *file_name, uint64 offset,
			   const char *data1, int length1, const char *data2, int length2)
{
	xl_staged_file xlrec;

	memset(&xlrec, 0, sizeof(xlrec));
	xlrec.database_id = database_id;
	xlrec.sink_id = sink_id;
	xlrec.offset = offset;
	xlrec.temporary_creator = -1;
	if (file_name != NULL)
	{
		char staged[STAGED_FILE_NAME_LENGTH + 1];

		/* a temporary header's name starts with its staged file's */
		strlcpy(staged, file_name, sizeof(staged));
		if (!staged_file_name_to_uuid(staged, xlrec.file_uuid))
			elog(ERROR, "\"%s\" is not the name of a staged file", file_name);
		if (strlen(file_name) > STAGED_FILE_NAME_LENGTH)
		{
			xlrec.temporary_creator = (int16) staged_file_temporary_creator(file_name);
			if (xlrec.temporary_creator < 0)
				elog(ERROR, "\"%s\" is not the name of a staged file", file_name);
		}
	}

	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, sizeof(xlrec));
	if (data1 != NULL && length1 > 0)
		XLogRegisterData(unconstify(char *, data1), length1);
	if (data2 != NULL && length2 > 0)
		XLogRegisterData(unconstify(char *, data2), length2);
	return XLogInsert(PAIMON_SINK_RMGR_ID, info);
}

/* record_name fills name (STAGED_WAL_NAME_BYTES) with the file name a record names. */
static void
record_name(const xl_staged_file *xlrec, char *name)
{
	uuid_unparse_lower(xlrec->file_uuid, name);
	strcat(name, ".stage");
	if (xlrec->temporary_creator >= 0)
		snprintf(name + STAGED_FILE_NAME_LENGTH, STAGED_WAL_NAME_BYTES - STAGED_FILE_NAME_LENGTH,
				 ".%d.tmp", xlrec->temporary_creator);
}

/*
 * record_path fills path (MAXPGPATH) with the file a record names, and
 * directory with its sink's folder.  Only a removal may name a temporary
 * header: any other such record is corrupt WAL, an error.
 */
static void
record_path(const xl_staged_file *xlrec, char *directory, char *path, bool temporary_allowed)
{
	char name[STAGED_WAL_NAME_BYTES];

	if (xlrec->temporary_creator >= 0 && !temporary_allowed)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("paimon_sink WAL record names a temporary staged file")));
	staged_file_directory(directory, xlrec->database_id, xlrec->sink_id);
	record_name(xlrec, name);
	snprintf(path, MAXPGPATH, "%s/%s", directory, name);
}

/* Create a folder of the staged-file tree if it is missing; fsync its parent then. */
static void
redo_directory(const char *path, const char *parent)
{
	if (MakePGDirectory(path) == 0)
		fsync_fname(parent, true);
	else if (errno != EEXIST)
		ereport(ERROR,
				(errcode_for_file_access(), errmsg("could not create directory \"%s\": %m", path)));
}

/* Write length bytes at offset to a file open for redo, and fsync it. */
static void
redo_write(int fd, const char *path, const char *data, int length, off_t offset)
{
	pgstat_report_wait_start(WAIT_EVENT_DATA_FILE_WRITE);
	errno = 0;
	if (length > 0 && pg_pwrite(fd, data, length, offset) != length)
	{
		if (errno == 0)
			errno = ENOSPC;
		ereport(ERROR, (errcode_for_file_access(),
						errmsg("could not write staged file \"%s\" in redo: %m", path)));
	}
	pgstat_report_wait_end();
	if (pg_fsync(fd) != 0)
		ereport(data_sync_elevel(ERROR),
				(errcode_for_file_access(),
				 errmsg("could not fsync staged file \"%s\" in redo: %m", path)));
}

/* redo_create makes the file with its header (and its folders), never emptying one that exists. */
static void
redo_create(const xl_staged_file *xlrec, const char *data, int length)
{
	char root_path[MAXPGPATH];
	char database_path[MAXPGPATH];
	char directory[MAXPGPATH];
	char path[MAXPGPATH];
	int fd;

	record_path(xlrec, directory, path, false);
	snprintf(root_path, sizeof(root_path), "%s", PAIMON_SINK_DIRECTORY);
	snprintf(database_path, sizeof(database_path), "%s/%u", PAIMON_SINK_DIRECTORY,
			 xlrec->database_id);
	redo_directory(root_path, ".");
	redo_directory(database_path, root_path);
	redo_directory(directory, database_path);

	fd = OpenTransientFile(path, O_RDWR | O_CREAT | PG_BINARY);
	if (fd < 0)
		ereport(ERROR, (errcode_for_file_access(),
						errmsg("could not create staged file \"%s\" in redo: %m", path)));
	redo_write(fd, path, data, length, 0);
	CloseTransientFile(fd);
	fsync_fname(directory, true);
}

/*
 * redo_open opens the file a record names for writing; -1 when it is
 * missing.  That is right when the WAL removes it later (a base backup
 * copied the folder after the removal), as PostgreSQL skips pages of a
 * relation dropped later; the file is remembered until its removal is
 * replayed, and staged_wal_cleanup names those whose removal never came.
 */
static int
redo_open(const char *path)
{
	int fd = OpenTransientFile(path, O_RDWR | PG_BINARY);
	ListCell *lc;
	MemoryContext old;

	if (fd >= 0)
		return fd;
	if (errno != ENOENT)
		ereport(ERROR, (errcode_for_file_access(),
						errmsg("could not open staged file \"%s\" in redo: %m", path)));
	elog(DEBUG1, "paimon_sink redo skips staged file \"%s\": it is missing", path);
	foreach (lc, skipped_files)
		if (strcmp(lfirst(lc), path) == 0)
			return -1;
	old = MemoryContextSwitchTo(TopMemoryContext);
	skipped_files = lappend(skipped_files, pstrdup(path));
	MemoryContextSwitchTo(old);
	return -1;
}

/* forget_skipped forgets the skipped files a removal replayed: path, or a folder's (prefix). */
static void
forget_skipped(const char *path, bool prefix)
{
	ListCell *lc;
	size_t length = strlen(path);

	foreach (lc, skipped_files)
	{
		char *skipped = lfirst(lc);

		if (prefix ? strncmp(skipped, path, length) == 0 && skipped[length] == '/'
				   : strcmp(skipped, path) == 0)
		{
			skipped_files = foreach_delete_current(skipped_files, lc);
			pfree(skipped);
		}
	}
}

/*
 * cut_unlogged_batches cuts a staged file before its first batch whose
 * xid is next_xid or above (see the top of this file), and fsyncs it.
 * With log (a writer, not redo), the cut's TRUNCATE record, for database
 * database_id, sink sink_id and file name, is written first, as every
 * cut's; returns its end, or InvalidXLogRecPtr.  A file without a valid
 * header, or whose batches end in a torn record, is read only that far:
 * the writer adopting it deals with the rest.
 */
static XLogRecPtr
cut_unlogged_batches(const char *path, uint64 next_xid, bool log, Oid database_id, int32 sink_id,
					 const char *name)
{
	XLogRecPtr end = InvalidXLogRecPtr;
	StagedFileHeader file_header;
	StagedBatchHeader header;
	struct stat st;
	off_t offset = sizeof(file_header);
	int fd = OpenTransientFile(path, O_RDWR | PG_BINARY);

	if (fd < 0 && errno == ENOENT)
		return end;
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not open staged file \"%s\" at the end of recovery: %m", path)));
	if (fstat(fd, &st) != 0)
		ereport(ERROR,
				(errcode_for_file_access(), errmsg("could not stat staged file \"%s\": %m", path)));
	if (pg_pread(fd, &file_header, sizeof(file_header), 0) != sizeof(file_header) ||
		file_header.magic != STAGED_FILE_MAGIC)
	{
		CloseTransientFile(fd);
		return end;
	}
	while (offset + (off_t) sizeof(header) <= st.st_size)
	{
		if (pg_pread(fd, &header, sizeof(header), offset) != sizeof(header) ||
			header.magic != STAGED_BATCH_MAGIC)
			break;
		if (header.full_xid >= next_xid)
		{
			ereport(LOG, (errmsg("paimon_sink cuts staged file \"%s\" at %lld of %lld bytes: "
								 "its batches from there were never logged",
								 path, (long long) offset, (long long) st.st_size),
						  errdetail("The batch there has transaction id %llu; the next "
									"transaction id after recovery is %llu.",
									(unsigned long long) header.full_xid,
									(unsigned long long) next_xid)));
			if (log)
				end = staged_wal_log(XLOG_STAGED_TRUNCATE, database_id, sink_id, name,
									 (uint64) offset, NULL, 0, NULL, 0);
			if (ftruncate(fd, offset) != 0)
				ereport(ERROR, (errcode_for_file_access(),
								errmsg("could not truncate staged file \"%s\": %m", path)));
			if (pg_fsync(fd) != 0)
				ereport(data_sync_elevel(ERROR),
						(errcode_for_file_access(),
						 errmsg("could not fsync staged file \"%s\": %m", path)));
			break;
		}
		offset += sizeof(header) + header.payload_length;
	}
	CloseTransientFile(fd);
	return end;
}

/*
 * cut_all_unlogged_batches runs cut_unlogged_batches on every staged file
 * of every sink against next_xid: the next xid as redo left it (end of
 * redo, startup process), or as a recovery without redo left it (log, the
 * first adopting writer); returns the end of the last record written.
 */
static XLogRecPtr
cut_all_unlogged_batches(uint64 next_xid, bool log)
{
	XLogRecPtr end = InvalidXLogRecPtr;
	DIR *databases = AllocateDir(PAIMON_SINK_DIRECTORY);
	struct dirent *database_entry;

	if (databases == NULL)
		return end;
	while ((database_entry = ReadDir(databases, PAIMON_SINK_DIRECTORY)) != NULL)
	{
		char database_path[MAXPGPATH];
		DIR *sinks;
		struct dirent *sink_entry;

		if (strspn(database_entry->d_name, "0123456789") != strlen(database_entry->d_name))
			continue;
		snprintf(database_path, sizeof(database_path), "%s/%s", PAIMON_SINK_DIRECTORY,
				 database_entry->d_name);
		sinks = AllocateDir(database_path);
		while (sinks != NULL && (sink_entry = ReadDir(sinks, database_path)) != NULL)
		{
			char sink_path[MAXPGPATH];
			DIR *files;
			struct dirent *file_entry;

			if (strspn(sink_entry->d_name, "0123456789") != strlen(sink_entry->d_name))
				continue;
			snprintf(sink_path, sizeof(sink_path), "%s/%s", database_path, sink_entry->d_name);
			files = AllocateDir(sink_path);
			while (files != NULL && (file_entry = ReadDir(files, sink_path)) != NULL)
			{
				char path[MAXPGPATH];
				XLogRecPtr record;

				if (!staged_file_name_is_valid(file_entry->d_name))
					continue;
				snprintf(path, sizeof(path), "%s/%s", sink_path, file_entry->d_name);
				record = cut_unlogged_batches(
					path, next_xid, log, (Oid) strtoul(database_entry->d_name, NULL, 10),
					(int32) strtol(sink_entry->d_name, NULL, 10), file_entry->d_name);
				if (record != InvalidXLogRecPtr)
					end = record;
			}
			if (files != NULL)
				FreeDir(files);
		}
		if (sinks != NULL)
			FreeDir(sinks);
	}
	FreeDir(databases);
	return end;
}

/*
 * staged_wal_note_checkpoint keeps, in shared memory, the next xid of the
 * checkpoint in the control file, which recovery ends with when it finds
 * nothing to replay (see the top of this file); no cut is wanted when the
 * control file says the server shut down cleanly, or does not check (the
 * startup process refuses it).  From the postmaster's shmem_startup_hook
 * (or a single-user backend's), before each start of the startup process,
 * while no other process runs.  Takes nothing and returns nothing; an
 * unreadable control file is an ERROR, which the postmaster turns into
 * FATAL.  The design is PostgreSQL's: StartupXLOG sets the next xid from
 * the same field (checkPointCopy.nextXid).
 */
void
staged_wal_note_checkpoint(void)
{
	bool crc_ok = false;
	ControlFileData *control = get_controlfile(DataDir, &crc_ok);

	PaimonSinkState->recovery_next_xid = U64FromFullTransactionId(control->checkPointCopy.nextXid);
	PaimonSinkState->recovery_cut_wanted = crc_ok && control->state != DB_SHUTDOWNED;
	PaimonSinkState->redo_cleanup_ran = false;
	PaimonSinkState->unlogged_cut_done = false;
	pfree(control);
}

/*
 * staged_wal_cut_if_no_redo, in a writer before it adopts files, cuts every
 * staged file of every database against the next xid that recovery ended
 * with, when that recovery ran no rm_cleanup (see the top of this file):
 * the first writer of this start to get here does it, holding the shared
 * lock, so that no writer serves (and writes a batch with a reused xid)
 * before every file is cut.  Each cut is logged (a TRUNCATE record: nodes
 * that replay cut what they hold beyond it) and fsynced, and the records
 * are flushed before it returns.  Takes nothing and returns nothing; an
 * I/O error is an ERROR (the writer exits and the next one tries again).
 * Modelled on PostgreSQL's rm_cleanup, which recovery without redo skips.
 */
void
staged_wal_cut_if_no_redo(void)
{
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	if (PaimonSinkState->recovery_cut_wanted && !PaimonSinkState->redo_cleanup_ran &&
		!PaimonSinkState->unlogged_cut_done)
	{
		XLogRecPtr end = cut_all_unlogged_batches(PaimonSinkState->recovery_next_xid, true);

		if (end != InvalidXLogRecPtr)
			XLogFlush(end);
		PaimonSinkState->unlogged_cut_done = true;
	}
	LWLockRelease(PaimonSinkState->lock);
}

/*
 * staged_wal_cleanup, at the end of redo (rm_cleanup), cuts the batches
 * that were never logged (cut_all_unlogged_batches), and warns of each staged
 * file whose records redo skipped because it was missing and whose removal
 * the WAL did not hold: it was deleted outside the extension on the node the
 * WAL comes from, or never copied here.  A checkpoint that records it fails
 * with 58P01, and discard_missing_files() goes on without it.
 */
static void
staged_wal_cleanup(void)
{
	ListCell *lc;

	(void) cut_all_unlogged_batches(U64FromFullTransactionId(ReadNextFullTransactionId()), false);
	/* the startup process's, before any writer starts */
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	PaimonSinkState->redo_cleanup_ran = true;
	LWLockRelease(PaimonSinkState->lock);
	foreach (lc, skipped_files)
		ereport(WARNING,
				(errcode(ERRCODE_UNDEFINED_FILE),
				 errmsg("paimon_sink redo skipped the records of missing staged file \"%s\"",
						(char *) lfirst(lc)),
				 errdetail("The WAL changes the file and does not remove it later: the rows "
						   "staged in it are not on this node."),
				 errhint("A checkpoint that records the file fails until the file is restored or "
						 "paimon_sink.discard_missing_files() goes on without it.")));
	list_free_deep(skipped_files);
	skipped_files = NIL;
}

/*
 * redo_append writes a batch record's bytes at its offset, and advances
 * the next xid past the batch's (see the top of this file), also when its
 * file is gone.
 */
static void
redo_append(const xl_staged_file *xlrec, const char *data, int length)
{
	char directory[MAXPGPATH];
	char path[MAXPGPATH];
	int fd;

	if (length >= (int) sizeof(StagedBatchHeader))
	{
		StagedBatchHeader header;

		memcpy(&header, data, sizeof(header));
		if (header.magic == STAGED_BATCH_MAGIC)
			AdvanceNextFullTransactionIdPastXid((TransactionId) header.full_xid);
	}
	record_path(xlrec, directory, path, false);
	fd = redo_open(path);
	if (fd < 0)
		return;
	redo_write(fd, path, data, length, (off_t) xlrec->offset);
	CloseTransientFile(fd);
}

/*
 * redo_truncate cuts a file to the record's length; only ever shorter: a
 * node whose copy lacks the torn bytes keeps its length.
 */
static void
redo_truncate(const xl_staged_file *xlrec)
{
	char directory[MAXPGPATH];
	char path[MAXPGPATH];
	struct stat st;
	int fd;

	record_path(xlrec, directory, path, false);
	fd = redo_open(path);
	if (fd < 0)
		return;
	if (fstat(fd, &st) != 0)
		ereport(ERROR, (errcode_for_file_access(),
						errmsg("could not stat staged file \"%s\" in redo: %m", path)));
	if (st.st_size > (off_t) xlrec->offset && ftruncate(fd, (off_t) xlrec->offset) != 0)
		ereport(ERROR, (errcode_for_file_access(),
						errmsg("could not truncate staged file \"%s\" in redo: %m", path)));
	redo_write(fd, path, NULL, 0, 0);
	CloseTransientFile(fd);
}

/* redo_remove removes a file (already gone is fine) and syncs its folder. */
static void
redo_remove(const xl_staged_file *xlrec)
{
	char directory[MAXPGPATH];
	char path[MAXPGPATH];
	struct stat st;

	record_path(xlrec, directory, path, true);
	forget_skipped(path, false);
	if (unlink(path) != 0 && errno != ENOENT)
		ereport(ERROR, (errcode_for_file_access(),
						errmsg("could not remove staged file \"%s\" in redo: %m", path)));
	if (stat(directory, &st) == 0)
		fsync_fname(directory, true);
}

/* redo_remove_sink removes a dropped sink's folder with its files. */
static void
redo_remove_sink(const xl_staged_file *xlrec)
{
	char directory[MAXPGPATH];
	char database_path[MAXPGPATH];
	struct stat st;

	staged_file_directory(directory, xlrec->database_id, xlrec->sink_id);
	snprintf(database_path, sizeof(database_path), "%s/%u", PAIMON_SINK_DIRECTORY,
			 xlrec->database_id);
	forget_skipped(directory, true);
	if (stat(directory, &st) != 0)
		return;
	if (!rmtree(directory, true))
		ereport(ERROR, (errmsg("could not remove staged-file folder \"%s\" in redo", directory)));
	fsync_fname(database_path, true);
}

/* staged_wal_redo applies one record of ours (rm_redo). */
static void
staged_wal_redo(XLogReaderState *record)
{
	uint8 info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	const char *data = XLogRecGetData(record);
	int length = (int) XLogRecGetDataLen(record) - (int) sizeof(xl_staged_file);
	xl_staged_file xlrec;

	if (length < 0)
		elog(PANIC, "paimon_sink WAL record is too short");
	memcpy(&xlrec, data, sizeof(xlrec));
	data += sizeof(xlrec);
	switch (info)
	{
		case XLOG_STAGED_CREATE:
			redo_create(&xlrec, data, length);
			break;
		case XLOG_STAGED_APPEND:
			redo_append(&xlrec, data, length);
			break;
		case XLOG_STAGED_TRUNCATE:
			redo_truncate(&xlrec);
			break;
		case XLOG_STAGED_REMOVE:
			redo_remove(&xlrec);
			break;
		case XLOG_STAGED_REMOVE_SINK:
			redo_remove_sink(&xlrec);
			break;
		default:
			elog(PANIC, "paimon_sink redo: unknown op code %u", info);
	}
}

/*
 * staged_wal_desc describes a record (rm_desc), as pg_walinspect's
 * pg_get_wal_records_info() shows it: the file, and for a batch its
 * offset, length, rows and transaction.
 */
static void
staged_wal_desc(StringInfo buf, XLogReaderState *record)
{
	uint8 info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	const char *data = XLogRecGetData(record);
	int length = (int) XLogRecGetDataLen(record) - (int) sizeof(xl_staged_file);
	xl_staged_file xlrec;
	char name[STAGED_WAL_NAME_BYTES];

	if (length < 0)
		return;
	memcpy(&xlrec, data, sizeof(xlrec));
	if (info == XLOG_STAGED_REMOVE_SINK)
	{
		appendStringInfo(buf, "sink %d of database %u", xlrec.sink_id, xlrec.database_id);
		return;
	}
	record_name(&xlrec, name);
	appendStringInfo(buf, "file %s/%u/%d/%s", PAIMON_SINK_DIRECTORY, xlrec.database_id,
					 xlrec.sink_id, name);
	if (info == XLOG_STAGED_APPEND)
	{
		StagedBatchHeader header;

		appendStringInfo(buf, " offset %llu length %d", (unsigned long long) xlrec.offset, length);
		if (length >= (int) sizeof(header))
		{
			memcpy(&header, data + sizeof(xlrec), sizeof(header));
			appendStringInfo(buf, " rows %u xid %llu", header.row_count,
							 (unsigned long long) header.full_xid);
		}
	}
	else if (info == XLOG_STAGED_TRUNCATE)
		appendStringInfo(buf, " length %llu", (unsigned long long) xlrec.offset);
}

/* staged_wal_identify names a record kind (rm_identify). */
static const char *
staged_wal_identify(uint8 info)
{
	switch (info & ~XLR_INFO_MASK)
	{
		case XLOG_STAGED_CREATE:
			return "CREATE";
		case XLOG_STAGED_APPEND:
			return "APPEND";
		case XLOG_STAGED_TRUNCATE:
			return "TRUNCATE";
		case XLOG_STAGED_REMOVE:
			return "REMOVE";
		case XLOG_STAGED_REMOVE_SINK:
			return "REMOVE_SINK";
	}
	return NULL;
}
