/*-------------------------------------------------------------------------
 *
 * writer_internal.h
 *	  The state of one writer process, shared by the files that make it up:
 *	  writer.c (the loop, hand-off receive, streams), writer_seal.c
 *	  (sealing streams at a barrier), writer_adopt.c (streams rebuilt from
 *	  staged files after a restart), writer_window.c (the sync windows) and
 *	  writer_barrier.c (its end of the barrier protocol).
 *
 * Only a writer process includes this: the variables below are that
 * process's own.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_WRITER_INTERNAL_H
#define PAIMON_SINK_WRITER_INTERNAL_H

#include "nodes/pg_list.h"
#include "storage/fd.h"
#include "utils/hsearch.h"
#include "utils/snapshot.h"
#include "utils/timestamp.h"

#include "core/shared_state.h"
#include "ipc/ahead_publish.h"
#include "ipc/barrier_protocol.h"
#include "staging/staged_file.h"

/*
 * Adjacent batch records of one transaction (same epoch, same fate) share
 * one entry, so a writer's memory does not grow with the size of a load:
 * they are always classified alike.  Their offsets are read back from the
 * file when a barrier leaves them out or carries them.
 */
typedef struct BatchInfo
{
	off_t offset;
	uint64 length; /* headers and payloads of its records */
	uint64 rows;
	uint32 records;
	uint64 full_xid;
	uint64 fence_epoch;
	bool dead; /* carried copies whose originals stand */
} BatchInfo;

/* A staged file of a stream that is not sealed yet. */
typedef struct OpenFile
{
	char name[STAGED_FILE_NAME_LENGTH + 1];
	char path[MAXPGPATH];
	File file;
	off_t size;
	bool appendable;
	bool dirty;
	uint64 owner_xid; /* a streaming transaction's own file, or 0 */
	AheadSlot ahead;  /* own file: where its logged end is published (ahead_publish.c) */
	int batch_count;
	int batch_capacity;
	uint32 record_count;   /* batch records in the file */
	uint64 max_sequence;   /* the highest sequence number in the file */
	TimestampTz staged_at; /* its oldest batch's first staging (adopted: the adoption); 0: none */
	BatchInfo *batches;
} OpenFile;

/* A sealed file, reported at a barrier and kept until it is confirmed. */
typedef struct SealedFile
{
	CommittableRecord record;
	int64 *excluded;
	uint64 reported_seq;
} SealedFile;

/* One stream (sink, commit user, writer id, bucket) this writer holds. */
typedef struct Stream
{
	StreamIdentity id; /* hash key */
	List *open_files;  /* OpenFile *; one shared file may be appendable */
	List *sealed;	   /* SealedFile * */
} Stream;

/* in writer.c: this process's writer */
extern WriterEntry *MyWriter;
extern int MyWriterIndex;
extern HTAB *WriterStreams; /* Stream, by StreamIdentity */
extern MemoryContext WriterContext;

extern Stream *writer_get_stream(const StreamIdentity *id);
extern OpenFile *writer_append_batch(Stream *stream, uint64 full_xid, uint64 fence_epoch,
									 uint32 rows, const char *payload, uint32 length,
									 const char *origin_name, off_t origin_offset, bool streamed,
									 uint64 first_sequence);
extern void writer_add_batch(OpenFile *file, off_t offset, uint32 length, uint32 rows,
							 uint64 full_xid, uint64 fence_epoch, bool dead);
extern void writer_raise_sequence(int32 sink_id, int32 bucket, uint64 last);
extern void writer_sync(File file, const char *path, int elevel);
extern void writer_acknowledge_handoffs(void);

/* in writer_window.c: the sync window */
extern void writer_open_window(void);
extern void writer_window_add_directory(const char *directory);
extern void writer_window_add_sealed(const char *path);
extern void writer_sync_window(void);
extern void writer_close_window(void);
extern uint32 writer_window_wait_event(void);
extern bool writer_window_is_open(void);
extern bool writer_window_due(void);
extern long writer_window_timeout(long idle);
extern void writer_window_exit(void);

/* in writer_seal.c: sealing streams at a barrier */
extern uint64 writer_stream_committed_rows(const Stream *stream, Snapshot snapshot);
extern void writer_seal_stream(Stream *stream, Snapshot snapshot, uint64 barrier_seq,
							   uint64 fence_epoch);

#endif /* PAIMON_SINK_WRITER_INTERNAL_H */
