/* paimon_sink--0.1.sql: exactly-once transactional sink */

\echo Use "CREATE EXTENSION paimon_sink" to load this file. \quit

-- Catalog tables ----------------------------------------------------------

CREATE TABLE paimon_sink.sink_definition (
	sink_id serial PRIMARY KEY,
	sink_name text NOT NULL UNIQUE,
	target_table regclass NOT NULL,
	foreign_table regclass,
	owner_role regrole NOT NULL,
	mode text NOT NULL CHECK (mode IN ('append', 'upsert')),
	buckets integer NOT NULL CHECK (buckets BETWEEN 1 AND 1024),
	bucket_key text[],
	checkpoint_interval interval,
	default_commit_user text NOT NULL,
	-- never repeats, unlike sink_id after DROP EXTENSION: staged files carry it
	sink_uuid uuid NOT NULL DEFAULT gen_random_uuid(),
	-- the layout rows are staged in (binary COPY), fixed at create_sink
	column_names text[],
	column_types regtype[],
	-- upsert: the foreign table's column giving each row's kind (+I, -U, +U, -D)
	row_kind_column text,
	-- upsert: the target's primary key at create_sink; commits refuse another
	key_columns text[],
	-- upsert: a NULL column keeps the target's value (Paimon's partial-update)
	partial_update boolean NOT NULL DEFAULT false,
	created_at timestamptz NOT NULL DEFAULT now(),
	CHECK ((mode = 'upsert') = (row_kind_column IS NOT NULL AND key_columns IS NOT NULL)),
	CHECK (mode = 'upsert' OR NOT partial_update)
);
COMMENT ON TABLE paimon_sink.sink_definition IS
	'One row per sink: its target table, foreign table, owner, mode, buckets and own commit user.';

-- A commit user's marks: the last checkpoint id prepared and committed.
-- last_committed_checkpoint is the high-water mark that makes commits
-- idempotent (Paimon: the identifier of the commit user's latest snapshot).
CREATE TABLE paimon_sink.commit_user_state (
	sink_id integer NOT NULL REFERENCES paimon_sink.sink_definition ON DELETE CASCADE,
	commit_user text NOT NULL CHECK (commit_user ~ '^[A-Za-z0-9._:-]{1,64}$'),
	last_prepared_checkpoint bigint NOT NULL DEFAULT 0,
	last_committed_checkpoint bigint NOT NULL DEFAULT 0,
	last_snapshot_id bigint,
	last_committed_at timestamptz,
	fence_epoch bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (sink_id, commit_user)
);
COMMENT ON TABLE paimon_sink.commit_user_state IS
	'One row per (sink, commit user): last prepared and last committed checkpoint id and last snapshot id.';
COMMENT ON COLUMN paimon_sink.commit_user_state.fence_epoch IS
	'Raised by every recover() of the commit user (as Kafka raises a producer epoch): rows whose transaction began writing under an older epoch are left out of every later checkpoint, even when that transaction commits after recover().';

-- One staged file recorded for a checkpoint (Paimon: CommitMessage).
CREATE TABLE paimon_sink.committable (
	file_name text PRIMARY KEY,
	sink_id integer NOT NULL REFERENCES paimon_sink.sink_definition ON DELETE CASCADE,
	commit_user text NOT NULL,
	checkpoint_id bigint NOT NULL,
	writer_id integer NOT NULL,
	bucket integer NOT NULL,
	row_count bigint NOT NULL,
	byte_count bigint NOT NULL,
	excluded_offsets bigint[] NOT NULL DEFAULT '{}',
	-- the highest sequence number of its bucket the file holds (Paimon's
	-- DataFileMeta.maxSequenceNumber): a restarted writer continues above it
	max_sequence bigint NOT NULL DEFAULT 0,
	prepared_at timestamptz NOT NULL DEFAULT now(),
	snapshot_id bigint
);
CREATE INDEX committable_pending ON paimon_sink.committable
	(sink_id, commit_user, checkpoint_id) WHERE snapshot_id IS NULL;
COMMENT ON TABLE paimon_sink.committable IS
	'One row per sealed staged file: the checkpoint it belongs to, its rows and bytes, the batch offsets it leaves out, and the snapshot that committed it.';

-- The commit log: one row per committed checkpoint (Paimon: Snapshot).
CREATE TABLE paimon_sink.snapshot_log (
	sink_id integer NOT NULL REFERENCES paimon_sink.sink_definition ON DELETE CASCADE,
	snapshot_id bigint NOT NULL,
	commit_user text NOT NULL,
	commit_identifier bigint NOT NULL,
	commit_kind text NOT NULL,
	row_count bigint NOT NULL,
	file_count integer NOT NULL,
	committed_at timestamptz NOT NULL DEFAULT now(),
	byte_count bigint,
	-- milliseconds from the start of the commit to its snapshot (the load)
	load_ms double precision,
	PRIMARY KEY (sink_id, snapshot_id),
	UNIQUE (sink_id, commit_user, commit_identifier)
);
COMMENT ON TABLE paimon_sink.snapshot_log IS
	'One row per committed checkpoint; (sink, commit user, commit identifier) is unique.';

-- The highest sequence number of each bucket whose committables expired
-- with their snapshots: a restarted writer continues above it too.
CREATE TABLE paimon_sink.bucket_sequence (
	sink_id integer NOT NULL REFERENCES paimon_sink.sink_definition ON DELETE CASCADE,
	bucket integer NOT NULL,
	max_sequence bigint NOT NULL,
	PRIMARY KEY (sink_id, bucket)
);
COMMENT ON TABLE paimon_sink.bucket_sequence IS
	'Per (sink, bucket), the highest sequence number of committables removed by snapshot expiry.';

-- Counters of the committer per sink, since the server started (unlogged:
-- kept without a WAL flush per commit; a crash resets them, as it resets
-- PostgreSQL's own statistics).
CREATE UNLOGGED TABLE paimon_sink.commit_statistics (
	sink_id integer PRIMARY KEY REFERENCES paimon_sink.sink_definition ON DELETE CASCADE,
	commits bigint NOT NULL DEFAULT 0,
	skipped bigint NOT NULL DEFAULT 0,
	failures bigint NOT NULL DEFAULT 0,
	retries bigint NOT NULL DEFAULT 0,
	rows_committed bigint NOT NULL DEFAULT 0,
	bytes_committed bigint NOT NULL DEFAULT 0,
	last_commit_ms double precision,
	last_committed_at timestamptz,
	since timestamptz NOT NULL DEFAULT now()
);
CREATE UNLOGGED TABLE paimon_sink.commit_failures (
	sink_id integer NOT NULL REFERENCES paimon_sink.sink_definition ON DELETE CASCADE,
	sqlstate text NOT NULL,
	failures bigint NOT NULL,
	last_failed_at timestamptz NOT NULL,
	last_message text NOT NULL,
	PRIMARY KEY (sink_id, sqlstate)
);

-- Sinks dropped whose staged files the committer has still to remove.
CREATE TABLE paimon_sink.dropped_sink (
	sink_id integer PRIMARY KEY,
	dropped_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE paimon_sink.dropped_sink IS
	'Sinks dropped by committed transactions whose staged files the committer removes.';

-- Outcomes of maintenance requests the committer served, read once by the
-- requesting session.
CREATE UNLOGGED TABLE paimon_sink.maintenance_result (
	request_id bigint NOT NULL,
	file_name text NOT NULL,
	byte_count bigint NOT NULL,
	removed boolean NOT NULL
);

SELECT pg_catalog.pg_extension_config_dump('paimon_sink.sink_definition', '');
-- a restored database must not hand out a restored sink's id again
SELECT pg_catalog.pg_extension_config_dump('paimon_sink.sink_definition_sink_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('paimon_sink.commit_user_state', '');
SELECT pg_catalog.pg_extension_config_dump('paimon_sink.committable', '');
SELECT pg_catalog.pg_extension_config_dump('paimon_sink.snapshot_log', '');
SELECT pg_catalog.pg_extension_config_dump('paimon_sink.bucket_sequence', '');

GRANT USAGE ON SCHEMA paimon_sink TO PUBLIC;
GRANT SELECT ON paimon_sink.sink_definition, paimon_sink.commit_user_state,
	paimon_sink.committable, paimon_sink.snapshot_log, paimon_sink.dropped_sink,
	paimon_sink.bucket_sequence, paimon_sink.commit_statistics, paimon_sink.commit_failures
	TO PUBLIC;

-- Foreign-data wrapper ----------------------------------------------------

CREATE FUNCTION paimon_sink.fdw_handler() RETURNS fdw_handler
	AS 'MODULE_PATHNAME', 'paimon_sink_fdw_handler' LANGUAGE C STRICT;
CREATE FUNCTION paimon_sink.fdw_validator(text[], oid) RETURNS void
	AS 'MODULE_PATHNAME', 'paimon_sink_fdw_validator' LANGUAGE C STRICT;
CREATE FOREIGN DATA WRAPPER paimon_sink
	HANDLER paimon_sink.fdw_handler VALIDATOR paimon_sink.fdw_validator;
CREATE SERVER paimon_sink FOREIGN DATA WRAPPER paimon_sink;
COMMENT ON SERVER paimon_sink IS 'Server of every sink''s foreign table.';
-- create_sink creates the foreign table as its caller; INSERT on it is the
-- sink owner's to grant.
GRANT USAGE ON FOREIGN SERVER paimon_sink TO PUBLIC;

-- Functions ---------------------------------------------------------------

CREATE FUNCTION paimon_sink.create_sink(
	sink_name text,
	target regclass,
	mode text DEFAULT 'append',
	buckets integer DEFAULT 1,
	bucket_key text[] DEFAULT NULL,
	checkpoint_interval interval DEFAULT NULL,
	row_kind_column text DEFAULT '_row_kind',
	partial_update boolean DEFAULT false,
	OUT sink_name text, OUT foreign_table regclass, OUT commit_user text)
	AS 'MODULE_PATHNAME', 'paimon_sink_create_sink' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean) IS
$$Registers a sink writing into target (a table the caller may INSERT into), creates its foreign table (named sink_name, in the target's schema, owned by the caller) and its own commit user (a UUID); returns (sink_name text, foreign_table regclass, commit_user text). mode 'append' loads rows as they are; mode 'upsert' (Paimon's primary-key table with the deduplicate merge engine) needs a primary key on target (recorded: a commit refuses another) and the SELECT, UPDATE and DELETE rights too: its foreign table has one more text column, row_kind_column, taking +I or +U (upsert; also NULL), -U (ignored) or -D (delete: only the key columns count), and each checkpoint applies per key only the latest version; partial_update (upsert only) makes a NULL column keep the target's value (Paimon's partial-update merge engine). buckets (1-1024) and bucket_key (column names; for upsert, primary key columns, by default all of them) route rows to writers by a hash of their values; checkpoint_interval (positive; NULL takes paimon_sink.checkpoint_interval, whose 0 means none) makes the committer checkpoint the sink's own commit user that often, skipping empty intervals. Errors: 22023 bad name, mode, buckets, row_kind_column, or a bucket key outside the primary key; 42P16 upsert target without a primary key; 0A000 upsert target with a deferrable primary key or rules, or a bucket key type without a hash function when buckets > 1; 42809 target not a table; 42501 no INSERT (upsert: also SELECT, UPDATE, DELETE) right on target; 42703 unknown bucket key column; 42701 row_kind_column names a target column; 42710 sink exists; 55000 max_prepared_transactions = 0 or library not preloaded.$$;

CREATE FUNCTION paimon_sink.drop_sink(sink_name text, force boolean DEFAULT false)
	RETURNS void AS 'MODULE_PATHNAME', 'paimon_sink_drop_sink' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.drop_sink(text, boolean) IS
$$Drops a sink, its foreign table and its catalog rows; its staged files are removed after the transaction commits. Errors: 42704 unknown sink; 42501 caller is not the sink owner or a member; 55006 an in-doubt prepared transaction of the sink exists (never forced: the committer finishes it), or, without force, prepared checkpoints are not committed or writers hold rows of committed transactions that no checkpoint took yet; force discards them and removes every staged file.$$;

CREATE FUNCTION paimon_sink.prepare_commit(
	sink_name text, commit_user text, checkpoint_id bigint, writer_id integer DEFAULT NULL)
	RETURNS TABLE (checkpoint_id bigint, file_name text, writer_id integer, bucket integer,
		row_count bigint, byte_count bigint)
	AS 'MODULE_PATHNAME', 'paimon_sink_prepare_commit' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.prepare_commit(text, text, bigint, integer) IS
$$The barrier (Paimon prepareCommit, SeaTunnel SinkWriter.prepareCommit): seals the staged files of the commit user's streams (only writer_id's when given; NULL commit_user means the sink's own) and records their committables for checkpoint_id, in one transaction; returns the checkpoint's committables (checkpoint_id bigint, file_name text, writer_id integer, bucket integer, row_count bigint, byte_count bigint). A checkpoint holds the rows of transactions committed before the call. A retry with nothing written since returns the same committables. Not undone by a later rollback; refused in a transaction block. Errors: 42704 unknown sink; 42501 not the sink owner; 22023 invalid commit user, checkpoint id not above the last committed one, or below the last prepared one; 25001 inside a transaction block; 55000 max_prepared_transactions = 0, writers not running.$$;

CREATE FUNCTION paimon_sink.commit(sink_name text, commit_user text, checkpoint_id bigint)
	RETURNS TABLE (snapshot_id bigint, commit_user text, checkpoint_id bigint, row_count bigint,
		file_count integer, committed_at timestamptz, newly_committed boolean)
	AS 'MODULE_PATHNAME', 'paimon_sink_commit' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.commit(text, text, bigint) IS
$$Commits, in ascending order, every prepared checkpoint of the commit user with id <= checkpoint_id that is not committed yet, each as one snapshot inside PREPARE TRANSACTION / COMMIT PREPARED (Paimon CommitterOperator, SeaTunnel SinkCommitter.commit); returns the snapshots it made and the existing one of checkpoint_id (snapshot_id bigint, commit_user text, checkpoint_id bigint, row_count bigint, file_count integer, committed_at timestamptz, newly_committed boolean). Calling it again is harmless. Not undone by a later rollback of a caller (a DO block or function); refused in a transaction block. Errors: 42704 unknown sink; 42501 not the sink owner; 22023 invalid commit user; 25001 inside a transaction block; 55000 max_prepared_transactions = 0; 58P01 a staged file is missing; 23xxx a row does not fit the target (nothing applied, retry after fixing the target).$$;

CREATE FUNCTION paimon_sink.checkpoint(sink_name text)
	RETURNS TABLE (snapshot_id bigint, commit_user text, checkpoint_id bigint, row_count bigint,
		file_count integer, committed_at timestamptz, newly_committed boolean)
	AS 'MODULE_PATHNAME', 'paimon_sink_checkpoint' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.checkpoint(text) IS
$$For SQL users: prepare_commit and commit of the next checkpoint id of the sink's own commit user; returns the snapshots made (no row when nothing was written), in the shape of commit(). Errors as prepare_commit and commit.$$;

CREATE FUNCTION paimon_sink.last_committed_checkpoint(sink_name text, commit_user text)
	RETURNS bigint AS 'MODULE_PATHNAME', 'paimon_sink_last_committed_checkpoint' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.last_committed_checkpoint(text, text) IS
$$The commit user's high-water mark (bigint): the checkpoint id up to which everything is committed; 0 before its first commit, NULL for a commit user the sink has never seen. What a job asks before it advances its source or after a failed commit. Errors: 42704 unknown sink; 22023 invalid commit user.$$;

CREATE FUNCTION paimon_sink.writer_status(
	OUT writer integer, OUT pid integer, OUT ready boolean, OUT rows_staged bigint,
	OUT bytes_staged bigint, OUT files_open integer, OUT queues_in_use integer,
	OUT streams integer, OUT fsyncs bigint, OUT handoffs bigint)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'paimon_sink_writer_status' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.writer_status() IS
$$One row per writer worker of this database: writer index, pid (NULL when not running), ready, rows and bytes staged since it started, staged files open, hand-off queues in use (its queue depth: transactions handing rows to it now), streams (sink, commit user, writer id, bucket) it holds, fsyncs of staged files, and transactions whose rows it acknowledged since the server started. Error: 55000 library not preloaded.$$;

CREATE FUNCTION paimon_sink.commit_progress(
	OUT pid integer, OUT sink_id integer, OUT commit_user text, OUT checkpoint_id bigint,
	OUT phase text, OUT files_done integer, OUT files_total integer, OUT rows_done bigint,
	OUT rows_total bigint, OUT started_at timestamptz)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'paimon_sink_commit_progress' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.commit_progress() IS
$$The checkpoint this database's committer is committing now, if any (as pg_stat_progress_copy reports a COPY): committer pid, sink id, commit user, checkpoint id, phase (loading: reading staged files, for an append sink into the target; applying: an upsert sink's MERGE; preparing: PREPARE TRANSACTION and COMMIT PREPARED), staged files and rows read so far and in all, start time. Error: 55000 library not preloaded.$$;

CREATE FUNCTION paimon_sink.start_workers() RETURNS void
	AS 'MODULE_PATHNAME', 'paimon_sink_start_workers' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.start_workers() IS
$$Asks the launcher to run this database's committer and writers (CREATE EXTENSION calls it). Error: 55000 library not preloaded.$$;

CREATE FUNCTION paimon_sink.recover(
	sink_name text, commit_user text, restored_checkpoint_id bigint, mode text DEFAULT 'restore',
	OUT last_committed_checkpoint bigint, OUT recommitted_checkpoints integer,
	OUT discarded_checkpoints integer, OUT discarded_files integer)
	AS 'MODULE_PATHNAME', 'paimon_sink_recover' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.recover(text, text, bigint, text) IS
$$A job restoring from checkpoint restored_checkpoint_id (Paimon: restore + filterAndCommit): finishes in-doubt transactions, commits its prepared checkpoints up to that id, discards what the commit user staged or prepared after it (its source replays that; the files are removed), and fences the failed attempt: it raises the commit user's fence epoch (Kafka's producer epoch), so rows of transactions that began writing before the call are left out of every later checkpoint even when they commit afterwards, and sessions that wrote under the old epoch get 55000 on their next write until they set paimon_sink.commit_user again. Call it before the restored job writes. Returns (last_committed_checkpoint bigint, recommitted_checkpoints integer, discarded_checkpoints integer, discarded_files integer). mode 'restore' returns; 'restore_and_fail' raises 55000 after a re-commit so the job restarts, as Paimon does. Refused in a transaction block. Errors: 42704 unknown sink; 42501 not the sink owner; 22023 invalid commit user or mode, the sink's own commit user, or a stale restore (restored_checkpoint_id below the last committed checkpoint: nothing changes, nothing is doubled); 25001; 55000.$$;

CREATE FUNCTION paimon_sink.end_input(sink_name text, commit_user text)
	RETURNS TABLE (snapshot_id bigint, commit_user text, checkpoint_id bigint, row_count bigint,
		file_count integer, committed_at timestamptz, newly_committed boolean)
	AS 'MODULE_PATHNAME', 'paimon_sink_end_input' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.end_input(text, text) IS
$$Bounded input is over: prepares checkpoint 9223372036854775807 (Paimon's END_INPUT) for the commit user and commits it at once; returns the snapshots made, as commit(). A later prepare_commit of the commit user fails with 55000. Errors as prepare_commit and commit.$$;

CREATE FUNCTION paimon_sink.remove_orphan_files(
	sink_name text, older_than interval DEFAULT '1 day', dry_run boolean DEFAULT false)
	RETURNS TABLE (file_name text, byte_count bigint, removed boolean)
	AS 'MODULE_PATHNAME', 'paimon_sink_remove_orphan_files' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.remove_orphan_files(text, interval, boolean) IS
$$Removes (or with dry_run lists) the sink's staged files older than older_than that no writer holds and no prepared checkpoint records; returns (file_name text, byte_count bigint, removed boolean). Never touches a file of an open stream, a prepared checkpoint or an in-flight commit. Errors: 42704; 42501; 22023 negative older_than (a cut-off in the future); 25001.$$;

CREATE FUNCTION paimon_sink.expire_snapshots(
	sink_name text, retain_last integer DEFAULT 100, older_than interval DEFAULT '1 hour')
	RETURNS bigint AS 'MODULE_PATHNAME', 'paimon_sink_expire_snapshots' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.expire_snapshots(text, integer, interval) IS
$$Forgets the sink's snapshots (and their committables) beyond the newest retain_last that were committed more than older_than ago (Paimon's snapshot expiry by snapshot.num-retained and snapshot.time-retained); never the last snapshot of a commit user, and never a high-water mark: last_committed_checkpoint lives in commit_user_state. The committer does the same after every commit with paimon_sink.snapshots_retained and paimon_sink.snapshot_retention. Returns the number of snapshots expired (bigint). Errors: 42704 unknown sink; 42501 not the sink owner; 22023 retain_last below 1 or a negative older_than.$$;

CREATE FUNCTION paimon_sink.inject_fault(point text, action text, times integer DEFAULT 1)
	RETURNS void AS 'MODULE_PATHNAME', 'paimon_sink_inject_fault' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.inject_fault(text, text, integer) IS
$$For tests, superuser only: arms a fault-injection point for its next "times" hits (-1: every hit). action is error, fatal (the process ends), panic (the cluster crash-restarts), kill (the process gets SIGKILL) or pause (waits for release_fault). Points: see the view paimon_sink.faults. Errors: 42501 not a superuser; 22023 unknown point or action; 54000 too many points armed.$$;

CREATE FUNCTION paimon_sink.release_fault(point text) RETURNS void
	AS 'MODULE_PATHNAME', 'paimon_sink_release_fault' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.release_fault(text) IS
$$For tests, superuser only: lets a process paused at the point go on. Error: 42501.$$;

CREATE FUNCTION paimon_sink.clear_faults() RETURNS void
	AS 'MODULE_PATHNAME', 'paimon_sink_clear_faults' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.clear_faults() IS
$$For tests, superuser only: disarms every point and releases every pause. Error: 42501.$$;

CREATE FUNCTION paimon_sink.fault_status(
	OUT point text, OUT action text, OUT remaining integer, OUT hits integer, OUT paused_pid integer)
	RETURNS SETOF record AS 'MODULE_PATHNAME', 'paimon_sink_fault_status' LANGUAGE C VOLATILE;
COMMENT ON FUNCTION paimon_sink.fault_status() IS
$$One row per fault-injection point: its armed action (none when disarmed), hits left (-1: every hit), hits so far, and the pid paused there. Error: 55000 library not preloaded.$$;

REVOKE ALL ON FUNCTION paimon_sink.recover(text, text, bigint, text),
	paimon_sink.expire_snapshots(text, integer, interval),
	paimon_sink.end_input(text, text),
	paimon_sink.remove_orphan_files(text, interval, boolean),
	paimon_sink.inject_fault(text, text, integer),
	paimon_sink.release_fault(text),
	paimon_sink.clear_faults() FROM PUBLIC;

REVOKE ALL ON FUNCTION paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean),
	paimon_sink.drop_sink(text, boolean),
	paimon_sink.prepare_commit(text, text, bigint, integer),
	paimon_sink.commit(text, text, bigint),
	paimon_sink.checkpoint(text),
	paimon_sink.start_workers() FROM PUBLIC;

-- Views -------------------------------------------------------------------

CREATE VIEW paimon_sink.sinks AS
	SELECT s.sink_id, s.sink_name, s.target_table, s.foreign_table, s.owner_role, s.mode,
		s.buckets, s.bucket_key, s.row_kind_column, s.partial_update, s.checkpoint_interval,
		s.default_commit_user,
		u.last_prepared_checkpoint, u.last_committed_checkpoint, u.last_snapshot_id,
		u.last_committed_at, s.created_at
	FROM paimon_sink.sink_definition s
	LEFT JOIN paimon_sink.commit_user_state u
		ON u.sink_id = s.sink_id AND u.commit_user = s.default_commit_user;
COMMENT ON VIEW paimon_sink.sinks IS 'Sinks with the marks of their own commit user.';

CREATE VIEW paimon_sink.snapshots AS
	SELECT s.sink_name, l.snapshot_id, l.commit_user, l.commit_identifier, l.commit_kind,
		l.row_count, l.file_count, l.committed_at
	FROM paimon_sink.snapshot_log l JOIN paimon_sink.sink_definition s USING (sink_id);
COMMENT ON VIEW paimon_sink.snapshots IS 'The commit log: one row per committed checkpoint.';

CREATE VIEW paimon_sink.pending_checkpoints AS
	SELECT s.sink_name, c.commit_user, c.checkpoint_id, count(*) AS file_count,
		sum(c.row_count)::bigint AS row_count, sum(c.byte_count)::bigint AS byte_count,
		min(c.prepared_at) AS prepared_at, pg_catalog.now() - min(c.prepared_at) AS age
	FROM paimon_sink.committable c JOIN paimon_sink.sink_definition s USING (sink_id)
	WHERE c.snapshot_id IS NULL
	GROUP BY s.sink_name, c.commit_user, c.checkpoint_id;
COMMENT ON VIEW paimon_sink.pending_checkpoints IS 'Checkpoints prepared but not committed yet.';

CREATE VIEW paimon_sink.commit_stats AS
	SELECT s.sink_name,
		coalesce(c.commits, 0) AS commits,
		coalesce(c.skipped, 0) AS skipped_as_committed,
		coalesce(c.failures, 0) AS failures,
		(SELECT pg_catalog.jsonb_object_agg(f.sqlstate, f.failures) FROM paimon_sink.commit_failures f
		  WHERE f.sink_id = s.sink_id) AS failures_by_sqlstate,
		(SELECT f.last_message FROM paimon_sink.commit_failures f WHERE f.sink_id = s.sink_id
		  ORDER BY f.last_failed_at DESC LIMIT 1) AS last_failure,
		coalesce(c.retries, 0) AS retries,
		c.last_commit_ms,
		(SELECT pg_catalog.percentile_cont(0.99) WITHIN GROUP (ORDER BY l.load_ms)
		   FROM paimon_sink.snapshot_log l WHERE l.sink_id = s.sink_id) AS p99_load_ms,
		coalesce(c.rows_committed, 0) AS rows_committed,
		coalesce(c.bytes_committed, 0) AS bytes_committed,
		c.last_committed_at,
		c.since
	FROM paimon_sink.sink_definition s
	LEFT JOIN paimon_sink.commit_statistics c USING (sink_id);
COMMENT ON VIEW paimon_sink.commit_stats IS
	'Per sink, since the server started: commits (snapshots made), commit() calls that found their checkpoint already committed, failures by SQLSTATE and the last one, MERGE reruns, the last commit''s milliseconds and the 99th percentile of the retained snapshots'' load times, rows and staged bytes committed.';

CREATE VIEW paimon_sink.in_doubt AS
	SELECT p.gid, p.prepared, p.owner, s.sink_name,
		split_part(p.gid, ':', 4)::bigint AS checkpoint_id,
		substr(p.gid, length(array_to_string((string_to_array(p.gid, ':'))[1:4], ':')) + 2) AS commit_user
	FROM pg_catalog.pg_prepared_xacts p
	LEFT JOIN paimon_sink.sink_definition s ON s.sink_id = split_part(p.gid, ':', 3)::integer
	WHERE p.gid LIKE 'paimon_sink:%' AND p.database = current_database();
COMMENT ON VIEW paimon_sink.in_doubt IS
	'Prepared transactions of paimon_sink in this database that are not yet committed.';

CREATE VIEW paimon_sink.writers AS SELECT * FROM paimon_sink.writer_status();
COMMENT ON VIEW paimon_sink.writers IS 'Writer workers of this database: rows and bytes staged, files open, queues in use, streams, fsyncs, hand-offs.';

CREATE VIEW paimon_sink.commit_progress AS
	SELECT p.pid, s.sink_name, p.commit_user, p.checkpoint_id, p.phase, p.files_done,
		p.files_total, p.rows_done, p.rows_total, p.started_at
	FROM paimon_sink.commit_progress() p
	LEFT JOIN paimon_sink.sink_definition s USING (sink_id);
COMMENT ON VIEW paimon_sink.commit_progress IS 'The checkpoint being committed now: phase, staged files and rows read so far and in all.';

CREATE VIEW paimon_sink.faults AS SELECT * FROM paimon_sink.fault_status();
COMMENT ON VIEW paimon_sink.faults IS 'Fault-injection points (for tests): armed action, hits left and so far, paused process.';
GRANT SELECT ON paimon_sink.sinks, paimon_sink.snapshots, paimon_sink.pending_checkpoints,
	paimon_sink.commit_stats, paimon_sink.commit_progress,
	paimon_sink.in_doubt, paimon_sink.writers, paimon_sink.faults TO PUBLIC;

SELECT paimon_sink.start_workers();
