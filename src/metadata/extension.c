/*-------------------------------------------------------------------------
 *
 * extension.c
 *	  What paimon_sink's pg_extension row says: the role that owns the
 *	  extension (whom statement.c runs the extension's statements as), the
 *	  version installed in this database, and whether this transaction
 *	  created or updated it.  Apart from catalog.c (a sink and its checks),
 *	  which reads sinks through metadata.c and statement.c: statement.c's
 *	  owner switch needs this and nothing of theirs.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"

#include "metadata/extension.h"

/* What the extension's pg_extension row says. */
typedef struct ExtensionRow
{
	bool found;
	Oid owner;
	char *version;	   /* palloc'd; NULL when not found */
	bool changed_here; /* created or updated by this transaction */
} ExtensionRow;

/* Read paimon_sink's pg_extension row (no syscache covers it).  Needs a transaction. */
static ExtensionRow
read_extension_row(void)
{
	ExtensionRow row = {0};
	Relation rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple tuple;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("paimon_sink"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
	{
		bool isnull;
		Datum version =
			heap_getattr(tuple, Anum_pg_extension_extversion, RelationGetDescr(rel), &isnull);

		row.found = true;
		row.owner = ((Form_pg_extension) GETSTRUCT(tuple))->extowner;
		row.version = isnull ? NULL : TextDatumGetCString(version);
		row.changed_here =
			TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tuple->t_data));
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return row;
}

/*
 * extension_owner returns the role that owns the extension; raises
 * ERRCODE_UNDEFINED_OBJECT when it is not installed.
 */
Oid
extension_owner(void)
{
	ExtensionRow row = read_extension_row();

	if (!row.found)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("extension \"paimon_sink\" is not installed in this database"),
						errhint("Run CREATE EXTENSION paimon_sink.")));
	return row.owner;
}

/*
 * extension_installed_version returns the version of the paimon_sink extension
 * installed in this database (palloc'd text, as pg_extension.extversion
 * records it), or NULL when it is not installed.  Needs a transaction.
 */
char *
extension_installed_version(void)
{
	return read_extension_row().version;
}

/*
 * extension_changed_here tells whether the current transaction
 * created or updated the paimon_sink extension: its workers cannot see it
 * before this transaction commits.  Needs a transaction.
 */
bool
extension_changed_here(void)
{
	return read_extension_row().changed_here;
}
