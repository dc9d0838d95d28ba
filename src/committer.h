/*-------------------------------------------------------------------------
 *
 * committer.h
 *	  The committer background worker, one per database with sinks: it runs
 *	  barriers (prepare), commits checkpoints as snapshots inside PREPARE
 *	  TRANSACTION / COMMIT PREPARED, finishes in-doubt transactions of ours
 *	  at start, and starts the database's writers.
 *	  Paimon: CommitterOperator (parallelism 1); SeaTunnel: aggregated
 *	  committer.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_COMMITTER_H
#define PAIMON_SINK_COMMITTER_H

#include "postgres.h"

#include "postmaster/bgworker.h"
#include "shared_state.h"

extern PGDLLEXPORT void paimon_sink_committer_main(Datum main_arg);
extern BackgroundWorkerHandle *committer_start(int database_index);
extern void committer_submit(int database_index, CommitterRequest *request);

#endif							/* PAIMON_SINK_COMMITTER_H */
