/*-------------------------------------------------------------------------
 *
 * load_ahead.h
 *	  The committer's side of loading ahead: starting a loader for a
 *	  streamed transaction its writers published, giving it the
 *	  checkpoint that takes all its files, stopping it otherwise.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_LOAD_AHEAD_H
#define PAIMON_SINK_LOAD_AHEAD_H

#include "nodes/pg_list.h"
#include "postmaster/bgworker.h"

#include "metadata/catalog.h"

/* in load_ahead.c */
extern void load_ahead_serve(void);
extern int load_ahead_match(const SinkInfo *sink, const char *commit_user, List *files);
extern void load_ahead_stop(Oid target, int except);
extern BackgroundWorkerHandle *load_ahead_take(int entry);
extern void load_ahead_wake(int entry);

#endif /* PAIMON_SINK_LOAD_AHEAD_H */
