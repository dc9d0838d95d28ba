/*-------------------------------------------------------------------------
 *
 * fdw_session.c
 *	  What a session knows of the sinks it writes: each foreign table's sink
 *	  with the layouts of its foreign table and target, cached for the
 *	  session, and the fence epoch the session joined per (sink, commit
 *	  user).
 *
 * Apart from fdw.c, which keeps the FdwRoutine, the validator and the insert
 * path: this file is the session's state those callbacks read (and
 * api.c, for a prepare with properties, and guc.c, when the commit user is
 * set), dropped on catalog invalidations or read again per transaction.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "storage/proc.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/typcache.h"

#include "metadata/catalog.h"
#include "metadata/fence.h"
#include "metadata/metadata.h"
#include "metadata/version.h"
#include "session/fdw_session.h"

/*
 * The sinks of the foreign tables this session used, by foreign table OID,
 * with both layouts checked: a statement reads no catalog for them.  An
 * entry is dropped when the relcache entry of its foreign table or target is
 * invalidated: drop_sink drops the foreign table, and ALTER TABLE or ALTER
 * FOREIGN TABLE ... OPTIONS of either invalidates it (postgres_fdw keeps its
 * connections the same way, dropping them on catalog invalidations).
 */
typedef struct SinkCacheEntry
{
	Oid foreign_table; /* hash key */
	bool valid;
	MemoryContext context; /* holds the layout's strings and arrays */
	SinkLayout layout;
} SinkCacheEntry;

static HTAB *sink_cache = NULL;

/* sink_cache_invalidate marks stale the cached sinks of a changed foreign table or target. */
static void
sink_cache_invalidate(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	SinkCacheEntry *entry;

	hash_seq_init(&status, sink_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (relid == InvalidOid || entry->foreign_table == relid ||
			entry->layout.sink.target == relid)
			entry->valid = false;
	}
}

/* The sink id option of a foreign table, or -1. */
static int32
sink_id_option(Oid relid)
{
	ForeignTable *table = GetForeignTable(relid);
	ListCell *lc;

	foreach (lc, table->options)
	{
		DefElem *def = lfirst(lc);

		if (strcmp(def->defname, "sink_id") == 0)
			return pg_strtoint32(defGetString(def));
	}
	return -1;
}

/* What the layouts give each statement, computed once per entry. */
static void
derive_layout(SinkLayout *layout, Relation rel, Relation target)
{
	TupleDesc desc = RelationGetDescr(rel);
	TupleDesc target_desc = RelationGetDescr(target);
	ListCell *lc;
	int i = 0;

	layout->columns = palloc(sizeof(AttrNumber) * desc->natts);
	layout->send_functions = palloc(sizeof(FmgrInfo) * desc->natts);
	layout->encodings = palloc(sizeof(ValueEncoding) * desc->natts);
	for (int a = 0; a < desc->natts; a++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, a);
		Oid send;
		bool varlena;

		if (attr->attisdropped)
			continue;
		getTypeBinaryOutputInfo(attr->atttypid, &send, &varlena);
		fmgr_info_cxt(send, &layout->send_functions[layout->column_count], CurrentMemoryContext);
		layout->encodings[layout->column_count] = value_encoding_of(send);
		layout->columns[layout->column_count++] = attr->attnum;
	}
	layout->bucket_key_count = list_length(layout->sink.bucket_key);
	layout->bucket_attnums = palloc(sizeof(AttrNumber) * Max(1, layout->bucket_key_count));
	foreach (lc, layout->sink.bucket_key)
	{
		AttrNumber attnum = get_attnum(RelationGetRelid(rel), lfirst(lc));

		if (attnum == InvalidAttrNumber)
			ereport(
				ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("bucket key column \"%s\" of sink \"%s\" is missing from its foreign table",
						(char *) lfirst(lc), layout->sink.name)));
		layout->bucket_attnums[i++] = attnum;
	}
	layout->bucket_hash = palloc0(sizeof(FmgrInfo) * Max(1, layout->bucket_key_count));
	layout->bucket_collation = palloc0(sizeof(Oid) * Max(1, layout->bucket_key_count));
	for (int k = 0; k < layout->bucket_key_count; k++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, layout->bucket_attnums[k] - 1);
		TypeCacheEntry *type = lookup_type_cache(attr->atttypid, TYPECACHE_HASH_PROC);

		/* equal values (1.0 and 1.00, or under a nondeterministic collation) meet */
		if (OidIsValid(type->hash_proc))
			fmgr_info_cxt(type->hash_proc, &layout->bucket_hash[k], CurrentMemoryContext);
		layout->bucket_collation[k] = attr->attcollation;
	}
	layout->upsert = SINK_IS_UPSERT(&layout->sink);
	layout->is_key = palloc0(sizeof(bool) * desc->natts);
	if (layout->upsert)
	{
		ListCell *key;
		int k = 0;

		/* the key is the one the sink was created with: its recorded names */
		(void) catalog_check_primary_key(&layout->sink, target);
		/* the layout check found the foreign table as create_sink made it */
		layout->row_kind_attnum = get_attnum(RelationGetRelid(rel), layout->sink.row_kind_column);
		Assert(layout->row_kind_attnum != InvalidAttrNumber);
		layout->key_count = list_length(layout->sink.key_columns);
		layout->key_attnums = palloc(sizeof(AttrNumber) * layout->key_count);
		foreach (key, layout->sink.key_columns)
		{
			AttrNumber attnum = get_attnum(RelationGetRelid(rel), lfirst(key));

			if (attnum == InvalidAttrNumber)
				elog(ERROR, "key column \"%s\" of sink \"%s\" is missing from its foreign table",
					 (char *) lfirst(key), layout->sink.name);
			layout->key_attnums[k++] = attnum;
			layout->is_key[attnum - 1] = true;
		}
	}
	layout->target_map = palloc0(sizeof(AttrNumber) * target_desc->natts);
	for (int a = 0; a < target_desc->natts; a++)
	{
		Form_pg_attribute attr = TupleDescAttr(target_desc, a);

		if (!attr->attisdropped)
			layout->target_map[a] = get_attnum(RelationGetRelid(rel), NameStr(attr->attname));
	}
}

/*
 * fdw_sink_of_foreign_table returns the sink of a foreign table, from the
 * session's cache.  With rel and its target open, the layouts are checked
 * both ways and what they give each statement is derived; without, only the
 * definition is read (and the entry stays to be checked).  An entry read
 * again leaves its old memory to the end of the transaction, where a
 * running statement may still use it.  Raises ERRCODE_FDW_TABLE_NOT_FOUND
 * when the table is not a sink's, and what the version check
 * (paimon_sink_require_ready) and the layout checks (catalog_check_layout,
 * catalog_check_primary_key) raise.
 */
const SinkLayout *
fdw_sink_of_foreign_table(Oid relid, Relation rel, Relation target)
{
	SinkCacheEntry *entry;
	bool found;
	MemoryContext old;
	int32 sink_id;

	if (sink_cache == NULL)
	{
		HASHCTL ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(SinkCacheEntry);
		ctl.hcxt = CacheMemoryContext;
		sink_cache = hash_create("paimon_sink sinks of foreign tables", 16, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
		CacheRegisterRelcacheCallback(sink_cache_invalidate, (Datum) 0);
	}
	entry = hash_search(sink_cache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		entry->valid = false;
		entry->context = NULL;
	}
	if (entry->valid)
		return &entry->layout;

	/*
	 * The layout is read in the catalog's shape: the library must match it.
	 * Checked here, on a cache miss, not on every statement: a new library
	 * needs a restart, whose backends start with an empty cache.
	 */
	paimon_sink_require_ready();

	if (entry->context != NULL)
		MemoryContextSetParent(entry->context, TopTransactionContext);
	entry->context =
		AllocSetContextCreate(CacheMemoryContext, "paimon_sink sink", ALLOCSET_SMALL_SIZES);
	memset(&entry->layout, 0, sizeof(entry->layout));
	sink_id = sink_id_option(relid);
	old = MemoryContextSwitchTo(entry->context);
	found = sink_id >= 0 && metadata_sink_by_id(sink_id, &entry->layout.sink) &&
			entry->layout.sink.foreign_table == relid;
	if (found && rel != NULL)
	{
		/* rows are staged in the layout the sink records (create_sink, alter_sink), checked both ways */
		catalog_check_layout(&entry->layout.sink, relid, true);
		catalog_check_layout(&entry->layout.sink, RelationGetRelid(target), false);
		derive_layout(&entry->layout, rel, target);
	}
	MemoryContextSwitchTo(old);
	if (!found)
		ereport(
			ERROR,
			(errcode(ERRCODE_FDW_TABLE_NOT_FOUND),
			 errmsg("foreign table \"%s\" is not the foreign table of a sink", get_rel_name(relid)),
			 errdetail("Its sink_id option names no sink that owns this table."),
			 errhint("Create sinks and their foreign tables with paimon_sink.create_sink().")));
	entry->valid = rel != NULL;
	return &entry->layout;
}

/*
 * read_commit_user_state reads the commit user's fence epoch now (see
 * recover()) and whether it is a job's into *epoch and *epoch_required (0
 * and false for a commit user the sink has never seen), and refuses a
 * commit user whose input has ended (end_input() prepared its checkpoint),
 * since its rows could never be committed.
 */
static void
read_commit_user_state(const SinkInfo *sink, const char *commit_user, uint64 *epoch,
					   bool *epoch_required)
{
	CommitUserMarks marks;
	bool found = metadata_read_commit_user(sink->sink_id, commit_user, true, &marks);
	bool ended = found && (marks.last_committed == PAIMON_SINK_END_INPUT_CHECKPOINT ||
						   marks.last_prepared == PAIMON_SINK_END_INPUT_CHECKPOINT);

	if (ended)
		ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						errmsg("commit user \"%s\" of sink \"%s\" has ended its input", commit_user,
							   sink->name),
						errdetail("end_input() prepared its last checkpoint; rows written now "
								  "could never be committed."),
						errhint("Write with a new commit user (paimon_sink.commit_user).")));
	*epoch = found ? marks.fence_epoch : 0;
	*epoch_required = found && marks.epoch_required;
}

/*
 * What the session knows of a commit user of a sink it wrote for: the
 * fence epoch it joined (a commit user that is not a job's: the one it
 * first wrote under, or the current one after it set
 * paimon_sink.commit_user again), and the commit user's current epoch and
 * whether it is a job's.  A job's commit user (restart_job()) joins
 * nothing: each write names its epoch (fence.c).  A session of the failed
 * attempt still running (a zombie) is refused from then on, as Kafka
 * refuses a producer whose epoch is stale.  The writers fence the rows
 * themselves; this only refuses early.  The state is read at the first
 * write and again in the first transaction after any commit user of the
 * database had its fence epoch raised or its input ended: those commits
 * send a relcache invalidation of commit_user_state (metadata.c), which a
 * session takes in at its next transaction's start, as it takes in any
 * catalog change.  Reading it in every transaction was a statement of its
 * own in each small transaction (a tenth of the session's time in many
 * small ones).  Sinks that have a job's commit user are kept the same way
 * (SessionSink).
 */
typedef struct SessionEpoch
{
	pg_uuid_t sink_uuid;
	bool joined;		  /* fence_epoch was joined (not a job's commit user) */
	uint64 fence_epoch;	  /* the joined one */
	uint64 current_epoch; /* the commit user's, when read */
	bool epoch_required;  /* a job's commit user, when read */
	bool current;		  /* no invalidation came since it was read */
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
} SessionEpoch;

/* Whether a sink has a job's commit user, as the session read it. */
typedef struct SessionSink
{
	pg_uuid_t sink_uuid;
	bool has_job;
	bool current; /* no invalidation came since it was read */
} SessionSink;

static List *session_epochs = NIL;
static List *session_sinks = NIL;
static bool epoch_callback_registered = false;
static uint64 epoch_invalidations = 0; /* counted by session_epochs_invalidate */

/* commit_user_state's oid when the session last read a commit user's state */
static Oid commit_user_state_table = InvalidOid;

/*
 * session_epochs_invalidate is the relcache callback that makes the session
 * read every commit user's state again at its next write: an invalidation of
 * commit_user_state, or of every relation.
 */
static void
session_epochs_invalidate(Datum arg, Oid relid)
{
	ListCell *lc;

	if (relid != InvalidOid && relid != commit_user_state_table)
		return;
	epoch_invalidations++;
	foreach (lc, session_epochs)
		((SessionEpoch *) lfirst(lc))->current = false;
	foreach (lc, session_sinks)
		((SessionSink *) lfirst(lc))->current = false;
}

/* prepare_state_read registers the invalidation callback and notes the table it watches. */
static void
prepare_state_read(void)
{
	if (!epoch_callback_registered)
	{
		CacheRegisterRelcacheCallback(session_epochs_invalidate, (Datum) 0);
		epoch_callback_registered = true;
	}
	commit_user_state_table = metadata_commit_user_state_table();
}

/*
 * fdw_session_refuse_ended refuses (ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE)
 * at a transaction's hand-off a commit user whose input ended since the
 * session last read its state: handoff.c calls it holding the commit user's
 * lock (stream_lock.c), after taking in invalidations, so that end_input()
 * has either taken this transaction's rows or is seen here.  The state is
 * read only when an invalidation came since (end_input() sends one as it
 * prepares); the fence epoch is left to the next write (a zombie's rows are
 * fenced at the barrier whether its commit succeeds or not).
 */
void
fdw_session_refuse_ended(int32 sink_id, const pg_uuid_t *sink_uuid, const char *commit_user)
{
	ListCell *lc;
	SinkInfo sink;
	uint64 epoch;
	bool epoch_required;

	foreach (lc, session_epochs)
	{
		SessionEpoch *entry = lfirst(lc);

		if (memcmp(&entry->sink_uuid, sink_uuid, sizeof(pg_uuid_t)) == 0 &&
			strcmp(entry->commit_user, commit_user) == 0 && entry->current)
			return;
	}
	/* at a commit's pre-commit no snapshot is active: the reads take one */
	PushActiveSnapshot(GetTransactionSnapshot());
	/* a dropped sink: drop_sink and the writers see to its rows */
	if (metadata_sink_by_id(sink_id, &sink) &&
		memcmp(&sink.sink_uuid, sink_uuid, sizeof(pg_uuid_t)) == 0)
		read_commit_user_state(&sink, commit_user, &epoch, &epoch_required);
	PopActiveSnapshot();
}

/*
 * fdw_forget_fence_epochs: the session joins each commit user's current
 * fence epoch at its next write (a job's commit user joins none).  Called
 * when paimon_sink.commit_user is set.
 */
void
fdw_forget_fence_epochs(void)
{
	ListCell *lc;

	foreach (lc, session_epochs)
		((SessionEpoch *) lfirst(lc))->joined = false;
}

/*
 * session_epoch returns the session's entry of a commit user of a sink,
 * read again when an invalidation came since (or first made).
 */
static SessionEpoch *
session_epoch(const SinkInfo *sink, const char *commit_user)
{
	ListCell *lc;
	SessionEpoch *entry = NULL;
	uint64 seen;

	foreach (lc, session_epochs)
	{
		SessionEpoch *candidate = lfirst(lc);

		if (memcmp(&candidate->sink_uuid, &sink->sink_uuid, sizeof(pg_uuid_t)) == 0 &&
			strcmp(candidate->commit_user, commit_user) == 0)
		{
			entry = candidate;
			break;
		}
	}
	if (entry != NULL && entry->current)
		return entry;

	prepare_state_read();
	if (entry == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

		entry = palloc0(sizeof(SessionEpoch));
		entry->sink_uuid = sink->sink_uuid;
		strlcpy(entry->commit_user, commit_user, sizeof(entry->commit_user));
		session_epochs = lappend(session_epochs, entry);
		MemoryContextSwitchTo(old);
	}
	/*
	 * Read under a snapshot taken now, after every invalidation taken in so
	 * far: an invalidation taken during the read (its snapshot may predate
	 * the commit that sent it) leaves the entry to be read again.
	 */
	seen = epoch_invalidations;
	read_commit_user_state(sink, commit_user, &entry->current_epoch, &entry->epoch_required);
	entry->current = epoch_invalidations == seen;
	return entry;
}

/*
 * fdw_session_write_epoch returns the fence epoch a write of this session
 * for the commit user of a sink carries to the writers (which fence it at
 * the barrier once a restore raised the commit user's since).  named is
 * the epoch the write names (write_as(), or the session's
 * paimon_sink.fence_epoch), FENCE_EPOCH_UNNAMED for none: a named epoch
 * must be the commit user's current one, and a job's commit user takes
 * only named ones (fence.c says what it raises).  An unnamed write for any
 * other commit user joins its current epoch at the session's first write
 * (or prepare with properties), and is refused
 * (ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE) once a restore raised it
 * since.  Also what read_commit_user_state raises.
 */
uint64
fdw_session_write_epoch(const SinkInfo *sink, const char *commit_user, int64 named,
						const char *what)
{
	SessionEpoch *entry = session_epoch(sink, commit_user);

	fence_check_named(sink->name, commit_user, entry->current_epoch, entry->epoch_required, named,
					  what, "Nothing was written.");
	if (named >= 0)
		return (uint64) named;
	if (!entry->joined)
	{
		entry->joined = true;
		entry->fence_epoch = entry->current_epoch;
	}
	else if (entry->fence_epoch < entry->current_epoch)
		ereport(
			ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg(
				 "commit user \"%s\" of sink \"%s\" was recovered after this session began writing",
				 commit_user, sink->name),
			 errdetail("recover() raised the commit user's fence epoch from %llu to %llu; rows of "
					   "the restored-from attempt are replayed by the job, never committed from "
					   "its old sessions.",
					   (unsigned long long) entry->fence_epoch,
					   (unsigned long long) entry->current_epoch),
			 errhint("Write from a new session, or set paimon_sink.commit_user again to join the "
					 "restored job.")));
	return entry->fence_epoch;
}

/*
 * fdw_session_refuse_anonymous refuses (ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE)
 * a write that names no commit user (no write_as(), paimon_sink.commit_user
 * empty) into a sink that a job writes to (a commit user of it is a job's
 * and has not ended its input): staged under the sink's own commit user,
 * its rows would be committed by the sink's checkpoints beside the job's
 * own, and a job's subtask on a pooled connection that lost its settings
 * would be silently misattributed.  Naming the sink's own commit user
 * writes under it.
 */
void
fdw_session_refuse_anonymous(const SinkInfo *sink)
{
	ListCell *lc;
	SessionSink *entry = NULL;

	foreach (lc, session_sinks)
	{
		SessionSink *candidate = lfirst(lc);

		if (memcmp(&candidate->sink_uuid, &sink->sink_uuid, sizeof(pg_uuid_t)) == 0)
		{
			entry = candidate;
			break;
		}
	}
	if (entry == NULL || !entry->current)
	{
		uint64 seen;

		prepare_state_read();
		if (entry == NULL)
		{
			MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

			entry = palloc0(sizeof(SessionSink));
			entry->sink_uuid = sink->sink_uuid;
			session_sinks = lappend(session_sinks, entry);
			MemoryContextSwitchTo(old);
		}
		seen = epoch_invalidations;
		entry->has_job = metadata_sink_has_job(sink->sink_id);
		entry->current = epoch_invalidations == seen;
	}
	if (entry->has_job)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("a write into sink \"%s\" names no commit user", sink->name),
				 errdetail("A job writes into the sink (restart_job() fenced a commit user of it): "
						   "rows that name no commit user would be committed by the sink's own "
						   "checkpoints beside the job's. Nothing was written."),
				 errhint("A job's subtask names its identity in each transaction with "
						 "paimon_sink.write_as(); to write under the sink's own commit user, set "
						 "paimon_sink.commit_user to \"%s\".",
						 sink->default_commit_user)));
}
