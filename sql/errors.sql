-- Errors: each with its SQLSTATE; nothing lost, state intact.
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;
CREATE TABLE orders (
	id int PRIMARY KEY,
	quantity int NOT NULL CHECK (quantity > 0),
	note text
);
SELECT sink_name FROM paimon_sink.create_sink('orders_sink', 'orders');
SET paimon_sink.commit_user = 'job-e';

-- unknown sink
SELECT * FROM paimon_sink.checkpoint('no_such_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit('no_such_sink', 'job-e', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.drop_sink('no_such_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.discard_missing_files('no_such_sink');
\echo :LAST_ERROR_SQLSTATE

-- invalid commit users, as an argument and as a setting
SELECT * FROM paimon_sink.prepare_commit('orders_sink', '', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit('orders_sink', repeat('x', 65), 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.commit('orders_sink', 'job e; drop table orders', 1);
\echo :LAST_ERROR_SQLSTATE
SET paimon_sink.commit_user = 'bad/user';
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit('orders_sink', repeat('x', 64), 1);

-- rows that do not fit the target fail the INSERT or COPY that brings them
INSERT INTO orders_sink VALUES (1, 'many', 'type');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO orders_sink VALUES (1, NULL, 'not null');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO orders_sink VALUES (1, 0, 'check');
\echo :LAST_ERROR_SQLSTATE
COPY orders_sink FROM STDIN;
2	5	fine
3	-1	bad
\.
\echo :LAST_ERROR_SQLSTATE
-- none of it was staged: the empty checkpoint answers with 0 rows
SELECT count(*), sum(row_count) FROM paimon_sink.prepare_commit('orders_sink', 'job-e', 1);

-- checkpoint ids that go backwards or are already committed are refused
INSERT INTO orders_sink VALUES (10, 1, 'ten');
SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('orders_sink', 'job-e', 5);
SELECT * FROM paimon_sink.prepare_commit('orders_sink', 'job-e', 4);
\echo :LAST_ERROR_SQLSTATE
SELECT checkpoint_id, row_count FROM paimon_sink.commit('orders_sink', 'job-e', 5);
SELECT * FROM paimon_sink.prepare_commit('orders_sink', 'job-e', 5);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit('orders_sink', 'job-e', 3);
\echo :LAST_ERROR_SQLSTATE
-- commit of an id at or below the mark changes nothing
SELECT checkpoint_id, newly_committed FROM paimon_sink.commit('orders_sink', 'job-e', 2);
SELECT checkpoint_id, newly_committed FROM paimon_sink.commit('orders_sink', 'job-e', 5);
SELECT count(*) FROM orders;

-- commit, prepare and checkpoint refuse a transaction block
BEGIN;
SELECT * FROM paimon_sink.commit('orders_sink', 'job-e', 6);
ROLLBACK;
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SELECT * FROM paimon_sink.checkpoint('orders_sink');
ROLLBACK;
BEGIN;
SELECT * FROM paimon_sink.prepare_commit('orders_sink', 'job-e', 6);
ROLLBACK;
BEGIN;
SELECT * FROM paimon_sink.discard_missing_files('orders_sink');
ROLLBACK;

-- a user transaction that wrote to a sink cannot be prepared
RESET ROLE;
BEGIN;
INSERT INTO orders_sink VALUES (20, 1, 'prepared?');
PREPARE TRANSACTION 'user_gid';
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'user_gid';
-- a transaction that did not write to a sink still can
BEGIN;
CREATE TEMP TABLE scratch (x int);
ROLLBACK;
SET ROLE regress_sink_owner;

-- a row that stops fitting between staging and commit fails the commit:
-- nothing applied, the checkpoint stays prepared, a retry succeeds later
INSERT INTO orders_sink VALUES (30, 30, 'thirty'), (31, 31, 'thirty-one');
SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('orders_sink', 'job-e', 6);
ALTER TABLE orders ADD CONSTRAINT small CHECK (quantity < 31);
SELECT * FROM paimon_sink.commit('orders_sink', 'job-e', 6);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM orders WHERE id >= 30;
SELECT commit_user, checkpoint_id, row_count FROM paimon_sink.pending_checkpoints;
SELECT paimon_sink.last_committed_checkpoint('orders_sink', 'job-e');
SELECT count(*) FROM paimon_sink.in_doubt;
ALTER TABLE orders DROP CONSTRAINT small;
SELECT checkpoint_id, row_count, newly_committed FROM paimon_sink.commit('orders_sink', 'job-e', 6);
SELECT id, quantity FROM orders WHERE id >= 30 ORDER BY id;
-- a duplicate key fails the commit the same way, until the conflict is gone;
-- a checkpoint of another sink meanwhile loses none of the failed rows
RESET paimon_sink.commit_user;
CREATE TABLE side (id int);
SELECT sink_name FROM paimon_sink.create_sink('side_sink', 'side');
INSERT INTO orders_sink VALUES (30, 1, 'duplicate key'), (32, 2, 'waits with it');
SELECT * FROM paimon_sink.checkpoint('orders_sink');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO side_sink VALUES (1);
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('side_sink');
SELECT paimon_sink.drop_sink('side_sink');
DROP TABLE side;
SELECT note FROM orders WHERE id = 30;
DELETE FROM orders WHERE id = 30;
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('orders_sink');
SELECT id, note FROM orders WHERE id IN (30, 32) ORDER BY id;

-- reading the foreign table points at the target
SELECT * FROM orders_sink;
\echo :LAST_ERROR_SQLSTATE
UPDATE orders_sink SET note = 'x';
\echo :LAST_ERROR_SQLSTATE

-- another role: no rights on the owner's sink
RESET ROLE;
GRANT INSERT ON orders_sink TO regress_sink_other;
SET ROLE regress_sink_other;
SELECT * FROM paimon_sink.prepare_commit('orders_sink', 'job-x', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.commit('orders_sink', 'job-x', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.checkpoint('orders_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.drop_sink('orders_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.discard_missing_files('orders_sink', 'job-x');
\echo :LAST_ERROR_SQLSTATE
-- it may still write, if granted INSERT on the foreign table
INSERT INTO orders_sink VALUES (40, 4, 'from another role');
SELECT * FROM paimon_sink.create_sink('others_sink', 'orders');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- bad arguments of create_sink
SET ROLE regress_sink_owner;
SELECT * FROM paimon_sink.create_sink('orders_sink', 'orders');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.create_sink('x', 'orders', mode => 'merge');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.create_sink('x', 'orders', buckets => 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.create_sink('x', 'orders', bucket_key => '{nope}');
\echo :LAST_ERROR_SQLSTATE
CREATE VIEW orders_view AS SELECT * FROM orders;
SELECT * FROM paimon_sink.create_sink('x', 'orders_view');
\echo :LAST_ERROR_SQLSTATE
-- a temporary target: the committer could never load it, and the session's
-- end would drop the foreign table with it, past the drop guard
CREATE TEMP TABLE temp_target (id int, note text);
SELECT * FROM paimon_sink.create_sink('x', 'temp_target');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS temp_sinks FROM paimon_sink.sinks WHERE sink_name = 'x';
DROP TABLE temp_target;
-- a column whose type (or a type inside it) has no binary I/O cannot be staged
CREATE TABLE acl_target (id int, acl aclitem);
SELECT * FROM paimon_sink.create_sink('x', 'acl_target');
\echo :LAST_ERROR_SQLSTATE
CREATE TYPE acl_pair AS (n int, acls aclitem[]);
CREATE TABLE acl_pair_target (id int, p acl_pair);
SELECT * FROM paimon_sink.create_sink('x', 'acl_pair_target');
\echo :LAST_ERROR_SQLSTATE
DROP TABLE acl_target, acl_pair_target;
DROP TYPE acl_pair;

-- drop_sink refuses while a checkpoint is prepared, unless forced
INSERT INTO orders_sink VALUES (50, 5, 'pending');
SELECT checkpoint_id FROM paimon_sink.prepare_commit('orders_sink', NULL, 100);
-- its files are all there: discard_missing_files finds nothing to discard
SELECT * FROM paimon_sink.discard_missing_files('orders_sink');
SELECT checkpoint_id, file_count, row_count FROM paimon_sink.pending_checkpoints;
SELECT paimon_sink.drop_sink('orders_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('orders_sink');
-- and while writers hold rows that no checkpoint took yet, unless forced
INSERT INTO orders_sink VALUES (51, 5, 'staged');
SELECT paimon_sink.drop_sink('orders_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.drop_sink('orders_sink', force => true);
SELECT count(*) FROM paimon_sink.sinks WHERE sink_name = 'orders_sink';
SELECT count(*) FROM orders;
RESET ROLE;
-- the sink's layout is fixed at create_sink: altering the foreign table's
-- columns is refused (0A000); a staged column's type changed in the target
-- to one its values may not fit is refused as it is made (42804), never
-- misloads, and a widened one is followed
SET ROLE regress_sink_owner;
CREATE TABLE layout (id int, a int, b int NOT NULL);
SELECT sink_name FROM paimon_sink.create_sink('layout_sink', 'layout');
INSERT INTO layout_sink VALUES (1, 10, 20);
ALTER FOREIGN TABLE layout_sink RENAME COLUMN a TO tmp;
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE layout_sink ADD COLUMN c int;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE layout_sink ALTER COLUMN b TYPE bigint;
\echo :LAST_ERROR_SQLSTATE
ALTER FOREIGN TABLE layout_sink DROP COLUMN a, ALTER COLUMN b SET DEFAULT 1;
\echo :LAST_ERROR_SQLSTATE
-- what leaves the layout alone is free
ALTER FOREIGN TABLE layout_sink ALTER COLUMN b SET DEFAULT 1;
ALTER FOREIGN TABLE layout_sink RENAME TO layout_sink_renamed;
ALTER FOREIGN TABLE layout_sink_renamed RENAME TO layout_sink;
INSERT INTO layout_sink VALUES (2, 30, 40);
-- what was staged loads in the layout it was staged in
SELECT row_count FROM paimon_sink.checkpoint('layout_sink');
SELECT id, a, b FROM layout;
ALTER TABLE layout ALTER COLUMN a TYPE text;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE layout ALTER COLUMN a TYPE numeric(3, 1);
\echo :LAST_ERROR_SQLSTATE
INSERT INTO layout_sink VALUES (3, 50, 60);
ALTER TABLE layout ALTER COLUMN a TYPE bigint;
SELECT row_count FROM paimon_sink.checkpoint('layout_sink');
SELECT id, a, pg_typeof(a) FROM layout ORDER BY id;
-- ON CONFLICT cannot be honoured; dropping the target is refused
INSERT INTO layout_sink VALUES (4, 1, 1) ON CONFLICT DO NOTHING;
\echo :LAST_ERROR_SQLSTATE
DROP TABLE layout;
\echo :LAST_ERROR_SQLSTATE
-- ... and so is CASCADE, which would drop the sink's foreign table: that goes
-- only with the sink (drop_sink), so the row staged meanwhile still commits
INSERT INTO layout_sink VALUES (4, 1, 1);
DROP TABLE layout CASCADE;
\echo :LAST_ERROR_SQLSTATE
SELECT row_count FROM paimon_sink.checkpoint('layout_sink');
SELECT paimon_sink.drop_sink('layout_sink');
DROP TABLE layout;
-- arguments that make no sense
SELECT * FROM paimon_sink.create_sink(NULL, 'orders');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.create_sink('x', 'orders', checkpoint_interval => '-1 minute');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.create_sink('x', 'orders', bucket_key => '{id,id}');
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.drop_sink(NULL);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
-- a commit user written into the catalog by hand is refused as the library
-- refuses it (23514); the marks, written at every checkpoint, are not checked
SELECT sink_name FROM paimon_sink.create_sink('user_sink', 'orders');
INSERT INTO paimon_sink.commit_user_state (sink_id, commit_user)
	SELECT sink_id, 'no spaces' FROM paimon_sink.sink_definition WHERE sink_name = 'user_sink';
\echo :LAST_ERROR_SQLSTATE
UPDATE paimon_sink.commit_user_state SET commit_user = repeat('x', 65)
 WHERE sink_id = (SELECT sink_id FROM paimon_sink.sink_definition WHERE sink_name = 'user_sink');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO paimon_sink.commit_user_state (sink_id, commit_user)
	SELECT sink_id, 'by-hand.1:ok_' FROM paimon_sink.sink_definition WHERE sink_name = 'user_sink';
SELECT count(*) FROM paimon_sink.prepare_commit('user_sink', 'by-hand.1:ok_', 1);
SELECT count(*) FROM paimon_sink.commit('user_sink', 'by-hand.1:ok_', 1);
SELECT paimon_sink.last_committed_checkpoint('user_sink', 'by-hand.1:ok_');
SELECT tgname, pg_catalog.pg_get_triggerdef(t.oid) ~ 'UPDATE OF commit_user' AS only_when_written
  FROM pg_trigger t WHERE tgrelid = 'paimon_sink.commit_user_state'::regclass AND NOT tgisinternal;
SELECT paimon_sink.drop_sink('user_sink');
