/*-------------------------------------------------------------------------
 *
 * staged_types.h
 *	  The types whose values a sink stages: a change of their layout, or
 *	  of an enum's labels, is refused as it is made (staged_types.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_STAGED_TYPES_H
#define PAIMON_SINK_STAGED_TYPES_H

#include "nodes/parsenodes.h"

extern void staged_types_refuse_layout_change(Oid relid, AlterTableStmt *alter);
extern void staged_types_refuse_enum_rename(AlterEnumStmt *statement);

#endif /* PAIMON_SINK_STAGED_TYPES_H */
