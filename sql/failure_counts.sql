-- The committer counts each failed request by sink and SQLSTATE and writes
-- the counts at most once a second (commit_stats.failures_by_sqlstate).
-- Many failures within one second, of many sinks and SQLSTATEs, once made
-- the committer append to a list kept in a request's memory, freed after
-- each request: it crashed on PostgreSQL 18 and counted garbage on 15.
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;
-- a target that refuses each row with the SQLSTATE the row names, at commit
CREATE TABLE refusing (id int PRIMARY KEY, code text);
CREATE FUNCTION refuse_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION 'row % refused', NEW.id USING ERRCODE = NEW.code;
END
$$;
CREATE TRIGGER refuse BEFORE INSERT ON refusing FOR EACH ROW EXECUTE FUNCTION refuse_row();
SELECT count(*) FROM (
	SELECT paimon_sink.create_sink('refusing_' || i, 'refusing') FROM generate_series(1, 12) i
) created;
-- the committer serving the database, started by a checkpoint of nothing
SELECT checkpoint_id FROM paimon_sink.checkpoint('refusing_1');
RESET ROLE;
SELECT pid AS committer_pid FROM pg_stat_activity
 WHERE backend_type = 'paimon_sink committer' AND datname = current_database() \gset
SET ROLE regress_sink_owner;
-- twelve sinks, each with one row whose SQLSTATE is its own, checkpointed
-- one after another: twelve failures well within the committer's second
SELECT format('INSERT INTO %I VALUES (%s, %L)', 'refusing_' || i, i, 'PS' || lpad(i::text, 3, '0'))
  FROM generate_series(1, 12) i \gexec
SELECT format('SELECT checkpoint_id FROM paimon_sink.checkpoint(%L)', 'refusing_' || i)
  FROM generate_series(1, 12) i \gexec
-- wait for the counts to be written (a second after the failures)
DO $$
BEGIN
	FOR i IN 1..600 LOOP
		EXIT WHEN (SELECT count(*) FROM paimon_sink.commit_stats
			WHERE sink_name LIKE 'refusing\_%' AND failures > 0) = 12;
		PERFORM pg_sleep(0.05);
	END LOOP;
END
$$;
-- each sink counted under its own SQLSTATE, and no other
SELECT sink_name, failures > 0 AS failed,
	(SELECT array_agg(k) FROM jsonb_object_keys(failures_by_sqlstate) k) AS sqlstates,
	last_failure
  FROM paimon_sink.commit_stats WHERE sink_name LIKE 'refusing\_%'
 ORDER BY substr(sink_name, 10)::int;
-- the same committer served it all
RESET ROLE;
SELECT pid = :committer_pid AS same_committer FROM pg_stat_activity
 WHERE backend_type = 'paimon_sink committer' AND datname = current_database();
SET ROLE regress_sink_owner;
SELECT count(*) FROM (
	SELECT paimon_sink.drop_sink('refusing_' || i, force => true) FROM generate_series(1, 12) i
) dropped;
DROP TABLE refusing;
DROP FUNCTION refuse_row();
RESET ROLE;
