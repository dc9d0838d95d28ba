-- What a commit costs the catalog, whatever the history behind it: the
-- answer of checkpoint() and commit() reads a few snapshot index entries
-- however many snapshots the sink keeps, and the committer's writes to the
-- extension's tables reach the cumulative statistics that autovacuum reads.
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;
CREATE TABLE cost_target (id int PRIMARY KEY);
SELECT sink_name FROM paimon_sink.create_sink('cost_sink', 'cost_target');
-- the committer's inserts into snapshot_log so far, as the statistics show them
CREATE TEMP TABLE inserted_before AS
  SELECT pg_stat_get_tuples_inserted('paimon_sink.snapshot_log'::regclass) AS n;
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
-- the committer flushes its counts as an idle backend does (at most once a
-- second): the 102 snapshots it inserted show within 30 seconds
DO $$
DECLARE
  before bigint := (SELECT b.n FROM inserted_before b);
  inserted bigint;
BEGIN
  FOR i IN 1..300 LOOP
    PERFORM pg_stat_clear_snapshot();
    inserted := pg_stat_get_tuples_inserted('paimon_sink.snapshot_log'::regclass) - before;
    EXIT WHEN inserted >= 102;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RAISE NOTICE 'the statistics count the committer''s snapshots: %',
    CASE WHEN inserted >= 102 THEN 'yes' ELSE 'no, ' || inserted || ' of 102' END;
END $$;
-- a commit of more checkpoints than its answer holds (16) reads the rest
-- from snapshot_log: 20 prepared checkpoints, one commit()
SELECT s.default_commit_user AS cu,
       paimon_sink.last_committed_checkpoint('cost_sink', s.default_commit_user) AS base
  FROM paimon_sink.sinks s WHERE s.sink_name = 'cost_sink' \gset
\set ECHO none
\o /dev/null
SELECT format('INSERT INTO cost_sink VALUES (%s)', 1000 + g),
       format('SELECT count(*) FROM paimon_sink.prepare_commit(%L, %L, %s)',
              'cost_sink', :'cu', :base + g)
  FROM generate_series(1, 20) g \gexec
\o
\set ECHO all
SELECT count(*) AS snapshots, min(checkpoint_id) - :base AS first,
       max(checkpoint_id) - :base AS last, bool_and(newly_committed) AS all_new,
       count(DISTINCT snapshot_id) AS distinct_snapshots
  FROM paimon_sink.commit('cost_sink', :'cu', :base + 20);
-- its retry answers with the snapshot of the last one, committed before
SELECT count(*) AS snapshots, max(checkpoint_id) - :base AS last,
       bool_or(newly_committed) AS any_new
  FROM paimon_sink.commit('cost_sink', :'cu', :base + 20);
SELECT count(*) FROM paimon_sink.drop_sink('cost_sink');
DROP TABLE cost_target;
RESET ROLE;
