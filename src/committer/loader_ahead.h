/*-------------------------------------------------------------------------
 *
 * loader_ahead.h
 *	  A loader loading a streamed transaction's rows while it runs, in the
 *	  transaction its checkpoint then finishes and prepares (loader.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_LOADER_AHEAD_H
#define PAIMON_SINK_LOADER_AHEAD_H

#include "nodes/pg_list.h"

#include "core/shared_state.h"

/* in loader_ahead.c */
extern bool loader_ahead_take(DatabaseEntry *db, LoaderEntry *loader);
extern bool loader_ahead_run(void);
extern void loader_ahead_give_up(const char *why);
extern List *loader_ahead_rest(List *files, uint64 *rows);

#endif /* PAIMON_SINK_LOADER_AHEAD_H */
