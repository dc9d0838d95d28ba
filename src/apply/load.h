/*-------------------------------------------------------------------------
 *
 * load.h
 *	  Loading a checkpoint's staged files: the COPY data source that reads
 *	  their included batches, the rows' sequence numbers, and the progress
 *	  the view commit_progress shows.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_LOAD_H
#define PAIMON_SINK_LOAD_H

#include "commands/copy.h"

#include "apply/upsert.h"
#include "core/shared_state.h"
#include "metadata/catalog.h"
#include "metadata/metadata.h"

/* One staged file to load, and the batch offsets it leaves out. */
typedef struct LoadFile
{
	char *name;
	char path[MAXPGPATH];
	int64 *excluded;
	int excluded_count;
	int64 row_count;
	int64 size;		/* its bytes; 0: not known (the whole file is loaded) */
	int64 position; /* of its first byte, the checkpoint's files laid end to end */
} LoadFile;

/* Receives one staged row of load_scan_files, in the foreign table's layout. */
typedef void (*LoadRowCallback)(void *arg, Datum *values, bool *nulls);

/* in load.c */
extern LoadFile *load_file_of(const CheckpointFile *recorded, int32 sink_id);
extern uint64 load_files(SinkInfo *sink, List *files);
extern uint64 load_files_share(SinkInfo *sink, List *files, int64 share_begin, int64 share_end);
extern uint64 load_files_from(SinkInfo *sink, copy_data_source_cb read);
extern uint64 load_apply_files(SinkInfo *sink, List *files, UpsertCounts *counts);
extern void load_scan_files(SinkInfo *sink, List *files, LoadRowCallback row, void *arg);
extern void load_abort(void);
extern void load_copy_header(StringInfo buf);

extern void load_progress_start(int32 sink_id, const char *commit_user, int64 checkpoint_id,
								int files, int64 rows);
extern void load_progress_update(int phase, int files, int64 rows);
extern void load_progress_gid(const char *gid);
extern void load_progress_to_loader(LoaderEntry *loader);

#endif /* PAIMON_SINK_LOAD_H */
