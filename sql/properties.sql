-- Checkpoint properties: a job's source offsets, committed with its rows;
-- last_commit() and restart_job() give them back.
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;
CREATE TABLE feed (id int PRIMARY KEY, payload text);
SELECT sink_name FROM paimon_sink.create_sink('feed_sink', 'feed');
SET paimon_sink.commit_user = 'job-p';

-- two subtasks prepare checkpoint 1, each with its own offsets and a shared key
SET paimon_sink.writer_id = 0;
INSERT INTO feed_sink VALUES (1, 'a'), (2, 'b');
SELECT checkpoint_id, writer_id, row_count
  FROM paimon_sink.prepare_commit('feed_sink', 'job-p', 1, 0, '{"offset-0": 2, "topic": "t"}');
SET paimon_sink.writer_id = 1;
INSERT INTO feed_sink VALUES (3, 'c');
SELECT checkpoint_id, writer_id, row_count
  FROM paimon_sink.prepare_commit('feed_sink', 'job-p', 1, 1, '{"offset-1": 1, "topic": "t"}');
-- another value for a key another subtask gave is refused; nothing prepared
INSERT INTO feed_sink VALUES (4, 'd');
SELECT * FROM paimon_sink.prepare_commit('feed_sink', 'job-p', 1, 1, '{"offset-1": 2, "topic": "u"}');
\echo :LAST_ERROR_SQLSTATE
\echo :LAST_ERROR_MESSAGE
SELECT count(*) AS committables_of_1 FROM paimon_sink.committable WHERE commit_user = 'job-p';
-- properties must be an object, of at most 8191 bytes as text
SELECT * FROM paimon_sink.prepare_commit('feed_sink', 'job-p', 1, 1, '[1, 2]');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit('feed_sink', 'job-p', 1, 1,
  jsonb_build_object('big', repeat('x', 8200)));
\echo :LAST_ERROR_SQLSTATE
-- the subtask's retry replaces its own properties (the latest prepare of a writer id wins)
SELECT checkpoint_id, writer_id, row_count
  FROM paimon_sink.prepare_commit('feed_sink', 'job-p', 1, 1, '{"offset-1": 2, "topic": "t"}')
 ORDER BY row_count;
SELECT writer_id, properties FROM paimon_sink.checkpoint_properties ORDER BY writer_id;
-- nothing is committed yet
SELECT * FROM paimon_sink.last_commit('feed_sink', 'job-p');
SELECT * FROM paimon_sink.last_commit('feed_sink', 'never-seen');
SELECT snapshot_id, row_count, file_count, newly_committed
  FROM paimon_sink.commit('feed_sink', 'job-p', 1);
-- the snapshot records the merge, in the commit that made the rows visible
SELECT commit_identifier, row_count, properties FROM paimon_sink.snapshots
 WHERE sink_name = 'feed_sink' ORDER BY snapshot_id;
SELECT checkpoint_id, properties, snapshot_id, committed_at IS NOT NULL AS has_time
  FROM paimon_sink.last_commit('feed_sink', 'job-p');
SELECT count(*) AS waiting_properties FROM paimon_sink.checkpoint_properties;

-- commit(2) is lost (it fails before its PREPARE); commit(3) sweeps 2 and 3,
-- each snapshot with its own properties
SET paimon_sink.writer_id = 0;
INSERT INTO feed_sink VALUES (5, 'e');
SELECT row_count FROM paimon_sink.prepare_commit('feed_sink', 'job-p', 2, 0, '{"offset-0": 3}');
RESET ROLE;
SELECT paimon_sink.inject_fault('committer_before_prepare', 'error');
SET ROLE regress_sink_owner;
SELECT * FROM paimon_sink.commit('feed_sink', 'job-p', 2);
\echo :LAST_ERROR_SQLSTATE
SELECT checkpoint_id, properties FROM paimon_sink.last_commit('feed_sink', 'job-p');
INSERT INTO feed_sink VALUES (6, 'f');
SELECT row_count FROM paimon_sink.prepare_commit('feed_sink', 'job-p', 3, 0, '{"offset-0": 4}');
SELECT checkpoint_id, row_count, newly_committed
  FROM paimon_sink.commit('feed_sink', 'job-p', 3) ORDER BY checkpoint_id;
SELECT commit_identifier, row_count, properties FROM paimon_sink.snapshots
 WHERE sink_name = 'feed_sink' ORDER BY snapshot_id;
SELECT checkpoint_id, properties FROM paimon_sink.last_commit('feed_sink', 'job-p');

-- an empty checkpoint carries properties too (the source moved, nothing to write)
SELECT row_count FROM paimon_sink.prepare_commit('feed_sink', 'job-p', 4, 0, '{"offset-0": 5}');
SELECT snapshot_id, checkpoint_id, row_count FROM paimon_sink.commit('feed_sink', 'job-p', 4);
SELECT checkpoint_id, properties, snapshot_id, committed_at
  FROM paimon_sink.last_commit('feed_sink', 'job-p');
-- snapshot expiry never forgets them
SELECT paimon_sink.expire_snapshots('feed_sink', 1, '0');
SELECT commit_identifier FROM paimon_sink.snapshots WHERE sink_name = 'feed_sink';
SELECT checkpoint_id, properties FROM paimon_sink.last_commit('feed_sink', 'job-p');

-- a job's restart: checkpoint 5 was prepared, never committed; restart_job
-- restores to the last committed checkpoint, returns the offsets to resume
-- from and the attempt's fence epoch, and sets no session setting
INSERT INTO feed_sink VALUES (7, 'g');
SELECT row_count FROM paimon_sink.prepare_commit('feed_sink', 'job-p', 5, 0, '{"offset-0": 6}');
RESET paimon_sink.writer_id;
RESET paimon_sink.commit_user;
SELECT checkpoint_id, properties, snapshot_id, recommitted_checkpoints, discarded_checkpoints,
       discarded_files, fence_epoch
  FROM paimon_sink.restart_job('feed_sink', 'job-p', 10000);
SHOW paimon_sink.commit_user;
SELECT count(*) AS waiting_properties FROM paimon_sink.checkpoint_properties;
-- on a direct connection the session names the job, its subtask and the epoch
SET paimon_sink.commit_user = 'job-p';
SET paimon_sink.writer_id = 2;
SET paimon_sink.fence_epoch = '1';
-- it resumes from offset 5 of subtask 0: record 7 again, under the new epoch
INSERT INTO feed_sink VALUES (7, 'g');
SELECT checkpoint_id, writer_id, row_count
  FROM paimon_sink.prepare_commit('feed_sink', 'job-p', 5, properties => '{"offset-0": 6}');
SELECT checkpoint_id, row_count FROM paimon_sink.commit('feed_sink', 'job-p', 5);
-- a job that restores from its own checkpoint store: prepared 6 is committed
INSERT INTO feed_sink VALUES (8, 'h');
SELECT row_count FROM paimon_sink.prepare_commit('feed_sink', 'job-p', 6, 2, '{"offset-2": 1}');
SELECT checkpoint_id, properties, recommitted_checkpoints, discarded_checkpoints, fence_epoch
  FROM paimon_sink.restart_job('feed_sink', 'job-p', restored_checkpoint_id => 6);
SET paimon_sink.fence_epoch = '2';
SET paimon_sink.writer_id = 0;
SELECT * FROM feed ORDER BY id;
-- the four-argument call of 0.1 still works
INSERT INTO feed_sink VALUES (9, 'i');
SELECT row_count FROM paimon_sink.prepare_commit('feed_sink', 'job-p', 7, 0);
SELECT checkpoint_id, row_count FROM paimon_sink.commit('feed_sink', 'job-p', 7);
SELECT checkpoint_id, properties FROM paimon_sink.last_commit('feed_sink', 'job-p');

-- restart_job's refusals
SELECT * FROM paimon_sink.restart_job('feed_sink', 'job-p', 10000, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.restart_job('feed_sink', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.restart_job('feed_sink',
  (SELECT default_commit_user FROM paimon_sink.sinks WHERE sink_name = 'feed_sink'));
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.restart_job('feed_sink', 'job-p', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.restart_job('feed_sink', 'job-p', 0, -5);
\echo :LAST_ERROR_SQLSTATE
RESET paimon_sink.fence_epoch;
BEGIN;
SELECT * FROM paimon_sink.restart_job('feed_sink', 'job-p');
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
SET ROLE regress_sink_other;
SELECT * FROM paimon_sink.restart_job('feed_sink', 'job-p');
\echo :LAST_ERROR_SQLSTATE
SELECT checkpoint_id FROM paimon_sink.last_commit('feed_sink', 'job-p');
RESET ROLE;
SELECT paimon_sink.clear_faults();
SELECT paimon_sink.drop_sink('feed_sink');
SELECT count(*) AS properties_left FROM paimon_sink.checkpoint_properties;
DROP TABLE feed;
RESET paimon_sink.commit_user;
RESET paimon_sink.writer_id;
