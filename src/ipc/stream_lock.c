/*-------------------------------------------------------------------------
 *
 * stream_lock.c
 *	  The lock that orders the transactions writing a commit user's rows
 *	  into a sink against end_input() of that commit user.
 *
 * A barrier takes the rows of the transactions that committed before it
 * and carries those of the transactions still running into the next
 * checkpoint.  end_input()'s checkpoint (END_INPUT) has no next one: rows
 * a transaction handed to the writers before it, or brings after it, but
 * commits after its barrier would wait in staged files for ever while
 * their transaction had committed.  So each transaction that writes under
 * a commit user takes a transactional lock of (database, sink, commit
 * user) in AccessShareLock before its first hand-off (handoff.c), and
 * checks, once it holds it, that the commit user's input has not ended
 * meanwhile; the committer takes it in AccessExclusiveLock in the
 * transaction that runs end_input()'s barrier and records its prepare.
 * A writing transaction is then either over before that barrier (its rows
 * in the checkpoint) or refused at its commit (its rows never count).
 *
 * The tag is an advisory lock's with its own class in field4 (PostgreSQL's
 * pg_advisory_* use 1 and 2), as extensions tag their own locks (Citus's
 * advisory lock classes): pg_locks shows it as locktype advisory, objid the
 * commit user's hash, objsubid PAIMON_SINK_STREAM_LOCK_CLASS.  Sessions
 * wait for it as for any lock (lock_timeout applies); the committer only
 * tries it, between naps, for at most paimon_sink.handoff_timeout, so that
 * a transaction left open cannot hold it (and every sink of the database)
 * up.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "core/constants.h"
#include "core/guc.h"
#include "core/wait_events.h"
#include "ipc/liveness.h"
#include "ipc/stream_lock.h"

/* field4 of the tag: paimon_sink's resource manager id, no advisory lock's */
#define PAIMON_SINK_STREAM_LOCK_CLASS 187

/* stream_tag fills tag with the lock of a commit user's rows of a sink in this database. */
static void
stream_tag(LOCKTAG *tag, int32 sink_id, const char *commit_user)
{
	uint32 hash = hash_bytes((const unsigned char *) commit_user, (int) strlen(commit_user));

	SET_LOCKTAG_ADVISORY(*tag, MyDatabaseId, (uint32) sink_id, hash, PAIMON_SINK_STREAM_LOCK_CLASS);
}

/*
 * stream_lock_for_write takes, until the end of the current transaction,
 * the lock of commit_user's rows of sink sink_id in AccessShareLock,
 * waiting while an end_input() of that commit user holds it.  Writing
 * transactions do not block one another.  Raises what a lock wait raises
 * (a deadlock, lock_timeout).
 */
void
stream_lock_for_write(int32 sink_id, const char *commit_user)
{
	LOCKTAG tag;

	stream_tag(&tag, sink_id, commit_user);
	(void) LockAcquire(&tag, AccessShareLock, false, false);
}

/*
 * stream_lock_for_end_input takes, until the end of the committer's current
 * transaction, the lock of commit_user's rows of sink sink_id in
 * AccessExclusiveLock, once every transaction writing under that commit
 * user has ended; new ones wait until this transaction ends.  It tries
 * between naps of 10 ms, the committer beating, and refuses
 * (ERRCODE_OBJECT_IN_USE) when transactions still hold it after
 * paimon_sink.handoff_timeout, its hint saying how to find them: nothing
 * was prepared.
 */
void
stream_lock_for_end_input(int32 sink_id, const char *sink_name, const char *commit_user)
{
	LOCKTAG tag;
	TimestampTz start = GetCurrentTimestamp();

	stream_tag(&tag, sink_id, commit_user);
	while (LockAcquire(&tag, AccessExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
	{
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), PaimonSinkHandoffTimeoutMs))
			ereport(
				ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg("commit user \"%s\" of sink \"%s\" still has transactions writing",
						commit_user, sink_name),
				 errdetail("end_input() waits for the transactions that write under the "
						   "commit user to end, for %d ms at most (paimon_sink.handoff_timeout); "
						   "some had not. Nothing was prepared.",
						   PaimonSinkHandoffTimeoutMs),
				 errhint("They hold the lock SELECT pid FROM pg_locks WHERE locktype = "
						 "'advisory' AND objsubid = %d AND classid = %d AND objid = %u shows. "
						 "Commit or end them, then call end_input() again.",
						 PAIMON_SINK_STREAM_LOCK_CLASS, sink_id, tag.locktag_field3)));
		liveness_committer_beat();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
						 wait_event_for(WAIT_STREAM_LOCK));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}
