-- pg_monitor (the role PostgreSQL gives monitoring tools) reads the
-- monitoring views, even where a site revokes them from PUBLIC, and sees
-- no other role's row data or error text there: a failed commit's message
-- (which may carry the target's data: a trigger's RAISE, a value that does
-- not fit) stays the sink owner's, and so do the refused rows.
\set SHOW_CONTEXT never
CREATE ROLE regress_monitor LOGIN IN ROLE pg_monitor;
CREATE ROLE regress_plain LOGIN;
SET ROLE regress_sink_owner;
-- a target that refuses a row, its message carrying the row's data
CREATE TABLE watched (id int, secret text);
CREATE FUNCTION refuse_secret() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF NEW.secret LIKE 'bad%' THEN
		RAISE EXCEPTION 'refused row with secret %', NEW.secret;
	END IF;
	RETURN NEW;
END
$$;
CREATE TRIGGER refuse BEFORE INSERT ON watched FOR EACH ROW EXECUTE FUNCTION refuse_secret();
SELECT sink_name FROM paimon_sink.create_sink('watched_sink', 'watched');
SELECT sink_name FROM paimon_sink.create_sink('rejecting_sink', 'watched', on_error => 'reject');
INSERT INTO watched_sink VALUES (1, 'fine');
SELECT row_count FROM paimon_sink.checkpoint('watched_sink');
INSERT INTO watched_sink VALUES (2, 'bad-watched');
SELECT row_count FROM paimon_sink.checkpoint('watched_sink');
\echo :LAST_ERROR_SQLSTATE
INSERT INTO rejecting_sink VALUES (3, 'bad-rejected'), (4, 'kept');
SELECT row_count FROM paimon_sink.checkpoint('rejecting_sink');
-- the committer writes its counters at most a second after the requests
DO $$
BEGIN
	FOR i IN 1..600 LOOP
		EXIT WHEN (SELECT failures FROM paimon_sink.commit_stats
			WHERE sink_name = 'watched_sink') >= 1 AND (SELECT commits
			FROM paimon_sink.commit_stats WHERE sink_name = 'rejecting_sink') >= 1;
		PERFORM pg_sleep(0.05);
	END LOOP;
END
$$;
-- the owner reads the failure's message and the refused row
SELECT sink_name, commits, failures, failures_by_sqlstate, last_failure
  FROM paimon_sink.commit_stats WHERE sink_name = 'watched_sink';
SELECT sink_name, sqlstate, row_data FROM paimon_sink.rejects;
RESET ROLE;

-- the views granted to pg_monitor itself (every one is PUBLIC's too):
-- not rejects, nor the test view faults
SELECT c.relname, EXISTS (SELECT FROM aclexplode(c.relacl) a
		WHERE a.grantee = 'pg_monitor'::regrole AND a.privilege_type = 'SELECT') AS pg_monitor,
	has_table_privilege('public', c.oid, 'SELECT') AS public
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'paimon_sink' AND c.relkind = 'v'
 ORDER BY 1;

-- a pg_monitor member: the counts and states, no message, no refused row
SET ROLE regress_monitor;
SELECT sink_name, commits, failures, failures_by_sqlstate, last_failure
  FROM paimon_sink.commit_stats WHERE sink_name IN ('watched_sink', 'rejecting_sink')
 ORDER BY sink_name;
SELECT sink_name, mode FROM paimon_sink.sinks
 WHERE sink_name IN ('watched_sink', 'rejecting_sink') ORDER BY sink_name;
SELECT count(*) AS pending FROM paimon_sink.pending_checkpoints WHERE sink_name = 'watched_sink';
SELECT count(*) > 0 AS snapshots FROM paimon_sink.snapshots WHERE sink_name = 'watched_sink';
SELECT count(*) AS writers FROM paimon_sink.writers;
SELECT count(*) AS in_doubt FROM paimon_sink.in_doubt;
SELECT count(*) AS progress FROM paimon_sink.commit_progress;
SELECT count(*) AS scheduled FROM paimon_sink.checkpoint_schedule;
SELECT count(*) AS groups FROM paimon_sink.sink_groups;
SELECT count(*) AS rejects FROM paimon_sink.rejects;
SELECT last_message FROM paimon_sink.commit_failures;
\echo :LAST_ERROR_SQLSTATE
SELECT row_data FROM paimon_sink.rejected_row;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- a site that revokes the views from PUBLIC: pg_monitor still reads them
REVOKE SELECT ON paimon_sink.sinks, paimon_sink.commit_stats, paimon_sink.writers FROM PUBLIC;
SET ROLE regress_plain;
SELECT count(*) FROM paimon_sink.commit_stats;
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM paimon_sink.writers;
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
SET ROLE regress_monitor;
SELECT sink_name, failures, last_failure FROM paimon_sink.commit_stats
 WHERE sink_name = 'watched_sink';
SELECT count(*) AS writers FROM paimon_sink.writers;
SELECT count(*) AS sinks FROM paimon_sink.sinks WHERE sink_name IN ('watched_sink', 'rejecting_sink');
RESET ROLE;
GRANT SELECT ON paimon_sink.sinks, paimon_sink.commit_stats, paimon_sink.writers TO PUBLIC;

SET ROLE regress_sink_owner;
SELECT paimon_sink.drop_sink('watched_sink', force => true);
SELECT paimon_sink.drop_sink('rejecting_sink', force => true);
DROP TABLE watched;
DROP FUNCTION refuse_secret();
RESET ROLE;
DROP ROLE regress_monitor, regress_plain;
