-- Arguments at their edges: every refusal has its SQLSTATE, no call takes
-- a process down, and a call refused for its arguments changes nothing.
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;
CREATE TABLE edge_target (id int PRIMARY KEY, note text);
SELECT sink_name FROM paimon_sink.create_sink('edge_sink', 'edge_target');
SET paimon_sink.commit_user = 'edge-job';
INSERT INTO edge_sink VALUES (1, 'first');
SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', 1);
SELECT checkpoint_id, row_count FROM paimon_sink.commit('edge_sink', 'edge-job', 1);

-- rows staged under the job's commit user, then prepares with ids no
-- checkpoint has: refused before the barrier (checkpoint 0 once crashed
-- the committer; -5 dropped the staged rows as a "replay")
INSERT INTO edge_sink VALUES (2, 'staged');
SELECT * FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', -5);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', -9223372036854775808);
\echo :LAST_ERROR_SQLSTATE
-- the highest id is end_input()'s
SELECT * FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', 9223372036854775807);
\echo :LAST_ERROR_SQLSTATE
-- the same for a group of writer ids and properties
SELECT * FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', 0, 0, '{"p": 1}');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', 2, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', 2, 0, '[1]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', 2, 0,
	jsonb_build_object('k', repeat('x', 10000)));
\echo :LAST_ERROR_SQLSTATE
-- commits and restores with ids no checkpoint has
SELECT * FROM paimon_sink.commit('edge_sink', 'edge-job', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.commit('edge_sink', 'edge-job', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.reject_failing_rows('edge_sink', 0, 'edge-job');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.recover('edge_sink', 'edge-job', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.recover('edge_sink', 'edge-job', -9223372036854775808);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.restart_job('edge_sink', 'edge-job', 1000, -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.restart_job('edge_sink', 'edge-job', -1);
\echo :LAST_ERROR_SQLSTATE
-- fence epochs and row counts no call can name
SELECT * FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', 1, fence_epoch => -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.commit('edge_sink', 'edge-job', 1, -9223372036854775808);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.end_input('edge_sink', 'edge-job', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', 1, expected_rows => -9223372036854775808);
\echo :LAST_ERROR_SQLSTATE
SET paimon_sink.fence_epoch = '-1';
\echo :LAST_ERROR_SQLSTATE
SET paimon_sink.fence_epoch = '9223372036854775808';
\echo :LAST_ERROR_SQLSTATE
SET paimon_sink.fence_epoch = ' 1';
\echo :LAST_ERROR_SQLSTATE
-- NULLs where a value is needed
SELECT * FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit(NULL, 'edge-job', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.last_commit(NULL, 'edge-job');
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.last_committed_checkpoint(NULL, 'edge-job');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.recover('edge_sink', NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.remove_orphan_files('edge_sink', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.expire_snapshots('edge_sink', 1, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.create_sink_group('edge_group', ARRAY['edge_sink', NULL]);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.create_sink_group('edge_group', '{}');
\echo :LAST_ERROR_SQLSTATE
-- names at their lengths
SELECT * FROM paimon_sink.checkpoint('');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.checkpoint(repeat('s', 10000));
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.commit('edge_sink', repeat('u', 10000), 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.create_sink(repeat('s', 64), 'edge_target');
\echo :LAST_ERROR_SQLSTATE
-- text arguments that are no names are quoted cut too
SELECT * FROM paimon_sink.recover('edge_sink', 'edge-job', 1, repeat('m', 10000));
SELECT * FROM paimon_sink.create_sink('x', 'edge_target', mode => repeat('m', 10000));
SELECT * FROM paimon_sink.create_sink('x', 'edge_target', on_error => repeat('o', 10000));
SELECT * FROM paimon_sink.create_sink('x', 'edge_target', bucket_key => ARRAY[repeat('k', 10000)]);
SELECT * FROM paimon_sink.create_sink('x', 'edge_target', bucket_key => ARRAY[repeat('k', 10000),
	repeat('k', 10000)]);
SELECT * FROM paimon_sink.create_sink('x', 'edge_target', mode => 'upsert',
	row_kind_column => repeat('r', 10000));
-- intervals at their limits: an age beyond any timestamp is no error,
-- a checkpoint interval beyond the setting's range is
SELECT count(*) FROM paimon_sink.remove_orphan_files('edge_sink', '178000000 years', true);
SELECT paimon_sink.expire_snapshots('edge_sink', 2147483647, '178000000 years');
SELECT * FROM paimon_sink.create_sink('edge_sink2', 'edge_target',
	checkpoint_interval => '178000000 years');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.create_sink('edge_sink2', 'edge_target',
	checkpoint_interval => '-178000000 years');
\echo :LAST_ERROR_SQLSTATE

-- nothing was changed: the staged row commits at the job's next checkpoint
SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', 2);
SELECT checkpoint_id, row_count, newly_committed FROM paimon_sink.commit('edge_sink', 'edge-job', 2);
SELECT * FROM edge_target ORDER BY id;
SELECT paimon_sink.last_committed_checkpoint('edge_sink', 'edge-job');

-- a prepare of a committed id (a replay) still drops what was staged for
-- it, and says how many rows and how to send them again
INSERT INTO edge_sink VALUES (3, 'replayed');
SELECT * FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('edge_sink', 'edge-job', 3);

-- checkpoint() numbers the sink's own commit user and never takes
-- end_input()'s id: after a prepare of the id below it, checkpoint() is
-- refused, nothing changed (it once ended the input every SQL session
-- writes with, and every later INSERT failed)
RESET paimon_sink.commit_user;
INSERT INTO edge_sink VALUES (10, 'own, at the last id');
SELECT checkpoint_id, row_count
  FROM paimon_sink.prepare_commit('edge_sink', NULL, 9223372036854775806);
INSERT INTO edge_sink VALUES (11, 'own, after it');
-- (its message names the own commit user, a random UUID)
\set VERBOSITY sqlstate
SELECT * FROM paimon_sink.checkpoint('edge_sink');
\set VERBOSITY default
INSERT INTO edge_sink VALUES (12, 'still taken');
SELECT checkpoint_id, row_count, newly_committed
  FROM paimon_sink.commit('edge_sink', NULL, 9223372036854775806);
-- the way on that the hint gives: end_input() commits the rest
SELECT checkpoint_id, row_count FROM paimon_sink.end_input('edge_sink', NULL);
SELECT id, note FROM edge_target WHERE id >= 10 ORDER BY id;

-- a restore that fails before its end fences nothing: its commit of the
-- restored checkpoint refused by the target (a duplicate key) leaves the
-- commit user's fence epoch as it was, so no writer's rows are left out
CREATE TABLE fence_target (id int PRIMARY KEY);
SELECT sink_name FROM paimon_sink.create_sink('fence_sink', 'fence_target');
SET paimon_sink.commit_user = 'fence-job';
INSERT INTO fence_sink VALUES (1);
INSERT INTO fence_sink VALUES (1);
SELECT count(*) FROM paimon_sink.prepare_commit('fence_sink', 'fence-job', 1);
SELECT * FROM paimon_sink.recover('fence_sink', 'fence-job', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT fence_epoch FROM paimon_sink.commit_user_state WHERE commit_user = 'fence-job';
SELECT paimon_sink.drop_sink('fence_sink', force => true);
DROP TABLE fence_target;

-- the superuser's fault functions refuse NULLs and odd counts
RESET ROLE;
SELECT paimon_sink.inject_fault(NULL, 'error');
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.inject_fault('committer_before_prepare', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.inject_fault('committer_before_prepare', 'error', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.inject_fault('committer_before_prepare', 'error', -2);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.release_fault(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.release_fault('no_such_point');
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.inject_fault(repeat('p', 10000), 'error');
SELECT paimon_sink.inject_fault('committer_before_prepare', repeat('a', 10000));
SELECT count(*) FROM paimon_sink.faults WHERE action <> 'none';

-- the committer served all of it: no process of ours was lost
SELECT count(*) = 1 AS committer_serving FROM pg_stat_activity
 WHERE backend_type = 'paimon_sink committer' AND datname = current_database();
SET ROLE regress_sink_owner;
SELECT paimon_sink.drop_sink('edge_sink');
DROP TABLE edge_target;
