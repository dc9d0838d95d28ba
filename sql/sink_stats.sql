-- sink_stats: one row per sink and commit user, in the style of
-- PostgreSQL's pg_stat_* views, its counters kept in the catalog
-- (commit_user_state) and counted in the commit's own transaction; and
-- reset_sink_stats(), for the sink's owner and for pg_monitor.  Failures
-- and skipped commits are written before the request is answered: no
-- wait here (TAP 070 checks that the counters survive a crash).
\set SHOW_CONTEXT never
-- the view's columns, in order
SELECT attname, format_type(atttypid, atttypmod)
  FROM pg_attribute WHERE attrelid = 'paimon_sink.sink_stats'::regclass AND attnum > 0
 ORDER BY attnum;
-- granted to PUBLIC and to pg_monitor; the reset checks the caller itself
SELECT has_table_privilege('public', 'paimon_sink.sink_stats', 'SELECT') AS public_reads,
       has_table_privilege('pg_monitor', 'paimon_sink.sink_stats', 'SELECT') AS monitor_reads,
       has_function_privilege('public', 'paimon_sink.reset_sink_stats(text)', 'EXECUTE') AS public_resets;
CREATE ROLE regress_stats_monitor LOGIN IN ROLE pg_monitor;
SET ROLE regress_sink_owner;
CREATE TABLE stats_target (id int, v text);
-- a trigger refuses a row only when its checkpoint commits
CREATE FUNCTION stats_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.v = 'refused' THEN
		RAISE EXCEPTION 'refused row %', NEW.id;
	END IF;
	RETURN NEW;
END
$$;
CREATE TRIGGER refuse BEFORE INSERT ON stats_target FOR EACH ROW EXECUTE FUNCTION stats_refuse();
SELECT sink_name FROM paimon_sink.create_sink('stats_sink', 'stats_target');
SELECT sink_name FROM paimon_sink.create_sink('stats_other', 'stats_target');
\set job_user 'stats-job'
SET paimon_sink.commit_user = 'stats-job';
-- a fresh commit user: zeros, no commit yet, nothing pending
INSERT INTO stats_sink VALUES (1, 'a'), (2, 'b'), (3, 'c');
SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('stats_sink', :'job_user', 1);
SELECT commits, rows_committed, bytes_committed, failures, skipped_as_committed,
       last_commit_time IS NULL AS never_committed, seconds_since_last_commit,
       pending_checkpoints, oldest_pending_checkpoint, oldest_pending_seconds >= 0 AS pending_age,
       staged_files, staged_rows, staged_bytes > 0 AS staged_bytes, load_samples,
       stats_reset <= now() AS stats_reset
  FROM paimon_sink.sink_stats WHERE sink_name = 'stats_sink' AND commit_user = :'job_user';
-- a row written and in no checkpoint yet: open in a writer's file (counted before the
-- INSERT's hand-off is acknowledged), then the checkpoint's
INSERT INTO stats_sink VALUES (4, 'd');
SELECT open_files, open_rows, open_bytes > 0 AS open_bytes, oldest_open_seconds >= 0 AS open_age
  FROM paimon_sink.sink_stats WHERE sink_name = 'stats_sink' AND commit_user = :'job_user';
-- a second checkpoint prepared: two pending, the oldest is 1; nothing open
SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('stats_sink', :'job_user', 2);
SELECT pending_checkpoints, oldest_pending_checkpoint, staged_rows,
       open_files, open_rows, open_bytes, oldest_open_at, oldest_open_seconds
  FROM paimon_sink.sink_stats WHERE sink_name = 'stats_sink' AND commit_user = :'job_user';
SELECT sum(byte_count) AS staged_bytes FROM paimon_sink.pending_checkpoints
 WHERE sink_name = 'stats_sink' AND commit_user = :'job_user' \gset
SELECT staged_bytes = :staged_bytes AS staged_bytes_match
  FROM paimon_sink.sink_stats WHERE sink_name = 'stats_sink' AND commit_user = :'job_user';
-- both committed: two commits, their rows and bytes, nothing pending
SELECT checkpoint_id, row_count, newly_committed FROM paimon_sink.commit('stats_sink', :'job_user', 2);
SELECT s.commits, s.rows_committed, s.bytes_committed = :staged_bytes AS bytes_match,
       s.last_commit_time = u.last_committed_at AS last_commit_time,
       s.seconds_since_last_commit >= 0 AS since_last, s.last_committed_checkpoint,
       s.pending_checkpoints, s.oldest_pending_checkpoint, s.oldest_pending_seconds,
       s.staged_files, s.staged_rows, s.staged_bytes, s.load_samples,
       s.load_ms_p50 <= s.load_ms_p99 AND s.load_ms_p99 <= s.load_ms_max AS percentiles_ordered
  FROM paimon_sink.sink_stats s
  JOIN paimon_sink.sink_definition d ON d.sink_name = s.sink_name
  JOIN paimon_sink.commit_user_state u ON u.sink_id = d.sink_id AND u.commit_user = s.commit_user
 WHERE s.sink_name = 'stats_sink' AND s.commit_user = :'job_user';
-- the same commit again: answered newly_committed = false, counted as skipped (not as a commit),
-- at once (written before the answer)
SELECT newly_committed FROM paimon_sink.commit('stats_sink', :'job_user', 2);
SELECT newly_committed FROM paimon_sink.commit('stats_sink', :'job_user', 1);
SELECT commits, skipped_as_committed, failures
  FROM paimon_sink.sink_stats WHERE sink_name = 'stats_sink' AND commit_user = :'job_user';
-- a commit the target refuses: a failure of that commit user, counted at once; nothing committed
INSERT INTO stats_sink VALUES (5, 'refused');
SELECT checkpoint_id FROM paimon_sink.prepare_commit('stats_sink', :'job_user', 3) LIMIT 1;
SELECT newly_committed FROM paimon_sink.commit('stats_sink', :'job_user', 3);
\echo :LAST_ERROR_SQLSTATE
SELECT commits, rows_committed, failures, skipped_as_committed, pending_checkpoints, staged_rows
  FROM paimon_sink.sink_stats WHERE sink_name = 'stats_sink' AND commit_user = :'job_user';
-- moved aside, it commits: one commit more
SELECT row_count FROM paimon_sink.reject_failing_rows('stats_sink', 3, :'job_user');
SELECT commits, rows_committed, failures, pending_checkpoints
  FROM paimon_sink.sink_stats WHERE sink_name = 'stats_sink' AND commit_user = :'job_user';
-- a checkpoint with properties is recorded by statements, not by the direct
-- write: counted the same
INSERT INTO stats_sink VALUES (9, 'p'), (10, 'p');
SELECT count(*) FROM paimon_sink.prepare_commit('stats_sink', :'job_user', 4,
                                               properties => '{"offset": 10}');
SELECT row_count, newly_committed FROM paimon_sink.commit('stats_sink', :'job_user', 4);
SELECT commits, rows_committed, pending_checkpoints
  FROM paimon_sink.sink_stats WHERE sink_name = 'stats_sink' AND commit_user = :'job_user';
SELECT properties FROM paimon_sink.last_commit('stats_sink', :'job_user');
RESET paimon_sink.commit_user;
-- the sink's own commit user has a row of its own
INSERT INTO stats_sink VALUES (6, 'e');
SELECT row_count FROM paimon_sink.checkpoint('stats_sink');
INSERT INTO stats_other VALUES (7, 'f');
SELECT row_count FROM paimon_sink.checkpoint('stats_other');
SELECT sink_name, commit_user = :'job_user' AS job, commits, rows_committed, failures,
       skipped_as_committed
  FROM paimon_sink.sink_stats WHERE sink_name IN ('stats_sink', 'stats_other')
 ORDER BY sink_name, job;
-- reset: another role may not; the owner may, in a transaction (a rollback keeps the counts)
RESET ROLE;
SET ROLE regress_sink_other;
SELECT paimon_sink.reset_sink_stats('stats_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT paimon_sink.reset_sink_stats('no_such_sink');
\echo :LAST_ERROR_SQLSTATE
-- with no name: the sinks it may reset, none
SELECT paimon_sink.reset_sink_stats();
RESET ROLE;
SET ROLE regress_sink_owner;
BEGIN;
SELECT paimon_sink.reset_sink_stats('stats_sink');
ROLLBACK;
SELECT sink_name, commits > 0 AS counted FROM paimon_sink.sink_stats
 WHERE sink_name IN ('stats_sink', 'stats_other') ORDER BY sink_name, commit_user = :'job_user';
SELECT now() AS before_reset \gset
SELECT paimon_sink.reset_sink_stats('stats_sink');
SELECT sink_name, commit_user = :'job_user' AS job, commits, rows_committed,
       bytes_committed > 0 AS bytes_counted, failures, skipped_as_committed,
       stats_reset >= :'before_reset' AS reset, last_commit_time IS NOT NULL AS last_commit_kept,
       load_samples, load_ms_p99 >= 0 AS load_ms_p99
  FROM paimon_sink.sink_stats WHERE sink_name IN ('stats_sink', 'stats_other')
 ORDER BY sink_name, job;
-- the reset records the counters as they were; the commit user's own row keeps counting
-- (a reset takes no lock a commit needs)
RESET ROLE;
SELECT u.commits > 0 AS row_kept, r.commits = u.commits AS recorded
  FROM paimon_sink.commit_user_state u
  JOIN paimon_sink.sink_stats_reset r USING (sink_id, commit_user)
  JOIN paimon_sink.sink_definition d USING (sink_id)
 WHERE d.sink_name = 'stats_sink' AND u.commit_user <> :'job_user';
SET ROLE regress_sink_owner;
-- counted again from zero after the reset
INSERT INTO stats_sink VALUES (8, 'g');
SELECT row_count FROM paimon_sink.checkpoint('stats_sink');
SELECT commits, rows_committed, load_samples
  FROM paimon_sink.sink_stats WHERE sink_name = 'stats_sink' AND commit_user <> :'job_user';
-- pg_monitor may reset any sink, and all of them with no name
RESET ROLE;
SET ROLE regress_stats_monitor;
SELECT sink_name, commits FROM paimon_sink.sink_stats
 WHERE sink_name = 'stats_other';
SELECT paimon_sink.reset_sink_stats('stats_other');
SELECT paimon_sink.reset_sink_stats() >= 3 AS reset_all;
SELECT count(*) AS counting FROM paimon_sink.sink_stats WHERE commits > 0;
RESET ROLE;
SET ROLE regress_sink_owner;
-- a sink group's commit that fails is a failure of each member: the group commits its
-- members as one, so none of their checkpoints committed (here the second member's target
-- refuses a row)
CREATE TABLE stats_ga (id int, v text);
CREATE TABLE stats_gb (id int, v text);
CREATE TRIGGER refuse BEFORE INSERT ON stats_gb FOR EACH ROW EXECUTE FUNCTION stats_refuse();
SELECT sink_name FROM paimon_sink.create_sink('stats_ga_sink', 'stats_ga');
SELECT sink_name FROM paimon_sink.create_sink('stats_gb_sink', 'stats_gb');
SELECT paimon_sink.create_sink_group('stats_grp', ARRAY['stats_ga_sink', 'stats_gb_sink']);
SET paimon_sink.commit_user = 'stats-grp-job';
INSERT INTO stats_ga_sink VALUES (1, 'a');
INSERT INTO stats_gb_sink VALUES (1, 'refused');
SELECT count(*) FROM paimon_sink.prepare_commit('stats_grp', 'stats-grp-job', 1);
SELECT newly_committed FROM paimon_sink.commit('stats_grp', 'stats-grp-job', 1);
\echo :LAST_ERROR_SQLSTATE
RESET paimon_sink.commit_user;
SELECT sink_name, commits, failures, pending_checkpoints, staged_rows
  FROM paimon_sink.sink_stats WHERE commit_user = 'stats-grp-job' ORDER BY sink_name;
-- a group's name resets each member's counters
SELECT paimon_sink.reset_sink_stats('stats_grp');
SELECT sink_name, failures FROM paimon_sink.sink_stats
 WHERE commit_user = 'stats-grp-job' ORDER BY sink_name;
SELECT paimon_sink.drop_sink_group('stats_grp');
SELECT paimon_sink.drop_sink('stats_ga_sink', force => true);
SELECT paimon_sink.drop_sink('stats_gb_sink', force => true);
DROP TABLE stats_ga, stats_gb;
SELECT paimon_sink.drop_sink('stats_sink');
SELECT paimon_sink.drop_sink('stats_other');
DROP TABLE stats_target;
DROP FUNCTION stats_refuse();
RESET ROLE;
-- drop_sink removes the recorded counters with the sink
SELECT count(*) AS recorded_left FROM paimon_sink.sink_stats_reset r
 WHERE NOT EXISTS (SELECT FROM paimon_sink.sink_definition d WHERE d.sink_id = r.sink_id);
DROP ROLE regress_stats_monitor;
