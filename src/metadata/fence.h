/*-------------------------------------------------------------------------
 *
 * fence.h
 *	  The fence epoch a write or a call names, checked against its commit
 *	  user's (fence.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_FENCE_H
#define PAIMON_SINK_FENCE_H

/* A write or call that names no fence epoch. */
#define FENCE_EPOCH_UNNAMED (-1)

extern void fence_check_named(const char *sink_name, const char *commit_user, uint64 current,
							  bool epoch_required, int64 named, const char *what,
							  const char *nothing_done);

#endif /* PAIMON_SINK_FENCE_H */
