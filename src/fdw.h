/*-------------------------------------------------------------------------
 *
 * fdw.h
 *	  The paimon_sink foreign-data wrapper: a sink's foreign table takes
 *	  INSERT (single and batched) and COPY FROM; rows are checked against
 *	  the target's constraints and buffered for hand-off at pre-commit.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_FDW_H
#define PAIMON_SINK_FDW_H

#include "postgres.h"

#include "lib/stringinfo.h"

extern void fdw_append_copy_text(StringInfo buffer, const char *value);

#endif							/* PAIMON_SINK_FDW_H */
