/*-------------------------------------------------------------------------
 *
 * metadata.h
 *	  The one file that knows the extension's tables (schema paimon_sink):
 *	  typed functions for every statement run on them.
 *
 * Each function needs a transaction and connects to SPI itself; what it
 * returns is allocated in the memory context current at the call.  Callers
 * never see a column number, a parameter array or a query text.  This
 * follows pg_cron's job_metadata.c: the only file that knows the catalog's
 * columns, returning structs.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_METADATA_H
#define PAIMON_SINK_METADATA_H

#include "fmgr.h"
#include "nodes/pg_list.h"
#include "utils/timestamp.h"

#include "core/shared_state.h"
#include "metadata/catalog.h"

/* A commit user's high-water marks and fence epoch (commit_user_state). */
typedef struct CommitUserMarks
{
	int64 last_prepared;
	int64 last_committed;
	uint64 fence_epoch;
	bool epoch_required; /* a job's (restart_job()): writes and calls name the epoch */
} CommitUserMarks;

/* How metadata_move_marks moves a commit user's marks. */
typedef enum MarkMove
{
	MARK_RAISE_PREPARED,
	MARK_RAISE_COMMITTED,
	MARK_REWIND_PREPARED,
	MARK_NEW_FENCE_EPOCH,
	MARK_JOB_FENCE_EPOCH
} MarkMove;

/* What create_sink records of a new sink (sink_definition). */
typedef struct SinkDefinition
{
	const char *name;
	Oid target; /* its owner is its foreign table's (foreign_table.c) */
	const char *mode;
	int32 buckets;
	Datum bucket_key;			   /* text[], or (Datum) 0 for none */
	Interval *checkpoint_interval; /* NULL: the GUC's */
	const char *row_kind_column;   /* NULL: none */
	bool partial_update;
	Datum key_columns;	  /* text[], or (Datum) 0 for none */
	const char *on_error; /* 'stop' or 'reject' */
	bool ignore_update_before;
	bool ignore_delete;
	bool dynamic_partition_overwrite;
} SinkDefinition;

/* A sink with its foreign table and that table's owner, the sink's (0: gone). */
typedef struct SinkOwnership
{
	char *name;
	Oid foreign_table;
	Oid owner;
} SinkOwnership;

/* One committable to record: a sealed file of a checkpoint. */
typedef struct CommittableEntry
{
	const char *file_name;
	int32 sink_id;
	const char *commit_user;
	int64 checkpoint_id;
	int32 writer_id;
	int32 bucket;
	int64 row_count;
	int64 byte_count;
	int64 max_sequence;
	int excluded_count;
	const int64 *excluded; /* batch offsets left out of the file */
} CommittableEntry;

/* One file of a checkpoint to commit, as the load reads it. */
typedef struct CheckpointFile
{
	char *file_name;
	int64 row_count;
	int64 byte_count;
	int excluded_count;
	int64 *excluded;
} CheckpointFile;

/* The snapshot a commit records, in the same transaction as its rows. */
typedef struct SnapshotEntry
{
	int32 sink_id;
	const char *commit_user;
	int64 checkpoint_id;
	int64 row_count;
	int32 file_count;
	int64 byte_count;
	double load_ms;
	const char *commit_kind; /* APPEND, or OVERWRITE for a commit that replaced rows */
} SnapshotEntry;

/* What a commit user's job has replaced of an overwrite sink's target (commit_user_state). */
typedef struct OverwriteState
{
	int64 checkpoint_id; /* the commit that replaced the target; 0: none yet */
	List *partitions;	 /* dynamic_partition_overwrite: leaf partitions replaced, Oid */
} OverwriteState;

/* A sink group (metadata_group.c): sinks whose checkpoints commit as one. */
typedef struct SinkGroup
{
	int32 group_id;
	char *name;
	List *members; /* sink ids (an integer List), in the group's order */
} SinkGroup;

/* What a checkpoint named by a prepared transaction's gid is now. */
typedef struct CheckpointState
{
	bool sink_exists;
	bool commit_user_known;
	int64 last_committed; /* when commit_user_known */
	bool pending;		  /* recorded, not committed */
} CheckpointState;

/* A sink and its checkpoint interval, for the committer's schedule. */
typedef struct ScheduledSinkRow
{
	int32 sink_id;
	bool has_interval; /* false: the GUC's */
	Interval interval;
} ScheduledSinkRow;

/* A staged file of a sink (sink id and file name). */
typedef struct SinkFile
{
	int32 sink_id;
	char *file_name;
} SinkFile;

/* The highest sequence number a bucket of a sink has used. */
typedef struct BucketSequenceRow
{
	int32 sink_id;
	int32 bucket;
	int64 max_sequence;
} BucketSequenceRow;

/* What a request's commits did, for commit_statistics. */
typedef struct CommitTally
{
	int64 commits;
	int64 skipped;
	int64 retries;
	int64 rows;
	int64 bytes;
	double last_ms;
} CommitTally;

/* Where a staged file stands in committable. */
typedef enum FileRecord
{
	FILE_NOT_RECORDED,
	FILE_PENDING, /* recorded for a checkpoint not committed */
	FILE_COMMITTED
} FileRecord;

/* A commit user's last committed checkpoint, as last_commit() returns it. */
typedef struct LastCommit
{
	int64 checkpoint_id;	  /* 0 before the first commit */
	char *properties;		  /* jsonb text; NULL: the checkpoint carried none */
	int64 snapshot_id;		  /* 0: committed without a snapshot (empty), or none yet */
	TimestampTz committed_at; /* of that snapshot; 0 without one */
	uint64 fence_epoch;
} LastCommit;

/* sinks */
extern bool metadata_sink_by_name(const char *name, SinkInfo *info);
extern bool metadata_sink_by_id(int32 sink_id, SinkInfo *info);
extern List *metadata_sinks_of_target(Oid relid);
extern bool metadata_sink_exists(int32 sink_id);
extern List *metadata_sink_ownership(Datum relids, Datum roles);
extern int32 metadata_insert_sink(const SinkDefinition *definition);
extern void metadata_set_sink_layout(int32 sink_id, Oid foreign_table);
extern void metadata_extend_sink_layout(int32 sink_id, Oid foreign_table, Datum target_attnums);
extern void metadata_read_target_attnums(uint64 row, SinkInfo *info);
extern char *metadata_add_default_commit_user(int32 sink_id);
extern void metadata_drop_sink(int32 sink_id);
extern List *metadata_dropped_sinks(void); /* int64 * */
extern void metadata_forget_dropped_sink(int32 sink_id);
extern List *metadata_schedule(void);

/* commit users */
extern CommitUserMarks metadata_commit_user_marks(int32 sink_id, const char *commit_user,
												  bool for_update);
extern bool metadata_read_commit_user(int32 sink_id, const char *commit_user, bool latest,
									  CommitUserMarks *marks);
extern void metadata_move_marks(MarkMove move, int32 sink_id, const char *commit_user,
								int64 checkpoint_id);

/* committables and snapshots */
extern bool metadata_record_committable(const CommittableEntry *entry);
extern List *metadata_checkpoint_files(int32 sink_id, const char *commit_user, int64 checkpoint_id);
extern List *metadata_pending_checkpoints(int32 sink_id, const char *commit_user, int64 up_to);
extern int metadata_count_pending_checkpoints(int32 sink_id);
extern int metadata_count_committables(int32 sink_id, const char *commit_user, int64 checkpoint_id,
									   int32 writer_id, int64 *rows);
extern bool metadata_sink_has_job(int32 sink_id);
extern int metadata_count_pending_after(int32 sink_id, const char *commit_user, int64 restored);
extern List *metadata_discard_pending_after(int32 sink_id, const char *commit_user, int64 restored);
extern int64 metadata_forget_files(int32 sink_id, const char *commit_user, Datum files,
								   uint64 request_id);
extern Oid metadata_commit_user_state_table(void);
extern int64 metadata_record_snapshot(const SnapshotEntry *entry);
extern FileRecord metadata_file_record(const char *file_name);
extern List *metadata_committed_files(void);
extern List *metadata_bucket_sequences(void);
extern CheckpointState metadata_checkpoint_state(int32 sink_id, const char *commit_user,
												 int64 checkpoint_id);
extern int64 metadata_expire_snapshots(int32 sink_id, int32 retain_last, int64 older_than_ms,
									   int64 limit, bool as_catalog_owner);

/* maintenance and statistics */
extern void metadata_add_maintenance_result(uint64 request_id, const char *file_name,
											int64 byte_count, bool removed);
extern void metadata_count_commits(int32 sink_id, const CommitTally *tally, int64 failures,
								   TimestampTz last_committed_at);
extern void metadata_count_failure(int32 sink_id, int sqlerrcode, int64 failures,
								   TimestampTz last_failed_at, const char *message);

/* the counters of sink_stats that no commit writes (metadata_stats.c) */
typedef enum CountOutcome
{
	COUNT_WRITTEN,
	COUNT_LOCKED, /* the row is locked: nothing written, try again */
	COUNT_NO_ROW  /* the commit user or its sink is gone */
} CountOutcome;

extern CountOutcome metadata_count_outcome(int32 sink_id, const char *commit_user, int64 failures,
										   int64 skipped);
extern int64 metadata_reset_sink_stats(int32 sink_id, bool all, Oid role);

/* overwrite sinks (metadata_overwrite.c) */
extern OverwriteState metadata_overwrite_state(int32 sink_id, const char *commit_user);
extern void metadata_record_overwrite(int32 sink_id, const char *commit_user, int64 checkpoint_id,
									  List *partitions);

/* checkpoint properties (metadata_properties.c) */
extern void metadata_check_properties(const SinkInfo *sink, const char *commit_user,
									  int64 checkpoint_id, int32 writer_id, const char *properties);
extern void metadata_record_properties(int32 sink_id, const char *commit_user, int64 checkpoint_id,
									   int32 writer_id, const char *properties);
extern void metadata_discard_properties_after(int32 sink_id, const char *commit_user,
											  int64 restored);
extern bool metadata_last_commit(int32 sink_id, const char *commit_user, LastCommit *last);

/* in metadata_group.c: sink groups */
extern SinkGroup *metadata_group_by_name(const char *name);
extern List *metadata_group_members(int32 group_id);
extern char *metadata_group_of_sink(int32 sink_id);
extern int32 metadata_insert_group(const char *name, List *members);
extern void metadata_drop_group(int32 group_id);

/* result sets of SQL functions, read under the latest snapshot */
extern void metadata_return_committables(FunctionCallInfo fcinfo, int32 sink_id,
										 const char *commit_user, int64 checkpoint_id,
										 int32 writer_id);
extern void metadata_return_snapshots(FunctionCallInfo fcinfo, int32 sink_id,
									  const char *commit_user, int64 after, int64 up_to, int64 also,
									  const AnsweredSnapshot *answered, int answered_count);
extern void metadata_return_maintenance_results(FunctionCallInfo fcinfo, uint64 request_id,
												bool discarded);

#endif /* PAIMON_SINK_METADATA_H */
