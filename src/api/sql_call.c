/*-------------------------------------------------------------------------
 *
 * sql_call.c
 *	  The steps every SQL-callable function of paimon_sink shares: reading
 *	  its arguments and refusing a call it cannot serve (a transaction
 *	  block, no prepared transactions, a sink the caller does not own).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/twophase.h"
#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/jsonb.h"

#include "api/sql_call.h"
#include "core/constants.h"
#include "core/names.h"
#include "core/shared_state.h"
#include "metadata/catalog.h"
#include "metadata/version.h"

/* sql_text_argument returns a text argument as a C string, or NULL. */
char *
sql_text_argument(FunctionCallInfo fcinfo, int index)
{
	return PG_ARGISNULL(index) ? NULL : text_to_cstring(PG_GETARG_TEXT_PP(index));
}

/*
 * sql_commit_user_argument returns the commit user an argument names, or
 * the sink's own when it is NULL, after checking that it is a valid one.
 */
char *
sql_commit_user_argument(FunctionCallInfo fcinfo, int index, SinkInfo *sink)
{
	char *commit_user = sql_text_argument(fcinfo, index);

	if (commit_user == NULL)
		commit_user = sink->default_commit_user;
	paimon_sink_check_commit_user(commit_user);
	return commit_user;
}

/*
 * sql_interval_sign returns -1, 0 or 1 as an interval is below, equal to or
 * above a zero interval, compared as PostgreSQL compares intervals (a month
 * is 30 days, a day 24 hours).
 */
int
sql_interval_sign(const Interval *interval)
{
	Interval zero;

	memset(&zero, 0, sizeof(zero));
	return DatumGetInt32(
		DirectFunctionCall2(interval_cmp, IntervalPGetDatum(interval), IntervalPGetDatum(&zero)));
}

/*
 * sql_interval_ms returns an interval in milliseconds (a month is 30 days,
 * a day 24 hours, as interval comparison takes them), saturated at
 * SQL_INTERVAL_MS_MAX (about 146,000 years) and at its negative: an age
 * given as an argument can be any interval, and the committer subtracts
 * it, in microseconds, from a timestamp, which must not overflow.
 */
int64
sql_interval_ms(const Interval *interval)
{
	/* at most about 6.7e10 days and 9.2e15 ms of time: the sum fits in 64 bits */
	int64 days = (int64) interval->day + (int64) interval->month * DAYS_PER_MONTH;
	int64 ms = days * SECS_PER_DAY * 1000 + interval->time / 1000;

	return Max(-SQL_INTERVAL_MS_MAX, Min(ms, SQL_INTERVAL_MS_MAX));
}

/*
 * sql_owned_sink resolves the sink the first argument names for a call
 * that needs its owner's rights.  Raises ERRCODE_NULL_VALUE_NOT_ALLOWED for
 * a NULL name, and what catalog_require_sink and catalog_check_owner raise.
 */
SinkInfo *
sql_owned_sink(FunctionCallInfo fcinfo, const char *action)
{
	char *name = sql_text_argument(fcinfo, 0);
	SinkInfo *sink;

	paimon_sink_require_ready();
	if (name == NULL)
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("the sink name must not be NULL")));
	sink = catalog_require_sink(name);
	catalog_check_owner(sink, action);
	return sink;
}

/*
 * sql_refuse_transaction_block refuses a transaction block
 * (ERRCODE_ACTIVE_SQL_TRANSACTION), as COMMIT PREPARED does.
 */
void
sql_refuse_transaction_block(const char *function)
{
	if (IsTransactionBlock())
		ereport(ERROR, (errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
						errmsg("%s cannot run inside a transaction block", function),
						errdetail("It commits in its own transactions, which the surrounding "
								  "transaction could not undo."),
						errhint("Call it on its own, outside BEGIN ... COMMIT.")));
	PreventInTransactionBlock(true, function);
}

/*
 * sql_require_prepared_transactions raises
 * ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE when max_prepared_transactions
 * is 0: every checkpoint commits in a prepared transaction.
 */
void
sql_require_prepared_transactions(void)
{
	if (max_prepared_xacts == 0)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("paimon_sink needs prepared transactions"),
						errdetail("max_prepared_transactions is 0; every checkpoint is committed "
								  "with PREPARE TRANSACTION and COMMIT PREPARED."),
						errhint("Set max_prepared_transactions to at least 1 per database with "
								"sinks and restart the server.")));
}

/*
 * sql_checkpoint_argument returns a checkpoint id argument (bigint) given
 * for use, which must not be NULL (ERRCODE_NULL_VALUE_NOT_ALLOWED) and must
 * be an id a valid call carries (paimon_sink_check_checkpoint_id:
 * ERRCODE_INVALID_PARAMETER_VALUE).
 */
int64
sql_checkpoint_argument(FunctionCallInfo fcinfo, int index, CheckpointIdUse use)
{
	int64 checkpoint_id;

	if (PG_ARGISNULL(index))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("checkpoint id must not be NULL")));
	checkpoint_id = PG_GETARG_INT64(index);
	paimon_sink_check_checkpoint_id(checkpoint_id, use);
	return checkpoint_id;
}

/*
 * sql_properties_argument checks a prepare's properties (a jsonb object) and
 * writes their text, with its NUL, into buffer
 * (PAIMON_SINK_PROPERTIES_SIZE bytes).  Raises
 * ERRCODE_INVALID_PARAMETER_VALUE for another jsonb than an object and
 * ERRCODE_PROGRAM_LIMIT_EXCEEDED for one too long.
 */
void
sql_properties_argument(Jsonb *properties, char *buffer)
{
	char *text;

	if (!JB_ROOT_IS_OBJECT(properties) || JB_ROOT_IS_SCALAR(properties))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("checkpoint properties must be a jsonb object"),
						errhint("Pass an object such as '{\"offset-0\": 42}', or NULL for none.")));
	text = JsonbToCString(NULL, &properties->root, VARSIZE(properties));
	if (strlen(text) >= PAIMON_SINK_PROPERTIES_SIZE)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("checkpoint properties of %zu bytes are too long", strlen(text)),
						errdetail("A prepare's properties take at most %d bytes as text.",
								  PAIMON_SINK_PROPERTIES_SIZE - 1),
						errhint("Keep source positions in the properties, not data.")));
	strlcpy(buffer, text, PAIMON_SINK_PROPERTIES_SIZE);
}
