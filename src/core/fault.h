/*-------------------------------------------------------------------------
 *
 * fault.h
 *	  Fault-injection points, compiled into every build so that tests run
 *	  against what ships, armed only by a superuser (as Citus's failure
 *	  injection drives its 2PC tests).  A point is a name; an armed point
 *	  raises an error, ends the process, crashes the cluster, or pauses
 *	  until a test releases it; an I/O point (fault_errno) makes its
 *	  system call fail with ENOSPC or EIO instead.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_FAULT_H
#define PAIMON_SINK_FAULT_H

#include "storage/spin.h"

#define FAULT_POINT_NAME_LENGTH 48
#define FAULT_POINT_COUNT 16

typedef enum FaultAction
{
	FAULT_NONE = 0,
	FAULT_ERROR,  /* ereport(ERROR) */
	FAULT_FATAL,  /* ereport(FATAL): the process ends */
	FAULT_PANIC,  /* ereport(PANIC): the cluster crash-restarts */
	FAULT_KILL,	  /* SIGKILL itself: a crash without a word */
	FAULT_PAUSE,  /* wait until released */
	FAULT_ENOSPC, /* the I/O at the point fails with ENOSPC (fault_errno) */
	FAULT_EIO	  /* the I/O at the point fails with EIO (fault_errno) */
} FaultAction;

typedef struct FaultPoint
{
	char name[FAULT_POINT_NAME_LENGTH];
	int action;
	int remaining; /* hits left; -1 for every hit */
	int hits;
	pid_t paused_pid;
	bool released;
} FaultPoint;

typedef struct FaultTable
{
	slock_t mutex;
	int armed;
	FaultPoint points[FAULT_POINT_COUNT];
} FaultTable;

extern const char *const fault_point_names[];

extern void fault_point(const char *name);
extern int fault_errno(const char *name);

#endif /* PAIMON_SINK_FAULT_H */
