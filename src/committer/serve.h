/*-------------------------------------------------------------------------
 *
 * serve.h
 *	  Serving one committer request (a requester's, or a periodic
 *	  checkpoint): run with its error caught whole, answered, or held while
 *	  its loaders load a large checkpoint and answered once they are done.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_SERVE_H
#define PAIMON_SINK_SERVE_H

#include "committer/commit_batch.h"
#include "core/shared_state.h"

/* in serve.c */
extern void serve_request(CommitterRequest *request, int slot, uint64 riders);
extern bool serve_periodic(CommitterRequest *request);
extern void serve_periodic_batch(BatchMember *members, int count);
extern bool serve_holds(void);
extern bool serve_resume(void);

#endif /* PAIMON_SINK_SERVE_H */
