/*-------------------------------------------------------------------------
 *
 * commit_steps.h
 *	  The steps one checkpoint's commit is made of (commit.c), shared with
 *	  the commit of a sink group's checkpoints in one prepared transaction
 *	  (commit_group.c): the block, a checkpoint entered, its files read and
 *	  loaded, its snapshot recorded, the gid prepared and committed, the log.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_COMMIT_STEPS_H
#define PAIMON_SINK_COMMIT_STEPS_H

#include "datatype/timestamp.h"

#include "apply/load.h"
#include "metadata/catalog.h"

/*
 * What a commit's errors say about where they come from.  The target's
 * name is looked up before the commit starts: a context callback runs
 * while an error is being raised, where no catalog may be read.
 */
typedef struct CommitContext
{
	const char *sink;
	const char *commit_user;
	int64 checkpoint_id;
	const char *target; /* schema-qualified, quoted where needed */
} CommitContext;

/* Whose transaction commit_prepare_and_commit_gid prepares and commits. */
typedef enum CommitWay
{
	COMMIT_WAY_ONE,		 /* checkpoints loaded here (one sink's, or a group's) */
	COMMIT_WAY_PARALLEL, /* the decision of a checkpoint the loaders loaded */
	COMMIT_WAY_BATCH	 /* periodic checkpoints of many sinks (commit_batch.c) */
} CommitWay;

/* in commit.c */
extern void commit_error_context(void *arg);
extern void commit_begin_block(void);
extern SinkInfo *commit_enter_checkpoint(int32 sink_id, const char *commit_user,
										 int64 checkpoint_id, CommitContext *context,
										 ErrorContextCallback *callback);
extern void commit_enter_known(const SinkInfo *sink, const char *commit_user, int64 checkpoint_id,
							   CommitContext *context, ErrorContextCallback *callback);
extern List *commit_read_checkpoint_files(const SinkInfo *sink, const char *commit_user,
										  int64 checkpoint_id, int64 *rows, int64 *bytes,
										  int64 *file_bytes);
extern uint64 commit_load_checkpoint(SinkInfo *sink, const char *commit_user, int64 checkpoint_id,
									 List *files, int64 rows, UpsertCounts *changes,
									 const char **commit_kind);
extern int64 commit_record_snapshot(int32 sink_id, const char *commit_user, int64 checkpoint_id,
									uint64 loaded, int files, int64 bytes, TimestampTz start,
									const char *commit_kind);
extern void commit_refuse_gid_in_use(const char *gid, const SinkInfo *sink, const char *commit_user,
									 int64 checkpoint_id);
extern void commit_prepare_and_commit_gid(const SinkInfo *sink, const char *commit_user,
										  int64 checkpoint_id, List *files,
										  ErrorContextCallback *callback, CommitWay way);
extern void commit_log(const SinkInfo *sink, const char *commit_user, int64 checkpoint_id,
					   int64 snapshot_id, uint64 loaded, List *files, int64 bytes,
					   const UpsertCounts *changes, TimestampTz start, int loaders);

#endif /* PAIMON_SINK_COMMIT_STEPS_H */
