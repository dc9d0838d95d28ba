/*-------------------------------------------------------------------------
 *
 * recovery.c
 *	  Which prepared transactions are the committer's own.
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
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "recovery.h"
#include "security.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

PG_FUNCTION_INFO_V1(paimon_sink_in_doubt_status);

/* The gids of foreign transactions the committer has logged already. */
static List *foreign_logged = NIL;

/* Why a parsed gid of the committer's role is not ours, or NULL. */
static char *
checkpoint_problem(const GidParts *parts)
{
	Oid			types[3] = {INT4OID, TEXTOID, INT8OID};
	Datum		values[3] = {Int32GetDatum(parts->sink_id),
		CStringGetTextDatum(parts->commit_user),
	Int64GetDatum(parts->checkpoint_id)};
	HeapTuple	tuple;
	TupleDesc	desc;
	bool		isnull;
	bool		sink_exists;
	bool		pending;
	int64		last_committed = -1;

	if (SPI_execute_plan(catalog_plan("SELECT EXISTS (SELECT FROM paimon_sink.sink_definition d "
									  "  WHERE d.sink_id OPERATOR(pg_catalog.=) $1) AS sink_exists, "
									  "(SELECT u.last_committed_checkpoint FROM paimon_sink.commit_user_state u "
									  "  WHERE u.sink_id OPERATOR(pg_catalog.=) $1 "
									  "  AND u.commit_user OPERATOR(pg_catalog.=) $2) AS last_committed, "
									  "EXISTS (SELECT FROM paimon_sink.committable c "
									  "  WHERE c.sink_id OPERATOR(pg_catalog.=) $1 "
									  "  AND c.commit_user OPERATOR(pg_catalog.=) $2 "
									  "  AND c.checkpoint_id OPERATOR(pg_catalog.=) $3 "
									  "  AND c.snapshot_id IS NULL) AS pending",
									  3, types),
						 values, NULL, true, 1) != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not read the checkpoint a prepared transaction names");
	tuple = SPI_tuptable->vals[0];
	desc = SPI_tuptable->tupdesc;
	sink_exists = DatumGetBool(catalog_column(tuple, desc, "sink_exists", &isnull));
	pending = DatumGetBool(catalog_column(tuple, desc, "pending", &isnull));
	{
		Datum		mark = catalog_column(tuple, desc, "last_committed", &isnull);

		if (!isnull)
			last_committed = DatumGetInt64(mark);
	}
	if (!sink_exists)
		return psprintf("It names sink %d, which does not exist.", parts->sink_id);
	if (!pending && parts->checkpoint_id > last_committed)
		return psprintf("It names checkpoint " INT64_FORMAT " of commit user \"%s\", which is neither prepared nor committed.",
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
	Oid			types[2] = {OIDOID, TEXTOID};
	Datum		values[2] = {ObjectIdGetDatum(MyDatabaseId),
	CStringGetTextDatum(PAIMON_SINK_GID_START)};
	List	   *result = NIL;
	MemoryContext old;

	SPI_connect();
	if (SPI_execute_plan(catalog_plan("SELECT p.gid, p.prepared, p.ownerid "
									  "FROM pg_catalog.pg_prepared_xact() p "
									  "WHERE p.dbid OPERATOR(pg_catalog.=) $1 "
									  "AND pg_catalog.starts_with(p.gid, $2) "
									  "ORDER BY p.prepared, p.gid", 2, types),
						 values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_prepared_xact()");
	{
		SPITupleTable *prepared = SPI_tuptable;
		uint64		count = SPI_processed;

		for (uint64 i = 0; i < count; i++)
		{
			HeapTuple	tuple = prepared->vals[i];
			TupleDesc	desc = prepared->tupdesc;
			bool		isnull;
			PreparedGid *entry;
			char	   *problem = NULL;

			old = MemoryContextSwitchTo(context);
			entry = palloc0(sizeof(PreparedGid));
			entry->gid = TextDatumGetCString(catalog_column(tuple, desc, "gid", &isnull));
			entry->prepared = DatumGetTimestampTz(catalog_column(tuple, desc, "prepared", &isnull));
			entry->owner = DatumGetObjectId(catalog_column(tuple, desc, "ownerid", &isnull));
			MemoryContextSwitchTo(old);

			entry->parsed = gid_parse(entry->gid, &entry->parts);
			if (!entry->parsed)
				problem = psprintf("It is not of the form %s<database>:<sink>:<checkpoint>:<commit user>~<random suffix>.",
								   PAIMON_SINK_GID_START);
			else if (entry->parts.database_id != MyDatabaseId)
				problem = psprintf("It names database %u, not this one (%u).",
								   entry->parts.database_id, MyDatabaseId);
			else if (entry->owner != security_committer_role())
				problem = psprintf("It was prepared by role \"%s\"; the committer prepares as role \"%s\".",
								   GetUserNameFromId(entry->owner, true) ?
								   GetUserNameFromId(entry->owner, true) : "(dropped)",
								   GetUserNameFromId(security_committer_role(), false));
			else
				problem = checkpoint_problem(&entry->parts);
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
	Oid			type = TEXTOID;
	Datum		value = CStringGetTextDatum(gid);
	bool		found;

	SPI_connect();
	if (SPI_execute_plan(catalog_plan("SELECT p.ownerid, p.dbid FROM pg_catalog.pg_prepared_xact() p "
									  "WHERE p.gid OPERATOR(pg_catalog.=) $1", 1, &type),
						 &value, NULL, true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_prepared_xact()");
	found = SPI_processed > 0;
	if (found)
	{
		bool		isnull;

		*owner = DatumGetObjectId(catalog_column(SPI_tuptable->vals[0], SPI_tuptable->tupdesc,
												 "ownerid", &isnull));
		*database_id = DatumGetObjectId(catalog_column(SPI_tuptable->vals[0],
													   SPI_tuptable->tupdesc, "dbid", &isnull));
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
	List	   *still = NIL;
	ListCell   *lc;
	MemoryContext old;

	foreach(lc, gids)
	{
		PreparedGid *entry = lfirst(lc);
		ListCell   *seen;
		bool		logged = false;

		if (entry->ours)
			continue;
		foreach(seen, foreign_logged)
			logged = logged || strcmp(lfirst(seen), entry->gid) == 0;
		if (!logged)
			ereport(LOG,
					(errmsg("paimon_sink committer leaves prepared transaction \"%s\" alone: it is not its own",
							entry->gid),
					 errdetail_internal("%s", entry->foreign_reason),
					 errhint("Its owner or a superuser ends it with COMMIT PREPARED or ROLLBACK PREPARED; paimon_sink.in_doubt lists it.")));
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
 * commit_user text, ours boolean, foreign_reason text).  sink_id,
 * checkpoint_id and commit_user are NULL unless the gid reads as one of
 * ours naming this database; ours is true for the transactions recovery
 * commits; foreign_reason says why the others are left alone.  The view
 * paimon_sink.in_doubt reads it.  Raises no error of its own.
 */
Datum
paimon_sink_in_doubt_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *gids;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	gids = recovery_prepared_gids(CurrentMemoryContext);
	foreach(lc, gids)
	{
		PreparedGid *entry = lfirst(lc);
		Datum		values[8];
		bool		nulls[8] = {0};
		char	   *owner = GetUserNameFromId(entry->owner, true);
		bool		names_here = entry->parsed && entry->parts.database_id == MyDatabaseId;

		values[0] = CStringGetTextDatum(entry->gid);
		values[1] = TimestampTzGetDatum(entry->prepared);
		nulls[2] = owner == NULL;
		if (owner)
		{
			Name		name = palloc0(NAMEDATALEN);

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
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
