/*-------------------------------------------------------------------------
 *
 * upsert_merge.h
 *	  What an upsert apply knows of its relations (ApplyLayout, derived in
 *	  upsert.c), and the MERGE that applies its outcomes.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_UPSERT_MERGE_H
#define PAIMON_SINK_UPSERT_MERGE_H

#include "access/attnum.h"
#include "access/tupdesc.h"
#include "fmgr.h"
#include "utils/relcache.h"
#include "utils/tuplestore.h"

/* What the apply needs to know, derived from the two relations. */
typedef struct ApplyLayout
{
	Relation target;
	Relation foreign; /* the staged layout */
	int natts;		  /* of the foreign table */
	AttrNumber row_kind_attnum;
	int key_count;
	AttrNumber *key_attnums; /* foreign table attnums, in primary key order */
	char **key_names;
	Oid *key_collations;
	Oid *key_less; /* the index's "<" of each key column */
	FmgrInfo *key_equal;
	char **key_equal_operator;	/* its "=", schema-qualified, for the MERGE */
	TupleDesc sort_desc;		/* the foreign table's columns, then the sequence and fields */
	TupleDesc change_desc;		/* the row, then "delete", "replace", "retract", "fields" */
	int columns;				/* of the row: the staged ones but the row kind */
	AttrNumber *change_attnums; /* foreign table attnum of each */
	int *change_key_index;		/* its place in the primary key, or -1 */
	FmgrInfo *change_equal;		/* a non-key column's "=" (fn_oid 0: none; its text is compared) */
	char **change_equal_operator; /* the same, schema-qualified, or NULL */
	FmgrInfo *change_output;	  /* without "=": the output function */
	bool partial_update;
	int staged_count;		  /* the sink's staged columns now (the newest layout) */
	int *change_staged_index; /* each change column's place in the staged layout */
	bool *layouts_read;		  /* [fields]: rows staged with that many fields were read */
	char *key_constraint;	  /* the primary key's index, as errors name it */
	uint64 upserts;			  /* keys in the changes */
	uint64 deletes;
} ApplyLayout;

extern uint64 upsert_merge_run(ApplyLayout *layout, Tuplestorestate *changes, uint64 *retries);

#endif /* PAIMON_SINK_UPSERT_MERGE_H */
