/*-------------------------------------------------------------------------
 *
 * handoff.h
 *	  The backend side of writing into a sink: rows inserted by a
 *	  transaction are buffered per stream and handed to the writers at the
 *	  transaction's pre-commit (a large transaction streams them while it
 *	  runs), tagged with its 64-bit xid, and the commit waits until every
 *	  writer has made them durable.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_HANDOFF_H
#define PAIMON_SINK_HANDOFF_H

#include "staging/staged_file.h"

/* Message kinds on a hand-off queue. */
#define HANDOFF_MESSAGE_CHUNK 1
#define HANDOFF_MESSAGE_END 2

/* Every message starts with this; a chunk's rows follow it. */
typedef struct HandoffMessage
{
	uint32 kind;
	uint32 row_count;
	bool streamed; /* sent while the transaction runs */
	uint64 full_xid;
	uint64 fence_epoch; /* the commit user's, when the writing began */
	StreamIdentity stream;
} HandoffMessage;

typedef struct PendingStream PendingStream;

extern void handoff_register_callbacks(void);
extern PendingStream *handoff_stream(const StreamIdentity *stream, int writer_index,
									 uint64 fence_epoch, int32 route_buckets);
extern void handoff_append_row(PendingStream *stream, const char *row, int length);
extern bool handoff_wrote_sink(int32 sink_id);
extern int handoff_database_index(bool wait_for_writers);
extern bool handoff_wait_for_workers(long timeout_ms);
extern void handoff_wake_committer_at_commit(void);
extern void handoff_want_database_at_commit(void);
extern void handoff_check_extension_at_commit(void);

#endif /* PAIMON_SINK_HANDOFF_H */
