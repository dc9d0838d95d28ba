/*-------------------------------------------------------------------------
 *
 * budget.h
 *	  The worker budget: how many background worker slots a database with
 *	  sinks needs, how many databases max_worker_processes serves, and
 *	  whether a database can get its workers now.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_BUDGET_H
#define PAIMON_SINK_BUDGET_H

#include "core/shared_state.h"

/* The arithmetic of the budget, and how much of it other databases use. */
typedef struct WorkerBudget
{
	int max_workers;  /* max_worker_processes */
	int fixed;		  /* slots of the launchers: ours, and logical replication's */
	int per_database; /* one committer and paimon_sink.writers_per_database writers */
	int databases;	  /* databases the budget serves */
	int served;		  /* other databases whose workers run and are wanted */
	int leaving;	  /* other databases whose workers run, no longer wanted */
} WorkerBudget;

extern int budget_per_database(void);
extern int budget_databases(void);
extern bool budget_entry_holds_workers(DatabaseEntry *db);
extern void budget_count(DatabaseEntry *self, WorkerBudget *budget);
extern bool budget_starved(DatabaseEntry *self, WorkerBudget *budget);
extern int budget_errdetail(const WorkerBudget *budget);
extern int budget_errhint(void);
extern void budget_require_workers(Oid database_id, int elevel, bool warn_if_later);

#endif /* PAIMON_SINK_BUDGET_H */
