/*-------------------------------------------------------------------------
 *
 * writer.h
 *	  Writer background workers: they receive rows from committing
 *	  backends through hand-off queues, stage them in files per stream,
 *	  fsync (grouped) before acknowledging, and at a checkpoint barrier seal
 *	  their files and report the committables to the committer.
 *	  Paimon: TableWriteOperator; SeaTunnel: SinkWriter.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_WRITER_H
#define PAIMON_SINK_WRITER_H

#include "postmaster/bgworker.h"
#include "staged_file.h"

/* Records on a barrier reply queue (writer to committer). */
#define BARRIER_RECORD_COMMITTABLE 1
#define BARRIER_RECORD_END 2
#define BARRIER_RECORD_DISCARDED 3	/* an open file the writer removed */

/* A committable: one sealed file and the batch offsets it leaves out. */
typedef struct CommittableRecord
{
	uint32		kind;
	int32		excluded_count; /* int64 offsets follow the record */
	StreamIdentity stream;
	char		file_name[STAGED_FILE_NAME_LENGTH + 1];
	int64		row_count;
	int64		byte_count;
	int64		max_sequence;	/* the highest sequence number in the file */
} CommittableRecord;

extern PGDLLEXPORT void paimon_sink_writer_main(Datum main_arg);
extern BackgroundWorkerHandle *writer_start(int database_index, int writer_index);

#endif							/* PAIMON_SINK_WRITER_H */
