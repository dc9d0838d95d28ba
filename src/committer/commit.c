/*-------------------------------------------------------------------------
 *
 * commit.c
 *	  Committing prepared checkpoints.
 *
 * A checkpoint is committed as in Paimon's CommitterOperator: in ascending
 * order, each identifier once, skipping those the commit user's
 * high-water mark already covers.  One checkpoint commits in five steps,
 * one function each: read its committables (and check their files are
 * there), load them into the target (load.c, or upsert_merge.c's MERGE), record
 * the snapshot and raise the mark, PREPARE TRANSACTION under a gid
 * carrying (database, sink, checkpoint id, commit user) and COMMIT
 * PREPARED, then log it.  A prepared transaction is only ever created for
 * a complete checkpoint, so recovery commits every in-doubt one of ours.
 * The worker drives its own transaction block the way exec_simple_query
 * drives BEGIN ... PREPARE TRANSACTION.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/twophase.h"
#include "access/xact.h"
#include "commands/dbcommands.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "tcop/tcopprot.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "apply/load.h"
#include "apply/overwrite.h"
#include "apply/rejects.h"
#include "committer/commit.h"
#include "committer/commit_parallel.h"
#include "committer/commit_steps.h"
#include "committer/load_ahead.h"
#include "committer/recovery.h"
#include "committer/work.h"
#include "core/fault.h"
#include "core/guc.h"
#include "core/names.h"
#include "core/security.h"
#include "staging/staged_file.h"

CommitTally CommitTallies;
CommitterRequest *CommitAnswer = NULL;

/* When the snapshots recorded in the open transaction were committed: its start, now()'s value. */
static TimestampTz recorded_at = 0;

/* The hint a failure gets when its own has none (a failed load says what to do). */
static const char *failure_hint = NULL;

#define LOAD_FAILURE_HINT                                                                          \
	"Nothing of the checkpoint was applied and it stays prepared: fix the cause and call "         \
	"commit() or checkpoint() again."

/*
 * A request whose commit waits for its loaders (an asynchronous parallel
 * commit, commit_parallel.c): what commit_pending still has to do once
 * they are done.  Held in a memory context of its own, since the
 * committer serves other requests meanwhile (each resets
 * CommitterContext); resuming runs in a context of its own too, deleted
 * when the rest is done or forgotten.
 */
static struct
{
	bool held;
	MemoryContext context;
	int32 sink_id;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	int64 checkpoint_id; /* the request's: commit up to it */
	List *identifiers;	 /* int64 *: those after the one the loaders load */
	CommitUserMarks marks;
	/* the checkpoint the loaders load */
	int64 loading_id;
	List *files; /* LoadFile * */
	int64 bytes;
	TimestampTz start;
} rest;

static MemoryContext resuming_context = NULL;

/* Whether the request being served may leave its commit to the loaders (commit_allow_suspend). */
static bool suspend_allowed = false;

/*
 * commit_error_context names the checkpoint being committed (sink,
 * checkpoint, commit user, target table) in an error's context.
 */
void
commit_error_context(void *arg)
{
	CommitContext *context = arg;

	errcontext("committing checkpoint %lld of commit user \"%s\" of sink \"%s\" into table %s",
			   (long long) context->checkpoint_id, context->commit_user, context->sink,
			   context->target);
}

/*
 * target_name returns the sink's target table's schema-qualified name (in
 * the current memory context), or its oid when it is gone.
 */
static const char *
target_name(const SinkInfo *sink)
{
	char *relation = get_rel_name(sink->target);
	char *schema = relation ? get_namespace_name(get_rel_namespace(sink->target)) : NULL;

	if (relation == NULL || schema == NULL)
		return psprintf("with oid %u", sink->target);
	return quote_qualified_identifier(schema, relation);
}

/*
 * commit_failure_hint returns the hint of a commit's failure that has none
 * of its own, or NULL, and forgets it.  A name that does not resolve is
 * most often one a trigger or default of the target leaves unqualified:
 * the load runs with search_path pinned (see security.c).
 */
const char *
commit_failure_hint(int sqlerrcode)
{
	const char *hint = failure_hint;

	failure_hint = NULL;
	if (hint == NULL)
		return NULL;
	if (sqlerrcode == ERRCODE_UNDEFINED_TABLE || sqlerrcode == ERRCODE_UNDEFINED_FUNCTION ||
		sqlerrcode == ERRCODE_UNDEFINED_OBJECT || sqlerrcode == ERRCODE_UNDEFINED_SCHEMA)
		return "Nothing of the checkpoint was applied and it stays prepared. The load runs the "
			   "target's triggers, defaults and constraints with search_path pg_catalog, pg_temp: "
			   "qualify the names they use, or give their function a search_path of its own (ALTER "
			   "FUNCTION ... SET search_path = ...), then call commit() or checkpoint() again.";
	return hint;
}

/*
 * commit_refuse_gid_in_use refuses to prepare when the checkpoint's gid is
 * taken (gids are the cluster's), right before PREPARE (the committer's
 * and a whole loader's), within a transaction with a snapshot; raises
 * 55000 or 42710 as follows, else returns.  Taken by a transaction
 * that is not ours (another role's, or one prepared in another database),
 * it fails the commit with ERRCODE_DUPLICATE_OBJECT naming its owner, and
 * the checkpoint stays prepared: never finish or wait for someone else's
 * transaction.  The next attempt draws another random suffix (gid_build),
 * so a taken name never blocks a sink twice.  Taken by one of ours, it is
 * in doubt: recovery commits it before the retry.
 */
void
commit_refuse_gid_in_use(const char *gid, const SinkInfo *sink, const char *commit_user,
						 int64 checkpoint_id)
{
	Oid owner;
	Oid database_id;
	char *owner_name;
	char *database_name;

	if (!recovery_gid_in_use(gid, &owner, &database_id))
		return;
	if (owner == security_committer_role() && database_id == MyDatabaseId)
	{
		RecoveryInDoubtPossible = true;
		ereport(
			ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg(
				 "checkpoint %lld of commit user \"%s\" is in doubt as prepared transaction \"%s\"",
				 (long long) checkpoint_id, commit_user, gid),
			 errdetail("Nothing more of the checkpoint was applied."),
			 errhint("Retry: the committer commits the transaction in doubt first.")));
	}
	owner_name = GetUserNameFromId(owner, true);
	database_name = get_database_name(database_id);
	ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
					errmsg("transaction identifier \"%s\" is in use by a prepared transaction that "
						   "is not paimon_sink's",
						   gid),
					errdetail("Role \"%s\" prepared a transaction of that name in database \"%s\". "
							  "Checkpoint %lld of commit user \"%s\" of sink \"%s\" commits under "
							  "that name, so nothing of it was applied: it stays prepared.",
							  owner_name ? owner_name : "(dropped)",
							  database_name ? database_name : "(dropped)",
							  (long long) checkpoint_id, commit_user, sink->name),
					errhint("Have its owner or a superuser end it, connected to database \"%s\": "
							"ROLLBACK PREPARED '%s'; then commit again. paimon_sink never finishes "
							"another role's transaction.",
							database_name ? database_name : "(dropped)", gid)));
}

/*
 * missing_files_hint returns the way forward from a checkpoint whose
 * staged files are missing: restore them; or go on without them
 * (discard_missing_files, their rows lost); or, for a job's own commit
 * user, restore the job from an earlier checkpoint (recover(), which the
 * sink's own commit user may not use).
 */
static char *
missing_files_hint(const SinkInfo *sink, const char *commit_user)
{
	if (strcmp(commit_user, sink->default_commit_user) == 0)
		return psprintf("Restore the files and commit again; or call "
						"paimon_sink.discard_missing_files(%s) to commit the rest without them "
						"(their rows are lost).",
						quote_literal_cstr(sink->name));
	return psprintf("Restore the files and commit again; or call "
					"paimon_sink.discard_missing_files(%s, %s) to commit the rest without them "
					"(their rows are lost); or restore the job from an earlier checkpoint with "
					"paimon_sink.recover().",
					quote_literal_cstr(sink->name), quote_literal_cstr(commit_user));
}

/*
 * commit_read_checkpoint_files is the first step: the committables of the
 * checkpoint, as LoadFiles in the request's memory, with their rows and
 * bytes added up (*file_bytes: the files' sizes, which the loaders split);
 * an error when a file is missing (nothing is applied).
 */
List *
commit_read_checkpoint_files(const SinkInfo *sink, const char *commit_user, int64 checkpoint_id,
							 int64 *rows, int64 *bytes, int64 *file_bytes)
{
	int32 sink_id = sink->sink_id;
	MemoryContext old_context = MemoryContextSwitchTo(CommitterContext);
	List *files = NIL;
	ListCell *lc;
	StringInfoData missing;

	initStringInfo(&missing);
	foreach (lc, metadata_checkpoint_files(sink_id, commit_user, checkpoint_id))
	{
		CheckpointFile *recorded = lfirst(lc);
		LoadFile *file = load_file_of(recorded, sink_id);
		struct stat st;

		*bytes += recorded->byte_count;
		if (stat(file->path, &st) != 0)
			appendStringInfo(&missing, "%s%s", missing.len ? ", " : "", file->path);
		else
			*file_bytes += (int64) st.st_size;
		*rows += file->row_count;
		files = lappend(files, file);
	}
	MemoryContextSwitchTo(old_context);
	if (missing.len > 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FILE),
				 errmsg("staged files of checkpoint %lld of commit user \"%s\" are missing",
						(long long) checkpoint_id, commit_user),
				 errdetail("Missing: %s. Nothing of the checkpoint was applied.", missing.data),
				 errhint("%s", missing_files_hint(sink, commit_user))));
	return files;
}

/*
 * commit_load_checkpoint is the second step: the files loaded into the target
 * (or applied, for an upsert sink), what an overwrite sink's commit
 * replaces deleted (overwrite.c); returns the rows loaded, *commit_kind
 * the snapshot's commit kind.  An error of
 * the load keeps its own SQLSTATE and fields (a unique violation names
 * the constraint and the table) on its way to the requester.
 */
uint64
commit_load_checkpoint(SinkInfo *sink, const char *commit_user, int64 checkpoint_id, List *files,
					   int64 rows, UpsertCounts *changes, const char **commit_kind)
{
	ConstraintsSetStmt *immediate = makeNode(ConstraintsSetStmt);
	uint64 loaded;
	int64 rejected;

	/*
	 * The load runs in a security-restricted operation, which may not leave
	 * triggers deferred: the target's deferrable constraints are checked
	 * when the load statement ends (all rows are in by then).
	 */
	immediate->deferred = false;
	AfterTriggerSetState(immediate);
	failure_hint = LOAD_FAILURE_HINT;
	load_progress_start(sink->sink_id, commit_user, checkpoint_id, list_length(files), rows);
	rejects_begin(sink, commit_user, checkpoint_id, rejects_operator_call());
	if (files != NIL) /* loaders ahead into the target would hold it up: stopped */
		load_ahead_stop(sink->target, 0);
	overwrite_begin(sink, commit_user, checkpoint_id, files);
	if (SINK_IS_UPSERT(sink))
		loaded = load_apply_files(sink, files, changes);
	else if (files == NIL)
		loaded = 0; /* an overwrite sink's empty first commit */
	else if (SINK_IS_OVERWRITE(sink))
		loaded = overwrite_load(sink, files); /* what it replaces emptied first */
	else
		loaded = load_files(sink, files);
	/* the refused rows, moved aside: prepared with the rest (and not counted as applied) */
	rejected = rejects_record();
	if (SINK_IS_UPSERT(sink))
		loaded -= (uint64) rejected;
	*commit_kind = overwrite_end(sink, commit_user, checkpoint_id);
	/* the owner's triggers ran in this session: nothing of theirs stays in it */
	security_forget_session_state();
	failure_hint = NULL;
	return loaded;
}

/*
 * commit_record_snapshot is the third step: the snapshot's row in snapshot_log,
 * the committables marked with it and the commit user's mark raised, in
 * the transaction about to be prepared; returns the snapshot id.
 */
int64
commit_record_snapshot(int32 sink_id, const char *commit_user, int64 checkpoint_id, uint64 loaded,
					   int files, int64 bytes, TimestampTz start, const char *commit_kind)
{
	SnapshotEntry entry = {
		.sink_id = sink_id,
		.commit_user = commit_user,
		.checkpoint_id = checkpoint_id,
		.row_count = (int64) loaded,
		.file_count = files,
		.byte_count = bytes,
		.load_ms = (double) (GetCurrentTimestamp() - start) / 1000.0,
		.commit_kind = commit_kind,
	};

	/* snapshot_log.committed_at is now(): the start of this transaction */
	recorded_at = GetCurrentTransactionStartTimestamp();
	return metadata_record_snapshot(&entry);
}

/*
 * log_removals writes the REMOVE records of a committed checkpoint's files
 * (LoadFile *), without a flush of their own (commit_removal.c).
 */
static void
log_removals(List *files)
{
	List *paths = NIL;
	ListCell *lc;
	XLogRecPtr removals;

	/* only now: the checkpoint is committed */
	foreach (lc, files)
		paths = lappend(paths, ((LoadFile *) lfirst(lc))->path);
	removals = staged_file_log_removals(paths);
	list_free(paths);
	fault_point("committer_after_removal_records");
	commit_removal_logged(removals);
	MemoryContextSwitchTo(CommitterContext);
	load_progress_update(COMMIT_PHASE_IDLE, 0, 0);
}

/*
 * commit_prepare_and_commit_gid is the fourth step: PREPARE TRANSACTION of the
 * open transaction block under a fresh gid, then COMMIT PREPARED.  The
 * gid is drawn now, not before the load, and shown only to the sink
 * owner's members (commit_progress): a role that learns it before the
 * PREPARE could take it.  A PREPARE refused (a name taken meanwhile, a
 * NOTIFY) names the checkpoint, through callback.  For a checkpoint the
 * loaders loaded (parallel), this is the decision: once it is committed
 * the loaders' shares are.  After COMMIT PREPARED go the REMOVE records
 * of the checkpoint's files (files, LoadFile *), without a flush of their
 * own (commit_removal.c).  way says whose transaction it is: a checkpoint
 * loaded here, the decision of one the loaders loaded, or a batch of
 * periodic checkpoints (commit_batch.c), which passes the fault point
 * committer_batch_after_prepare too.
 */
void
commit_prepare_and_commit_gid(const SinkInfo *sink, const char *commit_user, int64 checkpoint_id,
							  List *files, ErrorContextCallback *callback, CommitWay way)
{
	char gid[GIDSIZE];
	bool parallel = way == COMMIT_WAY_PARALLEL;

	gid_build(gid, MyDatabaseId, sink->sink_id, checkpoint_id, commit_user);
	if (parallel)
		commit_parallel_progress(COMMIT_PHASE_PREPARING, gid);
	else
	{
		load_progress_gid(gid);
		load_progress_update(COMMIT_PHASE_PREPARING, 0, 0);
	}
	fault_point("committer_before_prepare");
	callback->previous = error_context_stack;
	error_context_stack = callback;
	PushActiveSnapshot(GetTransactionSnapshot());
	commit_refuse_gid_in_use(gid, sink, commit_user, checkpoint_id);
	PopActiveSnapshot();
	if (!PrepareTransactionBlock(gid))
		elog(ERROR, "paimon_sink committer could not prepare transaction \"%s\"", gid);
	CommitTransactionCommand(); /* PREPARE TRANSACTION happens here */
	error_context_stack = callback->previous;
	if (parallel)
		commit_parallel_decided();
	fault_point("committer_after_prepare");
	if (way == COMMIT_WAY_BATCH)
		fault_point("committer_batch_after_prepare");

	StartTransactionCommand();
	FinishPreparedTransaction(gid, true);
	CommitTransactionCommand();
	if (parallel)
	{
		fault_point("committer_after_decision");
		(void) commit_parallel_commit_shares();
	}
	log_removals(files);
}

/*
 * commit_log is the last step: the commit in the server log (when it took
 * paimon_sink.log_commit_min_duration or longer), in the request's tally
 * and its answer (CommitAnswer), and its files handed to
 * commit_removal_add.
 */
void
commit_log(const SinkInfo *sink, const char *commit_user, int64 checkpoint_id, int64 snapshot_id,
		   uint64 loaded, List *files, int64 bytes, const UpsertCounts *changes, TimestampTz start,
		   int loaders)
{
	double elapsed_ms = (double) (GetCurrentTimestamp() - start) / 1000.0;
	ListCell *lc;

	/* at 100 sinks checkpointed every 200 ms, one line a commit is 500 lines a second */
	if (PaimonSinkLogCommitMinDurationMs >= 0 && elapsed_ms >= PaimonSinkLogCommitMinDurationMs)
		ereport(LOG,
				(errmsg("paimon_sink committed snapshot %lld of sink \"%s\": commit user \"%s\", "
						"identifier %lld, %llu rows, %d files, %d loaders, %.3f ms",
						(long long) snapshot_id, sink->name, commit_user, (long long) checkpoint_id,
						(unsigned long long) loaded, list_length(files), loaders, elapsed_ms),
				 SINK_IS_UPSERT(sink) ? errdetail("%llu versions of %llu keys: %llu upserted, %llu "
												  "deleted; %llu target rows changed.",
												  (unsigned long long) changes->versions,
												  (unsigned long long) changes->keys,
												  (unsigned long long) changes->upserts,
												  (unsigned long long) changes->deletes,
												  (unsigned long long) changes->changed)
									  : 0));

	/* the requester answers with it, whatever expiry does before it reads its answer */
	if (CommitAnswer != NULL)
	{
		int n = CommitAnswer->answered_count++;

		if (n < PAIMON_SINK_ANSWERED_SNAPSHOTS)
		{
			AnsweredSnapshot *answered = &CommitAnswer->answered[n];

			answered->sink_id = sink->sink_id;
			answered->snapshot_id = snapshot_id;
			answered->checkpoint_id = checkpoint_id;
			answered->row_count = (int64) loaded;
			answered->file_count = list_length(files);
			answered->committed_at = recorded_at;
		}
	}
	CommitTallies.commits++;
	CommitTallies.rows += (int64) loaded;
	CommitTallies.bytes += bytes;
	CommitTallies.retries += (int64) changes->retries;
	CommitTallies.last_ms = elapsed_ms;

	foreach (lc, files)
		commit_removal_add(((LoadFile *) lfirst(lc))->path);
}

/*
 * commit_begin_block starts the transaction block checkpoints commit in, with SPI
 * connected and a snapshot.
 */
void
commit_begin_block(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	BeginTransactionBlock();
	CommitTransactionCommand();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
}

/*
 * commit_enter_checkpoint puts callback (naming the checkpoint, in *context) on
 * the error context stack of the open block and checks that the
 * checkpoint is not committed yet; returns the sink.
 */
SinkInfo *
commit_enter_checkpoint(int32 sink_id, const char *commit_user, int64 checkpoint_id,
						CommitContext *context, ErrorContextCallback *callback)
{
	SinkInfo *sink;

	/* SPI calls return to SPI's context; what outlives SPI_finish goes to CommitterContext */
	sink = work_require_sink(sink_id);
	commit_enter_known(sink, commit_user, checkpoint_id, context, callback);
	if (checkpoint_id <= metadata_commit_user_marks(sink_id, commit_user, true).last_committed)
		elog(ERROR, "checkpoint %lld is already committed", (long long) checkpoint_id);
	return sink;
}

/*
 * commit_enter_known is commit_enter_checkpoint for a caller that read the
 * sink (in CommitterContext) and the commit user's marks in this request
 * already (commit_batch.c: in the transaction that recorded the
 * checkpoint, and only this committer moves the marks): callback only.
 */
void
commit_enter_known(const SinkInfo *sink, const char *commit_user, int64 checkpoint_id,
				   CommitContext *context, ErrorContextCallback *callback)
{
	context->sink = sink->name;
	context->commit_user = commit_user;
	context->checkpoint_id = checkpoint_id;
	context->target = MemoryContextStrdup(CommitterContext, target_name(sink));
	callback->callback = commit_error_context;
	callback->arg = context;
	callback->previous = error_context_stack;
	error_context_stack = callback;
}

/*
 * begin_commit starts the transaction block a checkpoint commits in, with
 * SPI connected, a snapshot, and callback (naming the checkpoint, in
 * *context) on the error context stack; returns the sink.
 */
static SinkInfo *
begin_commit(int32 sink_id, const char *commit_user, int64 checkpoint_id, CommitContext *context,
			 ErrorContextCallback *callback)
{
	commit_begin_block();
	return commit_enter_checkpoint(sink_id, commit_user, checkpoint_id, context, callback);
}

/*
 * commit_loaded ends the commit of checkpoint_id once its loaders prepared
 * (loaded rows in all).  Whole (one loader prepared the checkpoint,
 * snapshot and mark included, under its own gid), it commits that gid.
 * Otherwise this is the parallel commit's decision: record the snapshot
 * and raise the mark in the committer's own transaction, prepare and
 * commit it, then commit the shares (commit_prepare_and_commit_gid).
 * Before the decision is prepared, an error rolls every share back; after
 * it, the shares are committed by the next in-doubt resolution.
 */
static void
commit_loaded(int32 sink_id, const char *commit_user, int64 checkpoint_id, List *files, int64 bytes,
			  uint64 loaded, TimestampTz start)
{
	SinkInfo *volatile sink = NULL;
	volatile int64 snapshot_id = 0;
	CommitContext context;
	ErrorContextCallback callback;
	UpsertCounts changes = {0};
	ErrorContextCallback *saved = error_context_stack;
	MemoryContext old = CurrentMemoryContext;
	int64 whole_snapshot_id;

	if (commit_parallel_whole(&whole_snapshot_id, &recorded_at))
	{
		/* the loader prepared all of it, snapshot included: commit it, no decision to make */
		work_begin();
		sink = work_require_sink(sink_id);
		work_end();
		commit_parallel_commit_whole();
		log_removals(files);
		commit_log(sink, commit_user, checkpoint_id, whole_snapshot_id, loaded, files, bytes,
				   &changes, start, 1);
		fault_point("committer_after_commit_prepared");
		return;
	}
	fault_point("committer_before_decision");
	PG_TRY();
	{
		sink = begin_commit(sink_id, commit_user, checkpoint_id, &context, &callback);
		snapshot_id = commit_record_snapshot(sink_id, commit_user, checkpoint_id, loaded,
											 list_length(files), bytes, start, "APPEND");
		PopActiveSnapshot();
		SPI_finish();
		error_context_stack = callback.previous;
		commit_prepare_and_commit_gid(sink, commit_user, checkpoint_id, files, &callback,
									  COMMIT_WAY_PARALLEL);
	}
	PG_CATCH();
	{
		ErrorData *error;

		/* the shares go back (unless decided) before the error does */
		error_context_stack = saved;
		MemoryContextSwitchTo(old);
		error = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		SPI_finish();
		MemoryContextSwitchTo(old);
		commit_parallel_abort();
		ReThrowError(error);
	}
	PG_END_TRY();
	commit_log(sink, commit_user, checkpoint_id, snapshot_id, loaded, files, bytes, &changes, start,
			   PaimonSinkLoadersPerDatabase);
	fault_point("committer_after_commit_prepared");
}

/*
 * hold_checkpoint keeps, in the rest's new memory context, what the
 * decision of checkpoint_id needs once the loaders are done (its files,
 * bytes and start).
 */
static void
hold_checkpoint(int64 checkpoint_id, List *files, int64 bytes, TimestampTz start)
{
	MemoryContext old;
	ListCell *lc;

	rest.context = AllocSetContextCreate(TopMemoryContext, "paimon_sink commit in flight",
										 ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(rest.context);
	rest.files = NIL;
	foreach (lc, files)
	{
		LoadFile *file = palloc(sizeof(LoadFile));

		memcpy(file, lfirst(lc), sizeof(LoadFile));
		file->name = pstrdup(file->name);
		if (file->excluded_count > 0)
		{
			file->excluded = palloc(sizeof(int64) * file->excluded_count);
			memcpy(file->excluded, ((LoadFile *) lfirst(lc))->excluded,
				   sizeof(int64) * file->excluded_count);
		}
		rest.files = lappend(rest.files, file);
	}
	MemoryContextSwitchTo(old);
	rest.loading_id = checkpoint_id;
	rest.bytes = bytes;
	rest.start = start;
	rest.held = true;
}

/*
 * commit_checkpoint commits one prepared checkpoint as one snapshot: by
 * the loaders when it is large enough (commit_parallel.c), else (or when
 * they cannot, or parallel is false) here.  Returns true when the loaders
 * load it and the committer goes on meanwhile (commit_allow_suspend): its
 * decision is then made by commit_resume.
 */
static bool
commit_checkpoint(int32 sink_id, const char *commit_user, int64 checkpoint_id, bool parallel)
{
	TimestampTz start = GetCurrentTimestamp();
	SinkInfo *sink;
	List *files;
	int64 rows = 0;
	int64 bytes = 0;
	int64 file_bytes = 0;
	int64 snapshot_id;
	uint64 loaded;
	CommitContext context;
	ErrorContextCallback callback;
	UpsertCounts changes = {0};
	const char *commit_kind;
	int ahead = 0;

	sink = begin_commit(sink_id, commit_user, checkpoint_id, &context, &callback);
	files =
		commit_read_checkpoint_files(sink, commit_user, checkpoint_id, &rows, &bytes, &file_bytes);
	/*
	 * reject_failing_rows() loads here: the loaders follow the sink's own
	 * on_error; so does an overwrite sink's commit that replaces rows, in the
	 * transaction that loads them.
	 */
	if (parallel && !rejects_operator_call() && !overwrite_loads_here(sink, commit_user) &&
		((ahead = load_ahead_match(sink, commit_user, files)) > 0 ||
		 commit_parallel_wanted(sink, rows)))
	{
		CheckpointSize size = {list_length(files), rows, file_bytes, bytes, start, ahead};

		/* the loaders read and load; this block only read */
		PopActiveSnapshot();
		SPI_finish();
		AbortOutOfAnyTransaction();
		MemoryContextSwitchTo(CommitterContext);

		if (suspend_allowed && commit_parallel_start(sink, commit_user, checkpoint_id, &size,
													 true) == PARALLEL_STARTED)
		{
			error_context_stack = callback.previous;
			hold_checkpoint(checkpoint_id, files, bytes, start);
			return true;
		}
		failure_hint = LOAD_FAILURE_HINT;
		if (!suspend_allowed && commit_parallel_load(sink, commit_user, checkpoint_id, &size,
													 &loaded) == PARALLEL_LOADED)
		{
			failure_hint = NULL;
			error_context_stack = callback.previous;
			commit_loaded(sink_id, commit_user, checkpoint_id, files, bytes, loaded, start);
			return false;
		}
		failure_hint = NULL;
		/* the loaders could not: load it here, from a fresh start */
		error_context_stack = callback.previous;
		sink = begin_commit(sink_id, commit_user, checkpoint_id, &context, &callback);
	}
	loaded = commit_load_checkpoint(sink, commit_user, checkpoint_id, files, rows, &changes,
									&commit_kind);
	snapshot_id = commit_record_snapshot(sink_id, commit_user, checkpoint_id, loaded,
										 list_length(files), bytes, start, commit_kind);
	PopActiveSnapshot();
	SPI_finish();
	error_context_stack = callback.previous;

	commit_prepare_and_commit_gid(sink, commit_user, checkpoint_id, files, &callback,
								  COMMIT_WAY_ONE);
	commit_log(sink, commit_user, checkpoint_id, snapshot_id, loaded, files, bytes, &changes, start,
			   0);
	fault_point("committer_after_commit_prepared");
	return false;
}

/*
 * commit_pending commits the prepared checkpoints identifiers (int64 *, in
 * ascending order, all up to checkpoint_id), then raises the high-water
 * mark over empty prepared ones; marks are the commit user's marks read
 * before, in this request (only this committer moves them, and a commit
 * raises the last committed mark to its own identifier: what they are
 * after is known without reading them again).  The request gets the marks
 * after.
 */
void
commit_pending(int32 sink_id, const char *commit_user, int64 checkpoint_id,
			   CommitterRequest *request, List *identifiers, CommitUserMarks marks)
{
	ListCell *lc;
	ListCell *later;

	foreach (lc, identifiers)
	{
		int64 identifier = *(int64 *) lfirst(lc);

		if (commit_checkpoint(sink_id, commit_user, identifier, true))
		{
			/* the loaders load it: the rest waits for them (commit_resume) */
			MemoryContext old = MemoryContextSwitchTo(rest.context);

			rest.sink_id = sink_id;
			strlcpy(rest.commit_user, commit_user, sizeof(rest.commit_user));
			rest.checkpoint_id = checkpoint_id;
			rest.marks = marks;
			rest.identifiers = NIL;
			for_each_cell(later, identifiers, lnext(identifiers, lc))
			{
				int64 *next = palloc(sizeof(int64));

				*next = *(int64 *) lfirst(later);
				rest.identifiers = lappend(rest.identifiers, next);
			}
			MemoryContextSwitchTo(old);
			return;
		}
		marks.last_committed = Max(marks.last_committed, identifier);
	}

	/*
	 * A transaction only when the mark moves over empty prepared checkpoints;
	 * an overwrite sink's first commit of the commit user empties the
	 * target even so, a commit (and snapshot) of its own.
	 */
	if (Min(checkpoint_id, marks.last_prepared) > marks.last_committed)
	{
		int64 last = Min(checkpoint_id, marks.last_prepared);
		bool overwrite;

		work_begin();
		overwrite = overwrite_empty_commit_due(work_require_sink(sink_id), commit_user);
		if (!overwrite)
			metadata_move_marks(MARK_RAISE_COMMITTED, sink_id, commit_user, last);
		work_end();
		if (overwrite)
			(void) commit_checkpoint(sink_id, commit_user, last, false);
		marks.last_committed = last;
	}
	request->last_committed = marks.last_committed;
	request->result_checkpoint_id = checkpoint_id;
}

/*
 * commit_allow_suspend says whether the request about to be served may
 * leave a large checkpoint to the loaders and go on with other work
 * (commit(), checkpoint(), end_input() and periodic checkpoints, whose
 * commit is their last step); recover() waits for its loaders.
 */
void
commit_allow_suspend(bool allowed)
{
	suspend_allowed = allowed;
}

/*
 * commit_suspended tells whether the request just served left its commit
 * to the loaders: commit_resume goes on with it once they are done.
 */
bool
commit_suspended(void)
{
	return rest.held;
}

/*
 * commit_resume goes on with the request whose commit the loaders loaded
 * (the committer's loop calls it once commit_parallel_loading says they
 * are done): the decision (or, when two shares blocked each other, the
 * checkpoint loaded here), then the request's next checkpoints, as
 * commit_pending would have; the request gets its marks after.  A
 * loader's error is raised whole (nothing applied, the checkpoint stays
 * prepared).  The next large checkpoint may be left to the loaders again.
 */
void
commit_resume(CommitterRequest *request)
{
	int32 sink_id = rest.sink_id;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	uint64 loaded;
	CommitUserMarks marks = rest.marks;

	Assert(rest.held);
	strlcpy(commit_user, rest.commit_user, sizeof(commit_user));
	resuming_context = rest.context;
	rest.held = false;
	rest.context = NULL;
	failure_hint = LOAD_FAILURE_HINT;
	if (commit_parallel_finish(&loaded) == PARALLEL_LOADED)
	{
		failure_hint = NULL;
		commit_loaded(sink_id, commit_user, rest.loading_id, rest.files, rest.bytes, loaded,
					  rest.start);
	}
	else
	{
		failure_hint = NULL;
		(void) commit_checkpoint(sink_id, commit_user, rest.loading_id, false);
	}
	marks.last_committed = Max(marks.last_committed, rest.loading_id);
	commit_pending(sink_id, commit_user, rest.checkpoint_id, request, rest.identifiers, marks);
	MemoryContextDelete(resuming_context);
	resuming_context = NULL;
}

/*
 * commit_forget_rest forgets the rest of a request that failed while its
 * commit was left to the loaders or being resumed (commit_parallel_cleanup
 * ends the loaders' part).
 */
void
commit_forget_rest(void)
{
	if (rest.context != NULL)
		MemoryContextDelete(rest.context);
	if (resuming_context != NULL)
		MemoryContextDelete(resuming_context);
	rest.context = resuming_context = NULL;
	rest.held = false;
}

/*
 * commit_up_to commits every prepared checkpoint up to checkpoint_id, in
 * ascending order, then raises the high-water mark over empty prepared
 * ones; the request gets the marks before and after.
 */
void
commit_up_to(int32 sink_id, const char *commit_user, int64 checkpoint_id, CommitterRequest *request)
{
	List *identifiers;
	CommitUserMarks marks;
	MemoryContext old;

	/*
	 * Only this committer moves the marks, so a plain read will do: a locking
	 * one would take a transaction id and a WAL flush when nothing changes.
	 */
	work_begin();
	(void) work_require_sink(sink_id);
	marks = metadata_commit_user_marks(sink_id, commit_user, false);
	request->previous_last_committed = marks.last_committed;
	if (checkpoint_id <= marks.last_committed)
		CommitTallies.skipped++;
	old = MemoryContextSwitchTo(CommitterContext);
	identifiers = metadata_pending_checkpoints(sink_id, commit_user, checkpoint_id);
	MemoryContextSwitchTo(old);
	work_end();

	commit_pending(sink_id, commit_user, checkpoint_id, request, identifiers, marks);
}
