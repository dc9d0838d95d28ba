/*-------------------------------------------------------------------------
 *
 * writer_window.c
 *	  A writer's sync windows: when the staged files it wrote are fsynced.
 *
 * A writer acknowledges a hand-off as soon as its batches are written and
 * their WAL records inserted: no fsync and no WAL flush on the commit
 * path.  The session's commit record follows those records, so its flush (the
 * transaction's one sync) makes the batches durable in the WAL, and crash
 * recovery rewrites them.  What must still be fsynced is the files
 * themselves, before a checkpoint whose redo point follows their records
 * completes (recovery from it no longer replays them, and the WAL that holds
 * them may be recycled).  PostgreSQL's own mechanism for "WAL logged, the
 * change not yet durable" does it: from just before its first record on
 * (staged_file.c calls writer_open_window between a change and its record),
 * the writer holds a sync window open, in which MyProc->delayChkptFlags has
 * DELAY_CHKPT_START; CreateCheckPoint, once it fixed its redo point, waits
 * until every process that had the flag clears it (or ends its virtual
 * transaction).  A record inserted before the redo point was inserted with
 * the flag already set, so the checkpoint waits for this window; a record
 * after the redo point is replayed.  The checkpointer counts only processes
 * with a valid virtual transaction id, so a window is a transaction of its
 * own (StartTransactionCommand: no xid, no snapshot); its memory context is
 * left as it was.  The window closes, every file written in it and every
 * folder with a new entry fsynced and then the flag cleared,
 * paimon_sink.group_fsync_delay after it opened (a checkpoint waits at most
 * that long, plus the fsyncs), at once when that is 0, and when the writer
 * exits.  A barrier does not close it: the files it seals unsynced are
 * fsynced as the window closes (writer_window_add_sealed), so a
 * checkpoint() pays no writer fsync.  Crash and standby redo do not need this: they fsync each record as
 * they apply it (staged_wal.c), since a restartpoint does not wait for the
 * startup process.
 *
 * A writer that cannot go on while its window is open (stopped by a
 * signal, a debugger, a paused fault point, a hung disk) holds every
 * checkpoint, including the shutdown checkpoint and a base backup's, and
 * PostgreSQL 15 shows no wait event for that wait.  So an open window is
 * the writer's activity in pg_stat_activity (state active, the query naming
 * the window), and its end makes the writer idle again: an operator whose
 * CHECKPOINT does not return finds the writer to look at there.  The hold
 * is bounded all the same: a writer that shows no progress for
 * paimon_sink.handoff_timeout is fenced by the committer, which fsyncs the
 * database's staged files and clears the fenced process's flag
 * (liveness.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "core/constants.h"
#include "core/fault.h"
#include "core/guc.h"
#include "core/wait_events.h"
#include "ipc/liveness.h"
#include "writer/writer_internal.h"

static bool window_open = false;
static TimestampTz window_deadline;
static List *window_directories = NIL; /* folders with a new entry, char *, in WriterContext */
static List *window_sealed = NIL;	   /* files sealed unsynced in the window, char *, likewise */

/* sync_dirty_files fsyncs every open file written since its last fsync (failures at elevel). */
static void
sync_dirty_files(int elevel)
{
	HASH_SEQ_STATUS status;
	Stream *stream;

	hash_seq_init(&status, WriterStreams);
	while ((stream = hash_seq_search(&status)) != NULL)
	{
		ListCell *lc;

		foreach (lc, stream->open_files)
		{
			OpenFile *file = lfirst(lc);

			if (file->dirty)
			{
				writer_sync(file->file, file->path, elevel);
				liveness_beat(MyWriter);
			}
			file->dirty = false;
		}
	}
}

/*
 * writer_open_window opens a sync window unless one is open (see the file
 * comment): a transaction of its own, then DELAY_CHKPT_START, before the
 * window's first record.  The caller's memory context stays current.
 */
void
writer_open_window(void)
{
	MemoryContext old = CurrentMemoryContext;

	if (window_open)
		return;
	Assert(!IsTransactionState());
	StartTransactionCommand();
	MemoryContextSwitchTo(old);
	/* set before the window's first record: the WAL insertion lock orders it before the record */
	MyProc->delayChkptFlags |= DELAY_CHKPT_START;
	window_open = true;
	window_deadline =
		TimestampTzPlusMilliseconds(GetCurrentTimestamp(), PaimonSinkGroupFsyncDelayMs);
	pgstat_report_activity(STATE_RUNNING, "sync window open: PostgreSQL checkpoints wait until "
										  "this writer fsyncs its staged files and closes it");
}

/*
 * sync_sealed_file fsyncs a file the open window sealed unsynced
 * (writer_window_add_sealed); one that is gone was committed and removed,
 * or dropped, meanwhile: its REMOVE record stands for it, so it is
 * skipped.  Failures at elevel, as staged_file_sync says.
 */
static void
sync_sealed_file(const char *path, int elevel)
{
	int fd = OpenTransientFile(path, O_RDWR | PG_BINARY);

	if (fd < 0 && errno == ENOENT)
		return;
	if (fd < 0)
		ereport(ERROR,
				(errcode_for_file_access(), errmsg("could not open staged file \"%s\": %m", path)));
	if (pg_fsync(fd) != 0)
		ereport(
			elevel >= PANIC ? PANIC : data_sync_elevel(elevel),
			(errcode_for_file_access(), errmsg("could not fsync staged file \"%s\": %m", path)));
	CloseTransientFile(fd);
	pg_atomic_fetch_add_u64(&MyWriter->fsyncs, 1);
	liveness_beat(MyWriter);
}

/*
 * sync_window_files fsyncs what the open window wrote: dirty files, the
 * files it sealed unsynced, then new folder entries.  A failure is reported at elevel as
 * staged_file_sync says: PANIC unless data_sync_retry is on.
 */
static void
sync_window_files(int elevel)
{
	ListCell *lc;

	sync_dirty_files(elevel);
	foreach (lc, window_sealed)
		sync_sealed_file(lfirst(lc), elevel);
	list_free_deep(window_sealed);
	window_sealed = NIL;
	foreach (lc, window_directories)
	{
		const char *directory = lfirst(lc);
		int fd = OpenTransientFile(directory, O_RDONLY | PG_BINARY);

		/* the folder of a sink dropped meanwhile: the committer removed it */
		if (fd < 0 && errno == ENOENT)
			continue;
		if (fd < 0)
			ereport(ERROR, (errcode_for_file_access(),
							errmsg("could not open directory \"%s\": %m", directory)));
		if (pg_fsync(fd) != 0)
			ereport(elevel >= PANIC ? PANIC : data_sync_elevel(elevel),
					(errcode_for_file_access(),
					 errmsg("could not fsync directory \"%s\": %m", directory)));
		CloseTransientFile(fd);
		pg_atomic_fetch_add_u64(&MyWriter->fsyncs, 1);
		liveness_beat(MyWriter);
	}
	list_free_deep(window_directories);
	window_directories = NIL;
}

/*
 * writer_sync_window fsyncs what the open window wrote so far and leaves
 * it open: for a caller inside a hash_seq_search of the streams, which the
 * end of the window's transaction would cancel (AtEOXact_HashTables).
 * Raises an I/O error as writer_close_window.
 */
void
writer_sync_window(void)
{
	if (window_open)
		sync_window_files(ERROR);
}

/*
 * writer_close_window closes the open sync window: it fsyncs every file
 * written in it and every folder with a new entry, then clears
 * DELAY_CHKPT_START (a checkpoint waiting for it goes on) and commits the
 * window's transaction.  The caller's memory context stays current; no
 * hash_seq_search may be open (the transaction's end cancels it).  Raises
 * an I/O error (PANIC, by data_sync_elevel) when an fsync fails; with
 * data_sync_retry on, the writer then exits and its exit fsyncs again
 * (writer_window_exit), PANICking if that fails too.
 */
void
writer_close_window(void)
{
	MemoryContext old = CurrentMemoryContext;

	if (!window_open)
		return;
	fault_point("writer_before_window_sync");
	sync_window_files(ERROR);
	MyProc->delayChkptFlags &= ~DELAY_CHKPT_START;
	window_open = false;
	CommitTransactionCommand();
	MemoryContextSwitchTo(old);
	pgstat_report_activity(STATE_IDLE, "");
}

/*
 * writer_window_timeout returns how long the loop may sleep, in ms: until the
 * open window's end, or idle ms when none is open.
 */
long
writer_window_timeout(long idle)
{
	long left;

	if (!window_open)
		return idle;
	left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), window_deadline);
	return Max(left, 1);
}

/*
 * writer_window_add_directory remembers a sink folder that got a new entry
 * in the open window, to fsync when it closes.
 */
void
writer_window_add_directory(const char *directory)
{
	ListCell *lc;
	MemoryContext old;

	foreach (lc, window_directories)
		if (strcmp(lfirst(lc), directory) == 0)
			return;
	old = MemoryContextSwitchTo(WriterContext);
	window_directories = lappend(window_directories, pstrdup(directory));
	MemoryContextSwitchTo(old);
}

/*
 * writer_window_add_sealed hands the open window a file that a barrier
 * seals while it is dirty (its path; the file itself is closed): the
 * window fsyncs it as it closes, so the barrier's reply waits for no
 * fsync.  The committable may be recorded, and the file loaded and
 * removed, before that: its batches' records precede the commit record
 * of the committables (the PREPARE that follows flushes them), crash
 * recovery and standbys rewrite the file from them, and a PostgreSQL
 * checkpoint whose redo point passes them waits for this window.  With
 * no window open (never, as a dirty file was written in one) it is
 * fsynced at once.
 */
void
writer_window_add_sealed(const char *path)
{
	MemoryContext old;

	if (!window_open)
	{
		sync_sealed_file(path, ERROR);
		return;
	}
	old = MemoryContextSwitchTo(WriterContext);
	window_sealed = lappend(window_sealed, pstrdup(path));
	MemoryContextSwitchTo(old);
}

/*
 * writer_window_wait_event returns the wait event of the writer's wait for
 * work (wait_events.c): PaimonSinkSyncWindow while a sync window is open,
 * for every PostgreSQL checkpoint waits for it to close, else
 * PaimonSinkWriterMain.  Raises only as wait_event_for does.
 */
uint32
writer_window_wait_event(void)
{
	return wait_event_for(window_open ? WAIT_SYNC_WINDOW : WAIT_WRITER_MAIN);
}

/* writer_window_is_open tells whether a sync window is open. */
bool
writer_window_is_open(void)
{
	return window_open;
}

/*
 * writer_window_due tells whether the open window is to close now: its
 * time is up, or paimon_sink.group_fsync_delay is 0.
 */
bool
writer_window_due(void)
{
	return window_open &&
		   (PaimonSinkGroupFsyncDelayMs <= 0 || GetCurrentTimestamp() >= window_deadline);
}

/*
 * writer_window_exit fsyncs what the open window wrote and clears
 * DELAY_CHKPT_START, from the writer's exit callback: its acknowledged
 * batches may belong to committed transactions, so a checkpoint must not
 * pass them unsynced.  The window's transaction is aborted by
 * ShutdownPostgres, after this.
 */
void
writer_window_exit(void)
{
	if (!window_open)
		return;
	/*
	 * PANIC whatever data_sync_retry says: this process ends next, and
	 * with it the flag that holds checkpoints, so no later fsync would
	 * cover what this one failed to.  Crash recovery rewrites the staged
	 * bytes from their records instead.
	 */
	sync_window_files(PANIC);
	MyProc->delayChkptFlags &= ~DELAY_CHKPT_START;
	window_open = false;
}
