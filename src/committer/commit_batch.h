/*-------------------------------------------------------------------------
 *
 * commit_batch.h
 *	  The due periodic checkpoints of a database committed together: one
 *	  barrier round, one recording transaction and one prepared
 *	  transaction for many sinks, each member with its own snapshot.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_COMMIT_BATCH_H
#define PAIMON_SINK_COMMIT_BATCH_H

#include "core/shared_state.h"
#include "metadata/metadata.h"

/* What became of one member of a batch. */
typedef enum BatchOutcome
{
	BATCH_NOT_TAKEN = 0, /* left out, still due: another owner's sink */
	BATCH_EMPTY,		 /* nothing to commit: its periodic checkpoint is done */
	BATCH_COMMITTED,	 /* committed in the batch's prepared transaction */
	BATCH_ALONE			 /* to be committed on its own (serve.c) */
} BatchOutcome;

/* One sink of a batch of periodic checkpoints. */
typedef struct BatchMember
{
	int32 sink_id;
	BatchOutcome outcome;
	/* the sink's own commit user, and the checkpoint recorded for it (0: none) */
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
	int64 checkpoint_id;
	int64 rows; /* the rows its writers reported */
	int committables;
	CommitTally tally; /* what it committed in the batch */
	int sqlerrcode;	   /* of its commit on its own (serve.c), 0: none or done */
} BatchMember;

/* in commit_batch.c */
extern void commit_batch_periodic(BatchMember *members, int count);

#endif /* PAIMON_SINK_COMMIT_BATCH_H */
