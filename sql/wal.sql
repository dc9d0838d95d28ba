-- Staged files in the WAL: every staged byte is a record of the extension's
-- resource manager, readable by name with pg_walinspect.
CREATE EXTENSION pg_walinspect;
CREATE TABLE wal_target (id integer PRIMARY KEY, note text);
SELECT sink_name FROM paimon_sink.create_sink('wal_sink', 'wal_target');
SELECT pg_current_wal_lsn() AS before_lsn,
       (SELECT sum(bytes_staged) FROM paimon_sink.writers) AS before_bytes \gset
INSERT INTO wal_sink SELECT g, repeat('x', g % 50) FROM generate_series(1, 3000) g;
INSERT INTO wal_sink VALUES (3001, 'last');
SELECT pg_current_wal_lsn() AS after_lsn,
       (SELECT sum(bytes_staged) FROM paimon_sink.writers) AS after_bytes \gset
CREATE TEMP TABLE wal_records AS
  SELECT record_type, description
    FROM pg_get_wal_records_info(:'before_lsn', :'after_lsn')
   WHERE resource_manager = 'paimon_sink';
-- a file made, then one batch record per hand-off
SELECT record_type, count(*) > 0 AS present FROM wal_records GROUP BY 1 ORDER BY 1;
-- each batch record names its file, offset, length, rows and transaction
SELECT count(*) AS undescribed FROM wal_records
 WHERE record_type = 'APPEND'
   AND description !~ '^file pg_paimon_sink/[0-9]+/[0-9]+/[0-9a-f-]{36}\.stage offset [0-9]+ length [0-9]+ rows [0-9]+ xid [0-9]+$';
SELECT sum(substring(description FROM ' rows ([0-9]+) ')::integer) AS rows_logged
  FROM wal_records WHERE record_type = 'APPEND';
-- the records hold every staged byte: payloads plus a 64-byte header each
SELECT sum(substring(description FROM ' length ([0-9]+)')::bigint
           - 64) = :after_bytes - :before_bytes AS every_byte_logged
  FROM wal_records WHERE record_type = 'APPEND';
-- the records' files are the files on disk
SELECT count(*) AS files_missing
  FROM (SELECT DISTINCT substring(description FROM '^file ([^ ]+)') AS path
          FROM wal_records) f
 WHERE pg_stat_file(f.path, true) IS NULL;
SELECT set_config('wal.after_lsn', :'after_lsn', false) IS NOT NULL AS noted;
SELECT snapshot_id IS NOT NULL AS committed, row_count
  FROM paimon_sink.checkpoint('wal_sink');
-- The committer removes the committed files after its reply, each removal
-- a record first; pg_current_wal_lsn() shows a record once the WAL writer
-- wrote it.  Wait for both (10 s at most).
CREATE FUNCTION pg_temp.removals_not_logged(since pg_lsn) RETURNS bigint
LANGUAGE sql AS $$
	SELECT count(*)
	  FROM (SELECT DISTINCT substring(description FROM '^file ([^ ]+)') AS path
	          FROM wal_records) f
	 WHERE pg_stat_file(f.path, true) IS NOT NULL
	    OR NOT EXISTS (
		SELECT FROM pg_get_wal_records_info(since, pg_current_wal_lsn()) r
		 WHERE r.resource_manager = 'paimon_sink' AND r.record_type = 'REMOVE'
		   AND r.description = 'file ' || f.path)
$$;
DO $$
BEGIN
	FOR i IN 1..100 LOOP
		EXIT WHEN pg_temp.removals_not_logged(current_setting('wal.after_lsn')::pg_lsn) = 0;
		PERFORM pg_sleep(0.1);
	END LOOP;
END
$$;
-- every file of the load is gone, and its removal is a record
SELECT pg_temp.removals_not_logged(:'after_lsn');
SELECT count(*) FROM wal_target;
SELECT paimon_sink.drop_sink('wal_sink');
DROP TABLE wal_target;
DROP EXTENSION pg_walinspect;
