/*-------------------------------------------------------------------------
 *
 * load_layout.h
 *	  A load's map from the staged layout onto the target as it is at
 *	  commit: names, casts, dropped columns (column_follow.c's rules).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_LOAD_LAYOUT_H
#define PAIMON_SINK_LOAD_LAYOUT_H

#include "executor/executor.h"
#include "lib/stringinfo.h"

#include "metadata/column_follow.h"

typedef struct LoadLayout
{
	const SinkInfo *sink;
	int count;				 /* staged columns, the foreign table's order */
	FollowedColumn *columns; /* per staged column */
	bool same_bytes;		 /* nothing cast, nothing dropped: staged bytes load as they are */
	int dropped;			 /* staged columns dropped from the target since */
	int cast;				 /* staged columns cast */
	ExprState **casts;		 /* per staged column: its cast, or NULL */
	ExprContext *econtext;
	FmgrInfo *receive; /* per cast column: the staged type's receive function */
	Oid *receive_ioparam;
	FmgrInfo *send; /* per cast column: the target type's send function */
	StringInfoData out;
	StringInfoData field;
} LoadLayout;

extern LoadLayout *load_layout_build(const SinkInfo *sink, Relation target);
extern List *load_layout_target_names(LoadLayout *layout);
extern void load_layout_transcode(LoadLayout *layout, StringInfo batch);
extern void load_layout_cast_values(LoadLayout *layout, Datum *values, bool *nulls);
extern TupleDesc load_layout_desc(LoadLayout *layout, TupleDesc staged);
extern void load_layout_warn_dropped(LoadLayout *layout, uint64 rows);

#endif /* PAIMON_SINK_LOAD_LAYOUT_H */
