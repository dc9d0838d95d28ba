/*-------------------------------------------------------------------------
 *
 * shmem_hooks.h
 *	  The shared-memory hooks of paimon_sink (shmem_hooks.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_SHMEM_HOOKS_H
#define PAIMON_SINK_SHMEM_HOOKS_H

extern void shmem_hooks_install(void);

#endif /* PAIMON_SINK_SHMEM_HOOKS_H */
