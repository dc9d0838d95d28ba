/*-------------------------------------------------------------------------
 *
 * handoff_failure.c
 *	  A hand-off that its writer could not stage, both ends.
 *
 * A writer that fails to stage a hand-off's rows (ENOSPC or EIO writing a
 * staged file, creating its folder) stays alive: nothing of the failed
 * batch is in the WAL (a batch is logged only once written, and the part
 * written is cut off again, staged_file.c), so no node replays it and no
 * writer adopts it.  The writer records the error in the hand-off's slot
 * instead of acknowledging the hand-off, reads and drops the rest of it,
 * and wakes the session, which raises the error: the session's
 * transaction is rolled back, so the batches of it that were staged
 * before (other chunks, other writers) belong to an aborted transaction
 * and every barrier leaves them out.
 *
 * The error must reach that session and no other.  A slot is free again
 * only once both ends detached; a failed use also needs the session to
 * have seen its failure (raised it, or rolled back without waiting), else
 * a later use of the slot, acknowledged, would raise done_generation past
 * the failed one and the session would take its rows for staged.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/elog.h"

#include "ipc/handoff_failure.h"

/*
 * handoff_failure_relayable tells whether a writer's error while staging
 * is one to relay to the session and survive: the file-access classes (53
 * insufficient resources: a full disk; 58 system error: EIO and others;
 * 42501 a folder the server may not write).  Any other error (a bug, a
 * corrupt message) still ends the writer.
 */
bool
handoff_failure_relayable(const ErrorData *edata)
{
	int category = ERRCODE_TO_CATEGORY(edata->sqlerrcode);

	return edata->elevel == ERROR &&
		   (category == ERRCODE_INSUFFICIENT_RESOURCES || category == ERRCODE_SYSTEM_ERROR ||
			edata->sqlerrcode == ERRCODE_INSUFFICIENT_PRIVILEGE);
}

/* copy_text copies a text into a slot's field, cut at a character boundary. */
static void
copy_text(char *field, const char *text)
{
	int length;

	if (text == NULL)
	{
		field[0] = '\0';
		return;
	}
	length = pg_mbcliplen(text, strlen(text), HANDOFF_FAILURE_TEXT - 1);
	memcpy(field, text, length);
	field[length] = '\0';
}

/*
 * handoff_failure_record (writer) records edata as the failure of the use
 * a slot serves now, unless one is recorded (the first error of a
 * hand-off is the one its session gets), and wakes the session.
 */
void
handoff_failure_record(WriterEntry *writer, HandoffSlot *slot, const ErrorData *edata)
{
	PGPROC *requester = NULL;

	SpinLockAcquire(&writer->mutex);
	if (!slot->failed && slot->state == HANDOFF_ACTIVE)
	{
		slot->failed = true;
		slot->failure_seen = false;
		slot->failure_code = edata->sqlerrcode;
		copy_text(slot->failure_message, edata->message);
		copy_text(slot->failure_detail, edata->detail);
		copy_text(slot->failure_hint, edata->hint);
		requester = slot->requester;
	}
	SpinLockRelease(&writer->mutex);
	if (requester != NULL)
		SetLatch(&requester->procLatch);
}

/* handoff_failure_reset_locked clears a free slot's failure before it is published again. */
void
handoff_failure_reset_locked(HandoffSlot *slot)
{
	slot->failed = false;
	slot->failure_seen = false;
}

/*
 * handoff_slot_release_locked frees a slot whose both ends detached and
 * whose failure, if any, its session has seen; true when it did.  The
 * caller holds the writer's mutex (and wakes the writer, which publishes
 * the slot again).
 */
bool
handoff_slot_release_locked(HandoffSlot *slot)
{
	if (!slot->sender_done || !slot->receiver_done || (slot->failed && !slot->failure_seen))
		return false;
	slot->state = HANDOFF_FREE;
	slot->published = false;
	return true;
}

/*
 * see_failure marks the failure of the session's use (generation) of a
 * slot seen, and frees the slot when both ends are done; true when that
 * use failed.  *copy receives the slot's failure texts (may be NULL).
 */
static bool
see_failure(WriterEntry *writer, HandoffSlot *slot, uint64 generation, HandoffSlot *copy)
{
	bool failed;
	bool freed = false;
	PGPROC *writer_proc = NULL;

	SpinLockAcquire(&writer->mutex);
	/* no later use can have taken the slot: it stays taken until this is seen */
	failed = slot->failed && !slot->failure_seen && slot->generation == generation;
	if (failed)
	{
		if (copy != NULL)
			memcpy(copy, slot, sizeof(HandoffSlot));
		slot->failure_seen = true;
		freed = handoff_slot_release_locked(slot);
		writer_proc = writer->proc;
	}
	SpinLockRelease(&writer->mutex);
	if (freed && writer_proc != NULL)
		SetLatch(&writer_proc->procLatch);
	return failed;
}

/*
 * handoff_failure_raise (session) raises the failure its writer recorded
 * for the session's use (generation) of a slot, if there is one: the
 * writer's SQLSTATE (53100 for a full disk, 58030 for an I/O error),
 * message (naming the staged file) and hint, and a detail naming the
 * folder and saying that the transaction is rolled back.  Returns when
 * the use did not fail.
 */
void
handoff_failure_raise(WriterEntry *writer, HandoffSlot *slot, uint64 generation)
{
	HandoffSlot copy;

	if (!see_failure(writer, slot, generation, &copy))
		return;
	ereport(ERROR,
			(errcode(copy.failure_code),
			 errmsg("the sink writer could not stage the rows of this transaction: %s",
					copy.failure_message),
			 errdetail("%s%sThis transaction is rolled back, so none of its rows are staged; the "
					   "writer goes on serving.",
					   copy.failure_detail, copy.failure_detail[0] != '\0' ? " " : ""),
			 copy.failure_hint[0] != '\0' ? errhint("%s", copy.failure_hint) : 0));
}

/*
 * handoff_failure_forget (session, at rollback) marks a failure of the
 * session's use of a slot seen without raising it, so that the slot can be
 * used again.
 */
void
handoff_failure_forget(WriterEntry *writer, HandoffSlot *slot, uint64 generation)
{
	(void) see_failure(writer, slot, generation, NULL);
}
