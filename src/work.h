/*-------------------------------------------------------------------------
 *
 * work.h
 *	  The committer process's own state (its database entry, its memory,
 *	  its writers) and the units of work every committer subsystem runs:
 *	  a transaction with SPI, one catalog statement, the sink and marks a
 *	  request names, and the "log and carry on" helper.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_WORK_H
#define PAIMON_SINK_WORK_H

#include "catalog.h"
#include "postmaster/bgworker.h"
#include "shared_state.h"

/* in work.c: the committer process's state, set at its start */
extern int CommitterDatabaseIndex;
extern DatabaseEntry *CommitterDatabase;
extern MemoryContext CommitterContext; /* reset after every request */

extern void work_init(int database_index);

/* in work.c: its writers */
extern void work_start_writers(void);
extern BackgroundWorkerHandle *work_writer_handle(int index);
extern bool work_writers_ready(void);

/* in work.c: units of work */
extern void work_begin(void);
extern void work_end(void);
extern void work_execute(const char *query, int nargs, Oid *types, Datum *values, int expected);
extern Datum work_text(const char *value);
extern SinkInfo *work_require_sink(int32 sink_id);
extern void work_marks(int32 sink_id, const char *commit_user, bool for_update,
					   int64 *last_prepared, int64 *last_committed, uint64 *fence_epoch);
extern bool work_try(void (*step)(void *arg), void *arg, ErrorData **error);

#endif /* PAIMON_SINK_WORK_H */
