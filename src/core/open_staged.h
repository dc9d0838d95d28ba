/*-------------------------------------------------------------------------
 *
 * open_staged.h
 *	  The rows and bytes staged in writers' open files, per writer, sink
 *	  and commit user, in a fixed-size shared hash (open_staged.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_OPEN_STAGED_H
#define PAIMON_SINK_OPEN_STAGED_H

#include "datatype/timestamp.h"
#include "storage/spin.h"

#include "core/constants.h"

/* The key of one entry: a writer's rows of one sink and commit user. */
typedef struct OpenStagedKey
{
	Oid database_id;
	int32 writer_index;
	int32 sink_id;
	char commit_user[PAIMON_SINK_COMMIT_USER_MAXLEN + 1];
} OpenStagedKey;

/*
 * What a writer holds in open files (written, not yet sealed into a
 * checkpoint's committables) for one sink and commit user.  Written by
 * that writer only, under mutex; read under it.
 */
typedef struct OpenStagedEntry
{
	OpenStagedKey key; /* hash key */
	slock_t mutex;
	int64 files;
	int64 rows;
	int64 bytes;		   /* batch records: headers and payloads */
	TimestampTz oldest_at; /* when the oldest of them was staged; 0: none */
} OpenStagedEntry;

/* The sums over a database's writers for one sink and commit user. */
typedef struct OpenStagedTotals
{
	bool complete; /* false: some writer's counts did not fit the table */
	int64 files;
	int64 rows;
	int64 bytes;
	TimestampTz oldest_at; /* 0: nothing open */
} OpenStagedTotals;

extern void open_staged_shmem_request(void);
extern void open_staged_shmem_init(void);

extern OpenStagedEntry *open_staged_enter(int32 writer_index, int32 sink_id,
										  const char *commit_user);
extern void open_staged_set(OpenStagedEntry *entry, int64 files, int64 rows, int64 bytes,
							TimestampTz oldest_at);
extern void open_staged_add(OpenStagedEntry *entry, int64 files, int64 rows, int64 bytes,
							TimestampTz staged_at);
extern void open_staged_remove(OpenStagedEntry *entry);
extern void open_staged_forget_writer(Oid database_id, int32 writer_index);
extern void open_staged_totals(Oid database_id, int32 sink_id, const char *commit_user,
							   OpenStagedTotals *totals);

#endif /* PAIMON_SINK_OPEN_STAGED_H */
