/*-------------------------------------------------------------------------
 *
 * schedule.h
 *	  The committer's schedule of periodic checkpoints (earliest deadline
 *	  first, the due sinks committed together) and the list of every sink.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_SCHEDULE_H
#define PAIMON_SINK_SCHEDULE_H

#include "datatype/timestamp.h"

/* in schedule.c */
extern void schedule_read(void *arg);
extern void schedule_publish(void);
extern TimestampTz schedule_next_due(void);
extern bool schedule_run_due(void);
extern int schedule_sink_count(void);
extern int32 schedule_sink_at(int index);

#endif /* PAIMON_SINK_SCHEDULE_H */
