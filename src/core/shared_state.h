/*-------------------------------------------------------------------------
 *
 * shared_state.h
 *	  The shared-memory state of paimon_sink: one entry per database with
 *	  sinks, holding its committer's request queue and its writers, each
 *	  writer with its hand-off slots (one shm_mq each) and its barrier area.
 *
 * Everything lives in the main shared memory segment, sized at startup by
 * paimon_sink.max_databases, paimon_sink.writers_per_database,
 * paimon_sink.queues_per_writer and paimon_sink.queue_size.  shm_mq works
 * outside DSM when both sides detach explicitly, which both sides do.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_SHARED_STATE_H
#define PAIMON_SINK_SHARED_STATE_H

#include "access/xact.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shm_mq.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

#include "core/constants.h"
#include "core/fault.h"

/* Database entry states. */
typedef enum DatabaseState
{
	DATABASE_UNUSED = 0,
	DATABASE_WANTED,	  /* a committer should run here */
	DATABASE_NO_EXTENSION /* probed: the extension is not installed */
} DatabaseState;

/* Hand-off slot states. */
typedef enum HandoffSlotState
{
	HANDOFF_FREE = 0,
	HANDOFF_ACTIVE /* a backend is sending rows */
} HandoffSlotState;

/* The bytes of each text of a hand-off's failure (message, detail, hint). */
#define HANDOFF_FAILURE_TEXT 384

/*
 * One hand-off slot: a bounded queue from a committing backend to a writer.
 * The backend bumps "generation" when it takes the slot; the writer raises
 * "done_generation" once the batch is durable.  The slot is free again only
 * when both ends have detached, so a queue is never re-created under a
 * handle still attached to it.
 */
typedef struct HandoffSlot
{
	int state;			/* HandoffSlotState, under writer->mutex */
	bool published;		/* the queue of this use is ready to attach */
	bool sender_done;	/* the backend detached its end */
	bool receiver_done; /* the writer detached its end */
	uint64 incarnation; /* of the writer this use was meant for */
	uint64 generation;
	uint64 done_generation;
	PGPROC *requester;
	Size queue_offset; /* from the start of shared state */

	/*
	 * A use the writer could not stage (a full disk, an I/O error): it
	 * writes the error here instead of acknowledging, and the slot stays
	 * taken until the sender has seen it (handoff_failure.c), so that no
	 * later use of the slot can hide it.
	 */
	bool failed;
	bool failure_seen;
	int failure_code; /* the SQLSTATE, as ereport's sqlerrcode */
	char failure_message[HANDOFF_FAILURE_TEXT];
	char failure_detail[HANDOFF_FAILURE_TEXT];
	char failure_hint[HANDOFF_FAILURE_TEXT];
} HandoffSlot;

/* What a barrier request asks of a writer. */
typedef enum BarrierKind
{
	BARRIER_SEAL = 0, /* seal the streams, report committables */
	BARRIER_DISCARD,  /* drop the streams (a job restores) */
	BARRIER_LIST,	  /* report every file held (orphan removal) */
	BARRIER_DROP,	  /* seal the streams and remove what was sealed (a replay) */
	BARRIER_STAGED	  /* report the rows each stream holds, change nothing */
} BarrierKind;

/* Barrier states of a writer. */
typedef enum BarrierState
{
	BARRIER_IDLE = 0,
	BARRIER_REQUESTED,
	BARRIER_ANSWERING
} BarrierState;

/*
 * The most sinks one barrier concerns: the due periodic checkpoints of a
 * database that the committer commits together (commit_batch.c) take one
 * barrier round for all of them.
 */
#define PAIMON_SINK_BARRIER_SINKS 32

/*
 * One sink a barrier concerns: its streams of commit_user (every commit
 * user's when empty), the batches written before fence_epoch left out.
 */
typedef struct BarrierSink
{
	int32 sink_id;
	pg_uuid_t sink_uuid;
	uint64 fence_epoch;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
} BarrierSink;

/*
 * One writer process.  The barrier area is used by the database's committer
 * only (one barrier at a time): it holds the barrier's sinks and snapshot
 * and a reply queue from the writer to the committer.
 */
typedef struct WriterEntry
{
	slock_t mutex;
	pid_t pid;
	PGPROC *proc;
	bool ready;			/* adopted its files, serving */
	uint64 incarnation; /* bumped at each start */
	ConditionVariable slot_freed;

	/* barrier (committer to writer) */
	int barrier_state;
	uint64 barrier_seq;
	uint64 confirmed_barrier_seq; /* the last barrier the committer recorded */
	int barrier_sink_count;		  /* the sinks of barrier_sinks it concerns */
	BarrierSink barrier_sinks[PAIMON_SINK_BARRIER_SINKS];
	int32 barrier_writer_id; /* -1: every writer id */
	int barrier_kind;		 /* BarrierKind */
	TransactionId barrier_xmin;
	TransactionId barrier_xmax;
	uint32 barrier_xcnt;
	Size barrier_xip_offset;
	Size barrier_queue_offset;

	/*
	 * Liveness (liveness.c).  heartbeat is the TimestampTz of the writer's
	 * last sign of progress (a turn of its loop, a message received, a file
	 * sealed or fsynced), written by the writer only.  The committer fences
	 * the process of a writer that showed none for paimon_sink.handoff_timeout:
	 * fenced, fenced_pid and fenced_at are written by the committer under
	 * mutex, and cleared by the next incarnation when it starts.
	 */
	pg_atomic_uint64 heartbeat;
	bool fenced;
	pid_t fenced_pid;
	TimestampTz fenced_at;
	bool fenced_kill_sent; /* paimon_sink.fenced_writer_kill_delay passed: SIGKILL sent */
	uint64 fences;		   /* processes of this slot fenced since the server started */

	/* statistics, written by the writer only */
	pg_atomic_uint64 rows_staged;
	pg_atomic_uint64 bytes_staged;
	pg_atomic_uint32 files_open;
	pg_atomic_uint32 queues_in_use;
	pg_atomic_uint32 streams;  /* (sink, commit user, writer id, bucket) held */
	pg_atomic_uint64 fsyncs;   /* of staged files and their folders */
	pg_atomic_uint64 handoffs; /* transactions whose rows it acknowledged */
	/* (sink, commit user) whose open rows did not fit the table of open_staged.c */
	pg_atomic_uint32 open_staged_omitted;

	/*
	 * The sinks whose files (open, or sealed and not yet forgotten) the
	 * writer may hold, bit SINK_HELD_BIT(sink_id): set before a file of
	 * the sink is opened or adopted (so before any batch of it is
	 * acknowledged), recomputed by the writer at the end of each barrier
	 * answer.  A barrier skips a ready writer whose bit is clear
	 * (barrier_run).
	 */
	pg_atomic_uint64 sinks_held;

	int slot_count;
	HandoffSlot slots[FLEXIBLE_ARRAY_MEMBER];
} WriterEntry;

/* A sink's bit in WriterEntry.sinks_held. */
#define SINK_HELD_BIT(sink_id) (UINT64CONST(1) << ((uint32) (sink_id) % 64))

/* Committer request kinds and states. */
typedef enum RequestKind
{
	REQUEST_PREPARE = 1,
	REQUEST_COMMIT,
	REQUEST_CHECKPOINT,
	REQUEST_RECOVER,
	REQUEST_END_INPUT,
	REQUEST_REMOVE_ORPHANS,
	REQUEST_DISCARD_MISSING
} RequestKind;

typedef enum RequestState
{
	REQUEST_FREE = 0,
	REQUEST_QUEUED,
	REQUEST_RUNNING,
	REQUEST_DONE
} RequestState;

#define PAIMON_SINK_REQUESTS_PER_DATABASE 64

#define RECOVER_RESTORE 0
#define RECOVER_RESTORE_AND_FAIL 1

/*
 * The bytes a request's error (or warning) may take.  The committer writes
 * the whole ErrorData there in the fields of the protocol's ErrorResponse
 * (see request.c): every field a client reads, the internal query and the
 * names of the schema, table, column, data type and constraint included,
 * but the cursor position (it would point into a query the client does
 * not have).  8 kB holds any error of ours and a detail of several kB; a
 * longer one has its longest fields cut, with a marker saying so, rather
 * than being lost.  With 64 requests that is 512 kB of shared memory per
 * database entry (it was 5 fields of 1 kB each, 320 kB).
 */
#define PAIMON_SINK_ERROR_SIZE 8192

/*
 * The bytes a prepare_commit's properties (a jsonb object, carried to the
 * committer as text with its NUL) may take: 8 kB holds the source offsets
 * of a few hundred partitions (Kafka's per-partition offsets, a
 * replication slot's LSN).  With 64 requests that is 512 kB more shared
 * memory per database entry.
 */
#define PAIMON_SINK_PROPERTIES_SIZE 8192

/*
 * The snapshots a commit request made, handed back with its answer, so that
 * commit(), checkpoint(), end_input() and reject_failing_rows() answer with
 * them whatever the committer's snapshot expiry does before the requester
 * reads its answer.  16 cover a request that commits a few pending
 * checkpoints (one per call in the common case); past them the requester
 * reads the rest from snapshot_log.
 */
#define PAIMON_SINK_ANSWERED_SNAPSHOTS 16

/* One snapshot a request made, as snapshot_log holds it. */
typedef struct AnsweredSnapshot
{
	int32 sink_id;
	int32 file_count;
	int64 snapshot_id;
	int64 checkpoint_id;
	int64 row_count;
	TimestampTz committed_at;
} AnsweredSnapshot;

/*
 * One request from a backend to its database's committer.  Every field is
 * read and written under PaimonSinkState->lock; the committer works on a
 * copy taken under it.
 */
typedef struct CommitterRequest
{
	int state;
	int kind;
	uint64 seq; /* made from next_request_seq, never reused */
	PGPROC *requester;
	bool abandoned; /* the requester left: served all the same, then freed */
	int32 sink_id;	/* a group's request: its first member */
	int32 group_id; /* commit, recover, end_input of a sink group (0: of one sink) */
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	int64 checkpoint_id;
	int32 writer_id; /* -1: every writer id */
	int32 mode;		 /* recover: RECOVER_RESTORE or _AND_FAIL */
	/* recover: restore the last committed checkpoint (checkpoint_id unused) */
	bool restore_last_committed;
	int64 older_than_ms; /* orphan removal cut-off */
	bool dry_run;
	bool reject_rows; /* commit: reject_failing_rows(), refused rows moved aside */
	/* prepare: the checkpoint's properties as jsonb text; "" for none */
	char properties[PAIMON_SINK_PROPERTIES_SIZE];
	uint64 fence_epoch; /* prepare with properties: the session's epoch */
	/* prepare, commit, end_input: held to the fence (fence.c), naming named_epoch */
	bool check_fence;
	int64 named_epoch;		  /* FENCE_EPOCH_UNNAMED: the call names none */
	bool expected_rows_given; /* prepare: the writer id said how many rows it sent */
	int64 expected_rows;
	bool job_restart; /* recover: restart_job()'s, the commit user becomes a job's */

	/* results */
	int64 result_checkpoint_id; /* prepared or committed up to */
	int64 previous_last_committed;
	int64 last_committed;
	int32 committable_count;
	int32 recommitted_checkpoints; /* recover: prepared checkpoints up to the restored one */
	int32 discarded_checkpoints;
	int32 discarded_files;
	int64 discarded_rows; /* discard_missing_files: rows of the files forgotten */
	int sqlerrcode;		  /* 0 when it succeeded */
	/* the snapshots made, in commit order: the first ones, and how many in all */
	int32 answered_count;
	AnsweredSnapshot answered[PAIMON_SINK_ANSWERED_SNAPSHOTS];

	/*
	 * The error of a failed request, or the warning of a successful one (a
	 * maintenance that failed after the commit): error_length bytes of
	 * protocol fields, 0 when there is none.
	 */
	uint32 error_length;
	char error[PAIMON_SINK_ERROR_SIZE];
} CommitterRequest;

/* What a loader worker is doing (LoaderEntry.state). */
typedef enum LoaderState
{
	LOADER_FREE = 0,
	LOADER_ASSIGNED, /* the committer filled in the assignment and starts the worker */
	LOADER_LOADING,	 /* the worker took it and loads its share */
	LOADER_PREPARED, /* its share is loaded, inside its prepared transaction */
	LOADER_FAILED,	 /* it failed: the error is in error[] */
	/* loading ahead (load_ahead.c, loader_ahead.c): a streamed transaction's own files */
	LOADER_AHEAD_WANTED,  /* a writer published the transaction's first file */
	LOADER_AHEAD_REFUSED, /* the committer will not load it ahead: freed once it ends */
	LOADER_AHEAD_STARTED, /* the committer started its worker */
	LOADER_AHEAD_LOADING, /* the worker loads the files as they grow */
	LOADER_LOADED_AHEAD	  /* the transaction committed, every batch loaded: awaits its checkpoint */
} LoaderState;

/* The files of one streamed transaction a loader entry may load ahead. */
#define PAIMON_SINK_AHEAD_FILES 16

/* The bytes of a staged file's name (STAGED_FILE_NAME_LENGTH) and its NUL. */
#define PAIMON_SINK_AHEAD_NAME 48

/*
 * One staged file of a streamed transaction loaded ahead: its name, and the
 * end of its last logged batch, which its writer raises after each append
 * (no lock: the loader reads batches up to it, never beyond).
 */
typedef struct AheadFile
{
	char name[PAIMON_SINK_AHEAD_NAME];
	pg_atomic_uint64 end;
} AheadFile;

/*
 * One loader worker of a database (loader.c): it loads a large checkpoint
 * of an append sink into the target and ends its transaction with
 * PREPARE TRANSACTION under gid.  Whole (the default), it loads all of it
 * and records its snapshot too, under the checkpoint's own gid, which the
 * committer then commits; with paimon_sink.nonatomic_parallel_load it
 * loads one share, and the committer records the decision (the snapshot)
 * and commits every share's gid (commit_parallel.c).  The assignment is bounded whatever the checkpoint's
 * size: the loader reads the checkpoint's files from the catalog itself
 * and takes the batches whose position in them (their byte offset, the
 * files laid end to end in the catalog's order) lies in its part of
 * total_bytes.  Every field but the counters is read and written under
 * PaimonSinkState->lock; the counters are the loader's, read by
 * commit_progress.  committer_incarnation is the assigning committer's: a
 * loader whose committer is no longer the database's never starts to load
 * (register_committer bumps the incarnation before it looks at loaders).
 */
typedef struct LoaderEntry
{
	int state; /* LoaderState */
	pid_t pid; /* set by the worker as it takes the assignment, cleared as it exits */
	uint64 committer_incarnation;
	int32 sink_id;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	int64 checkpoint_id;
	int32 part;				 /* 0 .. parts - 1 */
	int32 parts;			 /* loaders of the checkpoint */
	bool whole;				 /* the whole checkpoint, snapshot included, under its own gid */
	int64 byte_count;		 /* whole: the committables' bytes, for the snapshot */
	TimestampTz start;		 /* whole: when the committer started the commit */
	int64 total_bytes;		 /* of the checkpoint's files, as the committer found them */
	char gid[GIDSIZE];		 /* what it prepares under */
	int64 rows_loaded;		 /* once prepared */
	int64 snapshot_id;		 /* whole: once prepared, the snapshot it recorded */
	TimestampTz recorded_at; /* whole: once prepared, the snapshot's committed_at */
	pg_atomic_uint64 rows_done;
	pg_atomic_uint32 files_done;
	int sqlerrcode; /* when failed */
	uint32 error_length;
	char error[PAIMON_SINK_ERROR_SIZE]; /* the whole ErrorData, as request.c encodes it */

	/*
	 * Loading ahead.  A writer that opens the own file of a streamed
	 * transaction claims a free entry for (sink, commit user, xid), or finds
	 * the one claimed, and appends the file (under the lock); ahead_generation
	 * changes with each claim, so a writer that kept a file's slot raises its
	 * end only while the claim is the one it saw.  The read counters are
	 * the loader's; the committer reads them as it gives the loader its
	 * checkpoint: what was loaded before.
	 */
	uint64 ahead_xid;				  /* the streamed transaction's full xid */
	uint64 ahead_generation;		  /* bumped at each claim */
	Oid ahead_target;				  /* set by the committer as it starts the worker */
	PGPROC *ahead_proc;				  /* the loader's, once it loads: writers set its latch */
	int ahead_file_count;			  /* files in ahead_files */
	bool ahead_overflow;			  /* a file did not fit: it can never match a checkpoint */
	TimestampTz ahead_started_at;	  /* when the loader began to load ahead */
	TimestampTz ahead_done_at;		  /* when it had loaded the whole transaction */
	pg_atomic_uint64 ahead_rows_read; /* rows and payload bytes it read so far */
	pg_atomic_uint64 ahead_bytes_read;
	AheadFile ahead_files[PAIMON_SINK_AHEAD_FILES];
} LoaderEntry;

/* What loaders of a database loaded ahead, summed over them (load_ahead_stats()). */
typedef struct AheadStats
{
	pg_atomic_uint64 started; /* loaders started to load ahead */
	pg_atomic_uint64 taken;	  /* checkpoints given to a loader that loaded ahead */
	pg_atomic_uint64 stopped; /* loaders stopped or given up, their rows rolled back */
	pg_atomic_uint64 rows;	  /* loaded before a checkpoint was given (taken ones) */
	pg_atomic_uint64 bytes;	  /* their payload bytes */
	pg_atomic_uint64 us;	  /* microseconds the loaders spent loading them */
} AheadStats;

/* Phases of a commit, for the view commit_progress. */
typedef enum CommitPhase
{
	COMMIT_PHASE_IDLE,
	COMMIT_PHASE_LOADING,  /* reading staged files (append: into the target) */
	COMMIT_PHASE_APPLYING, /* upsert: sorted, running the MERGE */
	COMMIT_PHASE_PREPARING /* PREPARE TRANSACTION and COMMIT PREPARED */
} CommitPhase;

/*
 * The checkpoint the committer is committing now (as pg_stat_progress_copy
 * shows a COPY): written by the committer only, under mutex.
 */
typedef struct CommitProgress
{
	slock_t mutex;
	int phase; /* CommitPhase */
	int32 sink_id;
	int64 checkpoint_id;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	int32 files_total;
	int32 files_done;
	int64 rows_total;
	int64 rows_done;
	TimestampTz started_at;
	int32 loaders;	   /* loader workers loading it; 0: the committer loads it */
	int first_loader;  /* with loaders: the entry of its part 0; parts follow in order */
	char gid[GIDSIZE]; /* the prepared transaction it commits in */
} CommitProgress;

/*
 * The sinks of a database whose status the schedule shows (the
 * checkpoint_schedule view); the committer schedules any number of sinks,
 * those beyond this many are scheduled alike but not shown.
 */
#define PAIMON_SINK_SCHEDULE_SHOWN 1024

/* One sink's periodic checkpoints, as the committer's schedule last saw them. */
typedef struct ScheduleStatusEntry
{
	int32 sink_id;
	int64 interval_ms;
	TimestampTz next_due; /* the deadline of its next periodic checkpoint */
	int64 checkpoints;	  /* periodic checkpoints run (empty ones too) */
	int64 overdue;		  /* slots skipped: more than an interval behind */
	int64 last_late_ms;	  /* the last one's start after its deadline */
	int64 max_late_ms;	  /* the most any of them started after its deadline */
	TimestampTz last_run; /* when the last one started; 0: none yet */
} ScheduleStatusEntry;

/*
 * The schedule of a database's periodic checkpoints, published by its
 * committer (which alone writes it, since its start) for the
 * checkpoint_schedule view.  mutex guards count and each entry; the
 * committer holds it to write one entry or count, a reader to copy one, so
 * a reader may see a schedule half rewritten (rows of the old and the new
 * one side by side): harmless for a status view.
 */
typedef struct ScheduleStatus
{
	slock_t mutex;
	int count; /* entries in use */
	ScheduleStatusEntry entries[PAIMON_SINK_SCHEDULE_SHOWN];
} ScheduleStatus;

/*
 * One database with sinks.  Its fields are written under
 * PaimonSinkState->lock (progress and schedule under their own mutex).  A process that
 * reads committer_proc to set its latch may do so without the lock: a
 * PGPROC is never freed, so a stale pointer sets the latch of a process
 * that ignores it, and the committer looks at its requests when it
 * starts.  committer_ready read without the lock is a hint whose staleness
 * only delays or hurries a refusal by one loop of the committer.
 */
typedef struct DatabaseEntry
{
	Oid database_id;
	int state; /* DatabaseState */
	pid_t committer_pid;
	PGPROC *committer_proc;
	uint64 committer_incarnation;
	bool committer_ready;
	/*
	 * The TimestampTz of the committer's last sign of progress (liveness.c):
	 * a turn of its loop, a request taken, a chunk of a load read, a look at
	 * its loaders, a step of maintenance.  Written by the committer only.
	 */
	pg_atomic_uint64 committer_heartbeat;
	bool sinks_changed;				 /* create_sink or drop_sink committed since */
	uint64 extension_commits;		 /* CREATE/ALTER EXTENSION commits here */
	bool extension_seen;			 /* known to have the extension (not only to probe) */
	TimestampTz committer_failed_at; /* last exit with an error */
	uint64 next_request_seq;
	ConditionVariable request_done;
	ConditionVariable workers_ready; /* broadcast as the committer or a writer starts serving */
	CommitterRequest requests[PAIMON_SINK_REQUESTS_PER_DATABASE];
	CommitProgress progress;		  /* the committer's own load */
	CommitProgress parallel_progress; /* the checkpoint its loaders load */
	/*
	 * Sinks whose requests wait for the parallel commit in flight: its own
	 * sink, and sinks into the same target (their load could wait for a
	 * share's prepared rows, which wait for the committer).  request_next
	 * leaves their requests queued; cleared as the commit ends.
	 */
	int waiting_count;
	int32 waiting_sinks[PAIMON_SINK_REQUESTS_PER_DATABASE];
	Size loader_offset; /* paimon_sink.loaders_per_database LoaderEntry from here */
	AheadStats ahead_stats;
	ScheduleStatus schedule;
	Size writer_offsets[FLEXIBLE_ARRAY_MEMBER]; /* one per writer */
} DatabaseEntry;

typedef struct PaimonSinkShared
{
	LWLock *lock; /* database entries and requests */
	pid_t launcher_pid;
	PGPROC *launcher_proc;
	int database_count;
	int writers_per_database;
	/*
	 * The unlogged-batch cut of a recovery without redo (staged_wal.c),
	 * under lock: the next xid of the control file's checkpoint, whether a
	 * cut may be needed (no clean shutdown), whether rm_cleanup ran, and
	 * whether a writer made the cut.
	 */
	uint64 recovery_next_xid;
	bool recovery_cut_wanted;
	bool redo_cleanup_ran;
	bool unlogged_cut_done;
	FaultTable faults;
	Size database_offsets[FLEXIBLE_ARRAY_MEMBER];
} PaimonSinkShared;

extern PaimonSinkShared *PaimonSinkState;

/* True once _PG_init ran from shared_preload_libraries. */
extern bool PaimonSinkPreloaded;

/* The database entry this process serves (a committer's or writer's; else NULL). */
extern int MyDatabaseIndex;
extern DatabaseEntry *MyDatabaseEntry;

extern void shared_state_request(void);
extern void shared_state_init(void);
extern void shared_require_preload(void);

extern DatabaseEntry *shared_database(int index);
extern WriterEntry *shared_writer(DatabaseEntry *db, int index);
extern LoaderEntry *shared_loader(DatabaseEntry *db, int index);
extern void *shared_address(Size offset);
extern Size shared_queue_size(void);

extern int shared_find_database(Oid database_id);
extern int shared_want_database(Oid database_id, bool has_extension);
extern void shared_extension_committed(Oid database_id);
extern uint64 shared_extension_commits(Oid database_id);
extern void shared_extension_dropped(Oid database_id, uint64 commits_seen);
extern void shared_wake_launcher(void);
extern bool shared_database_wanted(Oid database_id);
extern void shared_stop_database(Oid database_id);

#endif /* PAIMON_SINK_SHARED_STATE_H */
