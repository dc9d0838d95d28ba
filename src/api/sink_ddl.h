/*-------------------------------------------------------------------------
 *
 * sink_ddl.h
 *	  create_sink and drop_sink, the SQL functions that make and remove a
 *	  sink (sink_ddl.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_SINK_DDL_H
#define PAIMON_SINK_SINK_DDL_H

#include "fmgr.h"

extern Datum paimon_sink_create_sink(PG_FUNCTION_ARGS);
extern Datum paimon_sink_drop_sink(PG_FUNCTION_ARGS);

#endif /* PAIMON_SINK_SINK_DDL_H */
