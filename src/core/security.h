/*-------------------------------------------------------------------------
 *
 * security.h
 *	  Running SQL with rights other than the caller's: the role switch with
 *	  a pinned search_path, the workers' own search_path, and the role the
 *	  committer prepares its transactions as.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PAIMON_SINK_SECURITY_H
#define PAIMON_SINK_SECURITY_H

#include "core/constants.h"

/*
 * The search_path of everything that runs with rights other than the
 * caller's (PostgreSQL 17 calls it GUC_SAFE_SEARCH_PATH): nothing a user
 * created is found by an unqualified name, and pg_temp comes last.
 */
#define PAIMON_SINK_SAFE_SEARCH_PATH "pg_catalog, pg_temp"

/* What security_switch_role saved, for security_restore_role. */
typedef struct RoleSwitch
{
	Oid saved_user;
	int saved_context;
	int nest_level;
} RoleSwitch;

extern void security_switch_role(Oid role, RoleSwitch *saved);
extern void security_restore_role(const RoleSwitch *saved);
extern void security_pin_worker_settings(void);
extern bool security_in_worker(void);
extern void security_forget_session_state(void);
extern Oid security_committer_role(void);

#endif /* PAIMON_SINK_SECURITY_H */
