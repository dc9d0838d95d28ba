/*-------------------------------------------------------------------------
 *
 * writer.h
 *	  Writer background workers: they receive rows from committing
 *	  backends through hand-off queues, stage them in files per stream,
 *	  fsync (grouped) before acknowledging, and at a checkpoint barrier seal
 *	  their files and report the committables to the committer.
 *	  Paimon: TableWriteOperator; SeaTunnel: SinkWriter.
 *
 * The launcher starts writers by the entry point's name.  The barrier's
 * records and both its ends are in barrier.h.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_WRITER_H
#define PAIMON_SINK_WRITER_H

#include "fmgr.h"

#include "ipc/barrier_protocol.h"

extern PGDLLEXPORT void paimon_sink_writer_main(Datum main_arg);

#endif /* PAIMON_SINK_WRITER_H */
