/*-------------------------------------------------------------------------
 *
 * metadata_group.c
 *	  The SQL of sink groups: a group's row and its member sinks, in order
 *	  (sink_group, sink_group_member).
 *
 * A group names several sinks whose checkpoints of one commit user commit
 * in one prepared transaction (commit.c's commit_group_up_to).  Like the
 * rest of the statements on the extension's tables (metadata.c's file
 * comment gives the rules), these pin every name to its schema; writes run
 * as the extension's owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "metadata/metadata.h"
#include "metadata/statement.h"

/* read_group reads a SinkGroup (its members are read apart). */
static void *
read_group(uint64 row, const void *arg)
{
	SinkGroup *group = palloc0(sizeof(SinkGroup));

	group->group_id = row_int4(row, "group_id");
	group->name = row_text(row, "group_name");
	return group;
}

/* read_member reads a member's sink id. */
static void *
read_member(uint64 row, const void *arg)
{
	int32 *sink_id = palloc(sizeof(int32));

	*sink_id = row_int4(row, "sink_id");
	return sink_id;
}

/*
 * metadata_group_by_name returns the group of that name with its members'
 * sink ids (int32 *, in the group's order), or NULL when there is none.
 */
SinkGroup *
metadata_group_by_name(const char *name)
{
	static Statement group_statement = {
		"SELECT g.group_id, g.group_name FROM paimon_sink.sink_group g "
		"WHERE g.group_name OPERATOR(pg_catalog.=) $1",
		SPI_OK_SELECT};
	Arg args[] = {ARG_TEXT(name)};
	SinkGroup *group =
		statement_first(&group_statement, args, lengthof(args), RUN_READ_ONLY, read_group, NULL);

	if (group != NULL)
		group->members = metadata_group_members(group->group_id);
	return group;
}

/*
 * metadata_group_members returns the sink ids of a group's members (an
 * integer List), in the group's order (the committer reads them by the
 * request's group id).
 */
List *
metadata_group_members(int32 group_id)
{
	static Statement statement = {
		"SELECT m.sink_id FROM paimon_sink.sink_group_member m "
		"WHERE m.group_id OPERATOR(pg_catalog.=) $1 ORDER BY m.member_position",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(group_id)};
	List *members = NIL;
	ListCell *lc;

	foreach (lc,
			 statement_collect(&statement, args, lengthof(args), RUN_READ_ONLY, read_member, NULL))
		members = lappend_int(members, *(int32 *) lfirst(lc));
	return members;
}

/*
 * metadata_group_of_sink returns the name of the group a sink belongs to,
 * or NULL when it belongs to none.
 */
char *
metadata_group_of_sink(int32 sink_id)
{
	static Statement statement = {
		"SELECT g.group_name FROM paimon_sink.sink_group g "
		"JOIN paimon_sink.sink_group_member m ON m.group_id OPERATOR(pg_catalog.=) g.group_id "
		"WHERE m.sink_id OPERATOR(pg_catalog.=) $1",
		SPI_OK_SELECT};
	Arg args[] = {ARG_INT4(sink_id)};
	List *names = statement_texts(&statement, args, lengthof(args), RUN_READ_ONLY, "group_name");

	return names == NIL ? NULL : linitial(names);
}

/*
 * metadata_insert_group records a group and its members (sink ids, an
 * integer List, in order), as the extension's owner; returns the group's id.
 * A group has no owner of its own: its members' owners govern it.  A sink
 * of another group fails on sink_group_member's unique sink_id: the caller
 * checks first, for a better message.
 */
int32
metadata_insert_group(const char *name, List *members)
{
	static Statement group_statement = {
		"INSERT INTO paimon_sink.sink_group (group_name) VALUES ($1) RETURNING group_id",
		SPI_OK_INSERT_RETURNING};
	static Statement member_statement = {
		"INSERT INTO paimon_sink.sink_group_member (group_id, member_position, sink_id) "
		"VALUES ($1, $2, $3)",
		SPI_OK_INSERT};
	Arg group_args[] = {ARG_TEXT(name)};
	int32 group_id = (int32) statement_int8(&group_statement, group_args, lengthof(group_args),
											RUN_AS_OWNER, "group_id", 0);
	ListCell *lc;

	foreach (lc, members)
	{
		Arg args[] = {ARG_INT4(group_id), ARG_INT4(foreach_current_index(lc) + 1),
					  ARG_INT4(lfirst_int(lc))};

		(void) statement_execute(&member_statement, args, lengthof(args), RUN_AS_OWNER);
	}
	return group_id;
}

/* metadata_drop_group forgets a group and its members, as the extension's owner. */
void
metadata_drop_group(int32 group_id)
{
	static Statement statement = {
		"DELETE FROM paimon_sink.sink_group g WHERE g.group_id OPERATOR(pg_catalog.=) $1",
		SPI_OK_DELETE};
	Arg args[] = {ARG_INT4(group_id)};

	(void) statement_execute(&statement, args, lengthof(args), RUN_AS_OWNER);
}
