/*-------------------------------------------------------------------------
 *
 * write_identity.h
 *	  Who a transaction writes as: write_as(), the session's settings, and
 *	  the fence epoch a call names (write_identity.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_WRITE_IDENTITY_H
#define PAIMON_SINK_WRITE_IDENTITY_H

#include "fmgr.h"

#include "metadata/catalog.h"

/* The identity a write carries: commit user, writer id and named fence epoch. */
typedef struct WriteIdentity
{
	const char *commit_user; /* NULL: the write names none (the sink's own) */
	int32 writer_id;
	int64 fence_epoch; /* FENCE_EPOCH_UNNAMED: none named */
} WriteIdentity;

extern WriteIdentity write_identity_of(const SinkInfo *sink);
extern int64 write_identity_call_epoch(FunctionCallInfo fcinfo, int index, const char *commit_user);

#endif /* PAIMON_SINK_WRITE_IDENTITY_H */
