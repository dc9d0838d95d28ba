/*-------------------------------------------------------------------------
 *
 * api.h
 *	  The SQL entry points that submit committer requests (api.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_API_H
#define PAIMON_SINK_API_H

#include "fmgr.h"

extern Datum paimon_sink_prepare_commit(PG_FUNCTION_ARGS);
extern Datum paimon_sink_commit(PG_FUNCTION_ARGS);
extern Datum paimon_sink_checkpoint(PG_FUNCTION_ARGS);
extern Datum paimon_sink_start_workers(PG_FUNCTION_ARGS);
extern Datum paimon_sink_recover(PG_FUNCTION_ARGS);
extern Datum paimon_sink_end_input(PG_FUNCTION_ARGS);
extern Datum paimon_sink_remove_orphan_files(PG_FUNCTION_ARGS);
extern Datum paimon_sink_expire_snapshots(PG_FUNCTION_ARGS);

#endif /* PAIMON_SINK_API_H */
