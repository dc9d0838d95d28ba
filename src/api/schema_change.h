/*-------------------------------------------------------------------------
 *
 * schema_change.h
 *	  ALTER TABLE on a sink's target: the changes a sink cannot follow are
 *	  refused as they are made, and a changed default followed into the
 *	  sinks' foreign tables.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_SCHEMA_CHANGE_H
#define PAIMON_SINK_SCHEMA_CHANGE_H

#include "nodes/parsenodes.h"

extern void schema_change_refuse(Node *statement);
extern void schema_change_follow_defaults(Node *statement);

#endif /* PAIMON_SINK_SCHEMA_CHANGE_H */
