-- Upgrades.  The library serves only the extension version it was built
-- for; ALTER EXTENSION paimon_sink UPDATE brings an older one to it.  (TAP
-- 009 upgrades a cluster that the released library wrote.)
SELECT e.extversion = a.default_version AS installed_is_default,
       paimon_sink.library_version() = a.default_version AS library_is_default
  FROM pg_extension e JOIN pg_available_extensions a ON a.name = e.extname
 WHERE e.extname = 'paimon_sink';
-- every released version updates to the current one
SELECT source, target, path
  FROM pg_extension_update_paths('paimon_sink')
 WHERE path IS NOT NULL AND target = (SELECT default_version FROM pg_available_extensions
                                       WHERE name = 'paimon_sink')
 ORDER BY source;
-- the functions that check the version say so; the others raise no 55000 for it
SELECT p.proname
  FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
 WHERE n.nspname = 'paimon_sink'
   AND obj_description(p.oid, 'pg_proc') NOT LIKE '%55000 while the extension''s version is not the library''s%'
 ORDER BY 1;
-- a database with the released version, under this library
CREATE DATABASE regress_paimon_sink_upgrade;
\c regress_paimon_sink_upgrade
CREATE EXTENSION paimon_sink VERSION '0.1';
SELECT extversion FROM pg_extension WHERE extname = 'paimon_sink';
CREATE TABLE events (id int PRIMARY KEY, note text);
-- refused, with the command that fixes it
SELECT * FROM paimon_sink.create_sink('events_sink', 'events');
SELECT paimon_sink.last_committed_checkpoint('events_sink', 'job');
SELECT * FROM paimon_sink.writers;
ALTER EXTENSION paimon_sink UPDATE;
SELECT extversion = paimon_sink.library_version() AS versions_agree
  FROM pg_extension WHERE extname = 'paimon_sink';
SELECT sink_name FROM paimon_sink.create_sink('events_sink', 'events');
INSERT INTO events_sink VALUES (1, 'after the update'), (2, 'after the update');
SELECT checkpoint_id, row_count, newly_committed FROM paimon_sink.checkpoint('events_sink');
SELECT * FROM events ORDER BY id;
SELECT paimon_sink.drop_sink('events_sink');
\c contrib_regression
DROP DATABASE regress_paimon_sink_upgrade;
