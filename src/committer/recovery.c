/*-------------------------------------------------------------------------
 *
 * recovery.c
 *	  The committer's recovery: which prepared transactions are its own,
 *	  finishing them, the files committed or dropped checkpoints and sinks
 *	  leave behind, and recover() with its fencing.
 *
 * A checkpoint is prepared only once it is complete, so recovery commits
 * every in-doubt transaction of ours.  But any role may PREPARE a
 * transaction under any gid, including one that looks like ours, and
 * COMMIT PREPARED would then commit that role's work: recovery finishes a
 * prepared transaction only when it is provably ours (Citus's transaction
 * recovery asks for its own prefix and database in the same way):
 *
 *	- prepared in this database, with a gid that reads back as exactly what
 *	  gid_build writes, naming this database;
 *	- owned by the role the committer prepares as (only a superuser can
 *	  prepare a transaction as that role);
 *	- naming an existing sink and a checkpoint of that commit user that is
 *	  prepared and not committed (as every checkpoint looks from outside
 *	  while its commit is in doubt), or already committed.
 *
 * Anything else that carries our prefix is foreign: never committed or
 * rolled back by us, listed in the view in_doubt with the reason, and
 * logged once by the committer.  Only columns every catalog version has are
 * read, so that a committer waiting for ALTER EXTENSION paimon_sink UPDATE
 * can tell too.
 *
 * At its start and after a failed request the committer finishes its
 * in-doubt transactions, then removes the staged files of checkpoints they
 * committed and the folders of dropped sinks (drop_sink leaves a record,
 * the "cleanup record" of Citus and pg_lake).  recover() fences the failed
 * attempt of a job, commits what it prepared up to the restored checkpoint
 * and discards the rest.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>
#include <unistd.h>

#include "access/twophase.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "committer/barrier.h"
#include "committer/commit.h"
#include "committer/commit_parallel.h"
#include "committer/recovery.h"
#include "committer/work.h"
#include "core/guc.h"
#include "core/security.h"
#include "metadata/catalog.h"
#include "metadata/statement.h"
#include "staging/staged_file.h"

PG_FUNCTION_INFO_V1(paimon_sink_in_doubt_status);

/*
 * An in-doubt transaction of ours can exist only after a crash between
 * PREPARE TRANSACTION and COMMIT PREPARED (a new committer starts with this
 * set) or after a request that failed: only then does a request look first.
 */
bool RecoveryInDoubtPossible = true;

/* The gids of foreign transactions the committer has logged already. */
static List *foreign_logged = NIL;

/*
 * Why a parsed gid of the committer's role is not ours, or NULL;
 * *last_committed gets its commit user's mark (-1: none).
 */
static char *
checkpoint_problem(const GidParts *parts, int64 *mark)
{
	CheckpointState state =
		metadata_checkpoint_state(parts->sink_id, parts->commit_user, parts->checkpoint_id);
	bool sink_exists = state.sink_exists;
	bool pending = state.pending;
	int64 last_committed = state.commit_user_known ? state.last_committed : -1;

	*mark = last_committed;

	if (!sink_exists)
		return psprintf("It names sink %d, which does not exist.", parts->sink_id);
	if (!pending && parts->checkpoint_id > last_committed)
		return psprintf("It names checkpoint " INT64_FORMAT
						" of commit user \"%s\", which is neither prepared nor committed.",
						parts->checkpoint_id, parts->commit_user);
	return NULL;
}

/*
 * recovery_prepared_gids returns, allocated in context, a PreparedGid for
 * every prepared transaction of this database whose gid starts with our
 * prefix, oldest first, each classified as ours or foreign (see the head
 * of this file).  Needs a transaction and a snapshot; connects to SPI
 * itself.  Raises only on internal errors.
 */
List *
recovery_prepared_gids(MemoryContext context)
{
	static Statement statement = {
		"SELECT p.gid, p.prepared, p.ownerid "
		"FROM pg_catalog.pg_prepared_xact() p "
		"WHERE p.dbid OPERATOR(pg_catalog.=) $1 "
		"AND pg_catalog.starts_with(p.gid, $2) ORDER BY p.prepared, p.gid",
		SPI_OK_SELECT};
	Arg args[] = {ARG_OID(MyDatabaseId), ARG_TEXT(PAIMON_SINK_GID_START)};
	List *result = NIL;
	MemoryContext old;

	SPI_connect();
	{
		uint64 count = statement_run(&statement, args, lengthof(args), RUN_READ_ONLY);

		for (uint64 i = 0; i < count; i++)
		{
			PreparedGid *entry;
			char *problem = NULL;

			old = MemoryContextSwitchTo(context);
			entry = palloc0(sizeof(PreparedGid));
			entry->gid = row_text(i, "gid");
			entry->prepared = DatumGetTimestampTz(row_datum(i, "prepared", NULL));
			entry->last_committed = -1;
			entry->owner = DatumGetObjectId(row_datum(i, "ownerid", NULL));
			MemoryContextSwitchTo(old);

			entry->parsed = gid_parse(entry->gid, &entry->parts);
			if (!entry->parsed)
				problem =
					psprintf("It is not of the form %s<database>:<sink>:<checkpoint>:<commit "
							 "user>~<random suffix> (a loader's: <commit user>/<part>~<random "
							 "suffix>).",
							 PAIMON_SINK_GID_START);
			else if (entry->parts.database_id != MyDatabaseId)
				problem = psprintf("It names database %u, not this one (%u).",
								   entry->parts.database_id, MyDatabaseId);
			else if (entry->owner != security_committer_role())
				problem = psprintf(
					"It was prepared by role \"%s\"; the committer prepares as role \"%s\".",
					GetUserNameFromId(entry->owner, true) ? GetUserNameFromId(entry->owner, true)
														  : "(dropped)",
					GetUserNameFromId(security_committer_role(), false));
			else
				problem = checkpoint_problem(&entry->parts, &entry->last_committed);
			entry->ours = problem == NULL;
			if (problem != NULL)
				entry->foreign_reason = MemoryContextStrdup(context, problem);
			old = MemoryContextSwitchTo(context);
			result = lappend(result, entry);
			MemoryContextSwitchTo(old);
		}
	}
	SPI_finish();
	return result;
}

/*
 * recovery_gid_in_use tells whether a transaction is prepared under gid, in
 * any database (gids are the cluster's), and if so who prepared it where
 * (*owner, *database_id).  Needs a transaction and a snapshot; raises only
 * on internal errors.
 */
bool
recovery_gid_in_use(const char *gid, Oid *owner, Oid *database_id)
{
	static Statement statement = {"SELECT p.ownerid, p.dbid FROM pg_catalog.pg_prepared_xact() p "
								  "WHERE p.gid OPERATOR(pg_catalog.=) $1",
								  SPI_OK_SELECT};
	Arg args[] = {ARG_TEXT(gid)};
	bool found;

	SPI_connect();
	found = statement_run(&statement, args, lengthof(args), RUN_READ_ONLY) > 0;
	if (found)
	{
		*owner = DatumGetObjectId(row_datum(0, "ownerid", NULL));
		*database_id = DatumGetObjectId(row_datum(0, "dbid", NULL));
	}
	SPI_finish();
	return found;
}

/*
 * recovery_report_foreign logs, once in the committer's life, each foreign
 * transaction of gids (a list of PreparedGid), and forgets the logged ones
 * that are gone.  Safe outside a transaction; raises nothing.
 */
void
recovery_report_foreign(List *gids)
{
	List *still = NIL;
	ListCell *lc;
	MemoryContext old;

	foreach (lc, gids)
	{
		PreparedGid *entry = lfirst(lc);
		ListCell *seen;
		bool logged = false;

		if (entry->ours)
			continue;
		foreach (seen, foreign_logged)
			logged = logged || strcmp(lfirst(seen), entry->gid) == 0;
		if (!logged)
			ereport(LOG, (errmsg("paimon_sink committer leaves prepared transaction \"%s\" alone: "
								 "it is not its own",
								 entry->gid),
						  errdetail_internal("%s", entry->foreign_reason),
						  errhint("Its owner or a superuser ends it with COMMIT PREPARED or "
								  "ROLLBACK PREPARED; paimon_sink.in_doubt lists it.")));
		old = MemoryContextSwitchTo(TopMemoryContext);
		still = lappend(still, pstrdup(entry->gid));
		MemoryContextSwitchTo(old);
	}
	list_free_deep(foreign_logged);
	foreign_logged = still;
}

/*
 * in_doubt_status() returns one row per prepared transaction of this
 * database whose gid has paimon_sink's prefix: (gid text, prepared
 * timestamptz, owner name, sink_id integer, checkpoint_id bigint,
 * commit_user text, ours boolean, foreign_reason text, loader_part
 * integer).  sink_id, checkpoint_id and commit_user are NULL unless the
 * gid reads as one of ours naming this database; loader_part is a loader
 * share's part (from 0), NULL for a checkpoint's own gid (the decision);
 * ours is true for the transactions recovery finishes (a checkpoint gid
 * is committed; a share committed when its checkpoint is, else rolled
 * back); foreign_reason says why the others are left alone.  The view
 * paimon_sink.in_doubt reads it.  Raises no error of its own.
 */
Datum
paimon_sink_in_doubt_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List *gids;
	ListCell *lc;

	InitMaterializedSRF(fcinfo, 0);
	gids = recovery_prepared_gids(CurrentMemoryContext);
	foreach (lc, gids)
	{
		PreparedGid *entry = lfirst(lc);
		Datum values[9];
		bool nulls[9] = {0};
		char *owner = GetUserNameFromId(entry->owner, true);
		bool names_here = entry->parsed && entry->parts.database_id == MyDatabaseId;

		values[0] = CStringGetTextDatum(entry->gid);
		values[1] = TimestampTzGetDatum(entry->prepared);
		nulls[2] = owner == NULL;
		if (owner)
		{
			Name name = palloc0(NAMEDATALEN);

			namestrcpy(name, owner);
			values[2] = NameGetDatum(name);
		}
		nulls[3] = nulls[4] = nulls[5] = !names_here;
		if (names_here)
		{
			values[3] = Int32GetDatum(entry->parts.sink_id);
			values[4] = Int64GetDatum(entry->parts.checkpoint_id);
			values[5] = CStringGetTextDatum(entry->parts.commit_user);
		}
		values[6] = BoolGetDatum(entry->ours);
		nulls[7] = entry->foreign_reason == NULL;
		if (entry->foreign_reason)
			values[7] = CStringGetTextDatum(entry->foreign_reason);
		nulls[8] = !names_here || entry->parts.part < 0;
		values[8] = Int32GetDatum(entry->parts.part);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}

/*
 * recovery_remove_committed_files removes the staged files of committed
 * checkpoints that a crash left behind.
 */
void
recovery_remove_committed_files(void)
{
	ListCell *lc;

	work_begin();
	foreach (lc, metadata_committed_files())
	{
		SinkFile *file = lfirst(lc);
		int32 sink_id = file->sink_id;
		char *name = file->file_name;
		char path[MAXPGPATH];
		struct stat st;

		/* a name that is not a staged file's is never a path (it is no file of ours) */
		if (!staged_file_name_is_valid(name))
			continue;
		staged_file_path(path, MyDatabaseId, sink_id, name);
		if (stat(path, &st) == 0)
			(void) staged_file_remove(path);
	}
	work_end();
}

/*
 * finish_checkpoints commits the in-doubt checkpoint gids of ours in gids
 * (a checkpoint is prepared only once it is complete: each is a decision),
 * but the one a whole load in flight prepared, which its commit commits;
 * returns how many.
 */
static int
finish_checkpoints(List *gids)
{
	int count = 0;
	ListCell *lc;

	foreach (lc, gids)
	{
		PreparedGid *entry = lfirst(lc);

		if (!entry->ours || entry->parts.part >= 0 || commit_parallel_holds_gid(entry->gid))
			continue;
		StartTransactionCommand();
		FinishPreparedTransaction(entry->gid, true);
		CommitTransactionCommand();
		MemoryContextSwitchTo(CommitterContext);
		count++;
		ereport(
			LOG,
			(errmsg("paimon_sink committer committed in-doubt transaction \"%s\"", entry->gid),
			 errdetail(
				 "A checkpoint is prepared only once it is complete, so recovery commits it.")));
	}
	return count;
}

/*
 * finish_shares finishes the in-doubt loader shares of ours in gids, read
 * after the checkpoint gids were committed: a share whose checkpoint is
 * committed (at or below the commit user's mark, which snapshot expiry
 * never lowers) is committed, any other rolled back (its checkpoint stays
 * prepared, loaded again by its next commit).  The shares of the parallel
 * commit in flight are left alone.  Returns how many it committed.
 */
static int
finish_shares(List *gids)
{
	int count = 0;
	ListCell *lc;

	foreach (lc, gids)
	{
		PreparedGid *entry = lfirst(lc);
		bool decided;

		if (!entry->ours || entry->parts.part < 0 || commit_parallel_owns(&entry->parts))
			continue;
		decided = entry->parts.checkpoint_id <= entry->last_committed;
		StartTransactionCommand();
		FinishPreparedTransaction(entry->gid, decided);
		CommitTransactionCommand();
		MemoryContextSwitchTo(CommitterContext);
		count += decided ? 1 : 0;
		ereport(LOG,
				(errmsg("paimon_sink committer %s in-doubt loader transaction \"%s\"",
						decided ? "committed" : "rolled back", entry->gid),
				 decided ? errdetail("Its checkpoint is committed: the decision was made.")
						 : errdetail("Its checkpoint is not committed: no decision was made, and "
									 "the checkpoint stays prepared.")));
	}
	return count;
}

/*
 * recovery_finish_in_doubt finishes every in-doubt transaction of ours in
 * this database, then removes the files of the checkpoints they
 * committed; returns how many it committed.  Checkpoint gids first: they
 * are the decisions (a checkpoint is prepared only once it is complete, so
 * each is committed); then loader shares, each committed when its
 * checkpoint is and rolled back when not (commit_parallel.c).  Only
 * transactions recovery.c proves ours are finished: a foreign one that
 * carries our prefix is left alone and logged once.  Reads only catalog
 * columns every version has: a library waiting for ALTER EXTENSION
 * paimon_sink UPDATE finishes ours too, since they hold back the cluster's
 * xmin and lock the tables an update may change (catalog_ready false: the
 * files wait for the update).
 */
int
recovery_finish_in_doubt(bool catalog_ready)
{
	int count = 0;
	List *gids;

	work_begin();
	gids = recovery_prepared_gids(CommitterContext);
	work_end();
	count = finish_checkpoints(gids);
	if (count > 0)
	{
		/* the marks they raised decide the shares */
		work_begin();
		gids = recovery_prepared_gids(CommitterContext);
		work_end();
	}
	count += finish_shares(gids);
	recovery_report_foreign(gids);
	/* the files of the checkpoints just committed are no longer needed */
	if (count > 0 && catalog_ready)
		recovery_remove_committed_files();
	RecoveryInDoubtPossible = false;
	return count;
}

/*
 * recovery_remove_dropped_sinks removes the staged files of dropped sinks.  drop_sink records the sink in
 * paimon_sink.dropped_sink in its own transaction, so nothing is deleted
 * unless the drop committed (the "cleanup record" pattern of Citus and
 * pg_lake); the record goes once the folder is gone, and stays (with a
 * warning) while a file in it cannot be removed.
 */
void
recovery_remove_dropped_sinks(void)
{
	List *doomed = NIL;
	ListCell *lc;

	work_begin();
	{
		MemoryContext old = MemoryContextSwitchTo(CommitterContext);

		foreach (lc, metadata_dropped_sinks())
			doomed = lappend_int(doomed, (int32) * (int64 *) lfirst(lc));
		MemoryContextSwitchTo(old);
	}
	work_end();
	if (doomed == NIL)
		return;

	foreach (lc, doomed)
	{
		char path[MAXPGPATH];
		struct stat st;

		staged_file_directory(path, MyDatabaseId, lfirst_int(lc));
		if (stat(path, &st) == 0 && staged_file_remove_directory(MyDatabaseId, lfirst_int(lc)))
			ereport(LOG,
					(errmsg("paimon_sink committer removed the staged files of dropped sink %d",
							lfirst_int(lc))));
		/* the record stays while the folder does: the next maintenance tries again */
		if (stat(path, &st) == 0 || errno != ENOENT)
		{
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("paimon_sink could not remove the staged files of dropped sink %d",
							lfirst_int(lc)),
					 errdetail("The folder \"%s\" is still there; the committer tries again at "
							   "its next catalog maintenance.",
							   path)));
			doomed = foreach_delete_current(doomed, lc);
		}
	}
	work_begin();
	foreach (lc, doomed)
		metadata_forget_dropped_sink(lfirst_int(lc));
	work_end();
	list_free(doomed);
}

/*
 * restore_check begins the restore of a commit user of sinks (one sink, or
 * a group's members, an integer List of sink ids) to checkpoint "restored"
 * (negative: the first sink's last committed one, which it returns): a
 * stale restore of any of them is refused, before anything changed.
 * *recommitted receives how many prepared checkpoints of the first sink the
 * restore commits (those above its last committed one, up to "restored").
 */
static int64
restore_check(List *sink_ids, const char *commit_user, int64 restored, int32 *recommitted)
{
	ListCell *lc;

	work_begin();
	foreach (lc, sink_ids)
	{
		int64 last_committed;

		(void) work_require_sink(lfirst_int(lc));
		last_committed =
			metadata_commit_user_marks(lfirst_int(lc), commit_user, false).last_committed;
		/* restart_job() without a checkpoint of its own: where the commit user stands now */
		if (restored < 0)
			restored = last_committed;
		if (restored < last_committed)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("stale restore: checkpoint %lld is below the last committed "
							"checkpoint %lld of commit user \"%s\"",
							(long long) restored, (long long) last_committed, commit_user),
					 errdetail("Replaying from checkpoint %lld would commit the rows of "
							   "checkpoints %lld to %lld a second time; nothing was changed.",
							   (long long) restored, (long long) restored + 1,
							   (long long) last_committed),
					 errhint("Restore the job from checkpoint %lld or later, or move its source "
							 "past what checkpoint %lld committed.",
							 (long long) last_committed, (long long) last_committed)));
		if (lc == list_head(sink_ids))
			*recommitted =
				metadata_count_pending_after(lfirst_int(lc), commit_user, last_committed) -
				metadata_count_pending_after(lfirst_int(lc), commit_user, restored);
	}
	work_end();
	return restored;
}

/*
 * restore_fence fences the failed attempt of a commit user of sinks (the
 * List of restore_check), in one transaction, once its checkpoints up to
 * the restored one are committed: batches of transactions that began
 * writing before this commit are left out of every later checkpoint, even
 * those that reach a writer after the discard that follows.  After the
 * commit, so that a restore that fails before it (a stale one, a commit
 * its target refuses) fences none: their rows would be left out though
 * the call failed.  Every sink gets one new epoch, above each one's (a
 * group's job names one); a job's restart (restart_job()) also makes the
 * commit user a job's, whose writes and calls name the epoch (fence.c).
 */
static void
restore_fence(List *sink_ids, const char *commit_user, bool job)
{
	ListCell *lc;
	uint64 epoch = 0;

	work_begin();
	/* one new epoch for every member of a group: a job names one */
	foreach (lc, sink_ids)
	{
		(void) work_require_sink(lfirst_int(lc));
		epoch =
			Max(epoch, metadata_commit_user_marks(lfirst_int(lc), commit_user, true).fence_epoch);
	}
	foreach (lc, sink_ids)
		metadata_move_marks(job ? MARK_JOB_FENCE_EPOCH : MARK_NEW_FENCE_EPOCH, lfirst_int(lc),
							commit_user, (int64) epoch + 1);
	work_end();
}

/*
 * restore_discard ends the restore of a commit user of a sink, once its
 * checkpoints up to "restored" are committed: what it staged or prepared
 * after "restored" is discarded, counted into the request's
 * discarded_checkpoints and discarded_files.
 */
static void
restore_discard(int32 sink_id, const char *commit_user, int64 restored, CommitterRequest *request)
{
	uint64 *seqs = palloc0(sizeof(uint64) * PaimonSinkWritersPerDatabase);
	List *records;
	List *paths = NIL;
	ListCell *lc;
	SinkInfo *sink;

	work_begin();
	sink = work_require_sink(sink_id);
	work_end();

	/* the writers drop what the job staged since */
	records = barrier_run(sink, commit_user, -1, BARRIER_DISCARD, 0, seqs);
	foreach (lc, records)
	{
		CommittableRecord *record = lfirst(lc);
		char *path;

		if (record->kind == BARRIER_RECORD_DISCARDED)
		{
			request->discarded_files++; /* the writer removed it */
			continue;
		}
		path = palloc(MAXPGPATH);
		staged_file_path(path, MyDatabaseId, sink_id, record->file_name);
		paths = lappend(paths, path);
	}

	work_begin();
	request->discarded_checkpoints += metadata_count_pending_after(sink_id, commit_user, restored);
	{
		MemoryContext old = MemoryContextSwitchTo(CommitterContext);

		foreach (lc, metadata_discard_pending_after(sink_id, commit_user, restored))
		{
			char *name = lfirst(lc);

			/* a name that is not a staged file's is never a path (it is no file of ours) */
			if (staged_file_name_is_valid(name))
			{
				char *path = palloc(MAXPGPATH);

				staged_file_path(path, MyDatabaseId, sink_id, name);
				paths = lappend(paths, path);
			}
		}
		MemoryContextSwitchTo(old);
	}
	metadata_discard_properties_after(sink_id, commit_user, restored);
	metadata_move_marks(MARK_REWIND_PREPARED, sink_id, commit_user, restored);
	work_end();

	/* files of kept checkpoints are committed and gone; the rest are orphans */
	foreach (lc, paths)
	{
		if (staged_file_remove(lfirst(lc)) == 0)
			request->discarded_files++;
		else if (errno != ENOENT)
			ereport(WARNING,
					(errcode_for_file_access(),
					 errmsg("could not remove staged file \"%s\": %m", (char *) lfirst(lc)),
					 errhint("paimon_sink.remove_orphan_files() removes it later.")));
	}
	ereport(LOG,
			(errmsg("paimon_sink recovered commit user \"%s\" of sink %d at checkpoint %lld: "
					"committed up to %lld, discarded %d checkpoints and %d files",
					commit_user, sink_id, (long long) restored, (long long) request->last_committed,
					request->discarded_checkpoints, request->discarded_files)));
}

/*
 * restore_end fails a restore in mode restore_and_fail once it committed
 * checkpoints, so that the job restarts (Paimon's behaviour).
 */
static void
restore_end(const char *commit_user, int mode, const CommitterRequest *request)
{
	if (mode == RECOVER_RESTORE_AND_FAIL &&
		request->last_committed > request->previous_last_committed)
		ereport(
			ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("recovery committed checkpoints %lld to %lld of commit user \"%s\"; restart "
					"the job",
					(long long) request->previous_last_committed + 1,
					(long long) request->last_committed, commit_user),
			 errdetail(
				 "This error is intended (mode restore_and_fail): the commits are done, and the "
				 "job restarts from them, as Paimon's committer does after a filter-and-commit."),
			 errhint("Restart the job; the next recover() finds nothing to commit.")));
}

/*
 * recovery_restore serves recover(): a job restores from checkpoint "restored".  Its in-doubt
 * transactions are already finished (every request starts so); its prepared
 * checkpoints up to "restored" are committed (Paimon's filter-and-commit);
 * what it staged or prepared after "restored" is discarded, since its source
 * replays it (and the properties it gave them).  A restore below the last
 * committed checkpoint is refused: the replay would commit rows a second
 * time.  A negative "restored" (restart_job() without one) restores to the
 * last committed checkpoint as the committer finds it, so that a commit of
 * the failed attempt still queued before it cannot make the restore stale.
 */
void
recovery_restore(int32 sink_id, const char *commit_user, int64 restored, int mode,
				 CommitterRequest *request)
{
	List *sink_ids = list_make1_int(sink_id);

	restored = request->checkpoint_id =
		restore_check(sink_ids, commit_user, restored, &request->recommitted_checkpoints);
	commit_up_to(sink_id, commit_user, restored, request);
	restore_fence(sink_ids, commit_user, request->job_restart);
	request->discarded_checkpoints = request->discarded_files = 0;
	restore_discard(sink_id, commit_user, restored, request);
	restore_end(commit_user, mode, request);
}

/*
 * recovery_restore_group serves recover() of a sink group: every member's
 * commit user is checked as recovery_restore does (a negative "restored"
 * is the first member's last committed checkpoint), their
 * prepared checkpoints up to "restored" are committed together, in one
 * prepared transaction (commit_group_up_to), then every member is fenced,
 * in one transaction, and what each staged or prepared after it is
 * discarded.
 */
void
recovery_restore_group(int32 group_id, const char *commit_user, int64 restored, int mode,
					   CommitterRequest *request)
{
	List *members = commit_group_members(group_id);
	ListCell *lc;

	restored = request->checkpoint_id =
		restore_check(members, commit_user, restored, &request->recommitted_checkpoints);
	commit_group_up_to(group_id, commit_user, restored, request);
	restore_fence(members, commit_user, request->job_restart);
	request->discarded_checkpoints = request->discarded_files = 0;
	foreach (lc, members)
		restore_discard(lfirst_int(lc), commit_user, restored, request);
	restore_end(commit_user, mode, request);
}
