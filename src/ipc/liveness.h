/*-------------------------------------------------------------------------
 *
 * liveness.h
 *	  Whether a writer answers: the heartbeat each writer publishes, the
 *	  tests sessions and the committer make on it, the committer fencing
 *	  and restarting a writer that stopped answering, and the bounded queue
 *	  send every waiter on a writer or the committer uses; and the
 *	  committer's own heartbeat, which bounds every session's wait on it.
 *
 * A writer answers while it shows progress: its heartbeat moves at every
 * turn of its loop (at least every second when idle) and at every step of
 * a long piece of work.  One that shows none for paimon_sink.handoff_timeout
 * does not answer (stopped by a signal or a debugger, or waiting on a hung
 * disk): whoever waits for it gives up with ERRCODE_QUERY_CANCELED, and the
 * committer fences its process (no acknowledgement and no barrier answer
 * from it any more, its checkpoint hold released once its files are
 * fsynced) and starts the writer again once the process has left.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_LIVENESS_H
#define PAIMON_SINK_LIVENESS_H

#include "core/pg_compat.h"
#include "core/shared_state.h"

/*
 * shm_mq_sendv's outcome when the receiver read nothing for as long as the
 * caller's check allows (see liveness_sendv).
 */
#define LIVENESS_SEND_GAVE_UP ((shm_mq_result) 100)

/*
 * A check made while a send waits: raises an error or returns false to
 * give up, else true (wait_start: when the send began waiting).
 */
typedef bool (*LivenessSendCheck)(void *arg, TimestampTz wait_start);

/* the writer's side */
extern void liveness_beat(WriterEntry *writer);
extern long liveness_idle_nap_ms(void);
extern long liveness_report_statistics(void);

/* tests on a writer, from any process */
extern bool liveness_writer_answers(WriterEntry *writer);
extern bool liveness_writer_serves(WriterEntry *writer);
extern bool liveness_fenced_alive(WriterEntry *writer, pid_t *pid);
extern long liveness_wait_left(WriterEntry *writer, uint64 incarnation, TimestampTz wait_start);
extern pg_noreturn void liveness_raise(WriterEntry *writer, int index, const char *what,
									   const char *outcome);
extern long liveness_check_writer(WriterEntry *writer, int index, uint64 incarnation,
								  TimestampTz wait_start, const char *what, const char *outcome);
extern long liveness_remaining_ms(TimestampTz start);

/* waits on a queue */
extern shm_mq_result liveness_sendv(shm_mq_handle *queue, shm_mq_iovec *iov, int iovcnt,
									LivenessSendCheck check, void *arg);
extern bool liveness_committer_reads(void *arg, TimestampTz wait_start);

/* the committer's side */
extern bool liveness_watch(void);
extern int liveness_watch_interval_ms(void);
extern void liveness_fence(int index, const char *what);
extern void liveness_refuse_fenced(int index, const char *outcome);

/* the committer's heartbeat, and the sessions' waits on it */
extern void liveness_committer_start(void);
extern void liveness_committer_beat(void);
extern long liveness_committer_nap_ms(void);
extern long liveness_check_committer(DatabaseEntry *db, bool running, TimestampTz *progress_at,
									 const char *what, const char *outcome);

#endif /* PAIMON_SINK_LIVENESS_H */
