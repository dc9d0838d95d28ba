-- Every way rows reach a sink's foreign table gets the checks of a direct
-- INSERT (the target's constraints, the commit user), or a clear 0A000:
-- partition routing, COPY into a routing parent, triggers, views and rules.
-- ON CONFLICT is refused wherever it comes from: a conflict is only known
-- when the checkpoint commits, and would fail every commit from then on.
-- (postgres_fdw from another database: TAP 050.)
\set SHOW_CONTEXT never
-- the wrapper says what it takes and refuses
SELECT obj_description(oid, 'pg_foreign_data_wrapper') ~ 'ON CONFLICT.*HV00R' AS documented
  FROM pg_foreign_data_wrapper WHERE fdwname = 'paimon_sink';
SET ROLE regress_sink_owner;
CREATE TABLE routed (k int PRIMARY KEY, v text NOT NULL CHECK (v <> ''));
SELECT sink_name FROM paimon_sink.create_sink('routed_sink', 'routed');
CREATE TABLE router (k int, v text) PARTITION BY RANGE (k);
CREATE TABLE router_low PARTITION OF router FOR VALUES FROM (0) TO (100);
ALTER TABLE router ATTACH PARTITION routed_sink FOR VALUES FROM (100) TO (1000);
INSERT INTO routed VALUES (150, 'committed before');

-- ON CONFLICT routed into the sink is refused as the direct statement is
INSERT INTO routed_sink VALUES (150, 'again') ON CONFLICT DO NOTHING;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO router VALUES (150, 'again') ON CONFLICT DO NOTHING;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO router VALUES (5, 'low'), (160, 'routed') ON CONFLICT DO NOTHING;
\echo :LAST_ERROR_SQLSTATE
-- rows that stay in a local partition still may
INSERT INTO router VALUES (5, 'low') ON CONFLICT DO NOTHING;

-- routed rows meet the target's constraints as direct ones do
INSERT INTO router VALUES (151, NULL);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO router VALUES (151, '');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO router VALUES (151, 'routed'), (6, 'low');

-- COPY into the routing parent: the same checks
COPY router FROM STDIN;
152	copied
7	copied low
\.
COPY router FROM STDIN;
153	
\.
\echo :LAST_ERROR_SQLSTATE

-- an UPDATE that would move a row into the sink is refused: the row would
-- leave its partition now and reach the target only at a checkpoint
UPDATE router SET k = 170 WHERE k = 5;
\echo :LAST_ERROR_SQLSTATE
-- MERGE, refused by PostgreSQL on a foreign table, is refused when routed
MERGE INTO router r USING (VALUES (180, 'merged')) s (k, v) ON r.k = s.k AND r.k < 100
  WHEN NOT MATCHED THEN INSERT VALUES (s.k, s.v);
\echo :LAST_ERROR_SQLSTATE
MERGE INTO router r USING (VALUES (6)) s (k) ON r.k = s.k AND r.k < 100
  WHEN MATCHED THEN UPDATE SET k = 181;
\echo :LAST_ERROR_SQLSTATE
SELECT k, v FROM router_low ORDER BY k;

-- a trigger of another table that writes into the sink
CREATE TABLE inbox (k int, v text);
CREATE FUNCTION inbox_to_sink() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO routed_sink VALUES (NEW.k, NEW.v);
	RETURN NULL;
END $$;
CREATE TRIGGER inbox_to_sink BEFORE INSERT ON inbox FOR EACH ROW EXECUTE FUNCTION inbox_to_sink();
INSERT INTO inbox VALUES (154, 'by trigger');
INSERT INTO inbox VALUES (155, NULL);
\echo :LAST_ERROR_SQLSTATE

-- views: one updatable by itself, one with an INSTEAD rule, one with an
-- INSTEAD OF trigger
CREATE VIEW routed_view AS SELECT k, v FROM routed_sink;
INSERT INTO routed_view VALUES (156, 'through a view');
INSERT INTO routed_view VALUES (157, 'x') ON CONFLICT DO NOTHING;
\echo :LAST_ERROR_SQLSTATE
INSERT INTO routed_view VALUES (157, '');
\echo :LAST_ERROR_SQLSTATE
CREATE VIEW ruled AS SELECT 0 AS k, ''::text AS v;
CREATE RULE ruled_insert AS ON INSERT TO ruled DO INSTEAD
  INSERT INTO routed_sink VALUES (NEW.k, NEW.v);
INSERT INTO ruled VALUES (158, 'by rule');
INSERT INTO ruled VALUES (159, NULL);
\echo :LAST_ERROR_SQLSTATE
CREATE OR REPLACE RULE ruled_insert AS ON INSERT TO ruled DO INSTEAD
  INSERT INTO routed_sink VALUES (NEW.k, NEW.v) ON CONFLICT DO NOTHING;
INSERT INTO ruled VALUES (159, 'by rule');
\echo :LAST_ERROR_SQLSTATE
CREATE VIEW triggered AS SELECT 0 AS k, ''::text AS v;
CREATE TRIGGER triggered_insert INSTEAD OF INSERT ON triggered
  FOR EACH ROW EXECUTE FUNCTION inbox_to_sink();
INSERT INTO triggered VALUES (160, 'by instead-of trigger');
INSERT INTO triggered VALUES (161, '');
\echo :LAST_ERROR_SQLSTATE

-- the checkpoint commits exactly the rows accepted, and fails on none
SELECT row_count FROM paimon_sink.checkpoint('routed_sink');
SELECT k, v FROM routed ORDER BY k;
SELECT k, v FROM router_low ORDER BY k;

-- the commit user is checked on every way in: one whose input has ended
-- takes no rows, routed or copied
SET paimon_sink.commit_user = 'ended-job';
SELECT count(*) FROM paimon_sink.end_input('routed_sink', 'ended-job');
INSERT INTO router VALUES (162, 'after the end');
\echo :LAST_ERROR_SQLSTATE
COPY router FROM STDIN;
163	after the end
\.
\echo :LAST_ERROR_SQLSTATE
INSERT INTO inbox VALUES (164, 'after the end');
\echo :LAST_ERROR_SQLSTATE
RESET paimon_sink.commit_user;
DROP VIEW routed_view, ruled, triggered;
DROP TABLE inbox;
DROP FUNCTION inbox_to_sink();
SELECT paimon_sink.drop_sink('routed_sink');
DROP TABLE router, routed;

-- another role's foreign table on server paimon_sink naming this sink's id
-- (the server's USAGE is PUBLIC's) is no way in: only the foreign table
-- create_sink made is the sink's
CREATE TABLE victim (k int, v text);
SELECT sink_name FROM paimon_sink.create_sink('victim_sink', 'victim');
SELECT sink_id AS victim_id FROM paimon_sink.sink_definition WHERE sink_name = 'victim_sink' \gset
RESET ROLE;
CREATE SCHEMA hostile AUTHORIZATION regress_sink_other;
SET ROLE regress_sink_other;
CREATE FOREIGN TABLE hostile.hijack (k int, v text) SERVER paimon_sink OPTIONS (sink_id :'victim_id');
INSERT INTO hostile.hijack VALUES (1, 'hijacked');
\echo :LAST_ERROR_SQLSTATE
COPY hostile.hijack FROM STDIN;
2	hijacked
\.
\echo :LAST_ERROR_SQLSTATE
-- its own sink's foreign table cannot be pointed at the victim's id (0A000):
-- its rows stay its own sink's
CREATE TABLE hostile.own (k int, v text);
SELECT sink_name FROM paimon_sink.create_sink('own_sink', 'hostile.own');
SELECT sink_id AS own_id FROM paimon_sink.sink_definition WHERE sink_name = 'own_sink' \gset
ALTER FOREIGN TABLE hostile.own_sink OPTIONS (SET sink_id :'victim_id');
INSERT INTO hostile.own_sink VALUES (3, 'hijacked');
\echo :LAST_ERROR_SQLSTATE
-- a routing table of its own with the hijacking table as a partition
CREATE TABLE hostile.router (k int, v text) PARTITION BY RANGE (k);
ALTER TABLE hostile.router ATTACH PARTITION hostile.hijack FOR VALUES FROM (0) TO (100);
INSERT INTO hostile.router VALUES (4, 'hijacked');
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE hostile.own_sink OPTIONS (SET sink_id '-1');
INSERT INTO hostile.own_sink VALUES (5, 'hijacked');
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE hostile.own_sink OPTIONS (SET sink_id :'own_id');
INSERT INTO hostile.own_sink VALUES (6, 'own row');
SELECT row_count FROM paimon_sink.checkpoint('own_sink');
SELECT paimon_sink.drop_sink('own_sink');
RESET ROLE;
-- the victim's sink got nothing, and still takes its owner's rows
SET ROLE regress_sink_owner;
INSERT INTO victim_sink VALUES (10, 'own row');
SELECT row_count FROM paimon_sink.checkpoint('victim_sink');
SELECT k, v FROM victim ORDER BY k;
SELECT paimon_sink.drop_sink('victim_sink');
DROP TABLE victim;
RESET ROLE;
DROP SCHEMA hostile CASCADE;

-- a commit whose load would write into a sink (a trigger of the target
-- inserting into another sink) fails, naming the cause, and waits: the
-- commit's transaction is prepared, and one that wrote to a sink cannot be
SET ROLE regress_sink_owner;
CREATE TABLE audit_target (k int, v text);
SELECT sink_name FROM paimon_sink.create_sink('audit_sink', 'audit_target');
CREATE TABLE cycle_target (k int, v text);
SELECT sink_name FROM paimon_sink.create_sink('cycle_sink', 'cycle_target');
CREATE FUNCTION cycle_audit() RETURNS trigger LANGUAGE plpgsql AS
$$BEGIN INSERT INTO public.audit_sink VALUES (NEW.k, 'audit'); RETURN NEW; END$$;
CREATE TRIGGER cycle_audit AFTER INSERT ON cycle_target FOR EACH ROW EXECUTE FUNCTION cycle_audit();
INSERT INTO cycle_sink VALUES (1, 'waits');
SELECT row_count FROM paimon_sink.checkpoint('cycle_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM cycle_target;
DROP TRIGGER cycle_audit ON cycle_target;
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('cycle_sink');
SELECT k, v FROM cycle_target;
SELECT row_count FROM paimon_sink.checkpoint('audit_sink');
SELECT paimon_sink.drop_sink('cycle_sink');
SELECT paimon_sink.drop_sink('audit_sink');
DROP TABLE cycle_target, audit_target;
DROP FUNCTION cycle_audit();
RESET ROLE;
