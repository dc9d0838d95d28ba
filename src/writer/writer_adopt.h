/*-------------------------------------------------------------------------
 *
 * writer_adopt.h
 *	  Rebuilding a writer's streams from its staged files after a restart
 *	  (writer_adopt.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_WRITER_ADOPT_H
#define PAIMON_SINK_WRITER_ADOPT_H

extern void writer_adopt_files(void);

#endif /* PAIMON_SINK_WRITER_ADOPT_H */
