/*-------------------------------------------------------------------------
 *
 * sql_call.h
 *	  The steps every SQL-callable function of paimon_sink shares: reading
 *	  its arguments and refusing a call it cannot serve.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_SQL_CALL_H
#define PAIMON_SINK_SQL_CALL_H

#include "fmgr.h"
#include "utils/jsonb.h"
#include "utils/timestamp.h"

#include "core/names.h"
#include "metadata/catalog.h"

/* The longest interval sql_interval_ms returns, in milliseconds. */
#define SQL_INTERVAL_MS_MAX (PG_INT64_MAX / 1000 / 2)

extern char *sql_text_argument(FunctionCallInfo fcinfo, int index);
extern char *sql_commit_user_argument(FunctionCallInfo fcinfo, int index, SinkInfo *sink);
extern int sql_interval_sign(const Interval *interval);
extern int64 sql_interval_ms(const Interval *interval);
extern SinkInfo *sql_owned_sink(FunctionCallInfo fcinfo, const char *action);
extern void sql_refuse_transaction_block(const char *function);
extern void sql_require_prepared_transactions(void);
extern int64 sql_checkpoint_argument(FunctionCallInfo fcinfo, int index, CheckpointIdUse use);
extern void sql_properties_argument(Jsonb *properties, char *buffer);

#endif /* PAIMON_SINK_SQL_CALL_H */
