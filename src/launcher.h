/*-------------------------------------------------------------------------
 *
 * launcher.h
 *	  The launcher: the one static background worker.  After every start
 *	  (including a crash-restart, after which dynamic workers are gone) it
 *	  starts a committer for each database, which recovers that database's
 *	  in-doubt transactions and staged files and has its writers started.
 *	  Every dynamic worker is registered here, by entry-point name.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_LAUNCHER_H
#define PAIMON_SINK_LAUNCHER_H

#include "postmaster/bgworker.h"

/* in launcher.c */
extern PGDLLEXPORT void paimon_sink_launcher_main(Datum main_arg);
extern void launcher_register(void);
extern BackgroundWorkerHandle *launcher_start_committer(int database_index);
extern BackgroundWorkerHandle *launcher_start_writer(int database_index, int writer_index);
extern BackgroundWorkerHandle *launcher_start_loader(int database_index, int loader_index);

#endif /* PAIMON_SINK_LAUNCHER_H */
