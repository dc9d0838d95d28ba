/*-------------------------------------------------------------------------
 *
 * work.h
 *	  The committer process's own state (its database entry, its memory,
 *	  its writers) and the units of work every committer subsystem runs:
 *	  a transaction with SPI, the sink a request names, and the "log and
 *	  carry on" helper.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_WORK_H
#define PAIMON_SINK_WORK_H

#include "postmaster/bgworker.h"

#include "core/shared_state.h"
#include "metadata/metadata.h"

/*
 * in work.c: the committer process's state, set at its start (with
 * shared_state.h's MyDatabaseEntry and MyDatabaseIndex)
 */
extern MemoryContext CommitterContext;			/* reset after every request */
extern char CommitterDatabaseName[NAMEDATALEN]; /* for log lines outside a transaction */

extern void work_init(int database_index);

/* in work.c: its writers */
extern void work_start_writers(void);
extern BackgroundWorkerHandle *work_writer_handle(int index);
extern bool work_writers_ready(void);

/* in work.c: units of work */
extern void work_begin(void);
extern void work_end(void);
extern SinkInfo *work_require_sink(int32 sink_id);
extern bool work_try(void (*step)(void *arg), void *arg, ErrorData **error);

#endif /* PAIMON_SINK_WORK_H */
