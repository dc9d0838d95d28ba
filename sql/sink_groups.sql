-- Sink groups: the errors of create_sink_group, drop_sink_group and the
-- calls that take a group's name (the commits themselves: TAP 039).
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;
CREATE TABLE grp_a (id int PRIMARY KEY);
CREATE TABLE grp_b (id int PRIMARY KEY, a_id int REFERENCES grp_a);
SELECT sink_name FROM paimon_sink.create_sink('grp_a_sink', 'grp_a');
SELECT sink_name FROM paimon_sink.create_sink('grp_b_sink', 'grp_b');
SELECT paimon_sink.create_sink_group('grp', ARRAY['grp_a_sink', 'grp_b_sink']);
SELECT group_name, owners, sinks FROM paimon_sink.sink_groups;

-- unknown group, unknown member, no members, a member twice, NULLs
SELECT paimon_sink.drop_sink_group('no_such_group');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.commit('no_such_group', 'job-g', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.create_sink_group('grp2', ARRAY['no_such_sink']);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.create_sink_group('grp2', ARRAY[]::text[]);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.create_sink_group('grp2', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.create_sink_group(NULL, ARRAY['grp_a_sink']);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.create_sink_group('', ARRAY['grp_a_sink']);
\echo :LAST_ERROR_SQLSTATE

-- an overwrite sink cannot join: the group's commit would skip its empty first commit
CREATE TABLE grp_o (id int);
SELECT sink_name FROM paimon_sink.create_sink('grp_o_sink', 'grp_o', mode => 'overwrite');
SELECT paimon_sink.create_sink_group('grp_o_group', ARRAY['grp_o_sink']);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.drop_sink('grp_o_sink');
DROP TABLE grp_o;

-- a sink in two groups
SELECT paimon_sink.create_sink_group('grp2', ARRAY['grp_a_sink']);
\echo :LAST_ERROR_SQLSTATE
\echo :LAST_ERROR_MESSAGE
CREATE TABLE grp_c (id int PRIMARY KEY);
SELECT sink_name FROM paimon_sink.create_sink('grp_c_sink', 'grp_c');
SELECT paimon_sink.create_sink_group('grp2', ARRAY['grp_c_sink', 'grp_c_sink']);
\echo :LAST_ERROR_SQLSTATE

-- group and sink names share one namespace, both ways
SELECT paimon_sink.create_sink_group('grp_c_sink', ARRAY['grp_c_sink']);
\echo :LAST_ERROR_SQLSTATE
\echo :LAST_ERROR_MESSAGE
SELECT paimon_sink.create_sink_group('grp', ARRAY['grp_c_sink']);
\echo :LAST_ERROR_SQLSTATE
SELECT sink_name FROM paimon_sink.create_sink('grp', 'grp_c');
\echo :LAST_ERROR_SQLSTATE
\echo :LAST_ERROR_MESSAGE

-- a group has no commit user of its own; checkpoint() takes no group; a member is not dropped
SELECT * FROM paimon_sink.prepare_commit('grp', NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.checkpoint('grp');
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.drop_sink('grp_a_sink');
\echo :LAST_ERROR_SQLSTATE
\echo :LAST_ERROR_MESSAGE

-- an empty checkpoint of the group: one row of 0 rows per member, then none committed
SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('grp', 'job-g', 1);
SELECT snapshot_id, checkpoint_id, row_count, newly_committed
  FROM paimon_sink.commit('grp', 'job-g', 1);
SELECT checkpoint_id, properties FROM paimon_sink.last_commit('grp', 'job-g');
SELECT paimon_sink.last_committed_checkpoint('grp', 'job-g');
RESET ROLE;

-- not the owner of the members
SET ROLE regress_sink_other;
SELECT * FROM paimon_sink.commit('grp', 'job-g', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.drop_sink_group('grp');
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.create_sink_group('grp3', ARRAY['grp_c_sink']);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

SET ROLE regress_sink_owner;
SELECT paimon_sink.drop_sink_group('grp');
SELECT count(*) AS groups_left FROM paimon_sink.sink_groups;
SELECT paimon_sink.drop_sink('grp_b_sink');
SELECT paimon_sink.drop_sink('grp_a_sink');
SELECT paimon_sink.drop_sink('grp_c_sink');
DROP TABLE grp_b, grp_a, grp_c;
RESET ROLE;

-- a group's restore refused as stale for one member fences none: the
-- other member's fence epoch stays, so its writers' rows still commit
SET ROLE regress_sink_owner;
CREATE TABLE fence_a (id int PRIMARY KEY);
CREATE TABLE fence_b (id int PRIMARY KEY);
SELECT sink_name FROM paimon_sink.create_sink('fence_a_sink', 'fence_a');
SELECT sink_name FROM paimon_sink.create_sink('fence_b_sink', 'fence_b');
SET paimon_sink.commit_user = 'job-f';
INSERT INTO fence_a_sink VALUES (1);
INSERT INTO fence_b_sink VALUES (1);
SELECT count(*) FROM paimon_sink.prepare_commit('fence_a_sink', 'job-f', 1);
SELECT count(*) FROM paimon_sink.commit('fence_a_sink', 'job-f', 1);
SELECT count(*) FROM paimon_sink.prepare_commit('fence_b_sink', 'job-f', 2);
SELECT count(*) FROM paimon_sink.commit('fence_b_sink', 'job-f', 2);
SELECT paimon_sink.create_sink_group('fence_grp', ARRAY['fence_a_sink', 'fence_b_sink']);
INSERT INTO fence_a_sink VALUES (2);
SELECT * FROM paimon_sink.recover('fence_grp', 'job-f', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT s.sink_name, u.fence_epoch FROM paimon_sink.commit_user_state u
  JOIN paimon_sink.sink_definition s USING (sink_id)
 WHERE u.commit_user = 'job-f' ORDER BY 1;
SELECT paimon_sink.drop_sink_group('fence_grp');
SELECT count(*) FROM paimon_sink.prepare_commit('fence_a_sink', 'job-f', 3);
SELECT count(*) FROM paimon_sink.commit('fence_a_sink', 'job-f', 3);
SELECT id FROM fence_a ORDER BY id;
SELECT paimon_sink.drop_sink('fence_a_sink');
SELECT paimon_sink.drop_sink('fence_b_sink');
DROP TABLE fence_a, fence_b;
RESET ROLE;
