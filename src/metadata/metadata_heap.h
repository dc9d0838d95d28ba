/*-------------------------------------------------------------------------
 *
 * metadata_heap.h
 *	  The commit path's writes on the extension's tables without SQL
 *	  (metadata_heap.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_METADATA_HEAP_H
#define PAIMON_SINK_METADATA_HEAP_H

#include "metadata/metadata.h"

extern bool metadata_heap_record_snapshot(const SnapshotEntry *entry, int64 *snapshot_id);
extern void metadata_heap_raise_prepared(int32 sink_id, const char *commit_user,
										 int64 checkpoint_id);
extern bool metadata_heap_record_committable(const CommittableEntry *entry);
extern bool metadata_heap_read_marks(int32 sink_id, const char *commit_user, bool for_update,
									 CommitUserMarks *marks);

#endif /* PAIMON_SINK_METADATA_HEAP_H */
