/*-------------------------------------------------------------------------
 *
 * sink_group.c
 *	  Sink groups at the SQL level: create_sink_group() and
 *	  drop_sink_group(), and the resolution of a group's name where a sink
 *	  name is taken (prepare_commit, commit, recover, restart_job,
 *	  last_commit, last_committed_checkpoint, end_input).
 *
 * A group is one commit user's checkpoint N across several sinks, committed
 * in one prepared transaction (commit_group.c), so that a job replicating a
 * whole database keeps foreign keys and cross-table totals consistent at
 * every checkpoint.  Paimon, Iceberg and the XA sinks commit table by
 * table; Kafka's transactions span the topics of one producer the same
 * way.  Group and sink names share one namespace, so that a name in the
 * sink_name argument is never ambiguous.  The caller must own every member
 * sink (or be a member of its owner) to create the group, to address it or
 * to drop it: a group has no owner of its own, so it follows its members'
 * owners (REASSIGN OWNED moves them) and no DROP ROLE can strand it; a
 * sink belongs to at most one group.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"

#include "api/sink_group.h"
#include "api/sql_call.h"
#include "core/constants.h"
#include "core/names.h"
#include "metadata/catalog.h"
#include "metadata/metadata.h"
#include "metadata/version.h"

PG_FUNCTION_INFO_V1(paimon_sink_create_sink_group);
PG_FUNCTION_INFO_V1(paimon_sink_drop_sink_group);

/*
 * sink_group_named returns the group of that name with its members, or
 * NULL when no group has it.
 */
SinkGroup *
sink_group_named(const char *name)
{
	return name == NULL ? NULL : metadata_group_by_name(name);
}

/*
 * member_sink reads a member sink of a group (the catalog's foreign key
 * keeps it from being dropped while it is one).
 */
static SinkInfo *
member_sink(const SinkGroup *group, int32 sink_id)
{
	SinkInfo *sink = palloc0(sizeof(SinkInfo));

	if (!metadata_sink_by_id(sink_id, sink))
		elog(ERROR, "sink %d of sink group \"%s\" does not exist", sink_id, group->name);
	return sink;
}

/*
 * sink_group_member_sinks returns the SinkInfo of each member of a group,
 * in the group's order, after checking that the caller owns each (what
 * catalog_check_owner raises: ERRCODE_INSUFFICIENT_PRIVILEGE).
 */
List *
sink_group_member_sinks(const SinkGroup *group, const char *action)
{
	List *sinks = NIL;
	ListCell *lc;

	foreach (lc, group->members)
	{
		SinkInfo *sink = member_sink(group, lfirst_int(lc));

		catalog_check_owner(sink, action);
		sinks = lappend(sinks, sink);
	}
	return sinks;
}

/*
 * sink_group_owned_sinks resolves the first argument of a call that takes
 * a sink or a group: the sink it names (what sql_owned_sink checks), or
 * the members of the group it names, each owned by the caller; *group_id
 * gets the group's id, 0 for a sink.
 */
List *
sink_group_owned_sinks(FunctionCallInfo fcinfo, const char *action, int32 *group_id)
{
	SinkGroup *group;

	paimon_sink_require_ready();
	group = sink_group_named(sql_text_argument(fcinfo, 0));
	*group_id = 0;
	if (group == NULL)
		return list_make1(sql_owned_sink(fcinfo, action));
	*group_id = group->group_id;
	return sink_group_member_sinks(group, action);
}

/*
 * sink_group_first_sink returns the sink a read-only call (last_commit,
 * last_committed_checkpoint) answers for: the one the first argument names,
 * or a group's first member, whose marks and properties are the group's
 * (the members commit together).  Raises ERRCODE_NULL_VALUE_NOT_ALLOWED for
 * a NULL name, and what catalog_require_sink raises.
 */
SinkInfo *
sink_group_first_sink(FunctionCallInfo fcinfo)
{
	char *name = sql_text_argument(fcinfo, 0);
	SinkGroup *group;

	paimon_sink_require_ready();
	if (name == NULL)
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("the sink name must not be NULL")));
	group = sink_group_named(name);
	if (group == NULL)
		return catalog_require_sink(name);
	return member_sink(group, linitial_int(group->members));
}

/*
 * group_name_argument returns the group name argument, checked as a sink
 * name is (ERRCODE_NULL_VALUE_NOT_ALLOWED, ERRCODE_INVALID_PARAMETER_VALUE).
 */
static char *
group_name_argument(FunctionCallInfo fcinfo)
{
	char *name = sql_text_argument(fcinfo, 0);

	if (name == NULL)
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("the sink group name must not be NULL")));
	if (name[0] == '\0' || strlen(name) >= NAMEDATALEN)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("invalid sink group name \"%s\"", paimon_sink_shown(name)),
						errdetail("A sink group name has 1 to %d characters, as a sink name.",
								  NAMEDATALEN - 1)));
	return name;
}

/*
 * member_argument resolves one element of create_sink_group's sinks: a sink
 * the caller owns, in no group yet and not named before (members so far:
 * an integer List of sink ids).
 */
static SinkInfo *
member_argument(const char *name, const char *group_name, List *members)
{
	SinkInfo *sink = catalog_require_sink(name);
	char *other;

	catalog_check_owner(sink, "group");
	if (list_member_int(members, sink->sink_id))
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("sink \"%s\" is named twice in sink group \"%s\"", name, group_name),
						errhint("Name each member sink once.")));
	/* a group's commit skips a member's empty checkpoints, which an overwrite job's first may be */
	if (SINK_IS_OVERWRITE(sink))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("overwrite sink \"%s\" cannot join sink group \"%s\"", name, group_name),
				 errdetail("A sink group commits append and upsert sinks; an overwrite sink "
						   "replaces its target in its own first commit, even an empty one."),
				 errhint("Commit the overwrite sink on its own, or make it an append sink.")));
	other = metadata_group_of_sink(sink->sink_id);
	if (other != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("sink \"%s\" already belongs to sink group \"%s\"", name, other),
				 errdetail("A sink belongs to at most one group: its checkpoints of a commit user "
						   "commit with one group's."),
				 errhint("Drop that group first with paimon_sink.drop_sink_group(%s).",
						 quote_literal_cstr(other))));
	return sink;
}

/*
 * create_sink_group(group_name text, sinks text[]) registers a group of
 * existing sinks of this database, in the order given (the first records
 * the group's properties); returns void.  Errors: 22004 NULL name or
 * sinks, 22023 bad name, empty sinks, a sink named twice; 0A000 an
 * overwrite sink; 42704 unknown sink; 42501 a sink the caller does not
 * own; 42710 a sink or group of the name exists, a sink already in a group.
 */
Datum
paimon_sink_create_sink_group(PG_FUNCTION_ARGS)
{
	char *name;
	SinkInfo existing;
	Datum *elements;
	bool *nulls;
	int count;
	List *members = NIL;

	paimon_sink_require_ready();
	name = group_name_argument(fcinfo);
	if (PG_ARGISNULL(1))
		ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
						errmsg("the sinks of a sink group must not be NULL")));
	deconstruct_array(PG_GETARG_ARRAYTYPE_P(1), TEXTOID, -1, false, TYPALIGN_INT, &elements, &nulls,
					  &count);
	if (count == 0)
		ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
						errmsg("sink group \"%s\" has no sinks", name),
						errhint("Name at least one sink, such as ARRAY['orders_sink', "
								"'order_lines_sink'].")));
	if (metadata_sink_by_name(name, &existing))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT), errmsg("a sink named \"%s\" exists", name),
				 errdetail("Sink groups and sinks share one namespace: the functions that "
						   "take a sink name also take a group's."),
				 errhint("Choose another name for the group.")));
	if (sink_group_named(name) != NULL)
		ereport(ERROR, (errcode(ERRCODE_DUPLICATE_OBJECT),
						errmsg("sink group \"%s\" already exists", name),
						errhint("Choose another name, or drop it with "
								"paimon_sink.drop_sink_group().")));
	for (int i = 0; i < count; i++)
	{
		SinkInfo *sink;

		if (nulls[i])
			ereport(ERROR, (errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
							errmsg("the sinks of a sink group must not contain NULL")));
		sink = member_argument(TextDatumGetCString(elements[i]), name, members);
		members = lappend_int(members, sink->sink_id);
	}
	(void) metadata_insert_group(name, members);
	PG_RETURN_VOID();
}

/*
 * drop_sink_group(group_name text) forgets a group; its member sinks stay.
 * Returns void.  A group has no owner of its own (nothing for DROP ROLE to
 * strand): whoever has the rights of every member's owner may drop it, as
 * create it.  Errors: 42704 unknown group, 42501 a member the caller does
 * not own (what catalog_check_owner raises).
 */
Datum
paimon_sink_drop_sink_group(PG_FUNCTION_ARGS)
{
	char *name;
	SinkGroup *group;

	paimon_sink_require_ready();
	name = group_name_argument(fcinfo);
	group = sink_group_named(name);
	if (group == NULL)
		ereport(ERROR, (errcode(ERRCODE_UNDEFINED_OBJECT),
						errmsg("sink group \"%s\" does not exist", name),
						errhint("List the groups with SELECT * FROM paimon_sink.sink_groups.")));
	(void) sink_group_member_sinks(group, "ungroup");
	metadata_drop_group(group->group_id);
	PG_RETURN_VOID();
}
