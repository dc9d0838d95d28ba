/*-------------------------------------------------------------------------
 *
 * utility_hook.c
 *	  The ProcessUtility hook that guards the extension's own DDL (apart
 *	  from metadata/version.c, whose checks every layer uses, since the
 *	  hook calls the session, the committer's recovery and the foreign
 *	  tables above it).
 *
 * The hook refuses DROP EXTENSION paimon_sink while a commit of ours is in
 * doubt, and CREATE or ALTER EXTENSION paimon_sink over a schema that a
 * role other than a superuser could have filled; before DROP DATABASE it
 * stops that database's workers, which would otherwise hold it open.
 * After any DROP it has the commit look whether the extension went (DROP
 * EXTENSION, DROP SCHEMA paimon_sink CASCADE, DROP OWNED), so that the
 * launcher stops wanting the database's workers.  It also keeps a sink
 * whole (foreign_table.c): DROP ROLE is refused while the role owns a
 * sink, and every statement ends refused if it dropped a sink's foreign
 * table without the sink.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_database.h"
#include "catalog/pg_namespace.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "nodes/value.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/syscache.h"

#include "api/foreign_table.h"
#include "api/schema_change.h"
#include "api/utility_hook.h"
#include "committer/recovery.h"
#include "core/constants.h"
#include "core/pg_compat.h"
#include "core/shared_state.h"
#include "metadata/catalog.h"
#include "metadata/statement.h"
#include "metadata/version.h"
#include "session/handoff.h"

static ProcessUtility_hook_type previous_process_utility_hook = NULL;

/* A CREATE EXTENSION paimon_sink (not an ALTER EXTENSION UPDATE) runs its script. */
static bool in_create_extension = false;

/*
 * utility_hook_creating_extension tells whether the extension script running
 * now is CREATE EXTENSION paimon_sink's, not an ALTER EXTENSION UPDATE's
 * (creating_extension is true for both).
 */
bool
utility_hook_creating_extension(void)
{
	return in_create_extension;
}

/*
 * names_paimon_sink tells whether a statement's list of extension names
 * holds paimon_sink.
 */
static bool
names_paimon_sink(List *names)
{
	ListCell *lc;

	foreach (lc, names)
		if (strcmp(strVal(lfirst(lc)), "paimon_sink") == 0)
			return true;
	return false;
}

/*
 * refuse_drop_while_in_doubt refuses DROP EXTENSION paimon_sink
 * (ERRCODE_OBJECT_IN_USE) while a prepared transaction of ours is in doubt,
 * as drop_sink does.  The drop would wait forever on its locks when the
 * committer cannot finish it (it waits for ALTER EXTENSION paimon_sink
 * UPDATE, which would queue behind the drop).  Only ours: one that another
 * role named like ours is that role's to end.
 */
static void
refuse_drop_while_in_doubt(DropStmt *drop)
{
	ListCell *lc;

	if (drop->removeType != OBJECT_EXTENSION || !names_paimon_sink(drop->objects) ||
		!OidIsValid(get_extension_oid("paimon_sink", true)))
		return;
	foreach (lc, recovery_prepared_gids(CurrentMemoryContext))
	{
		PreparedGid *entry = lfirst(lc);

		if (entry->ours)
			ereport(
				ERROR,
				(errcode(ERRCODE_OBJECT_IN_USE),
				 errmsg(
					 "cannot drop extension paimon_sink while its transaction \"%s\" is in doubt",
					 entry->gid),
				 errdetail("A prepared transaction of the committer holds locks on the extension's "
						   "tables."),
				 errhint("Let the committer finish it (if its log says it waits for ALTER "
						 "EXTENSION paimon_sink UPDATE, run that first), or end it with COMMIT "
						 "PREPARED or ROLLBACK PREPARED.")));
	}
}

/*
 * refuse_foreign_objects refuses a schema paimon_sink holding an object a
 * role other than a superuser owns: a function, operator, type or relation
 * planted there before a superuser took the schema over would be found by
 * the extension's scripts, whose search_path puts that schema first.  Raises
 * ERRCODE_INSUFFICIENT_PRIVILEGE naming the first such object.
 */
static void
refuse_foreign_objects(Oid schema, const char *statement)
{
	static Statement objects = {
		"SELECT o.kind, o.name, o.owner FROM ("
		"SELECT 'relation' AS kind, c.relname::pg_catalog.text AS name, c.relowner AS owner "
		"  FROM pg_catalog.pg_class c WHERE c.relnamespace OPERATOR(pg_catalog.=) $1 "
		"UNION ALL SELECT 'function', p.proname::pg_catalog.text, p.proowner "
		"  FROM pg_catalog.pg_proc p WHERE p.pronamespace OPERATOR(pg_catalog.=) $1 "
		"UNION ALL SELECT 'type', t.typname::pg_catalog.text, t.typowner "
		"  FROM pg_catalog.pg_type t WHERE t.typnamespace OPERATOR(pg_catalog.=) $1 "
		"UNION ALL SELECT 'operator', o.oprname::pg_catalog.text, o.oprowner "
		"  FROM pg_catalog.pg_operator o WHERE o.oprnamespace OPERATOR(pg_catalog.=) $1 "
		"UNION ALL SELECT 'collation', l.collname::pg_catalog.text, l.collowner "
		"  FROM pg_catalog.pg_collation l WHERE l.collnamespace OPERATOR(pg_catalog.=) $1 "
		"UNION ALL SELECT 'conversion', v.conname::pg_catalog.text, v.conowner "
		"  FROM pg_catalog.pg_conversion v WHERE v.connamespace OPERATOR(pg_catalog.=) $1 "
		"UNION ALL SELECT 'operator class', k.opcname::pg_catalog.text, k.opcowner "
		"  FROM pg_catalog.pg_opclass k WHERE k.opcnamespace OPERATOR(pg_catalog.=) $1 "
		"UNION ALL SELECT 'operator family', f.opfname::pg_catalog.text, f.opfowner "
		"  FROM pg_catalog.pg_opfamily f WHERE f.opfnamespace OPERATOR(pg_catalog.=) $1 "
		"UNION ALL SELECT 'text search configuration', g.cfgname::pg_catalog.text, g.cfgowner "
		"  FROM pg_catalog.pg_ts_config g WHERE g.cfgnamespace OPERATOR(pg_catalog.=) $1 "
		"UNION ALL SELECT 'text search dictionary', d.dictname::pg_catalog.text, d.dictowner "
		"  FROM pg_catalog.pg_ts_dict d WHERE d.dictnamespace OPERATOR(pg_catalog.=) $1) o",
		SPI_OK_SELECT};
	Arg args[] = {ARG_OID(schema)};
	uint64 rows;

	SPI_connect();
	rows = statement_run(&objects, args, lengthof(args), RUN_READ_ONLY);
	for (uint64 i = 0; i < rows; i++)
	{
		Oid owner = DatumGetObjectId(row_datum(i, "owner", NULL));

		if (!superuser_arg(owner))
		{
			char *kind = row_text(i, "kind");
			char *name = row_text(i, "name");
			char *owner_name = GetUserNameFromId(owner, true);

			ereport(
				ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s refuses schema \"paimon_sink\": its %s \"%s\" is owned by role \"%s\", "
						"which is not a superuser",
						statement, kind, name, owner_name ? owner_name : "(dropped)"),
				 errdetail("The extension's scripts find what that schema holds first; an object "
						   "of another role there could run that role's code as a superuser."),
				 errhint("Drop that object after checking what it does, or drop the schema: CREATE "
						 "EXTENSION creates its own.")));
		}
	}
	SPI_finish();
}

/*
 * refuse_untrusted_schema refuses (ERRCODE_INSUFFICIENT_PRIVILEGE) a
 * schema paimon_sink that other roles could have filled.  CREATE EXTENSION
 * paimon_sink uses a schema paimon_sink that already exists as it is, and
 * its scripts (with that schema first on their search_path) and every name
 * the library qualifies with it resolve what is in it.  So a schema that a
 * role other than a superuser owns, or may create objects in, is refused:
 * that role could have planted objects there for a superuser to run.  The
 * same holds before each ALTER EXTENSION paimon_sink UPDATE, whose scripts
 * run the same way.
 */
static void
refuse_untrusted_schema(const char *statement)
{
	Oid schema = get_namespace_oid("paimon_sink", true);
	HeapTuple tuple;
	Oid owner;
	Acl *acl;
	bool isnull;
	Datum datum;

	if (!OidIsValid(schema))
		return;
	tuple = SearchSysCache1(NAMESPACEOID, ObjectIdGetDatum(schema));
	if (!HeapTupleIsValid(tuple))
		return;
	owner = ((Form_pg_namespace) GETSTRUCT(tuple))->nspowner;
	if (!superuser_arg(owner))
	{
		ReleaseSysCache(tuple);
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s refuses schema \"paimon_sink\": it is owned by role \"%s\", which is "
						"not a superuser",
						statement, GetUserNameFromId(owner, false)),
				 errdetail("The extension's scripts and its library resolve what that schema "
						   "holds; its owner could have put objects there for a superuser to run."),
				 errhint("Drop or rename that schema: CREATE EXTENSION creates its own.")));
	}
	datum = SysCacheGetAttr(NAMESPACEOID, tuple, Anum_pg_namespace_nspacl, &isnull);
	if (!isnull)
	{
		AclItem *items;

		acl = DatumGetAclPCopy(datum);
		items = ACL_DAT(acl);
		for (int i = 0; i < ACL_NUM(acl); i++)
		{
			Oid grantee = items[i].ai_grantee;

			if ((ACLITEM_GET_PRIVS(items[i]) & ACL_CREATE) != 0 &&
				(grantee == ACL_ID_PUBLIC || !superuser_arg(grantee)))
			{
				ReleaseSysCache(tuple);
				ereport(
					ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg(
						 "%s refuses schema \"paimon_sink\": role \"%s\" may create objects in it",
						 statement,
						 grantee == ACL_ID_PUBLIC ? "PUBLIC" : GetUserNameFromId(grantee, false)),
					 errdetail("The extension's scripts and its library resolve what that schema "
							   "holds; a role that may create objects there could plant them for a "
							   "superuser to run."),
					 errhint("REVOKE CREATE ON SCHEMA paimon_sink FROM %s, after checking what the "
							 "schema holds.",
							 grantee == ACL_ID_PUBLIC
								 ? "PUBLIC"
								 : quote_identifier(GetUserNameFromId(grantee, false)))));
			}
		}
	}
	ReleaseSysCache(tuple);
	refuse_foreign_objects(schema, statement);
}

/*
 * paimon_sink_process_utility is the ProcessUtility hook: it refuses the
 * statements above (and, through foreign_table.c, DROP ROLE of a sink's
 * owner and any statement that dropped a sink's foreign table without the
 * sink), and before DROP DATABASE stops the database's workers.
 * DROP DATABASE waits only briefly for other sessions to leave, and our
 * workers are sessions: ask them to stop first (pg_cron's lesson), and
 * want them again should the drop fail.
 */
static void
paimon_sink_process_utility(PlannedStmt *pstmt, const char *queryString, bool readOnlyTree,
							ProcessUtilityContext context, ParamListInfo params,
							QueryEnvironment *queryEnv, DestReceiver *dest, QueryCompletion *qc)
{
	Node *statement = pstmt->utilityStmt;
	volatile Oid stopped_database = InvalidOid; /* read after a longjmp */
	volatile int level = 0;						/* foreign_table.c's nesting level */
	/* the script's own statements come through here too: restore, never clear */
	volatile bool outer_create_extension = in_create_extension;

	if (IsA(statement, DropStmt) && PaimonSinkState != NULL)
		refuse_drop_while_in_doubt((DropStmt *) statement);
	if (IsA(statement, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) statement)->extname, "paimon_sink") == 0)
		refuse_untrusted_schema("CREATE EXTENSION paimon_sink");
	if (IsA(statement, AlterExtensionStmt) &&
		strcmp(((AlterExtensionStmt *) statement)->extname, "paimon_sink") == 0)
		refuse_untrusted_schema("ALTER EXTENSION paimon_sink UPDATE");
	if (IsA(statement, DropRoleStmt))
		foreign_table_refuse_drop_role((DropRoleStmt *) statement);
	if (IsA(statement, AlterTableStmt) || IsA(statement, RenameStmt))
		foreign_table_refuse_alter(statement);
	if (IsA(statement, AlterTableStmt) || IsA(statement, AlterEnumStmt))
		schema_change_refuse(statement);
	PG_TRY();
	{
		if (IsA(statement, CreateExtensionStmt) &&
			strcmp(((CreateExtensionStmt *) statement)->extname, "paimon_sink") == 0)
			in_create_extension = true;
		if (IsA(statement, DropdbStmt) && PaimonSinkState != NULL)
		{
			Oid database_id = get_database_oid(((DropdbStmt *) statement)->dbname, true);

			/* only for who may drop it; wanted again if the stop or the drop fails */
			if (OidIsValid(database_id) &&
				object_ownercheck(DatabaseRelationId, database_id, GetUserId()))
			{
				if (shared_database_wanted(database_id))
					stopped_database = database_id;
				shared_stop_database(database_id);
			}
		}
		level = foreign_table_begin_statement();
		if (previous_process_utility_hook)
			previous_process_utility_hook(pstmt, queryString, readOnlyTree, context, params,
										  queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params, queryEnv,
									dest, qc);
		/* a sink's foreign table dropped without its sink refuses the statement */
		foreign_table_end_statement(statement, level);
		level = 0;
		/* a target's default changed: the sinks' foreign tables take it too */
		schema_change_follow_defaults(statement);
		in_create_extension = outer_create_extension;
		/* the extension may be gone with what this dropped: the commit looks */
		if ((IsA(statement, DropStmt) || IsA(statement, DropOwnedStmt)) && PaimonSinkState != NULL)
			handoff_check_extension_at_commit();
		/* a schema made by another role between the check and its use: undo it all */
		if (IsA(statement, CreateExtensionStmt) &&
			strcmp(((CreateExtensionStmt *) statement)->extname, "paimon_sink") == 0)
			refuse_untrusted_schema("CREATE EXTENSION paimon_sink");
	}
	PG_CATCH();
	{
		if (level > 0)
			foreign_table_abort_statement(level);
		in_create_extension = outer_create_extension;
		if (OidIsValid(stopped_database))
			(void) shared_want_database(stopped_database, false);
		PG_RE_THROW();
	}
	PG_END_TRY();
}

/*
 * utility_hook_install chains paimon_sink_process_utility into
 * ProcessUtility_hook (from _PG_init).
 */
void
utility_hook_install(void)
{
	previous_process_utility_hook = ProcessUtility_hook;
	ProcessUtility_hook = paimon_sink_process_utility;
}
