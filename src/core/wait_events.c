/*-------------------------------------------------------------------------
 *
 * wait_events.c
 *	  The wait event ids of paimon_sink's waits, handed out once per
 *	  process.
 *
 * A DBA finds a process that waits in pg_stat_activity.wait_event; since
 * PostgreSQL 17 an extension may name its waits there
 * (WaitEventExtensionNew: the server keeps the names in its own shared
 * memory, one id per name for the whole cluster, and pg_stat_activity
 * shows the name for that id, as worker_spi's WorkerSpiMain).  Each
 * process asks for the ids on its first wait, not in _PG_init: the
 * postmaster loads the library before shared memory exists, and a
 * process that never waits asks nothing.  All ids at once, so that a
 * later wait cannot fail on a full table.  Before 17 pg_compat.h gives
 * every wait the one event Extension.  The names are docs/operations.md's
 * table, PostgreSQL's CamelCase.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/wait_event.h"

#include "core/pg_compat.h"
#include "core/wait_events.h"

/* The name of each wait, by PaimonSinkWait. */
static const char *const wait_names[WAIT_COUNT] = {
	[WAIT_HANDOFF_ACK] = "PaimonSinkHandoffAck",
	[WAIT_HANDOFF_QUEUE] = "PaimonSinkHandoffQueue",
	[WAIT_WORKERS_READY] = "PaimonSinkWorkersReady",
	[WAIT_COMMITTER_REQUEST] = "PaimonSinkCommitterRequest",
	[WAIT_REQUEST_SLOT] = "PaimonSinkRequestSlot",
	[WAIT_BARRIER] = "PaimonSinkBarrier",
	[WAIT_BARRIER_WRITER_IDLE] = "PaimonSinkBarrierWriterIdle",
	[WAIT_COMMITTER_MAIN] = "PaimonSinkCommitterMain",
	[WAIT_EXTENSION_UPDATE] = "PaimonSinkExtensionUpdate",
	[WAIT_LOADERS] = "PaimonSinkLoaders",
	[WAIT_WORKERS_EXIT] = "PaimonSinkWorkersExit",
	[WAIT_STREAM_LOCK] = "PaimonSinkStreamLock",
	[WAIT_QUEUE_SEND] = "PaimonSinkQueueSend",
	[WAIT_WRITER_MAIN] = "PaimonSinkWriterMain",
	[WAIT_SYNC_WINDOW] = "PaimonSinkSyncWindow",
	[WAIT_LAUNCHER_MAIN] = "PaimonSinkLauncherMain",
	[WAIT_FAULT_PAUSE] = "PaimonSinkFaultPause",
	[WAIT_LOAD_AHEAD_ROWS] = "PaimonSinkLoadAheadRows",
	[WAIT_LOAD_AHEAD_CHECKPOINT] = "PaimonSinkLoadAheadCheckpoint",
};

/* This process's ids, by PaimonSinkWait; valid once assigned is. */
static uint32 wait_ids[WAIT_COUNT];
static bool assigned = false;

/*
 * wait_event_for returns the wait event id to pass WaitLatch or
 * ConditionVariableTimedSleep for wait: on PostgreSQL 17 and later the
 * custom wait event of its name, before 17 PG_WAIT_EXTENSION.  The first
 * call of a process asks the server for every id (a shared lock, an
 * exclusive one for a name new to the cluster), so it must not run in a
 * critical section or under a spinlock; it raises
 * ERRCODE_PROGRAM_LIMIT_EXCEEDED (the server's) only when the cluster's
 * table of custom wait events is full.
 */
uint32
wait_event_for(PaimonSinkWait wait)
{
	Assert(wait >= 0 && wait < WAIT_COUNT);
	if (!assigned)
	{
		for (int i = 0; i < WAIT_COUNT; i++)
			wait_ids[i] = WaitEventExtensionNew(wait_names[i]);
		assigned = true;
	}
	return wait_ids[wait];
}
