/*-------------------------------------------------------------------------
 *
 * security.c
 *	  How paimon_sink lends no rights: every statement it runs with rights
 *	  other than the caller's runs in a security-restricted operation with
 *	  search_path pinned to "pg_catalog, pg_temp", and every worker pins
 *	  its search_path when it starts.
 *
 * The role switch follows PostgreSQL's own maintenance commands (VACUUM,
 * CREATE INDEX, REFRESH MATERIALIZED VIEW): save the user and security
 * context, switch with SECURITY_RESTRICTED_OPERATION, open a GUC nest
 * level so that whatever the code that runs sets is undone when it ends,
 * and pin search_path inside it, as PostgreSQL 17's RestrictSearchPath()
 * does.  Pinning alone is not the defence: the extension's SQL also names
 * every table, function, operator and type with its schema.  Pinning
 * covers what that SQL calls in turn (a trigger, a default, a type's
 * function), so that nothing a user planted in a schema on a search_path,
 * in pg_temp or in a writable public is ever found (CVE-2018-1058).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_authid.h"
#include "miscadmin.h"
#include "security.h"
#include "utils/guc.h"

/*
 * security_switch_role makes role the current user inside a
 * security-restricted operation, with a new GUC nest level whose
 * search_path is PAIMON_SINK_SAFE_SEARCH_PATH; security_restore_role
 * undoes both, in that order.  An error in between needs nothing more:
 * the (sub)transaction's abort restores the user and pops the nest level,
 * as for PostgreSQL's own commands.  Raises nothing itself.
 */
void
security_switch_role(Oid role, RoleSwitch *saved)
{
	GetUserIdAndSecContext(&saved->saved_user, &saved->saved_context);
	SetUserIdAndSecContext(role, saved->saved_context | SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	saved->nest_level = NewGUCNestLevel();
	(void) set_config_option("search_path", PAIMON_SINK_SAFE_SEARCH_PATH, PGC_USERSET,
							 PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
}

/* security_restore_role ends what security_switch_role began. */
void
security_restore_role(const RoleSwitch *saved)
{
	AtEOXact_GUC(false, saved->nest_level);
	SetUserIdAndSecContext(saved->saved_user, saved->saved_context);
}

/*
 * security_pin_worker_search_path sets a worker's search_path for the
 * rest of its life, over whatever ALTER DATABASE ... SET or ALTER ROLE ...
 * SET gave it at connection (a database owner can set those).  At
 * PGC_S_SESSION, so that a function's own SET search_path still applies
 * while it runs; what the sink owner's code sets during a load is undone
 * by security_restore_role's nest level.
 */
void
security_pin_worker_search_path(void)
{
	SetConfigOption("search_path", PAIMON_SINK_SAFE_SEARCH_PATH, PGC_SUSET, PGC_S_SESSION);
}

/*
 * security_committer_role returns the role the workers connect as (a
 * background worker connected with no role is the bootstrap superuser),
 * and so the owner of every transaction the committer prepares: only a
 * superuser can prepare one as that role.  Recovery finishes only prepared
 * transactions owned by it (see recovery.c).
 */
Oid
security_committer_role(void)
{
	return BOOTSTRAP_SUPERUSERID;
}
