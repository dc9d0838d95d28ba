/*-------------------------------------------------------------------------
 *
 * stream_lock.h
 *	  The lock that orders the transactions writing a commit user's rows
 *	  into a sink against end_input() of that commit user.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_STREAM_LOCK_H
#define PAIMON_SINK_STREAM_LOCK_H

extern void stream_lock_for_write(int32 sink_id, const char *commit_user);
extern void stream_lock_for_end_input(int32 sink_id, const char *sink_name,
									  const char *commit_user);

#endif /* PAIMON_SINK_STREAM_LOCK_H */
