/*-------------------------------------------------------------------------
 *
 * open_staged.c
 *	  The rows and bytes staged in writers' open files, per writer, sink
 *	  and commit user, for the view sink_stats.
 *
 * A writer's open files hold the batches it staged since the last
 * checkpoint barrier sealed its streams (and those a barrier carried
 * forward, of transactions still running).  The writer keeps them in its
 * own memory; this table publishes their sums, one entry per (database,
 * writer, sink, commit user), in a fixed-size shared hash sized by
 * paimon_sink.max_open_stats as pg_stat_statements sizes its table
 * (pg_stat_statements.max).  Each entry is its writer's alone: only that
 * writer enters, changes and removes it (under the table's lock to enter
 * or remove, under the entry's mutex to change), so it keeps a pointer to
 * it; readers take the lock shared and each entry's mutex.  A writer that
 * finds the table full counts what did not fit in its WriterEntry
 * (open_staged_omitted), and readers then report the database's totals as
 * unknown rather than short.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/hsearch.h"

#include "core/guc.h"
#include "core/open_staged.h"
#include "core/shared_state.h"

#define OPEN_STAGED_TRANCHE "paimon_sink open staged"

static HTAB *open_staged_table = NULL;
static LWLock *open_staged_lock = NULL;

/* table_size returns the bytes of the shared hash at paimon_sink.max_open_stats entries. */
static Size
table_size(void)
{
	return hash_estimate_size(PaimonSinkMaxOpenStats, sizeof(OpenStagedEntry));
}

/* open_staged_shmem_request asks for the table's memory and its lock (shmem_request_hook). */
void
open_staged_shmem_request(void)
{
	RequestAddinShmemSpace(table_size());
	RequestNamedLWLockTranche(OPEN_STAGED_TRANCHE, 1);
}

/*
 * open_staged_shmem_init creates or attaches to the table
 * (shmem_startup_hook; the caller holds AddinShmemInitLock).  A crash
 * restart makes it anew, empty: the writers count their adopted files
 * again.
 */
void
open_staged_shmem_init(void)
{
	HASHCTL info;

	memset(&info, 0, sizeof(info));
	info.keysize = sizeof(OpenStagedKey);
	info.entrysize = sizeof(OpenStagedEntry);
	open_staged_table = ShmemInitHash(OPEN_STAGED_TRANCHE, PaimonSinkMaxOpenStats,
									  PaimonSinkMaxOpenStats, &info, HASH_ELEM | HASH_BLOBS);
	open_staged_lock = &(GetNamedLWLockTranche(OPEN_STAGED_TRANCHE))->lock;
}

/* make_key fills the key of this database's writer, sink and commit user. */
static void
make_key(OpenStagedKey *key, Oid database_id, int32 writer_index, int32 sink_id,
		 const char *commit_user)
{
	memset(key, 0, sizeof(*key));
	key->database_id = database_id;
	key->writer_index = writer_index;
	key->sink_id = sink_id;
	strlcpy(key->commit_user, commit_user, sizeof(key->commit_user));
}

/*
 * open_staged_enter returns the entry of this database's writer
 * writer_index for a sink and commit user, made empty when new; NULL when
 * the table holds paimon_sink.max_open_stats entries already (or shared
 * memory ran out).  Only that writer calls it.  Raises nothing.
 */
OpenStagedEntry *
open_staged_enter(int32 writer_index, int32 sink_id, const char *commit_user)
{
	OpenStagedKey key;
	OpenStagedEntry *entry;
	bool found;

	make_key(&key, MyDatabaseId, writer_index, sink_id, commit_user);
	LWLockAcquire(open_staged_lock, LW_EXCLUSIVE);
	entry = hash_search(open_staged_table, &key, HASH_FIND, NULL);
	if (entry == NULL && hash_get_num_entries(open_staged_table) < PaimonSinkMaxOpenStats)
	{
		entry = hash_search(open_staged_table, &key, HASH_ENTER_NULL, &found);
		if (entry != NULL && !found)
		{
			SpinLockInit(&entry->mutex);
			entry->files = 0;
			entry->rows = 0;
			entry->bytes = 0;
			entry->oldest_at = 0;
		}
	}
	LWLockRelease(open_staged_lock);
	return entry;
}

/* open_staged_set sets an entry's counts (its writer's); raises nothing. */
void
open_staged_set(OpenStagedEntry *entry, int64 files, int64 rows, int64 bytes, TimestampTz oldest_at)
{
	SpinLockAcquire(&entry->mutex);
	entry->files = files;
	entry->rows = rows;
	entry->bytes = bytes;
	entry->oldest_at = oldest_at;
	SpinLockRelease(&entry->mutex);
}

/*
 * open_staged_add adds a batch just staged to an entry (its writer's):
 * files (1 for the first batch of a file, else 0), rows and bytes, and
 * staged_at, the time its file's oldest batch was staged.  Raises nothing.
 */
void
open_staged_add(OpenStagedEntry *entry, int64 files, int64 rows, int64 bytes, TimestampTz staged_at)
{
	SpinLockAcquire(&entry->mutex);
	entry->files += files;
	entry->rows += rows;
	entry->bytes += bytes;
	if (entry->oldest_at == 0 || staged_at < entry->oldest_at)
		entry->oldest_at = staged_at;
	SpinLockRelease(&entry->mutex);
}

/* open_staged_remove removes an entry (its writer's, which holds nothing open there any more). */
void
open_staged_remove(OpenStagedEntry *entry)
{
	LWLockAcquire(open_staged_lock, LW_EXCLUSIVE);
	hash_search(open_staged_table, &entry->key, HASH_REMOVE, NULL);
	LWLockRelease(open_staged_lock);
}

/*
 * open_staged_forget_writer removes every entry of a database's writer: at
 * its start (an earlier process may have left without its exit callback)
 * and at its exit, its open files then being no one's until the next
 * process adopts them.  Raises nothing.
 */
void
open_staged_forget_writer(Oid database_id, int32 writer_index)
{
	HASH_SEQ_STATUS status;
	OpenStagedEntry *entry;

	if (open_staged_table == NULL)
		return;
	LWLockAcquire(open_staged_lock, LW_EXCLUSIVE);
	hash_seq_init(&status, open_staged_table);
	while ((entry = hash_seq_search(&status)) != NULL)
		if (entry->key.database_id == database_id && entry->key.writer_index == writer_index)
			hash_search(open_staged_table, &entry->key, HASH_REMOVE, NULL);
	LWLockRelease(open_staged_lock);
}

/*
 * open_staged_totals sums what a database's writers hold open for a sink
 * and commit user into *totals.  complete is false when the counts are not
 * known whole: the database has no workers' entry, a writer is not serving
 * (not started, or still adopting its files after a restart: its files are
 * on disk, not yet counted), or a writer's counts did not all fit the
 * table.  Raises nothing.
 */
void
open_staged_totals(Oid database_id, int32 sink_id, const char *commit_user,
				   OpenStagedTotals *totals)
{
	int index;
	DatabaseEntry *db;

	memset(totals, 0, sizeof(*totals));
	if (open_staged_table == NULL || PaimonSinkState == NULL)
		return;
	LWLockAcquire(PaimonSinkState->lock, LW_SHARED);
	index = shared_find_database(database_id);
	LWLockRelease(PaimonSinkState->lock);
	if (index < 0)
		return;
	db = shared_database(index);
	totals->complete = true;
	LWLockAcquire(open_staged_lock, LW_SHARED);
	for (int w = 0; w < PaimonSinkState->writers_per_database; w++)
	{
		WriterEntry *writer = shared_writer(db, w);
		OpenStagedKey key;
		OpenStagedEntry *entry;
		bool ready;

		SpinLockAcquire(&writer->mutex);
		ready = writer->ready && writer->pid != 0;
		SpinLockRelease(&writer->mutex);
		if (!ready || pg_atomic_read_u32(&writer->open_staged_omitted) != 0)
			totals->complete = false;
		make_key(&key, database_id, w, sink_id, commit_user);
		entry = hash_search(open_staged_table, &key, HASH_FIND, NULL);
		if (entry == NULL)
			continue;
		SpinLockAcquire(&entry->mutex);
		totals->files += entry->files;
		totals->rows += entry->rows;
		totals->bytes += entry->bytes;
		if (entry->oldest_at != 0 &&
			(totals->oldest_at == 0 || entry->oldest_at < totals->oldest_at))
			totals->oldest_at = entry->oldest_at;
		SpinLockRelease(&entry->mutex);
	}
	LWLockRelease(open_staged_lock);
}
