/*-------------------------------------------------------------------------
 *
 * fence.c
 *	  The one rule of a job's fence epoch, for the sessions that write and
 *	  for the committer that serves their calls.
 *
 * restart_job() hands a job's attempt a fence epoch, as Kafka's
 * initTransactions() hands a producer its epoch, and marks the commit user a
 * job's (commit_user_state.epoch_required).  From then on every write and
 * every prepare_commit, commit and end_input for it names the epoch in its
 * own transaction (write_as(), a call's fence_epoch argument, or on a direct
 * connection the session's paimon_sink.fence_epoch): nothing depends on what
 * an earlier transaction of the same connection set, so a pooled server
 * connection cannot lend one client's identity to another, and a subtask of
 * a failed attempt (a zombie) names an epoch that is stale.  The sessions
 * check when they write (fdw_session.c), the committer again when it serves
 * the call (serve.c, before any step of it), and the writers fence the rows
 * of a stale epoch at the barrier whatever came between.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "metadata/fence.h"
#include "metadata/metadata.h"

/*
 * fence_check_named refuses a write or a call (what: "a write",
 * "prepare_commit()", ...) whose named fence epoch is not the commit
 * user's current one: below it, an attempt a restore fenced since (a
 * zombie), ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE; above it, an epoch no
 * restore handed out, ERRCODE_INVALID_PARAMETER_VALUE; and for a job's
 * commit user (epoch_required) one that names none (named < 0),
 * ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE.  nothing_done is the sentence
 * the detail ends with (what the refusal left alone).  Returns when the
 * write or call may go on.
 */
void
fence_check_named(const char *sink_name, const char *commit_user, uint64 current,
				  bool epoch_required, int64 named, const char *what, const char *nothing_done)
{
	if (named < 0)
	{
		if (!epoch_required)
			return;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("%s for commit user \"%s\" of sink \"%s\" names no fence epoch", what,
						commit_user, sink_name),
				 errdetail("The commit user is a job's: restart_job() handed it fence epoch %llu, "
						   "and every write and call for it names that epoch in its own "
						   "transaction, so that neither a pooled connection nor a subtask of a "
						   "failed attempt can act for it. %s",
						   (unsigned long long) current, nothing_done),
				 errhint("Call paimon_sink.write_as(sink, commit_user, writer_id, fence_epoch) "
						 "in the writing transaction and pass fence_epoch to prepare_commit(), "
						 "commit() and end_input(); on a direct connection, SET "
						 "paimon_sink.fence_epoch names it for the session.")));
	}
	if ((uint64) named < current)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("fence epoch %lld of commit user \"%s\" of sink \"%s\" is stale",
						(long long) named, commit_user, sink_name),
				 errdetail("A restore raised the commit user's fence epoch to %llu: the attempt "
						   "that holds epoch %lld was fenced, and %s from it is refused. %s",
						   (unsigned long long) current, (long long) named, what, nothing_done),
				 errhint("A subtask of a failed attempt must stop; the job's new attempt names "
						 "the fence epoch restart_job() returned.")));
	if ((uint64) named > current)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("fence epoch %lld of commit user \"%s\" of sink \"%s\" was never handed "
						"out",
						(long long) named, commit_user, sink_name),
				 errdetail("The commit user's fence epoch is %llu. %s",
						   (unsigned long long) current, nothing_done),
				 errhint("Name the fence_epoch that restart_job() returned.")));
}
