/*-------------------------------------------------------------------------
 *
 * committer.c
 *	  The committer background worker: its start, its wait for the
 *	  catalog's version, its exit, and its loop.
 *
 * One committer serves each database with sinks.  Every prepare, commit
 * and checkpoint of the database runs here, one at a time, so no two of
 * them race and the database needs one prepared transaction slot.  At its
 * start it registers in the database's entry (the launcher starts no
 * other meanwhile), waits while the catalog has another version than the
 * library, recovers (recovery.c) and starts its writers.
 *
 * Its loop serves requests first (request.c), then a table of duties
 * (after Citus's maintenance daemon): each duty knows when it is due next
 * (its last run and its interval, or a schedule of its own), the loop
 * runs the one due the longest and folds the next due time of all of them
 * into the one WaitLatch timeout.  The periodic checkpoints' duty is
 * schedule.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/dbcommands.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "apply/load.h"
#include "committer/barrier.h"
#include "committer/commit.h"
#include "committer/commit_parallel.h"
#include "committer/load_ahead.h"
#include "committer/loader_workers.h"
#include "committer/committer.h"
#include "committer/maintenance.h"
#include "committer/missing_files.h"
#include "committer/outcome_stats.h"
#include "committer/prepare.h"
#include "committer/recovery.h"
#include "committer/schedule.h"
#include "committer/serve.h"
#include "committer/work.h"
#include "core/budget.h"
#include "core/guc.h"
#include "core/security.h"
#include "core/wait_events.h"
#include "ipc/liveness.h"
#include "ipc/request.h"
#include "metadata/catalog.h"
#include "metadata/extension.h"
#include "metadata/version.h"

/* The longest nap of the loop, and the nap while a writer does not serve yet. */
#define COMMITTER_NAP_MS 10000
#define COMMITTER_WRITERS_NAP_MS 100
#define COMMITTER_LOADERS_NAP_MS 1000

/*
 * How long an idle committer waits for another flush (the next request's
 * PREPARE, a session's commit) to make pending REMOVE records durable
 * before it flushes them itself.
 */
#define COMMITTER_REMOVAL_GRACE_MS 20

/* Catalog maintenance runs after this long idle, or when woken without a request. */
#define CATALOG_MAINTENANCE_INTERVAL_MS 10000

typedef enum CatalogState
{
	CATALOG_MISSING,	   /* the extension is not installed */
	CATALOG_OTHER_VERSION, /* installed, in a version not the library's */
	CATALOG_READY
} CatalogState;

/*
 * One duty of the loop.  It is due when requested, or at the time
 * schedule gives (duties with a schedule of their own), or interval_ms
 * after its last run; an after_nap duty never runs right after a request
 * (it would take the CPU from the requester, which the committer has just
 * woken), only after a nap or when requested.
 */
typedef struct CommitterDuty
{
	const char *name;
	bool needs_writers; /* runs only while every writer serves */
	bool after_nap;
	int (*interval_ms)(void);	   /* <= 0: switched off */
	TimestampTz (*schedule)(void); /* instead of the interval */
	bool (*run)(void);			   /* returns whether it did work */
	TimestampTz last_run;
	bool requested;
} CommitterDuty;

/*
 * Orphan files are removed on a schedule too (Paimon's remove_orphan_files
 * procedure, run by maintenance): every paimon_sink.orphan_removal_interval,
 * each sink's files older than paimon_sink.orphan_file_age that nothing
 * refers to, one sink per turn so that requests wait little.
 */
static TimestampTz orphans_removed_at = 0;
static TimestampTz orphan_turn_at = 0; /* the end of the round's last turn */
static int orphan_turn = 0;

/*
 * catalog_state returns the state of this database's catalog; *version
 * gets its version, if any, and CommitterDatabaseName this database's name.
 */
static CatalogState
catalog_state(char *version, size_t size)
{
	char *installed;
	char *name;
	CatalogState state;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	name = get_database_name(MyDatabaseId);
	strlcpy(CommitterDatabaseName, name ? name : "?", sizeof(CommitterDatabaseName));
	installed = extension_installed_version();
	if (installed == NULL)
		state = CATALOG_MISSING;
	else if (strcmp(installed, PAIMON_SINK_VERSION) == 0)
		state = CATALOG_READY;
	else
		state = CATALOG_OTHER_VERSION;
	strlcpy(version, installed ? installed : "", size);
	CommitTransactionCommand();
	return state;
}

/* set_ready publishes whether the committer serves calls (under the lock). */
static void
set_ready(bool ready)
{
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	MyDatabaseEntry->committer_ready = ready;
	LWLockRelease(PaimonSinkState->lock);
	/* sessions waiting for this database's workers look again */
	if (ready)
		ConditionVariableBroadcast(&MyDatabaseEntry->workers_ready);
}

/*
 * await_catalog_version waits while this database's catalog has another
 * version than the library: after a package upgrade and restart, the old
 * catalog stays until ALTER EXTENSION paimon_sink UPDATE, and no catalog
 * table may be read or written in the wrong layout meanwhile.  Prepared
 * checkpoints, staged files and in-doubt transactions wait with it; SQL
 * calls are refused with a hint (paimon_sink_require_ready).  Polls once a
 * second: the update commits in another session, which has no way to wake
 * us after its commit.  Returns the state it ends in: CATALOG_READY, or
 * CATALOG_MISSING when the extension was dropped.
 */
static CatalogState
await_catalog_version(void)
{
	char version[NAMEDATALEN];
	bool logged = false;
	CatalogState state;

	while ((state = catalog_state(version, sizeof(version))) == CATALOG_OTHER_VERSION)
	{
		if (!logged)
		{
			ereport(
				LOG,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("paimon_sink committer of database \"%s\" waits for ALTER EXTENSION "
						"paimon_sink UPDATE",
						CommitterDatabaseName),
				 errdetail(
					 "The library is version %s; the extension in that database is version %s.",
					 PAIMON_SINK_VERSION, version),
				 errhint("Run ALTER EXTENSION paimon_sink UPDATE in that database. Staged rows, "
						 "prepared checkpoints and in-doubt transactions are kept until then.")));
			logged = true;
		}
		/* calls are refused meanwhile; and writers may still be running */
		set_ready(false);
		pgstat_report_activity(STATE_IDLE, "waiting for ALTER EXTENSION paimon_sink UPDATE");
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000,
						 wait_event_for(WAIT_EXTENSION_UPDATE));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
	if (logged && state == CATALOG_READY)
		ereport(
			LOG,
			(errmsg("paimon_sink committer of database \"%s\" resumes: its extension is version %s",
					CommitterDatabaseName, version)));
	return state;
}

/*
 * exit_without_extension ends the committer when the extension is
 * dropped; CREATE EXTENSION starts one again.
 */
static void
exit_without_extension(void)
{
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	MyDatabaseEntry->state = DATABASE_NO_EXTENSION;
	MyDatabaseEntry->extension_seen = false;
	LWLockRelease(PaimonSinkState->lock);
	proc_exit(0);
}

/*
 * committer_exit leaves the database's entry: the requests under way get
 * an answer, the launcher is woken to start another committer.
 */
static void
committer_exit(int code, Datum arg)
{
	/* a writer answering a barrier must not wait for us; a loader must not prepare for us */
	barrier_detach_all();
	loader_workers_exit();
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	MyDatabaseEntry->committer_pid = 0;
	MyDatabaseEntry->committer_proc = NULL;
	MyDatabaseEntry->committer_ready = false;
	if (code != 0)
		MyDatabaseEntry->committer_failed_at = GetCurrentTimestamp();
	LWLockRelease(PaimonSinkState->lock);
	request_fail_running(MyDatabaseEntry);
	shared_wake_launcher();
}

/*
 * orphans_schedule returns when orphan removal is due: while a round over
 * the sinks is under way, when its last turn ended (so that an overdue
 * periodic checkpoint goes between two turns), else an interval after the
 * last round.
 */
static TimestampTz
orphans_schedule(void)
{
	if (PaimonSinkOrphanRemovalIntervalMs <= 0 || schedule_sink_count() == 0)
		return DT_NOEND;
	if (orphan_turn > 0)
		return orphan_turn_at;
	return TimestampTzPlusMilliseconds(orphans_removed_at, PaimonSinkOrphanRemovalIntervalMs);
}

/* remove_orphans_of_next_sink removes the orphan files of the next sink of the round. */
static bool
remove_orphans_of_next_sink(void)
{
	/* not in CommitterContext, which run_request resets: it may be the current one */
	CommitterRequest *request = MemoryContextAllocZero(TopMemoryContext, sizeof(CommitterRequest));

	request->kind = REQUEST_REMOVE_ORPHANS;
	request->sink_id = schedule_sink_at(orphan_turn % schedule_sink_count());
	request->older_than_ms = PaimonSinkOrphanFileAgeMs;
	/* a sink whose commit is in flight has its turn in the next round */
	if (!commit_parallel_defers(request->sink_id))
		(void) serve_periodic(request);
	pfree(request);
	orphan_turn_at = GetCurrentTimestamp();
	if (++orphan_turn >= schedule_sink_count())
	{
		orphan_turn = 0;
		orphans_removed_at = orphan_turn_at;
	}
	return true;
}

/*
 * maintain_catalog is the catalog maintenance between requests: in-doubt
 * transactions, dropped sinks' files, the schedule.
 */
static void
maintain_catalog(void *arg)
{
	(void) recovery_finish_in_doubt(true);
	recovery_remove_dropped_sinks();
	schedule_read(NULL);
}

/* catalog_maintenance_interval_ms is the catalog maintenance's interval. */
static int
catalog_maintenance_interval_ms(void)
{
	return CATALOG_MAINTENANCE_INTERVAL_MS;
}

/*
 * run_catalog_maintenance checks the catalog's version (the committer
 * stops when the extension was dropped) and, while the writers serve,
 * maintains it; a failure is logged and tried again next time.
 */
static bool
run_catalog_maintenance(void)
{
	if (await_catalog_version() == CATALOG_MISSING)
	{
		ereport(LOG, (errmsg("paimon_sink committer stops: the extension was dropped")));
		exit_without_extension();
	}
	if (work_writers_ready())
	{
		(void) work_try(maintain_catalog, NULL, NULL);
		MemoryContextReset(CommitterContext);
	}
	return false;
}

/* The duties; of two due since the same time, the first here runs first. */
static CommitterDuty duties[] = {
	{"periodic checkpoint", true, false, NULL, schedule_next_due, schedule_run_due},
	{"orphan removal", true, false, NULL, orphans_schedule, remove_orphans_of_next_sink},
	{"catalog maintenance", false, true, catalog_maintenance_interval_ms, NULL,
	 run_catalog_maintenance},
	{"snapshot expiry", false, false, NULL, maintenance_expiry_schedule, maintenance_expire_due},
	{"commit statistics", false, false, NULL, maintenance_statistics_schedule,
	 maintenance_write_statistics},
	{"sink statistics", false, false, NULL, outcome_stats_schedule, outcome_stats_retry},
	{"writer watch", false, false, liveness_watch_interval_ms, NULL, liveness_watch},
};

#define CATALOG_MAINTENANCE (&duties[2])

/* duty_due_at returns when a duty is due next (DT_NOEND: never). */
static TimestampTz
duty_due_at(const CommitterDuty *duty)
{
	int interval;

	if (duty->requested)
		return 0;
	if (duty->schedule != NULL)
		return duty->schedule();
	interval = duty->interval_ms();
	if (interval <= 0)
		return DT_NOEND;
	return TimestampTzPlusMilliseconds(duty->last_run, interval);
}

/*
 * run_due_duty runs the due duty that has been due the longest (a
 * requested one first; of those due since the same time, the first in the
 * table), then, while the ones run did no work, the next such; returns
 * whether one did work (then the loop looks at the requests again first).
 * Earliest due first, as the periodic checkpoints among themselves: taking
 * the first due duty of the table, an overloaded committer never came to
 * orphan removal or catalog maintenance while a periodic checkpoint was
 * due.
 */
static bool
run_due_duty(bool ready, bool napped)
{
	bool tried[lengthof(duties)] = {0};

	for (;;)
	{
		TimestampTz now = GetCurrentTimestamp();
		CommitterDuty *duty;
		int earliest = -1;
		bool worked;

		for (int i = 0; i < lengthof(duties); i++)
		{
			TimestampTz due = duty_due_at(&duties[i]);

			if (tried[i] || (duties[i].needs_writers && !ready) ||
				(!duties[i].requested && (due > now || (duties[i].after_nap && !napped))))
				continue;
			if (earliest < 0 || due < duty_due_at(&duties[earliest]))
				earliest = i;
		}
		if (earliest < 0)
			return false;
		tried[earliest] = true;
		duty = &duties[earliest];
		duty->requested = false;
		worked = duty->run();
		duty->last_run = GetCurrentTimestamp();
		if (worked)
			return true;
	}
}

/*
 * nap_ms returns how long the loop may sleep: until the next duty is due,
 * at most COMMITTER_NAP_MS; a short nap while the writers do not serve
 * yet (they do not wake the committer when they are ready).  An after_nap
 * duty that is overdue waits for the whole nap.
 */
static long
nap_ms(bool ready)
{
	TimestampTz now = GetCurrentTimestamp();
	long nap = COMMITTER_NAP_MS;

	if (!ready)
		return COMMITTER_WRITERS_NAP_MS;
	/* loaders wake the committer as they end, but not when a lock wait blocks one */
	if (serve_holds())
		nap = COMMITTER_LOADERS_NAP_MS;
	for (int i = 0; i < lengthof(duties); i++)
	{
		TimestampTz due = duty_due_at(&duties[i]);

		if (due == DT_NOEND || (duties[i].after_nap && due <= now))
			continue;
		nap = Min(nap, Max(0, (long) ((due - now) / 1000)));
	}
	/* an idle committer beats well within paimon_sink.committer_timeout */
	return Min(nap, liveness_committer_nap_ms());
}

/*
 * nap sleeps until woken or the nap ends.  Woken without a request
 * (drop_sink's commit wakes the committer to remove files), the catalog
 * maintenance is requested.  With removals pending it first naps
 * COMMITTER_REMOVAL_GRACE_MS at most: a flush of its own right after an
 * answer would queue the requester's next commit behind it (a 1-row round
 * is an INSERT's commit, then checkpoint()), while the next request's
 * PREPARE or any commit flushes the REMOVE records anyway; only a
 * committer still idle after that flushes them itself.
 */
static void
nap(bool ready)
{
	long ms = nap_ms(ready);
	long stats_ms;
	int events;

	pgstat_report_activity(STATE_IDLE, NULL);
	/* counts still pending (a flush is at most once a second) are flushed when they may be */
	stats_ms = liveness_report_statistics();
	if (stats_ms > 0)
		ms = Min(ms, stats_ms);
	if (!request_any_queued(MyDatabaseEntry) && commit_removals_pending() &&
		ms > COMMITTER_REMOVAL_GRACE_MS)
	{
		events = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						   COMMITTER_REMOVAL_GRACE_MS, wait_event_for(WAIT_COMMITTER_MAIN));
		if (events & WL_LATCH_SET)
		{
			if (!request_any_queued(MyDatabaseEntry))
				CATALOG_MAINTENANCE->requested = true;
			return;
		}
		ms -= COMMITTER_REMOVAL_GRACE_MS;
	}
	/* nothing waits for the committer: the flush of pending removals costs no one */
	if (!request_any_queued(MyDatabaseEntry))
		commit_finish_removals();
	events = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, ms,
					   wait_event_for(WAIT_COMMITTER_MAIN));
	if ((events & WL_LATCH_SET) && !request_any_queued(MyDatabaseEntry))
		CATALOG_MAINTENANCE->requested = true;
}

/*
 * register_committer makes this process the database's committer, or
 * leaves when another one serves it.  With no extension it leaves too,
 * unless a CREATE EXTENSION committed since it looked (its
 * start_workers() ran before its commit, so it may have looked too early;
 * its commit counts itself, and it looks again).  It leaves as well when
 * the worker budget is full (budget.c): registering in a slot the budget
 * does not have would hold it while the writers never come.  Checked and
 * registered under one lock, so two committers starting at once cannot
 * both take the last room; the launcher, woken, reports the database.
 */
static void
register_committer(void)
{
	WorkerBudget budget;

	for (;;)
	{
		char version[NAMEDATALEN];
		uint64 seen;
		bool changed;

		LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
		seen = MyDatabaseEntry->extension_commits;
		LWLockRelease(PaimonSinkState->lock);
		if (catalog_state(version, sizeof(version)) != CATALOG_MISSING)
			break;
		LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
		changed = MyDatabaseEntry->extension_commits != seen;
		if (!changed && MyDatabaseEntry->state == DATABASE_WANTED)
		{
			MyDatabaseEntry->state = DATABASE_NO_EXTENSION;
			MyDatabaseEntry->extension_seen = false;
		}
		LWLockRelease(PaimonSinkState->lock);
		if (!changed)
			proc_exit(0);
	}

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	if (MyDatabaseEntry->committer_pid != 0)
	{
		LWLockRelease(PaimonSinkState->lock);
		proc_exit(0); /* another committer serves this database */
	}
	MyDatabaseEntry->extension_seen = true;
	if (budget_starved(MyDatabaseEntry, &budget))
	{
		LWLockRelease(PaimonSinkState->lock);
		/* sessions waiting for our workers refuse now, not at their timeout */
		ConditionVariableBroadcast(&MyDatabaseEntry->workers_ready);
		shared_wake_launcher();
		proc_exit(0);
	}
	MyDatabaseEntry->committer_pid = MyProcPid;
	MyDatabaseEntry->committer_proc = MyProc;
	MyDatabaseEntry->committer_incarnation++;
	LWLockRelease(PaimonSinkState->lock);
	before_shmem_exit(committer_exit, 0);
	liveness_committer_start();
}

/* paimon_sink_committer_main is the entry point of a committer worker. */
void
paimon_sink_committer_main(Datum main_arg)
{
	Oid database_id;
	bool napped = false;
	CommitterRequest *request;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	work_init(DatumGetInt32(main_arg));
	/* the launcher started us for a wanted entry, whose database stays set while wanted */
	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	database_id = MyDatabaseEntry->database_id;
	LWLockRelease(PaimonSinkState->lock);
	BackgroundWorkerInitializeConnectionByOid(database_id, InvalidOid, 0);
	pgstat_report_appname("paimon_sink committer");
	/* over ALTER DATABASE/ROLE ... SET: its role, search_path, durability */
	security_pin_worker_settings();
	/* staged rows are in the database encoding, whatever ALTER DATABASE sets */
	SetConfigOption("client_encoding", GetDatabaseEncodingName(), PGC_SUSET, PGC_S_OVERRIDE);

	register_committer();
	/* recovery must see every share a loader of a committer before us may prepare */
	loader_workers_stop_stale();
	/* the entry may show the schedule of a committer before us, or of another database */
	schedule_publish();
	/* registered first: the launcher must not start another one meanwhile */
	{
		char version[NAMEDATALEN];

		if (catalog_state(version, sizeof(version)) == CATALOG_OTHER_VERSION)
			(void) recovery_finish_in_doubt(false);
	}
	if (await_catalog_version() == CATALOG_MISSING)
		exit_without_extension();

	pgstat_report_activity(STATE_RUNNING, "recovering");
	(void) recovery_finish_in_doubt(true);
	recovery_remove_committed_files();
	recovery_remove_dropped_sinks();
	schedule_read(NULL);
	MemoryContextReset(CommitterContext);
	/* the request being served: 8 kB and more, so not on the stack */
	request = MemoryContextAlloc(TopMemoryContext, sizeof(CommitterRequest));

	for (;;)
	{
		int slot;
		uint64 riders;
		bool ready;
		bool sinks_changed;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		/* each turn, a request taken included, is progress the waiting sessions see */
		liveness_committer_beat();
		/* a committer that never naps flushes its counts too */
		(void) liveness_report_statistics();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			/* paimon_sink.checkpoint_interval may be new */
			CATALOG_MAINTENANCE->requested = true;
		}
		LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
		sinks_changed = MyDatabaseEntry->sinks_changed;
		MyDatabaseEntry->sinks_changed = false;
		LWLockRelease(PaimonSinkState->lock);
		if (sinks_changed)
		{
			/* before a periodic checkpoint or orphan removal of a dropped sink */
			(void) work_try(schedule_read, NULL, NULL);
			MemoryContextReset(CommitterContext);
			CATALOG_MAINTENANCE->requested = true; /* dropped sinks' files */
		}
		work_start_writers();
		/* streamed transactions the writers published: their loaders started or refused */
		load_ahead_serve();
		ready = work_writers_ready();
		/* only this process writes committer_ready: its own read needs no lock */
		if (ready != MyDatabaseEntry->committer_ready)
			set_ready(ready);

		/* a request whose loaders are done, then the requests */
		if (serve_resume())
			continue;
		if (ready && request_next(MyDatabaseEntry, request, &slot, &riders))
		{
			/* one that could wait for the shares in flight waits for them */
			if (commit_group_defers(request))
				request_defer(MyDatabaseEntry, slot, riders, request->sink_id);
			else
				serve_request(request, slot, riders);
			napped = false;
			continue;
		}

		/* then the duties */
		if (run_due_duty(ready, napped))
			continue;
		nap(ready);
		napped = true;
	}
}
