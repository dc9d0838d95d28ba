/*-------------------------------------------------------------------------
 *
 * commit_removal.c
 *	  Unlinking the staged files of committed checkpoints once their REMOVE
 *	  records are durable.
 *
 * Staged files of checkpoints committed by the request being served, and
 * the end of their REMOVE records, written right after COMMIT PREPARED
 * (committed_removals).  Once the requester has its answer they join the
 * removals pending (removal_pending, up to removal_pending_lsn), which are
 * unlinked once a later WAL flush made their records durable: the next
 * checkpoint's PREPARE, any commit, or the committer's own flush when it
 * has had nothing else to do for a moment (commit_finish_removals).  A file is never
 * removed before its checkpoint committed: a prepared transaction that
 * recovery or an operator rolls back leaves its checkpoint committable
 * from the files.  A crash before the unlink leaves the files to redo
 * (records flushed) or to recovery_remove_committed_files at the next
 * start.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "nodes/pg_list.h"
#include "utils/memutils.h"

#include "committer/commit_removal.h"
#include "staging/staged_file.h"

static List *committed_paths = NIL;
static XLogRecPtr committed_removals = InvalidXLogRecPtr;
static List *removal_pending = NIL;
static XLogRecPtr removal_pending_lsn = InvalidXLogRecPtr;

/*
 * commit_removal_add keeps a staged file of a checkpoint the request being
 * served committed, to be unlinked once its REMOVE record is durable.
 */
void
commit_removal_add(const char *path)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	committed_paths = lappend(committed_paths, pstrdup(path));
	MemoryContextSwitchTo(old);
}

/*
 * commit_removal_logged notes the end of a committed checkpoint's REMOVE
 * records (InvalidXLogRecPtr: none written).
 */
void
commit_removal_logged(XLogRecPtr removals)
{
	if (!XLogRecPtrIsInvalid(removals))
		committed_removals = removals;
}

/*
 * unlink_pending unlinks the removals pending, when their REMOVE records
 * are durable, or after flushing them when flush is true.
 */
static void
unlink_pending(bool flush)
{
	if (removal_pending == NIL)
		return;
	if (!flush && GetFlushRecPtr(NULL) < removal_pending_lsn)
		return;
	(void) staged_file_unlink_logged(removal_pending, removal_pending_lsn, LOG);
	list_free_deep(removal_pending);
	removal_pending = NIL;
	removal_pending_lsn = InvalidXLogRecPtr;
}

/*
 * commit_remove_files unlinks the removals pending whose REMOVE records a
 * WAL flush made durable (the request just served flushed its PREPARE),
 * then hands the staged files of the checkpoints that request committed
 * to the removals pending (no flush of its own: see removal_pending).
 * In that order: the new records are not flushed yet, and one pending
 * LSN for both would keep the older files until the committer is idle.
 */
void
commit_remove_files(void)
{
	MemoryContext old;

	unlink_pending(false);
	old = MemoryContextSwitchTo(TopMemoryContext);
	removal_pending = list_concat(removal_pending, committed_paths);
	MemoryContextSwitchTo(old);
	list_free(committed_paths);
	committed_paths = NIL;
	if (!XLogRecPtrIsInvalid(committed_removals))
		removal_pending_lsn = Max(removal_pending_lsn, committed_removals);
	committed_removals = InvalidXLogRecPtr;
	unlink_pending(false);
}

/*
 * commit_removals_pending tells whether staged files wait for a WAL flush
 * to be unlinked (their REMOVE records not yet known durable).
 */
bool
commit_removals_pending(void)
{
	unlink_pending(false);
	return removal_pending != NIL;
}

/*
 * commit_finish_removals unlinks every removal pending, flushing their
 * REMOVE records first when no other flush did: the committer calls it
 * before it naps, when no request waits for it.
 */
void
commit_finish_removals(void)
{
	unlink_pending(true);
}
