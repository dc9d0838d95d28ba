/*-------------------------------------------------------------------------
 *
 * security.c
 *	  How paimon_sink lends no rights: every statement it runs with rights
 *	  other than the caller's runs in a security-restricted operation with
 *	  search_path pinned to "pg_catalog, pg_temp", and every worker pins
 *	  its role, search_path and transaction settings when it starts.
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

#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "commands/prepare.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "utils/guc.h"

#include "core/security.h"

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
 * security_forget_session_state drops what code run as a sink's owner in
 * the committer may have left in the committer's session, which serves
 * every sink of the database: session-level advisory locks (which would
 * stay held, and would make another owner's lock on the same key succeed
 * or its PREPARE fail) and prepared statements.  The nest level of
 * security_restore_role undoes settings; temporary objects and held
 * cursors are refused in a security-restricted operation.
 */
void
security_forget_session_state(void)
{
	LockReleaseSession(USER_LOCKMETHOD);
	DropAllPreparedStatements();
}

/*
 * What a worker pins when it starts.  A database's owner, who need not be
 * a superuser, may give its database any of these with ALTER DATABASE ...
 * SET, and the workers connect with them: search_path would resolve what
 * that role planted; role and session_authorization would run the workers
 * (and own their prepared transactions) as that role; synchronous_commit =
 * off would lose a prepare the job was told of; session_replication_role =
 * replica (a superuser's, or a role's that GRANT SET ON PARAMETER allows)
 * would load the target without firing its triggers, foreign keys among
 * them; the others would make the workers' transactions fail.
 */
static const struct
{
	const char *name;
	const char *value;
} worker_settings[] = {
	{"search_path", PAIMON_SINK_SAFE_SEARCH_PATH},
	{"role", "none"},
	{"synchronous_commit", "on"},
	{"default_transaction_read_only", "off"},
	{"default_transaction_isolation", "read committed"},
	{"statement_timeout", "0"},
	{"lock_timeout", "0"},
	{"idle_in_transaction_session_timeout", "0"},
	/* an error must end the request, not the committer of every sink */
	{"exit_on_error", "off"},
	/* replica would load without the target's triggers and foreign keys */
	{"session_replication_role", "origin"},
};

/* Whether this process is one of paimon_sink's workers (its settings pinned). */
static bool in_worker = false;

/*
 * security_pin_worker_settings sets, for the rest of a worker's life, the
 * session user to the committer's role and the settings of worker_settings,
 * over whatever ALTER DATABASE ... SET or ALTER ROLE ... SET gave it at
 * connection.  At PGC_S_SESSION, so that a function's own SET still
 * applies while it runs; what the sink owner's code sets during a load is
 * undone by security_restore_role's nest level.  Raises FATAL if the worker
 * still does not run as the committer's role.
 */
void
security_pin_worker_settings(void)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	/* the name lookups of session_authorization need a transaction */
	SetConfigOption("session_authorization", GetUserNameFromId(security_committer_role(), false),
					PGC_SUSET, PGC_S_SESSION);
	for (int i = 0; i < lengthof(worker_settings); i++)
		SetConfigOption(worker_settings[i].name, worker_settings[i].value, PGC_SUSET,
						PGC_S_SESSION);
	CommitTransactionCommand();
	in_worker = true;
	if (GetUserId() != security_committer_role() || GetSessionUserId() != security_committer_role())
		ereport(FATAL,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("paimon_sink worker could not run as role \"%s\"",
						GetUserNameFromId(security_committer_role(), true)),
				 errdetail("Its transactions and their gids must be the committer's role's.")));
}

/*
 * security_in_worker tells whether this process is one of paimon_sink's
 * workers (committer, loader, writer): what runs in it runs for a sink.
 */
bool
security_in_worker(void)
{
	return in_worker;
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
