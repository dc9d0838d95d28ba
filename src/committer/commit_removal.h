/*-------------------------------------------------------------------------
 *
 * commit_removal.h
 *	  Unlinking the staged files of committed checkpoints once their REMOVE
 *	  records are durable.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_COMMIT_REMOVAL_H
#define PAIMON_SINK_COMMIT_REMOVAL_H

#include "access/xlogdefs.h"

extern void commit_removal_add(const char *path);
extern void commit_removal_logged(XLogRecPtr removals);
extern void commit_remove_files(void);
extern void commit_finish_removals(void);
extern bool commit_removals_pending(void);

#endif /* PAIMON_SINK_COMMIT_REMOVAL_H */
