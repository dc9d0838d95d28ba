/*-------------------------------------------------------------------------
 *
 * writer_barrier.h
 *	  The writer's end of the checkpoint barrier (writer_barrier.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_WRITER_BARRIER_H
#define PAIMON_SINK_WRITER_BARRIER_H

/* in writer_barrier.c, from the writer's loop and its exit callback */
extern void writer_barrier_answer(void);
extern void writer_barrier_exit(void);

#endif /* PAIMON_SINK_WRITER_BARRIER_H */
