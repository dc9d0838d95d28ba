/*-------------------------------------------------------------------------
 *
 * worker_start.h
 *	  Every dynamic worker registered by entry-point name (worker_start.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_WORKER_START_H
#define PAIMON_SINK_WORKER_START_H

#include "postmaster/bgworker.h"

/* in worker_start.c */
extern BackgroundWorkerHandle *worker_start_committer(int database_index);
extern BackgroundWorkerHandle *worker_start_writer(int database_index, int writer_index);
extern BackgroundWorkerHandle *worker_start_loader(int database_index, int loader_index);

#endif /* PAIMON_SINK_WORKER_START_H */
