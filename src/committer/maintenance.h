/*-------------------------------------------------------------------------
 *
 * maintenance.h
 *	  The committer's maintenance of a sink: orphan file removal, snapshot
 *	  expiry after commits, and the commit statistics.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_MAINTENANCE_H
#define PAIMON_SINK_MAINTENANCE_H

#include "utils/timestamp.h"

#include "core/shared_state.h"
#include "metadata/metadata.h"

/* in maintenance.c */
extern void maintenance_remove_orphans(int32 sink_id, CommitterRequest *request);
extern void maintenance_after_commit(int32 sink_id);
extern TimestampTz maintenance_expiry_schedule(void);
extern bool maintenance_expire_due(void);
extern void maintenance_report_failure(CommitterRequest *outcome);
extern void maintenance_record_statistics(const CommitterRequest *outcome);
extern void maintenance_record_tally(int32 sink_id, const CommitTally *tally);
extern void maintenance_record_member_failure(int32 sink_id, const CommitterRequest *outcome);
extern TimestampTz maintenance_statistics_schedule(void);
extern bool maintenance_write_statistics(void);

#endif /* PAIMON_SINK_MAINTENANCE_H */
