/*-------------------------------------------------------------------------
 *
 * overwrite.h
 *	  Overwrite sinks: the target replaced once per job (overwrite.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_OVERWRITE_H
#define PAIMON_SINK_OVERWRITE_H

#include "metadata/catalog.h"
#include "nodes/pg_list.h"

extern bool overwrite_loads_here(const SinkInfo *sink, const char *commit_user);
extern bool overwrite_empty_commit_due(const SinkInfo *sink, const char *commit_user);
extern void overwrite_begin(SinkInfo *sink, const char *commit_user, int64 checkpoint_id,
							List *files);
extern uint64 overwrite_load(SinkInfo *sink, List *files);
extern const char *overwrite_end(const SinkInfo *sink, const char *commit_user,
								 int64 checkpoint_id);

#endif /* PAIMON_SINK_OVERWRITE_H */
