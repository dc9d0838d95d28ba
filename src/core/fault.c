/*-------------------------------------------------------------------------
 *
 * fault.c
 *	  Fault-injection points and the superuser functions that arm them.
 *
 * The table lives in shared memory, so a test session arms a point that a
 * writer, the committer or another backend hits.  An unarmed build pays one
 * unlocked read per point.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>
#include <unistd.h>

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/procarray.h"
#include "utils/builtins.h"
#include "utils/tuplestore.h"

#include "core/fault.h"
#include "core/names.h"
#include "core/shared_state.h"
#include "core/wait_events.h"

PG_FUNCTION_INFO_V1(paimon_sink_inject_fault);
PG_FUNCTION_INFO_V1(paimon_sink_release_fault);
PG_FUNCTION_INFO_V1(paimon_sink_clear_faults);
PG_FUNCTION_INFO_V1(paimon_sink_fault_status);

/* Every point, at the moments of DESIGN.md's failure table. */
const char *const fault_point_names[] = {
	"writer_after_receive",			   /* hand-off received and logged, before its ack */
	"writer_after_ack",				   /* hand-off acknowledged */
	"writer_before_window_sync",	   /* a sync window closing, before its fsyncs */
	"writer_before_wal",			   /* a new staged file or a batch written, not yet
								 * logged */
	"backend_after_handoff",		   /* rows logged, before the commit record */
	"barrier_after_first_writer",	   /* one writer sealed, the others not yet
									 * collected */
	"committer_before_prepare",		   /* checkpoint loaded, before PREPARE
								 * TRANSACTION */
	"committer_between_group_members", /* a sink group: a member loaded, the next
										 * not yet */
	"committer_between_batch_members", /* periodic checkpoints committed together:
										 * a member loaded, the next not yet */
	"committer_after_prepare",		   /* after PREPARE TRANSACTION, before COMMIT
								 * PREPARED */
	"committer_batch_after_prepare",   /* the same, of periodic checkpoints
										 * committed together */
	"committer_after_removal_records", /* after COMMIT PREPARED, the files'
										 * REMOVE records written, unflushed */
	"committer_after_commit_prepared", /* after COMMIT PREPARED, before
										 * replying */
	"committer_maintenance",		   /* maintenance after a commit was answered */
	"loader_before_prepare",		   /* a loader loaded its share, before PREPARE */
	"loader_after_prepare",			   /* a loader prepared its share, not yet reported */
	"loader_ahead_loading",			   /* loading ahead: its first batch loaded */
	"loader_ahead_waiting",			   /* loaded ahead, waiting for its checkpoint */
	"loader_ahead_assigned",		   /* loaded ahead, its checkpoint just given */
	"committer_before_decision",	   /* every share prepared, no decision yet */
	"committer_after_decision",		   /* decision committed, loader gids not yet */
	"staged_write",					   /* I/O: a write of a staged file (enospc, eio) */
	"staged_fsync",					   /* I/O: an fsync of a staged file (enospc, eio) */
	NULL};

static const char *const action_names[] = {"none",	"error",  "fatal", "panic", "kill",
										   "pause", "enospc", "eio",   NULL};

/* errno_action tells whether an action makes an I/O point fail (fault_errno's). */
static bool
errno_action(int action)
{
	return action == FAULT_ENOSPC || action == FAULT_EIO;
}

/*
 * take_hit counts a hit of point name, armed with an action of the kind
 * asked (errno actions or the others), and returns the action; FAULT_NONE
 * when no such point is armed.  *hit_point receives the point.
 */
static int
take_hit(const char *name, bool errno_kind, FaultPoint **hit_point)
{
	FaultTable *table;
	FaultPoint *point = NULL;
	int action = FAULT_NONE;

	if (PaimonSinkState == NULL)
		return FAULT_NONE;
	table = &PaimonSinkState->faults;
	/*
	 * Read without the mutex, the cheap test of an unarmed build: a hit that
	 * races with inject_fault may miss the point, and tests arm a point
	 * before they cause its hit.
	 */
	if (table->armed == 0)
		return FAULT_NONE;

	SpinLockAcquire(&table->mutex);
	for (int i = 0; i < FAULT_POINT_COUNT; i++)
	{
		FaultPoint *candidate = &table->points[i];

		if (candidate->action != FAULT_NONE && candidate->remaining != 0 &&
			errno_action(candidate->action) == errno_kind && strcmp(candidate->name, name) == 0)
		{
			point = candidate;
			if (point->remaining > 0)
				point->remaining--;
			point->hits++;
			action = point->action;
			if (action == FAULT_PAUSE)
			{
				point->paused_pid = MyProcPid;
				point->released = false;
			}
			break;
		}
	}
	SpinLockRelease(&table->mutex);
	*hit_point = point;
	return action;
}

/*
 * fault_errno is an I/O point: it returns the errno (ENOSPC, EIO) the
 * caller's system call is to fail with when a test armed the point with
 * 'enospc' or 'eio', else 0.
 */
int
fault_errno(const char *name)
{
	FaultPoint *point;

	switch (take_hit(name, true, &point))
	{
		case FAULT_ENOSPC:
			return ENOSPC;
		case FAULT_EIO:
			return EIO;
		default:
			return 0;
	}
}

/*
 * forget_pause clears the paused pid of the point (a FaultPoint *) when it
 * is this process's: the process leaves the pause by an error or exits
 * while paused (PG_ENSURE_ERROR_CLEANUP), so the faults view and a test
 * waiting for the next pause never see a process that is gone.
 */
static void
forget_pause(int code, Datum arg)
{
	FaultPoint *point = (FaultPoint *) DatumGetPointer(arg);

	SpinLockAcquire(&PaimonSinkState->faults.mutex);
	if (point->paused_pid == MyProcPid)
		point->paused_pid = 0;
	SpinLockRelease(&PaimonSinkState->faults.mutex);
}

/*
 * fault_point is a named moment: when a test armed it, act.  A paused
 * process waits, interruptibly, until release_fault() or clear_faults().
 */
void
fault_point(const char *name)
{
	FaultTable *table = PaimonSinkState != NULL ? &PaimonSinkState->faults : NULL;
	FaultPoint *point = NULL;
	int action = take_hit(name, false, &point);

	switch (action)
	{
		case FAULT_NONE:
			return;
		case FAULT_ERROR:
			ereport(ERROR, (errcode(ERRCODE_INTERNAL_ERROR), errmsg("fault injected at %s", name)));
			break;
		case FAULT_FATAL:
			ereport(FATAL, (errcode(ERRCODE_ADMIN_SHUTDOWN),
							errmsg("fault injected at %s: the process ends", name)));
			break;
		case FAULT_PANIC:
			ereport(PANIC, (errcode(ERRCODE_INTERNAL_ERROR),
							errmsg("fault injected at %s: the cluster crash-restarts", name)));
			break;
		case FAULT_KILL:
			ereport(LOG, (errmsg("fault injected at %s: killing process %d", name, MyProcPid)));
			(void) kill(MyProcPid, SIGKILL);
			pg_usleep(10 * 1000000L);
			break;
		case FAULT_PAUSE:
			ereport(LOG, (errmsg("fault injected at %s: process %d pauses", name, MyProcPid)));
			/* a process ended while paused (terminated, an error) is no longer shown paused */
			PG_ENSURE_ERROR_CLEANUP(forget_pause, PointerGetDatum(point));
			for (;;)
			{
				bool released;

				SpinLockAcquire(&table->mutex);
				released = point->released || point->action != FAULT_PAUSE;
				if (released)
					point->paused_pid = 0;
				SpinLockRelease(&table->mutex);
				if (released)
					break;
				/* release_fault() and clear_faults() set our latch; the timeout is a fallback */
				(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 1000,
								 wait_event_for(WAIT_FAULT_PAUSE));
				ResetLatch(MyLatch);
				CHECK_FOR_INTERRUPTS();
			}
			PG_END_ENSURE_ERROR_CLEANUP(forget_pause, PointerGetDatum(point));
			break;
	}
}

/*
 * wake_paused sets the latch of each process paused at a point that the
 * caller just released, so that it goes on at once.
 */
static void
wake_paused(pid_t *pids, int count)
{
	for (int i = 0; i < count; i++)
	{
		PGPROC *proc = pids[i] != 0 ? BackendPidGetProc(pids[i]) : NULL;

		if (proc != NULL)
			SetLatch(&proc->procLatch);
	}
}

/*
 * require_superuser refuses (ERRCODE_INSUFFICIENT_PRIVILEGE) a caller of
 * the fault functions who is not a superuser.
 */
static void
require_superuser(void)
{
	shared_require_preload();
	if (!superuser())
		ereport(ERROR, (errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
						errmsg("only a superuser may inject faults"),
						errdetail("Fault-injection points exist for tests.")));
}

/* known_point tells whether a name is one of the fault points. */
static bool
known_point(const char *name)
{
	for (int i = 0; fault_point_names[i] != NULL; i++)
		if (strcmp(fault_point_names[i], name) == 0)
			return true;
	return false;
}

/*
 * point_argument returns the fault point an argument names, which must not
 * be NULL (ERRCODE_NULL_VALUE_NOT_ALLOWED).
 */
static char *
point_argument(FunctionCallInfo fcinfo, int index)
{
	if (PG_ARGISNULL(index))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("the fault-injection point must not be NULL"),
						errhint("See SELECT point FROM paimon_sink.faults for the points.")));
	return text_to_cstring(PG_GETARG_TEXT_PP(index));
}

/*
 * inject_fault(point text, action text, times integer) arms a point for the
 * next "times" hits (-1: every hit).  Actions: error, fatal, panic, kill,
 * pause; for the I/O points (staged_write, staged_fsync) enospc and eio,
 * which make the point's write or fsync fail with that errno.  Superuser
 * only (42501); 22004 for a NULL point or action; 22023 for an unknown
 * point or action, an action the point does not take, or times 0 or below
 * -1; 54000 when all slots are armed.
 */
Datum
paimon_sink_inject_fault(PG_FUNCTION_ARGS)
{
	char *name;
	char *action_name;
	int32 times = PG_ARGISNULL(2) ? 1 : PG_GETARG_INT32(2);
	FaultTable *table;
	int action = -1;
	FaultPoint *slot = NULL;

	require_superuser();
	name = point_argument(fcinfo, 0);
	if (PG_ARGISNULL(1))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("the fault action must not be NULL")));
	action_name = text_to_cstring(PG_GETARG_TEXT_PP(1));
	if (times == 0 || times < -1)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("times must be -1 or at least 1, not %d", times),
						errhint("Pass -1 to fire at every hit, or the number of hits to fire at; "
								"paimon_sink.clear_faults() disarms.")));
	if (!known_point(name))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("unknown fault-injection point \"%s\"", paimon_sink_shown(name)),
						errhint("See SELECT point FROM paimon_sink.faults for the points.")));
	for (int i = 1; action_names[i] != NULL; i++)
		if (strcmp(action_names[i], action_name) == 0)
			action = i;
	if (action < 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("unknown fault action \"%s\"", paimon_sink_shown(action_name)),
						errhint("Valid actions are: error, fatal, panic, kill, pause, and for the "
								"I/O points staged_write and staged_fsync: enospc, eio.")));

	/* the I/O points (named staged_*) take only the errno actions, the others only the rest */
	if (errno_action(action) != (strncmp(name, "staged_", 7) == 0))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("fault action \"%s\" does not apply to point \"%s\"", action_name, name),
				 errhint("The I/O points staged_write and staged_fsync take enospc or eio; "
						 "the other points error, fatal, panic, kill or pause.")));

	table = &PaimonSinkState->faults;
	SpinLockAcquire(&table->mutex);
	for (int i = 0; i < FAULT_POINT_COUNT; i++)
	{
		FaultPoint *point = &table->points[i];

		if (strcmp(point->name, name) == 0 || (slot == NULL && point->action == FAULT_NONE))
			slot = point;
		if (strcmp(point->name, name) == 0)
			break;
	}
	if (slot != NULL)
	{
		if (slot->action == FAULT_NONE)
			table->armed++;
		strlcpy(slot->name, name, sizeof(slot->name));
		slot->action = action;
		slot->remaining = times;
		slot->hits = 0;
		slot->released = false;
	}
	SpinLockRelease(&table->mutex);
	if (slot == NULL)
		ereport(ERROR, (errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
						errmsg("all %d fault slots are armed", FAULT_POINT_COUNT),
						errhint("Call paimon_sink.clear_faults().")));
	PG_RETURN_VOID();
}

/*
 * release_fault(point text) lets a process paused at the point go on.
 * Superuser only (42501); 22004 for a NULL point, 22023 for an unknown one.
 */
Datum
paimon_sink_release_fault(PG_FUNCTION_ARGS)
{
	char *name;
	FaultTable *table;
	pid_t paused[FAULT_POINT_COUNT];

	require_superuser();
	name = point_argument(fcinfo, 0);
	if (!known_point(name))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("unknown fault-injection point \"%s\"", paimon_sink_shown(name)),
						errhint("See SELECT point FROM paimon_sink.faults for the points.")));
	table = &PaimonSinkState->faults;
	SpinLockAcquire(&table->mutex);
	for (int i = 0; i < FAULT_POINT_COUNT; i++)
	{
		paused[i] = 0;
		if (strcmp(table->points[i].name, name) == 0)
		{
			table->points[i].released = true;
			paused[i] = table->points[i].paused_pid;
		}
	}
	SpinLockRelease(&table->mutex);
	wake_paused(paused, FAULT_POINT_COUNT);
	PG_RETURN_VOID();
}

/* clear_faults() disarms every point and releases every pause. */
Datum
paimon_sink_clear_faults(PG_FUNCTION_ARGS)
{
	FaultTable *table;
	pid_t paused[FAULT_POINT_COUNT];

	require_superuser();
	table = &PaimonSinkState->faults;
	SpinLockAcquire(&table->mutex);
	for (int i = 0; i < FAULT_POINT_COUNT; i++)
	{
		paused[i] = table->points[i].paused_pid;
		table->points[i].action = FAULT_NONE;
		table->points[i].released = true;
		table->points[i].name[0] = '\0';
	}
	table->armed = 0;
	SpinLockRelease(&table->mutex);
	wake_paused(paused, FAULT_POINT_COUNT);
	PG_RETURN_VOID();
}

/*
 * fault_status() returns one row per known point: (point text, action text,
 * remaining integer, hits integer, paused_pid integer).
 */
Datum
paimon_sink_fault_status(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	FaultTable *table;

	shared_require_preload();
	InitMaterializedSRF(fcinfo, 0);
	table = &PaimonSinkState->faults;
	for (int n = 0; fault_point_names[n] != NULL; n++)
	{
		Datum values[5];
		bool nulls[5] = {false, false, false, false, true};
		FaultPoint copy;

		memset(&copy, 0, sizeof(copy));
		SpinLockAcquire(&table->mutex);
		for (int i = 0; i < FAULT_POINT_COUNT; i++)
			if (strcmp(table->points[i].name, fault_point_names[n]) == 0)
				copy = table->points[i];
		SpinLockRelease(&table->mutex);
		values[0] = CStringGetTextDatum(fault_point_names[n]);
		values[1] = CStringGetTextDatum(action_names[copy.action]);
		values[2] = Int32GetDatum(copy.remaining);
		values[3] = Int32GetDatum(copy.hits);
		values[4] = Int32GetDatum(copy.paused_pid);
		nulls[4] = copy.paused_pid == 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
