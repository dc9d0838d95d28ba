/*-------------------------------------------------------------------------
 *
 * sink_group.h
 *	  Sink groups at the SQL level: their DDL, and a group's name resolved
 *	  where a sink name is taken.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_SINK_GROUP_H
#define PAIMON_SINK_SINK_GROUP_H

#include "fmgr.h"

#include "metadata/catalog.h"
#include "metadata/metadata.h"

/* in sink_group.c */
extern SinkGroup *sink_group_named(const char *name);
extern List *sink_group_member_sinks(const SinkGroup *group, const char *action);
extern List *sink_group_owned_sinks(FunctionCallInfo fcinfo, const char *action, int32 *group_id);
extern SinkInfo *sink_group_first_sink(FunctionCallInfo fcinfo);

#endif /* PAIMON_SINK_SINK_GROUP_H */
