/*-------------------------------------------------------------------------
 *
 * prepare.h
 *	  Preparing checkpoints: the barrier and its committables recorded
 *	  under the commit user's marks; checkpoint() and end_input().
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_PREPARE_H
#define PAIMON_SINK_PREPARE_H

#include "core/shared_state.h"

/* in prepare.c */
extern int prepare_checkpoint(int32 sink_id, const char *commit_user, int64 checkpoint_id,
							  int32 writer_id, const char *properties, uint64 properties_epoch,
							  bool record_empty, CommitterRequest *warn);
extern void prepare_and_commit(int32 sink_id, CommitterRequest *request);
extern void prepare_end_input(int32 sink_id, const char *commit_user, CommitterRequest *request);

#endif /* PAIMON_SINK_PREPARE_H */
