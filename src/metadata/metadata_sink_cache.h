/*-------------------------------------------------------------------------
 *
 * metadata_sink_cache.h
 *	  A process's copies of the sinks it read by id (metadata_sink_cache.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_METADATA_SINK_CACHE_H
#define PAIMON_SINK_METADATA_SINK_CACHE_H

#include "storage/itemptr.h"

#include "metadata/catalog.h"

/* The version of a sink's row a snapshot sees. */
typedef struct SinkRowVersion
{
	bool present; /* false: no row */
	TransactionId xmin;
	ItemPointerData tid;
} SinkRowVersion;

/* What metadata_sink_cache_fetch found. */
typedef enum SinkCacheResult
{
	SINK_CACHED,  /* info is the sink */
	SINK_ABSENT,  /* the sink does not exist */
	SINK_UNCACHED /* read the row, then store it */
} SinkCacheResult;

extern SinkCacheResult metadata_sink_cache_fetch(int32 sink_id, SinkInfo *info,
												 SinkRowVersion *version);
extern void metadata_sink_cache_store(const SinkInfo *info, const SinkRowVersion *version);

#endif /* PAIMON_SINK_METADATA_SINK_CACHE_H */
