/*-------------------------------------------------------------------------
 *
 * launcher.c
 *	  The launcher background worker (after pg_cron's launcher and the
 *	  logical replication launcher: a static worker, restarted by the
 *	  postmaster, connected to no database, reading pg_database).
 *
 * At start it marks every connectable database as wanted: a committer
 * started there checks for the extension and leaves (marking the database)
 * when it is not installed.  CREATE EXTENSION and create_sink mark their
 * database wanted and wake the launcher.  A committer that stops for any
 * other reason is started again after a pause, never in a tight loop.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "launcher.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "shared_state.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

/* A stopped committer is started again after this pause. */
#define COMMITTER_RESTART_DELAY_MS 1000

/* launcher_register registers the static launcher (from _PG_init). */
void
launcher_register(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = 5;
	snprintf(worker.bgw_library_name, BGW_MAXLEN, "paimon_sink");
	snprintf(worker.bgw_function_name, BGW_MAXLEN, "paimon_sink_launcher_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "paimon_sink launcher");
	snprintf(worker.bgw_type, BGW_MAXLEN, "paimon_sink launcher");
	RegisterBackgroundWorker(&worker);
}

/*
 * launcher_start_worker registers a dynamic worker of this library by its
 * entry point's name (as the logical replication launcher does): it
 * connects to a database, the caller is notified when it starts and stops
 * (so its handle works), and the postmaster never restarts it (its starter
 * does that).  NULL when no worker slot is free.
 */
static BackgroundWorkerHandle *
launcher_start_worker(const char *function, const char *type, const char *name, Datum main_arg)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(worker.bgw_library_name, "paimon_sink", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker.bgw_name, name, BGW_MAXLEN);
	strlcpy(worker.bgw_type, type, BGW_MAXLEN);
	worker.bgw_main_arg = main_arg;
	worker.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		return NULL;
	return handle;
}

/*
 * launcher_start_committer registers the committer of a database entry
 * (paimon_sink_committer_main); the launcher calls it, and is told when
 * the committer stops.  NULL when no worker slot is free.
 */
BackgroundWorkerHandle *
launcher_start_committer(int database_index)
{
	return launcher_start_worker("paimon_sink_committer_main", "paimon_sink committer",
								 "paimon_sink committer", Int32GetDatum(database_index));
}

/*
 * launcher_start_writer registers writer writer_index of a database entry
 * (paimon_sink_writer_main).  The committer calls it: the writer's stop is
 * told to the committer, which restarts it and attaches barrier reply
 * queues with the handle.  NULL when no worker slot is free.
 */
BackgroundWorkerHandle *
launcher_start_writer(int database_index, int writer_index)
{
	char name[BGW_MAXLEN];

	snprintf(name, sizeof(name), "paimon_sink writer %d", writer_index);
	return launcher_start_worker("paimon_sink_writer_main", "paimon_sink writer", name,
								 Int32GetDatum((database_index << 16) | writer_index));
}

/*
 * launcher_start_loader registers loader loader_index of a database entry
 * (paimon_sink_loader_main), whose assignment the committer has written
 * into the entry.  The committer calls it, is told when the loader starts
 * and stops, and waits on the handle.  NULL when no worker slot is free.
 */
BackgroundWorkerHandle *
launcher_start_loader(int database_index, int loader_index)
{
	char name[BGW_MAXLEN];

	snprintf(name, sizeof(name), "paimon_sink loader %d", loader_index);
	return launcher_start_worker("paimon_sink_loader_main", "paimon_sink loader", name,
								 Int32GetDatum((database_index << 16) | loader_index));
}

/* Mark every connectable, non-template database as wanted. */
static void
want_all_databases(void)
{
	Relation rel;
	TableScanDesc scan;
	HeapTuple tuple;
	List *databases = NIL;
	ListCell *lc;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while ((tuple = heap_getnext(scan, ForwardScanDirection)) != NULL)
	{
		Form_pg_database database = (Form_pg_database) GETSTRUCT(tuple);

		if (database->datallowconn && !database->datistemplate)
			databases = lappend_oid(databases, database->oid);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	PopActiveSnapshot();
	CommitTransactionCommand();

	foreach (lc, databases)
	{
		PG_TRY();
		{
			(void) shared_want_database(lfirst_oid(lc));
		}
		PG_CATCH();
		{
			EmitErrorReport();
			FlushErrorState();
		}
		PG_END_TRY();
	}
}

/* launcher_exit forgets the launcher in shared memory as it exits (on_shmem_exit). */
static void
launcher_exit(int code, Datum arg)
{
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	PaimonSinkState->launcher_pid = 0;
	PaimonSinkState->launcher_proc = NULL;
	LWLockRelease(PaimonSinkState->lock);
}

/* paimon_sink_launcher_main is the entry point of the launcher worker. */
void
paimon_sink_launcher_main(Datum main_arg)
{
	int count;
	BackgroundWorkerHandle **handles;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();
	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("paimon_sink launcher");

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	PaimonSinkState->launcher_pid = MyProcPid;
	PaimonSinkState->launcher_proc = MyProc;
	count = PaimonSinkState->database_count;
	LWLockRelease(PaimonSinkState->lock);
	before_shmem_exit(launcher_exit, 0);

	handles = MemoryContextAllocZero(TopMemoryContext, sizeof(BackgroundWorkerHandle *) * count);
	want_all_databases();

	for (;;)
	{
		TimestampTz now = GetCurrentTimestamp();

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		for (int d = 0; d < count; d++)
		{
			DatabaseEntry *db = shared_database(d);
			pid_t pid;
			bool wanted;
			TimestampTz failed_at;

			LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
			wanted = db->state == DATABASE_WANTED && db->committer_pid == 0;
			failed_at = db->committer_failed_at;
			LWLockRelease(PaimonSinkState->lock);

			if (handles[d] != NULL)
			{
				if (GetBackgroundWorkerPid(handles[d], &pid) != BGWH_STOPPED)
					continue;
				pfree(handles[d]);
				handles[d] = NULL;
			}
			if (!wanted)
				continue;
			/* pause after a failure, never restart in a tight loop */
			if (failed_at != 0 &&
				!TimestampDifferenceExceeds(failed_at, now, COMMITTER_RESTART_DELAY_MS))
				continue;
			handles[d] = launcher_start_committer(d);
			if (handles[d] == NULL)
				ereport(WARNING, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
								  errmsg("could not start a paimon_sink committer"),
								  errhint("Raise max_worker_processes.")));
		}

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000,
						 PG_WAIT_EXTENSION);
	}
}
