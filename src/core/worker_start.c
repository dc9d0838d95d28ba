/*-------------------------------------------------------------------------
 *
 * worker_start.c
 *	  Every dynamic worker of the library registered, by its entry point's
 *	  name: the committer (started by the launcher), the writers and the
 *	  loaders (started by the committer).  Apart from launcher.c so that
 *	  the committer, below the launcher, starts its workers without
 *	  calling up into it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "postmaster/bgworker.h"

#include "core/worker_start.h"

/*
 * worker_start registers a dynamic worker of this library by its
 * entry point's name (as the logical replication launcher does): it
 * connects to a database, the caller is notified when it starts and stops
 * (so its handle works), and the postmaster never restarts it (its starter
 * does that).  NULL when no worker slot is free.
 */
static BackgroundWorkerHandle *
worker_start(const char *function, const char *type, const char *name, Datum main_arg)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_RecoveryFinished;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	strlcpy(worker.bgw_library_name, "paimon_sink", BGW_MAXLEN);
	strlcpy(worker.bgw_function_name, function, BGW_MAXLEN);
	strlcpy(worker.bgw_name, name, BGW_MAXLEN);
	strlcpy(worker.bgw_type, type, BGW_MAXLEN);
	worker.bgw_main_arg = main_arg;
	worker.bgw_notify_pid = MyProcPid;
	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
		return NULL;
	return handle;
}

/*
 * worker_start_committer registers the committer of a database entry
 * (paimon_sink_committer_main); the launcher calls it, and is told when
 * the committer stops.  NULL when no worker slot is free.
 */
BackgroundWorkerHandle *
worker_start_committer(int database_index)
{
	return worker_start("paimon_sink_committer_main", "paimon_sink committer",
						"paimon_sink committer", Int32GetDatum(database_index));
}

/*
 * worker_start_writer registers writer writer_index of a database entry
 * (paimon_sink_writer_main).  The committer calls it: the writer's stop is
 * told to the committer, which restarts it and attaches barrier reply
 * queues with the handle.  NULL when no worker slot is free.
 */
BackgroundWorkerHandle *
worker_start_writer(int database_index, int writer_index)
{
	char name[BGW_MAXLEN];

	snprintf(name, sizeof(name), "paimon_sink writer %d", writer_index);
	return worker_start("paimon_sink_writer_main", "paimon_sink writer", name,
						Int32GetDatum((database_index << 16) | writer_index));
}

/*
 * worker_start_loader registers loader loader_index of a database entry
 * (paimon_sink_loader_main), whose assignment the committer has written
 * into the entry.  The committer calls it, is told when the loader starts
 * and stops, and waits on the handle.  NULL when no worker slot is free.
 */
BackgroundWorkerHandle *
worker_start_loader(int database_index, int loader_index)
{
	char name[BGW_MAXLEN];

	snprintf(name, sizeof(name), "paimon_sink loader %d", loader_index);
	return worker_start("paimon_sink_loader_main", "paimon_sink loader", name,
						Int32GetDatum((database_index << 16) | loader_index));
}
