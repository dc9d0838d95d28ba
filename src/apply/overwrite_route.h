/*-------------------------------------------------------------------------
 *
 * overwrite_route.h
 *	  The leaf partitions a checkpoint's staged rows go to, found before
 *	  the load (overwrite_route.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_OVERWRITE_ROUTE_H
#define PAIMON_SINK_OVERWRITE_ROUTE_H

#include "metadata/catalog.h"
#include "nodes/pg_list.h"

extern List *overwrite_route_rows(SinkInfo *sink, List *files, bool reject);

#endif /* PAIMON_SINK_OVERWRITE_ROUTE_H */
