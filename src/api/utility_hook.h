/*-------------------------------------------------------------------------
 *
 * utility_hook.h
 *	  The ProcessUtility hook that guards the extension's own DDL
 *	  (utility_hook.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_UTILITY_HOOK_H
#define PAIMON_SINK_UTILITY_HOOK_H

/* in utility_hook.c */
extern void utility_hook_install(void);
extern bool utility_hook_creating_extension(void);

#endif /* PAIMON_SINK_UTILITY_HOOK_H */
