/*-------------------------------------------------------------------------
 *
 * rejects.h
 *	  Rows a commit's target refuses: found by redoing a failed load in
 *	  groups and rows, then named in a stop's error or moved aside.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_REJECTS_H
#define PAIMON_SINK_REJECTS_H

#include "access/tupdesc.h"
#include "utils/elog.h"
#include "utils/tuplestore.h"

#include "metadata/catalog.h"

/* Where the rows of a failed load come from again, and how they are applied. */
typedef struct RedoSource
{
	TupleDesc desc;				  /* of the rows: the first columns are the target's */
	int columns;				  /* how many of desc's attributes are the row's */
	int key_count;				  /* key columns named in errors (0: the row's place) */
	int *key_index;				  /* their attribute numbers in desc, from 0 */
	int delete_index;			  /* the attribute saying "a delete" (upsert), or -1 */
	const char *retry_constraint; /* its unique violation is raised, never a refusal */
	/* upsert: each column's staged index (-1: none), and the attribute of the row's fields */
	const int *staged_index;
	int fields_index; /* -1: every row carries every column */
	/* the next row, or false at the end */
	bool (*next)(void *arg, Datum *values, bool *nulls);
	/* applies the rows in store to the target; returns the target rows changed */
	uint64 (*apply)(void *arg, Tuplestorestate *store);
	void *arg;
} RedoSource;

extern void rejects_begin(const SinkInfo *sink, const char *commit_user, int64 checkpoint_id,
						  bool operator_call);
extern bool rejects_row_error(const ErrorData *error, const char *retry_constraint);
extern uint64 rejects_redo(RedoSource *source, ErrorData *bulk_error);
extern int64 rejects_record(void);
extern void rejects_set_operator_call(bool on);
extern bool rejects_operator_call(void);

#endif /* PAIMON_SINK_REJECTS_H */
