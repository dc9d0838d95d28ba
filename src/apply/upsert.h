/*-------------------------------------------------------------------------
 *
 * upsert.h
 *	  Committing a checkpoint of an upsert sink: the latest version of each
 *	  key wins (Paimon's deduplicate merge engine, or its partial-update
 *	  engine when the sink asks for it).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_UPSERT_H
#define PAIMON_SINK_UPSERT_H

#include "commands/copy.h"

#include "metadata/catalog.h"

/* What one checkpoint changed. */
typedef struct UpsertCounts
{
	uint64 versions; /* rows read from the staged files */
	uint64 keys;	 /* keys they changed */
	uint64 upserts;	 /* keys whose latest version is an upsert */
	uint64 deletes;	 /* keys whose latest version is a delete */
	uint64 changed;	 /* target rows inserted, updated or deleted */
	uint64 retries;	 /* MERGE runs again after a concurrent insert */
} UpsertCounts;

/*
 * The sequence number of the row COPY returned last (see committer.c), and
 * into *fields the fields it was staged with (-1: the layout now).
 */
typedef uint64 (*row_sequence_cb)(int *fields);

/* Called when every version is read and the apply begins. */
typedef void (*apply_phase_cb)(void);

extern void upsert_apply(const SinkInfo *sink, copy_data_source_cb read,
						 row_sequence_cb row_sequence, apply_phase_cb applying,
						 UpsertCounts *counts);

#endif /* PAIMON_SINK_UPSERT_H */
