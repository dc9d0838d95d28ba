/*-------------------------------------------------------------------------
 *
 * staged_wal.h
 *	  The WAL records of staged files: paimon_sink's custom WAL resource
 *	  manager (PostgreSQL 15's RegisterCustomRmgr).
 *
 * Every change to a staged file is a record of this resource manager,
 * written before the change itself, so that crash recovery, a streaming
 * standby and a backup restored with its WAL archive all rebuild the same
 * staged files: a batch's record precedes the commit record of the
 * transaction whose rows it holds.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_STAGED_WAL_H
#define PAIMON_SINK_STAGED_WAL_H

#include "access/xlogdefs.h"

/*
 * The resource manager's id.  Ids 128-255 are for extensions; 128 is for
 * experiments.  An id is the cluster's: two extensions that register the
 * same one cannot be preloaded together (PostgreSQL refuses to start and
 * says which).  The server log names it at start ("registered custom
 * resource manager "paimon_sink" with ID 187").
 */
#define PAIMON_SINK_RMGR_ID 187
#define PAIMON_SINK_RMGR_NAME "paimon_sink"

/* Record kinds, in the high bits of xl_info (the low ones are the WAL's). */
#define XLOG_STAGED_CREATE 0x00		 /* a new file and its header */
#define XLOG_STAGED_APPEND 0x10		 /* bytes written at an offset: a batch */
#define XLOG_STAGED_TRUNCATE 0x20	 /* a torn tail cut at a length */
#define XLOG_STAGED_REMOVE 0x30		 /* a file removed */
#define XLOG_STAGED_REMOVE_SINK 0x40 /* a dropped sink's folder removed */

/* Longest file name a record names: a temporary header's "<uuid>.stage.<n>.tmp". */
#define STAGED_WAL_NAME_BYTES 64

/*
 * The fixed part of every record (40 bytes); CREATE and APPEND are
 * followed by the bytes written (the header, a batch record).  A file is
 * named by its name's uuid, and a temporary header also by its creator.
 */
typedef struct xl_staged_file
{
	Oid database_id;
	int32 sink_id;
	uint64 offset;			 /* APPEND: where the bytes go; TRUNCATE: the new length */
	uint8 file_uuid[16];	 /* "<uuid>.stage"; zero for REMOVE_SINK */
	int16 temporary_creator; /* >= 0: "<uuid>.stage.<creator>.tmp" */
} xl_staged_file;

extern void staged_wal_register(void);
extern void staged_wal_note_checkpoint(void);
extern void staged_wal_cut_if_no_redo(void);
extern XLogRecPtr staged_wal_log(uint8 info, Oid database_id, int32 sink_id, const char *file_name,
								 uint64 offset, const char *data1, int length1, const char *data2,
								 int length2);

#endif /* PAIMON_SINK_STAGED_WAL_H */
