-- Append sinks: INSERT and COPY reach the target only through checkpoints.
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;
CREATE TABLE events (
	id bigserial PRIMARY KEY,
	payload text,
	amount numeric(10,2),
	created_at timestamptz DEFAULT now()
);
SELECT sink_name, foreign_table FROM paimon_sink.create_sink('events_sink', 'events');
\d events_sink
SELECT obj_description('events_sink'::regclass, 'pg_class');
SELECT sink_name, target_table, foreign_table, mode, buckets, last_committed_checkpoint
  FROM paimon_sink.sinks;

-- single-row, multi-row, INSERT ... SELECT and COPY
INSERT INTO events_sink (payload, amount) VALUES ('one', 1.5);
INSERT INTO events_sink (payload, amount) VALUES ('two', 2), ('three', 3);
INSERT INTO events_sink (payload, amount) SELECT 'bulk ' || g, g FROM generate_series(1, 1000) g;
COPY events_sink (payload, amount) FROM STDIN;
copied one	10
copied two	\N
\.
-- values that need escaping in the staged files survive unchanged
INSERT INTO events_sink (payload) VALUES (E'tab\there'), (E'line\nbreak'), (E'back\\slash'),
	(E'cr\rhere'), ('\N'), (''), (NULL), ('ünïcødé ✓');
-- RETURNING works
INSERT INTO events_sink (payload) VALUES ('returned') RETURNING payload;
-- nothing is visible before a checkpoint
SELECT count(*) FROM events;
SELECT checkpoint_id, row_count, file_count, newly_committed FROM paimon_sink.checkpoint('events_sink');
SELECT count(*) FROM events;
SELECT payload, amount FROM events WHERE payload NOT LIKE 'bulk %' ORDER BY id;
SELECT count(*), sum(amount) FROM events WHERE payload LIKE 'bulk %';
-- the defaults of the target were applied when the rows were inserted
SELECT count(*) FROM events WHERE id IS NULL OR created_at IS NULL;
-- a checkpoint with nothing written returns no row
SELECT checkpoint_id FROM paimon_sink.checkpoint('events_sink');

-- a session's client encoding never changes staged text: rows are staged in
-- the database encoding (a LATIN1 session once made the commit fail forever)
SELECT getdatabaseencoding();
SET client_encoding = 'LATIN1';
INSERT INTO events_sink (payload) VALUES (convert_from('\xc3a9c3a0c3bc'::bytea, 'UTF8'));
COPY events_sink (payload) FROM STDIN;
latin1 copy
\.
RESET client_encoding;
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('events_sink');
SELECT convert_to(payload, 'UTF8') FROM events
 WHERE payload IN (convert_from('\xc3a9c3a0c3bc'::bytea, 'UTF8'), 'latin1 copy') ORDER BY id;

-- rolled-back inserts never appear
BEGIN;
INSERT INTO events_sink (payload) VALUES ('rolled back');
ROLLBACK;
BEGIN;
INSERT INTO events_sink (payload) VALUES ('kept 1');
SAVEPOINT s1;
INSERT INTO events_sink (payload) VALUES ('rolled back to savepoint');
SAVEPOINT s2;
INSERT INTO events_sink (payload) VALUES ('rolled back nested');
ROLLBACK TO s1;
INSERT INTO events_sink (payload) VALUES ('kept 2');
SAVEPOINT s3;
INSERT INTO events_sink (payload) VALUES ('kept 3, released');
RELEASE s3;
COMMIT;
DO $$
BEGIN
	INSERT INTO events_sink (payload) VALUES ('kept 4');
	BEGIN
		INSERT INTO events_sink (payload) VALUES ('rolled back by exception');
		RAISE EXCEPTION 'undo';
	EXCEPTION WHEN raise_exception THEN
		NULL;
	END;
END $$;
SELECT checkpoint_id, row_count, newly_committed FROM paimon_sink.checkpoint('events_sink');
SELECT payload FROM events WHERE payload LIKE 'kept%' OR payload LIKE 'rolled%' ORDER BY id;

-- a job's commit user: prepare, then commit; commit twice applies once
SET paimon_sink.commit_user = 'job-1';
INSERT INTO events_sink (payload) VALUES ('job row 1'), ('job row 2');
SELECT checkpoint_id, writer_id, bucket, row_count FROM paimon_sink.prepare_commit('events_sink', 'job-1', 1);
-- prepared, not committed: staged, not visible
SELECT commit_user, checkpoint_id, file_count, row_count FROM paimon_sink.pending_checkpoints;
SELECT count(*) FROM events WHERE payload LIKE 'job row%';
-- a retry of the prepare with nothing written returns the same committables
SELECT checkpoint_id, writer_id, bucket, row_count FROM paimon_sink.prepare_commit('events_sink', 'job-1', 1);
SELECT snapshot_id AS first_snapshot, checkpoint_id, row_count, newly_committed
  FROM paimon_sink.commit('events_sink', 'job-1', 1) \gset
SELECT :checkpoint_id AS checkpoint_id, :row_count AS row_count, :'newly_committed' AS newly_committed;
SELECT snapshot_id = :first_snapshot AS same_snapshot, checkpoint_id, row_count, newly_committed
  FROM paimon_sink.commit('events_sink', 'job-1', 1);
SELECT count(*) FROM events WHERE payload LIKE 'job row%';
SELECT paimon_sink.last_committed_checkpoint('events_sink', 'job-1');
SELECT paimon_sink.last_committed_checkpoint('events_sink', 'never-seen');

-- commit(2) is lost; commit(3) commits 2 and 3, in order, as two snapshots
INSERT INTO events_sink (payload) VALUES ('job row 3');
SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('events_sink', 'job-1', 2);
INSERT INTO events_sink (payload) VALUES ('job row 4'), ('job row 5');
SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('events_sink', 'job-1', 3);
SELECT snapshot_id - :first_snapshot AS after_first, checkpoint_id, row_count, newly_committed
  FROM paimon_sink.commit('events_sink', 'job-1', 3);
SELECT commit_identifier, row_count FROM paimon_sink.snapshots
 WHERE commit_user = 'job-1' ORDER BY snapshot_id;
SELECT count(*) FROM events WHERE payload LIKE 'job row%';
-- nothing pending is left
SELECT count(*) FROM paimon_sink.pending_checkpoints;

-- writer ids: each subtask prepares its own stream; one commit takes all
SET paimon_sink.writer_id = 1;
INSERT INTO events_sink (payload) VALUES ('subtask 1');
SET paimon_sink.writer_id = 2;
INSERT INTO events_sink (payload) VALUES ('subtask 2a'), ('subtask 2b');
SELECT writer_id, row_count FROM paimon_sink.prepare_commit('events_sink', 'job-1', 4, 1);
SELECT writer_id, row_count FROM paimon_sink.prepare_commit('events_sink', 'job-1', 4, 2);
SELECT checkpoint_id, row_count, file_count FROM paimon_sink.commit('events_sink', 'job-1', 4);
RESET paimon_sink.writer_id;
RESET paimon_sink.commit_user;

-- the snapshot log is unique per (sink, commit user, identifier)
SELECT commit_user = 'job-1' AS job, count(*), count(DISTINCT commit_identifier)
  FROM paimon_sink.snapshots GROUP BY 1 ORDER BY 1;
SELECT count(*) FROM paimon_sink.in_doubt;
SELECT writer, pid IS NOT NULL AS running, ready FROM paimon_sink.writers ORDER BY writer;
-- what the writers did: rows, bytes, acknowledged hand-offs, fsyncs, streams
-- (a writer fsyncs as its sync window closes, not at a barrier: wait for one)
DO $$
BEGIN
	FOR i IN 1..300 LOOP
		EXIT WHEN (SELECT sum(fsyncs) FROM paimon_sink.writers) > 0;
		PERFORM pg_sleep(0.1);
	END LOOP;
END
$$;
SELECT sum(rows_staged) >= 1000 AS rows, sum(bytes_staged) > 0 AS bytes,
	sum(handoffs) > 0 AS handoffs, sum(fsyncs) > 0 AS synced,
	sum(streams) > 0 AS streams, sum(queues_in_use) AS queues
  FROM paimon_sink.writers;

-- a partitioned target and a bucket key spread over writers
CREATE TABLE measurements (sensor int, reading int) PARTITION BY RANGE (sensor);
CREATE TABLE measurements_low PARTITION OF measurements FOR VALUES FROM (0) TO (50);
CREATE TABLE measurements_high PARTITION OF measurements FOR VALUES FROM (50) TO (100);
SELECT sink_name FROM paimon_sink.create_sink('measurements_sink', 'measurements', buckets => 4, bucket_key => '{sensor}');
INSERT INTO measurements_sink SELECT g % 100, g FROM generate_series(1, 400) g;
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('measurements_sink');
SELECT count(*) FROM measurements_low;
SELECT count(*) FROM measurements_high;
SELECT count(DISTINCT bucket) AS buckets_used FROM paimon_sink.committable
 WHERE sink_id = (SELECT sink_id FROM paimon_sink.sinks WHERE sink_name = 'measurements_sink');

-- drop_sink removes the sink and its foreign table, keeps the target's rows
SELECT paimon_sink.drop_sink('measurements_sink');
SELECT count(*) FROM paimon_sink.sinks WHERE sink_name = 'measurements_sink';
SELECT to_regclass('measurements_sink');
SELECT count(*) FROM measurements;
-- a transaction larger than paimon_sink.handoff_buffer_size streams its rows
-- to the writers (inside a savepoint: to a temporary file); savepoints still
-- undo exactly what they wrote
SET paimon_sink.handoff_buffer_size = '64kB';
BEGIN;
INSERT INTO events_sink (payload) SELECT 'spilled ' || g FROM generate_series(1, 20000) g;
SAVEPOINT big;
INSERT INTO events_sink (payload) SELECT 'spilled, rolled back ' || g FROM generate_series(1, 20000) g;
ROLLBACK TO big;
INSERT INTO events_sink (payload) SELECT 'spilled after ' || g FROM generate_series(1, 5000) g;
COMMIT;
RESET paimon_sink.handoff_buffer_size;
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('events_sink');
SELECT count(*) FILTER (WHERE payload LIKE 'spilled after %') AS after,
	count(*) FILTER (WHERE payload LIKE 'spilled, rolled back %') AS rolled_back,
	count(*) FILTER (WHERE payload ~ '^spilled [0-9]+$') AS spilled,
	count(DISTINCT payload) FILTER (WHERE payload LIKE 'spilled%') AS distinct_payloads
  FROM events;
-- values do not depend on the inserting session's settings (rows are staged
-- with the types' binary send functions)
CREATE TABLE settings_target (id int, d date, f float8, i interval, ts timestamptz, rc regclass);
RESET ROLE;
CREATE SCHEMA other_schema AUTHORIZATION regress_sink_owner;
SET ROLE regress_sink_owner;
CREATE TABLE other_schema.events (x int);
SELECT sink_name FROM paimon_sink.create_sink('settings_sink', 'settings_target');
BEGIN;
SET LOCAL DateStyle = 'Postgres, DMY';
SET LOCAL extra_float_digits = 0;
SET LOCAL IntervalStyle = 'sql_standard';
SET LOCAL TimeZone = 'Asia/Kolkata';
SET LOCAL search_path = other_schema, public;
INSERT INTO settings_sink VALUES (1, '2024-01-02', 0.30000000000000004, '-1 days -02:03:04',
	'2024-06-01 12:00:00+00', 'events');
INSERT INTO settings_sink VALUES (2, '31/12/1999', 1.7976931348623157e308, '1 year 2 mons', 'infinity', NULL);
COMMIT;
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('settings_sink');
SET TimeZone = 'UTC';
SELECT id, d, f::text, i, ts, rc FROM settings_target ORDER BY id;
SELECT rc = 'other_schema.events'::regclass AS resolved_where_inserted FROM settings_target WHERE id = 1;
RESET TimeZone;
RESET ROLE;
