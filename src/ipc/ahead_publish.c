/*-------------------------------------------------------------------------
 *
 * ahead_publish.c
 *	  A writer publishing a streamed transaction's own staged files, and
 *	  how far each is logged, for the loader that loads them ahead.
 *
 * A transaction that streams its rows while it runs gets a staged file of
 * its own on each writer and stream it writes to (writer.c's
 * current_file).  As a writer opens such a file it publishes it in a
 * loader entry of its database (core/shared_state.h): the entry of
 * (sink, commit user, xid) when another writer claimed one, else a free
 * one it claims, waking the committer, which decides whether to load the
 * transaction ahead (committer/load_ahead.c).  After each logged append it
 * raises the file's end and sets the loader's latch: the loader reads
 * whole batches up to the end, never a batch still being written.  The
 * table is the loader entries themselves: a claim takes the entry the
 * loader will use, so there is no second table to keep in step with it,
 * and a database with no free loader entry simply does not load ahead.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"

#include "core/guc.h"
#include "core/shared_state.h"
#include "ipc/ahead_publish.h"

/* is_ahead_state tells whether an entry in state is claimed for loading ahead. */
static bool
is_ahead_state(int state)
{
	return state == LOADER_AHEAD_WANTED || state == LOADER_AHEAD_REFUSED ||
		   state == LOADER_AHEAD_STARTED || state == LOADER_AHEAD_LOADING ||
		   state == LOADER_LOADED_AHEAD;
}

/*
 * loader_ahead_of tells whether an entry loads (or will load) another
 * transaction of (sink_id, commit_user) ahead.  One at a time: a
 * checkpoint is one transaction, which can finish the work of one loader
 * only; a second loader's work, were both transactions to come in one
 * checkpoint, would be rolled back and done again (two sessions each
 * streaming half of a job's rows had half of them loaded twice).  The
 * other transaction's rows are loaded with the checkpoint.
 */
static bool
loader_ahead_of(const LoaderEntry *loader, int32 sink_id, const char *commit_user)
{
	return (loader->state == LOADER_AHEAD_WANTED || loader->state == LOADER_AHEAD_STARTED ||
			loader->state == LOADER_AHEAD_LOADING || loader->state == LOADER_LOADED_AHEAD) &&
		   loader->sink_id == sink_id && strcmp(loader->commit_user, commit_user) == 0;
}

/*
 * ahead_publish publishes the own file file_name of the streamed
 * transaction full_xid of (sink_id, commit_user) in a loader entry of db,
 * and fills *slot with where its end is raised; slot->loader stays NULL
 * when it is not published (paimon_sink.load_ahead off, no loaders, no
 * free entry, another transaction of the sink and commit user loaded
 * ahead, the committer refused the transaction, or its entry is
 * full: then it can never match a checkpoint, and says so).  Raises
 * nothing.
 */
void
ahead_publish(DatabaseEntry *db, int32 sink_id, const char *commit_user, uint64 full_xid,
			  const char *file_name, AheadSlot *slot)
{
	LoaderEntry *found = NULL;
	bool claimed = false;
	bool busy = false;

	memset(slot, 0, sizeof(*slot));
	if (!PaimonSinkLoadAhead || PaimonSinkLoadersPerDatabase == 0)
		return;
	LWLockAcquire(PaimonSinkState->lock, LW_EXCLUSIVE);
	for (int i = 0; i < PaimonSinkLoadersPerDatabase && found == NULL; i++)
	{
		LoaderEntry *loader = shared_loader(db, i);

		if (is_ahead_state(loader->state) && loader->ahead_xid == full_xid &&
			loader->sink_id == sink_id && strcmp(loader->commit_user, commit_user) == 0)
			found = loader;
	}
	for (int i = 0; i < PaimonSinkLoadersPerDatabase && found == NULL; i++)
		if (loader_ahead_of(shared_loader(db, i), sink_id, commit_user))
			busy = true;
	for (int i = 0; i < PaimonSinkLoadersPerDatabase && found == NULL && !busy; i++)
	{
		LoaderEntry *loader = shared_loader(db, i);

		if (loader->state != LOADER_FREE || loader->pid != 0)
			continue;
		found = loader;
		claimed = true;
		loader->state = LOADER_AHEAD_WANTED;
		loader->sink_id = sink_id;
		strlcpy(loader->commit_user, commit_user, sizeof(loader->commit_user));
		loader->ahead_xid = full_xid;
		loader->ahead_generation++;
		loader->ahead_target = InvalidOid;
		loader->ahead_proc = NULL;
		loader->ahead_file_count = 0;
		loader->ahead_overflow = false;
		loader->ahead_started_at = 0;
		loader->ahead_done_at = 0;
		pg_atomic_write_u64(&loader->ahead_rows_read, 0);
		pg_atomic_write_u64(&loader->ahead_bytes_read, 0);
	}
	if (found != NULL && found->state != LOADER_AHEAD_REFUSED)
	{
		if (found->ahead_file_count < PAIMON_SINK_AHEAD_FILES)
		{
			AheadFile *file = &found->ahead_files[found->ahead_file_count];

			strlcpy(file->name, file_name, sizeof(file->name));
			pg_atomic_write_u64(&file->end, 0);
			slot->loader = found;
			slot->generation = found->ahead_generation;
			slot->file = found->ahead_file_count++;
		}
		else
			found->ahead_overflow = true;
	}
	LWLockRelease(PaimonSinkState->lock);
	/* the committer decides whether this transaction is loaded ahead */
	if (claimed && db->committer_proc != NULL)
		SetLatch(&db->committer_proc->procLatch);
}

/*
 * ahead_published raises a published file's end to end (the bytes logged
 * so far) and wakes its loader.  Not under the lock: the entry may have
 * been given up and claimed again since, which the generation tells (read
 * without the lock, a claim between the test and the write can still slip
 * through: the loader then reads a torn batch, whose checksum fails, and
 * rolls back; nothing is lost, the checkpoint loads the files).  Raises
 * nothing.
 */
void
ahead_published(const AheadSlot *slot, uint64 end)
{
	PGPROC *proc;

	if (slot->loader == NULL || slot->loader->ahead_generation != slot->generation)
		return;
	pg_atomic_write_u64(&slot->loader->ahead_files[slot->file].end, end);
	proc = slot->loader->ahead_proc;
	if (proc != NULL)
		SetLatch(&proc->procLatch);
}
