/*-------------------------------------------------------------------------
 *
 * column_follow.h
 *	  How a sink's staged columns follow its target's schema changes: a
 *	  renamed column by its attribute number, a widened type by a cast, a
 *	  dropped column skipped.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_COLUMN_FOLLOW_H
#define PAIMON_SINK_COLUMN_FOLLOW_H

#include "metadata/catalog.h"

/* How one staged column loads into the target as the target is now. */
typedef enum ColumnFollow
{
	FOLLOW_NOT_LOADED, /* an upsert sink's row kind: staged, never loaded */
	FOLLOW_DROPPED,	   /* dropped from the target since: skipped */
	FOLLOW_SAME,	   /* the same type and type modifier: loaded as staged */
	FOLLOW_CAST		   /* changed since, keeping every value: cast to the target's type */
} ColumnFollow;

typedef struct FollowedColumn
{
	ColumnFollow how;
	const char *staged_name;  /* the name it was staged under (the foreign table's) */
	AttrNumber staged_attnum; /* its attribute in the foreign table (its place when none) */
	Oid staged_type;
	int32 staged_typmod;
	AttrNumber target_attnum; /* InvalidAttrNumber unless SAME or CAST */
	char *target_name;		  /* its name in the target now, or NULL */
	Oid target_type;
	int32 target_typmod;
	Oid target_collation;
} FollowedColumn;

extern bool column_follow_keeps_values(Oid from_type, int32 from_typmod, Oid to_type,
									   int32 to_typmod);
extern void column_follow(const SinkInfo *sink, Oid target, int column, FollowedColumn *followed);
extern int column_follow_staged_index(const SinkInfo *sink, AttrNumber target_attnum);

#endif /* PAIMON_SINK_COLUMN_FOLLOW_H */
