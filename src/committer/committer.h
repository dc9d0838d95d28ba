/*-------------------------------------------------------------------------
 *
 * committer.h
 *	  The committer background worker, one per database with sinks: it runs
 *	  barriers (prepare), commits checkpoints as snapshots inside PREPARE
 *	  TRANSACTION / COMMIT PREPARED, finishes in-doubt transactions of ours
 *	  at start, and has the database's writers started.  Its subsystems
 *	  have headers of their own: request.h, prepare.h, commit.h, load.h,
 *	  barrier.h, recovery.h, maintenance.h and work.h.
 *	  Paimon: CommitterOperator (parallelism 1); SeaTunnel: aggregated
 *	  committer.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_COMMITTER_H
#define PAIMON_SINK_COMMITTER_H

#include "ipc/request.h"

/* in committer.c; the launcher starts it (worker_start_committer) */
extern PGDLLEXPORT void paimon_sink_committer_main(Datum main_arg);

/* committer_submit, the requester's end of the queue, is in request.c */

#endif /* PAIMON_SINK_COMMITTER_H */
