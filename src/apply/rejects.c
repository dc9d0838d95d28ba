/*-------------------------------------------------------------------------
 *
 * rejects.c
 *	  Rows a commit's target refuses: a poison checkpoint's way out.
 *
 * A checkpoint's load runs in one subtransaction (load.c's COPY, upsert_merge.c's
 * MERGE), which costs nothing per row.  Only when it fails with an error a
 * row can cause (integrity 23xxx, data 22xxx, 54000 such as an index row
 * too large, a trigger's RAISE P0001, 44000) is the load redone here, from
 * the staged rows read again: in groups of REDO_GROUP_ROWS rows, each in a
 * subtransaction of its own (a savepoint), and a group that fails row by
 * row, as PostgreSQL's own advice for bulk loads with bad rows goes and as
 * Kafka Connect's errors.tolerance retries a batch record by record.  A row
 * refused on its own is the poison row.  With on_error 'stop' its error is
 * raised at once, naming the row's key, the constraint or index and the
 * checkpoint (nothing applied); with 'reject', or in the operator's
 * reject_failing_rows() call, it is written into
 * paimon_sink.rejected_row in the same transaction as the checkpoint's other
 * rows, which is then prepared and committed (in a loader, the share's own
 * prepared transaction): rows and rejects commit together, once.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_type.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "apply/rejects.h"
#include "metadata/statement.h"
#include "metadata/write_check.h"

/* Rows tried together in a redo; a failing group is tried row by row. */
#define REDO_GROUP_ROWS 100

/*
 * A group also ends once its rows hold this many bytes, so that a redo of
 * rows of megabytes holds a few of them at a time, not a hundred.
 */
#define REDO_GROUP_BYTES (8 * 1024 * 1024)

/* The longest a key value is shown in an error, in bytes. */
#define KEY_VALUE_SHOWN 64

/* The checkpoint being loaded, and what its refused rows become. */
static struct
{
	int32 sink_id;
	Oid target;
	char *sink_name;
	char *commit_user;
	int64 checkpoint_id;
	bool reject;
	const char *reason; /* rejected_row.reason */
	int64 rows;			/* refused rows written into rejected_row so far */
} run;

/* Whether the request being served is reject_failing_rows() (serve.c sets it). */
static bool operator_call = false;

/*
 * rejects_set_operator_call says whether the request the committer serves
 * now is the operator's reject_failing_rows(): its checkpoints reject the
 * rows their target refuses whatever the sink's on_error.
 */
void
rejects_set_operator_call(bool on)
{
	operator_call = on;
}

/* rejects_operator_call tells whether the request served is reject_failing_rows(). */
bool
rejects_operator_call(void)
{
	return operator_call;
}

/*
 * rejects_begin starts the load of a checkpoint (in the transaction that
 * will be prepared for it): its refused rows are rejected when the sink's
 * on_error is 'reject' or operator is true (reject_failing_rows()), else
 * they stop the commit.
 */
void
rejects_begin(const SinkInfo *sink, const char *commit_user, int64 checkpoint_id, bool operator)
{
	MemoryContext old = MemoryContextSwitchTo(TopTransactionContext);

	run.sink_id = sink->sink_id;
	run.target = sink->target;
	run.sink_name = pstrdup(sink->name);
	run.commit_user = pstrdup(commit_user);
	run.checkpoint_id = checkpoint_id;
	run.reject = operator|| sink->reject_on_error;
	run.reason = operator? "reject_failing_rows" : "on_error";
	run.rows = 0;
	MemoryContextSwitchTo(old);
}

/*
 * rejects_row_error tells whether an error of a load may come from one row
 * the target refuses (so that redoing it row by row finds that row), and is
 * not the unique violation of retry_constraint (an upsert's key inserted
 * meanwhile by another session: the commit is retried whole).
 */
bool
rejects_row_error(const ErrorData *error, const char *retry_constraint)
{
	int class = ERRCODE_TO_CATEGORY(error->sqlerrcode);

	if (error->sqlerrcode == ERRCODE_UNIQUE_VIOLATION && retry_constraint != NULL &&
		error->constraint_name != NULL && strcmp(error->constraint_name, retry_constraint) == 0)
		return false;
	return class == ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION || class == ERRCODE_DATA_EXCEPTION ||
		   class == ERRCODE_WITH_CHECK_OPTION_VIOLATION ||
		   error->sqlerrcode == ERRCODE_PROGRAM_LIMIT_EXCEEDED ||
		   error->sqlerrcode == ERRCODE_RAISE_EXCEPTION;
}

/* value_text is a column's value as its type's output function writes it. */
static char *
value_text(TupleDesc desc, int index, Datum value)
{
	Oid output;
	bool varlena;

	getTypeOutputInfo(TupleDescAttr(desc, index)->atttypid, &output, &varlena);
	return OidOutputFunctionCall(output, value);
}

/*
 * describe_key names a row as errors do: "(id)=(42)" by its key columns, each
 * value cut to KEY_VALUE_SHOWN bytes (its length said), or by its place in
 * the checkpoint when the sink has no key.
 */
static char *
describe_key(RedoSource *source, Datum *values, bool *nulls, int64 ordinal)
{
	StringInfoData names;
	StringInfoData shown;

	if (source->key_count == 0)
		return psprintf("row %lld (in load order)", (long long) ordinal);
	initStringInfo(&names);
	initStringInfo(&shown);
	for (int k = 0; k < source->key_count; k++)
	{
		int index = source->key_index[k];
		char *text;

		appendStringInfo(&names, "%s%s", k > 0 ? ", " : "",
						 NameStr(TupleDescAttr(source->desc, index)->attname));
		text = nulls[index] ? "null" : value_text(source->desc, index, values[index]);
		if (k > 0)
			appendStringInfoString(&shown, ", ");
		if (strlen(text) > KEY_VALUE_SHOWN)
			appendStringInfo(&shown, "%.*s... (%zu bytes)",
							 pg_mbcliplen(text, strlen(text), KEY_VALUE_SHOWN), text, strlen(text));
		else
			appendStringInfoString(&shown, text);
	}
	return psprintf("the row with key (%s)=(%s)", names.data, shown.data);
}

/*
 * row_json is the row as a JSON object: column name -> text value, or null.
 * A column an upsert row did not carry (staged in an older layout, or not
 * staged at all) is left out: its insert would take the target's default,
 * its update keep the target's value, so no one value is the row's.
 */
static char *
row_json(RedoSource *source, Datum *values, bool *nulls)
{
	StringInfoData json;
	int fields = source->fields_index >= 0 && !nulls[source->fields_index]
					 ? DatumGetInt32(values[source->fields_index])
					 : -1;
	bool first = true;

	initStringInfo(&json);
	appendStringInfoChar(&json, '{');
	for (int c = 0; c < source->columns; c++)
	{
		if (fields >= 0 && (source->staged_index[c] < 0 || source->staged_index[c] >= fields))
			continue;
		if (!first)
			appendStringInfoString(&json, ", ");
		first = false;
		escape_json(&json, NameStr(TupleDescAttr(source->desc, c)->attname));
		appendStringInfoString(&json, ": ");
		if (nulls[c])
			appendStringInfoString(&json, "null");
		else
			escape_json(&json, value_text(source->desc, c, values[c]));
	}
	appendStringInfoChar(&json, '}');
	return json.data;
}

/*
 * own_context is an error's context without what the redo's own statement
 * added (from its "SQL statement" line on): what a trigger or function of
 * the target said stays.  NULL when nothing stays.
 */
static char *
own_context(const char *context)
{
	const char *cut;

	if (context == NULL)
		return NULL;
	if (strncmp(context, "SQL statement \"", 15) == 0)
		return NULL;
	cut = strstr(context, "\nSQL statement \"");
	if (cut == NULL)
		return pstrdup(context);
	return pnstrdup(context, cut - context);
}

/*
 * record_row writes one refused row into paimon_sink.rejected_row, as the
 * extension's owner (the table is not the sink owner's): row_kind (NULL for
 * an append sink), the error that refused it, and the row as JSON text.
 */
static void
record_row(const char *row_kind, ErrorData *error, const char *json)
{
	static Statement statement = {
		"INSERT INTO paimon_sink.rejected_row (sink_id, commit_user, checkpoint_id, reason, "
		"row_kind, sqlstate, message, detail, constraint_name, row_data) "
		"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::pg_catalog.jsonb)",
		SPI_OK_INSERT};
	Arg args[] = {ARG_INT4(run.sink_id),
				  ARG_TEXT(run.commit_user),
				  ARG_INT8(run.checkpoint_id),
				  ARG_TEXT(run.reason),
				  ARG_TEXT_OR_NULL(row_kind),
				  ARG_TEXT(unpack_sql_state(error->sqlerrcode)),
				  ARG_TEXT(error->message),
				  ARG_TEXT_OR_NULL(error->detail),
				  ARG_TEXT_OR_NULL(error->constraint_name),
				  ARG_TEXT(json)};

	(void) statement_execute(&statement, args, lengthof(args), RUN_AS_OWNER);
	run.rows++;
}

/*
 * refuse handles the row the target refused on its own with error: raised
 * at once, naming the row, the constraint or index and the checkpoint
 * (on_error 'stop'), or written into paimon_sink.rejected_row ('reject').
 */
static void
refuse(RedoSource *source, HeapTuple tuple, ErrorData *error, int64 ordinal)
{
	Datum *values = palloc(sizeof(Datum) * source->desc->natts);
	bool *nulls = palloc(sizeof(bool) * source->desc->natts);
	char *key;
	char *context;
	bool delete;

	heap_deform_tuple(tuple, source->desc, values, nulls);
	delete = source->delete_index >= 0 && !nulls[source->delete_index] &&
			 DatumGetBool(values[source->delete_index]);
	/* index_form_tuple's 54000 names no index: find it */
	if (error->sqlerrcode == ERRCODE_PROGRAM_LIMIT_EXCEEDED && error->constraint_name == NULL)
	{
		Relation target = table_open(run.target, NoLock);

		error->constraint_name =
			write_check_oversized_index(target, source->desc, source->columns, values, nulls);
		table_close(target, NoLock);
	}
	if (!run.reject)
	{
		key = describe_key(source, values, nulls, ordinal);
		context = own_context(error->context);
		/*
		 * The error reaches the caller whole (its own detail and hint kept, as
		 * the relay promises; one without a hint gets the commit's); what
		 * names the row, the constraint and the checkpoint, and the way on,
		 * is a context line of its own.
		 */
		ereport(
			ERROR,
			(errcode(error->sqlerrcode), errmsg("%s", error->message),
			 error->detail ? errdetail("%s", error->detail) : 0,
			 error->hint ? errhint("%s", error->hint) : 0,
			 error->schema_name ? err_generic_string(PG_DIAG_SCHEMA_NAME, error->schema_name) : 0,
			 error->table_name ? err_generic_string(PG_DIAG_TABLE_NAME, error->table_name) : 0,
			 error->column_name ? err_generic_string(PG_DIAG_COLUMN_NAME, error->column_name) : 0,
			 error->datatype_name ? err_generic_string(PG_DIAG_DATATYPE_NAME, error->datatype_name)
								  : 0,
			 error->constraint_name
				 ? err_generic_string(PG_DIAG_CONSTRAINT_NAME, error->constraint_name)
				 : 0,
			 context ? errcontext("%s", context) : 0,
			 errcontext("%s of checkpoint %lld of commit user \"%s\" of sink \"%s\" is "
						"refused by %s%s%s; nothing of the checkpoint was applied "
						"(on_error 'stop': paimon_sink.reject_failing_rows(%s, %lld, %s) moves "
						"the checkpoint's refused rows aside)",
						key, (long long) run.checkpoint_id, run.commit_user, run.sink_name,
						error->constraint_name ? "constraint or index \"" : "the target",
						error->constraint_name ? error->constraint_name : "",
						error->constraint_name ? "\"" : "", quote_literal_cstr(run.sink_name),
						(long long) run.checkpoint_id, quote_literal_cstr(run.commit_user))));
	}
	/* the output functions run here, as the sink's owner */
	key = row_json(source, values, nulls);
	/*
	 * Written now, not kept until the load ends: the refused rows of a
	 * checkpoint may hold gigabytes (their values, and a CHECK's detail
	 * repeating the row), which the committer must not hold at once.  The
	 * insert is in the transaction that is prepared for the checkpoint (no
	 * redo subtransaction is open here), so it commits with the rows or
	 * not at all.
	 */
	record_row(source->delete_index < 0 ? NULL : (delete ? "-D" : "+U"), error, key);
}

/*
 * try_rows applies tuples (HeapTuple) in a subtransaction; returns NULL
 * when they went in (*applied: the target rows changed), or the error that
 * refused them, which rolled them back.  An error no row causes is raised.
 */
static ErrorData *
try_rows(RedoSource *source, List *tuples, uint64 *applied)
{
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	Tuplestorestate *store = tuplestore_begin_heap(false, false, work_mem);
	ErrorData *error = NULL;
	ListCell *lc;

	foreach (lc, tuples)
		tuplestore_puttuple(store, lfirst(lc));
	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(context);
	PG_TRY();
	{
		*applied += source->apply(source->arg, store);
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(context);
		error = CopyErrorData();
		if (!rejects_row_error(error, source->retry_constraint))
			PG_RE_THROW();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(context);
	CurrentResourceOwner = owner;
	tuplestore_end(store);
	return error;
}

/*
 * rejects_redo loads the rows of a load that failed with bulk_error (a row
 * error, rejects_row_error; its subtransaction rolled back) again from
 * source: groups of REDO_GROUP_ROWS, each in a subtransaction, a failing
 * group row by row.  A row refused on its own is raised (on_error 'stop')
 * or written into paimon_sink.rejected_row ('reject').  Returns the target rows changed.
 * When no row is refused on its own (the bulk failed on what no group
 * does, say a deferred check of many rows), stop raises bulk_error, and
 * reject keeps what the groups applied.
 */
uint64
rejects_redo(RedoSource *source, ErrorData *bulk_error)
{
	MemoryContext context = CurrentMemoryContext;
	MemoryContext group_context =
		AllocSetContextCreate(context, "paimon_sink redo group", ALLOCSET_DEFAULT_SIZES);
	MemoryContext row_context =
		AllocSetContextCreate(context, "paimon_sink redo row", ALLOCSET_DEFAULT_SIZES);
	Datum *values = palloc(sizeof(Datum) * source->desc->natts);
	bool *nulls = palloc(sizeof(bool) * source->desc->natts);
	uint64 applied = 0;
	int64 ordinal = 0;
	int refused = 0;

	ereport(LOG, (errmsg("paimon_sink redoes the load of checkpoint %lld of commit user \"%s\" of "
						 "sink \"%s\" row by row to find the rows its target refuses",
						 (long long) run.checkpoint_id, run.commit_user, run.sink_name),
				  errdetail("The load failed with SQLSTATE %s: %s",
							unpack_sql_state(bulk_error->sqlerrcode), bulk_error->message)));
	for (;;)
	{
		List *group = NIL;
		Size group_bytes = 0;
		ListCell *lc;

		MemoryContextReset(group_context);
		MemoryContextSwitchTo(group_context);
		while (list_length(group) < REDO_GROUP_ROWS && group_bytes < REDO_GROUP_BYTES &&
			   source->next(source->arg, values, nulls))
		{
			HeapTuple tuple = heap_form_tuple(source->desc, values, nulls);

			group = lappend(group, tuple);
			group_bytes += tuple->t_len;
		}
		if (group == NIL)
			break;
		if (try_rows(source, group, &applied) == NULL)
		{
			ordinal += list_length(group);
			continue;
		}
		foreach (lc, group)
		{
			ErrorData *error;

			ordinal++;
			/* what a row's try and refusal allocate goes with it */
			MemoryContextSwitchTo(row_context);
			error = try_rows(source, list_make1(lfirst(lc)), &applied);
			if (error != NULL)
			{
				refuse(source, lfirst(lc), error, ordinal);
				refused++;
			}
			MemoryContextSwitchTo(group_context);
			MemoryContextReset(row_context);
		}
	}
	MemoryContextSwitchTo(context);
	MemoryContextDelete(row_context);
	MemoryContextDelete(group_context);
	if (refused == 0 && !run.reject)
		ReThrowError(bulk_error);
	return applied;
}

/*
 * rejects_record ends the load of a checkpoint: returns how many of its
 * rows were refused and written into paimon_sink.rejected_row (refuse wrote
 * each as it was found, in the transaction about to be prepared for the
 * checkpoint), and logs the move aside.
 */
int64
rejects_record(void)
{
	int64 count = run.rows;

	if (count > 0)
		ereport(LOG, (errmsg("paimon_sink moves %lld rows of checkpoint %lld of commit user \"%s\" "
							 "of sink \"%s\" that its target refuses aside into "
							 "paimon_sink.rejected_row",
							 (long long) count, (long long) run.checkpoint_id, run.commit_user,
							 run.sink_name),
					  errdetail("They commit with the checkpoint's other rows (%s).", run.reason)));
	run.rows = 0;
	return count;
}
