/*-------------------------------------------------------------------------
 *
 * barrier_protocol.h
 *	  The checkpoint barrier's protocol between the committer
 *	  (committer/barrier.c) and its writers (writer/writer_barrier.c): the
 *	  records a writer sends on the reply queue.
 *
 * The committer fills a writer's barrier area (core/shared_state.h's
 * WriterEntry: the kind, the streams it concerns, its snapshot, a reply
 * queue) and sets BARRIER_REQUESTED; the writer answers with one record
 * per file and a BARRIER_RECORD_END, then sets BARRIER_IDLE.  Its sealed
 * files are forgotten once the committer confirms the barrier that
 * reported them.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_BARRIER_PROTOCOL_H
#define PAIMON_SINK_BARRIER_PROTOCOL_H

#include "staging/staged_file.h"

/* Records on a barrier reply queue (writer to committer). */
#define BARRIER_RECORD_COMMITTABLE 1
#define BARRIER_RECORD_END 2
#define BARRIER_RECORD_DISCARDED 3 /* an open file the writer removed */
#define BARRIER_RECORD_DROPPED 4   /* a file sealed and removed: row_count rows dropped */
#define BARRIER_RECORD_STAGED 5	   /* a stream's committed rows, not yet sealed */

/* A committable: one sealed file and the batch offsets it leaves out. */
typedef struct CommittableRecord
{
	uint32 kind;
	int32 excluded_count; /* int64 offsets follow the record */
	StreamIdentity stream;
	char file_name[STAGED_FILE_NAME_LENGTH + 1];
	int64 row_count;
	int64 byte_count;
	int64 max_sequence; /* the highest sequence number in the file */
} CommittableRecord;

#endif /* PAIMON_SINK_BARRIER_PROTOCOL_H */
