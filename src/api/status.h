/*-------------------------------------------------------------------------
 *
 * status.h
 *	  The status functions behind the extension's views (status.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_STATUS_H
#define PAIMON_SINK_STATUS_H

#include "fmgr.h"

extern Datum paimon_sink_last_committed_checkpoint(PG_FUNCTION_ARGS);
extern Datum paimon_sink_writer_status(PG_FUNCTION_ARGS);
extern Datum paimon_sink_commit_progress(PG_FUNCTION_ARGS);
extern Datum paimon_sink_checkpoint_schedule_status(PG_FUNCTION_ARGS);
extern Datum paimon_sink_load_ahead_status(PG_FUNCTION_ARGS);
extern Datum paimon_sink_reset_sink_stats(PG_FUNCTION_ARGS);
extern Datum paimon_sink_open_staged(PG_FUNCTION_ARGS);

#endif /* PAIMON_SINK_STATUS_H */
