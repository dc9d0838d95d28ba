/*-------------------------------------------------------------------------
 *
 * missing_files.h
 *	  discard_missing_files(): forgetting the committables of pending
 *	  checkpoints whose staged files are gone, so that the rest commits.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_MISSING_FILES_H
#define PAIMON_SINK_MISSING_FILES_H

#include "core/shared_state.h"

extern void missing_files_discard(int32 sink_id, const char *commit_user,
								  CommitterRequest *request);

#endif /* PAIMON_SINK_MISSING_FILES_H */
