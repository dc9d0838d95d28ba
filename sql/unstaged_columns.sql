-- Write-time checks cover only what the sink carries.  A target column the
-- sink does not stage (added after create_sink) is the load's to fill: its
-- default, identity or generated value.  NOT NULL is checked when a row is
-- written only for columns whose value comes from the row (a staged column,
-- or one generated from staged columns); a CHECK constraint only when every
-- column it reads comes from the row.  The rest is the commit's.
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;

-- each mode: a NOT NULL column with a default added after create_sink
CREATE TABLE grown_append (id int PRIMARY KEY, v int NOT NULL CHECK (v > 0));
CREATE TABLE grown_upsert (id int PRIMARY KEY, v int NOT NULL CHECK (v > 0));
CREATE TABLE grown_partial (id int PRIMARY KEY, v int NOT NULL CHECK (v > 0));
CREATE TABLE grown_overwrite (id int PRIMARY KEY, v int NOT NULL CHECK (v > 0));
INSERT INTO grown_partial VALUES (1, 1);
INSERT INTO grown_overwrite VALUES (99, 1);
SELECT sink_name FROM paimon_sink.create_sink('grown_append_sink', 'grown_append');
SELECT sink_name FROM paimon_sink.create_sink('grown_upsert_sink', 'grown_upsert', mode => 'upsert');
SELECT sink_name FROM paimon_sink.create_sink('grown_partial_sink', 'grown_partial',
  mode => 'upsert', partial_update => true);
SELECT sink_name FROM paimon_sink.create_sink('grown_overwrite_sink', 'grown_overwrite',
  mode => 'overwrite');
ALTER TABLE grown_append ADD COLUMN c text NOT NULL DEFAULT 'x';
ALTER TABLE grown_upsert ADD COLUMN c text NOT NULL DEFAULT 'x';
ALTER TABLE grown_partial ADD COLUMN c text NOT NULL DEFAULT 'x';
ALTER TABLE grown_overwrite ADD COLUMN c text NOT NULL DEFAULT 'x';
INSERT INTO grown_append_sink VALUES (1, 5);
INSERT INTO grown_upsert_sink (id, v) VALUES (1, 5);
INSERT INTO grown_partial_sink (id, v) VALUES (1, 5), (2, 6);
INSERT INTO grown_overwrite_sink VALUES (1, 5);
COPY grown_append_sink FROM STDIN;
2	6
\.
-- what the row gives is still checked, in every mode but partial_update
-- (whose NULL keeps the target's value: its commit decides)
INSERT INTO grown_append_sink VALUES (3, NULL);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO grown_append_sink VALUES (3, 0);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO grown_upsert_sink (id, v) VALUES (3, NULL);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO grown_overwrite_sink VALUES (3, 0);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO grown_partial_sink (id) VALUES (1);
SELECT row_count FROM paimon_sink.checkpoint('grown_append_sink');
SELECT row_count FROM paimon_sink.checkpoint('grown_upsert_sink');
SELECT row_count FROM paimon_sink.checkpoint('grown_partial_sink');
SELECT row_count FROM paimon_sink.checkpoint('grown_overwrite_sink');
SELECT * FROM grown_append ORDER BY id;
SELECT * FROM grown_upsert ORDER BY id;
SELECT * FROM grown_partial ORDER BY id;
SELECT * FROM grown_overwrite ORDER BY id;

-- identity, generated and constrained columns the sink does not stage
ALTER TABLE grown_append ADD COLUMN n int GENERATED ALWAYS AS IDENTITY;
ALTER TABLE grown_append ADD COLUMN d int NOT NULL DEFAULT 7 CHECK (d > 0);
-- reads a staged and an unstaged column: the commit's
ALTER TABLE grown_append ADD CONSTRAINT v_below_d CHECK (v < d);
-- generated from staged columns: from the row, checked when written
ALTER TABLE grown_append ADD COLUMN g int GENERATED ALWAYS AS (v * 2) STORED CHECK (g < 100);
-- generated from an unstaged column: the commit's, and not computed before
-- it (with d NULL, as it is when written, it would divide by zero)
ALTER TABLE grown_append ADD COLUMN h int GENERATED ALWAYS AS (100 / coalesce(d, 0)) STORED
  NOT NULL CHECK (h > v);
-- a column dropped again leaves nothing behind
ALTER TABLE grown_append ADD COLUMN z text NOT NULL DEFAULT 'z';
ALTER TABLE grown_append DROP COLUMN z;
INSERT INTO grown_append_sink VALUES (4, 6);
INSERT INTO grown_append_sink VALUES (5, 0);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO grown_append_sink VALUES (5, 60);
\echo :LAST_ERROR_SQLSTATE
SELECT row_count FROM paimon_sink.checkpoint('grown_append_sink');
-- a row that passes what it decides but not what the load fills fails the
-- commit, as a constraint added after staging does (on_error decides)
INSERT INTO grown_append_sink VALUES (6, 8);
SELECT row_count FROM paimon_sink.checkpoint('grown_append_sink');
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE grown_append DROP CONSTRAINT v_below_d;
SELECT row_count FROM paimon_sink.checkpoint('grown_append_sink');
-- (n: the sequence's values, which failed commits used too)
SELECT id, v, c, n IS NOT NULL AS n_given, d, g, h FROM grown_append ORDER BY id;

-- an upsert sink's update leaves a column it does not stage as it was
ALTER TABLE grown_upsert ADD COLUMN d int NOT NULL DEFAULT 7 CHECK (d > 0);
ALTER TABLE grown_upsert ADD CONSTRAINT v_below_d CHECK (v < d);
UPDATE grown_upsert SET c = 'kept', d = 9 WHERE id = 1;
INSERT INTO grown_upsert_sink (id, v) VALUES (1, 8), (4, 4);
SELECT row_count FROM paimon_sink.checkpoint('grown_upsert_sink');
SELECT * FROM grown_upsert ORDER BY id;

-- a staged column dropped and added again under its name is another column:
-- a load follows the staged one by its attribute number and skips its values
-- (a WARNING in the server log), and the new one takes its own value: the
-- generated one its expression, the plain one NULL
CREATE TABLE regen (id int, g int);
SELECT sink_name FROM paimon_sink.create_sink('regen_sink', 'regen');
INSERT INTO regen_sink VALUES (1, 10);
ALTER TABLE regen DROP COLUMN g;
ALTER TABLE regen ADD COLUMN g int GENERATED ALWAYS AS (id * 2) STORED;
INSERT INTO regen_sink VALUES (2, 20);
SELECT row_count FROM paimon_sink.checkpoint('regen_sink');
SELECT * FROM regen ORDER BY id;
ALTER TABLE regen DROP COLUMN g;
ALTER TABLE regen ADD COLUMN g int;
INSERT INTO regen_sink VALUES (3, 30);
SELECT row_count FROM paimon_sink.checkpoint('regen_sink');
SELECT * FROM regen ORDER BY id;
SELECT paimon_sink.drop_sink('regen_sink');
DROP TABLE regen;

-- a BEFORE ROW trigger of the target may change any value before the load
-- checks it: then the row decides no NOT NULL, CHECK or generated column,
-- and a row the trigger mends is taken (an upsert sink's MERGE also fires
-- those on UPDATE); a disabled trigger fires at no load
CREATE TABLE mended (id int PRIMARY KEY, v text NOT NULL, n int CHECK (n > 0),
  g int GENERATED ALWAYS AS (n * 2) STORED CHECK (g > 0));
CREATE FUNCTION mend() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.v := coalesce(NEW.v, 'mended');
	NEW.n := greatest(coalesce(NEW.n, 1), 1);
	RETURN NEW;
END
$$;
CREATE TRIGGER mend BEFORE INSERT ON mended FOR EACH ROW EXECUTE FUNCTION mend();
SELECT sink_name FROM paimon_sink.create_sink('mended_sink', 'mended');
INSERT INTO mended_sink (id) VALUES (1);
INSERT INTO mended_sink VALUES (2, 'given', -5);
SELECT row_count FROM paimon_sink.checkpoint('mended_sink');
SELECT * FROM mended ORDER BY id;
ALTER TABLE mended DISABLE TRIGGER mend;
INSERT INTO mended_sink (id) VALUES (3);
\echo :LAST_ERROR_SQLSTATE
-- nor does one for replicas only: the committer loads as origin
ALTER TABLE mended ENABLE REPLICA TRIGGER mend;
INSERT INTO mended_sink (id) VALUES (3);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO mended_sink VALUES (3, 'given', -5);
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE mended_upsert (id int PRIMARY KEY, v text NOT NULL);
INSERT INTO mended_upsert VALUES (1, 'kept');
CREATE FUNCTION keep_v() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	NEW.v := coalesce(NEW.v, OLD.v);
	RETURN NEW;
END
$$;
CREATE TRIGGER keep_v BEFORE UPDATE ON mended_upsert FOR EACH ROW EXECUTE FUNCTION keep_v();
SELECT sink_name FROM paimon_sink.create_sink('mended_upsert_sink', 'mended_upsert',
  mode => 'upsert');
INSERT INTO mended_upsert_sink (id, v) VALUES (1, NULL);
SELECT row_count FROM paimon_sink.checkpoint('mended_upsert_sink');
SELECT * FROM mended_upsert ORDER BY id;
SELECT paimon_sink.drop_sink('mended_sink');
SELECT paimon_sink.drop_sink('mended_upsert_sink');
DROP TABLE mended, mended_upsert;
DROP FUNCTION mend(), keep_v();

SELECT paimon_sink.drop_sink('grown_append_sink');
SELECT paimon_sink.drop_sink('grown_upsert_sink');
SELECT paimon_sink.drop_sink('grown_partial_sink');
SELECT paimon_sink.drop_sink('grown_overwrite_sink');
DROP TABLE grown_append, grown_upsert, grown_partial, grown_overwrite;
RESET ROLE;
-- what a sink could not follow is refused as it is made: an upsert sink's
-- key column dropped (2BP01), a NOT NULL column without a default added
-- (55000); with a default it is added
CREATE TABLE keyed (id int PRIMARY KEY, v int);
SELECT sink_name FROM paimon_sink.create_sink('keyed_sink', 'keyed', mode => 'upsert');
ALTER TABLE keyed DROP COLUMN id;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE keyed ADD COLUMN w int NOT NULL;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE keyed ADD COLUMN w int NOT NULL DEFAULT 0;
SELECT paimon_sink.drop_sink('keyed_sink');
DROP TABLE keyed;
