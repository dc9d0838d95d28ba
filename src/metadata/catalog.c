/*-------------------------------------------------------------------------
 *
 * catalog.c
 *	  A sink and the checks on it: that it exists and the caller owns it,
 *	  that its target and foreign table still have the layout and key it
 *	  was created with.  (What the extension's pg_extension row says is
 *	  extension.c's.)
 *
 * The sink's row is read through metadata.c, the one file with SQL on the
 * extension's tables; the checks here read PostgreSQL's own catalogs
 * through the syscache.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_index.h"
#include "commands/extension.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/syscache.h"

#include "core/names.h"
#include "core/pg_compat.h"
#include "metadata/catalog.h"
#include "metadata/column_follow.h"
#include "metadata/metadata.h"

/*
 * catalog_check_primary_key checks that an upsert sink's target still has
 * the primary key the sink was created with (its versions are bucketed and
 * deduplicated by it), and returns its index.  Raises
 * ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE otherwise.
 */
Oid
catalog_check_primary_key(const SinkInfo *sink, Relation target)
{
	Oid index = RelationGetImmediatePrimaryKeyIndex(target);
	bool same = OidIsValid(index);
	StringInfoData now;

	initStringInfo(&now);
	if (same)
	{
		HeapTuple tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index));
		Form_pg_index form;
		ListCell *lc = list_head(sink->key_columns);
		oidvector *collations;
		bool isnull;

		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for index %u", index);
		form = (Form_pg_index) GETSTRUCT(tuple);
		collations = (oidvector *) DatumGetPointer(
			SysCacheGetAttr(INDEXRELID, tuple, Anum_pg_index_indcollation, &isnull));
		same = form->indnkeyatts == list_length(sink->key_columns);
		for (int k = 0; k < form->indnkeyatts; k++)
		{
			char *name = get_attname(RelationGetRelid(target), form->indkey.values[k], false);
			int staged = column_follow_staged_index(sink, form->indkey.values[k]);

			appendStringInfo(&now, "%s%s", k > 0 ? ", " : "", name);
			/* by attribute number: a key column renamed since is the same key */
			if (same)
			{
				same = staged >= 0 && strcmp(sink->column_names[staged], lfirst(lc)) == 0;
				lc = lnext(sink->key_columns, lc);
			}
			/*
			 * Rows are routed by the foreign table's collation and keys
			 * compared by the index's: a key column whose collation changed
			 * on one side would split one key over two buckets.
			 */
			if (same && !isnull && OidIsValid(sink->foreign_table))
			{
				AttrNumber attnum = get_attnum(sink->foreign_table, sink->column_names[staged]);
				Oid type;
				int32 typmod;
				Oid collation = InvalidOid;

				if (attnum != InvalidAttrNumber)
					get_atttypetypmodcoll(sink->foreign_table, attnum, &type, &typmod, &collation);
				if (collation != collations->values[k])
					ereport(
						ERROR,
						(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
						 errmsg("key column \"%s\" of sink \"%s\" has another collation in table "
								"\"%s\" than in the sink's foreign table",
								name, sink->name, RelationGetRelationName(target)),
						 errdetail(
							 "Changes are routed to buckets by the foreign table's collation and "
							 "keys compared by the primary key's; they must be the same."),
						 errhint(
							 "Restore the collation; nothing staged is lost meanwhile. To compare "
							 "keys by another, commit what is staged and re-create the sink.")));
			}
		}
		ReleaseSysCache(tuple);
	}
	if (!same)
	{
		StringInfoData then;
		ListCell *lc;

		initStringInfo(&then);
		foreach (lc, sink->key_columns)
			appendStringInfo(&then, "%s%s", then.len > 0 ? ", " : "", (char *) lfirst(lc));
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the primary key of table \"%s\" is not the one upsert sink \"%s\" was "
						"created with",
						RelationGetRelationName(target), sink->name),
				 errdetail("The sink keys its changes by (%s); the table's primary key is %s%s%s.",
						   then.data, now.len > 0 ? "(" : "none", now.data, now.len > 0 ? ")" : ""),
				 errhint("Restore the primary key (%s); nothing staged is lost meanwhile. To key "
						 "by another, commit what is staged and re-create the sink.",
						 then.data)));
	}
	return index;
}

/*
 * catalog_open_target opens the sink's target table (or, with foreign, its
 * foreign table) with lockmode and returns it, to be closed by the caller.
 * DROP TABLE ... CASCADE on the target drops the foreign table with it and
 * leaves the sink, so a dropped one raises ERRCODE_UNDEFINED_TABLE naming
 * the sink rather than failing on its stale OID.  Needs a transaction.
 */
Relation
catalog_open_target(const SinkInfo *sink, bool foreign, LOCKMODE lockmode)
{
	Relation rel = try_table_open(foreign ? sink->foreign_table : sink->target, lockmode);

	if (rel == NULL && foreign)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("the foreign table of sink \"%s\" was dropped", sink->name),
						errdetail("Its staged rows and prepared checkpoints are kept, but cannot "
								  "be written or committed."),
						errhint("Drop the sink with paimon_sink.drop_sink(), with force => true to "
								"discard what it holds.")));
	if (rel == NULL)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_TABLE),
						errmsg("the target table of sink \"%s\" was dropped", sink->name),
						errdetail("Its staged rows and prepared checkpoints are kept, but cannot "
								  "be written or committed."),
						errhint("Drop the sink with paimon_sink.drop_sink(), with force => true to "
								"discard what it holds.")));
	return rel;
}

/*
 * same_layout tells whether two reads of a sink record the same layout (the
 * same column names and types, in order).
 */
static bool
same_layout(const SinkInfo *a, const SinkInfo *b)
{
	if (a->column_count != b->column_count)
		return false;
	for (int i = 0; i < a->column_count; i++)
		if (a->column_types[i] != b->column_types[i] ||
			strcmp(a->column_names[i], b->column_names[i]) != 0)
			return false;
	return true;
}

/*
 * refuse_altered_table refuses a foreign table whose columns are not the
 * layout sink (as read under the caller's snapshot) records.  When the
 * layout recorded now differs, the sink was altered (alter_sink) after that
 * snapshot was taken, while the catalog already shows the new columns: a
 * REPEATABLE READ or SERIALIZABLE transaction older than the alter_sink(), or
 * a statement whose snapshot predates its lock wait, which a retry mends
 * (ERRCODE_T_R_SERIALIZATION_FAILURE).  Otherwise the foreign table was
 * changed behind the sink's back (ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE).
 */
static void
refuse_altered_table(const SinkInfo *sink)
{
	ListCell *lc;

	foreach (lc, metadata_sinks_of_target(sink->target))
	{
		SinkInfo *now = lfirst(lc);

		if (now->sink_id == sink->sink_id && !same_layout(sink, now))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to a change of the layout of sink "
							"\"%s\"",
							sink->name),
					 errdetail("alter_sink() changed the columns the sink stages after this "
							   "transaction's snapshot was taken."),
					 errhint("Retry the transaction: it will write in the new layout.")));
	}
	ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					errmsg("the foreign table of sink \"%s\" was altered", sink->name),
					errdetail("Rows are staged in the column layout the sink records (made by "
							  "create_sink, grown by alter_sink)."),
					errhint("Undo the ALTER FOREIGN TABLE, or commit what is staged and re-create "
							"the sink.")));
}

/*
 * catalog_check_layout checks a relation against the layout the sink stages
 * rows in.  exact: the relation is the sink's foreign table, whose columns
 * must be the layout, in order; otherwise it is the target, into which
 * each staged column must load as column_follow follows it (renamed,
 * widened, dropped since).  Raises ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE
 * (ERRCODE_T_R_SERIALIZATION_FAILURE when the sink's layout was changed by
 * alter_sink after the snapshot sink was read under) or what column_follow
 * raises (ERRCODE_DATATYPE_MISMATCH /
 * ERRCODE_UNDEFINED_COLUMN / ERRCODE_INVALID_COLUMN_REFERENCE).
 */
void
catalog_check_layout(const SinkInfo *sink, Oid relid, bool exact)
{
	int column = 0;

	if (exact)
	{
		HeapTuple tuple;

		for (AttrNumber attnum = 1;; attnum++)
		{
			Form_pg_attribute attr;

			tuple = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(attnum));
			if (!HeapTupleIsValid(tuple))
				break;
			attr = (Form_pg_attribute) GETSTRUCT(tuple);
			if (!attr->attisdropped)
			{
				if (column >= sink->column_count ||
					strcmp(NameStr(attr->attname), sink->column_names[column]) != 0 ||
					attr->atttypid != sink->column_types[column])
				{
					ReleaseSysCache(tuple);
					refuse_altered_table(sink);
				}
				column++;
			}
			ReleaseSysCache(tuple);
		}
		if (column != sink->column_count)
			refuse_altered_table(sink);
		return;
	}
	for (column = 0; column < sink->column_count; column++)
	{
		FollowedColumn followed;

		column_follow(sink, relid, column, &followed);
	}
}

/* catalog_require_sink returns a sink or raises ERRCODE_UNDEFINED_OBJECT. */
SinkInfo *
catalog_require_sink(const char *name)
{
	SinkInfo *info = palloc0(sizeof(SinkInfo));

	if (name == NULL || !metadata_sink_by_name(name, info))
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("sink \"%s\" does not exist", paimon_sink_shown(name)),
						errdetail("No row of paimon_sink.sinks has that name."),
						errhint("Create it with paimon_sink.create_sink(), or list the sinks with "
								"SELECT * FROM paimon_sink.sinks.")));
	return info;
}

/*
 * no_owner_error raises ERRCODE_UNDEFINED_TABLE for a sink that has no
 * owner: its foreign table, whose owner is the sink's, was dropped (before
 * 0.2 nothing stopped it; since, only with the library not loaded).
 */
static void
no_owner_error(const SinkInfo *sink, const char *action)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_TABLE),
			 errmsg("cannot %s sink \"%s\": its foreign table was dropped", action, sink->name),
			 errdetail("A sink's owner is its foreign table's owner, and its commits run with that "
					   "role's rights; its staged rows and prepared checkpoints are kept."),
			 errhint("A superuser restores the foreign table with SELECT "
					 "paimon_sink.restore_foreign_table(%s, owner => 'role'); or drops the sink "
					 "with paimon_sink.drop_sink(), force => true discarding what it holds.",
					 quote_literal_cstr(sink->name))));
}

/*
 * catalog_check_owner raises ERRCODE_INSUFFICIENT_PRIVILEGE unless the
 * current user is the sink's owner (its foreign table's owner) or a member
 * of it; a superuser passes even when the sink has no owner (its foreign
 * table was dropped), anyone else then gets what no_owner_error raises.
 */
void
catalog_check_owner(const SinkInfo *sink, const char *action)
{
	if (!OidIsValid(sink->owner) && !superuser())
		no_owner_error(sink, action);
	if (!has_privs_of_role(GetUserId(), sink->owner))
	{
		char *owner = GetUserNameFromId(sink->owner, false);

		ereport(
			ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("permission denied to %s sink \"%s\"", action, sink->name),
			 errdetail("Only the owner of the sink, role \"%s\", or a member of it may %s it.",
					   owner, action),
			 errhint(
				 "Run it as role \"%s\", or have that role granted to this one: GRANT %s TO %s;",
				 owner, quote_identifier(owner),
				 quote_identifier(GetUserNameFromId(GetUserId(), false)))));
	}
}

/*
 * catalog_missing_rights returns which of the rights needed (ACL_SELECT,
 * ACL_INSERT, ACL_UPDATE, ACL_DELETE bits) role lacks on relation relid, as
 * a GRANT lists them ("INSERT, DELETE"), or NULL when it has them all: on
 * the table, or on some of its columns (a right given on columns only is
 * left to PostgreSQL's own check at the statement, which names the one).
 */
char *
catalog_missing_rights(Oid relid, Oid role, AclMode needed)
{
	static const struct
	{
		AclMode mode;
		const char *name;
	} rights[] = {{ACL_SELECT, "SELECT"},
				  {ACL_INSERT, "INSERT"},
				  {ACL_UPDATE, "UPDATE"},
				  {ACL_DELETE, "DELETE"}};
	AclMode have = pg_class_aclmask(relid, role, needed, ACLMASK_ALL);
	StringInfoData missing;

	if (have == needed)
		return NULL;
	initStringInfo(&missing);
	for (int i = 0; i < lengthof(rights); i++)
		if ((needed & ~have & rights[i].mode) != 0 &&
			pg_attribute_aclcheck_all(relid, role, rights[i].mode, ACLMASK_ANY) != ACLCHECK_OK)
			appendStringInfo(&missing, "%s%s", missing.len > 0 ? ", " : "", rights[i].name);
	return missing.len > 0 ? missing.data : NULL;
}

/*
 * catalog_commit_role returns the role a commit of the sink writes into
 * relid (the target, or a leaf partition an overwrite replaces) as: the
 * sink's owner, whose triggers and defaults run as for its own statement.
 * It first checks that role's rights there (needed: ACL_* bits), so that
 * one missing on the table and on every column fails the commit naming it
 * and the GRANT that helps (ERRCODE_INSUFFICIENT_PRIVILEGE); a right given
 * on some columns only is left to PostgreSQL's own check.  Raises what
 * no_owner_error raises when the sink has no owner.
 */
Oid
catalog_commit_role(const SinkInfo *sink, Oid relid, AclMode needed)
{
	char *missing;
	char *owner;
	char *relation;

	if (!OidIsValid(sink->owner))
		no_owner_error(sink, "commit");
	missing = catalog_missing_rights(relid, sink->owner, needed);
	if (missing == NULL)
		return sink->owner;
	owner = GetUserNameFromId(sink->owner, false);
	relation = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
										  get_rel_name(relid));
	ereport(
		ERROR,
		(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
		 errmsg("permission denied for table %s", get_rel_name(relid)),
		 errdetail("Commits of sink \"%s\" run as its owner, role \"%s\" (the owner of its "
				   "foreign table), which lacks %s on %s.",
				   sink->name, owner, missing, relation),
		 errhint("GRANT %s ON TABLE %s TO %s; then call commit() or checkpoint() again: nothing "
				 "of the checkpoint was applied and it stays prepared.",
				 missing, relation, quote_identifier(owner))));
	return InvalidOid; /* keep the compiler quiet */
}
