/*-------------------------------------------------------------------------
 *
 * budget.c
 *	  The worker budget: the background worker slots a database with sinks
 *	  needs, the databases max_worker_processes serves, and the refusal of
 *	  work in a database that cannot get its workers.
 *
 * A database with sinks holds one committer and
 * paimon_sink.writers_per_database writers for as long as it has the
 * extension; the cluster holds our launcher and, when
 * max_logical_replication_workers is not 0, PostgreSQL's logical
 * replication launcher (both registered at server start).  So
 *
 *	databases served = (max_worker_processes - launchers) / (1 + writers)
 *
 * with the defaults (8 - 2) / 3 = 2.  Loaders (paimon_sink.loaders_per_database)
 * are left out on purpose: a loader that cannot get a slot makes the
 * committer load the checkpoint alone (commit_parallel.c), so they take
 * only the slots left free.  Parallel query and logical replication
 * apply workers are transient and not counted either: while they hold
 * slots a start fails, and the launcher backs off and tries again.
 *
 * A committer registers only while fewer databases than that are served
 * (committer.c), so the workers of the databases served never exceed the
 * budget: no committer sits in a slot waiting for writers that cannot
 * come.  The same count lets CREATE EXTENSION, create_sink and a session's
 * write refuse at once (53400) where they used to wait for
 * paimon_sink.handoff_timeout, as a connection over max_connections is
 * refused at once.  Citus sizes its maintenance daemons the same way, one
 * per database, from max_worker_processes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/dbcommands.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "replication/logicallauncher.h"

#include "core/budget.h"
#include "core/guc.h"

/* budget_per_database returns the worker slots a database with sinks holds. */
int
budget_per_database(void)
{
	return 1 + PaimonSinkWritersPerDatabase;
}

/*
 * budget_fixed returns the slots of the static workers registered at
 * server start: our launcher, and the logical replication launcher
 * (ApplyLauncherRegister registers it unless max_logical_replication_workers
 * is 0).
 */
static int
budget_fixed(void)
{
	return 1 + (max_logical_replication_workers > 0 ? 1 : 0);
}

/* budget_databases returns how many databases the budget serves (0 or more). */
int
budget_databases(void)
{
	return Max(0, (max_worker_processes - budget_fixed()) / budget_per_database());
}

/*
 * budget_entry_holds_workers tells whether a database entry's committer or
 * one of its writers runs (a writer of a committer that left runs until
 * its next turn).  The caller holds PaimonSinkState->lock.
 */
bool
budget_entry_holds_workers(DatabaseEntry *db)
{
	if (db->committer_pid != 0)
		return true;
	for (int w = 0; w < PaimonSinkState->writers_per_database; w++)
	{
		WriterEntry *writer = shared_writer(db, w);
		pid_t pid;

		SpinLockAcquire(&writer->mutex);
		pid = writer->pid;
		SpinLockRelease(&writer->mutex);
		if (pid != 0)
			return true;
	}
	return false;
}

/*
 * budget_count fills *budget: the arithmetic, and the databases other than
 * self (NULL: none is self) whose workers run, wanted or leaving.  The
 * caller holds PaimonSinkState->lock.
 */
void
budget_count(DatabaseEntry *self, WorkerBudget *budget)
{
	memset(budget, 0, sizeof(*budget));
	budget->max_workers = max_worker_processes;
	budget->fixed = budget_fixed();
	budget->per_database = budget_per_database();
	budget->databases = budget_databases();
	for (int d = 0; d < PaimonSinkState->database_count; d++)
	{
		DatabaseEntry *db = shared_database(d);

		if (db == self || db->state == DATABASE_UNUSED || !budget_entry_holds_workers(db))
			continue;
		if (db->state == DATABASE_WANTED)
			budget->served++;
		else
			budget->leaving++;
	}
}

/*
 * budget_starved fills *budget and tells whether database entry self (NULL:
 * a database with no entry yet) cannot get its workers: none of them runs
 * and the databases served fill the budget.  Databases whose workers are
 * leaving do not count: their slots come free.  The caller holds
 * PaimonSinkState->lock.
 */
bool
budget_starved(DatabaseEntry *self, WorkerBudget *budget)
{
	budget_count(self, budget);
	if (self != NULL && budget_entry_holds_workers(self))
		return false;
	return budget->served >= budget->databases;
}

/* budget_errdetail adds the budget's arithmetic to an ereport as its detail. */
int
budget_errdetail(const WorkerBudget *budget)
{
	return errdetail("Databases the worker budget serves: (max_worker_processes = %d, minus %d "
					 "for the launchers) / %d per database (a committer and "
					 "paimon_sink.writers_per_database = %d) = %d; databases already served: %d.",
					 budget->max_workers, budget->fixed, budget->per_database,
					 budget->per_database - 1, budget->databases, budget->served);
}

/* budget_errhint adds the settings that change the budget to an ereport as its hint. */
int
budget_errhint(void)
{
	return errhint("Raise max_worker_processes (a restart) or lower "
				   "paimon_sink.writers_per_database, or drop extension paimon_sink in a database "
				   "that does not use it; its workers' slots then serve this one.");
}

/*
 * budget_require_workers raises SQLSTATE 53400 (configuration_limit_exceeded)
 * at elevel (ERROR, or WARNING where refusing would help no one) when
 * database_id cannot get its workers; and warns (53400) when it can get
 * them only once the workers of databases that dropped the extension have
 * left, if warn_if_later.  For CREATE EXTENSION (through start_workers()),
 * create_sink and a session's wait for its workers (handoff.c); the detail
 * gives the budget's arithmetic.  Needs a transaction (the database's name).
 */
void
budget_require_workers(Oid database_id, int elevel, bool warn_if_later)
{
	WorkerBudget budget;
	bool starved;
	bool later;
	int index;

	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	index = shared_find_database(database_id);
	starved = budget_starved(index >= 0 ? shared_database(index) : NULL, &budget);
	later = !starved && (index < 0 || !budget_entry_holds_workers(shared_database(index))) &&
			budget.served + budget.leaving >= budget.databases;
	LWLockRelease(PaimonSinkState->lock);

	if (starved)
		ereport(elevel, (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
						 errmsg("database \"%s\" cannot get its paimon_sink workers",
								get_database_name(database_id)),
						 budget_errdetail(&budget), budget_errhint()));
	else if (later && warn_if_later)
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("the paimon_sink workers of database \"%s\" wait for the workers of "
						"databases that dropped the extension to leave",
						get_database_name(database_id)),
				 budget_errdetail(&budget),
				 errhint("Those databases dropped extension paimon_sink; their workers leave "
						 "within seconds.")));
}
