/*-------------------------------------------------------------------------
 *
 * constants.h
 *	  Names and limits shared by every subsystem of paimon_sink.
 *
 * The design follows Apache Paimon's Flink sink (writers stage files,
 * a single committer commits checkpoints idempotently keyed by commit user
 * and commit identifier) on PostgreSQL's own machinery.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_CONSTANTS_H
#define PAIMON_SINK_CONSTANTS_H

/* Commit users: at most this many characters of [A-Za-z0-9._:-]. */
#define PAIMON_SINK_COMMIT_USER_MAXLEN 64

/* Prefix of the gid of every prepared transaction of ours. */
#define PAIMON_SINK_GID_PREFIX "paimon_sink"

/* Folder of staged files, relative to the data directory. */
#define PAIMON_SINK_DIRECTORY "pg_paimon_sink"

/* Paimon's END_INPUT commit identifier. */
#define PAIMON_SINK_END_INPUT_CHECKPOINT INT64CONST(9223372036854775807)

#endif /* PAIMON_SINK_CONSTANTS_H */
