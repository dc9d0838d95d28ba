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
 * database wanted and wake the launcher; the commit of a DROP that took the
 * extension with it marks it unwanted, and the launcher stops trying.  A
 * committer that stops for any other reason is started again after a
 * pause, never in a tight loop.
 *
 * The worker budget (budget.c) decides which databases get workers: a
 * database known to have the extension that the budget cannot serve is
 * reported, naming it, with the budget's arithmetic, and started as soon
 * as another database's workers leave; a database only to be probed waits
 * quietly meanwhile (its committer would leave at once).  A start that
 * finds no free slot although the budget has room (other kinds of workers
 * hold it) is tried again after a pause that doubles with each failure, up
 * to a minute, and from the start when any of our databases lets its
 * workers go.  Each database is logged at most once a minute.
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
#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "core/budget.h"
#include "core/shared_state.h"
#include "core/wait_events.h"
#include "core/worker_start.h"
#include "launcher.h"

/* A stopped committer is started again after this pause. */
#define COMMITTER_RESTART_DELAY_MS 1000

/* A start that found no free slot is retried after 1 s, 2 s, 4 s ... up to this. */
#define START_RETRY_MAX_MS 60000

/* A database's trouble is logged at most this often. */
#define LAUNCHER_LOG_INTERVAL_MS 60000

/* The launcher's own state of a database entry. */
typedef struct LauncherEntry
{
	BackgroundWorkerHandle *handle; /* the committer it started last */
	Oid database_id;				/* the database the fields below are about */
	int failures;					/* starts in a row that found no free slot */
	TimestampTz retry_at;			/* no start before this, after such a failure */
	TimestampTz logged_at;			/* its last log line; 0: none */
} LauncherEntry;

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
			(void) shared_want_database(lfirst_oid(lc), false);
		}
		PG_CATCH();
		{
			EmitErrorReport();
			FlushErrorState();
		}
		PG_END_TRY();
	}
}

/*
 * launcher_database_name copies the name of database_id (or its oid, once
 * dropped) into name, NAMEDATALEN bytes; pg_database is a shared catalog,
 * which the launcher reads connected to no database.
 */
static void
launcher_database_name(Oid database_id, char *name)
{
	char *found;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	found = get_database_name(database_id);
	if (found != NULL)
		strlcpy(name, found, NAMEDATALEN);
	else
		snprintf(name, NAMEDATALEN, "%u", database_id);
	CommitTransactionCommand();
}

/*
 * launcher_report logs, at most once a minute per database, why the
 * workers of entry's database do not start: the budget has no room
 * (retry_ms 0), or no worker slot was free and the next start is in
 * retry_ms.  WARNING with SQLSTATE 53400, naming the database.
 */
static void
launcher_report(LauncherEntry *entry, const WorkerBudget *budget, int retry_ms, TimestampTz now)
{
	char name[NAMEDATALEN];

	if (entry->logged_at != 0 &&
		!TimestampDifferenceExceeds(entry->logged_at, now, LAUNCHER_LOG_INTERVAL_MS))
		return;
	entry->logged_at = now;
	launcher_database_name(entry->database_id, name);
	if (retry_ms == 0)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("paimon_sink launcher cannot start the workers of database \"%s\"", name),
				 budget_errdetail(budget), budget_errhint()));
	else
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("paimon_sink launcher cannot start the workers of database \"%s\"", name),
				 errdetail("No background worker slot was free: of max_worker_processes = %d, "
						   "other background workers (parallel query, logical replication, "
						   "loaders, other extensions) hold the slots the worker budget leaves. "
						   "The next attempt is in %d ms; the wait doubles with each failure, up "
						   "to %d s.",
						   budget->max_workers, retry_ms, START_RETRY_MAX_MS / 1000),
				 errhint("Raise max_worker_processes, or lower max_parallel_workers.")));
}

/*
 * committers_starting counts the committers the launcher started that run
 * but have not registered yet (probes, mostly): they hold slots for a
 * moment, so a start that finds none free meanwhile is no one else's doing.
 */
static int
committers_starting(LauncherEntry *entries, int count)
{
	int starting = 0;

	for (int d = 0; d < count; d++)
	{
		pid_t pid;
		bool registered;

		if (entries[d].handle == NULL ||
			GetBackgroundWorkerPid(entries[d].handle, &pid) == BGWH_STOPPED)
			continue;
		LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
		registered = shared_database(d)->committer_pid == pid;
		LWLockRelease(PaimonSinkState->lock);
		if (!registered)
			starting++;
	}
	return starting;
}

/*
 * entries_holding_workers counts the database entries whose committer or
 * a writer runs: when it drops, slots came free.
 */
static int
entries_holding_workers(int count)
{
	int holding = 0;

	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	for (int d = 0; d < count; d++)
	{
		DatabaseEntry *db = shared_database(d);

		if (db->state != DATABASE_UNUSED && budget_entry_holds_workers(db))
			holding++;
	}
	LWLockRelease(PaimonSinkState->lock);
	return holding;
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
	int last_holding = 0;
	LauncherEntry *entries;

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

	entries = MemoryContextAllocZero(TopMemoryContext, sizeof(LauncherEntry) * count);
	want_all_databases();

	for (;;)
	{
		TimestampTz now = GetCurrentTimestamp();
		int holding;
		int starting;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		/* our workers left slots: what found none may find one now */
		holding = entries_holding_workers(count);
		if (holding < last_holding)
			for (int d = 0; d < count; d++)
				entries[d].retry_at = 0;
		last_holding = holding;
		starting = committers_starting(entries, count);

		for (int d = 0; d < count; d++)
		{
			DatabaseEntry *db = shared_database(d);
			LauncherEntry *entry = &entries[d];
			WorkerBudget budget;
			Oid database_id;
			pid_t pid;
			bool wanted;
			bool seen;
			bool starved;
			TimestampTz failed_at;

			LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
			database_id = db->database_id;
			wanted = db->state == DATABASE_WANTED && db->committer_pid == 0;
			seen = db->extension_seen;
			failed_at = db->committer_failed_at;
			starved = budget_starved(db, &budget);
			LWLockRelease(PaimonSinkState->lock);

			if (entry->handle != NULL)
			{
				if (GetBackgroundWorkerPid(entry->handle, &pid) != BGWH_STOPPED)
					continue;
				pfree(entry->handle);
				entry->handle = NULL;
			}
			if (entry->database_id != database_id)
			{
				/* the entry serves another database now */
				entry->database_id = database_id;
				entry->logged_at = 0;
				entry->failures = 0;
				entry->retry_at = 0;
			}
			if (!wanted)
			{
				/* served, or no longer wanted (DROP EXTENSION): nothing to try */
				entry->failures = 0;
				entry->retry_at = 0;
				continue;
			}
			/* pause after a failure, never restart in a tight loop */
			if (failed_at != 0 &&
				!TimestampDifferenceExceeds(failed_at, now, COMMITTER_RESTART_DELAY_MS))
				continue;
			if (starved)
			{
				/* a probe waits quietly: with no room its committer would leave at once */
				if (seen)
					launcher_report(entry, &budget, 0, now);
				continue;
			}
			if (entry->retry_at != 0 && now < entry->retry_at)
				continue;
			entry->handle = worker_start_committer(d);
			if (entry->handle == NULL && starting > 0)
			{
				/* our own probes hold the slots for a moment: again in a second, quietly */
				entry->retry_at = TimestampTzPlusMilliseconds(now, COMMITTER_RESTART_DELAY_MS);
			}
			else if (entry->handle == NULL)
			{
				int retry_ms = START_RETRY_MAX_MS;

				if (entry->failures < 16)
					retry_ms = Min(START_RETRY_MAX_MS, 1000 << entry->failures);
				entry->failures++;
				entry->retry_at = TimestampTzPlusMilliseconds(now, retry_ms);
				launcher_report(entry, &budget, retry_ms, now);
			}
			else
			{
				entry->failures = 0;
				entry->retry_at = 0;
				starting++;
			}
		}

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000,
						 wait_event_for(WAIT_LAUNCHER_MAIN));
	}
}
