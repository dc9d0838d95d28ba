/*-------------------------------------------------------------------------
 *
 * guc.h
 *	  The settings of paimon_sink (guc.c defines them all).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_GUC_H
#define PAIMON_SINK_GUC_H

/* The most loader workers a database may have (paimon_sink.loaders_per_database). */
#define PAIMON_SINK_MAX_LOADERS 64

/* Sizes, fixed at server start (PGC_POSTMASTER). */
extern int PaimonSinkWritersPerDatabase;
extern int PaimonSinkMaxDatabases;
extern int PaimonSinkMaxOpenStats;
extern int PaimonSinkQueueSizeKB;
extern int PaimonSinkQueuesPerWriter;
extern int PaimonSinkLoadersPerDatabase;

/* Intervals and delays of the workers (PGC_SIGHUP). */
extern int PaimonSinkGroupFsyncDelayMs;
extern int PaimonSinkHandoffTimeoutMs;
extern int PaimonSinkCommitterTimeoutMs;
extern int PaimonSinkFencedWriterKillDelayMs;
extern int PaimonSinkCheckpointIntervalMs;
extern int PaimonSinkSnapshotsRetained;
extern int PaimonSinkSnapshotRetentionMs;
extern int PaimonSinkLogCommitMinDurationMs;
extern int PaimonSinkOrphanRemovalIntervalMs;
extern int PaimonSinkOrphanFileAgeMs;
extern int PaimonSinkParallelLoadRows;
extern bool PaimonSinkNonatomicParallelLoad;
extern bool PaimonSinkLoadAhead;
extern int PaimonSinkLoadAheadMaxWaitMs;

/* What a session writes with (PGC_USERSET). */
extern int PaimonSinkHandoffBufferKB;
extern char *PaimonSinkCommitUser;
extern char *PaimonSinkFenceEpochSetting;
extern int PaimonSinkWriterId;

/*
 * GucHooks: what a setting's assign hook calls in a higher layer, which the
 * settings may not include (HOUSE.md: dependencies point one way).  As
 * TimescaleDB's bgw/timer.h, a struct of function pointers: _PG_init
 * registers it (guc_set_hooks) before it defines the settings; a NULL
 * member is not called.
 */
typedef struct GucHooks
{
	/* paimon_sink.commit_user was assigned (set, reset or restored) */
	void (*commit_user_assigned)(void);
} GucHooks;

extern void guc_set_hooks(const GucHooks *hooks);
extern void guc_define_settings(void);

#endif /* PAIMON_SINK_GUC_H */
