/*-------------------------------------------------------------------------
 *
 * handoff_queue.h
 *	  The session's end of a hand-off queue to a writer: taking a slot,
 *	  sending, closing, waiting for the acknowledgement, every wait bounded
 *	  by the writer's liveness; and the choice of a writer that answers for
 *	  the rows of an append sink without a bucket key.  The writer's end is
 *	  writer.c's; buffering and the transaction callbacks are handoff.c's.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_HANDOFF_QUEUE_H
#define PAIMON_SINK_HANDOFF_QUEUE_H

#include "core/shared_state.h"
#include "session/handoff.h"

/* A queue this backend is sending on, so an abort can detach it. */
typedef struct ActiveHandoff
{
	WriterEntry *writer;
	int writer_index;
	HandoffSlot *slot;
	uint64 generation;
	uint64 incarnation;
	shm_mq_handle *queue;
} ActiveHandoff;

extern ActiveHandoff *handoff_queue_open(DatabaseEntry *db, int writer_index);
extern void handoff_queue_send(ActiveHandoff *handoff, HandoffMessage *message, const char *rows,
							   int length);
extern void handoff_queue_close(ActiveHandoff *handoff);
extern void handoff_queue_wait_ack(ActiveHandoff *handoff);
extern int handoff_queue_writer_for(int32 sink_id, int32 bucket);
extern int32 handoff_queue_route(DatabaseEntry *db, int32 sink_id, int32 bucket, int32 buckets,
								 int *writer_index);

#endif /* PAIMON_SINK_HANDOFF_QUEUE_H */
