/*-------------------------------------------------------------------------
 *
 * loader.c
 *	  A loader worker's life: one large checkpoint of an append sink (or,
 *	  nonatomic, one share of it) loaded into the target, in a prepared
 *	  transaction.
 *
 * By default the assignment is whole: the loader loads every file of the
 * checkpoint, then records its snapshot and raises the commit user's mark
 * with commit.c's own step, and prepares under the checkpoint's own gid,
 * which the committer then commits: the checkpoint is one transaction,
 * as when the committer loads it.  What follows is the same for both.
 *
 * The committer assigns a checkpoint's shares to loader entries of its
 * database (commit_parallel.c) and starts one worker per entry.  A loader
 * takes its assignment under the lock (only while the committer that made
 * it is still the database's: a committer's start bumps the incarnation
 * first, then stops every loader it finds), connects as the committer does
 * (its role owns every prepared transaction recovery may finish), reads the
 * checkpoint's files from the catalog, loads the batches of its share with
 * load.c's COPY machinery as the sink's owner, and ends its transaction
 * with PREPARE TRANSACTION under the gid the committer gave it
 * (names.c's loader form).  It reports PREPARED, or FAILED with its whole
 * error, in its entry and wakes the committer, then exits.  It never
 * commits: the committer's decision does (Citus's commit record).
 *
 * A loader the committer started for a streamed transaction instead loads
 * that transaction's files ahead, in a transaction block it keeps open
 * (loader_ahead.c), until the committer gives it the checkpoint that takes
 * them as a whole assignment; it then loads the checkpoint's other files
 * in the same block and goes on as above.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "access/xact.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "apply/load.h"
#include "apply/rejects.h"
#include "committer/commit_steps.h"
#include "committer/loader.h"
#include "committer/loader_ahead.h"
#include "core/fault.h"
#include "core/security.h"
#include "core/shared_state.h"
#include "ipc/request.h"
#include "metadata/metadata.h"
#include "staging/staged_file.h"

/* This loader's database entry and loader entry, and its copy of the assignment. */
static DatabaseEntry *MyLoaderDatabase;
static LoaderEntry *MyLoader;
static LoaderEntry assignment;
static PGPROC *assigning_committer;

/* loader_error_context names the share being loaded in an error's context. */
static void
loader_error_context(void *arg)
{
	if (assignment.parts == 0)
	{
		errcontext("paimon_sink loader loading a streamed transaction ahead");
		return;
	}
	if (assignment.whole)
	{
		errcontext("paimon_sink loader loading checkpoint %lld of commit user \"%s\" of sink %d",
				   (long long) assignment.checkpoint_id, assignment.commit_user,
				   assignment.sink_id);
		return;
	}
	errcontext("paimon_sink loader loading part %d of %d of checkpoint %lld of commit user "
			   "\"%s\" of sink %d",
			   assignment.part + 1, assignment.parts, (long long) assignment.checkpoint_id,
			   assignment.commit_user, assignment.sink_id);
}

/*
 * loader_exit forgets the worker in its entry as it exits
 * (before_shmem_exit): a committer waiting for loaders to be gone sees the
 * pid cleared.  A loader that exits while loading leaves its state as it
 * is: the committer finds the worker stopped and fails the checkpoint.
 */
static void
loader_exit(int code, Datum arg)
{
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	MyLoader->pid = 0;
	LWLockRelease(PaimonSinkState->lock);
	if (assigning_committer != NULL)
		SetLatch(&assigning_committer->procLatch);
}

/*
 * take_assignment makes the entry's assignment this worker's, if the
 * committer that made it still serves the database; false otherwise (the
 * worker then leaves without touching anything).  ahead: the worker
 * loaded ahead and already holds the entry.
 */
static bool
take_assignment(bool ahead)
{
	bool taken;

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	taken = MyLoader->state == LOADER_ASSIGNED && MyLoader->pid == (ahead ? MyProcPid : 0) &&
			MyLoaderDatabase->committer_pid != 0 &&
			MyLoader->committer_incarnation == MyLoaderDatabase->committer_incarnation;
	if (taken)
	{
		MyLoader->state = LOADER_LOADING;
		MyLoader->pid = MyProcPid;
		memcpy(&assignment, MyLoader, offsetof(LoaderEntry, rows_done));
		assigning_committer = MyLoaderDatabase->committer_proc;
	}
	LWLockRelease(PaimonSinkState->lock);
	return taken;
}

/*
 * still_assigned tells whether the committer that made the assignment
 * still serves the database and still waits for this share: a loader
 * never prepares for a committer that is gone.
 */
static bool
still_assigned(void)
{
	bool assigned;

	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	assigned = MyLoader->state == LOADER_LOADING && MyLoader->pid == MyProcPid &&
			   MyLoaderDatabase->committer_incarnation == assignment.committer_incarnation;
	LWLockRelease(PaimonSinkState->lock);
	return assigned;
}

/*
 * report publishes the outcome in the entry (under the lock) and wakes the
 * committer: PREPARED with the rows loaded (whole: and the snapshot
 * recorded, with its committed_at), or FAILED with edata.
 */
static void
report(int state, int64 rows, int64 snapshot_id, TimestampTz recorded_at, const ErrorData *edata)
{
	static char error[PAIMON_SINK_ERROR_SIZE];
	uint32 length = 0;

	if (edata != NULL)
		length = request_encode_error(edata, error);
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	if (MyLoader->pid == MyProcPid)
	{
		MyLoader->state = state;
		MyLoader->rows_loaded = rows;
		MyLoader->snapshot_id = snapshot_id;
		MyLoader->recorded_at = recorded_at;
		MyLoader->sqlerrcode = edata ? edata->sqlerrcode : 0;
		MyLoader->error_length = length;
		memcpy(MyLoader->error, error, length);
	}
	LWLockRelease(PaimonSinkState->lock);
	if (assigning_committer != NULL)
		SetLatch(&assigning_committer->procLatch);
}

/*
 * share_files reads the checkpoint's files from the catalog, in the order
 * the committer read them, and lays them end to end: each LoadFile gets its
 * size and position.  A missing file, or files whose sizes no longer add
 * up to what the committer found, fail the share (nothing applied).
 */
static List *
share_files(void)
{
	List *files = NIL;
	int64 position = 0;
	ListCell *lc;

	foreach (lc, metadata_checkpoint_files(assignment.sink_id, assignment.commit_user,
										   assignment.checkpoint_id))
	{
		LoadFile *file = load_file_of(lfirst(lc), assignment.sink_id);
		struct stat st;

		if (stat(file->path, &st) != 0)
			ereport(ERROR, (errcode_for_file_access(),
							errmsg("could not stat staged file \"%s\": %m", file->path),
							errdetail("Nothing of the checkpoint was applied.")));
		file->size = (int64) st.st_size;
		file->position = position;
		position += file->size;
		files = lappend(files, file);
	}
	if (position != assignment.total_bytes)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("the staged files of checkpoint %lld of commit user \"%s\" changed "
							   "while it was committed",
							   (long long) assignment.checkpoint_id, assignment.commit_user),
						errdetail("They hold %lld bytes; the committer found %lld. Nothing of the "
								  "checkpoint was applied.",
								  (long long) position, (long long) assignment.total_bytes)));
	return files;
}

/*
 * load_share loads the share and prepares its transaction: the worker
 * drives its own transaction block as the committer does (BEGIN, the
 * load, PREPARE TRANSACTION).  A whole assignment records the snapshot
 * and raises the mark before the PREPARE (*snapshot_id and *recorded_at
 * get them), under the checkpoint's own gid, which no one else may hold.
 * ahead: the block is open already, holding the streamed transaction's
 * rows, and only the checkpoint's other files are loaded.  Returns the
 * rows loaded.
 */
static int64
load_share(bool ahead, int64 *snapshot_id, TimestampTz *recorded_at)
{
	ConstraintsSetStmt *immediate = makeNode(ConstraintsSetStmt);
	MemoryContext context = CurrentMemoryContext;
	SinkInfo *sink = palloc0(sizeof(SinkInfo));
	List *files;
	List *rest;
	uint64 loaded = 0;
	int64 begin;
	int64 end;

	SetCurrentStatementStartTimestamp();
	/* loaded ahead: its transaction block is open, the rows loaded ahead in it */
	if (!ahead)
	{
		StartTransactionCommand();
		BeginTransactionBlock();
		CommitTransactionCommand();
	}
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());

	/* what SPI returns goes to SPI's context, gone at SPI_finish: the load is before it */
	if (!metadata_sink_by_id(assignment.sink_id, sink))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("sink %d does not exist", assignment.sink_id),
						errdetail("It was dropped while its checkpoint was committed.")));
	if (SINK_IS_UPSERT(sink))
		elog(ERROR, "paimon_sink loaders load append sinks only");
	/* whole, it raises the mark: the row is locked, as the committer's own load locks it */
	if (assignment.checkpoint_id <=
		metadata_commit_user_marks(assignment.sink_id, assignment.commit_user, assignment.whole)
			.last_committed)
		elog(ERROR, "checkpoint %lld is already committed", (long long) assignment.checkpoint_id);
	files = share_files();
	rest = ahead ? loader_ahead_rest(files, &loaded) : files;

	/* the share of part k: [total * k / parts, total * (k + 1) / parts) */
	begin = (int64) ((uint64) assignment.total_bytes * (uint64) assignment.part /
					 (uint64) assignment.parts);
	end = assignment.part + 1 == assignment.parts
			  ? PG_INT64_MAX
			  : (int64) ((uint64) assignment.total_bytes * (uint64) (assignment.part + 1) /
						 (uint64) assignment.parts);
	/* as the committer's load: deferrable constraints are checked as the load ends */
	immediate->deferred = false;
	AfterTriggerSetState(immediate);
	rejects_begin(sink, assignment.commit_user, assignment.checkpoint_id, false);
	if (rest != NIL)
		loaded += load_files_share(sink, rest, begin, end);
	/* the share's refused rows (on_error 'reject'), prepared with the share */
	(void) rejects_record();
	if (assignment.whole)
	{
		*snapshot_id = commit_record_snapshot(assignment.sink_id, assignment.commit_user,
											  assignment.checkpoint_id, loaded, list_length(files),
											  assignment.byte_count, assignment.start, "APPEND");
		*recorded_at = GetCurrentTransactionStartTimestamp();
		commit_refuse_gid_in_use(assignment.gid, sink, assignment.commit_user,
								 assignment.checkpoint_id);
	}
	PopActiveSnapshot();
	SPI_finish();
	MemoryContextSwitchTo(context);

	fault_point("loader_before_prepare");
	if (!still_assigned())
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("the paimon_sink committer that started this loader is gone"),
						errdetail("The share is not prepared; nothing of it was applied.")));
	if (!PrepareTransactionBlock(assignment.gid))
		elog(ERROR, "paimon_sink loader could not prepare transaction \"%s\"", assignment.gid);
	CommitTransactionCommand(); /* PREPARE TRANSACTION happens here */
	MemoryContextSwitchTo(context);
	fault_point("loader_after_prepare");
	return (int64) loaded;
}

/*
 * run_ahead loads a streamed transaction ahead and waits for its
 * checkpoint (loader_ahead.c), then takes the checkpoint's assignment:
 * true.  False when it gave up (its transaction rolled back); an error
 * once the checkpoint was given is reported as the load's failure.
 */
static bool
run_ahead(void)
{
	MemoryContext context = CurrentMemoryContext;
	bool given = false;

	PG_TRY();
	{
		given = loader_ahead_run();
	}
	PG_CATCH();
	{
		ErrorData *edata;
		bool assigned;

		MemoryContextSwitchTo(context);
		edata = CopyErrorData();
		FlushErrorState();
		LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
		assigned = MyLoader->state == LOADER_ASSIGNED;
		LWLockRelease(PaimonSinkState->lock);
		loader_ahead_give_up(edata->message);
		if (assigned)
			report(LOADER_FAILED, 0, 0, 0, edata);
		/* the error says it stops loading ahead, and why */
		ereport(LOG, (errmsg_internal("%s", edata->message),
					  edata->detail ? errdetail_internal("%s", edata->detail) : 0));
		return false;
	}
	PG_END_TRY();
	if (given && !take_assignment(true))
	{
		loader_ahead_give_up("its committer is gone");
		return false;
	}
	return given;
}

/* paimon_sink_loader_main is the entry point of a loader worker. */
void
paimon_sink_loader_main(Datum main_arg)
{
	int argument = DatumGetInt32(main_arg);
	ErrorContextCallback callback;
	MemoryContext context;
	int64 rows;
	int64 snapshot_id = 0;
	TimestampTz recorded_at = 0;
	bool ahead = false;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	MyLoaderDatabase = shared_database(argument >> 16);
	MyLoader = shared_loader(MyLoaderDatabase, argument & 0xFFFF);
	if (!take_assignment(false))
	{
		/* else a streamed transaction to load ahead (loader_ahead.c) */
		if (!loader_ahead_take(MyLoaderDatabase, MyLoader))
			proc_exit(0);
		ahead = true;
		assigning_committer = MyLoaderDatabase->committer_proc;
	}
	before_shmem_exit(loader_exit, 0);

	BackgroundWorkerInitializeConnectionByOid(MyLoaderDatabase->database_id, InvalidOid, 0);
	pgstat_report_appname("paimon_sink loader");
	/* over ALTER DATABASE/ROLE ... SET: its role (its gid's owner), search_path, durability */
	security_pin_worker_settings();
	/* staged rows are in the database encoding, whatever ALTER DATABASE sets */
	SetConfigOption("client_encoding", GetDatabaseEncodingName(), PGC_SUSET, PGC_S_OVERRIDE);
	load_progress_to_loader(MyLoader);
	pgstat_report_activity(STATE_RUNNING, "loading a share of a paimon_sink checkpoint");

	context = AllocSetContextCreate(TopMemoryContext, "paimon_sink loader", ALLOCSET_DEFAULT_SIZES);
	MemoryContextSwitchTo(context);
	callback.callback = loader_error_context;
	callback.arg = NULL;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	if (ahead && !run_ahead())
		proc_exit(0);
	PG_TRY();
	{
		TimestampTz start = GetCurrentTimestamp();

		rows = load_share(ahead, &snapshot_id, &recorded_at);
		ereport(DEBUG1, (errmsg("paimon_sink loader prepared part %d of %d: %lld rows in %.3f ms",
								assignment.part + 1, assignment.parts, (long long) rows,
								(double) (GetCurrentTimestamp() - start) / 1000.0)));
	}
	PG_CATCH();
	{
		ErrorData *edata;

		error_context_stack = callback.previous;
		MemoryContextSwitchTo(context);
		edata = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		report(LOADER_FAILED, 0, 0, 0, edata);
		ereport(LOG, (errmsg("paimon_sink loader failed with SQLSTATE %s: %s",
							 unpack_sql_state(edata->sqlerrcode), edata->message),
					  edata->context ? errdetail("%s", edata->context) : 0));
		proc_exit(0);
	}
	PG_END_TRY();
	error_context_stack = callback.previous;
	report(LOADER_PREPARED, rows, snapshot_id, recorded_at, NULL);
	pgstat_report_activity(STATE_IDLE, NULL);
	proc_exit(0);
}
