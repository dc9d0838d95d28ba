/*-------------------------------------------------------------------------
 *
 * upsert_merge.c
 *	  The MERGE that applies an upsert checkpoint's outcomes to the target:
 *	  its statement, its runs (again after a concurrent insert of a key),
 *	  and the redo of a failed one key by key through rejects.c.
 *
 * upsert.c reads, sorts and deduplicates the staged versions into one
 * outcome per key, in a tuplestore; this file only reads that store, as an
 * ephemeral named relation, and knows nothing of versions or retractions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/queryenvironment.h"
#include "utils/rel.h"
#include "utils/resowner.h"

#include "apply/rejects.h"
#include "apply/upsert_merge.h"

#define CHANGES_RELATION "paimon_sink_changes"

/* Runs of a checkpoint's MERGE while other sessions insert its keys. */
#define MERGE_ATTEMPTS 10

/*
 * older_layout_clauses appends to query the clauses of a MERGE for the
 * outcomes whose row was staged in an older layout, of fields fields
 * (alter_sink added the columns after them since): those columns are left
 * as a statement that does not name them leaves them, the target's value
 * on UPDATE, the default on INSERT (and on the UPDATE that replaces a row
 * deleted before it in the checkpoint).  kind: 'r' the replacing UPDATE,
 * 'u' the UPDATE, 'i' the INSERT.
 */
static void
older_layout_clauses(ApplyLayout *layout, StringInfo query, char kind, bool overriding)
{
	for (int fields = layout->staged_count - 1; fields >= 0; fields--)
	{
		StringInfoData set;
		StringInfoData insert;
		StringInfoData values;

		if (!layout->layouts_read[fields])
			continue;
		initStringInfo(&set);
		initStringInfo(&insert);
		initStringInfo(&values);
		for (int c = 0; c < layout->columns; c++)
		{
			const char *name =
				quote_identifier(NameStr(TupleDescAttr(layout->change_desc, c)->attname));
			bool has = layout->change_staged_index[c] < fields;
			AttrNumber target_attnum =
				get_attnum(RelationGetRelid(layout->target),
						   NameStr(TupleDescAttr(layout->change_desc, c)->attname));
			bool identity_always =
				target_attnum != InvalidAttrNumber &&
				TupleDescAttr(RelationGetDescr(layout->target), target_attnum - 1)->attidentity ==
					ATTRIBUTE_IDENTITY_ALWAYS;

			if (has)
			{
				appendStringInfo(&insert, "%s%s", insert.len > 0 ? ", " : "", name);
				appendStringInfo(&values, "%sc.c%d", values.len > 0 ? ", " : "", c + 1);
			}
			if (layout->change_key_index[c] >= 0 || identity_always)
				continue;
			if (kind == 'r')
				appendStringInfo(&set, "%s%s = %s", set.len > 0 ? ", " : "", name,
								 has ? psprintf("c.c%d", c + 1) : "DEFAULT");
			else if (kind == 'u' && has && layout->partial_update)
				appendStringInfo(&set, "%s%s = coalesce(c.c%d, t.%s)", set.len > 0 ? ", " : "",
								 name, c + 1, name);
			else if (kind == 'u' && has)
				appendStringInfo(&set, "%s%s = c.c%d", set.len > 0 ? ", " : "", name, c + 1);
		}
		if (kind == 'r' && set.len > 0)
			appendStringInfo(query,
							 " WHEN MATCHED AND c.change_replace AND c.change_fields "
							 "OPERATOR(pg_catalog.=) %d THEN "
							 "UPDATE SET %s",
							 fields, set.data);
		else if (kind == 'u')
			appendStringInfo(
				query, " WHEN MATCHED AND c.change_fields OPERATOR(pg_catalog.=) %d THEN %s%s",
				fields, set.len > 0 ? "UPDATE SET " : "DO NOTHING", set.data);
		else if (kind == 'i')
			appendStringInfo(query,
							 " WHEN NOT MATCHED AND NOT c.change_delete AND c.change_fields "
							 "OPERATOR(pg_catalog.=) %d "
							 "THEN INSERT (%s)%s VALUES (%s)",
							 fields, insert.data, overriding ? " OVERRIDING SYSTEM VALUE" : "",
							 values.data);
	}
}

/*
 * The MERGE applying the changes.  The changes' columns are renamed by
 * position (c1, c2, ..., then the delete, replace and retract flags and
 * the fields of the row's layout), so no target column name can clash
 * with them.  A retraction deletes the target's row only when its non-key
 * columns are the retracted row's.  An outcome whose row was staged in an
 * older layout has clauses of its own (older_layout_clauses) before the
 * others, one set per such layout read.
 */
static char *
merge_statement(ApplyLayout *layout)
{
	StringInfoData query;
	StringInfoData update;
	StringInfoData replace;
	StringInfoData insert;
	StringInfoData values;
	StringInfoData same;
	const char *separator = "";
	bool overriding = false;

	initStringInfo(&same);
	initStringInfo(&query);
	initStringInfo(&update);
	initStringInfo(&replace);
	initStringInfo(&insert);
	initStringInfo(&values);
	appendStringInfo(
		&query, "MERGE INTO %s AS t USING " CHANGES_RELATION " AS c (",
		quote_qualified_identifier(get_namespace_name(RelationGetNamespace(layout->target)),
								   RelationGetRelationName(layout->target)));
	for (int c = 0; c < layout->columns; c++)
	{
		const char *name =
			quote_identifier(NameStr(TupleDescAttr(layout->change_desc, c)->attname));

		AttrNumber target_attnum =
			get_attnum(RelationGetRelid(layout->target),
					   NameStr(TupleDescAttr(layout->change_desc, c)->attname));
		bool identity_always =
			target_attnum != InvalidAttrNumber &&
			TupleDescAttr(RelationGetDescr(layout->target), target_attnum - 1)->attidentity ==
				ATTRIBUTE_IDENTITY_ALWAYS;

		appendStringInfo(&query, "c%d, ", c + 1);
		appendStringInfo(&insert, "%s%s", c > 0 ? ", " : "", name);
		appendStringInfo(&values, "%sc.c%d", c > 0 ? ", " : "", c + 1);
		/* the staged value of an identity column goes in as COPY puts it; it is never updated */
		overriding |= identity_always;
		/* a column the retracted row was not staged with (an older layout) is not compared */
		if (layout->change_key_index[c] < 0 && layout->change_equal_operator[c] != NULL)
			appendStringInfo(&same,
							 " AND (c.change_fields OPERATOR(pg_catalog.<=) %d OR t.%s IS NULL AND "
							 "c.c%d IS NULL OR t.%s %s c.c%d)",
							 layout->change_staged_index[c], name, c + 1, name,
							 layout->change_equal_operator[c], c + 1);
		else if (layout->change_key_index[c] < 0)
			appendStringInfo(&same,
							 " AND (c.change_fields OPERATOR(pg_catalog.<=) %d OR "
							 "t.%s::pg_catalog.text IS NOT DISTINCT FROM c.c%d::pg_catalog.text)",
							 layout->change_staged_index[c], name, c + 1);
		if (layout->change_key_index[c] >= 0 || identity_always)
			continue;
		appendStringInfo(&replace, "%s%s = c.c%d", replace.len > 0 ? ", " : "", name, c + 1);
		if (layout->partial_update)
			appendStringInfo(&update, "%s%s = coalesce(c.c%d, t.%s)", update.len > 0 ? ", " : "",
							 name, c + 1, name);
		else
			appendStringInfo(&update, "%s%s = c.c%d", update.len > 0 ? ", " : "", name, c + 1);
	}
	appendStringInfoString(&query,
						   "change_delete, change_replace, change_retract, change_fields) ON ");
	for (int c = 0; c < layout->columns; c++)
	{
		if (layout->change_key_index[c] < 0)
			continue;
		appendStringInfo(&query, "%st.%s %s c.c%d", separator,
						 quote_identifier(NameStr(TupleDescAttr(layout->change_desc, c)->attname)),
						 layout->key_equal_operator[layout->change_key_index[c]], c + 1);
		separator = " AND ";
	}
	appendStringInfo(&query,
					 " WHEN MATCHED AND c.change_delete AND (NOT c.change_retract OR "
					 "coalesce(true%s, false)) THEN DELETE WHEN MATCHED AND c.change_delete THEN "
					 "DO NOTHING",
					 same.data);
	if (update.len == 0)
		appendStringInfoString(&query, " WHEN MATCHED THEN DO NOTHING");
	else
	{
		if (layout->partial_update)
		{
			older_layout_clauses(layout, &query, 'r', overriding);
			appendStringInfo(&query, " WHEN MATCHED AND c.change_replace THEN UPDATE SET %s",
							 replace.data);
		}
		older_layout_clauses(layout, &query, 'u', overriding);
		appendStringInfo(&query, " WHEN MATCHED THEN UPDATE SET %s", update.data);
	}
	older_layout_clauses(layout, &query, 'i', overriding);
	appendStringInfo(&query,
					 " WHEN NOT MATCHED AND NOT c.change_delete THEN INSERT (%s)%s VALUES (%s)",
					 insert.data, overriding ? " OVERRIDING SYSTEM VALUE" : "", values.data);
	return query.data;
}

/* Run one statement over a tuplestore named relation; returns rows affected. */
static uint64
run_over(const char *query, const char *name, TupleDesc desc, Tuplestorestate *store, int expected)
{
	EphemeralNamedRelation enr = palloc0(sizeof(EphemeralNamedRelationData));
	uint64 processed;

	enr->md.name = (char *) name;
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = desc;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = tuplestore_tuple_count(store);
	enr->reldata = store;
	SPI_connect();
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "could not register relation \"%s\"", name);
	if (SPI_execute(query, false, 0) != expected)
		elog(ERROR, "could not run \"%s\"", query);
	processed = SPI_processed;
	SPI_finish();
	return processed;
}

/* What the redo of a failed MERGE reads and runs (rejects.c). */
typedef struct MergeRedo
{
	ApplyLayout *layout;
	Tuplestorestate *changes;
	TupleTableSlot *slot;
	const char *query;
} MergeRedo;

/* merge_redo_next gives the redo the next key's outcome. */
static bool
merge_redo_next(void *arg, Datum *values, bool *nulls)
{
	MergeRedo *redo = arg;

	if (!tuplestore_gettupleslot(redo->changes, true, false, redo->slot))
		return false;
	slot_getallattrs(redo->slot);
	memcpy(values, redo->slot->tts_values, sizeof(Datum) * redo->layout->change_desc->natts);
	memcpy(nulls, redo->slot->tts_isnull, sizeof(bool) * redo->layout->change_desc->natts);
	return true;
}

/* merge_redo_apply runs the MERGE over the outcomes in store; returns the rows changed. */
static uint64
merge_redo_apply(void *arg, Tuplestorestate *store)
{
	MergeRedo *redo = arg;

	return run_over(redo->query, CHANGES_RELATION, redo->layout->change_desc, store, SPI_OK_MERGE);
}

/*
 * redo_merge applies the changes again after their MERGE failed with error
 * (a row error; its subtransaction rolled back), through rejects_redo:
 * groups of keys, a failing group key by key, so that the keys whose
 * outcome the target refuses are found (and stop the commit, or are moved
 * aside).  Returns the target rows changed.
 */
static uint64
redo_merge(ApplyLayout *layout, Tuplestorestate *changes, const char *query, ErrorData *error)
{
	MergeRedo redo = {layout, changes, NULL, query};
	RedoSource source;
	uint64 changed;

	memset(&source, 0, sizeof(source));
	source.desc = layout->change_desc;
	source.columns = layout->columns;
	source.key_index = palloc(sizeof(int) * layout->key_count);
	for (int c = 0; c < layout->columns; c++)
		if (layout->change_key_index[c] >= 0)
			source.key_index[layout->change_key_index[c]] = c;
	source.key_count = layout->key_count;
	source.delete_index = layout->columns;
	source.retry_constraint = layout->key_constraint;
	source.staged_index = layout->change_staged_index;
	source.fields_index = layout->columns + 3;
	source.next = merge_redo_next;
	source.apply = merge_redo_apply;
	source.arg = &redo;
	redo.slot = MakeSingleTupleTableSlot(layout->change_desc, &TTSOpsMinimalTuple);
	tuplestore_select_read_pointer(changes, 0);
	tuplestore_rescan(changes);
	changed = rejects_redo(&source, error);
	ExecDropSingleTupleTableSlot(redo.slot);
	return changed;
}

/*
 * upsert_merge_run runs the MERGE over changes (one outcome per key, in
 * layout->change_desc), counting its reruns in *retries, and returns the
 * target rows inserted, updated or deleted.  MERGE, unlike INSERT ... ON
 * CONFLICT, fails with a unique violation of the primary key when another
 * transaction inserts a key between its join and its insert; the statement
 * then runs again in a new subtransaction (the key is matched now),
 * MERGE_ATTEMPTS times at most.  Another unique constraint's violation is a
 * row error, as are the other errors a row can cause (rejects_row_error):
 * redo_merge finds the keys.  Raises ERRCODE_UNIQUE_VIOLATION after the
 * last attempt, what rejects_redo raises for a row that stops the commit,
 * and any other error of the statement as it came.
 */
uint64
upsert_merge_run(ApplyLayout *layout, Tuplestorestate *changes, uint64 *retries)
{
	char *query = merge_statement(layout);
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;

	for (int attempt = 1;; attempt++)
	{
		uint64 changed = 0;
		bool retry = false;

		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(context);
		PG_TRY();
		{
			changed = run_over(query, CHANGES_RELATION, layout->change_desc, changes, SPI_OK_MERGE);
			ReleaseCurrentSubTransaction();
		}
		PG_CATCH();
		{
			ErrorData *error;

			MemoryContextSwitchTo(context);
			error = CopyErrorData();
			/* a row the target refuses: found by a redo, key by key */
			if (rejects_row_error(error, layout->key_constraint))
			{
				FlushErrorState();
				RollbackAndReleaseCurrentSubTransaction();
				MemoryContextSwitchTo(context);
				CurrentResourceOwner = owner;
				return redo_merge(layout, changes, query, error);
			}
			/* only a key inserted meanwhile goes away on a rerun */
			if (error->sqlerrcode != ERRCODE_UNIQUE_VIOLATION || error->constraint_name == NULL ||
				strcmp(error->constraint_name, layout->key_constraint) != 0)
				PG_RE_THROW();
			if (attempt >= MERGE_ATTEMPTS)
			{
				FlushErrorState();
				ereport(
					ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION), errmsg("%s", error->message),
					 error->detail ? errdetail("%s", error->detail) : 0,
					 errhint(
						 "Other sessions kept inserting keys of this checkpoint into the target "
						 "while it was applied %d times; call commit() or checkpoint() again.",
						 MERGE_ATTEMPTS)));
			}
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
			ereport(LOG, (errmsg("paimon_sink runs the MERGE of a checkpoint again: %s",
								 error->message)));
			FreeErrorData(error);
			retry = true;
			(*retries)++;
		}
		PG_END_TRY();
		MemoryContextSwitchTo(context);
		CurrentResourceOwner = owner;
		if (!retry)
			return changed;
	}
}
