/*-------------------------------------------------------------------------
 *
 * names.h
 *	  The names paimon_sink gives things: commit users, checkpoint ids, and
 *	  the gids of the prepared transactions its committer commits
 *	  checkpoints in.
 *
 * The gid of checkpoint N of commit user U of sink S in database D is
 * "paimon_sink:D:S:N:U~R", R a random suffix (Citus's recovery gids carry
 * their identity the same way); the gid of loader P's share of it is
 * "paimon_sink:D:S:N:U/P~R".  gid_build and gid_build_loader write them
 * and gid_parse reads them back; nothing else in the code spells the
 * format.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_NAMES_H
#define PAIMON_SINK_NAMES_H

#include "access/xact.h"

#include "core/constants.h"

/* What a gid of ours names. */
typedef struct GidParts
{
	Oid database_id;
	int32 sink_id;
	int64 checkpoint_id;
	int32 part; /* a loader's part of the checkpoint; -1: the checkpoint's own gid */
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
} GidParts;

/*
 * What a checkpoint id is given for (paimon_sink_check_checkpoint_id): the
 * ids a valid call can carry differ.
 */
typedef enum CheckpointIdUse
{
	CHECKPOINT_ID_PREPARE, /* prepare_commit: 1 .. END_INPUT - 1 */
	CHECKPOINT_ID_COMMIT,  /* commit, reject_failing_rows: 1 .. END_INPUT */
	CHECKPOINT_ID_RESTORE  /* recover, restart_job: 0 (no checkpoint yet) .. END_INPUT */
} CheckpointIdUse;

/* The prefix every gid of ours starts with, separator included. */
#define PAIMON_SINK_GID_START PAIMON_SINK_GID_PREFIX ":"

/* The most bytes of a name given as an argument that a message quotes. */
#define PAIMON_SINK_SHOWN_MAX 80

extern const char *paimon_sink_shown(const char *name);
extern bool paimon_sink_commit_user_is_valid(const char *commit_user, const char **problem);
extern void paimon_sink_check_commit_user(const char *commit_user);
extern void paimon_sink_check_checkpoint_id(int64 checkpoint_id, CheckpointIdUse use);
extern void gid_build(char *gid, Oid database_id, int32 sink_id, int64 checkpoint_id,
					  const char *commit_user);
extern void gid_build_loader(char *gid, Oid database_id, int32 sink_id, int64 checkpoint_id,
							 const char *commit_user, int part);
extern bool gid_has_prefix(const char *gid);
extern bool gid_parse(const char *gid, GidParts *parts);

#endif /* PAIMON_SINK_NAMES_H */
