/*-------------------------------------------------------------------------
 *
 * handoff_failure.h
 *	  A hand-off its writer could not stage (a full disk, an I/O error):
 *	  the writer's end records the error in the slot, the session's end
 *	  raises it, and the rule for when such a slot is free again.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_HANDOFF_FAILURE_H
#define PAIMON_SINK_HANDOFF_FAILURE_H

#include "core/shared_state.h"

extern bool handoff_failure_relayable(const ErrorData *edata);
extern void handoff_failure_record(WriterEntry *writer, HandoffSlot *slot, const ErrorData *edata);
extern void handoff_failure_reset_locked(HandoffSlot *slot);
extern bool handoff_slot_release_locked(HandoffSlot *slot);
extern void handoff_failure_raise(WriterEntry *writer, HandoffSlot *slot, uint64 generation);
extern void handoff_failure_forget(WriterEntry *writer, HandoffSlot *slot, uint64 generation);

#endif /* PAIMON_SINK_HANDOFF_FAILURE_H */
