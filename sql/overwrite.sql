-- Overwrite sinks (mode 'overwrite', Paimon's INSERT OVERWRITE): the
-- target is replaced once per commit user, in its first commit; TAP 038
-- shows it across restores and crashes.  Here: the sink's own commit user
-- (SQL sessions), the rights it needs and the combinations refused.
SET ROLE regress_sink_owner;
CREATE TABLE snapshot_t (id int, note text);
INSERT INTO snapshot_t SELECT g, 'before' FROM generate_series(1, 500) g;
SELECT sink_name FROM paimon_sink.create_sink('snapshot_sink', 'snapshot_t', mode => 'overwrite');
SELECT mode, dynamic_partition_overwrite FROM paimon_sink.sinks WHERE sink_name = 'snapshot_sink';
INSERT INTO snapshot_sink SELECT g, 'first' FROM generate_series(1, 100) g;
-- not replaced until a checkpoint commits
SELECT note, count(*) FROM snapshot_t GROUP BY note ORDER BY note;
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('snapshot_sink');
SELECT note, count(*) FROM snapshot_t GROUP BY note ORDER BY note;
-- the second checkpoint of the same commit user appends
INSERT INTO snapshot_sink SELECT g, 'second' FROM generate_series(101, 150) g;
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('snapshot_sink');
SELECT note, count(*) FROM snapshot_t GROUP BY note ORDER BY note;
SELECT commit_identifier, commit_kind, row_count FROM paimon_sink.snapshots
 WHERE sink_name = 'snapshot_sink' ORDER BY snapshot_id;
SELECT paimon_sink.drop_sink('snapshot_sink');

-- combinations refused (22023)
CREATE TABLE parted (id int, k int) PARTITION BY LIST (k);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES IN (1);
SELECT * FROM paimon_sink.create_sink('x', 'parted', dynamic_partition_overwrite => true);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.create_sink('x', 'snapshot_t', mode => 'overwrite',
  dynamic_partition_overwrite => true);
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.create_sink('x', 'snapshot_t', mode => 'overwrite',
  partial_update => true);
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;

-- an overwrite sink needs the DELETE right too (42501, the GRANT in its hint)
CREATE TABLE others_t (id int);
GRANT INSERT ON others_t TO regress_sink_owner;
SET ROLE regress_sink_owner;
SELECT * FROM paimon_sink.create_sink('x', 'others_t', mode => 'overwrite');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
GRANT DELETE ON others_t TO regress_sink_owner;
SET ROLE regress_sink_owner;
SELECT sink_name FROM paimon_sink.create_sink('others_sink', 'others_t', mode => 'overwrite');
SELECT paimon_sink.drop_sink('others_sink');
SELECT sink_name FROM paimon_sink.create_sink('parted_sink', 'parted', mode => 'overwrite',
  dynamic_partition_overwrite => true);
SELECT paimon_sink.drop_sink('parted_sink');
RESET ROLE;
DROP TABLE others_t, parted, snapshot_t;
