/*-------------------------------------------------------------------------
 *
 * paimon_sink.h
 *	  Settings and names shared by every subsystem of paimon_sink.
 *
 * The design follows Apache Paimon's Flink sink (writers stage files,
 * a single committer commits checkpoints idempotently keyed by commit user
 * and commit identifier) on PostgreSQL's own machinery.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_H
#define PAIMON_SINK_H

/*
 * The library's version, from the control file's default_version (see the
 * Makefile): the only catalog version this library reads and writes.
 */
#ifndef PAIMON_SINK_VERSION
#error "PAIMON_SINK_VERSION must be defined by the build (see the Makefile)"
#endif

/* Commit users: at most this many characters of [A-Za-z0-9._:-]. */
#define PAIMON_SINK_COMMIT_USER_MAXLEN 64

/* Prefix of the gid of every prepared transaction of ours. */
#define PAIMON_SINK_GID_PREFIX "paimon_sink"

/* Folder of staged files, relative to the data directory. */
#define PAIMON_SINK_DIRECTORY "pg_paimon_sink"

/* Paimon's END_INPUT commit identifier. */
#define PAIMON_SINK_END_INPUT_CHECKPOINT INT64CONST(9223372036854775807)

/* Settings (see paimon_sink.c for their descriptions). */
extern int	PaimonSinkWritersPerDatabase;
extern int	PaimonSinkMaxDatabases;
extern int	PaimonSinkQueueSizeKB;
extern int	PaimonSinkQueuesPerWriter;
extern int	PaimonSinkGroupFsyncDelayMs;
extern int	PaimonSinkHandoffTimeoutMs;
extern int	PaimonSinkHandoffBufferKB;
extern int	PaimonSinkCheckpointIntervalMs;
extern int	PaimonSinkSnapshotsRetained;
extern int	PaimonSinkSnapshotRetentionMs;
extern int	PaimonSinkOrphanRemovalIntervalMs;
extern int	PaimonSinkOrphanFileAgeMs;
extern char *PaimonSinkCommitUser;
extern int	PaimonSinkWriterId;

/* True once _PG_init ran from shared_preload_libraries. */
extern bool PaimonSinkPreloaded;

extern void paimon_sink_require_preload(void);
extern void paimon_sink_require_ready(void);

#endif							/* PAIMON_SINK_H */
