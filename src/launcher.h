/*-------------------------------------------------------------------------
 *
 * launcher.h
 *	  The launcher: the one static background worker.  After every start
 *	  (including a crash-restart, after which dynamic workers are gone) it
 *	  starts a committer for each database, which recovers that database's
 *	  in-doubt transactions and staged files and has its writers started.
 *	  Dynamic workers are registered by core/worker_start.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_LAUNCHER_H
#define PAIMON_SINK_LAUNCHER_H

#include "postmaster/bgworker.h"

/* in launcher.c */
extern PGDLLEXPORT void paimon_sink_launcher_main(Datum main_arg);
extern void launcher_register(void);

#endif /* PAIMON_SINK_LAUNCHER_H */
