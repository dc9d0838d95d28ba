/*-------------------------------------------------------------------------
 *
 * loader.h
 *	  The loader background worker: one share of a large checkpoint of an
 *	  append sink, loaded into the target in a prepared transaction of its
 *	  own, which the committer's decision commits (commit_parallel.h).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_LOADER_H
#define PAIMON_SINK_LOADER_H

#include "fmgr.h"

/* in loader.c; the committer starts it (worker_start_loader) */
extern PGDLLEXPORT void paimon_sink_loader_main(Datum main_arg);

#endif /* PAIMON_SINK_LOADER_H */
