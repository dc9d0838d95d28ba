/*-------------------------------------------------------------------------
 *
 * wait_events.h
 *	  The names of paimon_sink's waits in pg_stat_activity.wait_event.
 *
 * Every wait of a session, writer, committer, loader or the launcher on
 * the sink passes wait_event_for() one of these; on PostgreSQL 17 and
 * later each is a custom wait event of class Extension under its own name
 * (docs/operations.md lists them), before 17 every one is the one event
 * Extension.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_WAIT_EVENTS_H
#define PAIMON_SINK_WAIT_EVENTS_H

/* A wait of paimon_sink; wait_events.c names each. */
typedef enum PaimonSinkWait
{
	WAIT_HANDOFF_ACK,			/* session: a writer's acknowledgement of its rows */
	WAIT_HANDOFF_QUEUE,			/* session: a free hand-off queue of the writer */
	WAIT_WORKERS_READY,			/* session: the database's committer and writers to start */
	WAIT_COMMITTER_REQUEST,		/* session: the committer's answer to its request */
	WAIT_REQUEST_SLOT,			/* session: a free request slot of the database */
	WAIT_BARRIER,				/* committer: the writers' answers to a barrier */
	WAIT_BARRIER_WRITER_IDLE,	/* committer: a writer free to take the barrier */
	WAIT_COMMITTER_MAIN,		/* committer: idle, waiting for a request or a duty */
	WAIT_EXTENSION_UPDATE,		/* committer: ALTER EXTENSION paimon_sink UPDATE */
	WAIT_LOADERS,				/* committer: its loader workers loading a checkpoint */
	WAIT_WORKERS_EXIT,			/* committer or launcher: workers of before to exit */
	WAIT_STREAM_LOCK,			/* committer: end_input() for the writing transactions */
	WAIT_QUEUE_SEND,			/* any: room in a full shared-memory message queue */
	WAIT_WRITER_MAIN,			/* writer: idle, no sync window open */
	WAIT_SYNC_WINDOW,			/* writer: idle with a sync window open */
	WAIT_LAUNCHER_MAIN,			/* launcher: idle between its rounds */
	WAIT_FAULT_PAUSE,			/* any: held at a paused fault point (tests) */
	WAIT_LOAD_AHEAD_ROWS,		/* loader: more rows of the streamed transaction it loads ahead */
	WAIT_LOAD_AHEAD_CHECKPOINT, /* loader: the checkpoint that takes what it loaded ahead */
	WAIT_COUNT
} PaimonSinkWait;

/* in wait_events.c */
extern uint32 wait_event_for(PaimonSinkWait wait);

#endif /* PAIMON_SINK_WAIT_EVENTS_H */
