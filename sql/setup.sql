-- Installing the extension: objects, comments, the workers it starts.
CREATE EXTENSION paimon_sink;
-- what \dx shows (its columns differ by major: 18 adds the default version)
SELECT e.extname, e.extversion, n.nspname AS schema,
       obj_description(e.oid, 'pg_extension') AS description
  FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
 WHERE e.extname = 'paimon_sink';
SELECT count(*) > 0 AS commented
  FROM pg_description d JOIN pg_proc p ON p.oid = d.objoid
  JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'paimon_sink';
-- every public function says what it does
SELECT p.proname
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'paimon_sink' AND obj_description(p.oid, 'pg_proc') IS NULL
   AND p.proname NOT LIKE 'fdw_%'
 ORDER BY 1;
-- the functions that wait for the committer say how the wait ends
SELECT p.oid::regprocedure
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'paimon_sink'
   AND p.proname IN ('prepare_commit', 'commit', 'checkpoint', 'recover', 'end_input',
                     'reject_failing_rows', 'remove_orphan_files', 'discard_missing_files',
                     'restart_job')
   AND obj_description(p.oid, 'pg_proc') NOT LIKE '%57014%committer_timeout%'
 ORDER BY 1;
-- the state-changing functions are not granted to PUBLIC
SELECT p.proname, has_function_privilege('public', p.oid, 'EXECUTE') AS public_execute
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'paimon_sink' AND p.proname NOT LIKE 'fdw_%'
 ORDER BY 1;
SELECT srvname FROM pg_foreign_server WHERE srvname = 'paimon_sink';
-- a role that owns sinks but is no superuser
CREATE ROLE regress_sink_owner LOGIN;
CREATE ROLE regress_sink_other LOGIN;
GRANT CREATE ON SCHEMA public TO regress_sink_owner;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA paimon_sink TO regress_sink_owner, regress_sink_other;
