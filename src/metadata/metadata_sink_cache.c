/*-------------------------------------------------------------------------
 *
 * metadata_sink_cache.c
 *	  A process's copies of the sinks it read by id, each kept with the
 *	  version of its sink_definition row.
 *
 * The committer reads the sink a request names in every step (three times
 * a 1-row round); each read was a statement joining sink_definition with
 * pg_foreign_table and pg_class, a tenth of the committer's CPU in a loop
 * of small commits.  A row's version (its xmin and tid: any UPDATE makes a
 * new version, a DROP leaves none) is read on the primary key under the
 * same snapshot the statement would have used; while it is the version a
 * copy was made from, the copy is the row.  The owner is not part of the
 * row: it is read from the system caches each time (the foreign table's
 * pg_foreign_table row naming the sink, and its pg_class row), as the
 * statement's joins read it.  Only a superuser uses the copies: the
 * statement ran as the current role, and only a superuser is sure to pass
 * its privilege checks (and row security) whenever it ran before.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_foreign_table.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "metadata/metadata_sink_cache.h"

/* A copy of a sink and the version of the row it was made from. */
typedef struct CachedSink
{
	int32 sink_id; /* the key */
	TransactionId xmin;
	ItemPointerData tid;
	MemoryContext context; /* holds info's strings, lists and arrays */
	SinkInfo info;
} CachedSink;

static HTAB *cached_sinks = NULL;

/* copy_string returns a copy of a string in the current memory context; NULL stays NULL. */
static char *
copy_string(const char *value)
{
	return value == NULL ? NULL : pstrdup(value);
}

/* copy_names returns a copy of a List of char * in the current memory context. */
static List *
copy_names(const List *names)
{
	List *copy = NIL;
	ListCell *lc;

	foreach (lc, names)
		copy = lappend(copy, pstrdup(lfirst(lc)));
	return copy;
}

/* copy_sink copies a SinkInfo, what it points to included, into the current memory context. */
static void
copy_sink(SinkInfo *copy, const SinkInfo *info)
{
	*copy = *info;
	copy->name = copy_string(info->name);
	copy->mode = copy_string(info->mode);
	copy->bucket_key = copy_names(info->bucket_key);
	copy->default_commit_user = copy_string(info->default_commit_user);
	copy->row_kind_column = copy_string(info->row_kind_column);
	copy->key_columns = copy_names(info->key_columns);
	if (info->column_names != NULL)
	{
		copy->column_names = palloc(sizeof(char *) * Max(1, info->column_count));
		copy->column_types = palloc(sizeof(Oid) * Max(1, info->column_count));
		for (int i = 0; i < info->column_count; i++)
			copy->column_names[i] = pstrdup(info->column_names[i]);
		memcpy(copy->column_types, info->column_types, sizeof(Oid) * info->column_count);
		copy->target_attnums = palloc0(sizeof(AttrNumber) * Max(1, info->column_count));
		if (info->target_attnums != NULL)
			memcpy(copy->target_attnums, info->target_attnums,
				   sizeof(AttrNumber) * info->column_count);
	}
}

/*
 * sink_owner returns the owner of the sink's foreign table: its pg_class
 * row's, when its pg_foreign_table row names the sink (option sink_id), as
 * metadata.c's SINK_OWN_FOREIGN_TABLE join reads it; InvalidOid otherwise.
 */
static Oid
sink_owner(int32 sink_id, Oid foreign_table)
{
	HeapTuple tuple;
	Datum options;
	bool isnull;
	bool names_sink = false;
	Oid owner = InvalidOid;
	char *option;

	if (!OidIsValid(foreign_table))
		return InvalidOid;
	tuple = SearchSysCache1(FOREIGNTABLEREL, ObjectIdGetDatum(foreign_table));
	if (!HeapTupleIsValid(tuple))
		return InvalidOid;
	options = SysCacheGetAttr(FOREIGNTABLEREL, tuple, Anum_pg_foreign_table_ftoptions, &isnull);
	if (!isnull)
	{
		Datum *values;
		bool *nulls;
		int count;

		option = psprintf("sink_id=%d", sink_id);
		deconstruct_array(DatumGetArrayTypeP(options), TEXTOID, -1, false, TYPALIGN_INT, &values,
						  &nulls, &count);
		for (int i = 0; i < count && !names_sink; i++)
			names_sink = !nulls[i] && strcmp(TextDatumGetCString(values[i]), option) == 0;
	}
	ReleaseSysCache(tuple);
	if (!names_sink)
		return InvalidOid;
	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(foreign_table));
	if (HeapTupleIsValid(tuple))
	{
		owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
		ReleaseSysCache(tuple);
	}
	return owner;
}

/*
 * read_version reads the version of the sink's row visible to the active
 * snapshot, on the primary key; false when there is none.
 */
static bool
read_version(int32 sink_id, SinkRowVersion *version)
{
	Oid schema = get_namespace_oid("paimon_sink", false);
	Oid relid = get_relname_relid("sink_definition", schema);
	Oid index_id = get_relname_relid("sink_definition_pkey", schema);
	Relation rel;
	Relation index;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;

	if (!OidIsValid(relid) || !OidIsValid(index_id))
		elog(ERROR, "paimon_sink: sink_definition or its primary key is missing");
	rel = table_open(relid, AccessShareLock);
	index = index_open(index_id, AccessShareLock);
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_INT4EQ, Int32GetDatum(sink_id));
	if (strcmp(NameStr(TupleDescAttr(RelationGetDescr(rel), 0)->attname), "sink_id") != 0)
		elog(ERROR, "paimon_sink: sink_definition's first column is not sink_id");
	scan = systable_beginscan_ordered(rel, index, GetActiveSnapshot(), 1, &key);
	tuple = systable_getnext_ordered(scan, ForwardScanDirection);
	version->present = tuple != NULL;
	if (tuple != NULL)
	{
		version->xmin = HeapTupleHeaderGetRawXmin(tuple->t_data);
		version->tid = tuple->t_self;
	}
	systable_endscan_ordered(scan);
	index_close(index, NoLock);
	table_close(rel, NoLock);
	return version->present;
}

/*
 * metadata_sink_cache_fetch fills info with the process's copy of the sink
 * (in the current memory context, the owner read afresh) when that copy is
 * of the row version the active snapshot sees, and returns SINK_CACHED;
 * SINK_ABSENT when the snapshot sees no row of the sink; SINK_UNCACHED
 * otherwise (not a superuser, no snapshot, no copy or an old one), with
 * *version set for metadata_sink_cache_store once the caller read the row.
 */
SinkCacheResult
metadata_sink_cache_fetch(int32 sink_id, SinkInfo *info, SinkRowVersion *version)
{
	CachedSink *cached;

	version->present = false;
	if (!superuser() || !ActiveSnapshotSet())
		return SINK_UNCACHED;
	if (!read_version(sink_id, version))
		return SINK_ABSENT;
	if (cached_sinks == NULL)
		return SINK_UNCACHED;
	cached = hash_search(cached_sinks, &sink_id, HASH_FIND, NULL);
	if (cached == NULL || cached->xmin != version->xmin ||
		!ItemPointerEquals(&cached->tid, &version->tid))
		return SINK_UNCACHED;
	copy_sink(info, &cached->info);
	info->owner = sink_owner(sink_id, info->foreign_table);
	return SINK_CACHED;
}

/*
 * metadata_sink_cache_store keeps a copy of the sink read from the row of
 * that version (metadata_sink_cache_fetch's), replacing an older copy;
 * nothing when there was no version.
 */
void
metadata_sink_cache_store(const SinkInfo *info, const SinkRowVersion *version)
{
	CachedSink *cached;
	bool found;
	MemoryContext old;

	if (!version->present)
		return;
	if (cached_sinks == NULL)
	{
		HASHCTL control = {0};

		control.keysize = sizeof(int32);
		control.entrysize = sizeof(CachedSink);
		control.hcxt = TopMemoryContext;
		cached_sinks = hash_create("paimon_sink sinks by id", 64, &control,
								   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	cached = hash_search(cached_sinks, &info->sink_id, HASH_ENTER, &found);
	if (found && cached->context != NULL)
		MemoryContextDelete(cached->context);
	cached->context = NULL;
	/* no copy while it is made: an error below leaves none */
	cached->xmin = InvalidTransactionId;
	cached->context =
		AllocSetContextCreate(TopMemoryContext, "paimon_sink sink copy", ALLOCSET_SMALL_SIZES);
	old = MemoryContextSwitchTo(cached->context);
	copy_sink(&cached->info, info);
	MemoryContextSwitchTo(old);
	cached->xmin = version->xmin;
	cached->tid = version->tid;
}
