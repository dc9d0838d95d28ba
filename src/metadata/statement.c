/*-------------------------------------------------------------------------
 *
 * statement.c
 *	  Running the statements of metadata.c: kept plans, typed arguments,
 *	  and result columns read by name.
 *
 * A statement's plan is prepared on first use and kept for the process
 * (SPI_keepplan; the plan cache replans it when a table changes): the
 * committer runs two dozen statements per checkpoint, and parsing and
 * planning them each time cost more than running them.  Its arguments come
 * as one array of typed values, so that no caller counts parallel arrays of
 * types, values and nulls.  Results are read by column name, so that no
 * reader depends on the order of a select list.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "funcapi.h"
#include "utils/array.h"
#include "utils/snapmgr.h"

#include "core/security.h"
#include "metadata/extension.h"
#include "metadata/statement.h"

/*
 * statement_run executes a statement with its arguments and returns the
 * number of rows it processed, which are in SPI_tuptable.  The caller is
 * connected to SPI, in a transaction; flags are RUN_*.  Raises
 * ERRCODE_INTERNAL_ERROR when SPI cannot prepare the statement or it
 * returns another result than expected; the statement's own errors
 * propagate unchanged.
 */
uint64
statement_run(Statement *statement, const Arg *args, int nargs, int flags)
{
	Oid types[STATEMENT_MAX_ARGS];
	Datum values[STATEMENT_MAX_ARGS];
	char nulls[STATEMENT_MAX_ARGS];
	RoleSwitch saved;
	int result;

	Assert(nargs <= STATEMENT_MAX_ARGS);
	for (int i = 0; i < nargs; i++)
	{
		types[i] = args[i].type;
		values[i] = args[i].value;
		nulls[i] = args[i].isnull ? 'n' : ' ';
	}
	/* parsed as the role it runs as, so that name look-up sees what that role sees */
	if (flags & RUN_AS_OWNER)
		security_switch_role(extension_owner(), &saved);
	if (statement->plan == NULL)
	{
		SPIPlanPtr plan = SPI_prepare(statement->sql, nargs, types);

		if (plan == NULL || SPI_keepplan(plan) != 0)
			elog(ERROR, "could not prepare \"%s\": %s", statement->sql,
				 SPI_result_code_string(SPI_result));
		statement->plan = plan;
	}
	if (flags & RUN_LATEST)
		result = SPI_execute_snapshot(statement->plan, values, nulls, GetLatestSnapshot(),
									  InvalidSnapshot, (flags & RUN_AS_OWNER) == 0, false, 0);
	else
		result = SPI_execute_plan(statement->plan, values, nulls, (flags & RUN_READ_ONLY) != 0, 0);
	if (flags & RUN_AS_OWNER)
		security_restore_role(&saved);
	if (result != statement->expected)
		elog(ERROR, "paimon_sink: \"%s\" returned %s", statement->sql,
			 SPI_result_code_string(result));
	return SPI_processed;
}

/*
 * statement_execute connects to SPI, runs the statement and disconnects;
 * returns the number of rows it processed.  Needs a transaction.
 */
uint64
statement_execute(Statement *statement, const Arg *args, int nargs, int flags)
{
	uint64 rows;

	SPI_connect();
	rows = statement_run(statement, args, nargs, flags);
	SPI_finish();
	return rows;
}

/*
 * statement_collect runs the statement in an SPI connection of its own and
 * returns what reader makes of each row (given reader_arg), as a List allocated in the memory
 * context current at the call.  Needs a transaction.
 */
List *
statement_collect(Statement *statement, const Arg *args, int nargs, int flags, RowReader reader,
				  const void *reader_arg)
{
	MemoryContext caller = CurrentMemoryContext;
	List *result = NIL;
	uint64 rows;

	SPI_connect();
	rows = statement_run(statement, args, nargs, flags);
	for (uint64 i = 0; i < rows; i++)
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);

		result = lappend(result, reader(i, reader_arg));
		MemoryContextSwitchTo(spi);
	}
	SPI_finish();
	return result;
}

/*
 * statement_first runs the statement like statement_collect and returns
 * what reader makes of its first row, or NULL when it returned none.
 */
void *
statement_first(Statement *statement, const Arg *args, int nargs, int flags, RowReader reader,
				const void *reader_arg)
{
	MemoryContext caller = CurrentMemoryContext;
	void *result = NULL;

	SPI_connect();
	if (statement_run(statement, args, nargs, flags) > 0)
	{
		MemoryContext spi = MemoryContextSwitchTo(caller);

		result = reader(0, reader_arg);
		MemoryContextSwitchTo(spi);
	}
	SPI_finish();
	return result;
}

/*
 * statement_int8 runs the statement like statement_first and returns the
 * bigint (or integer) column "column" of its first row, or if_none when it
 * returned no row.
 */
int64
statement_int8(Statement *statement, const Arg *args, int nargs, int flags, const char *column,
			   int64 if_none)
{
	int64 value = if_none;

	SPI_connect();
	if (statement_run(statement, args, nargs, flags) > 0)
		value = row_int8(0, column);
	SPI_finish();
	return value;
}

/* read_text reads the text column named by arg of a row. */
static void *
read_text(uint64 row, const void *arg)
{
	return row_text(row, arg);
}

/* read_int8 reads the bigint (or integer) column named by arg of a row. */
static void *
read_int8(uint64 row, const void *arg)
{
	int64 *value = palloc(sizeof(int64));

	*value = row_int8(row, arg);
	return value;
}

/*
 * statement_texts runs the statement like statement_collect and returns
 * its text column "column" of every row (char *).
 */
List *
statement_texts(Statement *statement, const Arg *args, int nargs, int flags, const char *column)
{
	return statement_collect(statement, args, nargs, flags, read_text, column);
}

/*
 * statement_int8s runs the statement like statement_collect and returns
 * its bigint (or integer) column "column" of every row (int64 *).
 */
List *
statement_int8s(Statement *statement, const Arg *args, int nargs, int flags, const char *column)
{
	return statement_collect(statement, args, nargs, flags, read_int8, column);
}

/*
 * statement_return_rows runs the statement under the latest snapshot (the
 * committer committed after this statement's snapshot was taken) and
 * returns its rows as the SQL function's result set, columns in the order
 * of the statement's select list, which is the function's declared shape.
 */
void
statement_return_rows(FunctionCallInfo fcinfo, Statement *statement, const Arg *args, int nargs,
					  int flags)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	uint64 rows;

	/* a second statement (a sink group's next member) adds to the same result set */
	if (rsinfo->setResult == NULL)
		InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	rows = statement_run(statement, args, nargs, RUN_LATEST | flags);
	for (uint64 i = 0; i < rows; i++)
		tuplestore_puttuple(rsinfo->setResult, SPI_tuptable->vals[i]);
	SPI_finish();
}

/*
 * row_datum returns a column of a result row by its name; isnull may be
 * NULL.  Raises ERRCODE_INTERNAL_ERROR for a name the result does not have.
 */
Datum
row_datum(uint64 row, const char *name, bool *isnull)
{
	int number = SPI_fnumber(SPI_tuptable->tupdesc, name);
	bool null;
	Datum value;

	if (number <= 0)
		elog(ERROR, "paimon_sink: a query result has no column \"%s\"", name);
	value = SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc, number, &null);
	if (isnull != NULL)
		*isnull = null;
	return null ? (Datum) 0 : value;
}

/* row_int8 returns a bigint (or integer) column, 0 when NULL. */
int64
row_int8(uint64 row, const char *name)
{
	bool isnull;
	Datum value = row_datum(row, name, &isnull);

	if (isnull)
		return 0;
	if (SPI_gettypeid(SPI_tuptable->tupdesc, SPI_fnumber(SPI_tuptable->tupdesc, name)) == INT4OID)
		return DatumGetInt32(value);
	return DatumGetInt64(value);
}

/* row_int4 returns an integer column, 0 when NULL. */
int32
row_int4(uint64 row, const char *name)
{
	bool isnull;
	Datum value = row_datum(row, name, &isnull);

	return isnull ? 0 : DatumGetInt32(value);
}

/* row_bool returns a boolean column, false when NULL. */
bool
row_bool(uint64 row, const char *name)
{
	bool isnull;
	Datum value = row_datum(row, name, &isnull);

	return !isnull && DatumGetBool(value);
}

/* row_text returns a text column palloc'd in the current context, or NULL. */
char *
row_text(uint64 row, const char *name)
{
	bool isnull;
	Datum value = row_datum(row, name, &isnull);

	return isnull ? NULL : TextDatumGetCString(value);
}

/* row_text_list returns a text[] column as a List of char *, NIL when NULL. */
List *
row_text_list(uint64 row, const char *name)
{
	bool isnull;
	Datum array = row_datum(row, name, &isnull);
	Datum *elements;
	int count;
	List *list = NIL;

	if (isnull)
		return NIL;
	deconstruct_array(DatumGetArrayTypeP(array), TEXTOID, -1, false, TYPALIGN_INT, &elements, NULL,
					  &count);
	for (int i = 0; i < count; i++)
		list = lappend(list, TextDatumGetCString(elements[i]));
	return list;
}

/*
 * row_int8_array returns a bigint[] column's elements in a new array
 * (never NULL); *count is 0 when the column is NULL.
 */
int64 *
row_int8_array(uint64 row, const char *name, int *count)
{
	bool isnull;
	Datum array = row_datum(row, name, &isnull);
	Datum *elements;
	int64 *values;

	*count = 0;
	if (isnull)
		return palloc(sizeof(int64));
	deconstruct_array(DatumGetArrayTypePCopy(array), INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE,
					  &elements, NULL, count);
	values = palloc(sizeof(int64) * Max(1, *count));
	for (int i = 0; i < *count; i++)
		values[i] = DatumGetInt64(elements[i]);
	return values;
}
