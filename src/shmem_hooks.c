/*-------------------------------------------------------------------------
 *
 * shmem_hooks.c
 *	  The server hooks through which paimon_sink asks for its shared memory
 *	  and sets it up, chained after those of libraries loaded before it.
 *
 * The layout itself is shared_state.c's (and the table of open staged rows
 * open_staged.c's); these two hooks only call them at
 * the moments the postmaster allows.  The startup hook is also the one
 * moment before every start of the startup process (a crash restart
 * included) when the postmaster runs alone: it reads the control file's
 * checkpoint there (staged_wal.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"

#include "core/open_staged.h"
#include "core/shared_state.h"
#include "shmem_hooks.h"
#include "staging/staged_wal.h"

static shmem_request_hook_type previous_shmem_request_hook = NULL;
static shmem_startup_hook_type previous_shmem_startup_hook = NULL;

/* paimon_sink_shmem_request asks for the shared state's memory and lock. */
static void
paimon_sink_shmem_request(void)
{
	if (previous_shmem_request_hook)
		previous_shmem_request_hook();
	shared_state_request();
	open_staged_shmem_request();
}

/*
 * paimon_sink_shmem_startup sets up the shared state (or attaches to it).
 * Where shared memory is made, not attached to (the postmaster before each
 * start of the startup process, or a single-user backend), it also keeps
 * the next xid of the checkpoint recovery will start from, against which
 * a writer cuts the batches no WAL record describes when that recovery
 * runs no redo (staged_wal.c says why).
 */
static void
paimon_sink_shmem_startup(void)
{
	if (previous_shmem_startup_hook)
		previous_shmem_startup_hook();
	shared_state_init();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	open_staged_shmem_init();
	LWLockRelease(AddinShmemInitLock);
	if (!IsUnderPostmaster)
		staged_wal_note_checkpoint();
}

/* shmem_hooks_install chains both hooks in (from _PG_init). */
void
shmem_hooks_install(void)
{
	previous_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = paimon_sink_shmem_request;
	previous_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = paimon_sink_shmem_startup;
}
