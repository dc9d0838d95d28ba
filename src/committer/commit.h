/*-------------------------------------------------------------------------
 *
 * commit.h
 *	  Committing prepared checkpoints, each as one snapshot inside PREPARE
 *	  TRANSACTION / COMMIT PREPARED, in ascending order.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_COMMIT_H
#define PAIMON_SINK_COMMIT_H

#include "committer/commit_removal.h"
#include "core/shared_state.h"
#include "metadata/metadata.h"

/* in commit.c: what the request being served committed, for commit_statistics */
extern CommitTally CommitTallies;
/* in commit.c: the request being served, whose answer lists the snapshots made (or NULL) */
extern CommitterRequest *CommitAnswer;

extern void commit_up_to(int32 sink_id, const char *commit_user, int64 checkpoint_id,
						 CommitterRequest *request);
extern void commit_pending(int32 sink_id, const char *commit_user, int64 checkpoint_id,
						   CommitterRequest *request, List *identifiers, CommitUserMarks marks);
extern void commit_allow_suspend(bool allowed);
extern bool commit_suspended(void);
extern void commit_resume(CommitterRequest *request);
extern void commit_forget_rest(void);
extern const char *commit_failure_hint(int sqlerrcode);

/* in commit_group.c: a sink group's checkpoints, committed as one */
extern List *commit_group_members(int32 group_id);
extern void commit_group_up_to(int32 group_id, const char *commit_user, int64 checkpoint_id,
							   CommitterRequest *request);
extern void commit_group_end_input(int32 group_id, const char *commit_user,
								   CommitterRequest *request);
extern bool commit_group_defers(const CommitterRequest *request);
extern void commit_group_record_failure(const CommitterRequest *outcome);

#endif /* PAIMON_SINK_COMMIT_H */
