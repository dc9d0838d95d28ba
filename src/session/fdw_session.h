/*-------------------------------------------------------------------------
 *
 * fdw_session.h
 *	  The session's sinks: each foreign table's sink and layouts, cached,
 *	  and the fence epoch joined per (sink, commit user).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_FDW_SESSION_H
#define PAIMON_SINK_FDW_SESSION_H

#include "fmgr.h"
#include "utils/rel.h"

#include "metadata/catalog.h"
#include "staging/value_encoding.h"

/*
 * A sink as its foreign table's statements use it: the definition, and
 * what the layouts of the foreign table and the target give.
 */
typedef struct SinkLayout
{
	SinkInfo sink;
	int column_count;
	AttrNumber *columns;	  /* non-dropped foreign table attnums */
	FmgrInfo *send_functions; /* binary output, in the database encoding */
	ValueEncoding *encodings; /* value_encoding.c's way for each column */
	int bucket_key_count;
	AttrNumber *bucket_attnums; /* foreign table attnums, or NULL */
	FmgrInfo *bucket_hash;		/* the type's hash function, or fn_oid 0 */
	Oid *bucket_collation;
	AttrNumber *target_map; /* target attnum to foreign table attnum, by name */
	/* upsert sinks */
	bool upsert;
	AttrNumber row_kind_attnum;
	int key_count;			 /* the target's primary key */
	AttrNumber *key_attnums; /* foreign table attnums */
	bool *is_key;			 /* by foreign table attnum - 1 */
} SinkLayout;

extern const SinkLayout *fdw_sink_of_foreign_table(Oid relid, Relation rel, Relation target);
extern void fdw_forget_fence_epochs(void);
extern uint64 fdw_session_write_epoch(const SinkInfo *sink, const char *commit_user, int64 named,
									  const char *what);
extern void fdw_session_refuse_anonymous(const SinkInfo *sink);
extern void fdw_session_refuse_ended(int32 sink_id, const pg_uuid_t *sink_uuid,
									 const char *commit_user);

#endif /* PAIMON_SINK_FDW_SESSION_H */
