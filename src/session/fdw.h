/*-------------------------------------------------------------------------
 *
 * fdw.h
 *	  The paimon_sink foreign-data wrapper: a sink's foreign table takes
 *	  INSERT (single and batched) and COPY FROM; rows are checked against
 *	  the target's constraints, encoded in COPY's binary format and buffered
 *	  for hand-off at pre-commit.  Its entry points are the SQL-callable
 *	  paimon_sink_fdw_handler and paimon_sink_fdw_validator.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_FDW_H
#define PAIMON_SINK_FDW_H

#include "fmgr.h"

extern Datum paimon_sink_fdw_handler(PG_FUNCTION_ARGS);
extern Datum paimon_sink_fdw_validator(PG_FUNCTION_ARGS);

#endif /* PAIMON_SINK_FDW_H */
