/*-------------------------------------------------------------------------
 *
 * write_identity.c
 *	  Who a transaction writes as: the identity write_as() names for the
 *	  rest of its transaction, else the session's settings; and the fence
 *	  epoch a job's call names.
 *
 * A job's subtask names its commit user, writer id and fence epoch in each
 * transaction that writes (write_as()), so that nothing depends on what an
 * earlier transaction of the same connection set: through a pooler in
 * transaction mode a server connection serves many clients, and a SET of
 * one stays for the next.  The session settings (paimon_sink.commit_user,
 * writer_id and fence_epoch) still serve a direct connection.  What
 * write_as() names is kept in the transaction's memory and forgotten at its
 * end (an xact callback), whatever a savepoint did in between.  fence.c has
 * the rule the epoch is held to.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/memutils.h"

#include "api/sql_call.h"
#include "core/constants.h"
#include "core/guc.h"
#include "core/names.h"
#include "metadata/fence.h"
#include "metadata/metadata.h"
#include "metadata/version.h"
#include "session/fdw_session.h"
#include "session/write_identity.h"

PG_FUNCTION_INFO_V1(paimon_sink_write_as);

/* One sink's identity that write_as() named in this transaction. */
typedef struct NamedIdentity
{
	pg_uuid_t sink_uuid;
	int32 writer_id;
	int64 fence_epoch;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
} NamedIdentity;

/* This transaction's, in TopTransactionContext; NIL outside one */
static List *named_identities = NIL;
static bool callback_registered = false;

/* forget_identities is the xact callback that forgets them at the transaction's end. */
static void
forget_identities(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
		event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		named_identities = NIL;
}

/*
 * session_fence_epoch returns the epoch the session's paimon_sink.fence_epoch
 * names (its check hook accepted it), FENCE_EPOCH_UNNAMED when empty.
 */
static int64
session_fence_epoch(void)
{
	if (PaimonSinkFenceEpochSetting == NULL || PaimonSinkFenceEpochSetting[0] == '\0')
		return FENCE_EPOCH_UNNAMED;
	return pg_strtoint64(PaimonSinkFenceEpochSetting);
}

/*
 * write_identity_of returns the identity a write into the sink carries in
 * this transaction: what write_as() named for it, else the session's
 * settings (commit_user NULL when paimon_sink.commit_user is empty, and the
 * fence epoch only with a commit user named).
 */
WriteIdentity
write_identity_of(const SinkInfo *sink)
{
	WriteIdentity identity;
	ListCell *lc;

	foreach (lc, named_identities)
	{
		NamedIdentity *named = lfirst(lc);

		if (memcmp(&named->sink_uuid, &sink->sink_uuid, sizeof(pg_uuid_t)) == 0)
		{
			identity.commit_user = named->commit_user;
			identity.writer_id = named->writer_id;
			identity.fence_epoch = named->fence_epoch;
			return identity;
		}
	}
	identity.writer_id = PaimonSinkWriterId;
	identity.commit_user = NULL;
	identity.fence_epoch = FENCE_EPOCH_UNNAMED;
	if (PaimonSinkCommitUser != NULL && PaimonSinkCommitUser[0] != '\0')
	{
		identity.commit_user = PaimonSinkCommitUser;
		identity.fence_epoch = session_fence_epoch();
	}
	return identity;
}

/*
 * write_identity_call_epoch returns the fence epoch a call for commit_user
 * names: its bigint argument at index when given (22023 when negative),
 * else the session's paimon_sink.fence_epoch when the session's
 * paimon_sink.commit_user is that commit user, else FENCE_EPOCH_UNNAMED.
 * The committer holds it to the rule of fence.c.
 */
int64
write_identity_call_epoch(FunctionCallInfo fcinfo, int index, const char *commit_user)
{
	if (PG_NARGS() > index && !PG_ARGISNULL(index))
	{
		int64 epoch = PG_GETARG_INT64(index);

		if (epoch < 0)
			ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
							errmsg("fence epoch must be zero or more"),
							errhint("Pass the fence_epoch that restart_job() returned.")));
		return epoch;
	}
	if (PaimonSinkCommitUser != NULL && strcmp(PaimonSinkCommitUser, commit_user) == 0)
		return session_fence_epoch();
	return FENCE_EPOCH_UNNAMED;
}

/* name_identity records (or replaces) what the transaction writes into a sink as. */
static void
name_identity(const SinkInfo *sink, const char *commit_user, int32 writer_id, int64 fence_epoch)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);
	NamedIdentity *named = NULL;
	ListCell *lc;

	foreach (lc, named_identities)
	{
		NamedIdentity *candidate = lfirst(lc);

		if (memcmp(&candidate->sink_uuid, &sink->sink_uuid, sizeof(pg_uuid_t)) == 0)
			named = candidate;
	}
	if (named == NULL)
	{
		named = palloc0(sizeof(NamedIdentity));
		named->sink_uuid = sink->sink_uuid;
		named_identities = lappend(named_identities, named);
	}
	named->writer_id = writer_id;
	named->fence_epoch = fence_epoch;
	strlcpy(named->commit_user, commit_user, sizeof(named->commit_user));
	MemoryContextSwitchTo(old);
}

/*
 * write_as(sink_name text, commit_user text, writer_id integer, fence_epoch
 * bigint) returns void.  Names, for the rest of the transaction, the
 * identity of every write into the sink (or each member of the group
 * sink_name names): its commit user, writer id (the subtask index) and the
 * fence epoch that restart_job() handed the job's attempt (Kafka's producer
 * epoch); the session's settings do not count for that sink until the
 * transaction ends.  Checked at once, and again at each write: a stale
 * epoch (a subtask of a failed attempt) is refused.  Errors: 25P01 outside
 * a transaction block (it would name nothing); 22004 a NULL argument;
 * 42704 unknown sink; 22023 invalid commit user, a negative writer id or
 * epoch, an epoch above the commit user's; 55000 an epoch below it, or a
 * commit user whose input ended; and 55000 while the extension's version is
 * not the library's.  Needs no right of its own: a write still needs
 * INSERT on the foreign table.
 */
Datum
paimon_sink_write_as(PG_FUNCTION_ARGS)
{
	const char *name;
	char *commit_user;
	int32 writer_id;
	int64 fence_epoch;
	SinkGroup *group;
	List *sinks = NIL;
	ListCell *lc;

	paimon_sink_require_ready();
	for (int i = 0; i < 4; i++)
		if (PG_ARGISNULL(i))
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
							errmsg("the arguments of paimon_sink.write_as() must not be NULL"),
							errhint("Name the sink, the commit user, the writer id and the fence "
									"epoch restart_job() returned (0 for a commit user never "
									"restored).")));
	if (!IsTransactionBlock())
		ereport(ERROR,
				(errcode(ERRCODE_NO_ACTIVE_SQL_TRANSACTION),
				 errmsg("paimon_sink.write_as() can only be used in transaction blocks"),
				 errdetail("It names the identity of the writes of its own transaction, which "
						   "ends with this statement."),
				 errhint("Call it after BEGIN, before the transaction's INSERT or COPY.")));
	name = text_to_cstring(PG_GETARG_TEXT_PP(0));
	commit_user = text_to_cstring(PG_GETARG_TEXT_PP(1));
	writer_id = PG_GETARG_INT32(2);
	fence_epoch = PG_GETARG_INT64(3);
	paimon_sink_check_commit_user(commit_user);
	if (writer_id < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("writer id must not be negative"),
				 errhint("Pass the subtask index the transaction writes as.")));
	if (fence_epoch < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("fence epoch must be zero or more"),
						errhint("Pass the fence_epoch that restart_job() returned.")));

	/* a group's name or a sink's (they share one namespace: sink_group.c) */
	group = metadata_group_by_name(name);
	if (group == NULL)
		sinks = list_make1(catalog_require_sink(name));
	else
		foreach (lc, group->members)
		{
			SinkInfo *sink = palloc0(sizeof(SinkInfo));

			if (!metadata_sink_by_id(lfirst_int(lc), sink))
				elog(ERROR, "sink %d of sink group \"%s\" does not exist", lfirst_int(lc), name);
			sinks = lappend(sinks, sink);
		}

	if (!callback_registered)
	{
		RegisterXactCallback(forget_identities, NULL);
		callback_registered = true;
	}
	foreach (lc, sinks)
	{
		SinkInfo *sink = lfirst(lc);

		(void) fdw_session_write_epoch(sink, commit_user, fence_epoch, "a write");
		name_identity(sink, commit_user, writer_id, fence_epoch);
	}
	PG_RETURN_VOID();
}
