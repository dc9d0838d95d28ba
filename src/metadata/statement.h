/*-------------------------------------------------------------------------
 *
 * statement.h
 *	  One way to run SQL on the extension's tables: a statement with its
 *	  kept plan, typed arguments, and result columns read by name.
 *
 * Only metadata.c runs statements on the extension's tables; this file
 * holds the mechanism, metadata.c the statements.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_STATEMENT_H
#define PAIMON_SINK_STATEMENT_H

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"

/* How a statement runs (flags of statement_run and the others). */
#define RUN_AS_OWNER 0x01 /* as the extension's owner, search_path pinned */
#define RUN_LATEST                                                                                 \
	0x02				   /* under the latest snapshot: a session reading
								 * what the committer committed after its own
								 * snapshot was taken */
#define RUN_READ_ONLY 0x04 /* SPI's read_only: under the active snapshot */

/* A statement and its plan, prepared on first use and kept for the process. */
typedef struct Statement
{
	const char *sql;
	int expected; /* the SPI_OK_* it must return */
	SPIPlanPtr plan;
} Statement;

/* One argument of a statement: its type and value together. */
typedef struct Arg
{
	Oid type;
	Datum value;
	bool isnull;
} Arg;

#define ARG_INT4(v)                                                                                \
	{                                                                                              \
		INT4OID, Int32GetDatum(v), false                                                           \
	}
#define ARG_INT8(v)                                                                                \
	{                                                                                              \
		INT8OID, Int64GetDatum(v), false                                                           \
	}
#define ARG_OID(v)                                                                                 \
	{                                                                                              \
		OIDOID, ObjectIdGetDatum(v), false                                                         \
	}
#define ARG_BOOL(v)                                                                                \
	{                                                                                              \
		BOOLOID, BoolGetDatum(v), false                                                            \
	}
#define ARG_TEXT(s)                                                                                \
	{                                                                                              \
		TEXTOID, CStringGetTextDatum(s), false                                                     \
	}
#define ARG_TEXT_OR_NULL(s)                                                                        \
	{                                                                                              \
		TEXTOID, (s) ? CStringGetTextDatum(s) : (Datum) 0, (s) == NULL                             \
	}
#define ARG_DATUM(type, d, null)                                                                   \
	{                                                                                              \
		type, (d), (null)                                                                          \
	}

#define STATEMENT_MAX_ARGS 16

/* Reads row "row" of the result into a new object (in the caller's context). */
typedef void *(*RowReader)(uint64 row, const void *arg);

extern uint64 statement_run(Statement *statement, const Arg *args, int nargs, int flags);
extern uint64 statement_execute(Statement *statement, const Arg *args, int nargs, int flags);
extern List *statement_collect(Statement *statement, const Arg *args, int nargs, int flags,
							   RowReader reader, const void *reader_arg);
extern void *statement_first(Statement *statement, const Arg *args, int nargs, int flags,
							 RowReader reader, const void *reader_arg);
extern int64 statement_int8(Statement *statement, const Arg *args, int nargs, int flags,
							const char *column, int64 if_none);
extern List *statement_texts(Statement *statement, const Arg *args, int nargs, int flags,
							 const char *column);
extern List *statement_int8s(Statement *statement, const Arg *args, int nargs, int flags,
							 const char *column);
extern void statement_return_rows(FunctionCallInfo fcinfo, Statement *statement, const Arg *args,
								  int nargs, int flags);

extern Datum row_datum(uint64 row, const char *name, bool *isnull);
extern int64 row_int8(uint64 row, const char *name);
extern int32 row_int4(uint64 row, const char *name);
extern bool row_bool(uint64 row, const char *name);
extern char *row_text(uint64 row, const char *name);
extern List *row_text_list(uint64 row, const char *name);
extern int64 *row_int8_array(uint64 row, const char *name, int *count);

#endif /* PAIMON_SINK_STATEMENT_H */
