/*-------------------------------------------------------------------------
 *
 * committer.c
 *	  The committer background worker and the request queue it serves.
 *
 * Every prepare, commit and checkpoint of a database runs here, one at a
 * time, so no two of them race and the database needs one prepared
 * transaction slot.  A checkpoint is committed as in Paimon's
 * CommitterOperator: in ascending order, each identifier once, skipping those
 * the commit user's high-water mark already covers.  Per checkpoint: load
 * the staged files with COPY FROM's own code (as the sink's owner, inside a
 * security-restricted operation), record the snapshot and raise the mark,
 * PREPARE TRANSACTION with a gid carrying (database, sink, checkpoint id,
 * commit user), then COMMIT PREPARED.  A prepared transaction is only ever
 * created for a complete checkpoint, so recovery commits every in-doubt one
 * of ours (as Citus's transaction recovery, filtered by prefix and
 * database).  The worker drives its own transaction block the way
 * exec_simple_query drives BEGIN ... PREPARE TRANSACTION.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "access/table.h"
#include "access/twophase.h"
#include "access/xact.h"
#include "catalog.h"
#include "catalog/pg_class.h"
#include "commands/copy.h"
#include "commands/dbcommands.h"
#include "commands/trigger.h"
#include "committer.h"
#include "executor/executor.h"
#include "fault.h"
#include "launcher.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "pgstat.h"
#include "recovery.h"
#include "security.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "tcop/tcopprot.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"
#include "upsert.h"
#include "writer.h"

static int	MyDatabaseIndex;
static DatabaseEntry *MyDatabaseEntry;
static BackgroundWorkerHandle **writer_handles;
static TimestampTz *writer_started_at;
static MemoryContext committer_context;
static shm_mq_handle **barrier_queues;	/* while a barrier runs */

/*
 * An in-doubt transaction of ours can exist only after a crash between
 * PREPARE TRANSACTION and COMMIT PREPARED (a new committer starts with this
 * set) or after a request that failed: only then does a request look first.
 */
static bool in_doubt_possible = true;

/*
 * Staged files of checkpoints committed by the request being served: removed
 * once the requester has its answer.  A crash before leaves them to
 * remove_committed_files at the next start.
 */
static List *committed_paths = NIL;

/* What the request being served committed, for commit_statistics. */
static struct
{
	int64		commits;
	int64		skipped;
	int64		retries;
	int64		rows;
	int64		bytes;
	double		last_ms;
}			tally;

/* The hint a failure gets when its own has none (a failed load says what to do). */
static const char *failure_hint = NULL;

/*
 * The hint of a load's failure that has none of its own.  A name that does
 * not resolve is most often one a trigger or default of the target leaves
 * unqualified: the load runs with search_path pinned (see security.c).
 */
static const char *
load_failure_hint(int sqlerrcode)
{
	if (sqlerrcode == ERRCODE_UNDEFINED_TABLE || sqlerrcode == ERRCODE_UNDEFINED_FUNCTION ||
		sqlerrcode == ERRCODE_UNDEFINED_OBJECT || sqlerrcode == ERRCODE_UNDEFINED_SCHEMA)
		return "Nothing of the checkpoint was applied and it stays prepared. The load runs the target's triggers, defaults and constraints with search_path pg_catalog, pg_temp: qualify the names they use, or give their function a search_path of its own (ALTER FUNCTION ... SET search_path = ...), then call commit() or checkpoint() again.";
	return failure_hint;
}

/* One staged file being loaded, and the batch offsets it leaves out. */
typedef struct LoadFile
{
	char	   *name;
	char		path[MAXPGPATH];
	int64	   *excluded;
	int			excluded_count;
	int64		row_count;
} LoadFile;

/* COPY's data-source callback has no argument: its state is static. */
static struct
{
	List	   *files;
	int			file_index;
	File		file;
	off_t		file_size;
	off_t		offset;
	int			next_excluded;
	StringInfoData batch;
	int			batch_position;
	bool		header_sent;
	/* the batch the bytes given to COPY last came from, for sequence numbers */
	uint64		batch_first_sequence;
	uint32		batch_rows;
	uint32		batch_rows_read;
	bool		numbered;		/* upsert: rows are counted per batch */
}			load;

/* committer_start registers a committer worker for a database entry. */
BackgroundWorkerHandle *
committer_start(int database_index)
{
	return launcher_start_worker("paimon_sink_committer_main", "paimon_sink committer",
								 "paimon_sink committer", Int32GetDatum(database_index));
}

/*
 * committer_submit queues a request for a database's committer and waits for
 * its outcome, which it copies back into *request; an error of the committer
 * is raised again here with its SQLSTATE, detail and hint.  A cancelled wait
 * leaves the request to finish on its own (it is not undone).
 */
void
committer_submit(int database_index, CommitterRequest *request)
{
	DatabaseEntry *db = shared_database(database_index);
	CommitterRequest *slot = NULL;

	for (;;)
	{
		LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
		for (int i = 0; i < PAIMON_SINK_REQUESTS_PER_DATABASE; i++)
		{
			if (db->requests[i].state == REQUEST_FREE)
			{
				slot = &db->requests[i];
				memcpy(slot, request, sizeof(*slot));
				slot->state = REQUEST_QUEUED;
				slot->seq = ++db->next_request_seq;
				slot->requester = MyProc;
				slot->sqlerrcode = 0;
				break;
			}
		}
		LWLockRelease(PaimonSinkState->lock);
		if (slot != NULL)
			break;
		ConditionVariableTimedSleep(&db->request_done, 1000, PG_WAIT_EXTENSION);
		CHECK_FOR_INTERRUPTS();
	}
	ConditionVariableCancelSleep();
	if (db->committer_proc != NULL)
		SetLatch(&db->committer_proc->procLatch);

	PG_TRY();
	{
		for (;;)
		{
			bool		done;

			ConditionVariablePrepareToSleep(&db->request_done);
			LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
			done = slot->state == REQUEST_DONE;
			if (done)
			{
				memcpy(request, slot, sizeof(*request));
				slot->state = REQUEST_FREE;
			}
			LWLockRelease(PaimonSinkState->lock);
			if (done)
				break;
			ConditionVariableTimedSleep(&db->request_done, 1000, PG_WAIT_EXTENSION);
			CHECK_FOR_INTERRUPTS();
		}
		ConditionVariableCancelSleep();
	}
	PG_CATCH();
	{
		LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
		slot->state = slot->state == REQUEST_DONE ? REQUEST_FREE : REQUEST_ABANDONED;
		LWLockRelease(PaimonSinkState->lock);
		PG_RE_THROW();
	}
	PG_END_TRY();
	ConditionVariableBroadcast(&db->request_done);

	if (request->sqlerrcode != 0)
		ereport(ERROR,
				(errcode(request->sqlerrcode),
				 errmsg_internal("%s", request->message),
				 request->detail[0] ? errdetail_internal("%s", request->detail) : 0,
				 request->hint[0] ? errhint("%s", request->hint) : 0,
				 request->context[0] ? errcontext("%s", request->context) : 0));
	if (request->warning[0])
		ereport(WARNING,
				(errmsg_internal("%s", request->warning),
				 errhint("The commit itself succeeded; maintenance is tried again after the next one.")));
}

/* Run a query of the catalog (within a transaction, SPI connected). */
static void
execute(const char *query, int nargs, Oid *types, Datum *values, int expected)
{
	int			result = SPI_execute_plan(catalog_plan(query, nargs, types), values, NULL, false, 0);

	if (result != expected)
		elog(ERROR, "paimon_sink committer: \"%s\" returned %d", query, result);
}

static void
begin_work(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
}

static void
end_work(void)
{
	PopActiveSnapshot();
	SPI_finish();
	CommitTransactionCommand();
	MemoryContextSwitchTo(committer_context);
}

static void remove_committed_files(void);

/*
 * Commit every in-doubt transaction of ours in this database, then remove
 * the files of the checkpoints it committed; returns how many.  Only
 * transactions recovery.c proves ours are finished: a foreign one that
 * carries our prefix is left alone and logged once.  Reads only catalog
 * columns every version has: a library waiting for ALTER EXTENSION
 * paimon_sink UPDATE finishes ours too, since they hold back the cluster's
 * xmin and lock the tables an update may change (catalog_ready false: the
 * files wait for the update).
 */
static int
finish_in_doubt(bool catalog_ready)
{
	int			count = 0;
	List	   *gids;
	ListCell   *lc;

	begin_work();
	gids = recovery_prepared_gids(committer_context);
	end_work();

	foreach(lc, gids)
	{
		PreparedGid *entry = lfirst(lc);

		if (!entry->ours)
			continue;
		StartTransactionCommand();
		FinishPreparedTransaction(entry->gid, true);
		CommitTransactionCommand();
		MemoryContextSwitchTo(committer_context);
		count++;
		ereport(LOG,
				(errmsg("paimon_sink committer committed in-doubt transaction \"%s\"", entry->gid),
				 errdetail("A checkpoint is prepared only once it is complete, so recovery commits it.")));
	}
	recovery_report_foreign(gids);
	/* the files of the checkpoints just committed are no longer needed */
	if (count > 0 && catalog_ready)
		remove_committed_files();
	in_doubt_possible = false;
	return count;
}

static void
recover_in_doubt(void)
{
	(void) finish_in_doubt(true);
}

/* Remove staged files of committed checkpoints that a crash left behind. */
static void
remove_committed_files(void)
{
	begin_work();
	execute("SELECT c.sink_id, c.file_name FROM paimon_sink.committable c "
			"WHERE c.snapshot_id IS NOT NULL",
			0, NULL, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		int32		sink_id = DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
														  SPI_tuptable->tupdesc, 1, &isnull));
		char	   *name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2);
		char		path[MAXPGPATH];
		struct stat st;

		/* a name that is not a staged file's is never a path (it is no file of ours) */
		if (!staged_file_name_is_valid(name))
			continue;
		staged_file_path(path, MyDatabaseId, sink_id, name);
		if (stat(path, &st) == 0)
			(void) durable_unlink(path, LOG);
	}
	end_work();
}

/*
 * Remove the staged files of dropped sinks.  drop_sink records the sink in
 * paimon_sink.dropped_sink in its own transaction, so nothing is deleted
 * unless the drop committed (the "cleanup record" pattern of Citus and
 * pg_lake); the record goes once the folder is gone.
 */
static void
remove_dropped_sink_directories(void)
{
	List	   *doomed = NIL;
	ListCell   *lc;

	begin_work();
	execute("SELECT d.sink_id FROM paimon_sink.dropped_sink d", 0, NULL, NULL, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		MemoryContext old = MemoryContextSwitchTo(committer_context);

		doomed = lappend_int(doomed, DatumGetInt32(SPI_getbinval(SPI_tuptable->vals[i],
																 SPI_tuptable->tupdesc, 1,
																 &isnull)));
		MemoryContextSwitchTo(old);
	}
	end_work();
	if (doomed == NIL)
		return;

	foreach(lc, doomed)
	{
		char		path[MAXPGPATH];
		struct stat st;

		staged_file_directory(path, MyDatabaseId, lfirst_int(lc));
		if (stat(path, &st) == 0 && rmtree(path, true))
			ereport(LOG,
					(errmsg("paimon_sink committer removed the staged files of dropped sink %d",
							lfirst_int(lc))));
	}
	begin_work();
	foreach(lc, doomed)
	{
		Oid			type = INT4OID;
		Datum		value = Int32GetDatum(lfirst_int(lc));

		execute("DELETE FROM paimon_sink.dropped_sink d WHERE d.sink_id OPERATOR(pg_catalog.=) $1",
				1, &type, &value,
				SPI_OK_DELETE);
	}
	end_work();
	list_free(doomed);
}

/*
 * Every row of the batch COPY read last was returned.  A row is numbered by
 * the batch it came from: COPY's binary reader asks for more bytes only
 * when it has used all it has, and load_read never gives it bytes of two
 * batches at once, so the last batch read is the returned row's; this
 * check makes sure that stays so.
 */
static void
check_batch_read(void)
{
	if (load.numbered && load.batch_rows_read != load.batch_rows)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("a staged batch of %u rows gave %u rows", load.batch_rows,
						load.batch_rows_read),
				 errdetail("Nothing of this checkpoint is applied.")));
}

/* The sequence number of the row COPY returned last (upsert sinks). */
static uint64
load_row_sequence(void)
{
	if (load.batch_rows_read >= load.batch_rows)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("a staged batch of %u rows gave more rows", load.batch_rows),
				 errdetail("Nothing of this checkpoint is applied.")));
	return load.batch_first_sequence + load.batch_rows_read++;
}

/* Progress of the checkpoint being committed (the view commit_progress). */
static void
progress_start(int32 sink_id, const char *commit_user, int64 checkpoint_id, int files,
			   int64 rows)
{
	CommitProgress *progress = &MyDatabaseEntry->progress;

	SpinLockAcquire(&progress->mutex);
	progress->phase = COMMIT_PHASE_LOADING;
	progress->sink_id = sink_id;
	progress->checkpoint_id = checkpoint_id;
	strlcpy(progress->commit_user, commit_user, sizeof(progress->commit_user));
	progress->gid[0] = '\0';
	progress->files_total = files;
	progress->files_done = 0;
	progress->rows_total = rows;
	progress->rows_done = 0;
	progress->started_at = GetCurrentTimestamp();
	SpinLockRelease(&progress->mutex);
}

/* phase, or -1 to keep it; files and rows are added */
static void
progress_update(int phase, int files, int64 rows)
{
	CommitProgress *progress = &MyDatabaseEntry->progress;

	SpinLockAcquire(&progress->mutex);
	if (phase >= 0)
		progress->phase = phase;
	progress->files_done += files;
	progress->rows_done += rows;
	SpinLockRelease(&progress->mutex);
}

/* Load callback: the rows of the included batches, file after file. */
static int
load_read(void *outbuf, int minread, int maxread)
{
	int			copied = 0;

	/* COPY's binary format: the signature, flags and extension length */
	if (!load.header_sent)
	{
		static const char header[19] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";

		resetStringInfo(&load.batch);
		appendBinaryStringInfo(&load.batch, header, sizeof(header));
		load.batch_position = 0;
		load.header_sent = true;
	}
	while (copied < minread)
	{
		LoadFile   *file;
		StagedBatchHeader header;
		int			available = load.batch.len - load.batch_position;

		if (available > 0)
		{
			int			take = Min(available, maxread - copied);

			memcpy((char *) outbuf + copied, load.batch.data + load.batch_position, take);
			load.batch_position += take;
			copied += take;
			continue;
		}
		if (load.file_index >= list_length(load.files))
			break;
		file = list_nth(load.files, load.file_index);
		if (load.file < 0)
		{
			load.file = staged_file_open(file->path, NULL, &load.offset, ERROR);
			if (load.file < 0)
				ereport(ERROR,
						(errcode_for_file_access(),
						 errmsg("could not open staged file \"%s\": %m", file->path)));
			load.file_size = FileSize(load.file);
			load.next_excluded = 0;
		}
		if (load.offset >= load.file_size)
		{
			FileClose(load.file);
			load.file = -1;
			load.file_index++;
			progress_update(-1, 1, 0);
			continue;
		}
		if (!staged_file_read_batch(load.file, file->path, load.offset, load.file_size,
									&header, &load.batch))
			ereport(ERROR,
					(errcode(ERRCODE_DATA_CORRUPTED),
					 errmsg("staged file \"%s\" is damaged at offset %lld",
							file->path, (long long) load.offset),
					 errdetail("The batch record there is torn or fails its checksum; nothing of this checkpoint is applied.")));
		load.batch_position = 0;
		if (load.next_excluded < file->excluded_count &&
			file->excluded[load.next_excluded] == load.offset)
		{
			load.next_excluded++;
			load.batch.len = 0;
		}
		else
		{
			progress_update(-1, 0, header.row_count);
			check_batch_read();
			load.batch_first_sequence = header.first_sequence;
			load.batch_rows = header.row_count;
			load.batch_rows_read = 0;
		}
		load.offset += sizeof(header) + header.payload_length;
	}
	return copied;
}

static void
start_load(List *files, bool numbered)
{
	load.numbered = numbered;
	load.files = files;
	load.header_sent = false;
	load.file_index = 0;
	load.file = -1;
	initStringInfo(&load.batch);
	load.batch_position = 0;
	load.batch_rows = 0;
	load.batch_rows_read = 0;
}

static void
end_load(void)
{
	if (load.file >= 0)
		FileClose(load.file);
	load.file = -1;
}

static void
progress_applying(void)
{
	progress_update(COMMIT_PHASE_APPLYING, 0, 0);
}

/* Apply an upsert sink's staged changes (see upsert.c). */
static uint64
apply_files(SinkInfo *sink, List *files, UpsertCounts *counts)
{
	start_load(files, true);
	upsert_apply(sink, load_read, load_row_sequence, progress_applying, counts);
	check_batch_read();
	end_load();
	return counts->versions;
}

/*
 * Load staged files into the target with COPY FROM's machinery, as the
 * sink's owner.  BeginCopyFrom is called directly, so DoCopy's checks are
 * redone here: INSERT privilege on the columns and no row-level security.
 */
static uint64
load_files(SinkInfo *sink, List *files)
{
	Relation	rel;
	ParseState *pstate;
	ParseNamespaceItem *nsitem;
	List	   *columns = NIL;
	List	   *options;
	RoleSwitch	saved;
	CopyFromState cstate;
	uint64		rows;

	rel = catalog_open_target(sink, false, RowExclusiveLock);
	/* as the sink's owner: its triggers, defaults and types' code run as for its own statement */
	security_switch_role(sink->owner, &saved);

	/* binary COPY needs the staged types: the target must still have them */
	catalog_check_layout(sink, RelationGetRelid(rel), false);
	pstate = make_parsestate(NULL);
	nsitem = addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock, NULL, false, false);
	nsitem->p_rte->requiredPerms = ACL_INSERT;
	for (int i = 0; i < sink->column_count; i++)
	{
		AttrNumber	attnum = get_attnum(RelationGetRelid(rel), sink->column_names[i]);

		columns = lappend(columns, makeString(sink->column_names[i]));
		nsitem->p_rte->insertedCols = bms_add_member(nsitem->p_rte->insertedCols,
													 attnum - FirstLowInvalidHeapAttributeNumber);
	}
	ExecCheckRTPerms(pstate->p_rtable, true);
	if (check_enable_rls(RelationGetRelid(rel), InvalidOid, false) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot load sink \"%s\" into table \"%s\" with row-level security",
						sink->name, RelationGetRelationName(rel)),
				 errhint("Disable row-level security on the target, or let its owner own the sink.")));

	options = list_make1(makeDefElem("format", (Node *) makeString("binary"), -1));
	start_load(files, false);
	cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false, load_read, columns, options);
	rows = CopyFrom(cstate);
	EndCopyFrom(cstate);
	end_load();

	security_restore_role(&saved);
	table_close(rel, NoLock);
	return rows;
}

static Datum
text_datum(const char *value)
{
	return CStringGetTextDatum(value);
}

/* Read the commit user's marks, creating its row on first use. */
static void
commit_user_marks(int32 sink_id, const char *commit_user, bool for_update,
				  int64 *last_prepared, int64 *last_committed, uint64 *fence_epoch)
{
	Oid			types[2] = {INT4OID, TEXTOID};
	Datum		values[2] = {Int32GetDatum(sink_id), text_datum(commit_user)};
	bool		isnull;

	execute("INSERT INTO paimon_sink.commit_user_state (sink_id, commit_user) "
			"VALUES ($1, $2) ON CONFLICT DO NOTHING", 2, types, values, SPI_OK_INSERT);
	execute(for_update ?
			"SELECT u.last_prepared_checkpoint, u.last_committed_checkpoint, u.fence_epoch "
			"FROM paimon_sink.commit_user_state u WHERE u.sink_id OPERATOR(pg_catalog.=) $1 "
			"AND u.commit_user OPERATOR(pg_catalog.=) $2 FOR UPDATE" :
			"SELECT u.last_prepared_checkpoint, u.last_committed_checkpoint, u.fence_epoch "
			"FROM paimon_sink.commit_user_state u WHERE u.sink_id OPERATOR(pg_catalog.=) $1 "
			"AND u.commit_user OPERATOR(pg_catalog.=) $2",
			2, types, values, SPI_OK_SELECT);
	*last_prepared = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
												 1, &isnull));
	*last_committed = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
												  2, &isnull));
	if (fence_epoch != NULL)
		*fence_epoch = (uint64) DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
															SPI_tuptable->tupdesc, 3, &isnull));
}

static SinkInfo *
require_sink_id(int32 sink_id)
{
	/* it outlives SPI_finish: it lasts as long as the request */
	MemoryContext old = MemoryContextSwitchTo(committer_context);
	SinkInfo   *sink = palloc0(sizeof(SinkInfo));
	bool		found = catalog_sink_by_id(sink_id, sink);

	MemoryContextSwitchTo(old);
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("sink %d does not exist", sink_id),
				 errdetail("It was dropped while the request waited.")));
	return sink;
}

static void start_writers(void);

/*
 * Wait until a writer serves and has no barrier under way.  A writer that
 * died meanwhile is started again here, not only between requests: this
 * request, and every write waiting for that writer, would wait for it.
 */
static WriterEntry *
idle_writer(int index)
{
	WriterEntry *writer = shared_writer(MyDatabaseEntry, index);
	TimestampTz start = GetCurrentTimestamp();

	for (;;)
	{
		bool		idle;

		SpinLockAcquire(&writer->mutex);
		idle = writer->ready && writer->barrier_state == BARRIER_IDLE;
		SpinLockRelease(&writer->mutex);
		if (idle)
			return writer;
		if (TimestampDifferenceExceeds(start, GetCurrentTimestamp(), PaimonSinkHandoffTimeoutMs))
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("sink writer %d did not take the barrier", index),
					 errdetail("It was not running, or still answering an earlier barrier, for %d ms.",
							   PaimonSinkHandoffTimeoutMs),
					 errhint("Retry; nothing of this checkpoint was prepared.")));
		start_writers();
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * The barrier: every writer seals the stream's files against one snapshot
 * and reports its committables.  Returns a list of palloc'd records (with
 * their excluded offsets following each), and each writer's barrier seq.
 */
static List *
run_barrier(SinkInfo *sink, const char *commit_user, int32 writer_id, int kind,
			uint64 fence_epoch, uint64 *seqs)
{
	MemoryContext caller = CurrentMemoryContext;
	bool		own_transaction = !IsTransactionState();
	Snapshot	latest;
	SnapshotData snapshot;
	shm_mq_handle **queues = barrier_queues;
	uint64	   *incarnations = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	List	   *records = NIL;

	/*
	 * A snapshot needs a transaction (under REPEATABLE READ it lives in the
	 * transaction's memory): a barrier of orphan removal or recover() runs
	 * between transactions, so it takes one of its own.  Only its values
	 * are kept.
	 */
	if (own_transaction)
		StartTransactionCommand();
	latest = GetLatestSnapshot();
	snapshot = *latest;
	snapshot.xip = MemoryContextAlloc(caller, sizeof(TransactionId) * Max(1, latest->xcnt));
	memcpy(snapshot.xip, latest->xip, sizeof(TransactionId) * latest->xcnt);
	if (own_transaction)
		CommitTransactionCommand();
	MemoryContextSwitchTo(caller);

	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
	{
		WriterEntry *writer = idle_writer(w);
		shm_mq	   *queue;

		memcpy(shared_address(writer->barrier_xip_offset), snapshot.xip,
			   sizeof(TransactionId) * snapshot.xcnt);
		queue = shm_mq_create(shared_address(writer->barrier_queue_offset), shared_queue_size());
		shm_mq_set_receiver(queue, MyProc);
		SpinLockAcquire(&writer->mutex);
		shm_mq_set_sender(queue, writer->proc);
		writer->barrier_sink_id = sink->sink_id;
		writer->barrier_sink_uuid = sink->sink_uuid;
		strlcpy(writer->barrier_commit_user, commit_user, sizeof(writer->barrier_commit_user));
		writer->barrier_writer_id = writer_id;
		writer->barrier_kind = kind;
		writer->barrier_fence_epoch = fence_epoch;
		writer->barrier_xmin = snapshot.xmin;
		writer->barrier_xmax = snapshot.xmax;
		writer->barrier_xcnt = snapshot.xcnt;
		seqs[w] = ++writer->barrier_seq;
		incarnations[w] = writer->incarnation;
		writer->barrier_state = BARRIER_REQUESTED;
		SpinLockRelease(&writer->mutex);
		queues[w] = shm_mq_attach(queue, NULL, NULL);
		SetLatch(&writer->proc->procLatch);
	}

	PG_TRY();
	{
		for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
		{
			WriterEntry *writer = shared_writer(MyDatabaseEntry, w);

			for (;;)
			{
				Size		length;
				void	   *data;
				shm_mq_result result = shm_mq_receive(queues[w], &length, &data, true);

				if (result == SHM_MQ_SUCCESS)
				{
					CommittableRecord *record = data;

					if (record->kind == BARRIER_RECORD_END)
						break;
					records = lappend(records, memcpy(palloc(length), data, length));
					continue;
				}
				/* a writer that died before attaching never detaches */
				if (result == SHM_MQ_DETACHED || writer->incarnation != incarnations[w] ||
					writer->pid == 0)
					ereport(ERROR,
							(errcode(ERRCODE_CONNECTION_FAILURE),
							 errmsg("sink writer %d stopped during the barrier", w),
							 errdetail("Nothing of this checkpoint was prepared; the rows stay staged."),
							 errhint("Retry the prepare.")));
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100,
								 PG_WAIT_EXTENSION);
				ResetLatch(MyLatch);
				CHECK_FOR_INTERRUPTS();
			}
			shm_mq_detach(queues[w]);
			queues[w] = NULL;
			if (w == 0)
				fault_point("barrier_after_first_writer");
		}
	}
	PG_CATCH();
	{
		for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
		{
			if (queues[w] != NULL)
				shm_mq_detach(queues[w]);
			queues[w] = NULL;
		}
		PG_RE_THROW();
	}
	PG_END_TRY();
	return records;
}

/* Refuse a checkpoint id the commit user's marks do not allow. */
static void
check_checkpoint_id(const char *commit_user, int64 checkpoint_id, int64 last_prepared,
					int64 last_committed)
{
	if (last_committed == PAIMON_SINK_END_INPUT_CHECKPOINT)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("commit user \"%s\" has ended its input", commit_user),
				 errdetail("end_input() committed its last checkpoint; nothing can be prepared after it."),
				 errhint("Use a new commit user for new input.")));
	if (checkpoint_id <= last_committed)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("checkpoint id %lld is not above the last committed checkpoint %lld of commit user \"%s\"",
						(long long) checkpoint_id, (long long) last_committed, commit_user),
				 errdetail("Checkpoint ids of a commit user increase; committed ones are final."),
				 errhint("Prepare checkpoint %lld or later, or ask paimon_sink.last_committed_checkpoint() where the commit user stands.",
						 (long long) last_committed + 1)));
	if (checkpoint_id < last_prepared)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("checkpoint id %lld goes backwards: commit user \"%s\" already prepared checkpoint %lld",
						(long long) checkpoint_id, commit_user, (long long) last_prepared),
				 errdetail("Checkpoint ids of a commit user must not decrease."),
				 errhint("Prepare checkpoint %lld or later.", (long long) last_prepared)));
}

/*
 * The barrier, and its committables recorded as checkpoint_id in the
 * current transaction; record_empty also moves the prepared mark when the
 * barrier found nothing (a job's checkpoint happened even without rows).
 * Returns the number of committables recorded; seqs receives each writer's
 * barrier seq, to confirm once the transaction is durable.
 */
static int
barrier_and_record(SinkInfo *sink, const char *commit_user, int64 checkpoint_id,
				   int32 writer_id, uint64 fence_epoch, bool record_empty, uint64 *seqs)
{
	List	   *records;
	ListCell   *lc;
	int			recorded = 0;

	records = run_barrier(sink, commit_user, writer_id, BARRIER_SEAL, fence_epoch, seqs);
	foreach(lc, records)
	{
		CommittableRecord *record = lfirst(lc);
		int64	   *excluded = (int64 *) (record + 1);
		Datum	   *offsets = palloc(sizeof(Datum) * Max(1, record->excluded_count));
		Oid			types[10] = {TEXTOID, INT4OID, TEXTOID, INT8OID, INT4OID, INT4OID, INT8OID,
		INT8OID, INT8ARRAYOID, INT8OID};
		Datum		values[10];

		for (int i = 0; i < record->excluded_count; i++)
			offsets[i] = Int64GetDatum(excluded[i]);
		values[0] = text_datum(record->file_name);
		values[1] = Int32GetDatum(record->stream.sink_id);
		values[2] = text_datum(record->stream.commit_user);
		values[3] = Int64GetDatum(checkpoint_id);
		values[4] = Int32GetDatum(record->stream.writer_id);
		values[5] = Int32GetDatum(record->stream.bucket);
		values[6] = Int64GetDatum(record->row_count);
		values[7] = Int64GetDatum(record->byte_count);
		values[8] = PointerGetDatum(construct_array(offsets, record->excluded_count, INT8OID,
													8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE));
		values[9] = Int64GetDatum(record->max_sequence);
		execute("INSERT INTO paimon_sink.committable (file_name, sink_id, commit_user, "
				"checkpoint_id, writer_id, bucket, row_count, byte_count, excluded_offsets, "
				"max_sequence) "
				"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (file_name) DO NOTHING",
				10, types, values, SPI_OK_INSERT);
		recorded += SPI_processed;
	}
	if (recorded > 0 || record_empty)
	{
		Oid			types[3] = {INT4OID, TEXTOID, INT8OID};
		Datum		values[3] = {Int32GetDatum(sink->sink_id), text_datum(commit_user),
		Int64GetDatum(checkpoint_id)};

		execute("UPDATE paimon_sink.commit_user_state u SET last_prepared_checkpoint = "
				"greatest(u.last_prepared_checkpoint, $3) WHERE u.sink_id OPERATOR(pg_catalog.=) $1 "
				"AND u.commit_user OPERATOR(pg_catalog.=) $2",
				3, types, values, SPI_OK_UPDATE);
	}
	return recorded;
}

/*
 * The writers may forget the sealed files that this barrier reported and a
 * durable transaction recorded.  Exactly this barrier: the files of an
 * earlier one whose transaction failed are still to be recorded.  Every
 * barrier reaches every writer and is confirmed (or not) before the next
 * one starts, so one seq per writer says it.
 */
static void
confirm_barrier(const uint64 *seqs)
{
	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
	{
		WriterEntry *writer = shared_writer(MyDatabaseEntry, w);

		SpinLockAcquire(&writer->mutex);
		writer->confirmed_barrier_seq = seqs[w];
		SpinLockRelease(&writer->mutex);
	}
}

/*
 * Prepare checkpoint_id: barrier and record the committables in one
 * transaction.  Returns the number of committables recorded.
 */
static int
do_prepare(int32 sink_id, const char *commit_user, int64 checkpoint_id, int32 writer_id,
		   bool record_empty)
{
	int64		last_prepared;
	int64		last_committed;
	uint64	   *seqs = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	int			recorded;
	SinkInfo   *sink;
	uint64		fence_epoch;

	begin_work();
	sink = require_sink_id(sink_id);
	commit_user_marks(sink_id, commit_user, true, &last_prepared, &last_committed, &fence_epoch);
	check_checkpoint_id(commit_user, checkpoint_id, last_prepared, last_committed);
	recorded = barrier_and_record(sink, commit_user, checkpoint_id, writer_id, fence_epoch,
								  record_empty, seqs);
	end_work();
	confirm_barrier(seqs);
	return recorded;
}

/* What a commit's errors say about where they come from. */
typedef struct CommitContext
{
	const char *sink;
	const char *commit_user;
	int64		checkpoint_id;
} CommitContext;

static void
commit_error_context(void *arg)
{
	CommitContext *context = arg;

	errcontext("committing checkpoint %lld of commit user \"%s\" of sink \"%s\"",
			   (long long) context->checkpoint_id, context->commit_user, context->sink);
}

/*
 * A checkpoint commits as the prepared transaction gid; refuse to prepare
 * when that name is taken (gids are the cluster's), right before PREPARE.
 * Taken by a transaction that is not ours (another role's, or one prepared
 * in another database), it fails the commit with ERRCODE_DUPLICATE_OBJECT
 * naming its owner, and the checkpoint stays prepared: never finish or
 * wait for someone else's transaction.  The next attempt draws another
 * random suffix (gid_build), so a taken name never blocks a sink twice.
 * Taken by one of ours, it is in doubt: recovery commits it before the
 * retry.
 */
static void
refuse_gid_in_use(const char *gid, const SinkInfo *sink, const char *commit_user,
				  int64 checkpoint_id)
{
	Oid			owner;
	Oid			database_id;
	char	   *owner_name;
	char	   *database_name;

	if (!recovery_gid_in_use(gid, &owner, &database_id))
		return;
	if (owner == security_committer_role() && database_id == MyDatabaseId)
	{
		in_doubt_possible = true;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("checkpoint %lld of commit user \"%s\" is in doubt as prepared transaction \"%s\"",
						(long long) checkpoint_id, commit_user, gid),
				 errdetail("Nothing more of the checkpoint was applied."),
				 errhint("Retry: the committer commits the transaction in doubt first.")));
	}
	owner_name = GetUserNameFromId(owner, true);
	database_name = get_database_name(database_id);
	ereport(ERROR,
			(errcode(ERRCODE_DUPLICATE_OBJECT),
			 errmsg("transaction identifier \"%s\" is in use by a prepared transaction that is not paimon_sink's",
					gid),
			 errdetail("Role \"%s\" prepared a transaction of that name in database \"%s\". Checkpoint %lld of commit user \"%s\" of sink \"%s\" commits under that name, so nothing of it was applied: it stays prepared.",
					   owner_name ? owner_name : "(dropped)",
					   database_name ? database_name : "(dropped)", (long long) checkpoint_id,
					   commit_user, sink->name),
			 errhint("Have its owner or a superuser end it, connected to database \"%s\": ROLLBACK PREPARED '%s'; then commit again. paimon_sink never finishes another role's transaction.",
					 database_name ? database_name : "(dropped)", gid)));
}

/* Commit one prepared checkpoint as one snapshot. */
static void
commit_checkpoint(int32 sink_id, const char *commit_user, int64 checkpoint_id)
{
	char		gid[GIDSIZE];
	TimestampTz start = GetCurrentTimestamp();
	Oid			types[3] = {INT4OID, TEXTOID, INT8OID};
	Datum		values[3] = {Int32GetDatum(sink_id), text_datum(commit_user),
	Int64GetDatum(checkpoint_id)};
	List	   *files = NIL;
	List	   *paths = NIL;
	StringInfoData missing;
	SinkInfo   *sink;
	int64		last_prepared;
	int64		last_committed;
	int64		snapshot_id;
	int64		rows = 0;
	int64		bytes = 0;
	uint64		loaded;
	ListCell   *lc;
	bool		isnull;
	MemoryContext old_context;
	CommitContext context;
	ErrorContextCallback callback;
	UpsertCounts changes = {0};

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	BeginTransactionBlock();
	CommitTransactionCommand();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());

	/* SPI calls return to SPI's context; what outlives SPI_finish goes here */
	sink = require_sink_id(sink_id);
	context.sink = sink->name;
	context.commit_user = commit_user;
	context.checkpoint_id = checkpoint_id;
	callback.callback = commit_error_context;
	callback.arg = &context;
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	commit_user_marks(sink_id, commit_user, true, &last_prepared, &last_committed, NULL);
	if (checkpoint_id <= last_committed)
		elog(ERROR, "checkpoint %lld is already committed", (long long) checkpoint_id);

	execute("SELECT c.file_name, c.row_count, c.excluded_offsets, c.byte_count "
			"FROM paimon_sink.committable c WHERE c.sink_id OPERATOR(pg_catalog.=) $1 "
			"AND c.commit_user OPERATOR(pg_catalog.=) $2 AND c.checkpoint_id OPERATOR(pg_catalog.=) $3 "
			"AND c.snapshot_id IS NULL ORDER BY c.prepared_at, c.file_name",
			3, types, values, SPI_OK_SELECT);
	old_context = MemoryContextSwitchTo(committer_context);
	initStringInfo(&missing);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		LoadFile   *file = palloc0(sizeof(LoadFile));
		Datum		excluded;
		struct stat st;

		file->name = SPI_getvalue(tuple, SPI_tuptable->tupdesc, 1);
		file->row_count = DatumGetInt64(SPI_getbinval(tuple, SPI_tuptable->tupdesc, 2, &isnull));
		bytes += DatumGetInt64(SPI_getbinval(tuple, SPI_tuptable->tupdesc, 4, &isnull));
		excluded = SPI_getbinval(tuple, SPI_tuptable->tupdesc, 3, &isnull);
		if (!isnull)
		{
			Datum	   *elements;

			deconstruct_array(DatumGetArrayTypePCopy(excluded), INT8OID, 8, FLOAT8PASSBYVAL,
							  TYPALIGN_DOUBLE, &elements, NULL, &file->excluded_count);
			file->excluded = palloc(sizeof(int64) * Max(1, file->excluded_count));
			for (int e = 0; e < file->excluded_count; e++)
				file->excluded[e] = DatumGetInt64(elements[e]);
		}
		staged_file_path(file->path, MyDatabaseId, sink_id, file->name);
		if (stat(file->path, &st) != 0)
			appendStringInfo(&missing, "%s%s", missing.len ? ", " : "", file->path);
		rows += file->row_count;
		files = lappend(files, file);
		paths = lappend(paths, file->path);
	}
	MemoryContextSwitchTo(old_context);
	if (missing.len > 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FILE),
				 errmsg("staged files of checkpoint %lld of commit user \"%s\" are missing",
						(long long) checkpoint_id, commit_user),
				 errdetail("Missing: %s. Nothing of the checkpoint was applied.", missing.data),
				 errhint("The checkpoint cannot be committed without them; restore the files, or restore the job from an earlier checkpoint.")));

	/*
	 * The load runs in a security-restricted operation, which may not leave
	 * triggers deferred: the target's deferrable constraints are checked
	 * when the load statement ends (all rows are in by then).
	 */
	{
		ConstraintsSetStmt *immediate = makeNode(ConstraintsSetStmt);

		immediate->deferred = false;
		AfterTriggerSetState(immediate);
	}
	failure_hint = "Nothing of the checkpoint was applied and it stays prepared: fix the cause and call commit() or checkpoint() again.";
	progress_start(sink_id, commit_user, checkpoint_id, list_length(files), rows);
	if (SINK_IS_UPSERT(sink))
		loaded = apply_files(sink, files, &changes);
	else
		loaded = load_files(sink, files);
	/* the owner's triggers ran in this session: nothing of theirs stays in it */
	security_forget_session_state();
	failure_hint = NULL;

	execute("SELECT coalesce(pg_catalog.max(l.snapshot_id), 0) OPERATOR(pg_catalog.+) 1 "
			"FROM paimon_sink.snapshot_log l WHERE l.sink_id OPERATOR(pg_catalog.=) $1",
			1, types, values, SPI_OK_SELECT);
	snapshot_id = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1,
											  &isnull));
	{
		Oid			snapshot_types[8] = {INT4OID, INT8OID, TEXTOID, INT8OID, INT8OID, INT4OID,
		INT8OID, FLOAT8OID};
		Datum		snapshot_values[8] = {Int32GetDatum(sink_id), Int64GetDatum(snapshot_id),
			text_datum(commit_user), Int64GetDatum(checkpoint_id),
			Int64GetDatum((int64) loaded), Int32GetDatum(list_length(files)),
			Int64GetDatum(bytes),
		Float8GetDatum((double) (GetCurrentTimestamp() - start) / 1000.0)};

		execute("INSERT INTO paimon_sink.snapshot_log (sink_id, snapshot_id, commit_user, "
				"commit_identifier, commit_kind, row_count, file_count, byte_count, load_ms) "
				"VALUES ($1, $2, $3, $4, 'APPEND', $5, $6, $7, $8)",
				8, snapshot_types, snapshot_values, SPI_OK_INSERT);
		execute("UPDATE paimon_sink.committable c SET snapshot_id = $2 "
				"WHERE c.sink_id OPERATOR(pg_catalog.=) $1 AND c.commit_user OPERATOR(pg_catalog.=) $3 "
				"AND c.checkpoint_id OPERATOR(pg_catalog.=) $4 AND c.snapshot_id IS NULL",
				4, snapshot_types, snapshot_values, SPI_OK_UPDATE);
		execute("UPDATE paimon_sink.commit_user_state u SET last_committed_checkpoint = $4, "
				"last_snapshot_id = $2, last_committed_at = pg_catalog.now() "
				"WHERE u.sink_id OPERATOR(pg_catalog.=) $1 AND u.commit_user OPERATOR(pg_catalog.=) $3",
				4, snapshot_types, snapshot_values, SPI_OK_UPDATE);
	}
	PopActiveSnapshot();
	SPI_finish();

	error_context_stack = callback.previous;

	/*
	 * The gid is drawn now, not before the load, and shown only to the
	 * sink owner's members (commit_progress): a role that learns it before
	 * the PREPARE could take it.
	 */
	gid_build(gid, MyDatabaseId, sink_id, checkpoint_id, commit_user);
	SpinLockAcquire(&MyDatabaseEntry->progress.mutex);
	strlcpy(MyDatabaseEntry->progress.gid, gid, sizeof(MyDatabaseEntry->progress.gid));
	SpinLockRelease(&MyDatabaseEntry->progress.mutex);
	progress_update(COMMIT_PHASE_PREPARING, 0, 0);
	fault_point("committer_before_prepare");
	/* a PREPARE refused (a name taken meanwhile, a NOTIFY) names the checkpoint */
	error_context_stack = &callback;
	PushActiveSnapshot(GetTransactionSnapshot());
	refuse_gid_in_use(gid, sink, commit_user, checkpoint_id);
	PopActiveSnapshot();
	if (!PrepareTransactionBlock(gid))
		elog(ERROR, "paimon_sink committer could not prepare transaction \"%s\"", gid);
	CommitTransactionCommand();	/* PREPARE TRANSACTION happens here */
	error_context_stack = callback.previous;
	fault_point("committer_after_prepare");

	StartTransactionCommand();
	FinishPreparedTransaction(gid, true);
	CommitTransactionCommand();
	MemoryContextSwitchTo(committer_context);
	progress_update(COMMIT_PHASE_IDLE, 0, 0);

	ereport(LOG,
			(errmsg("paimon_sink committed snapshot %lld of sink \"%s\": commit user \"%s\", identifier %lld, %llu rows, %d files, %.3f ms",
					(long long) snapshot_id, sink->name, commit_user, (long long) checkpoint_id,
					(unsigned long long) loaded, list_length(files),
					(double) (GetCurrentTimestamp() - start) / 1000.0),
			 SINK_IS_UPSERT(sink) ?
			 errdetail("%llu versions of %llu keys: %llu upserted, %llu deleted; %llu target rows changed.",
					   (unsigned long long) changes.versions,
					   (unsigned long long) changes.keys,
					   (unsigned long long) changes.upserts,
					   (unsigned long long) changes.deletes,
					   (unsigned long long) changes.changed) : 0));

	tally.commits++;
	tally.rows += (int64) loaded;
	tally.bytes += bytes;
	tally.retries += (int64) changes.retries;
	tally.last_ms = (double) (GetCurrentTimestamp() - start) / 1000.0;

	old_context = MemoryContextSwitchTo(TopMemoryContext);
	foreach(lc, paths)
		committed_paths = lappend(committed_paths, pstrdup(lfirst(lc)));
	MemoryContextSwitchTo(old_context);
	fault_point("committer_after_commit_prepared");
}

/*
 * Commit every prepared checkpoint up to checkpoint_id, in ascending order,
 * then raise the high-water mark over empty prepared ones.
 */
static void
do_commit(int32 sink_id, const char *commit_user, int64 checkpoint_id, CommitterRequest *request)
{
	Oid			types[3] = {INT4OID, TEXTOID, INT8OID};
	Datum		values[3] = {Int32GetDatum(sink_id), text_datum(commit_user),
	Int64GetDatum(checkpoint_id)};
	List	   *identifiers = NIL;
	ListCell   *lc;
	int64		last_prepared;
	int64		last_committed;
	bool		isnull;

	begin_work();
	(void) require_sink_id(sink_id);
	commit_user_marks(sink_id, commit_user, false, &last_prepared, &last_committed, NULL);
	request->previous_last_committed = last_committed;
	if (checkpoint_id <= last_committed)
		tally.skipped++;
	execute("SELECT DISTINCT c.checkpoint_id FROM paimon_sink.committable c "
			"WHERE c.sink_id OPERATOR(pg_catalog.=) $1 AND c.commit_user OPERATOR(pg_catalog.=) $2 "
			"AND c.snapshot_id IS NULL AND c.checkpoint_id OPERATOR(pg_catalog.<=) $3 "
			"ORDER BY c.checkpoint_id", 3, types, values, SPI_OK_SELECT);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(committer_context);
		int64	   *identifier = palloc(sizeof(int64));

		*identifier = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc,
												  1, &isnull));
		identifiers = lappend(identifiers, identifier);
		MemoryContextSwitchTo(old);
	}
	end_work();

	foreach(lc, identifiers)
		commit_checkpoint(sink_id, commit_user, *(int64 *) lfirst(lc));
	list_free_deep(identifiers);

	/*
	 * Only this committer moves the marks, so a plain read will do: a locking
	 * one would take a transaction id and a WAL flush when nothing changes.
	 */
	begin_work();
	commit_user_marks(sink_id, commit_user, false, &last_prepared, &last_committed, NULL);
	if (Min(checkpoint_id, last_prepared) > last_committed)
	{
		values[2] = Int64GetDatum(Min(checkpoint_id, last_prepared));
		execute("UPDATE paimon_sink.commit_user_state u SET last_committed_checkpoint = $3 "
				"WHERE u.sink_id OPERATOR(pg_catalog.=) $1 AND u.commit_user OPERATOR(pg_catalog.=) $2 "
				"AND u.last_committed_checkpoint OPERATOR(pg_catalog.<) $3",
				3, types, values, SPI_OK_UPDATE);
		last_committed = Min(checkpoint_id, last_prepared);
	}
	end_work();
	request->last_committed = last_committed;
	request->result_checkpoint_id = checkpoint_id;
}

/*
 * checkpoint(): barrier, prepare and commit the sink's own commit user.  The
 * committables are recorded (committed) before the commit transaction: a
 * writer that restarts while that transaction is in doubt must find its
 * sealed files recorded, or it would adopt them again.
 */
static void
do_checkpoint(int32 sink_id, CommitterRequest *request)
{
	SinkInfo   *sink;
	char		commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	int64		last_prepared;
	int64		last_committed;
	int64		checkpoint_id;

	begin_work();
	sink = require_sink_id(sink_id);
	strlcpy(commit_user, sink->default_commit_user, sizeof(commit_user));
	commit_user_marks(sink_id, commit_user, false, &last_prepared, &last_committed, NULL);
	end_work();

	checkpoint_id = Max(last_prepared, last_committed) + 1;
	strlcpy(request->commit_user, commit_user, sizeof(request->commit_user));
	request->committable_count = do_prepare(sink_id, commit_user, checkpoint_id, -1, false);
	do_commit(sink_id, commit_user, checkpoint_id, request);
}

/*
 * recover(): a job restores from checkpoint "restored".  Its in-doubt
 * transactions are already finished (every request starts so); its prepared
 * checkpoints up to "restored" are committed (Paimon's filter-and-commit);
 * what it staged or prepared after "restored" is discarded, since its source
 * replays it.  A restore below the last committed checkpoint is refused: the
 * replay would commit rows a second time.
 */
static void
do_recover(int32 sink_id, const char *commit_user, int64 restored, int mode,
		   CommitterRequest *request)
{
	int64		last_prepared;
	int64		last_committed;
	uint64	   *seqs = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	List	   *records;
	List	   *paths = NIL;
	ListCell   *lc;
	Oid			types[3] = {INT4OID, TEXTOID, INT8OID};
	Datum		values[3] = {Int32GetDatum(sink_id), text_datum(commit_user),
	Int64GetDatum(restored)};
	SinkInfo   *sink;

	begin_work();
	sink = require_sink_id(sink_id);
	commit_user_marks(sink_id, commit_user, true, &last_prepared, &last_committed, NULL);
	if (restored < last_committed)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("stale restore: checkpoint %lld is below the last committed checkpoint %lld of commit user \"%s\"",
						(long long) restored, (long long) last_committed, commit_user),
				 errdetail("Replaying from checkpoint %lld would commit the rows of checkpoints %lld to %lld a second time; nothing was changed.",
						   (long long) restored, (long long) restored + 1, (long long) last_committed),
				 errhint("Restore the job from checkpoint %lld or later, or move its source past what checkpoint %lld committed.",
						 (long long) last_committed, (long long) last_committed)));

	/*
	 * Fence the failed attempt first: batches of transactions that began
	 * writing before this commit are left out of every later checkpoint,
	 * even those that reach a writer after the discard below.
	 */
	execute("UPDATE paimon_sink.commit_user_state u SET fence_epoch = u.fence_epoch OPERATOR(pg_catalog.+) 1 "
			"WHERE u.sink_id OPERATOR(pg_catalog.=) $1 AND u.commit_user OPERATOR(pg_catalog.=) $2",
			2, types, values, SPI_OK_UPDATE);
	end_work();

	do_commit(sink_id, commit_user, restored, request);

	/* the writers drop what the job staged since */
	records = run_barrier(sink, commit_user, -1, BARRIER_DISCARD, 0, seqs);
	request->discarded_files = 0;
	foreach(lc, records)
	{
		CommittableRecord *record = lfirst(lc);
		char	   *path;

		if (record->kind == BARRIER_RECORD_DISCARDED)
		{
			request->discarded_files++; /* the writer removed it */
			continue;
		}
		path = palloc(MAXPGPATH);
		staged_file_path(path, MyDatabaseId, sink_id, record->file_name);
		paths = lappend(paths, path);
	}

	begin_work();
	execute("SELECT pg_catalog.count(DISTINCT c.checkpoint_id) FROM paimon_sink.committable c "
			"WHERE c.sink_id OPERATOR(pg_catalog.=) $1 AND c.commit_user OPERATOR(pg_catalog.=) $2 "
			"AND c.checkpoint_id OPERATOR(pg_catalog.>) $3 AND c.snapshot_id IS NULL",
			3, types, values, SPI_OK_SELECT);
	{
		bool		isnull;

		request->discarded_checkpoints = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
																	 SPI_tuptable->tupdesc, 1, &isnull));
	}
	execute("DELETE FROM paimon_sink.committable c WHERE c.sink_id OPERATOR(pg_catalog.=) $1 "
			"AND c.commit_user OPERATOR(pg_catalog.=) $2 AND c.checkpoint_id OPERATOR(pg_catalog.>) $3 "
			"AND c.snapshot_id IS NULL RETURNING c.file_name",
			3, types, values, SPI_OK_DELETE_RETURNING);
	for (uint64 i = 0; i < SPI_processed; i++)
	{
		MemoryContext old = MemoryContextSwitchTo(committer_context);
		char	   *name = SPI_getvalue(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1);
		char	   *path = palloc(MAXPGPATH);

		/* a name that is not a staged file's is never a path (it is no file of ours) */
		if (staged_file_name_is_valid(name))
		{
			staged_file_path(path, MyDatabaseId, sink_id, name);
			paths = lappend(paths, path);
		}
		MemoryContextSwitchTo(old);
	}
	execute("UPDATE paimon_sink.commit_user_state u SET last_prepared_checkpoint = "
			"greatest(u.last_committed_checkpoint, least(u.last_prepared_checkpoint, $3)) "
			"WHERE u.sink_id OPERATOR(pg_catalog.=) $1 AND u.commit_user OPERATOR(pg_catalog.=) $2",
			3, types, values, SPI_OK_UPDATE);
	end_work();

	/* files of kept checkpoints are committed and gone; the rest are orphans */
	foreach(lc, paths)
	{
		if (unlink(lfirst(lc)) == 0)
			request->discarded_files++;
		else if (errno != ENOENT)
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not remove staged file \"%s\": %m", (char *) lfirst(lc)),
					 errhint("paimon_sink.remove_orphan_files() removes it later.")));
	}
	ereport(LOG,
			(errmsg("paimon_sink recovered commit user \"%s\" of sink %d at checkpoint %lld: committed up to %lld, discarded %d checkpoints and %d files",
					commit_user, sink_id, (long long) restored, (long long) request->last_committed,
					request->discarded_checkpoints, request->discarded_files)));

	if (mode == RECOVER_RESTORE_AND_FAIL &&
		request->last_committed > request->previous_last_committed)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("recovery committed checkpoints %lld to %lld of commit user \"%s\"; restart the job",
						(long long) request->previous_last_committed + 1,
						(long long) request->last_committed, commit_user),
				 errdetail("This error is intended (mode restore_and_fail): the commits are done, and the job restarts from them, as Paimon's committer does after a filter-and-commit."),
				 errhint("Restart the job; the next recover() finds nothing to commit.")));
}

/* end_input(): prepare the end-of-input checkpoint and commit at once. */
static void
do_end_input(int32 sink_id, const char *commit_user, CommitterRequest *request)
{
	request->committable_count = do_prepare(sink_id, commit_user,
											PAIMON_SINK_END_INPUT_CHECKPOINT, -1, true);
	do_commit(sink_id, commit_user, PAIMON_SINK_END_INPUT_CHECKPOINT, request);
}

/*
 * remove_orphan_files(): staged files of the sink older than the cut-off
 * that no writer holds (open or sealed), and that no prepared checkpoint
 * records, are removed (or listed, in a dry run).  The committer serves one
 * request at a time, so no commit is in flight.  The folder is listed before
 * the writers are asked, so a file created meanwhile is never a candidate.
 * The outcome goes to paimon_sink.maintenance_result for the requester.
 */
static void
do_remove_orphans(int32 sink_id, CommitterRequest *request)
{
	char		directory[MAXPGPATH];
	DIR		   *dir;
	struct dirent *entry;
	List	   *candidates = NIL;
	List	   *held;
	ListCell   *lc;
	uint64	   *seqs = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	time_t		cutoff = time(NULL) - (time_t) (request->older_than_ms / 1000);
	SinkInfo   *sink;

	begin_work();
	sink = require_sink_id(sink_id);
	end_work();

	staged_file_directory(directory, MyDatabaseId, sink_id);
	dir = AllocateDir(directory);
	while (dir != NULL && (entry = ReadDir(dir, directory)) != NULL)
	{
		char		path[MAXPGPATH];
		struct stat st;

		/* staged files, and headers a crash left under their temporary name */
		if (!staged_file_name_is_valid(entry->d_name) &&
			staged_file_temporary_creator(entry->d_name) < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", directory, entry->d_name);
		if (stat(path, &st) != 0 || st.st_mtime > cutoff)
			continue;
		candidates = lappend(candidates, pstrdup(entry->d_name));
		candidates = lappend(candidates, (void *) (intptr_t) st.st_size);
	}
	if (dir != NULL)
		FreeDir(dir);

	held = run_barrier(sink, "", -1, BARRIER_LIST, 0, seqs);

	begin_work();
	request->discarded_files = 0;
	for (int i = 0; i < list_length(candidates); i += 2)
	{
		char	   *name = list_nth(candidates, i);
		int64		bytes = (int64) (intptr_t) list_nth(candidates, i + 1);
		bool		is_held = false;
		Oid			types[4] = {INT8OID, TEXTOID, INT8OID, BOOLOID};
		Datum		values[4];
		char		path[MAXPGPATH];

		foreach(lc, held)
			if (strcmp(((CommittableRecord *) lfirst(lc))->file_name, name) == 0)
				is_held = true;
		if (is_held)
			continue;
		values[0] = text_datum(name);
		execute("SELECT 1 FROM paimon_sink.committable c WHERE c.file_name OPERATOR(pg_catalog.=) $1 "
				"AND c.snapshot_id IS NULL",
				1, &types[1], values, SPI_OK_SELECT);
		if (SPI_processed > 0)
			continue;			/* a prepared checkpoint needs it */
		/* a name the folder listing gave: a staged file's or a temporary one's */
		snprintf(path, sizeof(path), "%s/%s", directory, name);
		values[0] = Int64GetDatum((int64) request->seq);
		values[1] = text_datum(name);
		values[2] = Int64GetDatum(bytes);
		values[3] = BoolGetDatum(!request->dry_run);
		if (!request->dry_run && unlink(path) != 0)
		{
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not remove orphan file \"%s\": %m", path)));
			continue;
		}
		/* a scheduled removal (seq 0) has no requester to read its results */
		if (request->seq != 0)
			execute("INSERT INTO paimon_sink.maintenance_result (request_id, file_name, byte_count, removed) "
					"VALUES ($1, $2, $3, $4)", 4, types, values, SPI_OK_INSERT);
		request->discarded_files++;
	}
	end_work();
	if (!request->dry_run && request->discarded_files > 0)
		ereport(LOG,
				(errmsg("paimon_sink removed %d orphan files of sink %d", request->discarded_files,
						sink_id)));
}

/* Take the oldest queued request, or NULL. */
static CommitterRequest *
next_request(void)
{
	CommitterRequest *oldest = NULL;

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	for (int i = 0; i < PAIMON_SINK_REQUESTS_PER_DATABASE; i++)
	{
		CommitterRequest *request = &MyDatabaseEntry->requests[i];

		if (request->state == REQUEST_QUEUED && (oldest == NULL || request->seq < oldest->seq))
			oldest = request;
	}
	if (oldest != NULL)
		oldest->state = REQUEST_RUNNING;
	LWLockRelease(PaimonSinkState->lock);
	return oldest;
}

static void
finish_request(CommitterRequest *request, CommitterRequest *outcome)
{
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	if (request->state == REQUEST_ABANDONED)
		request->state = REQUEST_FREE;
	else
	{
		int			seq = request->seq;

		memcpy(request, outcome, sizeof(*request));
		request->seq = seq;
		request->state = REQUEST_DONE;
	}
	LWLockRelease(PaimonSinkState->lock);
	ConditionVariableBroadcast(&MyDatabaseEntry->request_done);
}

/*
 * Remove files whose removal need not be durable: should one come back
 * after a crash, remove_committed_files removes it again.
 */
static void
remove_paths(List **paths)
{
	ListCell   *lc;

	foreach(lc, *paths)
	{
		if (unlink(lfirst(lc)) != 0 && errno != ENOENT)
			ereport(LOG,
					(errcode_for_file_access(),
					 errmsg("could not remove staged file \"%s\": %m", (char *) lfirst(lc))));
	}
	list_free_deep(*paths);
	*paths = NIL;
}

/*
 * Run one request (a requester's, or a periodic checkpoint) into outcome;
 * an error is caught into outcome, state intact.
 */
static void
run_request(CommitterRequest *request, CommitterRequest *result)
{
	CommitterRequest outcome;
	MemoryContext old = MemoryContextSwitchTo(committer_context);

	memcpy(&outcome, request, sizeof(outcome));
	outcome.sqlerrcode = 0;
	pgstat_report_activity(STATE_RUNNING, "serving a sink request");
	PG_TRY();
	{
		/* an in-doubt transaction of ours holds the locks this needs */
		if (in_doubt_possible)
			recover_in_doubt();
		switch (outcome.kind)
		{
			case REQUEST_PREPARE:
				outcome.committable_count = do_prepare(outcome.sink_id, outcome.commit_user,
													   outcome.checkpoint_id, outcome.writer_id,
													   true);
				break;
			case REQUEST_COMMIT:
				do_commit(outcome.sink_id, outcome.commit_user, outcome.checkpoint_id, &outcome);
				break;
			case REQUEST_CHECKPOINT:
				do_checkpoint(outcome.sink_id, &outcome);
				break;
			case REQUEST_RECOVER:
				do_recover(outcome.sink_id, outcome.commit_user, outcome.checkpoint_id,
						   outcome.mode, &outcome);
				break;
			case REQUEST_END_INPUT:
				do_end_input(outcome.sink_id, outcome.commit_user, &outcome);
				break;
			case REQUEST_REMOVE_ORPHANS:
				do_remove_orphans(outcome.sink_id, &outcome);
				break;
		}
	}
	PG_CATCH();
	{
		ErrorData  *error;

		MemoryContextSwitchTo(committer_context);
		error = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		progress_update(COMMIT_PHASE_IDLE, 0, 0);
		in_doubt_possible = true;
		SPI_finish();
		if (load.file >= 0)
			FileClose(load.file);
		load.file = -1;
		outcome.sqlerrcode = error->sqlerrcode ? error->sqlerrcode : ERRCODE_INTERNAL_ERROR;
		strlcpy(outcome.message, error->message ? error->message : "", sizeof(outcome.message));
		strlcpy(outcome.detail, error->detail ? error->detail : "", sizeof(outcome.detail));
		strlcpy(outcome.hint, error->hint ? error->hint :
				(failure_hint ? load_failure_hint(error->sqlerrcode) : ""), sizeof(outcome.hint));
		failure_hint = NULL;
		strlcpy(outcome.context, error->context ? error->context : "", sizeof(outcome.context));
		ereport(LOG,
				(errmsg("paimon_sink committer request failed with SQLSTATE %s: %s",
						unpack_sql_state(outcome.sqlerrcode), outcome.message),
				 outcome.context[0] ? errdetail("%s", outcome.context) : 0));
		FreeErrorData(error);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextReset(committer_context);
	pgstat_report_activity(STATE_IDLE, NULL);
	memcpy(result, &outcome, sizeof(outcome));
}

/*
 * Maintenance after commits, off the commit path (Paimon's maintain() after
 * a commit): snapshots past paimon_sink.snapshots_retained and
 * paimon_sink.snapshot_retention are expired.  A failure never fails the
 * commit: it is logged and reported with the sink's next commit.
 */
typedef struct MaintenanceFailure
{
	int32		sink_id;
	char		message[PAIMON_SINK_ERROR_TEXT];
} MaintenanceFailure;

static List *maintenance_failures = NIL;

static void
maintain_after_commit(int32 sink_id)
{
	MemoryContext old = CurrentMemoryContext;

	PG_TRY();
	{
		int64		expired;

		fault_point("committer_maintenance");
		begin_work();
		/* a crash losing the expiry only leaves it for the next commit: no WAL flush */
		(void) set_config_option("synchronous_commit", "off", PGC_USERSET, PGC_S_SESSION,
								 GUC_ACTION_LOCAL, true, 0, false);
		expired = catalog_expire_snapshots(sink_id, PaimonSinkSnapshotsRetained,
										   PaimonSinkSnapshotRetentionMs, false);
		end_work();
		if (expired > 0)
			ereport(DEBUG1,
					(errmsg("paimon_sink expired %lld snapshots of sink %d", (long long) expired,
							sink_id)));
	}
	PG_CATCH();
	{
		ErrorData  *error;
		MaintenanceFailure *failure;

		MemoryContextSwitchTo(TopMemoryContext);
		error = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		failure = palloc0(sizeof(MaintenanceFailure));
		failure->sink_id = sink_id;
		snprintf(failure->message, sizeof(failure->message),
				 "paimon_sink maintenance after a commit of sink %d failed: %s", sink_id,
				 error->message);
		maintenance_failures = lappend(maintenance_failures, failure);
		ereport(LOG, (errmsg("%s", failure->message)));
		FreeErrorData(error);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
}

/* The failed maintenance of a sink, reported once with its next commit. */
static void
report_maintenance_failure(CommitterRequest *outcome)
{
	ListCell   *lc;

	foreach(lc, maintenance_failures)
	{
		MaintenanceFailure *failure = lfirst(lc);

		if (failure->sink_id == outcome->sink_id)
		{
			strlcpy(outcome->warning, failure->message, sizeof(outcome->warning));
			maintenance_failures = foreach_delete_current(maintenance_failures, lc);
			pfree(failure);
			return;
		}
	}
}

/*
 * Count what a request committed, or its failure, in commit_statistics and
 * commit_failures (unlogged: no WAL flush); a failure here is only logged.
 */
static void
record_statistics(const CommitterRequest *outcome)
{
	MemoryContext old = CurrentMemoryContext;

	if (outcome->sink_id == 0 || (tally.commits == 0 && tally.skipped == 0 &&
								  outcome->sqlerrcode == 0))
		return;
	PG_TRY();
	{
		Oid			types[8] = {INT4OID, INT8OID, INT8OID, INT8OID, INT8OID, INT8OID, FLOAT8OID,
		INT8OID};
		Datum		values[8] = {Int32GetDatum(outcome->sink_id), Int64GetDatum(tally.commits),
			Int64GetDatum(tally.skipped), Int64GetDatum(tally.retries), Int64GetDatum(tally.rows),
			Int64GetDatum(tally.bytes), Float8GetDatum(tally.last_ms),
		Int64GetDatum(outcome->sqlerrcode != 0 ? 1 : 0)};
		char		nulls[8] = {' ', ' ', ' ', ' ', ' ', ' ', tally.commits > 0 ? ' ' : 'n', ' '};

		begin_work();
		if (SPI_execute_plan(catalog_plan("INSERT INTO paimon_sink.commit_statistics AS s "
										  "(sink_id, commits, skipped, retries, rows_committed, "
										  "bytes_committed, last_commit_ms, failures, last_committed_at) "
										  "SELECT $1, $2, $3, $4, $5, $6, $7, $8, "
										  "CASE WHEN $2 OPERATOR(pg_catalog.>) 0 THEN pg_catalog.now() END "
										  "WHERE EXISTS (SELECT FROM paimon_sink.sink_definition d "
										  "  WHERE d.sink_id OPERATOR(pg_catalog.=) $1) "
										  "ON CONFLICT (sink_id) DO UPDATE SET "
										  "commits = s.commits OPERATOR(pg_catalog.+) $2, "
										  "skipped = s.skipped OPERATOR(pg_catalog.+) $3, "
										  "retries = s.retries OPERATOR(pg_catalog.+) $4, "
										  "rows_committed = s.rows_committed OPERATOR(pg_catalog.+) $5, "
										  "bytes_committed = s.bytes_committed OPERATOR(pg_catalog.+) $6, "
										  "last_commit_ms = coalesce($7, s.last_commit_ms), "
										  "failures = s.failures OPERATOR(pg_catalog.+) $8, "
										  "last_committed_at = coalesce(excluded.last_committed_at, s.last_committed_at)",
										  8, types),
							 values, nulls, false, 0) != SPI_OK_INSERT)
			elog(ERROR, "could not count a commit");
		if (outcome->sqlerrcode != 0)
		{
			Oid			failure_types[3] = {INT4OID, TEXTOID, TEXTOID};
			Datum		failure_values[3] = {Int32GetDatum(outcome->sink_id),
				text_datum(unpack_sql_state(outcome->sqlerrcode)),
			text_datum(outcome->message)};

			if (SPI_execute_plan(catalog_plan("INSERT INTO paimon_sink.commit_failures AS f "
											  "(sink_id, sqlstate, failures, last_failed_at, last_message) "
											  "SELECT $1, $2, 1, pg_catalog.now(), $3 "
											  "WHERE EXISTS (SELECT FROM paimon_sink.sink_definition d "
											  "  WHERE d.sink_id OPERATOR(pg_catalog.=) $1) "
											  "ON CONFLICT (sink_id, sqlstate) DO UPDATE SET "
											  "failures = f.failures OPERATOR(pg_catalog.+) 1, "
											  "last_failed_at = pg_catalog.now(), "
											  "last_message = $3", 3, failure_types),
								 failure_values, NULL, false, 0) != SPI_OK_INSERT)
				elog(ERROR, "could not count a failure");
		}
		end_work();
	}
	PG_CATCH();
	{
		EmitErrorReport();
		FlushErrorState();
		AbortOutOfAnyTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
}

static bool
is_commit(const CommitterRequest *request)
{
	return request->kind == REQUEST_COMMIT || request->kind == REQUEST_CHECKPOINT ||
		request->kind == REQUEST_END_INPUT;
}

/* Serve one request; an error goes back to the requester, state intact. */
static void
serve(CommitterRequest *request)
{
	CommitterRequest outcome;

	memset(&tally, 0, sizeof(tally));
	run_request(request, &outcome);
	if (is_commit(&outcome) && outcome.sqlerrcode == 0)
		report_maintenance_failure(&outcome);
	/* before the answer, so that a caller's next query sees it (no WAL flush) */
	if (is_commit(&outcome))
		record_statistics(&outcome);
	finish_request(request, &outcome);
	remove_paths(&committed_paths);
	if (is_commit(&outcome) && outcome.sqlerrcode == 0)
		maintain_after_commit(outcome.sink_id);
}

/*
 * Periodic checkpoints (Flink's checkpoint interval, for SQL users): each
 * sink with a checkpoint_interval (or paimon_sink.checkpoint_interval) is
 * checkpointed for its own commit user that long after its last periodic
 * checkpoint ended; an empty one prepares and commits nothing.  The
 * schedule is read at start and with maintenance, which create_sink's and
 * drop_sink's commits wake.
 */
typedef struct ScheduledSink
{
	int32		sink_id;
	int64		interval_ms;
	TimestampTz next_due;
} ScheduledSink;

static ScheduledSink *schedule = NULL;
static int	schedule_count = 0;
static int32 *schedule_all = NULL;	/* every sink, for orphan removal */
static int	schedule_all_count = 0;
static TimestampTz last_maintenance = 0;

static void
read_schedule(void)
{
	TimestampTz now = GetCurrentTimestamp();
	ScheduledSink *next;
	int			count = 0;
	uint64		sinks;

	begin_work();
	execute("SELECT d.sink_id, d.checkpoint_interval FROM paimon_sink.sink_definition d "
			"ORDER BY d.sink_id", 0, NULL, NULL, SPI_OK_SELECT);
	sinks = SPI_processed;
	next = MemoryContextAllocZero(TopMemoryContext, sizeof(ScheduledSink) * Max(1, sinks));
	if (schedule_all != NULL)
		pfree(schedule_all);
	schedule_all = MemoryContextAllocZero(TopMemoryContext, sizeof(int32) * Max(1, sinks));
	schedule_all_count = (int) sinks;
	for (uint64 i = 0; i < sinks; i++)
	{
		HeapTuple	tuple = SPI_tuptable->vals[i];
		bool		isnull;
		int32		sink_id = DatumGetInt32(catalog_column(tuple, SPI_tuptable->tupdesc,
														   "sink_id", &isnull));
		Datum		interval = catalog_column(tuple, SPI_tuptable->tupdesc,
											  "checkpoint_interval", &isnull);
		int64		interval_ms = PaimonSinkCheckpointIntervalMs;

		if (!isnull)
		{
			/* as interval comparison counts: a month is 30 days */
			Interval   *given = DatumGetIntervalP(interval);
			int64		us = given->time + ((int64) given->day +
											(int64) given->month * DAYS_PER_MONTH) * USECS_PER_DAY;

			interval_ms = us <= 0 ? 0 : Max(1, us / 1000);
		}

		schedule_all[i] = sink_id;
		if (interval_ms <= 0)
			continue;
		next[count].sink_id = sink_id;
		next[count].interval_ms = interval_ms;
		next[count].next_due = TimestampTzPlusMilliseconds(now, interval_ms);
		/* a sink already scheduled keeps its time */
		for (int j = 0; j < schedule_count; j++)
			if (schedule[j].sink_id == sink_id)
				next[count].next_due = Min(schedule[j].next_due, next[count].next_due);
		count++;
	}
	end_work();
	if (schedule != NULL)
		pfree(schedule);
	schedule = next;
	schedule_count = count;
}

/* Milliseconds until the next periodic checkpoint is due (at most limit). */
static long
periodic_wait_ms(long limit)
{
	TimestampTz now = GetCurrentTimestamp();
	long		wait = limit;

	for (int i = 0; i < schedule_count; i++)
	{
		long		until = (long) ((schedule[i].next_due - now) / 1000);

		wait = Min(wait, Max(0, until));
	}
	return wait;
}

/*
 * Orphan files are removed on a schedule too (Paimon's remove_orphan_files
 * procedure, run by maintenance): every paimon_sink.orphan_removal_interval,
 * each sink's files older than paimon_sink.orphan_file_age that nothing
 * refers to, one sink per turn so that requests wait little.
 */
static TimestampTz orphans_removed_at = 0;
static int	orphan_turn = 0;

static bool
remove_orphans_due(void)
{
	CommitterRequest request;
	CommitterRequest outcome;

	if (PaimonSinkOrphanRemovalIntervalMs <= 0 || schedule_all_count == 0 ||
		!TimestampDifferenceExceeds(orphans_removed_at, GetCurrentTimestamp(),
									PaimonSinkOrphanRemovalIntervalMs))
		return false;
	memset(&request, 0, sizeof(request));
	request.kind = REQUEST_REMOVE_ORPHANS;
	request.sink_id = schedule_all[orphan_turn % schedule_all_count];
	request.older_than_ms = PaimonSinkOrphanFileAgeMs;
	run_request(&request, &outcome);
	if (++orphan_turn >= schedule_all_count)
	{
		orphan_turn = 0;
		orphans_removed_at = GetCurrentTimestamp();
	}
	return true;
}

/* Take one due periodic checkpoint; returns false when none is due. */
static bool
run_periodic_checkpoint(void)
{
	TimestampTz now = GetCurrentTimestamp();

	for (int i = 0; i < schedule_count; i++)
	{
		CommitterRequest request;
		CommitterRequest outcome;

		if (schedule[i].next_due > now)
			continue;
		memset(&request, 0, sizeof(request));
		request.kind = REQUEST_CHECKPOINT;
		request.sink_id = schedule[i].sink_id;
		memset(&tally, 0, sizeof(tally));
		run_request(&request, &outcome);
		remove_paths(&committed_paths);
		record_statistics(&outcome);
		if (outcome.sqlerrcode == 0)
			maintain_after_commit(outcome.sink_id);
		/* a failure is logged by run_request and tried again, not too often */
		schedule[i].next_due =
			TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										outcome.sqlerrcode == 0 ? schedule[i].interval_ms :
										Max(schedule[i].interval_ms, 10000));
		return true;
	}
	return false;
}

/*
 * Sleep until woken or the nap ends.  Maintenance is due after a whole nap
 * idle, or when woken without a request (drop_sink's commit wakes the
 * committer to remove files); not after a request, where it would take the
 * CPU from the requester, which the committer has just woken.
 */
static void
wait_for_work(bool ready, bool *maintenance_due)
{
	int			events;
	bool		queued = false;

	pgstat_report_activity(STATE_IDLE, NULL);
	events = WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
					   ready ? periodic_wait_ms(10000) : 100, PG_WAIT_EXTENSION);
	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	for (int i = 0; i < PAIMON_SINK_REQUESTS_PER_DATABASE; i++)
		queued = queued || MyDatabaseEntry->requests[i].state == REQUEST_QUEUED;
	LWLockRelease(PaimonSinkState->lock);
	/* periodic checkpoints wake it often: maintenance stays at its pace */
	if (!queued && ((events & WL_LATCH_SET) ||
					TimestampDifferenceExceeds(last_maintenance, GetCurrentTimestamp(), 10000)))
		*maintenance_due = true;
}

/*
 * Run a step of maintenance: a failure is logged, never ends the committer,
 * and the step is tried again at the next maintenance.
 */
static void
maintain(void (*step) (void))
{
	PG_TRY();
	{
		step();
	}
	PG_CATCH();
	{
		EmitErrorReport();
		FlushErrorState();
		AbortOutOfAnyTransaction();
	}
	PG_END_TRY();
	MemoryContextReset(committer_context);
}

/* The maintenance between requests. */
static void
maintain_catalog(void)
{
	recover_in_doubt();
	remove_dropped_sink_directories();
	read_schedule();
}

/* Start the writers that do not run, once the previous ones have left. */
static void
start_writers(void)
{
	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
	{
		WriterEntry *writer = shared_writer(MyDatabaseEntry, w);
		pid_t		pid;

		if (writer_handles[w] != NULL &&
			GetBackgroundWorkerPid(writer_handles[w], &pid) != BGWH_STOPPED)
			continue;
		if (writer->pid != 0)
			continue;			/* an earlier writer is still leaving */
		/* a writer that keeps failing is started once a second, not in a loop */
		if (writer_started_at[w] != 0 &&
			!TimestampDifferenceExceeds(writer_started_at[w], GetCurrentTimestamp(), 1000))
			continue;
		writer_started_at[w] = GetCurrentTimestamp();
		{
			/* handles outlive every request */
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			writer_handles[w] = writer_start(MyDatabaseIndex, w);
			MemoryContextSwitchTo(old);
		}
		if (writer_handles[w] == NULL)
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("could not start paimon_sink writer %d", w),
					 errhint("Raise max_worker_processes.")));
	}
}

typedef enum CatalogState
{
	CATALOG_MISSING,			/* the extension is not installed */
	CATALOG_OTHER_VERSION,		/* installed, in a version not the library's */
	CATALOG_READY
} CatalogState;

/* This database's name, for log lines written outside a transaction. */
static char database_name[NAMEDATALEN];

/*
 * The state of this database's catalog; *version gets its version, if any,
 * and database_name this database's name.
 */
static CatalogState
catalog_state(char *version, size_t size)
{
	char	   *installed;
	char	   *name;
	CatalogState state;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	name = get_database_name(MyDatabaseId);
	strlcpy(database_name, name ? name : "?", sizeof(database_name));
	installed = catalog_installed_version();
	if (installed == NULL)
		state = CATALOG_MISSING;
	else if (strcmp(installed, PAIMON_SINK_VERSION) == 0)
		state = CATALOG_READY;
	else
		state = CATALOG_OTHER_VERSION;
	strlcpy(version, installed ? installed : "", size);
	CommitTransactionCommand();
	return state;
}

/*
 * Wait while this database's catalog has another version than the library:
 * after a package upgrade and restart, the old catalog stays until ALTER
 * EXTENSION paimon_sink UPDATE, and no catalog table may be read or written
 * in the wrong layout meanwhile.  Prepared checkpoints, staged files and
 * in-doubt transactions wait with it; SQL calls are refused with a hint
 * (paimon_sink_require_ready).  Polls once a second: the update commits in
 * another session, which has no way to wake us after its commit.  Returns
 * the state it ends in: CATALOG_READY, or CATALOG_MISSING when the
 * extension was dropped.
 */
static CatalogState
await_catalog_version(void)
{
	char		version[NAMEDATALEN];
	bool		logged = false;
	CatalogState state;

	while ((state = catalog_state(version, sizeof(version))) == CATALOG_OTHER_VERSION)
	{
		if (!logged)
		{
			ereport(LOG,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("paimon_sink committer of database \"%s\" waits for ALTER EXTENSION paimon_sink UPDATE",
							database_name),
					 errdetail("The library is version %s; the extension in that database is version %s.",
							   PAIMON_SINK_VERSION, version),
					 errhint("Run ALTER EXTENSION paimon_sink UPDATE in that database. Staged rows, prepared checkpoints and in-doubt transactions are kept until then.")));
			logged = true;
		}
		/* calls are refused meanwhile; and writers may still be running */
		MyDatabaseEntry->committer_ready = false;
		pgstat_report_activity(STATE_IDLE, "waiting for ALTER EXTENSION paimon_sink UPDATE");
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}
	}
	if (logged && state == CATALOG_READY)
		ereport(LOG,
				(errmsg("paimon_sink committer of database \"%s\" resumes: its extension is version %s",
						database_name, version)));
	return state;
}

/* The committer ends when the extension is dropped; CREATE EXTENSION starts one again. */
static void
exit_without_extension(void)
{
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	MyDatabaseEntry->state = DATABASE_NO_EXTENSION;
	LWLockRelease(PaimonSinkState->lock);
	proc_exit(0);
}

static void
committer_exit(int code, Datum arg)
{
	/* a writer answering a barrier must not wait for us */
	for (int w = 0; barrier_queues != NULL && w < PaimonSinkWritersPerDatabase; w++)
		if (barrier_queues[w] != NULL)
			shm_mq_detach(barrier_queues[w]);
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	MyDatabaseEntry->committer_pid = 0;
	MyDatabaseEntry->committer_proc = NULL;
	MyDatabaseEntry->committer_ready = false;
	if (code != 0)
		MyDatabaseEntry->committer_failed_at = GetCurrentTimestamp();
	for (int i = 0; i < PAIMON_SINK_REQUESTS_PER_DATABASE; i++)
	{
		CommitterRequest *request = &MyDatabaseEntry->requests[i];

		if (request->state == REQUEST_RUNNING)
		{
			request->state = REQUEST_DONE;
			request->sqlerrcode = ERRCODE_CONNECTION_FAILURE;
			strlcpy(request->message, "the paimon_sink committer stopped while serving this request",
					sizeof(request->message));
			strlcpy(request->detail, "Its outcome is not known: it may or may not have completed.",
					sizeof(request->detail));
			strlcpy(request->hint, "Retry the call: prepare and commit are idempotent.",
					sizeof(request->hint));
		}
		else if (request->state == REQUEST_ABANDONED)
			request->state = REQUEST_FREE;
	}
	LWLockRelease(PaimonSinkState->lock);
	ConditionVariableBroadcast(&MyDatabaseEntry->request_done);
	shared_wake_launcher();
}

/* paimon_sink_committer_main is the entry point of a committer worker. */
void
paimon_sink_committer_main(Datum main_arg)
{
	bool		maintenance_due = false;	/* the start did it */

	MyDatabaseIndex = DatumGetInt32(main_arg);
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	MyDatabaseEntry = shared_database(MyDatabaseIndex);
	BackgroundWorkerInitializeConnectionByOid(MyDatabaseEntry->database_id, InvalidOid, 0);
	pgstat_report_appname("paimon_sink committer");
	/* over ALTER DATABASE/ROLE ... SET: its role, search_path, durability */
	security_pin_worker_settings();
	/* staged rows are in the database encoding, whatever ALTER DATABASE sets */
	SetConfigOption("client_encoding", GetDatabaseEncodingName(), PGC_SUSET, PGC_S_OVERRIDE);
	barrier_queues = MemoryContextAllocZero(TopMemoryContext,
											sizeof(shm_mq_handle *) * PaimonSinkWritersPerDatabase);
	committer_context = AllocSetContextCreate(TopMemoryContext, "paimon_sink committer",
											  ALLOCSET_DEFAULT_SIZES);
	writer_handles = MemoryContextAllocZero(TopMemoryContext,
											sizeof(BackgroundWorkerHandle *) * PaimonSinkWritersPerDatabase);
	writer_started_at = MemoryContextAllocZero(TopMemoryContext,
											   sizeof(TimestampTz) * PaimonSinkWritersPerDatabase);

	/*
	 * No extension: leave, unless a CREATE EXTENSION committed since we
	 * looked (its start_workers() ran before its commit, so we may have
	 * looked too early; its commit counts itself, and we look again).
	 */
	for (;;)
	{
		char		version[NAMEDATALEN];
		uint64		seen;
		bool		changed;

		LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
		seen = MyDatabaseEntry->extension_commits;
		LWLockRelease(PaimonSinkState->lock);
		if (catalog_state(version, sizeof(version)) != CATALOG_MISSING)
			break;
		LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
		changed = MyDatabaseEntry->extension_commits != seen;
		if (!changed && MyDatabaseEntry->state == DATABASE_WANTED)
			MyDatabaseEntry->state = DATABASE_NO_EXTENSION;
		LWLockRelease(PaimonSinkState->lock);
		if (!changed)
			proc_exit(0);
	}

	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	if (MyDatabaseEntry->committer_pid != 0)
	{
		LWLockRelease(PaimonSinkState->lock);
		proc_exit(0);			/* another committer serves this database */
	}
	MyDatabaseEntry->committer_pid = MyProcPid;
	MyDatabaseEntry->committer_proc = MyProc;
	MyDatabaseEntry->committer_incarnation++;
	LWLockRelease(PaimonSinkState->lock);
	before_shmem_exit(committer_exit, 0);

	/* registered first: the launcher must not start another one meanwhile */
	{
		char		version[NAMEDATALEN];

		if (catalog_state(version, sizeof(version)) == CATALOG_OTHER_VERSION)
			(void) finish_in_doubt(false);
	}
	if (await_catalog_version() == CATALOG_MISSING)
		exit_without_extension();

	pgstat_report_activity(STATE_RUNNING, "recovering");
	recover_in_doubt();
	remove_committed_files();
	remove_dropped_sink_directories();
	read_schedule();
	MemoryContextReset(committer_context);

	for (;;)
	{
		CommitterRequest *request;
		bool		ready = true;

		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			maintenance_due = true; /* paimon_sink.checkpoint_interval may be new */
		}
		if (MyDatabaseEntry->sinks_changed)
		{
			LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
			MyDatabaseEntry->sinks_changed = false;
			LWLockRelease(PaimonSinkState->lock);
			/* before a periodic checkpoint or orphan removal of a dropped sink */
			maintain(read_schedule);
			maintenance_due = true; /* dropped sinks' files */
		}
		start_writers();
		for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
			ready = ready && shared_writer(MyDatabaseEntry, w)->ready;
		MyDatabaseEntry->committer_ready = ready;

		if (ready && (request = next_request()) != NULL)
		{
			serve(request);
			continue;
		}
		if (ready && run_periodic_checkpoint())
			continue;
		if (ready && remove_orphans_due())
			continue;
		if (!maintenance_due)
		{
			wait_for_work(ready, &maintenance_due);
			continue;
		}
		maintenance_due = false;
		last_maintenance = GetCurrentTimestamp();
		if (await_catalog_version() == CATALOG_MISSING)
		{
			ereport(LOG, (errmsg("paimon_sink committer stops: the extension was dropped")));
			exit_without_extension();
		}
		if (ready)
			maintain(maintain_catalog);
		wait_for_work(ready, &maintenance_due);
	}
}
