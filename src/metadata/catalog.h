/*-------------------------------------------------------------------------
 *
 * catalog.h
 *	  A sink as paimon_sink's code sees it (SinkInfo, read by metadata.c)
 *	  and the checks on it; the extension's owner and version.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_CATALOG_H
#define PAIMON_SINK_CATALOG_H

#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "utils/rel.h"
#include "utils/uuid.h"

#include "core/constants.h"

typedef struct SinkInfo
{
	int32 sink_id;
	char *name;
	Oid target;
	Oid foreign_table;
	Oid owner; /* its foreign table's owner; InvalidOid when that was dropped */
	char *mode;
	int32 buckets;
	List *bucket_key; /* column names, char * */
	char *default_commit_user;
	pg_uuid_t sink_uuid; /* never repeats; staged files carry it */
	int column_count;	 /* the staged row layout */
	char **column_names;
	Oid *column_types;
	/* each staged column's attribute number in the target (0: none), followed across renames */
	AttrNumber *target_attnums;
	char *row_kind_column; /* upsert: the foreign table's row kind column */
	bool partial_update;   /* upsert: NULL columns keep the target's value */
	List *key_columns;	   /* upsert: the target's primary key, char * */
	bool reject_on_error;  /* on_error 'reject': refused rows go to rejected_row */

	/* upsert: -U rows, or -U and -D rows, are dropped as they are written */
	bool ignore_update_before;
	bool ignore_delete;
	/* overwrite: only the partitions receiving rows are replaced */
	bool dynamic_partition_overwrite;
} SinkInfo;

#define SINK_IS_UPSERT(sink) (strcmp((sink)->mode, "upsert") == 0)
#define SINK_IS_OVERWRITE(sink) (strcmp((sink)->mode, "overwrite") == 0)

extern SinkInfo *catalog_require_sink(const char *name);
extern void catalog_check_owner(const SinkInfo *sink, const char *action);
extern char *catalog_missing_rights(Oid relid, Oid role, AclMode needed);
extern Oid catalog_commit_role(const SinkInfo *sink, Oid relid, AclMode needed);
extern Relation catalog_open_target(const SinkInfo *sink, bool foreign, LOCKMODE lockmode);
extern void catalog_check_layout(const SinkInfo *sink, Oid relid, bool exact);
extern Oid catalog_check_primary_key(const SinkInfo *sink, Relation target);

#endif /* PAIMON_SINK_CATALOG_H */
