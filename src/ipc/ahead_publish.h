/*-------------------------------------------------------------------------
 *
 * ahead_publish.h
 *	  A writer publishing a streamed transaction's own staged files, and
 *	  how far each is logged, for the loader that loads them ahead.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_AHEAD_PUBLISH_H
#define PAIMON_SINK_AHEAD_PUBLISH_H

#include "core/shared_state.h"

/* Where a writer raises one published file's end: an entry, its claim, a file. */
typedef struct AheadSlot
{
	LoaderEntry *loader; /* NULL: not published */
	uint64 generation;
	int file;
} AheadSlot;

/* in ahead_publish.c */
extern void ahead_publish(DatabaseEntry *db, int32 sink_id, const char *commit_user,
						  uint64 full_xid, const char *file_name, AheadSlot *slot);
extern void ahead_published(const AheadSlot *slot, uint64 end);

#endif /* PAIMON_SINK_AHEAD_PUBLISH_H */
