-- commit_stats.skipped_as_committed counts the commit requests that found
-- their checkpoint already committed: a retried commit() (the job's
-- protocol after a lost answer) answers newly_committed = false and is
-- counted there, not as a commit.  A sink group's commit counts each
-- member's commits and skips under that member: the members after the
-- first once stayed at 0, their commits counted under the first.  The
-- committer writes its counters at most a second after the requests, so
-- the test waits for them.
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;
CREATE TABLE skip_target (id int, v text);
SELECT sink_name FROM paimon_sink.create_sink('skip_sink', 'skip_target');
\set job_user 'skip-job'
SET paimon_sink.commit_user = 'skip-job';
-- checkpoint 1 of the job's commit user, with rows, and of the sink's own
INSERT INTO skip_sink VALUES (1, 'one'), (2, 'two');
SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('skip_sink', :'job_user', 1)
 WHERE file_name IS NOT NULL;
SELECT checkpoint_id, row_count, newly_committed FROM paimon_sink.commit('skip_sink', :'job_user', 1);
-- the same commit again, twice: already committed, each counted as skipped
SELECT checkpoint_id, row_count, newly_committed FROM paimon_sink.commit('skip_sink', :'job_user', 1);
SELECT checkpoint_id, row_count, newly_committed FROM paimon_sink.commit('skip_sink', :'job_user', 1);
RESET paimon_sink.commit_user;
-- the sink's own commit user: checkpoint() commits, a commit() of it again skips
INSERT INTO skip_sink VALUES (3, 'three');
SELECT checkpoint_id AS own_checkpoint, newly_committed FROM paimon_sink.checkpoint('skip_sink') \gset
SELECT :own_checkpoint > 0 AS own_checkpoint, :'newly_committed' AS newly_committed;
SELECT newly_committed FROM paimon_sink.commit('skip_sink', NULL, :own_checkpoint);
-- a group of two sinks: commit 1 of the job's commit user, then again
SELECT sink_name FROM paimon_sink.create_sink('skip_a', 'skip_target');
SELECT sink_name FROM paimon_sink.create_sink('skip_b', 'skip_target');
SELECT paimon_sink.create_sink_group('skip_group', ARRAY['skip_a', 'skip_b']);
SET paimon_sink.commit_user = 'skip-group-job';
INSERT INTO skip_a VALUES (10, 'a');
INSERT INTO skip_b VALUES (20, 'b'), (21, 'b');
RESET paimon_sink.commit_user;
SELECT count(*) AS committables FROM paimon_sink.prepare_commit('skip_group', 'skip-group-job', 1);
SELECT checkpoint_id, row_count, newly_committed
  FROM paimon_sink.commit('skip_group', 'skip-group-job', 1);
SELECT checkpoint_id, row_count, newly_committed
  FROM paimon_sink.commit('skip_group', 'skip-group-job', 1);
DO $$
BEGIN
	FOR i IN 1..600 LOOP
		EXIT WHEN (SELECT sum(commits + skipped_as_committed) FROM paimon_sink.commit_stats
			WHERE sink_name LIKE 'skip\_%') >= 9;
		PERFORM pg_sleep(0.05);
	END LOOP;
END
$$;
-- skip_sink: two commits (snapshots), three skipped; each member its own
SELECT sink_name, commits, skipped_as_committed, failures, rows_committed
  FROM paimon_sink.commit_stats WHERE sink_name LIKE 'skip\_%' ORDER BY sink_name;
SELECT count(*) AS rows_loaded FROM skip_target;
SELECT paimon_sink.drop_sink_group('skip_group');
SELECT paimon_sink.drop_sink('skip_a');
SELECT paimon_sink.drop_sink('skip_b');
SELECT paimon_sink.drop_sink('skip_sink');
DROP TABLE skip_target;
RESET ROLE;
