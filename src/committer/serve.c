/*-------------------------------------------------------------------------
 *
 * serve.c
 *	  Serving one committer request: running it with its error caught
 *	  whole, answering it, and the request whose commit waits for its
 *	  loaders, answered once they are done.
 *
 * A request (a requester's in a queue slot, or a periodic checkpoint of
 * the committer's schedule) runs into an outcome; an error is caught into
 * the outcome whole (request.c relays it) with the committer's state
 * intact.  A commit of a large checkpoint may be left to the loader
 * workers (commit_parallel.c): the request is then held here, still
 * running for its requester (and for the checkpoint() calls riding on
 * it), while the committer serves other sinks; its own sink's requests
 * and periodic checkpoints wait.  The loop calls serve_resume once the
 * loaders are done: the decision and the request's next checkpoints, then
 * the answer.  One request is held at a time.  The due periodic
 * checkpoints of several sinks run together (commit_batch.c), with one
 * error catch for the batch; each member the batch leaves to itself is
 * then served as a periodic checkpoint of its own.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "utils/memutils.h"

#include "apply/load.h"
#include "apply/rejects.h"
#include "committer/commit.h"
#include "committer/commit_batch.h"
#include "committer/commit_parallel.h"
#include "committer/maintenance.h"
#include "committer/missing_files.h"
#include "committer/outcome_stats.h"
#include "committer/prepare.h"
#include "committer/recovery.h"
#include "committer/serve.h"
#include "committer/work.h"
#include "ipc/request.h"
#include "metadata/fence.h"
#include "metadata/metadata.h"

/* The request whose commit the loaders load, and whom to answer. */
static struct
{
	bool held;
	CommitterRequest *request; /* its outcome so far, in TopMemoryContext */
	bool periodic;			   /* a periodic checkpoint: nobody to answer */
	int slot;
	uint64 riders;
	CommitTally tally; /* its commits' CommitTallies so far */
} held;

/*
 * check_fence holds a call the committer serves (prepare_commit,
 * commit, end_input) to the fence, before any step of it: the epoch it
 * names against each sink's commit user (a group's members were restored
 * to one epoch), read in a transaction of its own.  The committer serves
 * restores too, one request at a time, so none comes between this check
 * and the call's steps.  Raises what fence_check_named raises.
 */
static void
check_fence(const CommitterRequest *request)
{
	List *sink_ids;
	const char *what = request->kind == REQUEST_PREPARE	 ? "prepare_commit()"
					   : request->kind == REQUEST_COMMIT ? "commit()"
														 : "end_input()";
	const char *nothing = request->kind == REQUEST_PREPARE ? "Nothing was prepared or dropped."
														   : "Nothing was committed.";
	ListCell *lc;

	work_begin();
	sink_ids = request->group_id != 0 ? metadata_group_members(request->group_id)
									  : list_make1_int(request->sink_id);
	foreach (lc, sink_ids)
	{
		SinkInfo *sink = work_require_sink(lfirst_int(lc));
		CommitUserMarks marks;

		if (!metadata_read_commit_user(sink->sink_id, request->commit_user, false, &marks))
			memset(&marks, 0, sizeof(marks));
		fence_check_named(sink->name, request->commit_user, marks.fence_epoch, marks.epoch_required,
						  request->named_epoch, what, nothing);
	}
	work_end();
}

/*
 * run runs one request into outcome, a copy of it, or goes on with the
 * held one (resume).  An error is caught into outcome whole, the
 * committer's state intact: transaction aborted, load closed, a commit
 * this request left to the loaders (or resumed) ended, in-doubt
 * transactions looked for first by the next request.
 */
static void
run(CommitterRequest *outcome, bool resume)
{
	MemoryContext old = MemoryContextSwitchTo(CommitterContext);
	uint64 generation = commit_parallel_generation();

	outcome->sqlerrcode = 0;
	outcome->error_length = 0;
	/* a resumed request goes on listing the snapshots it makes */
	if (!resume)
		outcome->answered_count = 0;
	CommitAnswer = outcome;
	/* reject_failing_rows(): its checkpoints move the rows their target refuses aside */
	rejects_set_operator_call(!resume && outcome->kind == REQUEST_COMMIT && outcome->reject_rows);
	pgstat_report_activity(STATE_RUNNING, "serving a sink request");
	PG_TRY();
	{
		/* a request is untrusted input: checked whole before any step of it */
		if (!resume)
			request_check(outcome);
		/* a call of a fenced attempt (a zombie) changes nothing */
		if (!resume && outcome->check_fence)
			check_fence(outcome);
		/* an in-doubt transaction of ours holds the locks this needs */
		if (RecoveryInDoubtPossible)
			(void) recovery_finish_in_doubt(true);
		switch (resume ? 0 : outcome->kind)
		{
			case 0:
				commit_resume(outcome);
				break;
			case REQUEST_PREPARE:
				outcome->committable_count = prepare_checkpoint(
					outcome->sink_id, outcome->commit_user, outcome->checkpoint_id,
					outcome->writer_id, outcome->properties[0] != '\0' ? outcome->properties : NULL,
					outcome->fence_epoch, true, outcome);
				break;
			case REQUEST_COMMIT:
				if (outcome->group_id != 0)
					commit_group_up_to(outcome->group_id, outcome->commit_user,
									   outcome->checkpoint_id, outcome);
				else
					commit_up_to(outcome->sink_id, outcome->commit_user, outcome->checkpoint_id,
								 outcome);
				break;
			case REQUEST_CHECKPOINT:
				prepare_and_commit(outcome->sink_id, outcome);
				break;
			case REQUEST_RECOVER:
			{
				/* recovery.c's restore takes a negative id as the last committed one */
				int64 restored = outcome->restore_last_committed ? -1 : outcome->checkpoint_id;

				if (outcome->group_id != 0)
					recovery_restore_group(outcome->group_id, outcome->commit_user, restored,
										   outcome->mode, outcome);
				else
					recovery_restore(outcome->sink_id, outcome->commit_user, restored,
									 outcome->mode, outcome);
			}
			break;
			case REQUEST_END_INPUT:
				if (outcome->group_id != 0)
					commit_group_end_input(outcome->group_id, outcome->commit_user, outcome);
				else
					prepare_end_input(outcome->sink_id, outcome->commit_user, outcome);
				break;
			case REQUEST_REMOVE_ORPHANS:
				maintenance_remove_orphans(outcome->sink_id, outcome);
				break;
			case REQUEST_DISCARD_MISSING:
				missing_files_discard(outcome->sink_id, outcome->commit_user, outcome);
				break;
		}
	}
	PG_CATCH();
	{
		ErrorData *error;
		const char *hint;

		MemoryContextSwitchTo(CommitterContext);
		error = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		load_progress_update(COMMIT_PHASE_IDLE, 0, 0);
		/* another sink's failure leaves the commit in flight alone */
		if (resume || commit_parallel_generation() != generation)
		{
			commit_parallel_cleanup();
			commit_forget_rest();
		}
		RecoveryInDoubtPossible = true;
		SPI_finish();
		load_abort();
		hint = commit_failure_hint(error->sqlerrcode);
		if (error->hint == NULL && hint != NULL)
			error->hint = pstrdup(hint);
		request_set_error(outcome, error);
		ereport(LOG, (errmsg("paimon_sink committer request failed with SQLSTATE %s: %s",
							 unpack_sql_state(outcome->sqlerrcode), error->message),
					  error->context ? errdetail("%s", error->context) : 0));
		FreeErrorData(error);
	}
	PG_END_TRY();
	CommitAnswer = NULL;
	rejects_set_operator_call(false);
	MemoryContextSwitchTo(old);
	MemoryContextReset(CommitterContext);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* is_commit tells whether a request commits checkpoints, as its last step. */
static bool
is_commit(const CommitterRequest *request)
{
	return request->kind == REQUEST_COMMIT || request->kind == REQUEST_CHECKPOINT ||
		   request->kind == REQUEST_END_INPUT;
}

/*
 * finish ends a request served: its statistics, its answer (unless
 * periodic) and its committed files' removal.  An error goes back to the
 * requester, state intact.
 */
static void
finish(CommitterRequest *request, bool periodic, int slot, uint64 riders)
{
	if (!periodic && is_commit(request) && request->sqlerrcode == 0)
		maintenance_report_failure(request);
	/* kept in memory: a duty writes them, at most a second later */
	if (is_commit(request))
	{
		maintenance_record_statistics(request);
		/* a sink group's failure is each member's (commit_group.c) */
		commit_group_record_failure(request);
	}
	/* sink_stats' failures and skips: written before the answer, to survive a crash */
	outcome_stats_write();
	if (!periodic)
		request_finish(MyDatabaseEntry, slot, riders, request);
	commit_remove_files();
	/* counted only: the expiry is a duty, run when no request waits */
	if (is_commit(request) && request->sqlerrcode == 0)
		maintenance_after_commit(request->sink_id);
}

/*
 * serve_one runs a request; true when it is done (finished), false when
 * its commit was left to the loaders and it is held.
 */
static bool
serve_one(CommitterRequest *request, bool periodic, int slot, uint64 riders)
{
	/* one request held at a time: while one is, the others commit here */
	bool may_suspend = is_commit(request) && !held.held;

	memset(&CommitTallies, 0, sizeof(CommitTallies));
	commit_allow_suspend(may_suspend);
	run(request, false);
	commit_allow_suspend(false);
	if (may_suspend && commit_suspended())
	{
		if (held.request == NULL)
			held.request = MemoryContextAlloc(TopMemoryContext, sizeof(CommitterRequest));
		memcpy(held.request, request, sizeof(CommitterRequest));
		held.periodic = periodic;
		held.slot = slot;
		held.riders = riders;
		held.tally = CommitTallies;
		held.held = true;
		return false;
	}
	finish(request, periodic, slot, riders);
	return true;
}

/*
 * serve_request serves the request of a requester in slot (with the
 * checkpoint() calls riding on it, riders); a request whose commit is left
 * to the loaders is answered by serve_resume.
 */
void
serve_request(CommitterRequest *request, int slot, uint64 riders)
{
	(void) serve_one(request, false, slot, riders);
}

/*
 * serve_periodic runs a periodic checkpoint (a request of kind
 * REQUEST_CHECKPOINT); true when it is done, with its outcome in request,
 * false when the loaders load it (serve_resume finishes it; its outcome
 * is then only logged).
 */
bool
serve_periodic(CommitterRequest *request)
{
	return serve_one(request, true, -1, 0);
}

/*
 * run_batch runs commit_batch_periodic for members, its error caught: the
 * committer's state is left intact as run leaves it, the error is logged,
 * and the members' outcomes say what was done (the rest is BATCH_ALONE).
 */
static void
run_batch(BatchMember *members, int count)
{
	MemoryContext old = MemoryContextSwitchTo(CommitterContext);

	CommitAnswer = NULL;
	pgstat_report_activity(STATE_RUNNING, "committing periodic checkpoints together");
	PG_TRY();
	{
		/* an in-doubt transaction of ours holds the locks this needs */
		if (RecoveryInDoubtPossible)
			(void) recovery_finish_in_doubt(true);
		commit_batch_periodic(members, count);
	}
	PG_CATCH();
	{
		ErrorData *error;

		MemoryContextSwitchTo(CommitterContext);
		error = CopyErrorData();
		FlushErrorState();
		AbortOutOfAnyTransaction();
		load_progress_update(COMMIT_PHASE_IDLE, 0, 0);
		RecoveryInDoubtPossible = true;
		SPI_finish();
		load_abort();
		(void) commit_failure_hint(error->sqlerrcode);
		ereport(LOG, (errmsg("paimon_sink committer's batch of %d periodic checkpoints failed with "
							 "SQLSTATE %s: %s",
							 count, unpack_sql_state(error->sqlerrcode), error->message),
					  errdetail("Its sinks are checkpointed one by one."),
					  error->context ? errcontext("%s", error->context) : 0));
		FreeErrorData(error);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	MemoryContextReset(CommitterContext);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * serve_periodic_batch runs the periodic checkpoints of members (count of
 * them, each with its sink id, at most PAIMON_SINK_BARRIER_SINKS)
 * together (commit_batch.c), finishes each member committed there as
 * serve_periodic finishes one (its statistics, its files' removal), then
 * serves each member left BATCH_ALONE on its own: a commit of the
 * checkpoint the batch recorded for it, or its whole periodic checkpoint;
 * its sqlerrcode is that commit's (0 when done, or left to the loaders).
 * A BATCH_NOT_TAKEN member is still due.
 */
void
serve_periodic_batch(BatchMember *members, int count)
{
	CommitterRequest *request = MemoryContextAllocZero(TopMemoryContext, sizeof(CommitterRequest));

	memset(&CommitTallies, 0, sizeof(CommitTallies));
	run_batch(members, count);
	for (int i = 0; i < count; i++)
	{
		members[i].sqlerrcode = 0;
		if (members[i].outcome != BATCH_COMMITTED)
			continue;
		memset(request, 0, sizeof(CommitterRequest));
		request->kind = REQUEST_CHECKPOINT;
		request->sink_id = members[i].sink_id;
		CommitTallies = members[i].tally;
		finish(request, true, -1, 0);
	}
	for (int i = 0; i < count; i++)
	{
		BatchMember *member = &members[i];

		if (member->outcome != BATCH_ALONE)
			continue;
		memset(request, 0, sizeof(CommitterRequest));
		request->sink_id = member->sink_id;
		request->kind = REQUEST_CHECKPOINT;
		if (member->checkpoint_id > 0)
		{
			request->kind = REQUEST_COMMIT;
			strlcpy(request->commit_user, member->commit_user, sizeof(request->commit_user));
			request->checkpoint_id = member->checkpoint_id;
		}
		/* left to the loaders, it counts as done: its outcome is only logged */
		if (serve_one(request, true, -1, 0))
			member->sqlerrcode = request->sqlerrcode;
	}
	pfree(request);
}

/* serve_holds tells whether a request waits for its loaders. */
bool
serve_holds(void)
{
	return held.held;
}

/*
 * serve_resume goes on with the held request once its loaders are done
 * (the decision, the request's next checkpoints) and answers it; returns
 * whether it did (false: none held, or its loaders still load).  Its next
 * large checkpoint may be left to the loaders again, and it stays held.
 */
bool
serve_resume(void)
{
	if (!held.held || commit_parallel_loading())
		return false;
	CommitTallies = held.tally;
	commit_allow_suspend(true);
	run(held.request, true);
	commit_allow_suspend(false);
	if (commit_suspended())
	{
		held.tally = CommitTallies;
		return true;
	}
	held.held = false;
	finish(held.request, held.periodic, held.slot, held.riders);
	return true;
}
