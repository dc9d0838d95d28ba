/*-------------------------------------------------------------------------
 *
 * write_check.h
 *	  What a sink refuses when a row is written because its commit could
 *	  never load it: the target's constraints as far as the row decides
 *	  them, and a key too large for a btree index of the target.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_WRITE_CHECK_H
#define PAIMON_SINK_WRITE_CHECK_H

#include "executor/tuptable.h"
#include "utils/rel.h"

typedef struct IndexChecks IndexChecks;

extern Relation write_check_decided_target(Relation target, const AttrNumber *target_map,
										   bool upsert);
extern IndexChecks *write_check_begin(Relation target);
extern bool write_check_wanted(const IndexChecks *checks);
extern void write_check_row(IndexChecks *checks, TupleTableSlot *target_slot,
							const char *sink_name);
extern char *write_check_oversized_index(Relation target, TupleDesc desc, int columns,
										 Datum *values, bool *nulls);
extern void write_check_end(IndexChecks *checks);

#endif /* PAIMON_SINK_WRITE_CHECK_H */
