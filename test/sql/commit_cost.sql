-- What a commit costs the catalog, whatever the history behind it: the
-- answer of checkpoint() and commit() reads a few snapshot index entries
-- however many snapshots the sink keeps.
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;
CREATE TABLE cost_target (id int PRIMARY KEY);
SELECT sink_name FROM paimon_sink.create_sink('cost_sink', 'cost_target');
-- 100 checkpoints of one row each: 100 snapshots kept
\set ECHO none
\o /dev/null
SELECT format('INSERT INTO cost_sink VALUES (%s)', g),
       'SELECT * FROM paimon_sink.checkpoint(''cost_sink'')'
  FROM generate_series(1, 100) g \gexec
\o
\set ECHO all
SELECT count(*) AS snapshots_kept FROM paimon_sink.snapshots WHERE sink_name = 'cost_sink';
-- one more checkpoint and a commit() reread only what they made: the index
-- entries of snapshot_log the calls return in this transaction (a DO block,
-- so that the counts before and after are the session's own)
INSERT INTO cost_sink VALUES (101);
CREATE FUNCTION pg_temp.snapshot_entries_read() RETURNS bigint LANGUAGE sql AS $$
  SELECT sum(pg_stat_get_xact_tuples_returned(i.indexrelid))::bigint
    FROM pg_index i WHERE i.indrelid = 'paimon_sink.snapshot_log'::regclass $$;
DO $$
DECLARE
  before bigint := pg_temp.snapshot_entries_read();
  rows_returned bigint;
  entries bigint;
BEGIN
  SELECT count(*) INTO rows_returned FROM paimon_sink.checkpoint('cost_sink');
  entries := pg_temp.snapshot_entries_read() - before;
  RAISE NOTICE 'checkpoint() returned % snapshot, reading % or fewer snapshot index entries: %',
    rows_returned, 4, CASE WHEN entries <= 4 THEN 'yes' ELSE 'no, ' || entries END;
END $$;
INSERT INTO cost_sink VALUES (102);
DO $$
DECLARE
  commit_user text := (SELECT s.default_commit_user FROM paimon_sink.sinks s
                       WHERE s.sink_name = 'cost_sink');
  next_id bigint := paimon_sink.last_committed_checkpoint('cost_sink', commit_user) + 1;
  before bigint;
  rows_returned bigint;
  entries bigint;
BEGIN
  PERFORM paimon_sink.prepare_commit('cost_sink', commit_user, next_id);
  before := pg_temp.snapshot_entries_read();
  SELECT count(*) INTO rows_returned FROM paimon_sink.commit('cost_sink', commit_user, next_id);
  entries := pg_temp.snapshot_entries_read() - before;
  RAISE NOTICE 'commit() returned % snapshot, reading % or fewer snapshot index entries: %',
    rows_returned, 4, CASE WHEN entries <= 4 THEN 'yes' ELSE 'no, ' || entries END;
END $$;
SELECT count(*) FROM cost_target;
SELECT count(*) FROM paimon_sink.drop_sink('cost_sink');
DROP TABLE cost_target;
RESET ROLE;
