/*-------------------------------------------------------------------------
 *
 * load_layout.c
 *	  A load's map from the staged layout onto the target as it is at
 *	  commit.
 *
 * Staged rows keep the layout of the sink's foreign table; the target may
 * have changed since (column_follow.c says how each column follows it).
 * A load maps them once per load, not per row: the names the staged
 * columns have in the target now (COPY's column list, the MERGE's
 * columns), the casts of the columns widened since (built once with
 * PostgreSQL's coercion machinery, as an INSERT's assignment would cast,
 * and evaluated per value), and the columns dropped since (skipped, with a
 * WARNING naming each and the rows it was staged in).  COPY into the
 * target reads the staged bytes as they are while nothing was cast or
 * dropped; otherwise each batch is rewritten into the target's types
 * before COPY reads it (load_layout_transcode).  Decoders of the staged
 * layout (the upsert apply, partition routing) cast the decoded values
 * instead (load_layout_cast_values).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "port/pg_bswap.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

#include "apply/load_layout.h"

/*
 * build_cast prepares the cast of staged column column (its value given
 * as the expression's CASE test value) to the target's type.  Raises
 * ERRCODE_DATATYPE_MISMATCH when PostgreSQL has none.
 */
static void
build_cast(LoadLayout *layout, int column)
{
	FollowedColumn *followed = &layout->columns[column];
	CaseTestExpr *value = makeNode(CaseTestExpr);
	Node *cast;
	Oid receive;
	Oid send;
	bool varlena;

	value->typeId = followed->staged_type;
	value->typeMod = followed->staged_typmod;
	value->collation = get_typcollation(followed->staged_type);
	cast =
		coerce_to_target_type(NULL, (Node *) value, followed->staged_type, followed->target_type,
							  followed->target_typmod, COERCION_IMPLICIT, COERCE_IMPLICIT_CAST, -1);
	if (cast == NULL)
		ereport(
			ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("sink \"%s\" cannot cast its staged column \"%s\" from %s to %s",
					layout->sink->name, followed->target_name,
					format_type_with_typemod(followed->staged_type, followed->staged_typmod),
					format_type_with_typemod(followed->target_type, followed->target_typmod)),
			 errdetail("Nothing of the checkpoint was applied; it stays pending."),
			 errhint("Change the column back to %s, then commit again.",
					 format_type_with_typemod(followed->staged_type, followed->staged_typmod))));
	layout->casts[column] = ExecInitExpr(expression_planner((Expr *) cast), NULL);
	getTypeBinaryInputInfo(followed->staged_type, &receive, &layout->receive_ioparam[column]);
	fmgr_info(receive, &layout->receive[column]);
	getTypeBinaryOutputInfo(followed->target_type, &send, &varlena);
	fmgr_info(send, &layout->send[column]);
}

/*
 * load_layout_build maps the sink's staged layout onto target (the sink's
 * target, open) as it is now, in the current memory context, which must
 * last as long as the load.  Raises what column_follow raises.
 */
LoadLayout *
load_layout_build(const SinkInfo *sink, Relation target)
{
	LoadLayout *layout = palloc0(sizeof(LoadLayout));

	layout->sink = sink;
	layout->count = sink->column_count;
	layout->columns = palloc0(sizeof(FollowedColumn) * Max(1, sink->column_count));
	layout->casts = palloc0(sizeof(ExprState *) * Max(1, sink->column_count));
	layout->receive = palloc0(sizeof(FmgrInfo) * Max(1, sink->column_count));
	layout->receive_ioparam = palloc0(sizeof(Oid) * Max(1, sink->column_count));
	layout->send = palloc0(sizeof(FmgrInfo) * Max(1, sink->column_count));
	layout->same_bytes = true;
	for (int i = 0; i < sink->column_count; i++)
	{
		column_follow(sink, RelationGetRelid(target), i, &layout->columns[i]);
		switch (layout->columns[i].how)
		{
			case FOLLOW_DROPPED:
				layout->dropped++;
				layout->same_bytes = false;
				break;
			case FOLLOW_CAST:
				layout->cast++;
				layout->same_bytes = false;
				break;
			default:
				break;
		}
	}
	if (layout->cast > 0)
	{
		layout->econtext = CreateStandaloneExprContext();
		for (int i = 0; i < sink->column_count; i++)
			if (layout->columns[i].how == FOLLOW_CAST)
				build_cast(layout, i);
	}
	initStringInfo(&layout->out);
	initStringInfo(&layout->field);
	return layout;
}

/*
 * load_layout_target_names returns the names the staged columns that load
 * (neither dropped nor the row kind) have in the target now, in the staged
 * order: COPY's column list (String nodes).
 */
List *
load_layout_target_names(LoadLayout *layout)
{
	List *names = NIL;

	for (int i = 0; i < layout->count; i++)
		if (layout->columns[i].how == FOLLOW_SAME || layout->columns[i].how == FOLLOW_CAST)
			names = lappend(names, makeString(layout->columns[i].target_name));
	return names;
}

/* damaged raises ERRCODE_DATA_CORRUPTED for a staged batch whose rows do not parse. */
static void
damaged(LoadLayout *layout)
{
	ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("a staged batch of sink \"%s\" does not hold rows of its layout",
						   layout->sink->name),
					errdetail("Nothing of the checkpoint was applied.")));
}

/* cast_value casts a staged column's value (not NULL) to the target's type. */
static Datum
cast_value(LoadLayout *layout, int column, Datum value, bool *isnull)
{
	layout->econtext->caseValue_datum = value;
	layout->econtext->caseValue_isNull = false;
	return ExecEvalExpr(layout->casts[column], layout->econtext, isnull);
}

/*
 * load_layout_transcode rewrites a batch of staged rows (COPY binary
 * tuples in the staged layout) in place into the rows COPY FROM the
 * target reads with load_layout_target_names' column list: dropped
 * columns and the row kind left out, widened ones received in the staged
 * type, cast and sent in the target's.  Raises ERRCODE_DATA_CORRUPTED for
 * a batch that does not parse, and what a cast raises.
 */
void
load_layout_transcode(LoadLayout *layout, StringInfo batch)
{
	int position = 0;
	uint16 kept = 0;

	for (int i = 0; i < layout->count; i++)
		if (layout->columns[i].how == FOLLOW_SAME || layout->columns[i].how == FOLLOW_CAST)
			kept++;
	kept = pg_hton16(kept);
	resetStringInfo(&layout->out);
	while (position < batch->len)
	{
		uint16 fields;

		if (batch->len - position < (int) sizeof(fields))
			damaged(layout);
		memcpy(&fields, batch->data + position, sizeof(fields));
		position += sizeof(fields);
		if (pg_ntoh16(fields) != layout->count)
			damaged(layout);
		appendBinaryStringInfo(&layout->out, (char *) &kept, sizeof(kept));
		for (int i = 0; i < layout->count; i++)
		{
			FollowedColumn *followed = &layout->columns[i];
			int32 length;
			const char *data;

			if (batch->len - position < (int) sizeof(length))
				damaged(layout);
			memcpy(&length, batch->data + position, sizeof(length));
			position += sizeof(length);
			length = (int32) pg_ntoh32(length);
			if (length < -1 || (length > 0 && batch->len - position < length))
				damaged(layout);
			data = batch->data + position;
			if (length > 0)
				position += length;
			if (followed->how == FOLLOW_DROPPED || followed->how == FOLLOW_NOT_LOADED)
				continue;
			if (followed->how == FOLLOW_SAME || length < 0)
			{
				uint32 network = pg_hton32((uint32) length);

				appendBinaryStringInfo(&layout->out, (char *) &network, sizeof(network));
				if (length > 0)
					appendBinaryStringInfo(&layout->out, data, length);
				continue;
			}
			{
				MemoryContext old = MemoryContextSwitchTo(layout->econtext->ecxt_per_tuple_memory);
				Datum value;
				bool isnull;
				uint32 network;

				resetStringInfo(&layout->field);
				appendBinaryStringInfo(&layout->field, data, length);
				value = ReceiveFunctionCall(&layout->receive[i], &layout->field,
											layout->receive_ioparam[i], followed->staged_typmod);
				if (layout->field.cursor != layout->field.len)
					damaged(layout);
				value = cast_value(layout, i, value, &isnull);
				if (isnull)
				{
					network = pg_hton32((uint32) -1);
					appendBinaryStringInfo(&layout->out, (char *) &network, sizeof(network));
				}
				else
				{
					bytea *sent = SendFunctionCall(&layout->send[i], value);

					network = pg_hton32((uint32) (VARSIZE(sent) - VARHDRSZ));
					appendBinaryStringInfo(&layout->out, (char *) &network, sizeof(network));
					appendBinaryStringInfo(&layout->out, VARDATA(sent), VARSIZE(sent) - VARHDRSZ);
				}
				MemoryContextSwitchTo(old);
			}
		}
		if (layout->econtext != NULL)
			ResetExprContext(layout->econtext);
	}
	resetStringInfo(batch);
	appendBinaryStringInfo(batch, layout->out.data, layout->out.len);
}

/*
 * load_layout_cast_values casts, in place, the widened columns of a
 * staged row decoded in the foreign table's row type (values and nulls
 * indexed by its attributes), allocating in the current memory context;
 * dropped columns are left as they are, for the caller to skip.  Raises
 * what a cast raises.
 */
void
load_layout_cast_values(LoadLayout *layout, Datum *values, bool *nulls)
{
	for (int i = 0; i < layout->count; i++)
	{
		int at = layout->columns[i].staged_attnum - 1;

		if (layout->columns[i].how == FOLLOW_CAST && !nulls[at])
			values[at] = cast_value(layout, i, values[at], &nulls[at]);
	}
}

/*
 * load_layout_desc returns a copy of staged (the foreign table's row type)
 * in which each staged column that loads has the name, type and collation
 * of its target column now, and each one dropped since is marked dropped:
 * the row type of the rows load_layout_cast_values gives.
 */
TupleDesc
load_layout_desc(LoadLayout *layout, TupleDesc staged)
{
	TupleDesc desc = CreateTupleDescCopy(staged);

	for (int i = 0; i < layout->count; i++)
	{
		FollowedColumn *followed = &layout->columns[i];
		AttrNumber attnum = followed->staged_attnum;

		if (followed->how == FOLLOW_DROPPED)
			TupleDescAttr(desc, attnum - 1)->attisdropped = true;
		if (followed->how != FOLLOW_SAME && followed->how != FOLLOW_CAST)
			continue;
		TupleDescInitEntry(desc, attnum, followed->target_name, followed->target_type,
						   followed->target_typmod, 0);
		TupleDescInitEntryCollation(desc, attnum, followed->target_collation);
	}
	return desc;
}

/*
 * load_layout_warn_dropped warns (WARNING) once for each staged column
 * dropped from the target since, naming it and the rows whose values of
 * it were not loaded.
 */
void
load_layout_warn_dropped(LoadLayout *layout, uint64 rows)
{
	for (int i = 0; i < layout->count; i++)
		if (layout->columns[i].how == FOLLOW_DROPPED && rows > 0)
			ereport(WARNING,
					(errmsg("column \"%s\" of sink \"%s\" was dropped from its target: its values "
							"in %llu staged rows were not loaded",
							layout->columns[i].staged_name, layout->sink->name,
							(unsigned long long) rows),
					 errdetail("The rest of each row was loaded.")));
}
