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
 * The staged layout itself grows: alter_sink() adds columns at the end of
 * the foreign table, and a row keeps the layout it was written in, its
 * field count naming it (the first k columns).  A batch of an older layout
 * is rewritten too: for COPY into the target, each column it lacks takes
 * its target default (what COPY or INSERT give a column they leave out,
 * an identity's next value included), and for the decoders each is NULL
 * or that default (load_layout_transcode's modes); a batch of more fields
 * than the sink has, or fewer than its first layout, is corrupt.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_attribute.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "port/pg_bswap.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

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
 * check_not_altered raises ERRCODE_T_R_SERIALIZATION_FAILURE when the
 * sink's foreign table has another number of columns than the sink as this
 * load read it: alter_sink() committed after the load read the sink (the
 * decoders read rows in the foreign table's row type, which would not be
 * the layout's).  A commit again reads both anew.
 */
static void
check_not_altered(const SinkInfo *sink)
{
	int columns = 0;

	if (!OidIsValid(sink->foreign_table))
		return;
	for (AttrNumber attnum = 1;; attnum++)
	{
		HeapTuple tuple =
			SearchSysCache2(ATTNUM, ObjectIdGetDatum(sink->foreign_table), Int16GetDatum(attnum));

		if (!HeapTupleIsValid(tuple))
			break;
		if (!((Form_pg_attribute) GETSTRUCT(tuple))->attisdropped)
			columns++;
		ReleaseSysCache(tuple);
	}
	if (columns != 0 && columns != sink->column_count)
		ereport(ERROR, (errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
						errmsg("sink \"%s\" was altered while this commit began", sink->name),
						errdetail("Nothing of the checkpoint was applied; it stays pending."),
						errhint("Commit again: it reads the sink's new layout.")));
}

/*
 * load_layout_build maps the sink's staged layout onto target (the sink's
 * target, open) as it is now, in the current memory context, which must
 * last as long as the load.  Raises what column_follow raises, and
 * ERRCODE_T_R_SERIALIZATION_FAILURE when alter_sink() changed the sink
 * after the load read it.
 */
LoadLayout *
load_layout_build(const SinkInfo *sink, Relation target)
{
	LoadLayout *layout = palloc0(sizeof(LoadLayout));

	check_not_altered(sink);

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
	layout->context = CurrentMemoryContext;
	layout->target = target;
	layout->defaults = palloc0(sizeof(ExprState *) * Max(1, sink->column_count));
	layout->defaults_built = palloc0(sizeof(bool) * Max(1, sink->column_count));
	layout->default_send = palloc0(sizeof(FmgrInfo) * Max(1, sink->column_count));
	/* an upsert sink's row kind and key were staged from the first layout on */
	layout->min_fields = Min(1, sink->column_count);
	for (int i = 0; i < sink->column_count; i++)
	{
		ListCell *lc;
		bool needed = sink->row_kind_column != NULL &&
					  strcmp(sink->column_names[i], sink->row_kind_column) == 0;

		foreach (lc, sink->key_columns)
			needed |= SINK_IS_UPSERT(sink) && strcmp(sink->column_names[i], lfirst(lc)) == 0;
		if (needed)
			layout->min_fields = Max(layout->min_fields, i + 1);
	}
	layout->batch_fields = sink->column_count;
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
	if (layout->batch_path != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("staged file \"%s\" of sink \"%s\" does not hold rows of its layout at "
						"offset %lld",
						layout->batch_path, layout->sink->name, (long long) layout->batch_offset),
				 errdetail("Nothing of the checkpoint was applied.")));
	ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
					errmsg("a staged batch of sink \"%s\" does not hold rows of its layout",
						   layout->sink->name),
					errdetail("Nothing of the checkpoint was applied.")));
}

/*
 * load_layout_batch_fields reads the field count of the first row of a
 * staged batch (read from path at offset, named by errors) and notes it as
 * the batch's: a layout of the sink, its first k columns (alter_sink adds
 * columns only at the end), at least the ones every layout had.  Returns
 * it (the sink's column count for an empty batch).  Raises
 * ERRCODE_DATA_CORRUPTED for a count no layout of the sink has: more
 * fields than its columns (a row written after this load read the sink;
 * the next attempt reads it again), or fewer than its first layout's.
 */
int
load_layout_batch_fields(LoadLayout *layout, StringInfo batch, const char *path, int64 offset)
{
	uint16 fields;

	layout->batch_path = path;
	layout->batch_offset = offset;
	layout->batch_fields = layout->count;
	if (batch->len == 0)
		return layout->batch_fields;
	if (batch->len < (int) sizeof(fields))
		damaged(layout);
	memcpy(&fields, batch->data, sizeof(fields));
	fields = pg_ntoh16(fields);
	if (fields > layout->count || fields < layout->min_fields)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("staged file \"%s\" of sink \"%s\" holds rows of %d fields at offset %lld, "
						"but no layout of the sink has that many",
						path, layout->sink->name, (int) fields, (long long) offset),
				 errdetail("The sink stages %d columns now, and every row at least %d. Nothing "
						   "of the checkpoint was applied.",
						   layout->count, layout->min_fields),
				 errhint("If alter_sink ran while this commit began, commit again.")));
	layout->batch_fields = fields;
	return fields;
}

/*
 * load_layout_needs_transcode tells whether the batch whose fields
 * load_layout_batch_fields read last must be rewritten for mode: rows of
 * an older layout always, and for COPY into the target, rows of a target
 * changed since (a column cast or dropped).
 */
bool
load_layout_needs_transcode(LoadLayout *layout, LayoutMode mode)
{
	return layout->batch_fields < layout->count ||
		   (mode == LAYOUT_TO_TARGET && !layout->same_bytes);
}

/*
 * default_value appends to out the binary field (length, then the staged
 * type's send bytes) that staged column column takes in a row of an older
 * layout that does not have it: the default of its target column (what
 * COPY or INSERT puts in a column they leave out: a default, an identity's
 * next value, NULL), cast to the staged type.  A column that does not load
 * (dropped since, the row kind) is NULL.
 */
static void
default_value(LoadLayout *layout, int column, StringInfo out)
{
	FollowedColumn *followed = &layout->columns[column];
	uint32 network;

	if (!layout->defaults_built[column] &&
		(followed->how == FOLLOW_SAME || followed->how == FOLLOW_CAST))
	{
		/* built as the load needs them, from the reader's short-lived context: in the layout's */
		MemoryContext old = MemoryContextSwitchTo(layout->context);
		Node *expression = build_column_default(layout->target, followed->target_attnum);

		if (expression != NULL)
		{
			Oid send;
			bool varlena;

			expression = coerce_to_target_type(NULL, expression, exprType(expression),
											   followed->staged_type, followed->staged_typmod,
											   COERCION_ASSIGNMENT, COERCE_IMPLICIT_CAST, -1);
			if (expression == NULL)
				ereport(ERROR,
						(errcode(ERRCODE_DATATYPE_MISMATCH),
						 errmsg("the default of column \"%s\" of table \"%s\" cannot be cast to "
								"%s, the type sink \"%s\" stages it in",
								followed->target_name, RelationGetRelationName(layout->target),
								format_type_with_typemod(followed->staged_type,
														 followed->staged_typmod),
								layout->sink->name),
						 errdetail("Nothing of the checkpoint was applied; it stays pending.")));
			if (layout->econtext == NULL)
				layout->econtext = CreateStandaloneExprContext();
			layout->defaults[column] = ExecInitExpr(expression_planner((Expr *) expression), NULL);
			getTypeBinaryOutputInfo(followed->staged_type, &send, &varlena);
			fmgr_info(send, &layout->default_send[column]);
		}
		MemoryContextSwitchTo(old);
	}
	layout->defaults_built[column] = true;
	if (layout->defaults[column] != NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(layout->econtext->ecxt_per_tuple_memory);
		bool isnull;
		Datum value = ExecEvalExpr(layout->defaults[column], layout->econtext, &isnull);

		if (!isnull)
		{
			bytea *sent = SendFunctionCall(&layout->default_send[column], value);

			network = pg_hton32((uint32) (VARSIZE(sent) - VARHDRSZ));
			appendBinaryStringInfo(out, (char *) &network, sizeof(network));
			appendBinaryStringInfo(out, VARDATA(sent), VARSIZE(sent) - VARHDRSZ);
			MemoryContextSwitchTo(old);
			return;
		}
		MemoryContextSwitchTo(old);
	}
	network = pg_hton32((uint32) -1);
	appendBinaryStringInfo(out, (char *) &network, sizeof(network));
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
 * tuples, each of load_layout_batch_fields' count of fields) in place for
 * mode.  LAYOUT_TO_TARGET: the rows COPY FROM the target reads with
 * load_layout_target_names' column list: dropped columns and the row kind
 * left out, widened ones received in the staged type, cast and sent in the
 * target's, and the columns a row of an older layout does not have filled
 * by their target defaults.  LAYOUT_PAD_DEFAULTS and LAYOUT_PAD_NULLS: the
 * rows in the sink's staged layout now, the columns a row does not have
 * filled by their target defaults (cast to the staged type) or NULL, the
 * rest as staged.  Raises ERRCODE_DATA_CORRUPTED for a batch that does not
 * parse (or whose rows differ in their field count), and what a cast or a
 * default raises.
 */
void
load_layout_transcode(LoadLayout *layout, StringInfo batch, LayoutMode mode)
{
	int position = 0;
	uint16 kept = 0;
	int fields = layout->batch_fields;
	StringInfoData pad;

	for (int i = 0; i < layout->count; i++)
		if (mode != LAYOUT_TO_TARGET || layout->columns[i].how == FOLLOW_SAME ||
			layout->columns[i].how == FOLLOW_CAST)
			kept++;
	kept = pg_hton16(kept);
	initStringInfo(&pad);
	resetStringInfo(&layout->out);
	while (position < batch->len)
	{
		uint16 row_fields;

		if (batch->len - position < (int) sizeof(row_fields))
			damaged(layout);
		memcpy(&row_fields, batch->data + position, sizeof(row_fields));
		position += sizeof(row_fields);
		if (pg_ntoh16(row_fields) != fields)
			damaged(layout);
		appendBinaryStringInfo(&layout->out, (char *) &kept, sizeof(kept));
		for (int i = 0; i < layout->count; i++)
		{
			FollowedColumn *followed = &layout->columns[i];
			int32 length;
			const char *data;

			if (i < fields)
			{
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
			}
			else
			{
				/* a column added after the row was written: as if it were left out */
				resetStringInfo(&pad);
				if (mode == LAYOUT_PAD_NULLS)
				{
					uint32 null_length = pg_hton32((uint32) -1);

					appendBinaryStringInfo(&pad, (char *) &null_length, sizeof(null_length));
				}
				else
					default_value(layout, i, &pad);
				memcpy(&length, pad.data, sizeof(length));
				length = (int32) pg_ntoh32(length);
				data = pad.data + sizeof(length);
			}
			if (mode == LAYOUT_TO_TARGET &&
				(followed->how == FOLLOW_DROPPED || followed->how == FOLLOW_NOT_LOADED))
				continue;
			if (mode != LAYOUT_TO_TARGET || followed->how == FOLLOW_SAME || length < 0)
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
	pfree(pad.data);
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
