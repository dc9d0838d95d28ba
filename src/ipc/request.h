/*-------------------------------------------------------------------------
 *
 * request.h
 *	  The committer's request queue, both ends: a backend submits a
 *	  request and waits; the committer takes the oldest, serves it and
 *	  answers.  A failure comes back as the committer's whole ErrorData.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_REQUEST_H
#define PAIMON_SINK_REQUEST_H

#include "core/shared_state.h"

/* in request.c: the requester's end */
extern void committer_submit(int database_index, CommitterRequest *request);

/* in request.c: the committer's end */
extern void request_check(const CommitterRequest *request);
extern bool request_next(DatabaseEntry *db, CommitterRequest *copy, int *slot, uint64 *riders);
extern void request_finish(DatabaseEntry *db, int slot, uint64 riders,
						   const CommitterRequest *outcome);
extern void request_defer(DatabaseEntry *db, int slot, uint64 riders, int32 sink_id);
extern void request_wait(DatabaseEntry *db, int32 sink_id);
extern void request_wait_end(DatabaseEntry *db);
extern bool request_any_queued(DatabaseEntry *db);
extern void request_fail_running(DatabaseEntry *db);

/* in request.c: an error or warning carried in a request */
extern void request_set_error(CommitterRequest *request, const ErrorData *edata);
extern char *request_error_message(const CommitterRequest *request);
extern uint32 request_encode_error(const ErrorData *edata, char *buffer);
extern void request_throw_error(const char *error, uint32 length, const char *context_if_none);

#endif /* PAIMON_SINK_REQUEST_H */
