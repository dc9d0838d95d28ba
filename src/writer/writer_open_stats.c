/*-------------------------------------------------------------------------
 *
 * writer_open_stats.c
 *	  A writer's rows and bytes in open staged files (written, not yet
 *	  sealed into a checkpoint's committables), published per sink and
 *	  commit user in core/open_staged.c's shared table for sink_stats.
 *
 * Each batch appended (writer.c) is added at once to its (sink, commit
 * user)'s entry.  What leaves the open files, the writer does not
 * subtract batch by batch: after each barrier answer (writer_barrier.c),
 * after the adoption of staged files at its start (writer_adopt.c) and
 * after it forgot dropped sinks, it sums its streams' open files again and
 * sets every entry to the sums, removing the entries of what it no longer
 * holds.  So a checkpoint's sealed batches leave the counts, a rolled back
 * transaction's leave them as the barrier that finds it aborted leaves
 * them out, and the batches carried forward (of transactions still
 * running) stay counted, with their first staging's time.  Adopted
 * files are counted from the adoption: their first staging's time is not
 * recorded, so their age starts at the adoption.  A (sink, commit user)
 * that does not fit the table is counted in WriterEntry.open_staged_omitted
 * (readers then report the database's counts as unknown) and logged once
 * per process; the next summing tries it again.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/hsearch.h"
#include "utils/timestamp.h"

#include "core/guc.h"
#include "core/open_staged.h"
#include "writer/writer_internal.h"
#include "writer/writer_open_stats.h"

/* This writer's (sink, commit user) whose open rows it published, or tried to. */
typedef struct OpenStatsKey
{
	int32 sink_id;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
} OpenStatsKey;

typedef struct OpenStats
{
	OpenStatsKey key;		/* hash key */
	OpenStagedEntry *entry; /* NULL: it did not fit the table (or not entered yet) */
	bool refused;			/* the table was full: tried again only by the next summing */
	int64 files;
	int64 rows;
	int64 bytes;
	TimestampTz oldest_at;
	bool seen; /* by the summing in progress */
} OpenStats;

static HTAB *published = NULL;
static bool warned = false;

/*
 * warn_omitted logs, once per process, that a (sink, commit user) did not
 * fit the table.
 */
static void
warn_omitted(const OpenStatsKey *key)
{
	if (warned)
		return;
	warned = true;
	ereport(WARNING,
			(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
			 errmsg("paimon_sink writer %d cannot count the rows of commit user \"%s\" of sink %d "
					"in its open staged files",
					MyWriterIndex, key->commit_user, key->sink_id),
			 errdetail("All %d entries of the table of open staged rows are in use; sink_stats "
					   "shows open_files, open_rows, open_bytes and oldest_open_at as NULL for "
					   "this database until they fit.",
					   PaimonSinkMaxOpenStats),
			 errhint("Raise paimon_sink.max_open_stats and restart the server.")));
}

/*
 * stats_of returns this writer's OpenStats of a stream's sink and commit
 * user, made (and entered in the shared table when enter) on first use.
 */
static OpenStats *
stats_of(const Stream *stream, bool enter)
{
	OpenStatsKey key;
	OpenStats *stats;
	bool found;

	memset(&key, 0, sizeof(key));
	key.sink_id = stream->id.sink_id;
	strlcpy(key.commit_user, stream->id.commit_user, sizeof(key.commit_user));
	stats = hash_search(published, &key, HASH_ENTER, &found);
	if (!found)
	{
		stats->entry = NULL;
		stats->files = stats->rows = stats->bytes = 0;
		stats->oldest_at = 0;
		stats->seen = false;
		stats->refused = false;
	}
	if (enter && stats->entry == NULL && !stats->refused)
	{
		stats->entry = open_staged_enter(MyWriterIndex, key.sink_id, key.commit_user);
		stats->refused = stats->entry == NULL;
		if (stats->refused)
			warn_omitted(&key);
	}
	return stats;
}

/* count_omitted publishes how many of this writer's (sink, commit user) did not fit. */
static void
count_omitted(void)
{
	HASH_SEQ_STATUS status;
	OpenStats *stats;
	uint32 omitted = 0;

	hash_seq_init(&status, published);
	while ((stats = hash_seq_search(&status)) != NULL)
		if (stats->entry == NULL)
			omitted++;
	pg_atomic_write_u32(&MyWriter->open_staged_omitted, omitted);
}

/*
 * writer_open_stats_start forgets whatever an earlier process of this
 * writer left in the table and makes this process's map (in
 * WriterContext), before it adopts any file.
 */
void
writer_open_stats_start(void)
{
	HASHCTL hash;

	open_staged_forget_writer(MyDatabaseId, MyWriterIndex);
	pg_atomic_write_u32(&MyWriter->open_staged_omitted, 0);
	memset(&hash, 0, sizeof(hash));
	hash.keysize = sizeof(OpenStatsKey);
	hash.entrysize = sizeof(OpenStats);
	hash.hcxt = WriterContext;
	published = hash_create("paimon_sink open staged rows", 64, &hash,
							HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/*
 * writer_open_stats_added adds a batch just appended to a stream's file:
 * its rows and bytes (header and payload), the file once at its first
 * batch, and the time the file's oldest batch was staged.
 */
void
writer_open_stats_added(Stream *stream, OpenFile *file, bool first_batch, uint32 rows, uint64 bytes)
{
	OpenStats *stats = stats_of(stream, true);
	bool was_omitted = pg_atomic_read_u32(&MyWriter->open_staged_omitted) != 0;

	stats->seen = true;
	if (stats->entry != NULL)
		open_staged_add(stats->entry, first_batch ? 1 : 0, rows, (int64) bytes, file->staged_at);
	else if (!was_omitted)
		count_omitted();
}

/*
 * sum_stream adds a stream's open files to its OpenStats: each file,
 * the rows and bytes of its batches that may still count (not a carried
 * copy whose original stands), and its first staging's time.
 */
static void
sum_stream(const Stream *stream, OpenStats *stats)
{
	ListCell *lc;

	foreach (lc, stream->open_files)
	{
		OpenFile *file = lfirst(lc);

		if (file->batch_count > 0)
			stats->files++;
		for (int b = 0; b < file->batch_count; b++)
		{
			if (file->batches[b].dead)
				continue;
			stats->rows += (int64) file->batches[b].rows;
			stats->bytes += (int64) file->batches[b].length;
		}
		if (file->staged_at != 0 && (stats->oldest_at == 0 || file->staged_at < stats->oldest_at))
			stats->oldest_at = file->staged_at;
	}
}

/*
 * writer_open_stats_publish sums this writer's open files per sink and
 * commit user again and sets the table to the sums: entries of what it no
 * longer holds open are removed, those that did not fit are tried again.
 */
void
writer_open_stats_publish(void)
{
	HASH_SEQ_STATUS status;
	Stream *stream;
	OpenStats *stats;

	hash_seq_init(&status, published);
	while ((stats = hash_seq_search(&status)) != NULL)
	{
		stats->files = stats->rows = stats->bytes = 0;
		stats->oldest_at = 0;
		stats->seen = false;
	}
	hash_seq_init(&status, WriterStreams);
	while ((stream = hash_seq_search(&status)) != NULL)
	{
		if (stream->open_files == NIL)
			continue;
		stats = stats_of(stream, false);
		stats->seen = true;
		sum_stream(stream, stats);
	}
	hash_seq_init(&status, published);
	while ((stats = hash_seq_search(&status)) != NULL)
	{
		if (!stats->seen)
		{
			if (stats->entry != NULL)
				open_staged_remove(stats->entry);
			hash_search(published, &stats->key, HASH_REMOVE, NULL);
			continue;
		}
		if (stats->entry == NULL)
		{
			stats->entry =
				open_staged_enter(MyWriterIndex, stats->key.sink_id, stats->key.commit_user);
			stats->refused = stats->entry == NULL;
			if (stats->refused)
				warn_omitted(&stats->key);
		}
		if (stats->entry != NULL)
			open_staged_set(stats->entry, stats->files, stats->rows, stats->bytes,
							stats->oldest_at);
	}
	count_omitted();
}

/*
 * writer_open_stats_exit removes this writer's entries (from its exit
 * callback): its open files are no process's until the next one adopts
 * them, and readers count the database's totals as unknown meanwhile.
 */
void
writer_open_stats_exit(void)
{
	open_staged_forget_writer(MyDatabaseId, MyWriterIndex);
	pg_atomic_write_u32(&MyWriter->open_staged_omitted, 0);
}
