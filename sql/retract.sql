-- Row kinds as Paimon reads them: -U and -D are retractions; one that
-- carries the whole row retracts that row version (the newest earlier one
-- of its checkpoint, else the target's), never another version of the key,
-- as Flink's SinkUpsertMaterializer does; a key-only one deletes the key,
-- the latest version winning.  ignore_update_before and ignore_delete drop
-- them as they are written.
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;

-- The key-shift case (../shared/cases/key-shift-retractions.md): UPDATE t
-- SET id = id + 1 as a change stream with full before-images, in one
-- checkpoint, in both orders and both spellings: ids 2..1001 each with
-- v = 'v' || (id - 1).
CREATE TABLE shift (id int PRIMARY KEY, v text);
SELECT sink_name FROM paimon_sink.create_sink('shift_sink', 'shift', mode => 'upsert', buckets => 4);
SELECT sink_name, ignore_update_before, ignore_delete FROM paimon_sink.sinks WHERE sink_name = 'shift_sink';
CREATE FUNCTION shift_write(descending boolean, retract text, insert text) RETURNS void
LANGUAGE sql AS $$
	TRUNCATE shift;
	INSERT INTO shift SELECT g, 'v' || g FROM generate_series(1, 1000) g;
	INSERT INTO shift_sink (id, v, _row_kind)
		SELECT r.id, r.v, r.kind FROM generate_series(1, 1000) k,
			LATERAL (VALUES (k, 'v' || k, retract, 1), (k + 1, 'v' || k, insert, 2)) r(id, v, kind, o)
		ORDER BY CASE WHEN descending THEN -k ELSE k END, r.o;
$$;
CREATE VIEW shift_check AS
	SELECT count(s.id) AS rows,
		count(*) FILTER (WHERE s.id IS NULL OR g IS NULL OR s.v IS DISTINCT FROM 'v' || (g - 1)) AS wrong
	FROM generate_series(2, 1001) g FULL JOIN shift s ON s.id = g;
-- each round: write, checkpoint, check
SELECT format('SELECT shift_write(%L, %L, %L)', descending, retract, insert),
	'SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint(''shift_sink'')',
	format('SELECT %L AS round, * FROM shift_check',
		CASE WHEN descending THEN 'descending ' ELSE 'ascending ' END || retract || '/' || insert)
FROM (VALUES (false, '-D', '+I'), (true, '-D', '+I'), (false, '-U', '+U'), (true, '-U', '+U'))
	AS r(descending, retract, insert) \gexec
-- COPY names every column too
TRUNCATE shift;
INSERT INTO shift VALUES (1, 'v1'), (2, 'v2');
COPY shift_sink FROM stdin;
1	v1	-U
2	v1	+U
2	v2	-U
3	v2	+U
\.
SELECT checkpoint_id FROM paimon_sink.checkpoint('shift_sink');
SELECT * FROM shift ORDER BY id;

-- the same stream with key-only deletes: the order decides (latest wins)
TRUNCATE shift;
INSERT INTO shift VALUES (1, 'v1'), (2, 'v2'), (3, 'v3');
INSERT INTO shift_sink (id, v, _row_kind) VALUES
	(1, NULL, '-D'), (2, 'v1', '+I'), (2, NULL, '-D'), (3, 'v2', '+I'), (3, NULL, '-D'), (4, 'v3', '+I');
SELECT checkpoint_id FROM paimon_sink.checkpoint('shift_sink');
SELECT * FROM shift ORDER BY id;
-- a statement that leaves a non-key column out deletes by key
INSERT INTO shift_sink (id, _row_kind) VALUES (2, '-U'), (3, '-D');
SELECT checkpoint_id FROM paimon_sink.checkpoint('shift_sink');
SELECT * FROM shift ORDER BY id;

-- A retraction that matches no version deletes nothing: not the target's
-- row, not the checkpoint's latest version.
TRUNCATE shift;
INSERT INTO shift VALUES (1, 'a'), (2, 'b');
INSERT INTO shift_sink VALUES (1, 'not a', '-D'), (2, 'c', '+U'), (2, 'b?', '-U'), (3, 'x', '-D');
SELECT checkpoint_id FROM paimon_sink.checkpoint('shift_sink');
SELECT * FROM shift ORDER BY id;
-- it retracts the version it names: an upsert and its retraction leave the target's row
INSERT INTO shift_sink VALUES (1, 'new', '+I'), (1, 'new', '-D');
-- the target's version retracted, a later one stays
INSERT INTO shift_sink VALUES (2, 'd', '+U'), (2, 'c', '-U');
-- of two equal versions, one goes: the other stays
INSERT INTO shift_sink VALUES (3, 'y', '+I'), (3, 'y', '+I'), (3, 'y', '-D');
SELECT checkpoint_id FROM paimon_sink.checkpoint('shift_sink');
SELECT * FROM shift ORDER BY id;
-- every version retracted, newest first: the target's row goes
INSERT INTO shift_sink VALUES (4, 'p', '+I'), (4, 'q', '+U'), (4, 'q', '-U'), (4, 'p', '-U'), (3, 'y', '-D');
SELECT checkpoint_id FROM paimon_sink.checkpoint('shift_sink');
SELECT * FROM shift ORDER BY id;
-- a key-only delete between them deletes the target's row: a retraction after it finds none
INSERT INTO shift VALUES (5, 'e');
INSERT INTO shift_sink (id, v, _row_kind) VALUES (5, NULL, '-D'), (5, 'e', '+I'), (5, 'e', '-D'), (5, 'f', '-U');
SELECT checkpoint_id FROM paimon_sink.checkpoint('shift_sink');
SELECT * FROM shift ORDER BY id;

-- NULLs match NULLs; types without "=" compare by their text; a
-- nondeterministic collation's "=" decides
CREATE COLLATION retract_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false);
CREATE TABLE wide (id int PRIMARY KEY, a text, b int, doc json, name text COLLATE retract_ci);
SELECT sink_name FROM paimon_sink.create_sink('wide_sink', 'wide', mode => 'upsert', buckets => 2);
INSERT INTO wide VALUES (1, 'x', NULL, '{"k": 1}', 'Ann'), (2, NULL, 2, '{"k": 2}', 'Bob'),
	(3, 'z', 3, '{"k": 3}', 'Cy'), (4, 'w', 4, NULL, 'Di');
INSERT INTO wide_sink VALUES
	(1, 'x', NULL, '{"k": 1}', 'ann', '-D'),   -- NULL b, name equal under the collation: retracted
	(2, NULL, 2, '{"k":2}', 'Bob', '-D'),     -- another json text: kept
	(3, 'z', NULL, '{"k": 3}', 'Cy', '-D'),    -- b is 3, not NULL: kept
	(4, 'w', 4, NULL, 'Di', '-U');             -- retracted
SELECT checkpoint_id FROM paimon_sink.checkpoint('wide_sink');
SELECT * FROM wide ORDER BY id;

-- a target of key columns only: the key is the whole row
CREATE TABLE ids (id int PRIMARY KEY);
SELECT sink_name FROM paimon_sink.create_sink('ids_sink', 'ids', mode => 'upsert');
INSERT INTO ids SELECT generate_series(1, 5);
INSERT INTO ids_sink SELECT k + d, kind FROM generate_series(1, 5) k,
	LATERAL (VALUES (0, '-D', 1), (1, '+I', 2)) r(d, kind, o) ORDER BY k, o;
SELECT checkpoint_id FROM paimon_sink.checkpoint('ids_sink');
SELECT array_agg(id ORDER BY id) FROM ids;

-- ignore_update_before: -U rows are dropped as they are written (today's
-- behaviour), so the ascending key shift spelt -U/+U leaves the old rows
CREATE TABLE kept (id int PRIMARY KEY, v text);
SELECT sink_name FROM paimon_sink.create_sink('kept_sink', 'kept', mode => 'upsert',
	ignore_update_before => true);
INSERT INTO kept VALUES (1, 'v1'), (2, 'v2'), (3, 'v3');
INSERT INTO kept_sink VALUES (1, 'v1', '-U'), (2, 'v1', '+U'), (2, 'v2', '-U'), (3, 'v2', '+U'),
	(3, 'v3', '-U'), (4, 'v3', '+U');
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('kept_sink');
SELECT * FROM kept ORDER BY id;
-- its -D rows still retract
INSERT INTO kept_sink VALUES (1, 'v1', '-D'), (2, 'v2', '-D');
SELECT checkpoint_id FROM paimon_sink.checkpoint('kept_sink');
SELECT * FROM kept ORDER BY id;

-- ignore_delete: -D and -U rows are dropped (Paimon's ignore-delete)
CREATE TABLE undeleted (id int PRIMARY KEY, v text);
SELECT sink_name FROM paimon_sink.create_sink('undeleted_sink', 'undeleted', mode => 'upsert',
	ignore_delete => true);
SELECT ignore_update_before, ignore_delete FROM paimon_sink.sinks WHERE sink_name = 'undeleted_sink';
INSERT INTO undeleted VALUES (1, 'a'), (2, 'b');
INSERT INTO undeleted_sink VALUES (1, 'a', '-D'), (2, 'b', '-U'), (3, 'c', '+I');
INSERT INTO undeleted_sink (id, _row_kind) VALUES (1, '-D');
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('undeleted_sink');
SELECT * FROM undeleted ORDER BY id;

-- partial_update: a partial row names no version, so -U is ignored and -D
-- deletes the key, whatever it carries
CREATE TABLE partial (id int PRIMARY KEY, a text, b text);
SELECT sink_name FROM paimon_sink.create_sink('partial_sink', 'partial', mode => 'upsert',
	partial_update => true);
SELECT partial_update, ignore_update_before, ignore_delete FROM paimon_sink.sinks WHERE sink_name = 'partial_sink';
INSERT INTO partial VALUES (1, 'a', 'b'), (2, 'c', 'd');
INSERT INTO partial_sink VALUES (1, 'a', NULL, '-U'), (1, NULL, 'B', '+U'), (2, 'not c', 'd', '-D');
SELECT checkpoint_id FROM paimon_sink.checkpoint('partial_sink');
SELECT * FROM partial ORDER BY id;

-- refused options
SELECT * FROM paimon_sink.create_sink('bad_sink', 'partial', mode => 'upsert', partial_update => true,
	ignore_update_before => false);
SELECT * FROM paimon_sink.create_sink('bad_sink', 'partial', ignore_delete => true);
SELECT * FROM paimon_sink.create_sink('bad_sink', 'partial', ignore_update_before => true);

SELECT paimon_sink.drop_sink(s) FROM unnest(ARRAY['shift_sink', 'wide_sink', 'ids_sink', 'kept_sink',
	'undeleted_sink', 'partial_sink']) s;
DROP VIEW shift_check;
DROP FUNCTION shift_write(boolean, text, text);
DROP TABLE shift, wide, ids, kept, undeleted, partial;
DROP COLLATION retract_ci;
RESET ROLE;
