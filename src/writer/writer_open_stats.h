/*-------------------------------------------------------------------------
 *
 * writer_open_stats.h
 *	  A writer's rows and bytes in open staged files, published per sink
 *	  and commit user (writer_open_stats.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_WRITER_OPEN_STATS_H
#define PAIMON_SINK_WRITER_OPEN_STATS_H

#include "writer/writer_internal.h"

extern void writer_open_stats_start(void);
extern void writer_open_stats_added(Stream *stream, OpenFile *file, bool first_batch, uint32 rows,
									uint64 bytes);
extern void writer_open_stats_publish(void);
extern void writer_open_stats_exit(void);

#endif /* PAIMON_SINK_WRITER_OPEN_STATS_H */
