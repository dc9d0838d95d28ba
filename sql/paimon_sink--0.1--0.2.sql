/* paimon_sink--0.1--0.2.sql: from 0.1 to 0.2 */

\echo Use "ALTER EXTENSION paimon_sink UPDATE TO '0.2'" to load this file. \quit

-- 0.2's library checks the extension's version: until this script has run,
-- its committer waits and its functions refuse with 55000.  Nothing staged,
-- prepared or in doubt changes: the staged-file format (4; 0.2's writers
-- add the upsert row kind -R, see the row kinds below) and the catalog
-- tables are 0.1's, but for two columns added to maintenance_result (the
-- scratch table that carries a request's outcome to its caller; see
-- discard_missing_files below).

CREATE FUNCTION paimon_sink.library_version() RETURNS text
	AS 'MODULE_PATHNAME', 'paimon_sink_library_version' LANGUAGE C STRICT STABLE;
COMMENT ON FUNCTION paimon_sink.library_version() IS
$$The version of the loaded paimon_sink library (text); \dx shows the version of the extension in this database. They differ after a package upgrade until ALTER EXTENSION paimon_sink UPDATE runs: meanwhile the committer waits and the other functions raise 55000. Raises no error.$$;

-- Each function below starts with the library's version check.
DO $$
DECLARE
	f pg_catalog.regprocedure;
BEGIN
	FOR f IN SELECT pg_catalog.unnest(ARRAY[
		'paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean)',
		'paimon_sink.drop_sink(text, boolean)',
		'paimon_sink.prepare_commit(text, text, bigint, integer)',
		'paimon_sink.commit(text, text, bigint)',
		'paimon_sink.checkpoint(text)',
		'paimon_sink.last_committed_checkpoint(text, text)',
		'paimon_sink.writer_status()',
		'paimon_sink.commit_progress()',
		'paimon_sink.start_workers()',
		'paimon_sink.recover(text, text, bigint, text)',
		'paimon_sink.end_input(text, text)',
		'paimon_sink.remove_orphan_files(text, interval, boolean)',
		'paimon_sink.expire_snapshots(text, integer, interval)']::pg_catalog.regprocedure[])
	LOOP
		EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', f,
			coalesce(pg_catalog.obj_description(f::pg_catalog.oid, 'pg_proc'::pg_catalog.name) OPERATOR(pg_catalog.||) ' ', '')
			OPERATOR(pg_catalog.||)
			'Also 55000 while the extension''s version is not the library''s (see library_version()).');
	END LOOP;
END
$$;

-- A committer that is not running (say, after a failed DROP DATABASE) is
-- started: it waits until this update commits, then resumes.
SELECT paimon_sink.start_workers();

-- Prepared transactions carrying our gid prefix, and which of them are the
-- committer's own (only those are ever committed by recovery).  The view
-- was a parse of pg_prepared_xacts that failed on a gid of another form.
CREATE FUNCTION paimon_sink.in_doubt_status(
	OUT gid text, OUT prepared timestamptz, OUT owner name, OUT sink_id integer,
	OUT checkpoint_id bigint, OUT commit_user text, OUT ours boolean, OUT foreign_reason text,
	OUT loader_part integer)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'paimon_sink_in_doubt_status' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.in_doubt_status() IS
$$One row per prepared transaction of this database whose gid starts with paimon_sink: (gid text, prepared timestamptz, owner name, sink_id integer, checkpoint_id bigint, commit_user text, ours boolean, foreign_reason text, loader_part integer). ours is true for the committer's own (its gid reads as paimon_sink:<database>:<sink>:<checkpoint>:<commit user>, or for a loader's share of a checkpoint paimon_sink:<database>:<sink>:<checkpoint>:<commit user>/<part>, naming this database, it is owned by the role the committer prepares as, and it names an existing sink's checkpoint that is prepared or committed): recovery finishes those, a checkpoint's own gid (loader_part NULL: a complete checkpoint, prepared by the committer or by a loader, or the decision of a split load) by committing it, a loader's share (loader_part its part, from 0) by committing it when its checkpoint is committed and rolling it back when not. Any other is foreign: never committed or rolled back by paimon_sink, foreign_reason says why. sink_id, checkpoint_id, commit_user and loader_part are NULL unless the gid names this database. As Citus's transaction recovery filters by prefix and database. Raises no error of its own.$$;

CREATE OR REPLACE VIEW paimon_sink.in_doubt AS
	SELECT p.gid, p.prepared, p.owner, s.sink_name, p.checkpoint_id, p.commit_user, p.ours,
		p.foreign_reason, p.loader_part
	FROM paimon_sink.in_doubt_status() p
	LEFT JOIN paimon_sink.sink_definition s ON s.sink_id OPERATOR(pg_catalog.=) p.sink_id;
COMMENT ON VIEW paimon_sink.in_doubt IS
	'Prepared transactions of this database whose gid starts with paimon_sink: those of the committer (ours: recovery commits a checkpoint''s own, and a loader''s share, loader_part, when its checkpoint is committed, else rolls it back) and foreign ones named like them (left alone; foreign_reason says why).';

-- The functions below check the caller's right themselves: the caller must
-- be the sink's owner or a member of it (42501, with the GRANT to run).
-- Their EXECUTE goes to PUBLIC, so that the right that counts is the one
-- on the sink.  create_sink, start_workers and the fault functions stay
-- revoked: creating sinks is the database administrator's to grant.
GRANT EXECUTE ON FUNCTION paimon_sink.drop_sink(text, boolean),
	paimon_sink.prepare_commit(text, text, bigint, integer),
	paimon_sink.commit(text, text, bigint),
	paimon_sink.checkpoint(text),
	paimon_sink.recover(text, text, bigint, text),
	paimon_sink.end_input(text, text),
	paimon_sink.remove_orphan_files(text, interval, boolean),
	paimon_sink.expire_snapshots(text, integer, interval) TO PUBLIC;

DO $$
DECLARE
	f pg_catalog.regprocedure;
BEGIN
	FOR f IN SELECT pg_catalog.unnest(ARRAY[
		'paimon_sink.drop_sink(text, boolean)',
		'paimon_sink.prepare_commit(text, text, bigint, integer)',
		'paimon_sink.commit(text, text, bigint)',
		'paimon_sink.checkpoint(text)',
		'paimon_sink.recover(text, text, bigint, text)',
		'paimon_sink.end_input(text, text)',
		'paimon_sink.remove_orphan_files(text, interval, boolean)',
		'paimon_sink.expire_snapshots(text, integer, interval)']::pg_catalog.regprocedure[])
	LOOP
		EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', f,
			pg_catalog.obj_description(f::pg_catalog.oid, 'pg_proc'::pg_catalog.name) OPERATOR(pg_catalog.||)
			' Privileges: EXECUTE is granted to PUBLIC; the function itself refuses (42501, its hint giving the GRANT to run) a caller that is not the sink''s owner or a member of that role.');
	END LOOP;
END
$$;

COMMENT ON FUNCTION paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean) IS
$$Registers a sink writing into target (a table the caller may INSERT into), creates its foreign table (named sink_name, in the target's schema, owned by the caller) and its own commit user (a UUID); returns (sink_name text, foreign_table regclass, commit_user text). mode 'append' loads rows as they are; mode 'upsert' (Paimon's primary-key table with the deduplicate merge engine) needs a primary key on target (recorded: a commit refuses another) and the SELECT, UPDATE and DELETE rights too: its foreign table has one more text column, row_kind_column, taking +I or +U (upsert; also NULL), -U (ignored) or -D (delete: only the key columns count), and each checkpoint applies per key only the latest version; partial_update (upsert only) makes a NULL column keep the target's value (Paimon's partial-update merge engine). buckets (1-1024) and bucket_key (column names; for upsert, primary key columns, by default all of them) route rows to writers by a hash of their values; checkpoint_interval (positive; NULL takes paimon_sink.checkpoint_interval, whose 0 means none) makes the committer checkpoint the sink's own commit user that often, skipping empty intervals. Privileges: EXECUTE is revoked from PUBLIC (a superuser grants it: GRANT EXECUTE ON FUNCTION paimon_sink.create_sink TO role); the caller is the sink's owner, whose rights its commits use. Errors: 22023 bad name, mode, buckets, row_kind_column, or a bucket key outside the primary key; 42P16 upsert target without a primary key; 0A000 upsert target with a deferrable primary key or rules, or a bucket key type without a hash function when buckets > 1; 42809 target not a table; 42501 no INSERT (upsert: also SELECT, UPDATE, DELETE) right on target, no CREATE right on its schema or no USAGE on the server paimon_sink, each with the GRANT to run in its hint; 42703 unknown bucket key column; 42701 row_kind_column names a target column; 42710 sink exists; 55000 max_prepared_transactions = 0 or library not preloaded; 53400 the worker budget (max_worker_processes) has no room for this database's committer and writers, the detail giving its arithmetic (a WARNING with 53400 when the room comes once databases that dropped the extension let their workers go). Also 55000 while the extension's version is not the library's (see library_version()).$$;

-- commit_progress shows the gid the commit in progress prepares under
-- (the committer draws a random suffix for each, so no role can take it
-- beforehand and block the sink).
DROP VIEW paimon_sink.commit_progress;
DROP FUNCTION paimon_sink.commit_progress();
CREATE FUNCTION paimon_sink.commit_progress(
	OUT pid integer, OUT sink_id integer, OUT commit_user text, OUT checkpoint_id bigint,
	OUT phase text, OUT files_done integer, OUT files_total integer, OUT rows_done bigint,
	OUT rows_total bigint, OUT started_at timestamptz, OUT gid text, OUT loaders integer)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'paimon_sink_commit_progress' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.commit_progress() IS
$$The checkpoints this database's committer is committing now, if any (as pg_stat_progress_copy reports a COPY): the one it loads itself and the one its loader workers load (a large checkpoint of an append sink, paimon_sink.parallel_load_rows), a row each: committer pid, sink id, commit user, checkpoint id, phase (loading: reading staged files, for an append sink into the target; applying: an upsert sink's MERGE; preparing: PREPARE TRANSACTION and COMMIT PREPARED, for a loader's checkpoint its COMMIT PREPARED, or with paimon_sink.nonatomic_parallel_load the decision's and then the shares'), staged files and rows read so far (summed over the loaders) and in all, start time, the gid it prepares under (NULL until the rows are loaded, and for a caller that is not a member of the sink's owner: a role that knew it before the PREPARE could take it), and loaders (integer: 0 when the committer loads it, else the number of loader workers: 1 by default, all of them with paimon_sink.nonatomic_parallel_load). Error: 55000 library not preloaded. Also 55000 while the extension's version is not the library's (see library_version()).$$;
CREATE VIEW paimon_sink.commit_progress AS
	SELECT p.pid, s.sink_name, p.commit_user, p.checkpoint_id, p.phase, p.files_done,
		p.files_total, p.rows_done, p.rows_total, p.started_at, p.gid, p.loaders
	FROM paimon_sink.commit_progress() p
	LEFT JOIN paimon_sink.sink_definition s ON s.sink_id OPERATOR(pg_catalog.=) p.sink_id;
COMMENT ON VIEW paimon_sink.commit_progress IS 'The checkpoints being committed now (the committer''s own load, and its loaders''): phase, staged files and rows read so far and in all, its gid, and the loaders loading it (0: the committer).';
GRANT SELECT ON paimon_sink.commit_progress TO PUBLIC;

-- A failed commit's message may carry the target's data (a trigger's
-- RAISE, a value that does not fit): only members of the sink's owner (its
-- foreign table's owner) read it.  The counts by SQLSTATE stay everyone's.
REVOKE SELECT ON paimon_sink.commit_failures FROM PUBLIC;
CREATE OR REPLACE VIEW paimon_sink.commit_stats AS
	SELECT s.sink_name,
		coalesce(c.commits, 0) AS commits,
		coalesce(c.skipped, 0) AS skipped_as_committed,
		coalesce(c.failures, 0) AS failures,
		(SELECT pg_catalog.jsonb_object_agg(f.sqlstate, f.failures) FROM paimon_sink.commit_failures f
		  WHERE f.sink_id OPERATOR(pg_catalog.=) s.sink_id) AS failures_by_sqlstate,
		CASE WHEN pg_catalog.pg_has_role(ft.relowner, 'USAGE') THEN
			(SELECT f.last_message FROM paimon_sink.commit_failures f
			  WHERE f.sink_id OPERATOR(pg_catalog.=) s.sink_id
			  ORDER BY f.last_failed_at DESC LIMIT 1) END AS last_failure,
		coalesce(c.retries, 0) AS retries,
		c.last_commit_ms,
		(SELECT pg_catalog.percentile_cont(0.99) WITHIN GROUP (ORDER BY l.load_ms)
		   FROM paimon_sink.snapshot_log l WHERE l.sink_id OPERATOR(pg_catalog.=) s.sink_id) AS p99_load_ms,
		coalesce(c.rows_committed, 0) AS rows_committed,
		coalesce(c.bytes_committed, 0) AS bytes_committed,
		c.last_committed_at,
		c.since
	FROM paimon_sink.sink_definition s
	LEFT JOIN paimon_sink.commit_statistics c ON c.sink_id OPERATOR(pg_catalog.=) s.sink_id
	-- the sink's own foreign table: the relation of that oid, of that sink (not a later one reusing a lost table's oid)
	LEFT JOIN pg_catalog.pg_foreign_table fd ON fd.ftrelid OPERATOR(pg_catalog.=) s.foreign_table::pg_catalog.oid
		AND ('sink_id=' OPERATOR(pg_catalog.||) s.sink_id) OPERATOR(pg_catalog.=) ANY (fd.ftoptions)
	LEFT JOIN pg_catalog.pg_class ft ON ft.oid OPERATOR(pg_catalog.=) fd.ftrelid;
COMMENT ON VIEW paimon_sink.commit_stats IS
	'Per sink, since the server started: commits (snapshots made), commit() calls that found their checkpoint already committed, failures by SQLSTATE and the last one (its message only for members of the sink''s owner), MERGE reruns, the last commit''s milliseconds and the 99th percentile of the retained snapshots'' load times, rows and staged bytes committed. The committer writes the counters at most once a second, not in each commit: they lag the commits by up to a second (a committer''s exit loses the last second''s counts).';

-- A pending checkpoint whose staged files are gone (deleted by hand, never
-- on a promoted standby) failed every later commit of its commit user with
-- 58P01, and for the sink's own commit user (which recover() refuses) there
-- was no way out but drop_sink.  discard_missing_files forgets the files
-- that are gone, their rows lost, so that the rest commits; the
-- requester reads what it forgot from maintenance_result.
ALTER TABLE paimon_sink.maintenance_result
	ADD COLUMN checkpoint_id bigint,
	ADD COLUMN row_count bigint;

CREATE FUNCTION paimon_sink.discard_missing_files(sink_name text, commit_user text DEFAULT NULL)
	RETURNS TABLE (checkpoint_id bigint, file_name text, row_count bigint, byte_count bigint)
	AS 'MODULE_PATHNAME', 'paimon_sink_discard_missing_files' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.discard_missing_files(text, text) IS
$$The way forward from 58P01 (staged files of a pending checkpoint are missing) without restoring the files: in the commit user's prepared, uncommitted checkpoints (commit_user NULL: the sink's own, which SQL sessions write with), forgets the committables whose staged files do not exist, so that the next commit() or checkpoint() commits what exists; a checkpoint left with no file commits with no snapshot (the commit user's marks move over it). Their rows are lost: returns them (checkpoint_id bigint, file_name text, row_count bigint, byte_count bigint), warns with the totals and logs them; no row when no file is missing, and then nothing changes. A file that exists, or that no pending checkpoint records, is never touched. Runs in the committer, between commits; not undone by a later rollback; refused in a transaction block. Errors: 42704 unknown sink; 42501 not the sink owner; 22023 invalid commit user; 25001 inside a transaction block; 55000 max_prepared_transactions = 0, writers not running; 58030 (or another file-access SQLSTATE) a staged file that cannot be looked at (nothing discarded). Privileges: EXECUTE is granted to PUBLIC; the function itself refuses (42501, its hint giving the GRANT to run) a caller that is not the sink's owner or a member of that role. Also 55000 while the extension's version is not the library's (see library_version()).$$;

GRANT EXECUTE ON FUNCTION paimon_sink.discard_missing_files(text, text) TO PUBLIC;

-- commit() names the way forward from a missing staged file
DO $$
DECLARE
	f pg_catalog.regprocedure := 'paimon_sink.commit(text, text, bigint)';
BEGIN
	EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', f,
		pg_catalog.replace(pg_catalog.obj_description(f::pg_catalog.oid, 'pg_proc'::pg_catalog.name),
			'58P01 a staged file is missing;',
			'58P01 a staged file is missing (nothing applied; restore it, or go on without its rows with discard_missing_files());'));
END
$$;

-- Periodic checkpoints run earliest deadline first, and each sink's
-- schedule shows how far behind an overloaded committer left it.
CREATE FUNCTION paimon_sink.checkpoint_schedule_status(
	OUT sink_id integer, OUT interval_ms bigint, OUT next_due timestamptz, OUT checkpoints bigint,
	OUT overdue bigint, OUT last_late_ms bigint, OUT max_late_ms bigint, OUT last_run timestamptz)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'paimon_sink_checkpoint_schedule_status'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.checkpoint_schedule_status() IS
$$One row per sink this database's committer checkpoints periodically (a checkpoint_interval, its own or paimon_sink.checkpoint_interval), as the committer's schedule last saw it, counters since the committer started: (sink_id integer, interval_ms bigint, next_due timestamptz: the deadline of its next periodic checkpoint, checkpoints bigint: periodic checkpoints run, empty ones too, overdue bigint: slots skipped because the sink was more than an interval behind, last_late_ms bigint and max_late_ms bigint: how long after its deadline the last and the latest periodic checkpoint started, last_run timestamptz). The due sink with the earliest deadline runs first and a deadline advances by the interval, so an overloaded committer slows every sink alike. Only the first 1024 scheduled sinks of a database are shown. Error: 55000 library not preloaded. Also 55000 while the extension's version is not the library's (see library_version()).$$;
CREATE VIEW paimon_sink.checkpoint_schedule AS
	SELECT s.sink_name, p.interval_ms, p.next_due, p.checkpoints, p.overdue, p.last_late_ms,
		p.max_late_ms, p.last_run
	FROM paimon_sink.checkpoint_schedule_status() p
	JOIN paimon_sink.sink_definition s ON s.sink_id OPERATOR(pg_catalog.=) p.sink_id;
COMMENT ON VIEW paimon_sink.checkpoint_schedule IS
	'Per sink checkpointed periodically, since the committer started: the next deadline, periodic checkpoints run, slots skipped as overdue (the sink more than an interval behind), and how late the last and the latest started (ms).';
GRANT SELECT ON paimon_sink.checkpoint_schedule TO PUBLIC;

-- A loader may load a streamed transaction's rows while it runs (paimon_sink.load_ahead):
-- what it loaded before the checkpoint was given to it, counted since the server started.
CREATE FUNCTION paimon_sink.load_ahead_status(
	OUT loaders_started bigint, OUT checkpoints_taken bigint, OUT loaders_stopped bigint,
	OUT rows_loaded_ahead bigint, OUT bytes_loaded_ahead bigint,
	OUT seconds_loading_ahead double precision)
	RETURNS record AS 'MODULE_PATHNAME', 'paimon_sink_load_ahead_status'
	LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.load_ahead_status() IS
$$One row for this database, counted since the server started (all zero before its committer first ran): (loaders_started bigint: loaders started to load a streamed transaction's rows while it ran, checkpoints_taken bigint: checkpoints given to such a loader, which finished and prepared them, loaders_stopped bigint: such loaders that rolled back instead (the transaction aborted, a checkpoint into the target did not take it, paimon_sink.load_ahead_max_wait passed, an error), rows_loaded_ahead bigint, bytes_loaded_ahead bigint (staged payload bytes) and seconds_loading_ahead double precision: what the loaders of the taken checkpoints loaded before the checkpoint was given to them, and the time they spent loading it). Error: 55000 library not preloaded. Also 55000 while the extension's version is not the library's (see library_version()).$$;

-- Snapshot expiry finds an expired snapshot's committables by this index,
-- not by a scan of every committable kept: its cost is bounded by what it
-- expires, not by what is retained.
CREATE INDEX committable_committed ON paimon_sink.committable (sink_id, snapshot_id)
	WHERE snapshot_id IS NOT NULL;

-- The commit user's regular-expression CHECK was evaluated by every UPDATE
-- of the commit user's marks (several per checkpoint), though the library
-- checks every commit user before it reaches the catalog.  A trigger that
-- fires only when a commit user is written (a row inserted, or the column
-- updated) keeps the same refusal (23514) of a bad value written by hand.
ALTER TABLE paimon_sink.commit_user_state DROP CONSTRAINT commit_user_state_commit_user_check;
CREATE FUNCTION paimon_sink.refuse_invalid_commit_user() RETURNS trigger
	LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
	IF NEW.commit_user IS NULL
		OR NEW.commit_user OPERATOR(pg_catalog.!~) '^[A-Za-z0-9._:-]{1,64}$' THEN
		RAISE EXCEPTION USING ERRCODE = 'check_violation',
			MESSAGE = pg_catalog.format('invalid commit user "%s"', NEW.commit_user),
			DETAIL = 'A commit user consists of 1 to 64 of the characters A-Z, a-z, 0-9, ''.'', ''_'', '':'' and ''-''.',
			SCHEMA = TG_TABLE_SCHEMA, TABLE = TG_TABLE_NAME, COLUMN = 'commit_user';
	END IF;
	RETURN NEW;
END
$$;
COMMENT ON FUNCTION paimon_sink.refuse_invalid_commit_user() IS
$$Trigger of commit_user_state: refuses (23514) a row whose commit_user is not 1 to 64 of the characters [A-Za-z0-9._:-]. Fires only when a commit user is written, never on the updates of the marks.$$;
REVOKE ALL ON FUNCTION paimon_sink.refuse_invalid_commit_user() FROM PUBLIC;
CREATE TRIGGER commit_user_valid BEFORE INSERT OR UPDATE OF commit_user
	ON paimon_sink.commit_user_state
	FOR EACH ROW EXECUTE FUNCTION paimon_sink.refuse_invalid_commit_user();
-- A CHECK holds in every session; an ordinary trigger does not fire with
-- session_replication_role = replica (a subscription's apply, a restore).
ALTER TABLE paimon_sink.commit_user_state ENABLE ALWAYS TRIGGER commit_user_valid;

-- The committer expires snapshots off the commit path, and serves the
-- checkpoint() calls queued for one sink with one checkpoint.
DO $$
DECLARE
	f pg_catalog.regprocedure := 'paimon_sink.expire_snapshots(text, integer, interval)';
	c pg_catalog.regprocedure := 'paimon_sink.checkpoint(text)';
BEGIN
	EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', f,
		pg_catalog.replace(pg_catalog.obj_description(f::pg_catalog.oid, 'pg_proc'::pg_catalog.name),
			'The committer does the same after every commit with',
			'The committer does the same, off the commit path (at most a second or 64 commits after a commit), with'));
	EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', c,
		pg_catalog.replace(pg_catalog.obj_description(c::pg_catalog.oid, 'pg_proc'::pg_catalog.name),
			'in the shape of commit().',
			'in the shape of commit(). Calls for one sink that wait for the committer at once are served by one checkpoint, each getting its answer.'));
END
$$;

-- A checkpoint always answers: empty ones with a row of 0 rows; an empty
-- prepare while other streams hold staged rows warns; a prepare of a
-- committed id drops what was staged for it; end_input() retried answers.
DO $$
DECLARE
	p pg_catalog.regprocedure := 'paimon_sink.prepare_commit(text, text, bigint, integer)';
	c pg_catalog.regprocedure := 'paimon_sink.commit(text, text, bigint)';
	e pg_catalog.regprocedure := 'paimon_sink.end_input(text, text)';
	d text;
BEGIN
	d := pg_catalog.obj_description(p::pg_catalog.oid, 'pg_proc'::pg_catalog.name);
	d := pg_catalog.replace(d, 'byte_count bigint). A checkpoint holds',
		'byte_count bigint); an empty checkpoint answers with one row of 0 rows (file_name and bucket NULL, writer_id the one asked for) and, when other streams of the sink hold staged rows, a WARNING (01000) naming each (commit user, writer id, rows). A checkpoint holds');
	d := pg_catalog.replace(d, 'checkpoint id not above the last committed one,',
		'checkpoint id not above the last committed one (the rows staged for it are dropped as a replay, counted in the detail and a LOG line; the hint names recover() and a new commit user),');
	EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', p, d);
	EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', c,
		pg_catalog.replace(pg_catalog.obj_description(c::pg_catalog.oid, 'pg_proc'::pg_catalog.name),
			'newly_committed boolean). Calling it again is harmless.',
			'newly_committed boolean); a checkpoint_id committed without a snapshot (empty) answers too, with snapshot_id and committed_at NULL and row_count and file_count 0 (NULL when snapshot expiry may have forgotten its snapshot); an id above every prepared one has no row of its own. Calling it again is harmless.'));
	EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', e,
		pg_catalog.replace(pg_catalog.obj_description(e::pg_catalog.oid, 'pg_proc'::pg_catalog.name),
			'returns the snapshots made, as commit().',
			'returns the snapshots made and the row of the end-of-input checkpoint, as commit() (0 rows when the input ended empty); a retry after a lost reply answers as a retried commit() does.'));
END
$$;

-- Poison checkpoints: a sink chooses what a commit does with a row its
-- target refuses (create_sink's on_error): 'stop' (the commit fails, its
-- error naming the row's key, the constraint or index and the checkpoint)
-- or 'reject' (the row goes into rejected_row, committed in the same
-- prepared transaction as the checkpoint's other rows: Kafka Connect's
-- errors.tolerance = all with a dead-letter queue).  reject_failing_rows()
-- commits a stopped checkpoint once that way.
ALTER TABLE paimon_sink.sink_definition
	ADD COLUMN on_error text NOT NULL DEFAULT 'stop' CHECK (on_error IN ('stop', 'reject'));
COMMENT ON COLUMN paimon_sink.sink_definition.on_error IS
	'What a commit does with a row the target refuses: stop (the commit fails, naming the row''s key, the constraint or index and the checkpoint) or reject (the row goes into rejected_row, in the checkpoint''s own prepared transaction).';

CREATE TABLE paimon_sink.rejected_row (
	reject_id bigserial PRIMARY KEY,
	sink_id integer NOT NULL REFERENCES paimon_sink.sink_definition ON DELETE CASCADE,
	commit_user text NOT NULL,
	checkpoint_id bigint NOT NULL,
	-- on_error: the sink's on_error = 'reject'; reject_failing_rows: the operator's call
	reason text NOT NULL CHECK (reason IN ('on_error', 'reject_failing_rows')),
	-- upsert: '+U' (an upsert) or '-D' (a delete); append: NULL
	row_kind text,
	sqlstate text NOT NULL,
	message text NOT NULL,
	detail text,
	constraint_name text,
	-- the row as the target would have got it: column name -> text value (NULL: JSON null)
	row_data jsonb NOT NULL,
	rejected_at timestamptz NOT NULL DEFAULT pg_catalog.now()
);
CREATE INDEX ON paimon_sink.rejected_row (sink_id, commit_user, checkpoint_id);
COMMENT ON TABLE paimon_sink.rejected_row IS
	'Rows a commit moved aside because the target refused them (the dead-letter queue), each committed in the prepared transaction of its checkpoint: SQLSTATE, message, detail, constraint or index, and the row (column name -> text). Holds the rows of every sink: readable through the view rejects, by the sink owner''s members.';
SELECT pg_catalog.pg_extension_config_dump('paimon_sink.rejected_row', '');
SELECT pg_catalog.pg_extension_config_dump('paimon_sink.rejected_row_reject_id_seq', '');
REVOKE ALL ON paimon_sink.rejected_row FROM PUBLIC;

CREATE VIEW paimon_sink.rejects WITH (security_barrier) AS
	SELECT s.sink_name, r.reject_id, r.commit_user, r.checkpoint_id, r.reason, r.row_kind,
		r.sqlstate, r.message, r.detail, r.constraint_name, r.row_data, r.rejected_at
	FROM paimon_sink.rejected_row r JOIN paimon_sink.sink_definition s USING (sink_id)
	JOIN pg_catalog.pg_foreign_table fd ON fd.ftrelid OPERATOR(pg_catalog.=) s.foreign_table::pg_catalog.oid
		AND ('sink_id=' OPERATOR(pg_catalog.||) s.sink_id) OPERATOR(pg_catalog.=) ANY (fd.ftoptions)
	JOIN pg_catalog.pg_class ft ON ft.oid OPERATOR(pg_catalog.=) fd.ftrelid
	WHERE pg_catalog.pg_has_role(ft.relowner, 'MEMBER');
COMMENT ON VIEW paimon_sink.rejects IS
	'The rows commits moved aside (rejected_row), of the sinks whose owner the current role is a member of: sink_name, reject_id, commit_user, checkpoint_id, reason (on_error or reject_failing_rows), row_kind (upsert: +U or -D), sqlstate, message, detail, constraint_name, row_data jsonb, rejected_at.';
GRANT SELECT ON paimon_sink.rejects TO PUBLIC;

CREATE OR REPLACE VIEW paimon_sink.sinks AS
	SELECT s.sink_id, s.sink_name, s.target_table, s.foreign_table, s.owner_role, s.mode,
		s.buckets, s.bucket_key, s.row_kind_column, s.partial_update, s.checkpoint_interval,
		s.default_commit_user,
		u.last_prepared_checkpoint, u.last_committed_checkpoint, u.last_snapshot_id,
		u.last_committed_at, s.created_at, s.on_error
	FROM paimon_sink.sink_definition s
	LEFT JOIN paimon_sink.commit_user_state u
		ON u.sink_id = s.sink_id AND u.commit_user = s.default_commit_user;

DROP FUNCTION paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean);
CREATE FUNCTION paimon_sink.create_sink(
	sink_name text,
	target regclass,
	mode text DEFAULT 'append',
	buckets integer DEFAULT 1,
	bucket_key text[] DEFAULT NULL,
	checkpoint_interval interval DEFAULT NULL,
	row_kind_column text DEFAULT '_row_kind',
	partial_update boolean DEFAULT false,
	on_error text DEFAULT 'stop',
	OUT sink_name text, OUT foreign_table regclass, OUT commit_user text)
	AS 'MODULE_PATHNAME', 'paimon_sink_create_sink' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean, text) FROM PUBLIC;
COMMENT ON FUNCTION paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean, text) IS
$$Registers a sink writing into target (a table the caller may INSERT into), creates its foreign table (named sink_name, in the target's schema, owned by the caller) and its own commit user (a UUID); returns (sink_name text, foreign_table regclass, commit_user text). mode 'append' loads rows as they are; mode 'upsert' (Paimon's primary-key table with the deduplicate merge engine) needs a primary key on target (recorded: a commit refuses another) and the SELECT, UPDATE and DELETE rights too: its foreign table has one more text column, row_kind_column, taking +I or +U (upsert; also NULL), -U (ignored) or -D (delete: only the key columns count), and each checkpoint applies per key only the latest version; partial_update (upsert only) makes a NULL column keep the target's value (Paimon's partial-update merge engine). buckets (1-1024) and bucket_key (column names; for upsert, primary key columns, by default all of them) route rows to writers by a hash of their values; checkpoint_interval (positive; NULL takes paimon_sink.checkpoint_interval, whose 0 means none) makes the committer checkpoint the sink's own commit user that often, skipping empty intervals. on_error says what a commit does with a row the target refuses (a constraint, an index, a trigger): 'stop' (the default: the commit fails, nothing applied, its error naming the row's key, the constraint or index and the checkpoint; reject_failing_rows() goes on) or 'reject' (the row goes into paimon_sink.rejected_row, view rejects, committed in the same prepared transaction as the checkpoint's other rows; Kafka Connect's dead-letter queue). Privileges: EXECUTE is revoked from PUBLIC (a superuser grants it: GRANT EXECUTE ON FUNCTION paimon_sink.create_sink TO role); the caller is the sink's owner, whose rights its commits use. Errors: 22023 bad name, mode, buckets, row_kind_column, on_error, or a bucket key outside the primary key; 42P16 upsert target without a primary key; 0A000 upsert target with a deferrable primary key or rules, or a bucket key type without a hash function when buckets > 1; 42809 target not a table; 42501 no INSERT (upsert: also SELECT, UPDATE, DELETE) right on target, no CREATE right on its schema or no USAGE on the server paimon_sink, each with the GRANT to run in its hint; 42703 unknown bucket key column; 42701 row_kind_column names a target column; 42710 sink exists; 55000 max_prepared_transactions = 0 or library not preloaded; 53400 the worker budget (max_worker_processes) has no room for this database's committer and writers, the detail giving its arithmetic (a WARNING with 53400 when the room comes once databases that dropped the extension let their workers go). Also 55000 while the extension's version is not the library's (see library_version()).$$;

CREATE FUNCTION paimon_sink.reject_failing_rows(
	sink_name text, checkpoint_id bigint, commit_user text DEFAULT NULL)
	RETURNS TABLE (snapshot_id bigint, commit_user text, checkpoint_id bigint, row_count bigint,
		file_count integer, committed_at timestamptz, newly_committed boolean)
	AS 'MODULE_PATHNAME', 'paimon_sink_reject_failing_rows' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.reject_failing_rows(text, bigint, text) IS
$$The operator's way past a poison checkpoint (a sink with on_error 'stop' whose commit fails on a row the target refuses): commits the commit user's prepared checkpoints up to checkpoint_id (commit_user NULL: the sink's own) as commit() does, but moves every row the target refuses (integrity violations 23xxx, data exceptions 22xxx, 54000 such as an index row too large, a trigger's RAISE P0001, 44000) aside into paimon_sink.rejected_row (reason 'reject_failing_rows'), in the same prepared transaction as the checkpoint's other rows; so it happens exactly once: a retry, or a crash after the PREPARE, finds the checkpoint committed. Returns what commit() returns. The load runs in the committer (not the loaders); other errors (a missing file, privileges) still fail it with nothing applied. Refused in a transaction block; not undone by a later rollback. Errors: 42704 unknown sink; 42501 not the sink's owner or a member of it (a superuser is); 22023 invalid commit user; 25001 inside a transaction block; 55000 max_prepared_transactions = 0, writers not running; others as commit(). Privileges: EXECUTE is granted to PUBLIC; the function itself refuses a caller that is not the sink's owner or a member of that role. Also 55000 while the extension's version is not the library's (see library_version()).$$;
GRANT EXECUTE ON FUNCTION paimon_sink.reject_failing_rows(text, bigint, text) TO PUBLIC;

-- A database the worker budget (max_worker_processes) cannot serve is told
-- at once: CREATE EXTENSION fails in start_workers(), and ALTER EXTENSION
-- UPDATE warns.
COMMENT ON FUNCTION paimon_sink.start_workers() IS
$$Asks the launcher to run this database's committer and writers (CREATE EXTENSION and ALTER EXTENSION UPDATE call it). Errors: 55000 library not preloaded; 53400 the worker budget has no room for this database's workers: (max_worker_processes minus the launchers) / (1 + paimon_sink.writers_per_database) databases are served already, the detail giving the arithmetic (under ALTER EXTENSION UPDATE a WARNING, as when the room comes only once databases that dropped the extension let their workers go). Also 55000 while the extension's version is not the library's (see library_version()).$$;

-- Checkpoint properties: a job stores its source offsets in the checkpoint
-- that commits its rows (Paimon's snapshot properties, Kafka's
-- sendOffsetsToTransaction, Delta's txn action).  Each prepare_commit()
-- gives its writer id's properties; they wait here until the checkpoint
-- commits, when they are merged into the snapshot (snapshot_log.properties)
-- and into the commit user's state (last_committed_properties, which
-- snapshot expiry never forgets), in the prepared transaction that commits
-- the rows.
CREATE TABLE paimon_sink.checkpoint_properties (
	sink_id integer NOT NULL REFERENCES paimon_sink.sink_definition ON DELETE CASCADE,
	commit_user text NOT NULL,
	checkpoint_id bigint NOT NULL,
	-- the prepare's writer id; -1: a prepare of every writer id (writer_id NULL)
	writer_id integer NOT NULL,
	properties jsonb NOT NULL CHECK (pg_catalog.jsonb_typeof(properties) OPERATOR(pg_catalog.=) 'object'),
	PRIMARY KEY (sink_id, commit_user, checkpoint_id, writer_id)
);
COMMENT ON TABLE paimon_sink.checkpoint_properties IS
	'Properties of prepared, uncommitted checkpoints, one row per (sink, commit user, checkpoint, writer id) as prepare_commit() gave them; the commit merges a checkpoint''s rows into one object (a key has one value: another value for it from another writer id is refused) and removes them.';
SELECT pg_catalog.pg_extension_config_dump('paimon_sink.checkpoint_properties', '');
ALTER TABLE paimon_sink.snapshot_log ADD COLUMN properties jsonb;
COMMENT ON COLUMN paimon_sink.snapshot_log.properties IS
	'The checkpoint''s properties: the merge of its prepares'' (NULL: none gave any), committed in the same prepared transaction as its rows.';
ALTER TABLE paimon_sink.commit_user_state ADD COLUMN last_committed_properties jsonb;
COMMENT ON COLUMN paimon_sink.commit_user_state.last_committed_properties IS
	'The properties of the last committed checkpoint (NULL: it carried none), kept with the high-water mark: snapshot expiry never forgets them, and a checkpoint committed empty (no snapshot) has them here.';
GRANT SELECT ON paimon_sink.checkpoint_properties TO PUBLIC;

CREATE OR REPLACE VIEW paimon_sink.snapshots AS
	SELECT s.sink_name, l.snapshot_id, l.commit_user, l.commit_identifier, l.commit_kind,
		l.row_count, l.file_count, l.committed_at, l.properties
	FROM paimon_sink.snapshot_log l JOIN paimon_sink.sink_definition s USING (sink_id);

DROP FUNCTION paimon_sink.prepare_commit(text, text, bigint, integer);
CREATE FUNCTION paimon_sink.prepare_commit(
	sink_name text, commit_user text, checkpoint_id bigint, writer_id integer DEFAULT NULL,
	properties jsonb DEFAULT NULL)
	RETURNS TABLE (checkpoint_id bigint, file_name text, writer_id integer, bucket integer,
		row_count bigint, byte_count bigint)
	AS 'MODULE_PATHNAME', 'paimon_sink_prepare_commit' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.prepare_commit(text, text, bigint, integer, jsonb) IS
$$The barrier (Paimon prepareCommit, SeaTunnel SinkWriter.prepareCommit): seals the staged files of the commit user's streams (only writer_id's when given; NULL commit_user means the sink's own) and records their committables for checkpoint_id, in one transaction; returns the checkpoint's committables (checkpoint_id bigint, file_name text, writer_id integer, bucket integer, row_count bigint, byte_count bigint); an empty checkpoint answers with one row of 0 rows (file_name and bucket NULL, writer_id the one asked for) and, when other streams of the sink hold staged rows, a WARNING (01000) naming each (commit user, writer id, rows). properties (a jsonb object, NULL for none; at most 8191 bytes as text) are the checkpoint's properties from this writer id, such as its source offsets (Paimon's snapshot properties, Kafka's sendOffsetsToTransaction): recorded in the same transaction as the committables (a retry of the writer id replaces them), merged at the commit with the other writer ids' into one object that the snapshot records in the prepared transaction that commits the rows; last_commit() and restart_job() return them. A key given another value by another writer id is refused (22023), nothing prepared. A checkpoint holds the rows of transactions committed before the call. A retry with nothing written since returns the same committables. Not undone by a later rollback; refused in a transaction block. Errors: 42704 unknown sink; 42501 not the sink owner; 22023 invalid commit user, checkpoint id not above the last committed one (the rows staged for it are dropped as a replay, counted in the detail and a LOG line; the hint names recover() and a new commit user), or below the last prepared one, properties that are not an object or that give a key another value than another writer id gave it; 25001 inside a transaction block; 54000 properties over 8191 bytes as text; 55000 max_prepared_transactions = 0, writers not running, after end_input(), or properties from a session that joined the commit user's fence epoch before a restore raised it (a session of the failed attempt); 57014 a writer did not answer the barrier. Privileges: EXECUTE is granted to PUBLIC; the function itself refuses (42501, its hint giving the GRANT to run) a caller that is not the sink's owner or a member of that role. Also 55000 while the extension's version is not the library's (see library_version()).$$;
GRANT EXECUTE ON FUNCTION paimon_sink.prepare_commit(text, text, bigint, integer, jsonb) TO PUBLIC;

CREATE FUNCTION paimon_sink.last_commit(sink_name text, commit_user text)
	RETURNS TABLE (checkpoint_id bigint, properties jsonb, snapshot_id bigint,
		committed_at timestamptz)
	AS 'MODULE_PATHNAME', 'paimon_sink_last_commit' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.last_commit(text, text) IS
$$The commit user's last committed checkpoint (commit_user NULL: the sink's own), where a job's source resumes: one row (checkpoint_id bigint, properties jsonb, snapshot_id bigint, committed_at timestamptz); checkpoint_id 0 before the first commit; properties as the checkpoint's prepares gave them (merged), NULL when it carried none; snapshot_id and committed_at NULL when it committed empty (no snapshot). No row for a commit user the sink has never seen. Snapshot expiry never forgets it: the properties are kept with the high-water mark (as Kafka keeps a group's committed offsets). Read under the latest snapshot. Errors: 42704 unknown sink; 22023 invalid commit user. Privileges: EXECUTE is granted to PUBLIC, as last_committed_checkpoint() is. Also 55000 while the extension's version is not the library's (see library_version()).$$;
GRANT EXECUTE ON FUNCTION paimon_sink.last_commit(text, text) TO PUBLIC;

CREATE FUNCTION paimon_sink.restart_job(
	sink_name text, commit_user text, writer_id integer DEFAULT 0,
	timeout_ms integer DEFAULT 30000, restored_checkpoint_id bigint DEFAULT NULL)
	RETURNS TABLE (checkpoint_id bigint, properties jsonb, snapshot_id bigint,
		committed_at timestamptz, recommitted_checkpoints integer,
		discarded_checkpoints integer, discarded_files integer, fence_epoch bigint)
	AS 'MODULE_PATHNAME', 'paimon_sink_restart_job' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.restart_job(text, text, integer, integer, bigint) IS
$$A job's restart in one call (Kafka's initTransactions for a producer): waits up to timeout_ms milliseconds for this database's committer and writers to serve (a crash-restart brings them back), restores commit_user as recover(sink_name, commit_user, M, 'restore') does, M being restored_checkpoint_id or, when NULL, the commit user's last committed checkpoint as the committer finds it (for a job that keeps its source offsets in the checkpoint's properties: what was prepared after it is discarded and replayed); then sets this session's paimon_sink.commit_user and paimon_sink.writer_id (writer_id, the subtask index) as SET does, so that the session joins the commit user's new fence epoch (a rollback of a transaction around the call reverts the settings, as it reverts a SET, but not the restore); returns one row (checkpoint_id bigint, properties jsonb, snapshot_id bigint, committed_at timestamptz, recommitted_checkpoints integer, discarded_checkpoints integer, discarded_files integer, fence_epoch bigint): the last committed checkpoint with its properties, as last_commit() returns it, what the restore did, and the new fence epoch. The job's other subtasks' sessions set their writer ids themselves (SET paimon_sink.commit_user joins the epoch). Refused in a transaction block; not undone by a later rollback. Errors: 42704 unknown sink; 42501 not the sink's owner or a member; 22023 invalid commit user, the sink's own commit user, a negative writer id, timeout or restored checkpoint id, a stale restore (restored_checkpoint_id below the last committed checkpoint); 25001 inside a transaction block; 53400 the worker budget has no room for this database's workers (at once); 55000 max_prepared_transactions = 0; 57014 the workers did not serve within timeout_ms (nothing restored; call it again), or a writer did not answer the restore's barrier; 08006 a writer stopped during it. Privileges: EXECUTE is granted to PUBLIC; the function itself refuses (42501, its hint giving the GRANT to run) a caller that is not the sink's owner or a member of that role. Also 55000 while the extension's version is not the library's (see library_version()).$$;
GRANT EXECUTE ON FUNCTION paimon_sink.restart_job(text, text, integer, integer, bigint) TO PUBLIC;

-- Row kinds as Paimon reads them (create_sink's ignore_update_before and
-- ignore_delete, Paimon's ignore-update-before and ignore-delete): -U is a
-- retraction, as in Paimon's deduplicate merge engine, and a retraction that
-- carries the whole row retracts that row version (Flink's
-- SinkUpsertMaterializer).  0.2's writers stage such a retraction with the
-- row kind -R, which 0.1's library does not read; 0.1's staged -D rows keep
-- their meaning (delete the key).  Sinks made by 0.1 take the defaults: -U is
-- a retraction for them too (a -U/+U pair of one key leaves the +U's row, as
-- before), but with partial_update, whose -U rows stay ignored.
ALTER TABLE paimon_sink.sink_definition
	ADD COLUMN ignore_update_before boolean NOT NULL DEFAULT false,
	ADD COLUMN ignore_delete boolean NOT NULL DEFAULT false;
UPDATE paimon_sink.sink_definition SET ignore_update_before = true WHERE partial_update;
COMMENT ON COLUMN paimon_sink.sink_definition.ignore_update_before IS
	'Upsert sinks: -U (update before) rows are dropped as they are written, instead of retracting a version (Paimon''s ignore-update-before); always true with partial_update.';
COMMENT ON COLUMN paimon_sink.sink_definition.ignore_delete IS
	'Upsert sinks: -D and -U rows are dropped as they are written (Paimon''s ignore-delete).';

-- Overwrite sinks (Paimon's INSERT OVERWRITE): mode 'overwrite' replaces
-- the target once per job (commit user), in the prepared transaction of the
-- job's first commit, even when that commit is empty; with
-- dynamic_partition_overwrite only the leaf partitions that receive rows,
-- each the first time the job brings it rows.  The commit user's state
-- says what its job replaced already, so that a retry, a restore or a
-- crash after the PREPARE never replaces twice (SeaTunnel's streaming
-- overwrite truncated before every checkpoint, PR #10279).
ALTER TABLE paimon_sink.sink_definition
	DROP CONSTRAINT sink_definition_mode_check,
	ADD CONSTRAINT sink_definition_mode_check CHECK (mode IN ('append', 'upsert', 'overwrite')),
	ADD COLUMN dynamic_partition_overwrite boolean NOT NULL DEFAULT false
		CHECK (mode OPERATOR(pg_catalog.=) 'overwrite' OR NOT dynamic_partition_overwrite);
COMMENT ON COLUMN paimon_sink.sink_definition.dynamic_partition_overwrite IS
	'An overwrite sink of a partitioned target that replaces only the leaf partitions receiving rows (Paimon''s dynamic-partition-overwrite), not the whole target.';
ALTER TABLE paimon_sink.commit_user_state
	ADD COLUMN overwrite_checkpoint bigint,
	ADD COLUMN overwritten_partitions pg_catalog.regclass[];
COMMENT ON COLUMN paimon_sink.commit_user_state.overwrite_checkpoint IS
	'Overwrite sinks: the checkpoint whose commit replaced the target for this commit user (its job), set in that commit''s prepared transaction; NULL until then. A commit user replaces the target once.';
COMMENT ON COLUMN paimon_sink.commit_user_state.overwritten_partitions IS
	'Overwrite sinks with dynamic_partition_overwrite: the leaf partitions this commit user''s commits replaced so far, each in the commit that first brought it rows; later commits append to them.';

CREATE OR REPLACE VIEW paimon_sink.sinks AS
	SELECT s.sink_id, s.sink_name, s.target_table, s.foreign_table,
		ft.relowner::pg_catalog.regrole AS owner_role, s.mode,
		s.buckets, s.bucket_key, s.row_kind_column, s.partial_update, s.checkpoint_interval,
		s.default_commit_user,
		u.last_prepared_checkpoint, u.last_committed_checkpoint, u.last_snapshot_id,
		u.last_committed_at, s.created_at, s.on_error, s.ignore_update_before, s.ignore_delete,
		s.dynamic_partition_overwrite
	FROM paimon_sink.sink_definition s
	-- the sink's own foreign table: the relation of that oid, of that sink (not a later one reusing a lost table's oid)
	LEFT JOIN pg_catalog.pg_foreign_table fd ON fd.ftrelid OPERATOR(pg_catalog.=) s.foreign_table::pg_catalog.oid
		AND ('sink_id=' OPERATOR(pg_catalog.||) s.sink_id) OPERATOR(pg_catalog.=) ANY (fd.ftoptions)
	LEFT JOIN pg_catalog.pg_class ft ON ft.oid OPERATOR(pg_catalog.=) fd.ftrelid
	LEFT JOIN paimon_sink.commit_user_state u
		ON u.sink_id = s.sink_id AND u.commit_user = s.default_commit_user;

DROP FUNCTION paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean, text);
CREATE FUNCTION paimon_sink.create_sink(
	sink_name text,
	target regclass,
	mode text DEFAULT 'append',
	buckets integer DEFAULT 1,
	bucket_key text[] DEFAULT NULL,
	checkpoint_interval interval DEFAULT NULL,
	row_kind_column text DEFAULT '_row_kind',
	partial_update boolean DEFAULT false,
	on_error text DEFAULT 'stop',
	ignore_update_before boolean DEFAULT NULL,
	ignore_delete boolean DEFAULT false,
	dynamic_partition_overwrite boolean DEFAULT false,
	OUT sink_name text, OUT foreign_table regclass, OUT commit_user text)
	AS 'MODULE_PATHNAME', 'paimon_sink_create_sink' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean, text, boolean, boolean, boolean) FROM PUBLIC;
COMMENT ON FUNCTION paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean, text, boolean, boolean, boolean) IS
$$Registers a sink writing into target (a table the caller may INSERT into), creates its foreign table (named sink_name, in the target's schema, owned by the caller) and its own commit user (a UUID); returns (sink_name text, foreign_table regclass, commit_user text). mode 'append' loads rows as they are; mode 'upsert' (Paimon's primary-key table with the deduplicate merge engine) needs a primary key on target (recorded: a commit refuses another) and the SELECT, UPDATE and DELETE rights too: its foreign table has one more text column, row_kind_column, taking +I or +U (upsert; also NULL), -U (update before) or -D (delete); -U and -D are retractions: one whose statement names every non-key column and that has a non-key value (or a target of key columns only) retracts that row version (the newest earlier version of the checkpoint equal to it, NULLs matching NULLs, else the target's row if equal; nothing when none is: Flink's SinkUpsertMaterializer), any other deletes its key; each checkpoint applies per key the latest version that is not retracted (Paimon's deduplicate merge engine); partial_update (upsert only) makes a NULL column keep the target's value (Paimon's partial-update merge engine); its -U rows are ignored and its -D rows delete the key. ignore_update_before (upsert only; NULL: true with partial_update, else false) drops -U rows as they are written; ignore_delete (upsert only, default false) drops -D and -U rows (Paimon's ignore-update-before and ignore-delete). mode 'overwrite' (Paimon's INSERT OVERWRITE) loads rows as 'append' does, but each commit user (one job: restart_job() and recover() keep it, a new commit user is a new job) replaces the target once, in its first commit (empty or not: an empty job that ends its input empties the target, its snapshot recorded with commit_kind OVERWRITE), with a DELETE of the target's rows in the prepared transaction that loads the job's first rows, so that readers see the old rows until it commits; the commit user's state records it (commit_user_state.overwrite_checkpoint), so retries, restores and a crash after the PREPARE never replace twice. It needs the DELETE right too. dynamic_partition_overwrite (overwrite only, partitioned target only; Paimon's dynamic-partition-overwrite) replaces instead only the leaf partitions that receive rows, each the first time a commit of the commit user brings it rows (commit_user_state.overwritten_partitions); a commit without rows changes nothing. buckets (1-1024) and bucket_key (column names; for upsert, primary key columns, by default all of them) route rows to writers by a hash of their values; checkpoint_interval (positive; NULL takes paimon_sink.checkpoint_interval, whose 0 means none) makes the committer checkpoint the sink's own commit user that often, skipping empty intervals. on_error says what a commit does with a row the target refuses (a constraint, an index, a trigger): 'stop' (the default: the commit fails, nothing applied, its error naming the row's key, the constraint or index and the checkpoint; reject_failing_rows() goes on) or 'reject' (the row goes into paimon_sink.rejected_row, view rejects, committed in the same prepared transaction as the checkpoint's other rows; Kafka Connect's dead-letter queue). Privileges: EXECUTE is revoked from PUBLIC (a superuser grants it: GRANT EXECUTE ON FUNCTION paimon_sink.create_sink TO role); the caller is the sink's owner, whose rights its commits use. Errors: 22023 bad name, mode, buckets, row_kind_column, on_error, ignore_update_before false with partial_update, an upsert option on an append sink, a bucket key outside the primary key, or dynamic_partition_overwrite without mode 'overwrite' or on a target that is not partitioned; 42P16 upsert target without a primary key; 0A000 upsert target with a deferrable primary key or rules, a bucket key type without a hash function when buckets > 1, a column whose type (or a type inside it) has no binary send or receive function, or a temporary target (the committer cannot load another session's temporary table); 42809 target not a table; 42501 no INSERT (upsert: also SELECT, UPDATE, DELETE; overwrite: also DELETE) right on target, no CREATE right on its schema or no USAGE on the server paimon_sink, each with the GRANT to run in its hint; 42703 unknown bucket key column; 42701 row_kind_column names a target column; 42710 sink exists; 55000 max_prepared_transactions = 0 or library not preloaded; 53400 the worker budget (max_worker_processes) has no room for this database's committer and writers, the detail giving its arithmetic (a WARNING with 53400 when the room comes once databases that dropped the extension let their workers go). Also 55000 while the extension's version is not the library's (see library_version()).$$;

-- Sink groups (issue 18): one commit user's checkpoint N across several
-- sinks, committed in one prepared transaction, so that a job replicating
-- a whole database keeps foreign keys and cross-table totals consistent at
-- every checkpoint.  Paimon, Iceberg and the XA sinks commit table by
-- table; a group is what Kafka's transactions give a producer writing
-- several topics.  Group and sink names share one namespace.
CREATE TABLE paimon_sink.sink_group (
	group_id serial PRIMARY KEY,
	group_name text NOT NULL UNIQUE,
	created_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE paimon_sink.sink_group IS
	'One row per sink group: its name (never a sink''s) and when it was created. A group has no owner of its own: the owners of its member sinks govern it (whoever has the rights of every one creates, addresses and drops it), so REASSIGN OWNED moves it with them and no DROP ROLE strands it.';
CREATE TABLE paimon_sink.sink_group_member (
	group_id integer NOT NULL REFERENCES paimon_sink.sink_group ON DELETE CASCADE,
	member_position integer NOT NULL CHECK (member_position OPERATOR(pg_catalog.>=) 1),
	-- a sink belongs to at most one group; drop_sink refuses a member
	sink_id integer NOT NULL UNIQUE REFERENCES paimon_sink.sink_definition,
	PRIMARY KEY (group_id, member_position)
);
COMMENT ON TABLE paimon_sink.sink_group_member IS
	'The member sinks of each group, in the order create_sink_group() was given them (member_position 1 is the first member: the group''s properties and gids are recorded under it).';
SELECT pg_catalog.pg_extension_config_dump('paimon_sink.sink_group', '');
SELECT pg_catalog.pg_extension_config_dump('paimon_sink.sink_group_group_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('paimon_sink.sink_group_member', '');
GRANT SELECT ON paimon_sink.sink_group, paimon_sink.sink_group_member TO PUBLIC;

CREATE FUNCTION paimon_sink.create_sink_group(group_name text, sinks text[])
	RETURNS void AS 'MODULE_PATHNAME', 'paimon_sink_create_sink_group' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.create_sink_group(text, text[]) IS
$$Registers a sink group (an atomic multi-table checkpoint; none of Paimon, Iceberg or the XA sinks has one): group_name (a name no sink has) for the existing sinks of this database named in sinks (text[], at least one, each once), in that order, the first being the one the group's checkpoint properties are recorded with. prepare_commit, commit, recover, restart_job, last_commit, last_committed_checkpoint and end_input then take the group's name for sink_name: a checkpoint of one commit user prepared on every member and committed in ONE prepared transaction (PREPARE TRANSACTION / COMMIT PREPARED under one gid), so that either every member's snapshot of it is visible or none. Returns void. Errors: 22004 a NULL name, sinks or element; 22023 bad name, empty sinks or a sink named twice; 0A000 an overwrite sink (a group's commit skips a member's empty checkpoints, which an overwrite job's first may be); 42704 unknown sink; 42501 not the owner (or a member of it) of every sink; 42710 a sink or group of that name exists, or a sink already belongs to a group; 55000 library not preloaded. Privileges: EXECUTE is granted to PUBLIC; the function itself refuses a caller that does not own every member sink. The group has no owner of its own: it follows its members' owners (REASSIGN OWNED moves them), and whoever has the rights of every member's owner addresses and drops it. Also 55000 while the extension's version is not the library's (see library_version()).$$;
GRANT EXECUTE ON FUNCTION paimon_sink.create_sink_group(text, text[]) TO PUBLIC;

CREATE FUNCTION paimon_sink.drop_sink_group(group_name text)
	RETURNS void AS 'MODULE_PATHNAME', 'paimon_sink_drop_sink_group' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.drop_sink_group(text) IS
$$Drops a sink group; its member sinks, their checkpoints and snapshots stay, each then addressed by its own name again (a prepared checkpoint of the group is committed member by member from then on). Returns void. Errors: 22004 NULL name; 42704 unknown group; 42501 not the owner (or a member of the owner) of every member sink, as for create_sink_group. Privileges: EXECUTE is granted to PUBLIC; the function itself checks the caller. Also 55000 while the extension's version is not the library's (see library_version()).$$;
GRANT EXECUTE ON FUNCTION paimon_sink.drop_sink_group(text) TO PUBLIC;

CREATE VIEW paimon_sink.sink_groups AS
	SELECT g.group_name,
		pg_catalog.array_agg(DISTINCT ft.relowner)::pg_catalog.regrole[] AS owners,
		pg_catalog.array_agg(s.sink_name ORDER BY m.member_position) AS sinks, g.created_at
	FROM paimon_sink.sink_group g
	JOIN paimon_sink.sink_group_member m USING (group_id)
	JOIN paimon_sink.sink_definition s USING (sink_id)
	-- the sink's own foreign table: the relation of that oid, of that sink (not a later one reusing a lost table's oid)
	LEFT JOIN pg_catalog.pg_foreign_table fd ON fd.ftrelid OPERATOR(pg_catalog.=) s.foreign_table::pg_catalog.oid
		AND ('sink_id=' OPERATOR(pg_catalog.||) s.sink_id) OPERATOR(pg_catalog.=) ANY (fd.ftoptions)
	LEFT JOIN pg_catalog.pg_class ft ON ft.oid OPERATOR(pg_catalog.=) fd.ftrelid
	GROUP BY g.group_id, g.group_name, g.created_at;
COMMENT ON VIEW paimon_sink.sink_groups IS
	'Sink groups: name, the owners of its member sinks (regrole[]: a group has none of its own), member sinks in their order (the first records the group''s properties), created_at.';
GRANT SELECT ON paimon_sink.sink_groups TO PUBLIC;

-- The functions that take a group's name for sink_name say so.
DO $$
DECLARE
	f pg_catalog.regprocedure;
BEGIN
	FOR f IN SELECT pg_catalog.unnest(ARRAY[
		'paimon_sink.prepare_commit(text, text, bigint, integer, jsonb)',
		'paimon_sink.commit(text, text, bigint)',
		'paimon_sink.recover(text, text, bigint, text)',
		'paimon_sink.restart_job(text, text, integer, integer, bigint)',
		'paimon_sink.last_commit(text, text)',
		'paimon_sink.last_committed_checkpoint(text, text)',
		'paimon_sink.end_input(text, text)']::pg_catalog.regprocedure[])
	LOOP
		EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', f,
			pg_catalog.obj_description(f::pg_catalog.oid, 'pg_proc'::pg_catalog.name) OPERATOR(pg_catalog.||)
			' Sink groups: sink_name may name a group (create_sink_group()); the call then serves every member sink for the commit user, the caller owning each: prepare_commit prepares each member in the group''s order (the properties recorded once, with the first member) and returns their rows one member after another; commit commits every member''s prepared checkpoints up to the id in ONE prepared transaction and returns the snapshots member by member in the group''s order (a snapshot_id is its sink''s: the snapshots view names the sink); recover and restart_job restore every member together (the commit user fenced on each); last_commit and last_committed_checkpoint answer for the group (its first member); end_input ends every member''s input in one commit. checkpoint() takes no group (42809).');
	END LOOP;
END
$$;

-- create_sink and drop_sink meet groups too.
DO $$
DECLARE
	f pg_catalog.regprocedure;
	note text;
BEGIN
	FOR f, note IN SELECT * FROM (VALUES
		('paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean, text, boolean, boolean, boolean)'::pg_catalog.regprocedure,
		 ' Sink groups: sink and group names share one namespace, so a group''s name is refused too (42710).'),
		('paimon_sink.drop_sink(text, boolean)'::pg_catalog.regprocedure,
		 ' Sink groups: a member of a group is refused (2BP01) until drop_sink_group() has forgotten the group.')) v
	LOOP
		EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', f,
			pg_catalog.obj_description(f::pg_catalog.oid, 'pg_proc'::pg_catalog.name) OPERATOR(pg_catalog.||) note);
	END LOOP;
END
$$;

-- The functions that wait for the committer say how the wait ends, and
-- end_input() says what it does for an overwrite sink.
DO $$
DECLARE
	f pg_catalog.regprocedure;
	e pg_catalog.regprocedure := 'paimon_sink.end_input(text, text)';
BEGIN
	FOR f IN SELECT pg_catalog.unnest(ARRAY[
		'paimon_sink.prepare_commit(text, text, bigint, integer, jsonb)',
		'paimon_sink.commit(text, text, bigint)',
		'paimon_sink.checkpoint(text)',
		'paimon_sink.recover(text, text, bigint, text)',
		'paimon_sink.end_input(text, text)',
		'paimon_sink.reject_failing_rows(text, bigint, text)',
		'paimon_sink.remove_orphan_files(text, interval, boolean)',
		'paimon_sink.discard_missing_files(text, text)',
		'paimon_sink.restart_job(text, text, integer, integer, bigint)']::pg_catalog.regprocedure[])
	LOOP
		EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', f,
			pg_catalog.obj_description(f::pg_catalog.oid, 'pg_proc'::pg_catalog.name) OPERATOR(pg_catalog.||)
			' Waits: the call waits for the database''s committer, bounded: 57014 once the committer has shown no progress (or none ran, or it did not serve) for paimon_sink.committer_timeout; the request is not undone (it stays queued or finishes, its outcome in the sinks view), and a retry is safe.');
	END LOOP;
	EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', e,
		pg_catalog.obj_description(e::pg_catalog.oid, 'pg_proc'::pg_catalog.name) OPERATOR(pg_catalog.||)
		' Overwrite sinks: for a job (commit user) that has not committed before, the end-of-input commit is its first and replaces the target: an empty job empties it (under dynamic_partition_overwrite an empty one changes nothing), its snapshot recorded with commit_kind OVERWRITE.');
END
$$;

-- Schema changes of the target (docs/schema-changes.md): each staged column
-- records the attribute number of the target's column it loads into, so
-- that a load follows a column renamed since the sink was created (and
-- skips one dropped since).  Sinks made before take their columns' numbers
-- from the names they have now; 0 for a staged column the target lacks
-- (an upsert sink's row kind).  Attribute numbers hold for the relation
-- they were read from (target_attnums_relid): pg_dump and pg_restore make
-- the target anew, without its dropped columns, so a sink whose target has
-- another oid than that matches its columns by name again.  Before the
-- foreign tables restored below: restore_foreign_table() records them for
-- sinks that have none.
ALTER TABLE paimon_sink.sink_definition ADD COLUMN target_attnums smallint[],
	ADD COLUMN target_attnums_relid oid;
UPDATE paimon_sink.sink_definition d SET target_attnums_relid = d.target_table::pg_catalog.oid,
	target_attnums = (
	SELECT pg_catalog.array_agg(coalesce(a.attnum, 0::pg_catalog.int2) ORDER BY u.ord)
	  FROM pg_catalog.unnest(d.column_names) WITH ORDINALITY AS u (name, ord)
	  LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) d.target_table
	   AND a.attname::pg_catalog.text OPERATOR(pg_catalog.=) u.name
	   AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped)
 WHERE d.column_names IS NOT NULL;
COMMENT ON COLUMN paimon_sink.sink_definition.target_attnums IS
	'For each staged column (column_names), the attribute number of the target''s column it loads into, 0 for none (the row kind): a load follows a column renamed since by this number and skips one dropped since.';
COMMENT ON COLUMN paimon_sink.sink_definition.target_attnums_relid IS
	'The oid of the relation target_attnums were read from: a target restored by pg_restore (another oid, its dropped columns gone) matches the staged columns by name.';

-- A sink's owner is its foreign table's owner (issue 28).  0.1 recorded it
-- apart, in sink_definition.owner_role, which PostgreSQL does not know of:
-- REASSIGN OWNED moved the foreign table and left the sink with its old
-- owner, DROP ROLE then went through, and commits ran as a role that no
-- longer existed (42501 for everyone).  From 0.2 the owner is read from
-- pg_class.relowner, which pg_shdepend keeps: DROP ROLE refuses a role
-- that owns a sink (2BP01), REASSIGN OWNED and ALTER FOREIGN TABLE ...
-- OWNER TO move the sink, and the library refuses any statement that
-- drops a sink's foreign table without the sink.  Sinks that lost theirs
-- under 0.1 (DROP FOREIGN TABLE, DROP OWNED) get it back here.
CREATE FUNCTION paimon_sink.restore_foreign_table(sink_name text, owner regrole)
	RETURNS regclass AS 'MODULE_PATHNAME', 'paimon_sink_restore_foreign_table' LANGUAGE C VOLATILE;
REVOKE ALL ON FUNCTION paimon_sink.restore_foreign_table(text, regrole) FROM PUBLIC;
COMMENT ON FUNCTION paimon_sink.restore_foreign_table(text, regrole) IS
$$The way forward for a sink whose foreign table was dropped (under 0.1, or with the library not loaded; 0.2 refuses such drops), and which so has no owner (a sink's owner is its foreign table's owner): creates its foreign table again, named after the sink in its target's schema, in the layout its rows are staged in (each column with the type modifier, collation and default of the target's column of that name and type), owned by owner (the role the sink's commits then run as, its target's triggers included: never guessed, 22004 when NULL), so that its staged rows and prepared checkpoints commit again; returns it (regclass), with a NOTICE (grant INSERT on it again to the roles that write into the sink). A sink that has its foreign table is left as it is (ALTER FOREIGN TABLE ... OWNER TO gives it another owner) and its foreign table returned. ALTER EXTENSION paimon_sink UPDATE from 0.1 calls it for every sink without one whose target exists, with the sink's recorded owner when that role exists (a WARNING for each, and for one it cannot restore or whose recorded owner was dropped, the update going on). Errors: 22004 NULL sink_name or owner; 42501 not a superuser; 42704 unknown sink or role; 42P01 the target was dropped too (drop the sink: drop_sink(sink_name, force => true)); 42P07 another relation has the sink's name in the target's schema. Privileges: EXECUTE is revoked from PUBLIC, and the function refuses a caller that is not a superuser. Also 55000 while the extension's version is not the library's (see library_version()).$$;

-- What the update changes is said as WARNINGs: an extension script's
-- NOTICEs are not shown.
DO $$
DECLARE
	s record;
	restored pg_catalog.regclass;
BEGIN
	-- the owner each sink had, and the one it has from now on
	FOR s IN SELECT d.sink_name, d.owner_role::pg_catalog.oid AS recorded, ft.relowner AS owner
		FROM paimon_sink.sink_definition d
		JOIN pg_catalog.pg_foreign_table fd ON fd.ftrelid OPERATOR(pg_catalog.=) d.foreign_table::pg_catalog.oid
			AND ('sink_id=' OPERATOR(pg_catalog.||) d.sink_id) OPERATOR(pg_catalog.=) ANY (fd.ftoptions)
		JOIN pg_catalog.pg_class ft ON ft.oid OPERATOR(pg_catalog.=) fd.ftrelid
		WHERE ft.relowner OPERATOR(pg_catalog.<>) d.owner_role::pg_catalog.oid
		ORDER BY d.sink_name
	LOOP
		RAISE WARNING 'sink "%" is owned by role "%" from now on, the owner of its foreign table (it was recorded as %)',
			s.sink_name, s.owner::pg_catalog.regrole, coalesce((SELECT pg_catalog.quote_ident(r.rolname::pg_catalog.text)
				FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) s.recorded),
				'a dropped role, OID ' OPERATOR(pg_catalog.||) s.recorded::pg_catalog.text);
	END LOOP;
	-- a sink whose foreign table is gone (or whose oid another relation took
	-- since), with its target there, gets it back, owned by the role it
	-- recorded; with that role dropped too, nobody is guessed: a superuser
	-- names the owner the commits will run as
	FOR s IN SELECT d.sink_name,
			(SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.oid OPERATOR(pg_catalog.=) d.owner_role::pg_catalog.oid) AS owner
		FROM paimon_sink.sink_definition d
		WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_foreign_table fd
				WHERE fd.ftrelid OPERATOR(pg_catalog.=) d.foreign_table::pg_catalog.oid
					AND ('sink_id=' OPERATOR(pg_catalog.||) d.sink_id) OPERATOR(pg_catalog.=) ANY (fd.ftoptions))
			AND EXISTS (SELECT FROM pg_catalog.pg_class t
				WHERE t.oid OPERATOR(pg_catalog.=) d.target_table::pg_catalog.oid)
		ORDER BY d.sink_name
	LOOP
		IF s.owner IS NULL THEN
			RAISE WARNING 'sink "%" has no foreign table and its recorded owner was dropped: it has no owner', s.sink_name
				USING HINT = pg_catalog.format('A superuser gives it one with SELECT paimon_sink.restore_foreign_table(%L, ''role''), naming the role its commits should run as, or drops it with paimon_sink.drop_sink(%L, force => true).', s.sink_name, s.sink_name);
			CONTINUE;
		END IF;
		BEGIN
			restored := paimon_sink.restore_foreign_table(s.sink_name, s.owner::pg_catalog.regrole);
			RAISE WARNING 'restored foreign table % of sink "%", owned by role "%"', restored, s.sink_name,
				(SELECT c.relowner::pg_catalog.regrole FROM pg_catalog.pg_class c
				  WHERE c.oid OPERATOR(pg_catalog.=) restored)
				USING HINT = 'Grant INSERT on it again to the roles that write into the sink.';
		EXCEPTION WHEN OTHERS THEN
			-- (another relation has its name, say): the update goes on without it
			RAISE WARNING 'could not restore the foreign table of sink "%": %', s.sink_name, SQLERRM
				USING HINT = 'The sink has no owner until a superuser calls paimon_sink.restore_foreign_table() for it, or drops it with paimon_sink.drop_sink().';
		END;
	END LOOP;
END
$$;
ALTER TABLE paimon_sink.sink_definition DROP COLUMN owner_role;
COMMENT ON TABLE paimon_sink.sink_definition IS
	'One row per sink: its target table, foreign table, mode, buckets and own commit user. Its owner is its foreign table''s owner (pg_class.relowner): the view sinks shows it as owner_role.';
COMMENT ON VIEW paimon_sink.sinks IS
	'Sinks with the marks of their own commit user. owner_role is the sink''s owner: its foreign table''s owner (NULL when that table was dropped: see restore_foreign_table()).';

-- create_sink, drop_sink and the owner's functions say who the owner is.
DO $$
DECLARE
	f pg_catalog.regprocedure;
	note text;
BEGIN
	FOR f, note IN SELECT * FROM (VALUES
		('paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean, text, boolean, boolean, boolean)'::pg_catalog.regprocedure,
		 ' Owner: the sink''s owner is its foreign table''s owner, the caller at first: REASSIGN OWNED BY and ALTER FOREIGN TABLE ... OWNER TO give the sink another owner (commits then run with that role''s rights: it needs the rights on the target listed above), and DROP ROLE is refused while the role owns a sink (2BP01, naming it).'),
		('paimon_sink.drop_sink(text, boolean)'::pg_catalog.regprocedure,
		 ' The sink''s foreign table goes only with it (or with DROP EXTENSION): a statement that would drop it otherwise (DROP FOREIGN TABLE, DROP OWNED BY its owner, DROP TABLE of the target or DROP SCHEMA ... CASCADE) is refused (2BP01) naming the sink. A sink whose foreign table is gone (see restore_foreign_table()) is dropped by a superuser.')) v
	LOOP
		EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', f,
			pg_catalog.obj_description(f::pg_catalog.oid, 'pg_proc'::pg_catalog.name) OPERATOR(pg_catalog.||) note);
	END LOOP;
END
$$;

-- Arguments no valid call carries are refused before anything changes
-- (and the committer checks every request again): the functions say which.
DO $$
DECLARE
	f pg_catalog.regprocedure;
	note text;
BEGIN
	FOR f, note IN SELECT * FROM (VALUES
		('paimon_sink.prepare_commit(text, text, bigint, integer, jsonb)'::pg_catalog.regprocedure,
		 ' Arguments: checkpoint_id from 1 to 9223372036854775806 (the highest id is end_input()''s), else 22023 before anything is sealed or dropped: only a valid id at or below the last committed one drops staged rows as a replay; NULL sink_name or checkpoint_id 22004.'),
		('paimon_sink.commit(text, text, bigint)'::pg_catalog.regprocedure,
		 ' Arguments: checkpoint_id 1 or more, else 22023 with nothing changed; NULL sink_name or checkpoint_id 22004.'),
		('paimon_sink.reject_failing_rows(text, bigint, text)'::pg_catalog.regprocedure,
		 ' Arguments: checkpoint_id 1 or more, else 22023 with nothing changed; NULL sink_name or checkpoint_id 22004.'),
		('paimon_sink.recover(text, text, bigint, text)'::pg_catalog.regprocedure,
		 ' Arguments: restored_checkpoint_id 0 (a job restored from before its first checkpoint) or more, else 22023 with nothing changed; NULL sink_name, commit_user or restored_checkpoint_id 22004.'),
		('paimon_sink.restart_job(text, text, integer, integer, bigint)'::pg_catalog.regprocedure,
		 ' Arguments: restored_checkpoint_id NULL (the last committed checkpoint) or 0 or more, else 22023 with nothing changed.'),
		('paimon_sink.last_commit(text, text)'::pg_catalog.regprocedure,
		 ' Arguments: NULL sink_name 22004.'),
		('paimon_sink.last_committed_checkpoint(text, text)'::pg_catalog.regprocedure,
		 ' Arguments: NULL sink_name 22004.'),
		('paimon_sink.expire_snapshots(text, integer, interval)'::pg_catalog.regprocedure,
		 ' Arguments: NULL older_than 22004; an older_than beyond about 146,000 years counts as that long.'),
		('paimon_sink.remove_orphan_files(text, interval, boolean)'::pg_catalog.regprocedure,
		 ' Arguments: an older_than beyond about 146,000 years counts as that long.'),
		('paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean, text, boolean, boolean, boolean)'::pg_catalog.regprocedure,
		 ' Arguments: checkpoint_interval at most 2147483647 ms (about 24 days, the range of paimon_sink.checkpoint_interval), else 22023.'),
		('paimon_sink.checkpoint(text)'::pg_catalog.regprocedure,
		 ' Ids: 54000, nothing changed, when the own commit user''s next checkpoint id would be end_input()''s (9223372036854775807, after a prepare_commit of 9223372036854775806 under it): a checkpoint() never ends the input the SQL sessions write.'),
		('paimon_sink.inject_fault(text, text, integer)'::pg_catalog.regprocedure,
		 ' Arguments: NULL point or action 22004; times 0 or below -1 22023.'),
		('paimon_sink.release_fault(text)'::pg_catalog.regprocedure,
		 ' Arguments: NULL point 22004; an unknown point 22023.')) v
	LOOP
		EXECUTE pg_catalog.format('COMMENT ON FUNCTION %s IS %L', f,
			pg_catalog.obj_description(f::pg_catalog.oid, 'pg_proc'::pg_catalog.name) OPERATOR(pg_catalog.||) note);
	END LOOP;
END
$$;

-- Every way rows reach a sink's foreign table gets the checks of a direct
-- INSERT, or 0A000: rows routed from a partitioned table with ON CONFLICT
-- were staged and failed every later commit (23505), and a target column
-- added after create_sink failed every write (23502) though the load fills
-- it.  What the wrapper takes and refuses:
COMMENT ON FOREIGN DATA WRAPPER paimon_sink IS
$$The wrapper of every sink's foreign table. It takes INSERT and COPY FROM, directly or through a view, a rule, a trigger, a partitioned table it is a partition of (routed INSERT and COPY) or postgres_fdw, each with the same checks: the commit user (55000 when its input ended or it was recovered since the session joined it) and the target's NOT NULL and CHECK constraints as far as the row decides them (23502, 23514; a target column the sink does not stage is the load's to fill, and so is a constraint reading one; with a BEFORE ROW trigger on the target that the load fires, which may change any value, none is checked) and btree index row size (54000). Refused with 0A000: reading, ON CONFLICT, an UPDATE moving a row into the sink's partition, MERGE routing rows into it. Option sink_id, on foreign tables only; a foreign table that is not the one create_sink made for that sink takes no rows (HV00R).$$;

-- A job's identity travels in its transaction, not its session: through a
-- pooler in transaction mode a server connection serves many clients, and a
-- SET of one stays for the next.  restart_job() hands the attempt a fence
-- epoch (Kafka's initTransactions()) and sets no session setting; every
-- write names it (write_as()), and so do prepare_commit, commit and
-- end_input (fence_epoch); prepare_commit can check the rows a subtask sent
-- (expected_rows).
ALTER TABLE paimon_sink.commit_user_state ADD COLUMN epoch_required boolean NOT NULL DEFAULT false;
COMMENT ON COLUMN paimon_sink.commit_user_state.epoch_required IS
	'A job''s commit user: restart_job() handed it its fence epoch, and every write and every prepare_commit, commit and end_input for it must name that epoch (write_as(), fence_epoch), else 55000. A sink with such a commit user (input not ended) refuses rows that name no commit user.';

CREATE FUNCTION paimon_sink.write_as(
	sink_name text, commit_user text, writer_id integer, fence_epoch bigint)
	RETURNS void AS 'MODULE_PATHNAME', 'paimon_sink_write_as' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.write_as(text, text, integer, bigint) IS
$$Names, for the rest of the calling transaction, the identity of every write into sink_name (or into each member of the sink group it names): commit_user, writer_id (integer, the subtask index, 0 or more) and fence_epoch (bigint: the one restart_job() returned to the job's attempt, as Kafka's initTransactions() hands a producer its epoch; 0 for a commit user never restored), whatever the session's paimon_sink.commit_user, writer_id and fence_epoch say. Call it after BEGIN, before the transaction's INSERT or COPY: nothing depends on what an earlier transaction of the same connection set, so it is the way to write through a pooler in transaction mode. Called again for the same sink it replaces what it named; a savepoint rolled back does not undo it; the transaction's end forgets it. Returns void. Checked at once, and again at each write; the writers fence the rows of a stale epoch at the barrier. Errors: 25P01 outside a transaction block; 22004 a NULL argument; 42704 unknown sink; 22023 invalid commit user, a negative writer id or fence epoch, an epoch above the commit user's; 55000 an epoch below it (a subtask of a failed attempt), or a commit user whose input ended. Privileges: EXECUTE is granted to PUBLIC; a write still needs INSERT on the foreign table. Also 55000 while the extension's version is not the library's (see library_version()).$$;
GRANT EXECUTE ON FUNCTION paimon_sink.write_as(text, text, integer, bigint) TO PUBLIC;

DO $$
DECLARE
	old_comment text;
	fence_note text := ' Fence: fence_epoch (bigint, NULL for none) names the job attempt''s fence epoch; NULL takes the session''s paimon_sink.fence_epoch when the session''s paimon_sink.commit_user is this commit user. For a job''s commit user (restart_job() fenced it: commit_user_state.epoch_required) the call must name the current epoch: none or an older one 55000 (a subtask of a failed attempt), a newer one 22023, nothing changed; for other commit users a named epoch is held to the same rule.';
	phrase text; -- one that restart_job's comment must hold to be rewritten

BEGIN
	-- prepare_commit: fence_epoch and expected_rows
	old_comment := pg_catalog.obj_description(
		'paimon_sink.prepare_commit(text, text, bigint, integer, jsonb)'::pg_catalog.regprocedure::pg_catalog.oid,
		'pg_proc'::pg_catalog.name);
	DROP FUNCTION paimon_sink.prepare_commit(text, text, bigint, integer, jsonb);
	CREATE FUNCTION paimon_sink.prepare_commit(
		sink_name text, commit_user text, checkpoint_id bigint, writer_id integer DEFAULT NULL,
		properties jsonb DEFAULT NULL, fence_epoch bigint DEFAULT NULL,
		expected_rows bigint DEFAULT NULL)
		RETURNS TABLE (checkpoint_id bigint, file_name text, writer_id integer, bucket integer,
			row_count bigint, byte_count bigint)
		AS 'MODULE_PATHNAME', 'paimon_sink_prepare_commit' LANGUAGE C VOLATILE;
	EXECUTE pg_catalog.format('COMMENT ON FUNCTION paimon_sink.prepare_commit(text, text, bigint, integer, jsonb, bigint, bigint) IS %L',
		old_comment OPERATOR(pg_catalog.||) fence_note OPERATOR(pg_catalog.||)
		' expected_rows (bigint, NULL for none): the rows the subtask sent for this checkpoint under writer_id (every writer id when NULL) since its previous prepare; when the checkpoint holds another number of them for it, refused with 55000 and nothing prepared (the rows stay staged): rows were staged under another identity than they were sent with. Not with a sink group (0A000).');
	GRANT EXECUTE ON FUNCTION paimon_sink.prepare_commit(text, text, bigint, integer, jsonb, bigint, bigint) TO PUBLIC;

	-- commit: fence_epoch
	old_comment := pg_catalog.obj_description(
		'paimon_sink.commit(text, text, bigint)'::pg_catalog.regprocedure::pg_catalog.oid,
		'pg_proc'::pg_catalog.name);
	DROP FUNCTION paimon_sink.commit(text, text, bigint);
	CREATE FUNCTION paimon_sink.commit(sink_name text, commit_user text, checkpoint_id bigint,
		fence_epoch bigint DEFAULT NULL)
		RETURNS TABLE (snapshot_id bigint, commit_user text, checkpoint_id bigint,
			row_count bigint, file_count integer, committed_at timestamptz,
			newly_committed boolean)
		AS 'MODULE_PATHNAME', 'paimon_sink_commit' LANGUAGE C VOLATILE;
	EXECUTE pg_catalog.format('COMMENT ON FUNCTION paimon_sink.commit(text, text, bigint, bigint) IS %L',
		old_comment OPERATOR(pg_catalog.||) fence_note);
	GRANT EXECUTE ON FUNCTION paimon_sink.commit(text, text, bigint, bigint) TO PUBLIC;

	-- end_input: fence_epoch
	old_comment := pg_catalog.obj_description(
		'paimon_sink.end_input(text, text)'::pg_catalog.regprocedure::pg_catalog.oid,
		'pg_proc'::pg_catalog.name);
	DROP FUNCTION paimon_sink.end_input(text, text);
	CREATE FUNCTION paimon_sink.end_input(sink_name text, commit_user text,
		fence_epoch bigint DEFAULT NULL)
		RETURNS TABLE (snapshot_id bigint, commit_user text, checkpoint_id bigint,
			row_count bigint, file_count integer, committed_at timestamptz,
			newly_committed boolean)
		AS 'MODULE_PATHNAME', 'paimon_sink_end_input' LANGUAGE C VOLATILE;
	EXECUTE pg_catalog.format('COMMENT ON FUNCTION paimon_sink.end_input(text, text, bigint) IS %L',
		old_comment OPERATOR(pg_catalog.||) fence_note);
	GRANT EXECUTE ON FUNCTION paimon_sink.end_input(text, text, bigint) TO PUBLIC;

	-- restart_job: no writer id, no session setting; the commit user becomes a job's
	old_comment := pg_catalog.obj_description(
		'paimon_sink.restart_job(text, text, integer, integer, bigint)'::pg_catalog.regprocedure::pg_catalog.oid,
		'pg_proc'::pg_catalog.name);
	FOREACH phrase IN ARRAY ARRAY[
		'; then sets this session''s paimon_sink.commit_user and paimon_sink.writer_id (writer_id, the subtask index) as SET does, so that the session joins the commit user''s new fence epoch (a rollback of a transaction around the call reverts the settings, as it reverts a SET, but not the restore); returns one row',
		' The job''s other subtasks'' sessions set their writer ids themselves (SET paimon_sink.commit_user joins the epoch).',
		'a negative writer id, timeout or restored checkpoint id']
	LOOP
		IF pg_catalog.strpos(old_comment, phrase) OPERATOR(pg_catalog.=) 0 THEN
			RAISE EXCEPTION 'restart_job''s comment lacks: %', phrase;
		END IF;
	END LOOP;
	old_comment := pg_catalog.replace(old_comment,
		'; then sets this session''s paimon_sink.commit_user and paimon_sink.writer_id (writer_id, the subtask index) as SET does, so that the session joins the commit user''s new fence epoch (a rollback of a transaction around the call reverts the settings, as it reverts a SET, but not the restore); returns one row',
		'; then makes the commit user a job''s (commit_user_state.epoch_required): from then on every write and every prepare_commit, commit and end_input for it must name the new fence epoch (write_as() in the writing transaction, the calls'' fence_epoch, or paimon_sink.fence_epoch on a direct connection), else 55000. It sets no session setting: through a pooler the session is not the job''s. Returns one row');
	old_comment := pg_catalog.replace(old_comment,
		' The job''s other subtasks'' sessions set their writer ids themselves (SET paimon_sink.commit_user joins the epoch).',
		' The job hands the fence epoch to its subtasks, which name it with their writer ids in each writing transaction (write_as()) and in their calls. Restored by commit user, not by writer id: what any writer id prepared up to the restored checkpoint is committed and what any staged or prepared after it is discarded, so the new attempt may run more or fewer subtasks than the failed one (key source positions by source partition, not by writer id). A sink group''s members get one epoch.');
	old_comment := pg_catalog.replace(old_comment,
		'a negative writer id, timeout or restored checkpoint id', 'a negative timeout or restored checkpoint id');
	DROP FUNCTION paimon_sink.restart_job(text, text, integer, integer, bigint);
	CREATE FUNCTION paimon_sink.restart_job(
		sink_name text, commit_user text, timeout_ms integer DEFAULT 30000,
		restored_checkpoint_id bigint DEFAULT NULL)
		RETURNS TABLE (checkpoint_id bigint, properties jsonb, snapshot_id bigint,
			committed_at timestamptz, recommitted_checkpoints integer,
			discarded_checkpoints integer, discarded_files integer, fence_epoch bigint)
		AS 'MODULE_PATHNAME', 'paimon_sink_restart_job' LANGUAGE C VOLATILE;
	EXECUTE pg_catalog.format('COMMENT ON FUNCTION paimon_sink.restart_job(text, text, integer, bigint) IS %L',
		old_comment);
	GRANT EXECUTE ON FUNCTION paimon_sink.restart_job(text, text, integer, bigint) TO PUBLIC;
END
$$;

-- A fenced writer (one that showed no progress for paimon_sink.handoff_timeout)
-- showed only as not ready, and only until its next process started: an
-- alert scraping every minute missed most fences.  writer_status() gains
-- fenced, fences (since the server started) and last_fenced_at.  A role
-- granted SELECT on the view writers by hand needs the grant again.
DROP VIEW paimon_sink.writers;
DROP FUNCTION paimon_sink.writer_status();
CREATE FUNCTION paimon_sink.writer_status(
	OUT writer integer, OUT pid integer, OUT ready boolean, OUT rows_staged bigint,
	OUT bytes_staged bigint, OUT files_open integer, OUT queues_in_use integer,
	OUT streams integer, OUT fsyncs bigint, OUT handoffs bigint, OUT fenced boolean,
	OUT fences bigint, OUT last_fenced_at timestamptz)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'paimon_sink_writer_status' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.writer_status() IS
$$One row per writer worker of this database: writer index, pid (NULL when not running), ready, rows and bytes staged since it started, staged files open, hand-off queues in use (its queue depth: transactions handing rows to it now), streams (sink, commit user, writer id, bucket) it holds, fsyncs of staged files, transactions whose rows it acknowledged since the server started; fenced (boolean: the committer fenced its process for showing no progress for paimon_sink.handoff_timeout, until the next process of the writer starts), fences (bigint: processes of this writer fenced since the server started) and last_fenced_at (timestamptz, NULL for none). Error: 55000 library not preloaded. Also 55000 while the extension's version is not the library's (see library_version()).$$;
CREATE VIEW paimon_sink.writers AS SELECT * FROM paimon_sink.writer_status();
COMMENT ON VIEW paimon_sink.writers IS 'Writer workers of this database: rows and bytes staged, files open, queues in use, streams, fsyncs, hand-offs, whether fenced now and how often since the server started.';
GRANT SELECT ON paimon_sink.writers TO PUBLIC;

-- Statistics per sink and commit user that survive a restart and a crash
-- (issue 34).  commit_stats' counters live in unlogged tables that the
-- committer writes a second after the commits, so a crash loses them.
-- These are columns of commit_user_state: the commit's own direct write
-- of the commit user's marks (metadata_heap.c) adds one to commits and the
-- snapshot's rows and bytes in the same row version, so they commit with
-- the snapshot, once, and a commit rolled back counts nothing.  Failures
-- and commit() calls that found their checkpoint committed change nothing
-- in a commit: the committer adds them in a small transaction of its own
-- before it answers the request.
ALTER TABLE paimon_sink.commit_user_state
	ADD COLUMN commits bigint NOT NULL DEFAULT 0,
	ADD COLUMN rows_committed bigint NOT NULL DEFAULT 0,
	ADD COLUMN bytes_committed bigint NOT NULL DEFAULT 0,
	ADD COLUMN failures bigint NOT NULL DEFAULT 0,
	ADD COLUMN skipped_as_committed bigint NOT NULL DEFAULT 0,
	ADD COLUMN stats_reset timestamptz NOT NULL DEFAULT pg_catalog.now();
COMMENT ON COLUMN paimon_sink.commit_user_state.commits IS
	'Snapshots the commit user made since stats_reset, counted in the commit''s own transaction (see the view sink_stats).';

-- The rows in writers' open files: written, not yet in any checkpoint.
-- Each writer publishes its own in a shared table (open_staged.c), so
-- they are lost with the server like a writer's memory, and counted again
-- from the files each writer adopts as it starts.
CREATE FUNCTION paimon_sink.open_staged(sink_id integer, commit_user text,
	OUT open_files bigint, OUT open_rows bigint, OUT open_bytes bigint,
	OUT oldest_open_at timestamptz)
	AS 'MODULE_PATHNAME', 'paimon_sink_open_staged' LANGUAGE C STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION paimon_sink.open_staged(integer, text) IS
$$What this database's writers hold for a sink (by sink_id) and commit user in their open staged files, written and not yet sealed into a checkpoint: one row of open_files, open_rows, open_bytes (bigint: files, rows, and bytes of batch records, headers and payloads) and oldest_open_at (timestamptz: when the oldest of them was staged; NULL when none is). Every column is NULL while the counts are not known whole: a writer not serving (starting, or adopting its files after a restart), or counts that did not fit paimon_sink.max_open_stats. Counts only, no row data. Errors: 55000 library not preloaded. Also 55000 while the extension's version is not the library's (see library_version()).$$;

-- reset_sink_stats() writes here, never into commit_user_state: the
-- counters there only grow, and a reset records what they were, which
-- sink_stats subtracts.  A reset in a transaction left open so holds no
-- lock that a commit of the commit user needs (it would stall the
-- database's committer, which serves every sink in turn).
CREATE TABLE paimon_sink.sink_stats_reset (
	sink_id integer NOT NULL,
	commit_user text NOT NULL,
	commits bigint NOT NULL,
	rows_committed bigint NOT NULL,
	bytes_committed bigint NOT NULL,
	failures bigint NOT NULL,
	skipped_as_committed bigint NOT NULL,
	stats_reset timestamptz NOT NULL,
	PRIMARY KEY (sink_id, commit_user)
);
COMMENT ON TABLE paimon_sink.sink_stats_reset IS
	'The counters of commit_user_state as they were at the last reset_sink_stats() of each (sink, commit user), and when; sink_stats shows the counters since. Removed with the sink by drop_sink.';
SELECT pg_catalog.pg_extension_config_dump('paimon_sink.sink_stats_reset', '');

CREATE VIEW paimon_sink.sink_stats AS
	SELECT s.sink_id, s.sink_name, u.commit_user,
		u.commits OPERATOR(pg_catalog.-) coalesce(r.commits, 0) AS commits,
		u.rows_committed OPERATOR(pg_catalog.-) coalesce(r.rows_committed, 0) AS rows_committed,
		u.bytes_committed OPERATOR(pg_catalog.-) coalesce(r.bytes_committed, 0) AS bytes_committed,
		u.failures OPERATOR(pg_catalog.-) coalesce(r.failures, 0) AS failures,
		u.skipped_as_committed OPERATOR(pg_catalog.-) coalesce(r.skipped_as_committed, 0)
			AS skipped_as_committed,
		u.last_committed_at AS last_commit_time,
		pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-) u.last_committed_at)
			AS seconds_since_last_commit,
		u.last_committed_checkpoint,
		p.pending_checkpoints, p.oldest_pending_checkpoint,
		p.oldest_pending_prepared_at,
		pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-) p.oldest_pending_prepared_at)
			AS oldest_pending_seconds,
		p.staged_files, p.staged_rows, p.staged_bytes,
		o.open_files, o.open_rows, o.open_bytes, o.oldest_open_at,
		pg_catalog.date_part('epoch', pg_catalog.now() OPERATOR(pg_catalog.-) o.oldest_open_at)
			AS oldest_open_seconds,
		l.load_ms_p50, l.load_ms_p99, l.load_ms_max, l.load_samples,
		coalesce(r.stats_reset, u.stats_reset) AS stats_reset
	FROM paimon_sink.commit_user_state u
	JOIN paimon_sink.sink_definition s ON s.sink_id OPERATOR(pg_catalog.=) u.sink_id
	LEFT JOIN paimon_sink.sink_stats_reset r ON r.sink_id OPERATOR(pg_catalog.=) u.sink_id
		AND r.commit_user OPERATOR(pg_catalog.=) u.commit_user
	CROSS JOIN LATERAL (
		SELECT pg_catalog.count(DISTINCT c.checkpoint_id) AS pending_checkpoints,
			pg_catalog.min(c.checkpoint_id) AS oldest_pending_checkpoint,
			pg_catalog.min(c.prepared_at) AS oldest_pending_prepared_at,
			pg_catalog.count(*) AS staged_files,
			coalesce(pg_catalog.sum(c.row_count), 0)::bigint AS staged_rows,
			coalesce(pg_catalog.sum(c.byte_count), 0)::bigint AS staged_bytes
		FROM paimon_sink.committable c
		WHERE c.sink_id OPERATOR(pg_catalog.=) u.sink_id
			AND c.commit_user OPERATOR(pg_catalog.=) u.commit_user
			AND c.snapshot_id IS NULL) p
	CROSS JOIN LATERAL (
		SELECT pg_catalog.percentile_cont(0.5) WITHIN GROUP (ORDER BY g.load_ms) AS load_ms_p50,
			pg_catalog.percentile_cont(0.99) WITHIN GROUP (ORDER BY g.load_ms) AS load_ms_p99,
			pg_catalog.max(g.load_ms) AS load_ms_max,
			pg_catalog.count(g.load_ms) AS load_samples
		FROM paimon_sink.snapshot_log g
		WHERE g.sink_id OPERATOR(pg_catalog.=) u.sink_id
			AND g.commit_user OPERATOR(pg_catalog.=) u.commit_user
			AND g.committed_at OPERATOR(pg_catalog.>=) coalesce(r.stats_reset, u.stats_reset)) l
	CROSS JOIN LATERAL paimon_sink.open_staged(u.sink_id, u.commit_user) o;
COMMENT ON VIEW paimon_sink.sink_stats IS
$$One row per sink and commit user, in the style of PostgreSQL's pg_stat_* views; the counters are kept in the catalog (commit_user_state), so they survive a clean restart and a crash; reset_sink_stats() records them as they were (sink_stats_reset), and the view shows them since (stats_reset). Columns: sink_id, sink_name, commit_user; commits (bigint: snapshots made, counted in the commit's own transaction: a commit rolled back counts nothing), rows_committed (bigint: rows applied), bytes_committed (bigint: staged bytes committed); failures (bigint: commit(), checkpoint(), end_input() and periodic checkpoints of the commit user that failed; a sink group's under each of its members, since the group commits them as one); skipped_as_committed (bigint: commit() calls that found their checkpoint already committed, answered newly_committed = false); last_commit_time (timestamptz: when the last commit recorded its snapshot, just before COMMIT PREPARED made it visible; kept across resets) and seconds_since_last_commit (double precision, NULL before the first); last_committed_checkpoint (bigint); pending_checkpoints (bigint: checkpoints prepared and not yet committed), oldest_pending_checkpoint (bigint), oldest_pending_prepared_at (timestamptz) and oldest_pending_seconds (double precision: its age; NULL when none is pending); staged_files, staged_rows, staged_bytes (bigint: the staged files recorded for those pending checkpoints, their rows and bytes); open_files, open_rows, open_bytes (bigint: what the writers hold in open staged files, written and not yet sealed into a checkpoint: batches of transactions that committed since the last checkpoint barrier, of those still running, and of those rolled back until the next barrier leaves them out; bytes of batch records, headers and payloads), oldest_open_at (timestamptz: when the oldest of them was staged, or, for files a writer adopted after a restart, when it adopted them; NULL when none is open) and oldest_open_seconds (double precision: its age); these four are counted in shared memory, not kept, and are NULL while not known whole (a writer starting or adopting its files after a restart, or counts that did not fit paimon_sink.max_open_stats, which a writer logs once); load_ms_p50, load_ms_p99, load_ms_max (double precision, milliseconds from a commit's start to its snapshot: the median, 99th percentile and maximum over the snapshots retained in snapshot_log since stats_reset; NULL without one) and load_samples (bigint: how many); stats_reset (timestamptz: when the counters last started from zero: the commit user's first prepare, the update to 0.2, or the last reset_sink_stats()). The counters go with pg_dump and pg_upgrade, as the rest of commit_user_state does. Readable by PUBLIC and pg_monitor: it shows no row data and no error text.$$;
GRANT SELECT ON paimon_sink.sink_stats TO PUBLIC;

CREATE FUNCTION paimon_sink.reset_sink_stats(sink_name text DEFAULT NULL) RETURNS bigint
	AS 'MODULE_PATHNAME', 'paimon_sink_reset_sink_stats' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.reset_sink_stats(text) IS
$$Sets the counters of the view sink_stats (commits, rows_committed, bytes_committed, failures, skipped_as_committed) to zero and stats_reset to now() for every commit user of the sink named (or of each member of the sink group named), or, with NULL (the default), of every sink the caller may reset; the load time percentiles then count only later snapshots. Transactional: a rollback keeps the counters. Returns the number of (sink, commit user) rows reset (bigint). Privileges: the sink's owner (or a member of it) and members of pg_monitor may reset a sink (PostgreSQL's own pg_stat_reset_* are superuser-only until granted; a monitoring role here may reset the counters it reads, as citus_stat_counters_reset allows); EXECUTE is granted to PUBLIC and the function checks the caller (a site that wants PostgreSQL's rule revokes it from PUBLIC and grants it to the roles it chooses). It records the counters as the caller's snapshot sees them (in sink_stats_reset) and locks nothing a commit needs: a commit in progress counts after the reset, and a reset in a transaction left open holds up no commit. Errors: 42704 neither a sink nor a sink group of that name; 42501 neither a member of the sink's (each member's) owner nor of pg_monitor. Also 55000 while the extension's version is not the library's (see library_version()).$$;
REVOKE ALL ON FUNCTION paimon_sink.reset_sink_stats(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION paimon_sink.reset_sink_stats(text) TO PUBLIC;

-- New columns of the target reach the writers (docs/schema-changes.md):
-- alter_sink adds them at the end of the sink's foreign table, so each
-- staged row's field count names the layout it was written in.
CREATE FUNCTION paimon_sink.alter_sink(sink_name text, OUT column_name text, OUT data_type text)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'paimon_sink_alter_sink' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.alter_sink(text) IS
$$Brings the sink's foreign table in line with its target, so that the columns added to the target since can be written through the sink: each column of the target that no staged column loads into and that is neither generated nor dropped is added at the end of the foreign table, with the target's type, type modifier, collation and default (none but a key's under partial_update), and recorded as the sink's layout in the same transaction; the default of each column staged so far is set to its target column's current one by the same rule (the utility hook does the same after an ALTER TABLE that sets or drops a default of the target). Returns one row (column_name text, data_type text) per column added, in the target's order; none when there is nothing to add. It never drops or retypes a column of the foreign table: a column dropped from the target since stays (its staged values are skipped at load), a widened one keeps its staged type (loads cast it). As Paimon's schema evolution (each data file keeps its schema id; the writer picks up the newest schema): each staged row keeps the layout it was written in (its number of fields: the layout only grows at its end), a commit loads rows of every layout, and a row of an older layout leaves the columns it does not have to the target: their default (or identity or generated value) when it inserts, the target's value when an upsert updates. Waits (up to lock_timeout) for the transactions writing into the sink to end: they finish in the layout they began with, and every session writes the new one from its next statement, without a restart; the commit users, their fence epochs and checkpoints are kept. Errors: 22004 NULL sink_name; 42704 unknown sink; 42501 not the sink's owner (or a member of it); 42P01 the sink's foreign table or target was dropped; 55P03 lock_timeout ended the wait; 40001 another alter_sink changed the sink meanwhile (call it again); 55000 the calling transaction wrote into the sink (commit it first: one transaction's rows have one layout; rows a rolled back savepoint took back do not count); 0A000 a column to add has a type without binary send or receive, as create_sink refuses it (nothing is added); 42701 the sink stages a column of that name already (a target column dropped and added again under its name, or the row kind). Privileges: EXECUTE is granted to PUBLIC; the function itself refuses (42501, its hint giving the GRANT to run) a caller that is not the sink's owner or a member of that role. Also 55000 while the extension's version is not the library's (see library_version()).$$;
REVOKE ALL ON FUNCTION paimon_sink.alter_sink(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION paimon_sink.alter_sink(text) TO PUBLIC;
COMMENT ON COLUMN paimon_sink.sink_definition.column_names IS
	'The layout rows are staged in (binary COPY): the foreign table''s columns, in order, made by create_sink. alter_sink adds columns only at its end, so a staged row''s number of fields names the layout it was written in (its first k columns); target_attnums grows with it.';
COMMENT ON COLUMN paimon_sink.sink_definition.column_types IS
	'The types of column_names, in order.';

-- pg_monitor (the role PostgreSQL gives monitoring tools) reads the views
-- that show no row data and no other role's error text, even where a site
-- revokes them from PUBLIC: commit_stats' last_failure and commit_progress'
-- gid stay NULL for a role that is not a member of the sink's owner; the
-- view rejects (refused rows) and the tables commit_failures (messages) and
-- rejected_row are not granted.  Last in the script: a view dropped and
-- created again after this would lose the grant.
GRANT SELECT ON paimon_sink.sinks, paimon_sink.snapshots, paimon_sink.pending_checkpoints,
	paimon_sink.in_doubt, paimon_sink.writers, paimon_sink.commit_stats,
	paimon_sink.commit_progress, paimon_sink.checkpoint_schedule, paimon_sink.sink_groups,
	paimon_sink.sink_stats
	TO pg_monitor;
