/*-------------------------------------------------------------------------
 *
 * recovery.h
 *	  In-doubt transactions: which prepared transactions carrying our gid
 *	  prefix are provably the committer's own, and the view of them; the
 *	  committer's recovery of them and of the files left behind; recover().
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_RECOVERY_H
#define PAIMON_SINK_RECOVERY_H

#include "utils/timestamp.h"

#include "core/names.h"
#include "core/shared_state.h"

/* One prepared transaction of this database whose gid has our prefix. */
typedef struct PreparedGid
{
	char *gid;
	TimestampTz prepared;
	Oid owner;
	bool parsed;		  /* the gid reads as gid_build writes */
	GidParts parts;		  /* what it names, when parsed */
	bool ours;			  /* the committer's own: recovery finishes it */
	char *foreign_reason; /* why it is not ours (a sentence); NULL if ours */
	int64 last_committed; /* its commit user's mark when classified; -1: not known */
} PreparedGid;

extern List *recovery_prepared_gids(MemoryContext context);
extern bool recovery_gid_in_use(const char *gid, Oid *owner, Oid *database_id);
extern void recovery_report_foreign(List *gids);

/* in recovery.c: the committer's recovery */
extern bool RecoveryInDoubtPossible;
extern int recovery_finish_in_doubt(bool catalog_ready);
extern void recovery_remove_committed_files(void);
extern void recovery_remove_dropped_sinks(void);
extern void recovery_restore_group(int32 group_id, const char *commit_user, int64 restored,
								   int mode, CommitterRequest *request);
extern void recovery_restore(int32 sink_id, const char *commit_user, int64 restored, int mode,
							 CommitterRequest *request);

#endif /* PAIMON_SINK_RECOVERY_H */
