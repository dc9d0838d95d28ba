/* paimon_sink--0.1--0.2.sql: from 0.1 to 0.2 */

\echo Use "ALTER EXTENSION paimon_sink UPDATE TO '0.2'" to load this file. \quit

-- 0.2's library checks the extension's version: until this script has run,
-- its committer waits and its functions refuse with 55000.  Nothing staged,
-- prepared or in doubt changes: the staged-file format (4) and the catalog
-- tables are 0.1's.

CREATE FUNCTION paimon_sink.library_version() RETURNS text
	AS 'MODULE_PATHNAME', 'paimon_sink_library_version' LANGUAGE C STRICT STABLE;
COMMENT ON FUNCTION paimon_sink.library_version() IS
$$The version of the loaded paimon_sink library (text); \dx shows the version of the extension in this database. They differ after a package upgrade until ALTER EXTENSION paimon_sink UPDATE runs: meanwhile the committer waits and the other functions raise 55000. Raises no error.$$;

-- Each function below starts with the library's version check.
DO $$
DECLARE
	f regprocedure;
BEGIN
	FOR f IN SELECT unnest(ARRAY[
		'paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean)',
		'paimon_sink.drop_sink(text, boolean)',
		'paimon_sink.prepare_commit(text, text, bigint, integer)',
		'paimon_sink.commit(text, text, bigint)',
		'paimon_sink.checkpoint(text)',
		'paimon_sink.last_committed_checkpoint(text, text)',
		'paimon_sink.writer_status()',
		'paimon_sink.commit_progress()',
		'paimon_sink.start_workers()',
		'paimon_sink.recover(text, text, bigint, text)',
		'paimon_sink.end_input(text, text)',
		'paimon_sink.remove_orphan_files(text, interval, boolean)',
		'paimon_sink.expire_snapshots(text, integer, interval)']::regprocedure[])
	LOOP
		EXECUTE format('COMMENT ON FUNCTION %s IS %L', f,
			coalesce(obj_description(f, 'pg_proc') || ' ', '') ||
			'Also 55000 while the extension''s version is not the library''s (see library_version()).');
	END LOOP;
END
$$;

-- A committer that is not running (say, after a failed DROP DATABASE) is
-- started: it waits until this update commits, then resumes.
SELECT paimon_sink.start_workers();
