/*-------------------------------------------------------------------------
 *
 * alter_sink.h
 *	  alter_sink: a sink's foreign table brought in line with its target
 *	  (alter_sink.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_ALTER_SINK_H
#define PAIMON_SINK_ALTER_SINK_H

#include "fmgr.h"

extern Datum paimon_sink_alter_sink(PG_FUNCTION_ARGS);

#endif /* PAIMON_SINK_ALTER_SINK_H */
