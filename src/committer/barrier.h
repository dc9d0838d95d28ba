/*-------------------------------------------------------------------------
 *
 * barrier.h
 *	  The checkpoint barrier between the committer and its writers: every
 *	  writer seals (or discards, or lists) a stream's files against one
 *	  snapshot and answers on a reply queue: the committer's end
 *	  (barrier.c; the writer's is writer/writer_barrier.c).
 *
 * The protocol and its records are ipc/barrier_protocol.h's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_BARRIER_H
#define PAIMON_SINK_BARRIER_H

#include "core/shared_state.h"
#include "ipc/barrier_protocol.h"
#include "metadata/catalog.h"

/* in barrier.c: the committer's end */
extern List *barrier_run_sinks(const BarrierSink *sinks, int count, int32 writer_id, int kind,
							   uint64 *seqs);
extern List *barrier_run(SinkInfo *sink, const char *commit_user, int32 writer_id, int kind,
						 uint64 fence_epoch, uint64 *seqs);
extern void barrier_confirm(const uint64 *seqs);
extern void barrier_detach_all(void);

#endif /* PAIMON_SINK_BARRIER_H */
