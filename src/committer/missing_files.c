/*-------------------------------------------------------------------------
 *
 * missing_files.c
 *	  discard_missing_files(): going on without the staged files of pending
 *	  checkpoints that are gone.
 *
 * A prepared checkpoint whose staged file is missing (deleted by hand,
 * never copied to a promoted standby) cannot be committed: every commit of
 * its commit user fails with 58P01, and the sink's own commit user, which
 * recover() refuses, would be wedged for good.  The owner's way forward,
 * besides restoring the files, is to forget the committables of the files
 * that are gone, losing their rows and saying so: the next commit then
 * commits what exists, and a checkpoint left with no file commits as an
 * empty one (the marks move over it; no snapshot).
 *
 * Only files that stat() reports as absent (ENOENT, ENOTDIR) are forgotten; a file that
 * exists is never touched, nor is one that belongs to no pending
 * checkpoint.  Every request starts by finishing our in-doubt
 * transactions, so no prepared transaction holds the rows forgotten here.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <sys/stat.h>

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"

#include "committer/missing_files.h"
#include "committer/work.h"
#include "staging/staged_file.h"

/*
 * missing_files_discard serves discard_missing_files(): forgets the pending
 * committables of commit_user whose staged files are missing, and lists
 * them in maintenance_result for the requester (request->seq).  request
 * gets the files, rows and checkpoints forgotten.  Raises the file-access
 * SQLSTATE (errcode_for_file_access) of a stat() that fails otherwise than
 * for a missing file: that file may exist, so nothing is forgotten.
 */
void
missing_files_discard(int32 sink_id, const char *commit_user, CommitterRequest *request)
{
	ArrayBuildState *names = NULL;
	StringInfoData paths;
	ListCell *lc;
	SinkInfo *sink;
	int64 forgotten = 0;

	request->discarded_files = 0;
	request->discarded_checkpoints = 0;
	request->discarded_rows = 0;
	initStringInfo(&paths);

	work_begin();
	sink = work_require_sink(sink_id);
	foreach (lc, metadata_pending_checkpoints(sink_id, commit_user, PG_INT64_MAX))
	{
		int64 checkpoint_id = *(int64 *) lfirst(lc);
		bool any = false;
		ListCell *file_cell;

		foreach (file_cell, metadata_checkpoint_files(sink_id, commit_user, checkpoint_id))
		{
			CheckpointFile *file = lfirst(file_cell);
			char path[MAXPGPATH];
			struct stat st;

			/* a name that is not a staged file's is never a path (commit says so) */
			if (!staged_file_name_is_valid(file->file_name))
				continue;
			staged_file_path(path, MyDatabaseId, sink_id, file->file_name);
			if (stat(path, &st) == 0)
				continue;
			if (errno != ENOENT && errno != ENOTDIR)
				ereport(ERROR, (errcode_for_file_access(),
								errmsg("could not stat staged file \"%s\": %m", path),
								errdetail("Nothing was discarded: the file may exist.")));
			names = accumArrayResult(names, CStringGetTextDatum(file->file_name), false, TEXTOID,
									 CurrentMemoryContext);
			appendStringInfo(&paths, "%s%s", paths.len ? ", " : "", path);
			request->discarded_rows += file->row_count;
			request->discarded_files++;
			any = true;
		}
		if (any)
			request->discarded_checkpoints++;
	}
	if (names != NULL)
		forgotten = metadata_forget_files(
			sink_id, commit_user, makeArrayResult(names, CurrentMemoryContext), request->seq);
	/* only this committer changes committables: what it read is what it forgot */
	if (forgotten != request->discarded_files)
		elog(ERROR, "paimon_sink forgot %lld committables of %d missing files",
			 (long long) forgotten, request->discarded_files);
	work_end();

	if (request->discarded_files > 0)
		ereport(LOG, (errmsg_plural("paimon_sink discarded %d missing staged file of commit user "
									"\"%s\" of sink \"%s\": %lld rows lost",
									"paimon_sink discarded %d missing staged files of commit user "
									"\"%s\" of sink \"%s\": %lld rows lost",
									request->discarded_files, request->discarded_files, commit_user,
									sink->name, (long long) request->discarded_rows),
					  errdetail("Pending checkpoints affected: %d. Missing: %s.",
								request->discarded_checkpoints, paths.data)));
}
