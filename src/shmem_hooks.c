/*-------------------------------------------------------------------------
 *
 * shmem_hooks.c
 *	  The server hooks through which paimon_sink asks for its shared memory
 *	  and sets it up, chained after those of libraries loaded before it.
 *
 * The layout itself is shared_state.c's; these two hooks only call it at
 * the moments the postmaster allows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "miscadmin.h"
#include "shared_state.h"
#include "shmem_hooks.h"
#include "storage/ipc.h"

static shmem_request_hook_type previous_shmem_request_hook = NULL;
static shmem_startup_hook_type previous_shmem_startup_hook = NULL;

/* paimon_sink_shmem_request asks for the shared state's memory and lock. */
static void
paimon_sink_shmem_request(void)
{
	if (previous_shmem_request_hook)
		previous_shmem_request_hook();
	shared_state_request();
}

/* paimon_sink_shmem_startup sets up the shared state (or attaches to it). */
static void
paimon_sink_shmem_startup(void)
{
	if (previous_shmem_startup_hook)
		previous_shmem_startup_hook();
	shared_state_init();
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
