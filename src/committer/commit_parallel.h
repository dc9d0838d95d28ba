/*-------------------------------------------------------------------------
 *
 * commit_parallel.h
 *	  A large checkpoint of an append sink loaded by the loader workers,
 *	  each share in its own prepared transaction, made atomic by the
 *	  committer's decision record (the checkpoint's own prepared and
 *	  committed transaction, holding its snapshot and mark).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_COMMIT_PARALLEL_H
#define PAIMON_SINK_COMMIT_PARALLEL_H

#include "datatype/timestamp.h"

#include "core/names.h"
#include "metadata/catalog.h"

/* What commit_parallel_load did. */
typedef enum ParallelLoad
{
	PARALLEL_STARTED, /* the loaders load */
	PARALLEL_LOADED,  /* every share prepared: make the decision */
	PARALLEL_FALLBACK /* nothing prepared: the committer loads it itself */
} ParallelLoad;

/*
 * What the committer found of a checkpoint it leaves to the loaders: its
 * files, rows, the files' sizes on disk (which the shares split), the
 * committables' bytes (the snapshot's byte_count), when its commit
 * started, and the loader that loaded part of it ahead.
 */
typedef struct CheckpointSize
{
	int files;
	int64 rows;
	int64 file_bytes;
	int64 bytes;
	TimestampTz start;
	int ahead; /* the loader entry (1-based) that loaded ahead its files, 0: none */
} CheckpointSize;

/* in commit_parallel.c */
extern bool commit_parallel_wanted(const SinkInfo *sink, int64 rows);
extern ParallelLoad commit_parallel_start(const SinkInfo *sink, const char *commit_user,
										  int64 checkpoint_id, const CheckpointSize *size,
										  bool async);
extern bool commit_parallel_loading(void);
extern ParallelLoad commit_parallel_finish(uint64 *loaded);
extern bool commit_parallel_defers(int32 sink_id);
extern uint64 commit_parallel_generation(void);
extern ParallelLoad commit_parallel_load(const SinkInfo *sink, const char *commit_user,
										 int64 checkpoint_id, const CheckpointSize *size,
										 uint64 *loaded);
extern void commit_parallel_progress(int phase, const char *gid);
extern void commit_parallel_decided(void);
extern void commit_parallel_abort(void);
extern int commit_parallel_commit_shares(void);
extern bool commit_parallel_whole(int64 *snapshot_id, TimestampTz *recorded_at);
extern void commit_parallel_commit_whole(void);
extern void commit_parallel_cleanup(void);
extern bool commit_parallel_active(void);
extern bool commit_parallel_owns(const GidParts *parts);
extern bool commit_parallel_holds_gid(const char *gid);

#endif /* PAIMON_SINK_COMMIT_PARALLEL_H */
