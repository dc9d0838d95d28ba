/*-------------------------------------------------------------------------
 *
 * outcome_stats.h
 *	  The failures and skipped commits of sink_stats, written before the
 *	  request's answer (outcome_stats.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_OUTCOME_STATS_H
#define PAIMON_SINK_OUTCOME_STATS_H

#include "utils/timestamp.h"

extern void outcome_stats_count(int32 sink_id, const char *commit_user, int64 failures,
								int64 skipped);
extern void outcome_stats_write(void);
extern TimestampTz outcome_stats_schedule(void);
extern bool outcome_stats_retry(void);

#endif /* PAIMON_SINK_OUTCOME_STATS_H */
