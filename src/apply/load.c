/*-------------------------------------------------------------------------
 *
 * load.c
 *	  Loading a checkpoint's staged files into the target.
 *
 * The staged files hold COPY's binary rows in checksummed batches; the
 * load hands the included batches (every batch whose offset the
 * committable does not exclude) to COPY FROM's own code through a data
 * source callback, so the target's defaults, constraints and triggers run
 * as for any COPY.  It runs as the sink's owner (security.c).  Upsert sinks
 * read the same bytes through upsert.c, which also asks for each row's
 * sequence number and layout.  Each batch read goes through the load's
 * layout (load_layout.c), which rewrites it when its rows are of an older
 * layout than the sink's or the target changed since.  The load also keeps the progress of the commit for the
 * view commit_progress, as pg_stat_progress_copy does for a COPY.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "commands/copy.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_relation.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/queryenvironment.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/rls.h"
#include "utils/timestamp.h"

#include "apply/load.h"
#include "apply/load_layout.h"
#include "apply/rejects.h"
#include "core/pg_compat.h"
#include "core/security.h"
#include "core/shared_state.h"
#include "ipc/liveness.h"
#include "staging/staged_file.h"

/* COPY's data-source callback has no argument: its state is static. */
static struct
{
	List *files;
	int file_index;
	File file;
	off_t file_size;
	off_t offset;
	int next_excluded;
	StringInfoData batch;
	int batch_position;
	bool header_sent;
	/* the batch the bytes given to COPY last came from, for sequence numbers */
	uint64 batch_first_sequence;
	uint32 batch_rows;
	uint32 batch_rows_read;
	bool numbered; /* upsert: rows are counted per batch */
	bool scan;	   /* load_scan_files: rows read, not loaded; no progress counted */
	/* the share loaded: batches whose position (LoadFile.position + offset) lies in it */
	int64 share_begin;
	int64 share_end;
	/* the staged layout mapped onto the target: batches rewritten by mode when needed, or NULL */
	LoadLayout *layout;
	LayoutMode mode;
} load = {.file = -1};

/*
 * The data source of load_files_from (a loader loading ahead), in place of
 * load_read; NULL otherwise.
 */
static copy_data_source_cb source_override = NULL;

/* A loader worker's entry, whose counters its load moves; NULL in the committer. */
static LoaderEntry *progress_loader = NULL;

/*
 * load_progress_to_loader makes the progress of this process's loads go
 * to a loader's entry (its rows and files done, summed by commit_progress)
 * instead of the committer's.
 */
void
load_progress_to_loader(LoaderEntry *loader)
{
	progress_loader = loader;
}

/* in_share tells whether a position in the checkpoint's files is in the share loaded. */
static bool
in_share(int64 position)
{
	return position >= load.share_begin && position < load.share_end;
}

/*
 * Every row of the batch COPY read last was returned.  A row is numbered by
 * the batch it came from: COPY's binary reader asks for more bytes only
 * when it has used all it has, and load_read never gives it bytes of two
 * batches at once, so the last batch read is the returned row's; this
 * check makes sure that stays so.
 */
static void
check_batch_read(void)
{
	if (load.numbered && load.batch_rows_read != load.batch_rows)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("a staged batch of %u rows gave %u rows", load.batch_rows,
							   load.batch_rows_read),
						errdetail("Nothing of this checkpoint is applied.")));
}

/*
 * The sequence number of the row COPY returned last (upsert sinks), and
 * into *fields the number of fields it was staged with (its layout).
 */
static uint64
load_row_sequence(int *fields)
{
	*fields = load.layout != NULL ? load.layout->batch_fields : -1;
	if (load.batch_rows_read >= load.batch_rows)
		ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
						errmsg("a staged batch of %u rows gave more rows", load.batch_rows),
						errdetail("Nothing of this checkpoint is applied.")));
	return load.batch_first_sequence + load.batch_rows_read++;
}

/*
 * load_progress_start shows the checkpoint being committed in the view
 * commit_progress: loading, with its files and rows to go.
 */
void
load_progress_start(int32 sink_id, const char *commit_user, int64 checkpoint_id, int files,
					int64 rows)
{
	CommitProgress *progress = &MyDatabaseEntry->progress;

	SpinLockAcquire(&progress->mutex);
	progress->phase = COMMIT_PHASE_LOADING;
	progress->sink_id = sink_id;
	progress->checkpoint_id = checkpoint_id;
	strlcpy(progress->commit_user, commit_user, sizeof(progress->commit_user));
	progress->gid[0] = '\0';
	progress->files_total = files;
	progress->files_done = 0;
	progress->rows_total = rows;
	progress->rows_done = 0;
	progress->started_at = GetCurrentTimestamp();
	SpinLockRelease(&progress->mutex);
}

/*
 * load_progress_update moves the commit's progress: phase, or -1 to keep
 * it; files and rows are added to those done.
 */
void
load_progress_update(int phase, int files, int64 rows)
{
	CommitProgress *progress;

	if (progress_loader != NULL)
	{
		pg_atomic_fetch_add_u32(&progress_loader->files_done, (uint32) files);
		pg_atomic_fetch_add_u64(&progress_loader->rows_done, (uint64) rows);
		return;
	}
	progress = &MyDatabaseEntry->progress;
	SpinLockAcquire(&progress->mutex);
	if (phase >= 0)
		progress->phase = phase;
	progress->files_done += files;
	progress->rows_done += rows;
	SpinLockRelease(&progress->mutex);
}

/*
 * load_progress_gid shows the gid of the prepared transaction the
 * checkpoint commits in (only to the sink owner's members: a role that
 * learns it before the PREPARE could take it).
 */
void
load_progress_gid(const char *gid)
{
	CommitProgress *progress = &MyDatabaseEntry->progress;

	SpinLockAcquire(&progress->mutex);
	strlcpy(progress->gid, gid, sizeof(progress->gid));
	SpinLockRelease(&progress->mutex);
}

/*
 * load_copy_header puts into buf (emptied first) COPY's binary header: the
 * signature, the flags and the header extension's length, all zero; what
 * a data source hands COPY FROM before the staged rows.  Raises nothing.
 */
void
load_copy_header(StringInfo buf)
{
	static const char header[19] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";

	resetStringInfo(buf);
	appendBinaryStringInfo(buf, header, sizeof(header));
}

/*
 * load_read is COPY's data source: the bytes of the included batches of
 * the share, file after file, after the binary format's header.  A file
 * wholly outside the share is not opened; in a file partly in it, the
 * batches outside are stepped over by their headers.  A file counts as
 * done for the share that holds its last byte, so that the shares of a
 * checkpoint count each file once.
 */
static int
load_read(void *outbuf, int minread, int maxread)
{
	int copied = 0;

	/* each chunk COPY reads (64 kB) is progress of the committer's load */
	liveness_committer_beat();
	/* COPY's binary format: the signature, flags and extension length */
	if (!load.header_sent)
	{
		load_copy_header(&load.batch);
		load.batch_position = 0;
		load.header_sent = true;
	}
	while (copied < minread)
	{
		LoadFile *file;
		StagedBatchHeader header;
		int available = load.batch.len - load.batch_position;

		if (available > 0)
		{
			int take = Min(available, maxread - copied);

			memcpy((char *) outbuf + copied, load.batch.data + load.batch_position, take);
			load.batch_position += take;
			copied += take;
			continue;
		}
		if (load.file_index >= list_length(load.files))
			break;
		file = list_nth(load.files, load.file_index);
		if (load.file < 0)
		{
			if (file->size > 0 && (file->position + file->size <= load.share_begin ||
								   file->position >= load.share_end))
			{
				load.file_index++;
				continue;
			}
			load.file = staged_file_open(file->path, NULL, &load.offset, ERROR);
			if (load.file < 0)
				ereport(ERROR, (errcode_for_file_access(),
								errmsg("could not open staged file \"%s\": %m", file->path)));
			load.file_size = FileSize(load.file);
			load.next_excluded = 0;
			if (file->size > 0 && load.file_size != file->size)
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("staged file \"%s\" changed while its checkpoint was committed",
								file->path),
						 errdetail("It had %lld bytes, now %lld; nothing of this checkpoint is "
								   "applied.",
								   (long long) file->size, (long long) load.file_size)));
		}
		if (load.offset >= load.file_size)
		{
			FileClose(load.file);
			load.file = -1;
			load.file_index++;
			if (in_share(file->position + load.file_size - 1) && !load.scan)
				load_progress_update(-1, 1, 0);
			continue;
		}
		if (!in_share(file->position + load.offset))
		{
			/* another share's batch: step over it */
			if (!staged_file_read_header(load.file, file->path, load.offset, load.file_size,
										 &header))
				ereport(ERROR,
						(errcode(ERRCODE_DATA_CORRUPTED),
						 errmsg("staged file \"%s\" is damaged at offset %lld", file->path,
								(long long) load.offset),
						 errdetail("No batch record starts there; nothing of this checkpoint is "
								   "applied.")));
			if (load.next_excluded < file->excluded_count &&
				file->excluded[load.next_excluded] == load.offset)
				load.next_excluded++;
			load.offset += sizeof(header) + header.payload_length;
			continue;
		}
		if (!staged_file_read_batch(load.file, file->path, load.offset, load.file_size, &header,
									&load.batch))
			ereport(ERROR, (errcode(ERRCODE_DATA_CORRUPTED),
							errmsg("staged file \"%s\" is damaged at offset %lld", file->path,
								   (long long) load.offset),
							errdetail("The batch record there is torn or fails its checksum; "
									  "nothing of this checkpoint is applied.")));
		load.batch_position = 0;
		if (load.next_excluded < file->excluded_count &&
			file->excluded[load.next_excluded] == load.offset)
		{
			load.next_excluded++;
			load.batch.len = 0;
		}
		else
		{
			if (!load.scan)
				load_progress_update(-1, 0, header.row_count);
			check_batch_read();
			load.batch_first_sequence = header.first_sequence;
			load.batch_rows = header.row_count;
			load.batch_rows_read = 0;
			/* rows of an older layout, or of a target changed since: rewritten */
			if (load.layout != NULL)
			{
				load_layout_batch_fields(load.layout, &load.batch, file->path, load.offset);
				if (load_layout_needs_transcode(load.layout, load.mode))
					load_layout_transcode(load.layout, &load.batch, load.mode);
			}
		}
		load.offset += sizeof(header) + header.payload_length;
	}
	return copied;
}

/* start_load sets the data source at the start of files, all of them in the share. */
static void
start_load(List *files, bool numbered)
{
	load.share_begin = 0;
	load.share_end = PG_INT64_MAX;
	load.numbered = numbered;
	load.scan = false;
	load.files = files;
	load.header_sent = false;
	load.file_index = 0;
	load.file = -1;
	initStringInfo(&load.batch);
	load.batch_position = 0;
	load.batch_rows = 0;
	load.batch_rows_read = 0;
	load.layout = NULL;
}

/* end_load closes the file the data source had open, if any. */
static void
end_load(void)
{
	load.layout = NULL;
	if (load.file >= 0)
		FileClose(load.file);
	load.file = -1;
}

/* progress_applying tells commit_progress that upsert.c runs its MERGE. */
static void
progress_applying(void)
{
	load_progress_update(COMMIT_PHASE_APPLYING, 0, 0);
}

/*
 * load_apply_files applies an upsert sink's staged changes (see upsert.c);
 * returns the number of row versions read.
 */
uint64
load_apply_files(SinkInfo *sink, List *files, UpsertCounts *counts)
{
	Relation target = catalog_open_target(sink, false, RowExclusiveLock);

	start_load(files, true);
	/* rows of an older layout decoded with NULL in the columns they lack; upsert.c knows which */
	load.layout = load_layout_build(sink, target);
	load.mode = LAYOUT_PAD_NULLS;
	upsert_apply(sink, load_read, load_row_sequence, progress_applying, counts);
	check_batch_read();
	end_load();
	table_close(target, NoLock);
	return counts->versions;
}

/*
 * load_file_of makes the LoadFile of one recorded committable of sink_id:
 * its name, rows and left-out batch offsets (shared with the committable)
 * and its path in the sink's staged-file folder; size and position stay 0
 * for the caller to set.  Returns a palloc'd LoadFile in the current
 * memory context.
 */
LoadFile *
load_file_of(const CheckpointFile *recorded, int32 sink_id)
{
	LoadFile *file = palloc0(sizeof(LoadFile));

	file->name = recorded->file_name;
	file->row_count = recorded->row_count;
	file->excluded = recorded->excluded;
	file->excluded_count = recorded->excluded_count;
	staged_file_path(file->path, MyDatabaseId, sink_id, file->name);
	return file;
}

/*
 * load_files loads staged files into the target with COPY FROM's
 * machinery, as the sink's owner, and returns the rows loaded.
 */
uint64
load_files(SinkInfo *sink, List *files)
{
	return load_files_share(sink, files, 0, PG_INT64_MAX);
}

/* What the redo of a failed append load reads and runs (rejects.c). */
typedef struct AppendRedo
{
	CopyFromState cstate; /* the staged rows, decoded in the foreign table's layout */
	TupleDesc desc;
	char *insert; /* INSERT INTO target (...) SELECT ... FROM the rows */
} AppendRedo;

/* an ephemeral named relation, as upsert_merge.c's (the name its checks know) */
#define REDO_RELATION "paimon_sink_changes"

/* append_redo_next gives the redo the next staged row. */
static bool
append_redo_next(void *arg, Datum *values, bool *nulls)
{
	AppendRedo *redo = arg;

	return NextCopyFrom(redo->cstate, NULL, values, nulls);
}

/* append_redo_apply inserts the rows of store into the target; returns how many. */
static uint64
append_redo_apply(void *arg, Tuplestorestate *store)
{
	AppendRedo *redo = arg;
	EphemeralNamedRelation enr = palloc0(sizeof(EphemeralNamedRelationData));
	uint64 processed;

	enr->md.name = REDO_RELATION;
	enr->md.reliddesc = InvalidOid;
	enr->md.tupdesc = redo->desc;
	enr->md.enrtype = ENR_NAMED_TUPLESTORE;
	enr->md.enrtuples = tuplestore_tuple_count(store);
	enr->reldata = store;
	SPI_connect();
	if (SPI_register_relation(enr) != SPI_OK_REL_REGISTER)
		elog(ERROR, "could not register relation \"%s\"", REDO_RELATION);
	if (SPI_execute(redo->insert, false, 0) != SPI_OK_INSERT)
		elog(ERROR, "could not run \"%s\"", redo->insert);
	processed = SPI_processed;
	SPI_finish();
	return processed;
}

/*
 * redo_append loads the share again after its COPY failed with error (a
 * row error; the COPY's subtransaction rolled back): the staged rows,
 * decoded by COPY's binary reader in the foreign table's layout, go
 * through rejects_redo as INSERT ... SELECT statements over a tuplestore
 * (OVERRIDING SYSTEM VALUE: identity columns take the staged value, as
 * COPY gives it), so that the rows the target refuses are found one by
 * one.  Errors name a row by the target's primary key, when it has one.
 * Returns the rows loaded.
 */
static uint64
redo_append(SinkInfo *sink, Relation rel, List *files, int64 share_begin, int64 share_end,
			ErrorData *error)
{
	Relation foreign = catalog_open_target(sink, true, AccessShareLock);
	Oid key_index = RelationGetImmediatePrimaryKeyIndex(rel);
	LoadLayout *layout = load_layout_build(sink, rel);
	AppendRedo redo;
	RedoSource source;
	StringInfoData names;
	StringInfoData staged;
	uint64 rows;

	memset(&source, 0, sizeof(source));
	redo.desc = CreateTupleDescCopy(RelationGetDescr(foreign));
	initStringInfo(&names);
	initStringInfo(&staged);
	/* the staged columns by their names now (INSERT casts the widened ones), the dropped left out */
	for (int i = 0; i < layout->count; i++)
	{
		if (layout->columns[i].how != FOLLOW_SAME && layout->columns[i].how != FOLLOW_CAST)
			continue;
		appendStringInfo(&names, "%s%s", names.len > 0 ? ", " : "",
						 quote_identifier(layout->columns[i].target_name));
		appendStringInfo(&staged, "%s%s", staged.len > 0 ? ", " : "",
						 quote_identifier(sink->column_names[i]));
	}
	redo.insert =
		psprintf("INSERT INTO %s (%s) OVERRIDING SYSTEM VALUE SELECT %s FROM " REDO_RELATION,
				 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
											RelationGetRelationName(rel)),
				 names.data, staged.data);
	if (OidIsValid(key_index))
	{
		Relation index = index_open(key_index, AccessShareLock);

		source.key_index = palloc(sizeof(int) * index->rd_index->indnkeyatts);
		for (int k = 0; k < index->rd_index->indnkeyatts; k++)
		{
			AttrNumber attnum = index->rd_index->indkey.values[k];
			int in_staged = attnum > 0 ? column_follow_staged_index(sink, attnum) : -1;

			if (in_staged < 0 || layout->columns[in_staged].how == FOLLOW_DROPPED)
			{
				source.key_count = 0;
				break;
			}
			source.key_index[source.key_count++] = layout->columns[in_staged].staged_attnum - 1;
		}
		index_close(index, AccessShareLock);
	}
	source.desc = redo.desc;
	source.columns = redo.desc->natts;
	source.delete_index = -1;
	source.fields_index = -1;
	source.next = append_redo_next;
	source.apply = append_redo_apply;
	source.arg = &redo;

	start_load(files, false);
	load.share_begin = share_begin;
	load.share_end = share_end;
	/* a row of an older layout: the columns it lacks by their defaults, as the COPY had them */
	load.layout = layout;
	load.mode = LAYOUT_PAD_DEFAULTS;
	redo.cstate =
		BeginCopyFrom(NULL, foreign, NULL, NULL, false, load_read, NIL,
					  list_make1(makeDefElem("format", (Node *) makeString("binary"), -1)));
	rows = rejects_redo(&source, error);
	EndCopyFrom(redo.cstate);
	end_load();
	table_close(foreign, NoLock);
	return rows;
}

/*
 * copy_in_subtransaction loads the share with COPY FROM in a subtransaction
 * of its own: one for the whole load, nothing per row.  When it fails on
 * what a row can cause (rejects_row_error), the subtransaction rolls back
 * and the load is redone to find the refused rows (redo_append); any other
 * error is raised as it is.  layout rewrites each batch into the target's
 * layout now when it must (load_layout.c: a target changed since, rows of
 * an older layout).  Returns the rows loaded.
 */
static uint64
copy_in_subtransaction(SinkInfo *sink, Relation rel, ParseState *pstate, List *columns,
					   List *options, List *files, int64 share_begin, int64 share_end,
					   LoadLayout *layout)
{
	MemoryContext context = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	ErrorData *error = NULL;
	uint64 rows = 0;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(context);
	PG_TRY();
	{
		CopyFromState cstate;

		start_load(files, false);
		load.share_begin = share_begin;
		load.share_end = share_end;
		load.layout = layout;
		load.mode = LAYOUT_TO_TARGET;
		cstate = BeginCopyFrom(pstate, rel, NULL, NULL, false,
							   source_override ? source_override : load_read, columns, options);
		rows = CopyFrom(cstate);
		EndCopyFrom(cstate);
		end_load();
		ReleaseCurrentSubTransaction();
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(context);
		error = CopyErrorData();
		/* a source read once (loading ahead) cannot be redone: the checkpoint's load will */
		if (source_override != NULL || !rejects_row_error(error, NULL))
			PG_RE_THROW();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		end_load();
	}
	PG_END_TRY();
	MemoryContextSwitchTo(context);
	CurrentResourceOwner = owner;
	if (error != NULL)
		rows = redo_append(sink, rel, files, share_begin, share_end, error);
	return rows;
}

/*
 * load_files_share loads the share [share_begin, share_end) of staged
 * files (LoadFile *, each with its position: the files laid end to end)
 * into the target with COPY FROM's machinery, as the sink's owner, and
 * returns the rows loaded: the batches that start in the share.
 * BeginCopyFrom is called directly, so DoCopy's checks are redone here:
 * INSERT privilege on the columns and no row-level security.
 */
uint64
load_files_share(SinkInfo *sink, List *files, int64 share_begin, int64 share_end)
{
	Relation rel;
	ParseState *pstate;
	ParseNamespaceItem *nsitem;
	RTEPermissionInfo *permissions;
	List *columns;
	List *options;
	RoleSwitch saved;
	LoadLayout *layout;
	uint64 rows;

	rel = catalog_open_target(sink, false, RowExclusiveLock);
	/* as the sink's owner: its triggers, defaults and types' code run as for its own statement */
	security_switch_role(catalog_commit_role(sink, RelationGetRelid(rel), ACL_INSERT), &saved);

	/* each staged column into the target's as it is now: renamed, widened, dropped since */
	layout = load_layout_build(sink, rel);
	/*
	 * Loading ahead hands COPY the staged bytes as they are: a target changed
	 * since stops it here, and a batch of another layout than the sink's
	 * (alter_sink() ran since the loader read the sink) fails COPY's own
	 * field count check.  Either way the loader gives up and the
	 * checkpoint's commit loads the rows.
	 */
	if (!layout->same_bytes && source_override != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("paimon_sink loader stops loading ahead: the target of sink \"%s\" changed "
						"since its rows were staged",
						sink->name),
				 errdetail("The checkpoint's commit loads them.")));
	columns = load_layout_target_names(layout);
	pstate = make_parsestate(NULL);
	nsitem = addRangeTableEntryForRelation(pstate, rel, RowExclusiveLock, NULL, false, false);
	permissions = NamespaceItemPermissions(nsitem);
	permissions->requiredPerms = ACL_INSERT;
	for (int i = 0; i < layout->count; i++)
		if (layout->columns[i].how == FOLLOW_SAME || layout->columns[i].how == FOLLOW_CAST)
			permissions->insertedCols =
				bms_add_member(permissions->insertedCols, layout->columns[i].target_attnum -
															  FirstLowInvalidHeapAttributeNumber);
	ExecCheckPermissions(pstate->p_rtable, list_make1(permissions), true);
	if (check_enable_rls(RelationGetRelid(rel), InvalidOid, false) == RLS_ENABLED)
		ereport(
			ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("cannot load sink \"%s\" into table \"%s\" with row-level security", sink->name,
					RelationGetRelationName(rel)),
			 errhint("Disable row-level security on the target, or let its owner own the sink.")));

	options = list_make1(makeDefElem("format", (Node *) makeString("binary"), -1));
	rows = copy_in_subtransaction(sink, rel, pstate, columns, options, files, share_begin,
								  share_end, layout);
	load_layout_warn_dropped(layout, rows);

	security_restore_role(&saved);
	table_close(rel, NoLock);
	return rows;
}

/*
 * load_scan_files reads the staged rows of files (LoadFile *, their
 * included batches) without loading them: each row, decoded by COPY's
 * binary reader in the layout of the sink's foreign table (the sink's
 * columns, in order, with their types), is handed to row(arg, values,
 * nulls) in a memory context reset for the next row.  The commit's
 * progress does not move.  Raises what reading the files raises
 * (ERRCODE_DATA_CORRUPTED for a damaged batch, a file access error).
 */
void
load_scan_files(SinkInfo *sink, List *files, LoadRowCallback row, void *arg)
{
	Relation foreign = catalog_open_target(sink, true, AccessShareLock);
	Relation target = catalog_open_target(sink, false, AccessShareLock);
	TupleDesc desc = RelationGetDescr(foreign);
	Datum *values = palloc(sizeof(Datum) * desc->natts);
	bool *nulls = palloc(sizeof(bool) * desc->natts);
	MemoryContext row_context = AllocSetContextCreate(
		CurrentMemoryContext, "paimon_sink staged row", ALLOCSET_DEFAULT_SIZES);
	CopyFromState cstate;

	start_load(files, false);
	load.scan = true;
	/* a row of an older layout: NULL in the columns it lacks (none is a partition key) */
	load.layout = load_layout_build(sink, target);
	load.mode = LAYOUT_PAD_NULLS;
	cstate = BeginCopyFrom(NULL, foreign, NULL, NULL, false, load_read, NIL,
						   list_make1(makeDefElem("format", (Node *) makeString("binary"), -1)));
	for (;;)
	{
		MemoryContext old;
		bool more;

		MemoryContextReset(row_context);
		old = MemoryContextSwitchTo(row_context);
		more = NextCopyFrom(cstate, NULL, values, nulls);
		if (more)
			row(arg, values, nulls);
		MemoryContextSwitchTo(old);
		if (!more)
			break;
	}
	EndCopyFrom(cstate);
	end_load();
	MemoryContextDelete(row_context);
	table_close(target, NoLock);
	table_close(foreign, NoLock);
}

/*
 * load_files_from loads the rows that read gives (COPY's binary format,
 * header included) into sink's target with COPY FROM's machinery, as
 * load_files does: a loader loading a streamed transaction's files while
 * they grow (loader_ahead.c).  A row the target refuses raises its error
 * as it comes (on_error 'abort').  Returns the rows loaded.
 */
uint64
load_files_from(SinkInfo *sink, copy_data_source_cb read)
{
	uint64 rows;

	source_override = read;
	PG_TRY();
	{
		rows = load_files_share(sink, NIL, 0, PG_INT64_MAX);
	}
	PG_FINALLY();
	{
		source_override = NULL;
	}
	PG_END_TRY();
	return rows;
}

/*
 * load_abort closes what a failed load left open; the transaction's abort
 * releases the rest.
 */
void
load_abort(void)
{
	end_load();
}
