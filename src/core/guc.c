/*-------------------------------------------------------------------------
 *
 * guc.c
 *	  Every setting of paimon_sink, defined in one place with its check and
 *	  assign hooks.
 *
 * The settings a session writes with (its commit user, writer id and
 * hand-off buffer) exist wherever the library is loaded; the others only
 * when it is preloaded, which is also when the prefix paimon_sink is
 * reserved.  Sizes are PGC_POSTMASTER, intervals PGC_SIGHUP.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>
#include <limits.h>

#include "miscadmin.h"
#include "utils/guc.h"

#include "core/guc.h"
#include "core/names.h"

int PaimonSinkWritersPerDatabase = 2;
int PaimonSinkMaxDatabases = 4;
int PaimonSinkMaxOpenStats = 4096;
int PaimonSinkQueueSizeKB = 256;
int PaimonSinkQueuesPerWriter = 16;
int PaimonSinkGroupFsyncDelayMs = 100;
int PaimonSinkHandoffTimeoutMs = 30000;
int PaimonSinkFencedWriterKillDelayMs = -1;
int PaimonSinkCommitterTimeoutMs = 60000;
int PaimonSinkCheckpointIntervalMs = 0;
int PaimonSinkSnapshotsRetained = 100;
int PaimonSinkSnapshotRetentionMs = 600000;
int PaimonSinkOrphanRemovalIntervalMs = 3600000;
int PaimonSinkOrphanFileAgeMs = 86400000;
int PaimonSinkHandoffBufferKB = 8192;
char *PaimonSinkCommitUser = NULL;
char *PaimonSinkFenceEpochSetting = NULL;
int PaimonSinkWriterId = 0;
int PaimonSinkLoadersPerDatabase = 2;
int PaimonSinkParallelLoadRows = 100000;
bool PaimonSinkNonatomicParallelLoad = false;
bool PaimonSinkLoadAhead = true;
int PaimonSinkLoadAheadMaxWaitMs = 60000;
int PaimonSinkLogCommitMinDurationMs = 0;

/*
 * check_commit_user_setting accepts an empty commit user (the sink's own)
 * or a valid one, and says what is wrong with any other.
 */
static bool
check_commit_user_setting(char **newval, void **extra, GucSource source)
{
	const char *problem;

	if (*newval == NULL || (*newval)[0] == '\0')
		return true;
	if (!paimon_sink_commit_user_is_valid(*newval, &problem))
	{
		GUC_check_errdetail("%s", problem);
		return false;
	}
	return true;
}

/* The hooks _PG_init registered; none until then. */
static const GucHooks *guc_hooks = NULL;

/*
 * guc_set_hooks registers the functions the settings call in higher
 * layers (GucHooks); the struct must outlive the process (a static).
 */
void
guc_set_hooks(const GucHooks *hooks)
{
	guc_hooks = hooks;
}

/*
 * assign_commit_user_setting makes a session that sets the commit user
 * (again) join its current fence epoch: the session's part
 * (fdw_session.c's fdw_forget_fence_epochs), through the hook.
 */
static void
assign_commit_user_setting(const char *newval, void *extra)
{
	if (guc_hooks != NULL && guc_hooks->commit_user_assigned != NULL)
		guc_hooks->commit_user_assigned();
}

/*
 * check_fence_epoch_setting accepts an empty fence epoch (none named) or a
 * whole number from 0 to 9223372036854775807.
 */
static bool
check_fence_epoch_setting(char **newval, void **extra, GucSource source)
{
	int64 epoch;
	char *end;

	if (*newval == NULL || (*newval)[0] == '\0')
		return true;
	errno = 0;
	epoch = (int64) strtoll(*newval, &end, 10);
	if (errno != 0 || *end != '\0' || end == *newval || epoch < 0 ||
		!isdigit((unsigned char) (*newval)[0]))
	{
		GUC_check_errdetail("A fence epoch is a whole number from 0 to 9223372036854775807, as "
							"restart_job() returns it, or empty for none.");
		return false;
	}
	return true;
}

/*
 * guc_define_settings defines the session settings, and when the library
 * is being preloaded the server's too, then reserves the prefix.
 */
void
guc_define_settings(void)
{
	DefineCustomStringVariable(
		"paimon_sink.commit_user", "Commit user of the rows this session writes into sinks.",
		"Empty means the sink's own commit user. An external job on a direct connection sets its "
		"stable identity; setting it joins the current fence epoch of a commit user that is not a "
		"job's (a job's names it: paimon_sink.fence_epoch or write_as()).",
		&PaimonSinkCommitUser, "", PGC_USERSET, 0, check_commit_user_setting,
		assign_commit_user_setting, NULL);
	DefineCustomStringVariable(
		"paimon_sink.fence_epoch",
		"Fence epoch of the job attempt this session writes for (direct connections only).",
		"Empty names none. A job's commit user (restart_job()) takes only writes and calls that "
		"name its current fence epoch; through a pooler in transaction mode, name it per "
		"transaction with paimon_sink.write_as() instead.",
		&PaimonSinkFenceEpochSetting, "", PGC_USERSET, 0, check_fence_epoch_setting, NULL, NULL);
	DefineCustomIntVariable(
		"paimon_sink.handoff_buffer_size",
		"Rows a transaction keeps in memory before it streams them to the writers.",
		"Beyond this size a transaction hands its rows to the writers while it runs; inside a "
		"savepoint they wait in a temporary file.",
		&PaimonSinkHandoffBufferKB, 8192, 64, INT_MAX / 1024, PGC_USERSET, GUC_UNIT_KB, NULL, NULL,
		NULL);
	DefineCustomIntVariable("paimon_sink.writer_id",
							"Writer id (subtask index) of the rows this session writes into sinks.",
							NULL, &PaimonSinkWriterId, 0, 0, INT_MAX, PGC_USERSET, 0, NULL, NULL,
							NULL);

	if (!process_shared_preload_libraries_in_progress)
		return;

	DefineCustomIntVariable(
		"paimon_sink.writers_per_database", "Number of writer workers per database with sinks.",
		NULL, &PaimonSinkWritersPerDatabase, 2, 1, 64, PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable(
		"paimon_sink.loaders_per_database",
		"Number of loader workers per database, which load large checkpoints off the committer.",
		"A large checkpoint is loaded by one loader in the checkpoint's own prepared transaction; "
		"with paimon_sink.nonatomic_parallel_load, by all of them at once, each share in a "
		"prepared transaction of its own. 0: the committer loads every checkpoint. Each needs a "
		"worker slot and a prepared transaction.",
		&PaimonSinkLoadersPerDatabase, 2, 0, PAIMON_SINK_MAX_LOADERS, PGC_POSTMASTER, 0, NULL, NULL,
		NULL);
	DefineCustomIntVariable(
		"paimon_sink.max_databases", "Number of databases that can use sinks at once.", NULL,
		&PaimonSinkMaxDatabases, 4, 1, 1024, PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable(
		"paimon_sink.max_open_stats",
		"Number of (writer, sink, commit user) whose rows in open staged files sink_stats counts.",
		"Each writer counts the rows and bytes it staged and no checkpoint took yet per sink and "
		"commit user in a shared table of this many entries (about 150 bytes each). When it is "
		"full, a writer logs a warning and sink_stats shows its database's open_* columns as "
		"NULL until the counts fit again.",
		&PaimonSinkMaxOpenStats, 4096, 1, 1024 * 1024, PGC_POSTMASTER, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("paimon_sink.queue_size",
							"Size of each hand-off queue from a backend to a writer.", NULL,
							&PaimonSinkQueueSizeKB, 256, 16, 1024 * 1024, PGC_POSTMASTER,
							GUC_UNIT_KB, NULL, NULL, NULL);
	DefineCustomIntVariable("paimon_sink.queues_per_writer",
							"Number of transactions that can hand rows to one writer at once.",
							NULL, &PaimonSinkQueuesPerWriter, 16, 1, 1024, PGC_POSTMASTER, 0, NULL,
							NULL, NULL);
	DefineCustomIntVariable(
		"paimon_sink.group_fsync_delay",
		"Longest time a writer keeps the staged files it wrote unsynced (its sync window).",
		"Hand-offs are acknowledged without an fsync; the writer fsyncs its files once this "
		"long after its first write, and a PostgreSQL checkpoint waits for that.",
		&PaimonSinkGroupFsyncDelayMs, 100, 0, 1000, PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable(
		"paimon_sink.handoff_timeout",
		"Longest a writer may show no progress, and longest wait for the workers to serve.",
		"A writer that shows no progress for this long does not answer: waits on it end with "
		"SQLSTATE 57014 and the committer fences and restarts it. Also the longest wait for a "
		"writer or the committer to start serving, or for a free hand-off queue.",
		&PaimonSinkHandoffTimeoutMs, 30000, 100, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL,
		NULL);
	DefineCustomIntVariable(
		"paimon_sink.committer_timeout",
		"Longest a session waits on its database's committer while it shows no progress.",
		"A session waiting for a request slot or for the answer of prepare_commit, commit, "
		"checkpoint, recover and the other calls served by the committer gives up with SQLSTATE "
		"57014 once the committer has shown no progress (or none served) for this long. One long "
		"statement of the committer (an upsert's MERGE, a lock wait) shows none until it ends.",
		&PaimonSinkCommitterTimeoutMs, 60000, 100, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL,
		NULL);
	DefineCustomIntVariable(
		"paimon_sink.fenced_writer_kill_delay",
		"Time after which the committer sends SIGKILL to a fenced writer that has not left.",
		"The postmaster then restarts the whole cluster (every session ends, crash recovery "
		"runs). -1 never sends it: the fenced process leaves on its SIGTERM once it runs again.",
		&PaimonSinkFencedWriterKillDelayMs, -1, -1, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL,
		NULL);
	DefineCustomIntVariable(
		"paimon_sink.checkpoint_interval",
		"Interval of the periodic checkpoints of sinks created without a checkpoint_interval.",
		"0 turns them off: such sinks commit only when checkpoint() or commit() is called.",
		&PaimonSinkCheckpointIntervalMs, 0, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable(
		"paimon_sink.snapshots_retained",
		"Newest snapshots of each sink that the committer never expires.",
		"Older snapshots past paimon_sink.snapshot_retention are forgotten (never a commit "
		"user's last), off the commit path: at most a second or 64 commits after a commit.",
		&PaimonSinkSnapshotsRetained, 100, 1, INT_MAX, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable("paimon_sink.snapshot_retention",
							"Age below which the committer keeps every snapshot.", NULL,
							&PaimonSinkSnapshotRetentionMs, 600000, 0, INT_MAX, PGC_SIGHUP,
							GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable("paimon_sink.orphan_removal_interval",
							"Interval at which the committer removes orphan files of every sink.",
							"0 turns it off; remove_orphan_files() still works.",
							&PaimonSinkOrphanRemovalIntervalMs, 3600000, 0, INT_MAX, PGC_SIGHUP,
							GUC_UNIT_MS, NULL, NULL, NULL);
	DefineCustomIntVariable(
		"paimon_sink.orphan_file_age",
		"Age a staged file nothing refers to must reach before scheduled removal takes it.", NULL,
		&PaimonSinkOrphanFileAgeMs, 86400000, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL,
		NULL);
	DefineCustomIntVariable(
		"paimon_sink.parallel_load_rows",
		"Rows from which an append sink's checkpoint is loaded by a loader worker.",
		"A checkpoint with at least this many rows is loaded off the committer, which serves "
		"other sinks meanwhile. 0: never.",
		&PaimonSinkParallelLoadRows, 100000, 0, INT_MAX, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable(
		"paimon_sink.nonatomic_parallel_load",
		"Splits a large checkpoint over every loader, each share committed apart: readers may see "
		"part of it.",
		"Off (the default): a large checkpoint is loaded by one loader in the checkpoint's own "
		"prepared transaction and becomes visible at one instant to queries, standbys and logical "
		"decoding. On: paimon_sink.loaders_per_database loaders load it at once, each share in a "
		"prepared transaction of its own, committed one after another once the checkpoint is "
		"decided; a reader, a standby or a logical decoding consumer can see some shares without "
		"the others.",
		&PaimonSinkNonatomicParallelLoad, false, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable(
		"paimon_sink.load_ahead",
		"Loads a streamed transaction's rows into an append sink's target while it runs.",
		"A loader loads the rows in an open transaction, which the checkpoint that takes them "
		"finishes and prepares. Off: nothing is held between checkpoints.",
		&PaimonSinkLoadAhead, true, PGC_SIGHUP, 0, NULL, NULL, NULL);
	DefineCustomIntVariable(
		"paimon_sink.load_ahead_max_wait",
		"How long a loader that loaded ahead waits for the checkpoint that takes its rows.",
		"Counted from the streamed transaction's commit; then it rolls back and the checkpoint "
		"loads the rows the usual way.",
		&PaimonSinkLoadAheadMaxWaitMs, 60000, 0, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL,
		NULL);
	DefineCustomIntVariable(
		"paimon_sink.log_commit_min_duration",
		"Commits that took at least this long are logged, one line each.",
		"-1 logs no commit, 0 every commit (as log_autovacuum_min_duration does for autovacuum). "
		"A failed commit is always logged.",
		&PaimonSinkLogCommitMinDurationMs, 0, -1, INT_MAX, PGC_SIGHUP, GUC_UNIT_MS, NULL, NULL,
		NULL);
	MarkGUCPrefixReserved("paimon_sink");
}
