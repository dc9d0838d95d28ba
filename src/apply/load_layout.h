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
	/* rows of an older layout (alter_sink added columns since): fewer fields */
	MemoryContext context;	/* the layout's: it lasts as long as the load */
	Relation target;		/* the relation the layout was built for (its defaults) */
	int min_fields;			/* the fewest fields a staged row may have */
	ExprState **defaults;	/* per staged column: its target default in the staged type */
	bool *defaults_built;	/* per staged column: defaults[] was made */
	FmgrInfo *default_send; /* per staged column: the staged type's send function */
	int batch_fields;		/* the fields of the rows of the batch read last */
	const char *batch_path; /* the staged file and offset of that batch, for errors */
	int64 batch_offset;
} LoadLayout;

/* How load_layout_transcode rewrites a batch. */
typedef enum LayoutMode
{
	LAYOUT_TO_TARGET,	 /* for COPY into the target: its columns and types, defaults filled */
	LAYOUT_PAD_DEFAULTS, /* the staged layout, a missing column by its target default */
	LAYOUT_PAD_NULLS	 /* the staged layout, a missing column NULL */
} LayoutMode;

extern LoadLayout *load_layout_build(const SinkInfo *sink, Relation target);
extern List *load_layout_target_names(LoadLayout *layout);
extern int load_layout_batch_fields(LoadLayout *layout, StringInfo batch, const char *path,
									int64 offset);
extern bool load_layout_needs_transcode(LoadLayout *layout, LayoutMode mode);
extern void load_layout_transcode(LoadLayout *layout, StringInfo batch, LayoutMode mode);
extern void load_layout_cast_values(LoadLayout *layout, Datum *values, bool *nulls);
extern TupleDesc load_layout_desc(LoadLayout *layout, TupleDesc staged);
extern void load_layout_warn_dropped(LoadLayout *layout, uint64 rows);

#endif /* PAIMON_SINK_LOAD_LAYOUT_H */
