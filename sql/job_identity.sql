-- A job's identity travels in its transaction: restart_job() hands the
-- attempt a fence epoch; write_as() names commit user, writer id and epoch
-- per transaction; prepare_commit, commit and end_input name the epoch; a
-- stale one (a subtask of a failed attempt) is refused with 55000, and
-- prepare_commit checks the rows a subtask says it sent.
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;
CREATE TABLE jobs_t (id int PRIMARY KEY, s int);
SELECT sink_name FROM paimon_sink.create_sink('jobs_sink', 'jobs_t');

-- before any restart_job(): session settings work as they did, no epoch needed
SET paimon_sink.commit_user = 'job-i';
INSERT INTO jobs_sink VALUES (1, 0);
RESET paimon_sink.commit_user;
SELECT epoch_required, fence_epoch FROM paimon_sink.commit_user_state WHERE commit_user = 'job-i';

-- restart_job() sets no session setting and makes the commit user a job's
SELECT checkpoint_id, discarded_files, fence_epoch AS epoch1
  FROM paimon_sink.restart_job('jobs_sink', 'job-i') \gset
\echo :epoch1
SHOW paimon_sink.commit_user;
SELECT epoch_required, fence_epoch FROM paimon_sink.commit_user_state WHERE commit_user = 'job-i';

-- write_as() only in a transaction block, with every argument checked
SELECT paimon_sink.write_as('jobs_sink', 'job-i', 0, :epoch1);
\echo :LAST_ERROR_SQLSTATE
BEGIN;
SELECT paimon_sink.write_as('jobs_sink', 'job-i', NULL, :epoch1);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN;
SELECT paimon_sink.write_as('no_such_sink', 'job-i', 0, :epoch1);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN;
SELECT paimon_sink.write_as('jobs_sink', 'job-i', -1, :epoch1);
\echo :LAST_ERROR_SQLSTATE
ROLLBACK;
BEGIN;
SELECT paimon_sink.write_as('jobs_sink', 'job-i', 0, :epoch1 + 1);
\echo :LAST_ERROR_SQLSTATE
\echo :LAST_ERROR_MESSAGE
ROLLBACK;

-- the attempt's subtasks write per transaction
BEGIN;
SELECT paimon_sink.write_as('jobs_sink', 'job-i', 0, :epoch1);
INSERT INTO jobs_sink VALUES (10, 0), (11, 0);
COMMIT;
BEGIN;
SELECT paimon_sink.write_as('jobs_sink', 'job-i', 1, :epoch1);
INSERT INTO jobs_sink VALUES (12, 1);
COMMIT;

-- today's session SET of commit user and writer id names no epoch: refused
SET paimon_sink.commit_user = 'job-i';
SET paimon_sink.writer_id = 1;
INSERT INTO jobs_sink VALUES (13, 1);
\echo :LAST_ERROR_SQLSTATE
\echo :LAST_ERROR_MESSAGE
-- a direct connection may name the epoch for the session
SET paimon_sink.fence_epoch = :'epoch1';
INSERT INTO jobs_sink VALUES (13, 1);
SET paimon_sink.fence_epoch = 'x';
\echo :LAST_ERROR_SQLSTATE
RESET paimon_sink.fence_epoch;
RESET paimon_sink.commit_user;
RESET paimon_sink.writer_id;

-- a row that names no commit user, into a sink a job writes to: refused
-- (the hint names the sink's own commit user, a new uuid at each run)
\set VERBOSITY terse
INSERT INTO jobs_sink VALUES (14, 9);
\set VERBOSITY default
\echo :LAST_ERROR_SQLSTATE
\echo :LAST_ERROR_MESSAGE

-- prepares name the epoch; expected_rows is checked, nothing prepared on a mismatch
SELECT * FROM paimon_sink.prepare_commit('jobs_sink', 'job-i', 1, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit('jobs_sink', 'job-i', 1, 0,
  fence_epoch => :epoch1, expected_rows => 3);
\echo :LAST_ERROR_SQLSTATE
\echo :LAST_ERROR_MESSAGE
SELECT count(*) AS committables FROM paimon_sink.committable WHERE commit_user = 'job-i';
SELECT * FROM paimon_sink.prepare_commit('jobs_sink', 'job-i', 1, 0,
  fence_epoch => :epoch1, expected_rows => -1);
\echo :LAST_ERROR_SQLSTATE
SELECT checkpoint_id, writer_id, row_count FROM paimon_sink.prepare_commit('jobs_sink', 'job-i', 1, 0,
  '{"part-0": 2}', fence_epoch => :epoch1, expected_rows => 2);
SELECT checkpoint_id, writer_id, row_count FROM paimon_sink.prepare_commit('jobs_sink', 'job-i', 1, 1,
  '{"part-1": 2}', fence_epoch => :epoch1, expected_rows => 2);
SELECT snapshot_id IS NOT NULL AS snapshot, row_count
  FROM paimon_sink.commit('jobs_sink', 'job-i', 1, :epoch1);

-- the job fails over: the next attempt gets a new epoch
SELECT checkpoint_id, properties, fence_epoch AS epoch2
  FROM paimon_sink.restart_job('jobs_sink', 'job-i') \gset
SELECT :epoch2 > :epoch1 AS newer;

-- a zombie of attempt 1: per transaction, and with session settings, refused
BEGIN;
SELECT paimon_sink.write_as('jobs_sink', 'job-i', 0, :epoch1);
\echo :LAST_ERROR_SQLSTATE
\echo :LAST_ERROR_MESSAGE
ROLLBACK;
SET paimon_sink.commit_user = 'job-i';
SET paimon_sink.fence_epoch = :'epoch1';
INSERT INTO jobs_sink VALUES (20, 0);
\echo :LAST_ERROR_SQLSTATE
RESET paimon_sink.commit_user;
RESET paimon_sink.fence_epoch;
-- its prepare and commit change nothing, even of ids at or below the last committed
SELECT * FROM paimon_sink.prepare_commit('jobs_sink', 'job-i', 1, 0, '{"part-0": 99}',
  fence_epoch => :epoch1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.prepare_commit('jobs_sink', 'job-i', 2, 0, '{"part-0": 99}',
  fence_epoch => :epoch1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.commit('jobs_sink', 'job-i', 2, :epoch1);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.end_input('jobs_sink', 'job-i', :epoch1);
\echo :LAST_ERROR_SQLSTATE

-- attempt 2 with one subtask (rescaled from two) goes on from the positions
BEGIN;
SELECT paimon_sink.write_as('jobs_sink', 'job-i', 0, :epoch2);
INSERT INTO jobs_sink VALUES (21, 0), (22, 0);
COMMIT;
SELECT checkpoint_id, writer_id, row_count FROM paimon_sink.prepare_commit('jobs_sink', 'job-i', 2, 0,
  '{"part-0": 3, "part-1": 3}', fence_epoch => :epoch2, expected_rows => 2);
SELECT row_count FROM paimon_sink.commit('jobs_sink', 'job-i', 2, :epoch2);
SELECT properties FROM paimon_sink.last_commit('jobs_sink', 'job-i');
SELECT * FROM paimon_sink.end_input('jobs_sink', 'job-i');
\echo :LAST_ERROR_SQLSTATE
SELECT newly_committed FROM paimon_sink.end_input('jobs_sink', 'job-i', :epoch2);

-- with its input ended the sink takes rows that name no commit user again
INSERT INTO jobs_sink VALUES (30, 9);
SELECT count(*) FROM paimon_sink.checkpoint('jobs_sink');
SELECT id, s FROM jobs_t ORDER BY id;
SELECT paimon_sink.drop_sink('jobs_sink');
DROP TABLE jobs_t;

-- a sink group's restart gives its members one epoch, whatever each had;
-- write_as() and the calls name the group
CREATE TABLE ga_t (id int PRIMARY KEY);
CREATE TABLE gb_t (id int PRIMARY KEY);
SELECT sink_name FROM paimon_sink.create_sink('ga_sink', 'ga_t');
SELECT sink_name FROM paimon_sink.create_sink('gb_sink', 'gb_t');
SELECT fence_epoch FROM paimon_sink.restart_job('ga_sink', 'job-g');
SELECT fence_epoch FROM paimon_sink.restart_job('ga_sink', 'job-g');
SELECT paimon_sink.create_sink_group('gjob', ARRAY['ga_sink', 'gb_sink']);
SELECT fence_epoch AS gepoch FROM paimon_sink.restart_job('gjob', 'job-g') \gset
SELECT s.sink_name, u.fence_epoch, u.epoch_required FROM paimon_sink.commit_user_state u
  JOIN paimon_sink.sinks s USING (sink_id) WHERE u.commit_user = 'job-g' ORDER BY 1;
BEGIN;
SELECT paimon_sink.write_as('gjob', 'job-g', 0, :gepoch);
INSERT INTO ga_sink VALUES (1);
INSERT INTO gb_sink VALUES (1), (2);
COMMIT;
SELECT * FROM paimon_sink.prepare_commit('gjob', 'job-g', 1, 0, expected_rows => 3,
  fence_epoch => :gepoch);
\echo :LAST_ERROR_SQLSTATE
SELECT row_count FROM paimon_sink.prepare_commit('gjob', 'job-g', 1, 0, fence_epoch => :gepoch);
SELECT row_count FROM paimon_sink.commit('gjob', 'job-g', 1, :gepoch - 1);
\echo :LAST_ERROR_SQLSTATE
SELECT row_count FROM paimon_sink.commit('gjob', 'job-g', 1, :gepoch);
-- a restore from the job's own state re-commits one prepared checkpoint,
-- however far its id is from the last committed one
BEGIN;
SELECT paimon_sink.write_as('gjob', 'job-g', 0, :gepoch);
INSERT INTO ga_sink VALUES (10);
COMMIT;
SELECT row_count FROM paimon_sink.prepare_commit('gjob', 'job-g', 10, 0, fence_epoch => :gepoch);
SELECT checkpoint_id, recommitted_checkpoints, discarded_checkpoints, fence_epoch = :gepoch + 1 AS next_epoch
  FROM paimon_sink.restart_job('gjob', 'job-g', restored_checkpoint_id => 10);
SELECT (SELECT count(*) FROM ga_t) AS a_rows, (SELECT count(*) FROM gb_t) AS b_rows;
SELECT paimon_sink.drop_sink_group('gjob');
SELECT paimon_sink.drop_sink('ga_sink');
SELECT paimon_sink.drop_sink('gb_sink');
DROP TABLE ga_t, gb_t;
RESET ROLE;
