/*-------------------------------------------------------------------------
 *
 * staged_file.h
 *	  The staged-file format: a header naming the stream, then batch
 *	  records, each carrying the 64-bit xid of the transaction that wrote
 *	  its rows (COPY binary tuples, in the database encoding) and a
 *	  CRC-32C.  Files are append-only; which batches a checkpoint takes is
 *	  recorded in its committable.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_STAGED_FILE_H
#define PAIMON_SINK_STAGED_FILE_H

#include "access/transam.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "storage/fd.h"
#include "utils/uuid.h"

#include "core/constants.h"

#define STAGED_FILE_MAGIC 0x50534B46  /* "PSKF" */
#define STAGED_BATCH_MAGIC 0x50534B42 /* "PSKB" */
/*
 * The format this library writes.  Files outlive the library that staged
 * them (a package upgrade leaves prepared checkpoints behind): a library
 * that changes the format must still read every format a released version
 * writes.  Released: 0.1 writes 4.
 */
#define STAGED_FILE_VERSION 4
#define STAGED_FILE_UUID_BYTES 16
#define STAGED_FILE_NAME_LENGTH 42 /* 36-character uuid + ".stage" */

/* The stream a file belongs to: (sink, commit user, writer id, bucket). */
typedef struct StreamIdentity
{
	pg_uuid_t sink_uuid; /* the sink's incarnation: ids repeat, this not */
	int32 sink_id;
	int32 writer_id;
	int32 bucket;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
} StreamIdentity;

typedef struct StagedFileHeader
{
	uint32 magic;
	uint16 version;
	uint16 commit_user_length;
	pg_uuid_t sink_uuid;
	int32 sink_id;
	int32 writer_id;
	int32 bucket;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	char padding[3];
} StagedFileHeader;

/*
 * A batch record.  origin_file/origin_offset are set on a batch carried
 * forward from a sealed file whose checkpoint left it out (its transaction
 * was still running at the barrier).  fence_epoch is the commit user's
 * epoch when the transaction began writing: a recover() since fences it.
 * Rows are numbered per (sink, bucket) as they reach the writer (Paimon's
 * sequence numbers); a carried copy keeps its original numbers.
 */
typedef struct StagedBatchHeader
{
	uint32 magic;
	uint32 payload_length;
	uint64 full_xid;
	uint64 fence_epoch;
	uint32 row_count;
	uint32 checksum;
	uint64 origin_offset;
	uint8 origin_file[STAGED_FILE_UUID_BYTES];
	uint64 first_sequence; /* of its first row; the others follow in order */
} StagedBatchHeader;

extern void staged_file_directory(char *path, Oid database_id, int32 sink_id);
extern void staged_file_path(char *path, Oid database_id, int32 sink_id, const char *file_name);
extern File staged_file_create(Oid database_id, int creator, const StreamIdentity *stream,
							   char *file_name, off_t *size, char *directory,
							   void (*before_log)(void));
extern File staged_file_open(const char *path, StreamIdentity *stream, off_t *data_start,
							 int elevel);
extern off_t staged_file_append(File file, Oid database_id, int32 sink_id, const char *name,
								const char *path, off_t offset, StagedBatchHeader *header,
								const char *payload, void (*before_log)(void));
extern void staged_file_sync(File file, const char *path, int elevel);
extern void staged_file_truncate(File file, const char *path, off_t length, off_t size);
extern int staged_file_remove(const char *path);
extern int staged_file_remove_list(List *paths, int elevel);
extern XLogRecPtr staged_file_log_removals(List *paths);
extern int staged_file_unlink_logged(List *paths, XLogRecPtr logged, int elevel);
extern bool staged_file_remove_directory(Oid database_id, int32 sink_id);
extern bool staged_file_read_header(File file, const char *path, off_t offset, off_t file_size,
									StagedBatchHeader *header);
extern bool staged_file_read_batch(File file, const char *path, off_t offset, off_t file_size,
								   StagedBatchHeader *header, StringInfo payload);
extern bool staged_file_name_to_uuid(const char *file_name, uint8 *uuid);
extern bool staged_file_name_is_valid(const char *file_name);
extern int staged_file_temporary_creator(const char *file_name);

#endif /* PAIMON_SINK_STAGED_FILE_H */
