/*-------------------------------------------------------------------------
 *
 * schedule.c
 *	  The committer's schedule of periodic checkpoints: the sinks and their
 *	  checkpoint intervals, their deadlines, and the turn that runs the due
 *	  ones; and the list of every sink, for orphan removal's rounds.
 *
 * Periodic checkpoints (Flink's checkpoint interval, for SQL users): each
 * sink with a checkpoint_interval (or paimon_sink.checkpoint_interval) is
 * checkpointed for its own commit user once per interval; an empty one
 * prepares and commits nothing.  The schedule is read at start and with
 * catalog maintenance, which create_sink's and drop_sink's commits wake.
 *
 * Earliest deadline first: each sink has a deadline (next_due), the due
 * sink with the earliest deadline runs first, and a deadline advances from
 * the one before by the interval, not from the end of the checkpoint, so
 * slots do not drift.  An overloaded committer thus slows every sink alike
 * (taking the first due sink in array order starved the sinks at the back).
 * A sink more than an interval behind skips to its next slot after now:
 * the slots skipped count as overdue.  Each sink's counters are published
 * in shared memory for the checkpoint_schedule view.
 *
 * When a sink is due, the turn takes the sinks due soonest after it too,
 * and commits them together (serve_periodic_batch, commit_batch.c): one
 * barrier round and one prepared transaction for up to
 * PAIMON_SINK_BARRIER_SINKS of them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/datetime.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "committer/commit_batch.h"
#include "committer/commit_parallel.h"
#include "committer/schedule.h"
#include "committer/serve.h"
#include "committer/work.h"
#include "core/guc.h"
#include "metadata/metadata.h"

/* One sink with a checkpoint interval: its deadline and counters. */
typedef struct ScheduledSink
{
	int32 sink_id;
	int64 interval_ms;
	TimestampTz next_due; /* its deadline */
	int64 checkpoints;	  /* the counters of ScheduleStatusEntry */
	int64 overdue;
	int64 last_late_ms;
	int64 max_late_ms;
	TimestampTz last_run;
} ScheduledSink;

static ScheduledSink *schedule = NULL;
static int schedule_count = 0;
static int32 *schedule_all = NULL; /* every sink, for orphan removal */
static int schedule_all_count = 0;

/*
 * interval_ms_of turns a sink's checkpoint_interval into milliseconds (0:
 * none), counting a month as 30 days as interval comparison does, and at
 * most INT_MAX, as create_sink() and paimon_sink.checkpoint_interval allow
 * (a catalog row is not trusted to be in range: the deadlines add it to
 * timestamps).  In milliseconds, any interval's sum fits in 64 bits.
 */
static int64
interval_ms_of(Interval *given)
{
	int64 ms = ((int64) given->day + (int64) given->month * DAYS_PER_MONTH) * SECS_PER_DAY * 1000 +
			   given->time / 1000;

	/* a positive interval under a millisecond runs every millisecond */
	if (ms <= 0)
		return ms == 0 && given->time > 0 ? 1 : 0;
	return Min(ms, INT_MAX);
}

/* publish_sink publishes the schedule's entry i in shared memory, if it is shown. */
static void
publish_sink(int i)
{
	ScheduleStatus *status = &MyDatabaseEntry->schedule;
	ScheduleStatusEntry *entry;

	if (i >= PAIMON_SINK_SCHEDULE_SHOWN)
		return;
	entry = &status->entries[i];
	SpinLockAcquire(&status->mutex);
	entry->sink_id = schedule[i].sink_id;
	entry->interval_ms = schedule[i].interval_ms;
	entry->next_due = schedule[i].next_due;
	entry->checkpoints = schedule[i].checkpoints;
	entry->overdue = schedule[i].overdue;
	entry->last_late_ms = schedule[i].last_late_ms;
	entry->max_late_ms = schedule[i].max_late_ms;
	entry->last_run = schedule[i].last_run;
	SpinLockRelease(&status->mutex);
}

/*
 * schedule_publish publishes the whole schedule in shared memory, entry by
 * entry, for the checkpoint_schedule view.  Raises nothing.
 */
void
schedule_publish(void)
{
	ScheduleStatus *status = &MyDatabaseEntry->schedule;
	int shown = Min(schedule_count, PAIMON_SINK_SCHEDULE_SHOWN);

	/* fewer first, so that a reader never takes an entry of a dropped sink for a new one */
	SpinLockAcquire(&status->mutex);
	status->count = Min(status->count, shown);
	SpinLockRelease(&status->mutex);
	for (int i = 0; i < shown; i++)
		publish_sink(i);
	SpinLockAcquire(&status->mutex);
	status->count = shown;
	SpinLockRelease(&status->mutex);
}

/*
 * schedule_read reads the sinks and their checkpoint intervals into the
 * schedule and publishes it; a sink already scheduled keeps its deadline
 * (but none later than an interval from now) and its counters.
 */
void
schedule_read(void *arg)
{
	TimestampTz now = GetCurrentTimestamp();
	ScheduledSink *next;
	int count = 0;
	List *rows;
	int sinks;

	work_begin();
	rows = metadata_schedule();
	sinks = list_length(rows);
	next = MemoryContextAllocZero(TopMemoryContext, sizeof(ScheduledSink) * Max(1, sinks));
	if (schedule_all != NULL)
		pfree(schedule_all);
	schedule_all = MemoryContextAllocZero(TopMemoryContext, sizeof(int32) * Max(1, sinks));
	schedule_all_count = sinks;
	for (int i = 0; i < sinks; i++)
	{
		ScheduledSinkRow *row = list_nth(rows, i);
		int32 sink_id = row->sink_id;
		int64 interval_ms =
			row->has_interval ? interval_ms_of(&row->interval) : PaimonSinkCheckpointIntervalMs;

		schedule_all[i] = sink_id;
		if (interval_ms <= 0)
			continue;
		next[count].sink_id = sink_id;
		next[count].interval_ms = interval_ms;
		next[count].next_due = TimestampTzPlusMilliseconds(now, interval_ms);
		/* a sink already scheduled keeps its deadline and counters */
		for (int j = 0; j < schedule_count; j++)
			if (schedule[j].sink_id == sink_id)
			{
				TimestampTz due = Min(schedule[j].next_due, next[count].next_due);

				next[count] = schedule[j];
				next[count].interval_ms = interval_ms;
				next[count].next_due = due;
			}
		count++;
	}
	work_end();
	if (schedule != NULL)
		pfree(schedule);
	schedule = next;
	schedule_count = count;
	schedule_publish();
}

/*
 * schedule_next_due returns when the next periodic checkpoint is due
 * (DT_NOEND: none is scheduled).  Raises nothing.
 */
TimestampTz
schedule_next_due(void)
{
	TimestampTz due = DT_NOEND;

	for (int i = 0; i < schedule_count; i++)
		if (!commit_parallel_defers(schedule[i].sink_id))
			due = Min(due, schedule[i].next_due);
	return due;
}

/*
 * due_sinks fills due with the indexes of the sinks whose periodic
 * checkpoints run now, earliest deadline first (of those with the same,
 * the first in the array first), at most PAIMON_SINK_BARRIER_SINKS;
 * returns how many.  When a sink is due, the batch it starts is filled
 * with the sinks due soonest after it, each at most a quarter of its
 * interval early (its next deadline is still one interval after this one:
 * no slot drifts): when the deadlines are spread over the interval, as
 * sinks created one by one have them, taking only the due ones would
 * start a batch for every sink or two while the committer keeps up, and
 * make batches only once it has fallen behind.  A sink that waits for the
 * parallel commit in flight is not due.
 */
static int
due_sinks(TimestampTz now, int *due)
{
	int count = 0;

	for (int i = 0; i < schedule_count; i++)
	{
		int at;

		if (schedule[i].next_due - schedule[i].interval_ms * 1000 / 4 > now ||
			commit_parallel_defers(schedule[i].sink_id))
			continue;
		/* insertion into the sorted few: a later deadline goes after the equal ones */
		at = count;
		while (at > 0 && schedule[due[at - 1]].next_due > schedule[i].next_due)
			at--;
		if (at >= PAIMON_SINK_BARRIER_SINKS)
			continue;
		if (count < PAIMON_SINK_BARRIER_SINKS)
			count++;
		memmove(&due[at + 1], &due[at], sizeof(int) * (count - 1 - at));
		due[at] = i;
	}
	/* nothing runs before a sink is due */
	return count > 0 && schedule[due[0]].next_due <= now ? count : 0;
}

/*
 * advance_deadline moves a sink's deadline on after a periodic checkpoint
 * that ended at now: by one interval; when that leaves it more than an
 * interval behind, on to its first slot after now, the slots passed over
 * counted as overdue.
 */
static void
advance_deadline(ScheduledSink *sink, TimestampTz now)
{
	int64 interval_us = sink->interval_ms * 1000;
	TimestampTz due = sink->next_due + interval_us;

	if (due + interval_us <= now)
	{
		int64 skipped = (now - due) / interval_us + 1;

		due += skipped * interval_us;
		sink->overdue += skipped;
	}
	sink->next_due = due;
}

/*
 * count_run counts a periodic checkpoint of the sink that started at now
 * (one taken early into a batch is not late).
 */
static void
count_run(ScheduledSink *sink, TimestampTz now)
{
	sink->checkpoints++;
	sink->last_run = now;
	sink->last_late_ms = Max(0, (now - sink->next_due) / 1000);
	sink->max_late_ms = Max(sink->max_late_ms, sink->last_late_ms);
}

/*
 * checkpoint_done moves the sink's deadline on after its periodic
 * checkpoint ended with sqlerrcode: a failure is logged (by the one who
 * served it) and tried again, not too often.
 */
static void
checkpoint_done(ScheduledSink *sink, int sqlerrcode)
{
	if (sqlerrcode == 0)
		advance_deadline(sink, GetCurrentTimestamp());
	else
		sink->next_due =
			TimestampTzPlusMilliseconds(GetCurrentTimestamp(), Max(sink->interval_ms, 10000));
}

/*
 * schedule_run_due takes the due periodic checkpoints with the
 * earliest deadlines; false when none is due.  One due sink is served
 * alone (serve_periodic); several are served together, one batch of at
 * most PAIMON_SINK_BARRIER_SINKS (serve_periodic_batch): its members share
 * the barrier round and the WAL flushes of their commits.  A member the
 * batch did not take (another owner's sink) stays due for the next turn.
 */
bool
schedule_run_due(void)
{
	TimestampTz now = GetCurrentTimestamp();
	int due[PAIMON_SINK_BARRIER_SINKS];
	BatchMember members[PAIMON_SINK_BARRIER_SINKS];
	int count = due_sinks(now, due);

	if (count == 0)
		return false;
	if (count == 1)
	{
		ScheduledSink *sink = &schedule[due[0]];
		/* not in CommitterContext, which run_request resets: it may be the current one */
		CommitterRequest *request =
			MemoryContextAllocZero(TopMemoryContext, sizeof(CommitterRequest));

		count_run(sink, now);
		request->kind = REQUEST_CHECKPOINT;
		request->sink_id = sink->sink_id;
		/* left to the loaders, it counts as run: its outcome is only logged */
		if (!serve_periodic(request))
			request->sqlerrcode = 0;
		checkpoint_done(sink, request->sqlerrcode);
		publish_sink(due[0]);
		pfree(request);
		return true;
	}
	memset(members, 0, sizeof(members));
	for (int i = 0; i < count; i++)
		members[i].sink_id = schedule[due[i]].sink_id;
	serve_periodic_batch(members, count);
	for (int i = 0; i < count; i++)
	{
		ScheduledSink *sink = &schedule[due[i]];

		if (members[i].outcome == BATCH_NOT_TAKEN)
			continue;
		count_run(sink, now);
		checkpoint_done(sink, members[i].sqlerrcode);
		publish_sink(due[i]);
	}
	return true;
}

/* schedule_sink_count returns how many sinks the database has (schedule_read read them). */
int
schedule_sink_count(void)
{
	return schedule_all_count;
}

/*
 * schedule_sink_at returns the id of the database's sink at index (below
 * schedule_sink_count()), in sink id order.
 */
int32
schedule_sink_at(int index)
{
	Assert(index >= 0 && index < schedule_all_count);
	return schedule_all[index];
}
