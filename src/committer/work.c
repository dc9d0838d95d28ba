/*-------------------------------------------------------------------------
 *
 * work.c
 *	  The committer process's state and its units of work.
 *
 * A committer serves one database: the state here says which, holds the
 * memory a request uses (reset once it is answered) and the handles of the
 * writers it started.  Every subsystem of the committer (prepare, commit,
 * recovery, maintenance) runs its catalog statements through the same few
 * helpers: a transaction with SPI connected and a snapshot, one planned
 * statement whose result count is checked, and "log and carry on" for
 * the steps whose failure must not stop the committer.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "tcop/tcopprot.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "committer/work.h"
#include "core/guc.h"
#include "core/worker_start.h"
#include "ipc/liveness.h"

MemoryContext CommitterContext;
char CommitterDatabaseName[NAMEDATALEN] = "?";

/*
 * A writer that cannot get a worker slot is logged once its starts have
 * failed this long (probes of other databases hold slots for a moment as
 * the server starts), and then at most once a minute.
 */
#define WRITER_START_QUIET_MS 10000
#define WRITER_START_LOG_INTERVAL_MS 60000

/* The writers this committer started, and when it started each last. */
static BackgroundWorkerHandle **writer_handles;
static TimestampTz *writer_started_at;

/* Since when writer starts find no free worker slot (0: they do not), and when that was logged. */
static TimestampTz writer_start_failing_since = 0;
static TimestampTz writer_start_logged_at = 0;

/* work_init sets the committer's state for the database entry it serves. */
void
work_init(int database_index)
{
	MyDatabaseIndex = database_index;
	MyDatabaseEntry = shared_database(database_index);
	CommitterContext =
		AllocSetContextCreate(TopMemoryContext, "paimon_sink committer", ALLOCSET_DEFAULT_SIZES);
	writer_handles = MemoryContextAllocZero(TopMemoryContext, sizeof(BackgroundWorkerHandle *) *
																  PaimonSinkWritersPerDatabase);
	writer_started_at = MemoryContextAllocZero(TopMemoryContext,
											   sizeof(TimestampTz) * PaimonSinkWritersPerDatabase);
}

/*
 * work_start_writers starts the writers that do not run, once the previous
 * ones have left.  worker_start.c registers them (worker_start_writer);
 * this committer is told when one stops, and keeps the handle for the
 * barrier's reply queue.
 */
void
work_start_writers(void)
{
	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
	{
		WriterEntry *writer = shared_writer(MyDatabaseEntry, w);
		pid_t pid;

		if (writer_handles[w] != NULL &&
			GetBackgroundWorkerPid(writer_handles[w], &pid) != BGWH_STOPPED)
			continue;
		SpinLockAcquire(&writer->mutex);
		pid = writer->pid;
		SpinLockRelease(&writer->mutex);
		if (pid != 0)
			continue; /* an earlier writer is still leaving */
		/* a writer that keeps failing is started once a second, not in a loop */
		if (writer_started_at[w] != 0 &&
			!TimestampDifferenceExceeds(writer_started_at[w], GetCurrentTimestamp(), 1000))
			continue;
		writer_started_at[w] = GetCurrentTimestamp();
		if (writer_handles[w] != NULL)
			pfree(writer_handles[w]);
		{
			/* handles outlive every request */
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			writer_handles[w] = worker_start_writer(MyDatabaseIndex, w);
			MemoryContextSwitchTo(old);
		}
		/*
		 * The budget kept room for it, so another kind of worker (parallel
		 * query, logical replication, a loader) holds the slot for a
		 * while: tried again each second, logged once the starts have
		 * failed for WRITER_START_QUIET_MS, then at most once a minute.
		 */
		if (writer_handles[w] != NULL)
		{
			writer_start_failing_since = 0;
			continue;
		}
		if (writer_start_failing_since == 0)
			writer_start_failing_since = writer_started_at[w];
		if (TimestampDifferenceExceeds(writer_start_failing_since, writer_started_at[w],
									   WRITER_START_QUIET_MS) &&
			(writer_start_logged_at == 0 ||
			 TimestampDifferenceExceeds(writer_start_logged_at, writer_started_at[w],
										WRITER_START_LOG_INTERVAL_MS)))
		{
			writer_start_logged_at = writer_started_at[w];
			ereport(WARNING,
					(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
					 errmsg("could not start paimon_sink writer %d of database \"%s\"", w,
							CommitterDatabaseName),
					 errdetail("No background worker slot has been free for %d s: other "
							   "background workers (parallel query, logical replication, loaders) "
							   "hold the slots the worker budget leaves. It is tried again every "
							   "second, and logged at most once a minute.",
							   WRITER_START_QUIET_MS / 1000),
					 errhint("Raise max_worker_processes, or lower max_parallel_workers.")));
		}
	}
}

/*
 * work_writer_handle returns the handle of writer index if this committer
 * started the writer that runs now, else NULL (a writer of an earlier
 * committer that has not left yet).
 */
BackgroundWorkerHandle *
work_writer_handle(int index)
{
	return writer_handles[index];
}

/*
 * work_writers_ready tells whether every writer has adopted its files and
 * serves, or is fenced with its process not gone yet (liveness.c): the
 * database goes on without such a writer, and a barrier refuses it.
 */
bool
work_writers_ready(void)
{
	bool ready = true;

	for (int w = 0; w < PaimonSinkWritersPerDatabase; w++)
		ready = ready && liveness_writer_serves(shared_writer(MyDatabaseEntry, w));
	return ready;
}

/* work_begin starts a transaction with SPI connected and a snapshot. */
void
work_begin(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
}

/* work_end commits what work_begin started and returns to the request's memory. */
void
work_end(void)
{
	PopActiveSnapshot();
	SPI_finish();
	CommitTransactionCommand();
	MemoryContextSwitchTo(CommitterContext);
}

/*
 * work_require_sink reads the sink a request names (within a transaction)
 * into the request's memory, so that it outlives SPI_finish; an error when
 * it was dropped meanwhile.
 */
SinkInfo *
work_require_sink(int32 sink_id)
{
	MemoryContext old = MemoryContextSwitchTo(CommitterContext);
	SinkInfo *sink = palloc0(sizeof(SinkInfo));
	bool found = metadata_sink_by_id(sink_id, sink);

	MemoryContextSwitchTo(old);
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT), errmsg("sink %d does not exist", sink_id),
				 errdetail("It was dropped while the request waited.")));
	return sink;
}

/*
 * work_try runs step(arg), the "log and carry on" of the committer: an
 * error aborts whatever transaction step left open and either goes to the
 * server log or, when error is not NULL, to *error (copied into
 * TopMemoryContext, for the caller to report and free).  The committer
 * goes on either way; the step is tried again on its next turn.  Returns
 * whether step succeeded.
 */
bool
work_try(void (*step)(void *arg), void *arg, ErrorData **error)
{
	MemoryContext old = CurrentMemoryContext;
	bool succeeded = true;

	PG_TRY();
	{
		step(arg);
	}
	PG_CATCH();
	{
		succeeded = false;
		if (error != NULL)
		{
			MemoryContextSwitchTo(TopMemoryContext);
			*error = CopyErrorData();
		}
		else
			EmitErrorReport();
		FlushErrorState();
		AbortOutOfAnyTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	return succeeded;
}
