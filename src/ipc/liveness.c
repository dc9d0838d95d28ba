/*-------------------------------------------------------------------------
 *
 * liveness.c
 *	  Whether a writer answers, and what happens when one stops: the
 *	  heartbeat, the waits bounded by it, and the committer fencing and
 *	  restarting a writer that shows no progress; and the committer's own
 *	  heartbeat, which bounds the sessions' waits on it; and an idle
 *	  worker's other report, its statistics.
 *
 * A writer's heartbeat moves at every turn of its loop (which sleeps at
 * most liveness_idle_nap_ms) and at every step of a long piece of work
 * (each message received, each file sealed or fsynced).  Whoever waits for
 * a writer (a session for a hand-off queue, for room in it or for its
 * acknowledgement; the committer for a barrier answer) gives up once the
 * writer has shown no progress for paimon_sink.handoff_timeout since the
 * wait began, with ERRCODE_QUERY_CANCELED (57014): the wait was ended by a
 * timeout, as statement_timeout ends a statement.  A session's transaction
 * that gave up is rolled back, so its batch, even if the writer writes it
 * later, belongs to an aborted xid: every barrier leaves it out and an
 * adopting writer drops it.
 *
 * The committer watches its writers (a duty of its loop, and while it
 * waits for a barrier answer).  It fences the process of a writer that
 * shows no progress for the timeout: under the writer's mutex it marks the
 * entry fenced and not ready and withdraws the slots no sender took, so
 * that no session starts a hand-off to it, sessions waiting on it fail at
 * once and barriers refuse it; it sends the process SIGTERM (what
 * PostgreSQL does with a process it must be rid of: pg_terminate_backend,
 * or a walsender holding a slot a checkpoint invalidates) and starts the
 * writer again once the process has left.  A stopped process acts on
 * SIGTERM only when it runs again; SIGKILL would end it at once, but the
 * postmaster takes the death of any process attached to shared memory for
 * a crash and restarts the whole cluster, so it is sent only when
 * paimon_sink.fenced_writer_kill_delay asks for it.
 *
 * The fenced process may hold a sync window open (writer_window.c), and
 * with it DELAY_CHKPT_START, which every checkpoint waits for.  The
 * committer ends that hold for it: it fsyncs every staged file and folder
 * of the database (what the window would have fsynced is among them),
 * then clears the flag.  That is safe because a fenced writer acknowledges
 * nothing any more: the check of the fence and the acknowledgement are
 * made under one hold of the writer's mutex, which the fence takes too.
 * So every batch whose transaction may commit was written before the
 * fence and is fsynced by the committer; whatever the process writes if
 * it runs again belongs to a transaction that never got its
 * acknowledgement, which is rolled back, and may be lost in a crash
 * without harm.
 *
 * The committer publishes a heartbeat too (its database entry's), moved
 * by the committer alone: at each turn of its loop, as it takes a
 * request, for each chunk of a load COPY reads, at each look at its
 * loaders and each step of maintenance.  A session waiting on it (for a
 * request slot, or for its answer) gives up with 57014 once it has shown
 * no progress, or no committer served, for paimon_sink.committer_timeout.
 * Nothing is fenced: a request given up on stays queued or finishes, as
 * a cancelled one does (request.c).  The setting is its own, not
 * handoff_timeout: one statement of the committer (an upsert's MERGE)
 * shows no progress while it runs, which a writer's work never does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <signal.h>

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "common/file_utils.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/fd.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "core/constants.h"
#include "core/guc.h"
#include "core/shared_state.h"
#include "core/wait_events.h"
#include "ipc/liveness.h"

/*
 * An append sink without a bucket key passes over a writer whose heartbeat
 * is older than this (or half of paimon_sink.handoff_timeout, if less): a
 * healthy writer's loop turns at least every second.
 */
#define ROUTE_AROUND_AFTER_MS 2000

/* The committer's own record of the processes it fenced, to log their leaving. */
static pid_t *fenced_seen = NULL;

/* liveness_beat records that writer shows progress now (the writer's own call). */
void
liveness_beat(WriterEntry *writer)
{
	pg_atomic_write_u64(&writer->heartbeat, (uint64) GetCurrentTimestamp());
}

/*
 * liveness_idle_nap_ms returns the longest a writer's loop sleeps, and the
 * longest a waiter sleeps between two looks at a writer: a second, or a
 * quarter of paimon_sink.handoff_timeout when that is less.
 */
long
liveness_idle_nap_ms(void)
{
	return Min(1000, Max(10, PaimonSinkHandoffTimeoutMs / 4));
}

/*
 * liveness_report_statistics flushes a worker's counts (its tables' rows
 * inserted, updated and deleted, its WAL, its I/O) to the cumulative
 * statistics, where autovacuum and the pg_stat views read them, as
 * PostgresMain does for a backend going idle: a background worker's counts
 * are flushed only where it asks, and without this the committer's inserts,
 * updates and deletes in the extension's tables stayed unknown to
 * autovacuum (the tables bloat, their planner statistics go stale) until it
 * exited.  pgstat_report_stat flushes at most once a second and, asked too
 * early, says when to ask again: from then the flush is forced, as
 * PostgresMain's idle timer forces it (unforced, it would judge by the
 * stop time of the last transaction, which an idle worker never renews).
 * Outside a transaction only (a sync window is one): returns 0 there.
 * Returns in how many milliseconds counts still pending should be flushed
 * (0: none pending), for the caller's nap.
 */
long
liveness_report_statistics(void)
{
	static TimestampTz forced_at = 0;
	TimestampTz now;
	long wait;

	if (IsTransactionOrTransactionBlock())
		return 0;
	now = GetCurrentTimestamp();
	wait = pgstat_report_stat(forced_at != 0 && now >= forced_at);
	if (wait <= 0)
	{
		forced_at = 0;
		return 0;
	}
	if (forced_at == 0 || now >= forced_at)
		forced_at = TimestampTzPlusMilliseconds(now, wait);
	return Max(1, (long) ((forced_at - now) / 1000));
}

/* since_ms returns the milliseconds from then to now (0 for a time to come). */
static long
since_ms(TimestampTz then)
{
	return (long) TimestampDifferenceMilliseconds(then, GetCurrentTimestamp());
}

/* heartbeat_of returns the time of a writer's last sign of progress. */
static TimestampTz
heartbeat_of(WriterEntry *writer)
{
	return (TimestampTz) pg_atomic_read_u64(&writer->heartbeat);
}

/*
 * liveness_writer_answers tells whether a writer serves, is not fenced and
 * showed progress in the last ROUTE_AROUND_AFTER_MS: an append sink without
 * a bucket key hands its rows to such a writer only.
 */
bool
liveness_writer_answers(WriterEntry *writer)
{
	bool serving;

	SpinLockAcquire(&writer->mutex);
	serving = writer->ready && !writer->fenced;
	SpinLockRelease(&writer->mutex);
	return serving && since_ms(heartbeat_of(writer)) <
						  Min(ROUTE_AROUND_AFTER_MS, PaimonSinkHandoffTimeoutMs / 2);
}

/*
 * liveness_fenced_alive tells whether a writer's process is fenced and has
 * not left yet; *pid gets that process's id.
 */
bool
liveness_fenced_alive(WriterEntry *writer, pid_t *pid)
{
	bool alive;

	SpinLockAcquire(&writer->mutex);
	alive = writer->fenced && writer->pid != 0 && writer->pid == writer->fenced_pid;
	*pid = writer->fenced_pid;
	SpinLockRelease(&writer->mutex);
	return alive;
}

/*
 * liveness_writer_serves tells whether a writer lets its database go on:
 * it serves, or it is fenced and its process has not left (the database
 * works without it; once it left, it is being started again).
 */
bool
liveness_writer_serves(WriterEntry *writer)
{
	pid_t pid;
	bool ready;

	if (liveness_fenced_alive(writer, &pid))
		return true;
	SpinLockAcquire(&writer->mutex);
	ready = writer->ready;
	SpinLockRelease(&writer->mutex);
	return ready;
}

/*
 * liveness_remaining_ms returns how many milliseconds of
 * paimon_sink.handoff_timeout are left since start (at least 1), or 0 once
 * it has passed.
 */
long
liveness_remaining_ms(TimestampTz start)
{
	long waited = since_ms(start);

	if (waited >= PaimonSinkHandoffTimeoutMs)
		return 0;
	return Max(1, PaimonSinkHandoffTimeoutMs - waited);
}

/*
 * liveness_raise raises ERRCODE_QUERY_CANCELED for a wait on writer index
 * that it did not answer: what names the wait ("the hand-off of this
 * transaction"), outcome says what became of the waiter's work (a full
 * sentence).
 */
void
liveness_raise(WriterEntry *writer, int index, const char *what, const char *outcome)
{
	bool fenced;
	pid_t pid;
	TimestampTz fenced_at;
	long silent = since_ms(heartbeat_of(writer));

	SpinLockAcquire(&writer->mutex);
	fenced = writer->fenced;
	pid = fenced ? writer->fenced_pid : writer->pid;
	fenced_at = writer->fenced_at;
	SpinLockRelease(&writer->mutex);
	if (fenced)
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("sink writer %d (pid %d) did not answer %s", index, (int) pid, what),
				 errdetail("The committer fenced it %ld ms ago, after it showed no progress for "
						   "paimon_sink.handoff_timeout (%d ms); it is started again once its "
						   "process has left. %s",
						   since_ms(fenced_at), PaimonSinkHandoffTimeoutMs, outcome),
				 errhint("Look at process %d: stopped by a signal or a debugger, or waiting on a "
						 "hung disk. An append sink without a bucket key writes through the other "
						 "writers meanwhile.",
						 (int) pid)));
	ereport(ERROR,
			(errcode(ERRCODE_QUERY_CANCELED),
			 errmsg("sink writer %d (pid %d) did not answer %s", index, (int) pid, what),
			 errdetail("It showed no progress for %ld ms; paimon_sink.handoff_timeout is %d ms. %s",
					   silent, PaimonSinkHandoffTimeoutMs, outcome),
			 errhint("Look at process %d: stopped by a signal or a debugger, or waiting on a hung "
					 "disk. The committer fences it and starts the writer again once it has left; "
					 "an append sink without a bucket key writes through the other writers "
					 "meanwhile.",
					 (int) pid)));
}

/*
 * liveness_wait_left is the look at a writer a waiter makes between two
 * sleeps: -1 when the writer does not answer (it is fenced, or serves but
 * has shown no progress for paimon_sink.handoff_timeout since wait_start or
 * its last sign, whichever is later), else how long the waiter may sleep,
 * in ms.  A writer that does not serve yet is not judged here: the
 * caller's own bound covers its start.  incarnation, when not 0, is the
 * one the wait is on (a hand-off taken): its fence ends the wait even once
 * the process has left.
 */
long
liveness_wait_left(WriterEntry *writer, uint64 incarnation, TimestampTz wait_start)
{
	bool fenced;
	bool ready;
	TimestampTz since = Max(wait_start, heartbeat_of(writer));
	long left;

	SpinLockAcquire(&writer->mutex);
	/* a fenced process that has left is followed by a new one: that is waited for */
	fenced = writer->fenced &&
			 (incarnation != 0 ? writer->incarnation == incarnation
							   : writer->pid != 0 && writer->pid == writer->fenced_pid);
	ready = writer->ready;
	SpinLockRelease(&writer->mutex);
	if (fenced)
		return -1;
	if (!ready)
		return liveness_idle_nap_ms();
	left = PaimonSinkHandoffTimeoutMs - since_ms(since);
	if (left <= 0)
		return -1;
	return Min(left, liveness_idle_nap_ms());
}

/*
 * liveness_check_writer is liveness_wait_left for a session: when the
 * writer does not answer it raises ERRCODE_QUERY_CANCELED (liveness_raise:
 * what names the wait, outcome its consequence).
 */
long
liveness_check_writer(WriterEntry *writer, int index, uint64 incarnation, TimestampTz wait_start,
					  const char *what, const char *outcome)
{
	long left = liveness_wait_left(writer, incarnation, wait_start);

	if (left < 0)
		liveness_raise(writer, index, what, outcome);
	return left;
}

/*
 * liveness_sendv sends a message on a queue as shm_mq_sendv does, but never
 * waits without looking: while the receiver makes no room, check(arg,
 * wait_start) is made at least every liveness_idle_nap_ms; it may raise an
 * error, or return false to give up (then LIVENESS_SEND_GAVE_UP is
 * returned, and the queue must be detached: part of the message may be in
 * it).  The receiver sets our latch as it reads.  A wake-up the wait took
 * may have been meant for the caller's loop: the latch is set again.
 */
shm_mq_result
liveness_sendv(shm_mq_handle *queue, shm_mq_iovec *iov, int iovcnt, LivenessSendCheck check,
			   void *arg)
{
	TimestampTz wait_start = 0;
	shm_mq_result result;

	for (;;)
	{
		result = shm_mq_sendv(queue, iov, iovcnt, true, true);
		if (result != SHM_MQ_WOULD_BLOCK)
			break;
		if (wait_start == 0)
			wait_start = GetCurrentTimestamp();
		if (!check(arg, wait_start))
		{
			result = LIVENESS_SEND_GAVE_UP;
			break;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 liveness_idle_nap_ms(), wait_event_for(WAIT_QUEUE_SEND));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	if (wait_start != 0)
		SetLatch(MyLatch);
	return result;
}

/*
 * liveness_committer_reads is the check of a writer sending barrier
 * records (arg: its WriterEntry): waiting for the committer to read is
 * progress of the writer's own, but the wait gives up once the committer
 * has read nothing for paimon_sink.handoff_timeout.
 */
bool
liveness_committer_reads(void *arg, TimestampTz wait_start)
{
	liveness_beat((WriterEntry *) arg);
	return since_ms(wait_start) < PaimonSinkHandoffTimeoutMs;
}

/* ------------------------------------------------------ the committer */

/* database_label returns this database's name for log lines (cached). */
static const char *
database_label(void)
{
	static char *label = NULL;

	if (label == NULL)
	{
		bool own = !IsTransactionState();
		char *name;

		if (own)
			StartTransactionCommand();
		name = get_database_name(MyDatabaseId);
		label = MemoryContextStrdup(TopMemoryContext, name != NULL ? name : "?");
		if (own)
			CommitTransactionCommand();
	}
	return label;
}

/*
 * sync_path fsyncs a staged file or folder that the committer did not
 * write; one removed meanwhile (a dropped sink) is skipped.  An fsync that
 * fails raises data_sync_elevel(ERROR), as PostgreSQL's own fsyncs do.
 */
static void
sync_path(const char *path, bool directory)
{
	int fd = OpenTransientFile(path, (directory ? O_RDONLY : O_RDWR) | PG_BINARY);

	if (fd < 0 && errno == ENOENT)
		return;
	if (fd < 0)
		ereport(ERROR, (errcode_for_file_access(), errmsg("could not open \"%s\": %m", path)));
	if (pg_fsync(fd) != 0)
		ereport(data_sync_elevel(ERROR),
				(errcode_for_file_access(), errmsg("could not fsync \"%s\": %m", path)));
	CloseTransientFile(fd);
}

/*
 * sync_database_files fsyncs every staged file of this database and the
 * folders that hold them: whatever a fenced writer's open sync window
 * wrote is among them.  Returns how many files it fsynced.
 */
static int
sync_database_files(void)
{
	char database_path[MAXPGPATH];
	DIR *sinks;
	struct dirent *sink_entry;
	int files = 0;

	snprintf(database_path, sizeof(database_path), "%s/%u", PAIMON_SINK_DIRECTORY, MyDatabaseId);
	sinks = AllocateDir(database_path);
	if (sinks == NULL)
		return 0;
	while ((sink_entry = ReadDir(sinks, database_path)) != NULL)
	{
		char sink_path[MAXPGPATH];
		DIR *dir;
		struct dirent *entry;

		if (sink_entry->d_name[0] == '\0' ||
			strspn(sink_entry->d_name, "0123456789") != strlen(sink_entry->d_name))
			continue;
		snprintf(sink_path, sizeof(sink_path), "%s/%s", database_path, sink_entry->d_name);
		dir = AllocateDir(sink_path);
		if (dir == NULL)
			continue;
		while ((entry = ReadDir(dir, sink_path)) != NULL)
		{
			char path[MAXPGPATH];

			if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s", sink_path, entry->d_name);
			if (get_dirent_type(path, entry, false, LOG) != PGFILETYPE_REG)
				continue;
			sync_path(path, false);
			files++;
		}
		FreeDir(dir);
		sync_path(sink_path, true);
	}
	FreeDir(sinks);
	sync_path(database_path, true);
	sync_path(PAIMON_SINK_DIRECTORY, true);
	return files;
}

/*
 * release_checkpoint_hold ends the hold a fenced writer's open sync window
 * has on PostgreSQL's checkpoints (see the file comment): the staged files
 * are fsynced first, then DELAY_CHKPT_START is cleared, under
 * ProcArrayLock and only while proc is still that process's, so that a
 * PGPROC another process took meanwhile is never touched.
 */
static void
release_checkpoint_hold(int index, PGPROC *proc, pid_t pid)
{
	int files;
	bool cleared = false;

	if (proc == NULL || (proc->delayChkptFlags & DELAY_CHKPT_START) == 0)
		return;
	files = sync_database_files();
	pg_memory_barrier();
	LWLockAcquire(ProcArrayLock, LW_EXCLUSIVE);
	if (proc->pid == pid && (proc->delayChkptFlags & DELAY_CHKPT_START) != 0)
	{
		proc->delayChkptFlags &= ~DELAY_CHKPT_START;
		cleared = true;
	}
	LWLockRelease(ProcArrayLock);
	if (cleared)
		ereport(LOG, (errmsg("paimon_sink committer released the checkpoint hold of fenced writer "
							 "%d (pid %d) of database \"%s\"",
							 index, (int) pid, database_label()),
					  errdetail("Its sync window was open; the committer fsynced the database's "
								"%d staged files and their folders first.",
								files)));
}

/*
 * liveness_fence fences the process of writer index of the committer's
 * database, which did not answer what (see the file comment): marked
 * fenced and not ready, its untaken slots withdrawn, its waiting sessions
 * woken, SIGTERM sent, its checkpoint hold released.  Does nothing when the
 * writer has no process or is fenced already.
 */
void
liveness_fence(int index, const char *what)
{
	WriterEntry *writer = shared_writer(MyDatabaseEntry, index);
	PGPROC **requesters = palloc0(sizeof(PGPROC *) * writer->slot_count);
	int waiting = 0;
	pid_t pid;
	PGPROC *proc;

	SpinLockAcquire(&writer->mutex);
	pid = writer->pid;
	proc = writer->proc;
	if (pid == 0 || writer->fenced)
	{
		SpinLockRelease(&writer->mutex);
		pfree(requesters);
		return;
	}
	writer->fenced = true;
	writer->fenced_pid = pid;
	writer->fenced_at = GetCurrentTimestamp();
	writer->fenced_kill_sent = false;
	writer->fences++;
	writer->ready = false;
	for (int s = 0; s < writer->slot_count; s++)
	{
		HandoffSlot *slot = &writer->slots[s];

		if (slot->incarnation != writer->incarnation)
			continue;
		if (slot->state == HANDOFF_FREE)
			slot->published = false; /* armed, not taken: no sender may take it now */
		else if (slot->requester != NULL)
			requesters[waiting++] = slot->requester;
	}
	SpinLockRelease(&writer->mutex);

	if (fenced_seen == NULL)
		fenced_seen =
			MemoryContextAllocZero(TopMemoryContext, sizeof(pid_t) * PaimonSinkWritersPerDatabase);
	fenced_seen[index] = pid;
	ereport(LOG,
			(errmsg("paimon_sink committer fences writer %d (pid %d) of database \"%s\": it did "
					"not answer %s",
					index, (int) pid, database_label(), what),
			 errdetail("It showed no progress for %ld ms; paimon_sink.handoff_timeout is %d ms. It "
					   "is sent SIGTERM and started again once it has left; meanwhile it "
					   "acknowledges no hand-off and answers no barrier, the sessions waiting on "
					   "it fail with SQLSTATE 57014, and append sinks without a bucket key write "
					   "through the other writers.",
					   since_ms(heartbeat_of(writer)), PaimonSinkHandoffTimeoutMs)));
	if (kill(pid, SIGTERM) != 0 && errno != ESRCH)
		ereport(WARNING, (errmsg("could not send SIGTERM to paimon_sink writer %d (pid %d): %m",
								 index, (int) pid)));
	for (int i = 0; i < waiting; i++)
		SetLatch(&requesters[i]->procLatch);
	pfree(requesters);
	ConditionVariableBroadcast(&writer->slot_freed);
	ConditionVariableBroadcast(&MyDatabaseEntry->workers_ready);
	release_checkpoint_hold(index, proc, pid);
}

/*
 * liveness_refuse_fenced raises ERRCODE_QUERY_CANCELED when writer index
 * of the committer's database is fenced and its process has not left: a
 * barrier needs every writer's answer (outcome: what becomes of the
 * request, a full sentence).
 */
void
liveness_refuse_fenced(int index, const char *outcome)
{
	WriterEntry *writer = shared_writer(MyDatabaseEntry, index);
	pid_t pid;

	if (liveness_fenced_alive(writer, &pid))
		liveness_raise(writer, index, "the barrier", outcome);
}

/*
 * kill_if_asked sends SIGKILL to a fenced writer's process that has not
 * left paimon_sink.fenced_writer_kill_delay after its fence, when that
 * setting is not -1; the postmaster then restarts the cluster.
 */
static void
kill_if_asked(int index, WriterEntry *writer)
{
	pid_t pid;
	bool send = false;
	TimestampTz fenced_at;

	if (PaimonSinkFencedWriterKillDelayMs < 0)
		return;
	SpinLockAcquire(&writer->mutex);
	pid = writer->fenced_pid;
	fenced_at = writer->fenced_at;
	if (writer->fenced && writer->pid == pid && pid != 0 && !writer->fenced_kill_sent &&
		since_ms(fenced_at) >= PaimonSinkFencedWriterKillDelayMs)
	{
		writer->fenced_kill_sent = true;
		send = true;
	}
	SpinLockRelease(&writer->mutex);
	if (!send)
		return;
	ereport(
		LOG,
		(errmsg("paimon_sink committer sends SIGKILL to fenced writer %d (pid %d) of database "
				"\"%s\"",
				index, (int) pid, database_label()),
		 errdetail("It has not left %ld ms after its fence (paimon_sink.fenced_writer_kill_delay "
				   "is %d ms); the postmaster restarts the cluster.",
				   since_ms(fenced_at), PaimonSinkFencedWriterKillDelayMs)));
	(void) kill(pid, SIGKILL);
}

/*
 * liveness_watch is the committer's look at its writers: it fences each
 * serving writer that showed no progress for paimon_sink.handoff_timeout,
 * releases again the checkpoint hold of a fenced process that took one
 * since, sends SIGKILL when paimon_sink.fenced_writer_kill_delay says so,
 * and logs when a fenced process has left.  Returns whether it fenced one.
 */
bool
liveness_watch(void)
{
	bool fenced_one = false;

	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
	{
		WriterEntry *writer = shared_writer(MyDatabaseEntry, w);
		pid_t pid;
		PGPROC *proc;
		bool ready;
		bool fenced;

		SpinLockAcquire(&writer->mutex);
		pid = writer->pid;
		proc = writer->proc;
		ready = writer->ready;
		fenced = writer->fenced;
		SpinLockRelease(&writer->mutex);

		if (fenced_seen != NULL && fenced_seen[w] != 0 && (!fenced || pid != fenced_seen[w]))
		{
			ereport(LOG, (errmsg("paimon_sink writer %d (pid %d) of database \"%s\" has left "
								 "after its fence; the committer starts it again",
								 w, (int) fenced_seen[w], database_label())));
			fenced_seen[w] = 0;
		}
		if (fenced && pid != 0)
		{
			release_checkpoint_hold(w, proc, pid);
			kill_if_asked(w, writer);
		}
		else if (!fenced && ready && pid != 0 &&
				 since_ms(heartbeat_of(writer)) >= PaimonSinkHandoffTimeoutMs)
		{
			liveness_fence(w, "within paimon_sink.handoff_timeout");
			fenced_one = true;
		}
	}
	return fenced_one;
}

/*
 * liveness_watch_interval_ms is the interval of the committer's watch over
 * its writers: a quarter of paimon_sink.handoff_timeout, at most a second.
 */
int
liveness_watch_interval_ms(void)
{
	return (int) liveness_idle_nap_ms();
}

/* ---------------------------------------------- the committer's heartbeat */

/* Whether this process is its database's committer, whose beats count. */
static bool beating_for_committer = false;

/*
 * liveness_committer_start makes this process's liveness_committer_beat
 * calls move its database's committer heartbeat, and beats once: called
 * as the process registers as the committer.  A loader runs the same load
 * code; its calls move nothing, so that a running loader never makes a
 * stopped committer look alive.
 */
void
liveness_committer_start(void)
{
	beating_for_committer = true;
	liveness_committer_beat();
}

/*
 * liveness_committer_beat records that the committer shows progress now:
 * called at each turn of its loop, as it takes a request, for each chunk
 * of a load COPY reads, at each look at its loaders and each step of
 * maintenance.  One clock read and one atomic write, cheap enough for
 * every 64 kB a COPY reads.  Does nothing in any other process.
 */
void
liveness_committer_beat(void)
{
	if (beating_for_committer)
		pg_atomic_write_u64(&MyDatabaseEntry->committer_heartbeat, (uint64) GetCurrentTimestamp());
}

/*
 * liveness_committer_nap_ms returns the longest the committer's loop may
 * sleep so that an idle committer still beats well within
 * paimon_sink.committer_timeout: a quarter of it (the default, 60 s,
 * allows 15 s, above the loop's own longest nap).
 */
long
liveness_committer_nap_ms(void)
{
	return Max(10, PaimonSinkCommitterTimeoutMs / 4);
}

/*
 * liveness_check_committer is the look a session waiting on db's committer
 * makes between two sleeps (what: the wait, "a free request slot" or "this
 * request"; outcome: what becomes of the request, a full sentence).
 * *progress_at is the time of the last progress the wait saw, the wait's
 * start at first: the committer's heartbeat counts while a committer runs
 * and serves (committer_ready) or serves this request (running).  Once
 * there has been none for paimon_sink.committer_timeout it raises
 * ERRCODE_QUERY_CANCELED, as a wait on a writer does (liveness_raise),
 * naming the committer's pid, the database and the silence, or saying that
 * no committer runs or that it does not serve; else it returns how long
 * the caller may sleep, in ms.  Reads the entry under PaimonSinkState->lock
 * (taken here).
 */
long
liveness_check_committer(DatabaseEntry *db, bool running, TimestampTz *progress_at,
						 const char *what, const char *outcome)
{
	pid_t pid;
	bool ready;
	TimestampTz heartbeat = (TimestampTz) pg_atomic_read_u64(&db->committer_heartbeat);
	long silent;
	char *database_name;

	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	pid = db->committer_pid;
	ready = db->committer_ready;
	LWLockRelease(PaimonSinkState->lock);
	if (pid != 0 && (ready || running))
		*progress_at = Max(*progress_at, heartbeat);
	silent = since_ms(*progress_at);
	if (silent < PaimonSinkCommitterTimeoutMs)
		return Min(1000, Max(10, Min(PaimonSinkCommitterTimeoutMs / 4,
									 PaimonSinkCommitterTimeoutMs - silent)));

	database_name = get_database_name(MyDatabaseId);
	if (database_name == NULL)
		database_name = "?";
	if (pid == 0)
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("no paimon_sink committer is running in database \"%s\"", database_name),
				 errdetail("None served %s for %ld ms; paimon_sink.committer_timeout is %d ms. %s",
						   what, silent, PaimonSinkCommitterTimeoutMs, outcome),
				 errhint("Check that max_worker_processes leaves room for the launcher and, per "
						 "database with sinks, one committer and paimon_sink.writers_per_database "
						 "writers; the server log says why the committer did not start.")));
	if (!ready && !running)
		ereport(ERROR,
				(errcode(ERRCODE_QUERY_CANCELED),
				 errmsg("the paimon_sink committer (pid %d) of database \"%s\" did not serve %s",
						(int) pid, database_name, what),
				 errdetail("It has not served requests for %ld ms: not all its writers run. "
						   "paimon_sink.committer_timeout is %d ms. %s",
						   silent, PaimonSinkCommitterTimeoutMs, outcome),
				 errhint("Check that max_worker_processes leaves room for "
						 "paimon_sink.writers_per_database writers per database with sinks; the "
						 "server log says why a writer did not start.")));
	ereport(
		ERROR,
		(errcode(ERRCODE_QUERY_CANCELED),
		 errmsg("the paimon_sink committer (pid %d) of database \"%s\" did not answer %s",
				(int) pid, database_name, what),
		 errdetail("It showed no progress for %ld ms; paimon_sink.committer_timeout is %d ms. %s",
				   silent, PaimonSinkCommitterTimeoutMs, outcome),
		 errhint("Look at process %d: stopped by a signal or a debugger, or waiting on a hung "
				 "disk or a lock (pg_stat_activity shows its wait). One long statement of the "
				 "committer (an upsert's MERGE) shows no progress until it ends: "
				 "paimon_sink.committer_timeout must exceed it.",
				 (int) pid)));
	pg_unreachable();
}
