/*-------------------------------------------------------------------------
 *
 * loader_workers.h
 *	  The committer's side of its loader workers' lives, apart from any
 *	  one commit (loader_workers.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_LOADER_WORKERS_H
#define PAIMON_SINK_LOADER_WORKERS_H

#include <sys/types.h>

extern bool loader_workers_blocked_by_prepared(pid_t pid);
extern void loader_workers_stop_stale(void);
extern void loader_workers_exit(void);

#endif /* PAIMON_SINK_LOADER_WORKERS_H */
