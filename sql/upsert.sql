-- Upsert sinks: a change stream keyed by the target's primary key; each
-- checkpoint applies the latest version of every key.
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;
CREATE TABLE accounts (
	id integer PRIMARY KEY,
	owner text NOT NULL,
	balance numeric(12,2) DEFAULT 0,
	note text
);
SELECT sink_name, foreign_table FROM paimon_sink.create_sink('accounts_sink', 'accounts',
	mode => 'upsert', buckets => 4);
\d accounts_sink
SELECT sink_name, mode, buckets, bucket_key, row_kind_column, partial_update
  FROM paimon_sink.sinks WHERE sink_name = 'accounts_sink';

-- many versions of one key in one checkpoint: the last one wins, with no
-- "ON CONFLICT DO UPDATE command cannot affect row a second time"
INSERT INTO accounts_sink (id, owner, balance) SELECT 1, 'ann', g FROM generate_series(1, 500) g;
INSERT INTO accounts_sink (id, owner, balance, _row_kind) VALUES (2, 'bob', 10, '+I');
INSERT INTO accounts_sink (id, owner, balance, _row_kind) VALUES (2, 'bob', 10, '-U'), (2, 'bob', 20, '+U');
BEGIN;
INSERT INTO accounts_sink (id, owner, balance) VALUES (2, 'bob', 30);
INSERT INTO accounts_sink (id, owner, balance) VALUES (2, 'bob', 40);
COMMIT;
-- a rolled-back version never counts
BEGIN;
INSERT INTO accounts_sink (id, owner, balance) VALUES (2, 'mallory', 999);
ROLLBACK;
SELECT count(*) FROM accounts;
SELECT checkpoint_id, row_count, file_count FROM paimon_sink.checkpoint('accounts_sink');
SELECT * FROM accounts ORDER BY id;

-- update across two checkpoints: the later one wins
INSERT INTO accounts_sink (id, owner, balance, note) VALUES (1, 'ann', 7, 'second');
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('accounts_sink');
SELECT * FROM accounts ORDER BY id;

-- delete then re-insert in one checkpoint: the row is back, as re-inserted
INSERT INTO accounts_sink (id, _row_kind) VALUES (1, '-D');
INSERT INTO accounts_sink (id, owner, balance) VALUES (1, 'ann again', 1);
-- insert then delete in one checkpoint: the key is gone
INSERT INTO accounts_sink (id, owner) VALUES (3, 'carol');
INSERT INTO accounts_sink (id, _row_kind) VALUES (3, '-D');
-- a delete needs only the key; deleting a missing key is a no-op
INSERT INTO accounts_sink (id, _row_kind) VALUES (4, '-D');
INSERT INTO accounts_sink (id, _row_kind) VALUES (2, '-D');
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('accounts_sink');
SELECT * FROM accounts ORDER BY id;
SELECT commit_identifier, row_count FROM paimon_sink.snapshots
 WHERE sink_name = 'accounts_sink' ORDER BY snapshot_id;

-- COPY carries row kinds too
COPY accounts_sink (id, owner, balance, _row_kind) FROM STDIN;
5	dave	5	+I
6	erin	6	\N
5	dave	50	+U
6	\N	\N	-D
\.
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('accounts_sink');
SELECT * FROM accounts ORDER BY id;

-- bad row kinds and NULL keys fail the write; nothing of the transaction is staged
BEGIN;
INSERT INTO accounts_sink (id, owner) VALUES (7, 'frank');
INSERT INTO accounts_sink (id, owner, _row_kind) VALUES (8, 'grace', 'U');
ROLLBACK;
INSERT INTO accounts_sink (id, owner, _row_kind) VALUES (8, 'grace', '+i');
INSERT INTO accounts_sink (id, owner, _row_kind) VALUES (8, 'grace', '');
INSERT INTO accounts_sink (id, owner) VALUES (NULL, 'nobody');
INSERT INTO accounts_sink (id, _row_kind) VALUES (NULL, '-D');
COPY accounts_sink (id, owner, _row_kind) FROM STDIN;
9	heidi	+I
10	ivan	DELETE
\.
-- an upsert still meets the target's constraints at write time; a delete does not need them
INSERT INTO accounts_sink (id, owner) VALUES (11, NULL);
SELECT * FROM paimon_sink.checkpoint('accounts_sink');
SELECT * FROM accounts ORDER BY id;

-- keys compare as the primary key compares them: 1.0 and 1.00 are one key
CREATE TABLE prices (item numeric PRIMARY KEY, price int);
SELECT sink_name FROM paimon_sink.create_sink('prices_sink', 'prices', mode => 'upsert', buckets => 8);
INSERT INTO prices_sink VALUES (1.0, 1);
INSERT INTO prices_sink VALUES (1.00, 2);
INSERT INTO prices_sink VALUES (1.000, 3);
SELECT checkpoint_id, row_count FROM paimon_sink.checkpoint('prices_sink');
SELECT * FROM prices;

-- partial_update: NULL columns keep what the key had
CREATE TABLE profiles (user_id int, region text, name text, email text, visits int,
	PRIMARY KEY (region, user_id));
SELECT sink_name FROM paimon_sink.create_sink('profiles_sink', 'profiles', mode => 'upsert',
	partial_update => true, row_kind_column => 'op');
\d profiles_sink
INSERT INTO profiles_sink (user_id, region, name, email) VALUES (1, 'eu', 'Ann', 'ann@example.com');
INSERT INTO profiles_sink (user_id, region, visits) VALUES (2, 'eu', 1);
SELECT checkpoint_id FROM paimon_sink.checkpoint('profiles_sink');
-- versions of one checkpoint merge, newest first
INSERT INTO profiles_sink (user_id, region, visits) VALUES (1, 'eu', 5);
INSERT INTO profiles_sink (user_id, region, email) VALUES (1, 'eu', 'ann@example.org');
INSERT INTO profiles_sink (user_id, region, visits) VALUES (1, 'eu', 6);
-- after a delete, a key starts afresh
INSERT INTO profiles_sink (user_id, region, name) VALUES (2, 'eu', 'Bob');
INSERT INTO profiles_sink (user_id, region, op) VALUES (2, 'eu', '-D');
INSERT INTO profiles_sink (user_id, region, name) VALUES (2, 'eu', 'Bob II');
SELECT checkpoint_id FROM paimon_sink.checkpoint('profiles_sink');
SELECT * FROM profiles ORDER BY region, user_id;

-- a partitioned target with a row trigger: the commit's MERGE fires it per change
CREATE TABLE readings (site text, day date, value int, PRIMARY KEY (site, day)) PARTITION BY LIST (site);
CREATE TABLE readings_a PARTITION OF readings FOR VALUES IN ('a');
CREATE TABLE readings_b PARTITION OF readings FOR VALUES IN ('b');
CREATE TABLE readings_audit (op text, site text, day date, value int);
CREATE FUNCTION readings_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO readings_audit SELECT TG_OP, (CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END).*;
	RETURN NULL;
END $$;
CREATE TRIGGER audit AFTER INSERT OR UPDATE OR DELETE ON readings
	FOR EACH ROW EXECUTE FUNCTION readings_audit();
SELECT sink_name FROM paimon_sink.create_sink('readings_sink', 'readings', mode => 'upsert', buckets => 2);
INSERT INTO readings_sink VALUES ('a', '2026-01-01', 1), ('b', '2026-01-01', 2), ('a', '2026-01-02', 3);
-- the load runs triggers with search_path pinned: the unqualified name is not found
SELECT checkpoint_id FROM paimon_sink.checkpoint('readings_sink');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) FROM readings;
-- the trigger's own search_path applies; the checkpoint stayed prepared and commits once
ALTER FUNCTION readings_audit() SET search_path = public;
SELECT checkpoint_id FROM paimon_sink.checkpoint('readings_sink');
INSERT INTO readings_sink VALUES ('a', '2026-01-01', 10), ('a', '2026-01-01', 11);
INSERT INTO readings_sink (site, day, _row_kind) VALUES ('b', '2026-01-01', '-D');
SELECT checkpoint_id FROM paimon_sink.checkpoint('readings_sink');
SELECT tableoid::regclass, * FROM readings ORDER BY site, day;
SELECT * FROM readings_audit ORDER BY op, site, day;

-- a table that is all key: an upsert of an existing key changes nothing
CREATE TABLE tags (tag text COLLATE "C" PRIMARY KEY);
SELECT sink_name FROM paimon_sink.create_sink('tags_sink', 'tags', mode => 'upsert');
INSERT INTO tags_sink VALUES ('x'), ('y'), ('x');
SELECT checkpoint_id FROM paimon_sink.checkpoint('tags_sink');
INSERT INTO tags_sink VALUES ('x'), ('z');
INSERT INTO tags_sink (tag, _row_kind) VALUES ('y', '-D');
SELECT checkpoint_id FROM paimon_sink.checkpoint('tags_sink');
SELECT * FROM tags ORDER BY tag;

-- the primary key is the sink's: changing it stops writes and commits, with nothing lost
CREATE TABLE rekeyed (a int PRIMARY KEY, b int NOT NULL, v text);
SELECT sink_name FROM paimon_sink.create_sink('rekeyed_sink', 'rekeyed', mode => 'upsert', buckets => 4);
INSERT INTO rekeyed_sink VALUES (1, 1, 'staged before');
ALTER TABLE rekeyed DROP CONSTRAINT rekeyed_pkey, ADD PRIMARY KEY (b);
INSERT INTO rekeyed_sink VALUES (2, 2, 'refused');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM paimon_sink.checkpoint('rekeyed_sink');
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE rekeyed DROP CONSTRAINT rekeyed_pkey, ADD PRIMARY KEY (a);
SELECT checkpoint_id, newly_committed FROM paimon_sink.commit('rekeyed_sink', NULL, 10);
SELECT * FROM rekeyed;

-- so is its collation: keys are routed by the foreign table's, compared by the key's
CREATE TABLE named (k text PRIMARY KEY, v int);
SELECT sink_name FROM paimon_sink.create_sink('named_sink', 'named', mode => 'upsert', buckets => 8);
INSERT INTO named_sink VALUES ('a', 1);
ALTER TABLE named ALTER COLUMN k TYPE text COLLATE "POSIX";
SELECT * FROM paimon_sink.checkpoint('named_sink');
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE named ALTER COLUMN k TYPE text COLLATE "default";
SELECT checkpoint_id, newly_committed FROM paimon_sink.commit('named_sink', NULL, 10);
SELECT * FROM named;
-- a -U row names its key too
INSERT INTO named_sink (k, v, _row_kind) VALUES (NULL, 1, '-U');
\echo :LAST_ERROR_SQLSTATE

-- a failed commit says what to do; a unique constraint besides the key is
-- checked row by row unless it is deferrable (then at the end of the commit)
CREATE TABLE users (id int PRIMARY KEY, email text UNIQUE);
SELECT sink_name FROM paimon_sink.create_sink('users_sink', 'users', mode => 'upsert');
INSERT INTO users_sink VALUES (10, 'b@example.com'), (20, 'a@example.com');
SELECT checkpoint_id FROM paimon_sink.checkpoint('users_sink');
-- key 20 gives up a@ and key 10 takes it: fine in this order, not key by key
BEGIN;
INSERT INTO users_sink VALUES (20, 'c@example.com');
INSERT INTO users_sink VALUES (10, 'a@example.com');
COMMIT;
SELECT * FROM paimon_sink.checkpoint('users_sink');
\echo :LAST_ERROR_SQLSTATE
RESET ROLE;
ALTER TABLE users DROP CONSTRAINT users_email_key,
	ADD CONSTRAINT users_email_key UNIQUE (email) DEFERRABLE INITIALLY DEFERRED;
SET ROLE regress_sink_owner;
SELECT checkpoint_id, newly_committed FROM paimon_sink.commit('users_sink', NULL, 10);
SELECT * FROM users ORDER BY id;

-- identity columns that are GENERATED ALWAYS take the staged value, as COPY does
CREATE TABLE tickets (id int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	serial bigint GENERATED ALWAYS AS IDENTITY, title text);
SELECT sink_name FROM paimon_sink.create_sink('tickets_sink', 'tickets', mode => 'upsert');
INSERT INTO tickets_sink (title) VALUES ('first'), ('second');
SELECT checkpoint_id FROM paimon_sink.checkpoint('tickets_sink');
INSERT INTO tickets_sink (id, serial, title) VALUES (1, 99, 'first, edited');
SELECT checkpoint_id FROM paimon_sink.checkpoint('tickets_sink');
SELECT * FROM tickets ORDER BY id;

-- ON CONFLICT is the sink's own business
INSERT INTO tickets_sink (title) VALUES ('x') ON CONFLICT DO NOTHING;

-- refused: no primary key, a bucket key outside it, a clashing row kind column
CREATE TABLE plain_log (id int, message text);
SELECT * FROM paimon_sink.create_sink('log_sink', 'plain_log', mode => 'upsert');
SELECT * FROM paimon_sink.create_sink('x_sink', 'accounts', mode => 'upsert', bucket_key => '{owner}');
SELECT * FROM paimon_sink.create_sink('x_sink', 'accounts', mode => 'upsert', row_kind_column => 'note');
SELECT * FROM paimon_sink.create_sink('x_sink', 'accounts', mode => 'upsert', row_kind_column => '');
SELECT * FROM paimon_sink.create_sink('x_sink', 'plain_log', partial_update => true);
CREATE TABLE deferred_key (k int PRIMARY KEY DEFERRABLE, v int);
SELECT * FROM paimon_sink.create_sink('x_sink', 'deferred_key', mode => 'upsert');
CREATE TABLE ruled (k int PRIMARY KEY, v int);
CREATE RULE ruled_log AS ON INSERT TO ruled DO ALSO NOTIFY ruled;
SELECT * FROM paimon_sink.create_sink('x_sink', 'ruled', mode => 'upsert');
-- a bucket key needs a hash function that equal values share (money has none)
CREATE TYPE amount AS (value numeric, price money);
CREATE TABLE by_amount (a amount PRIMARY KEY, v text);
SELECT * FROM paimon_sink.create_sink('x_sink', 'by_amount', mode => 'upsert', buckets => 8);
SELECT sink_name FROM paimon_sink.create_sink('amount_sink', 'by_amount', mode => 'upsert');
INSERT INTO amount_sink VALUES (ROW(1.0, 1)::amount, 'old'), (ROW(1.00, 1)::amount, 'new');
SELECT checkpoint_id FROM paimon_sink.checkpoint('amount_sink');
SELECT * FROM by_amount;
-- the owner needs to read, update and delete the target
RESET ROLE;
CREATE TABLE insert_only (id int PRIMARY KEY, v text);
GRANT INSERT ON insert_only TO regress_sink_owner;
SET ROLE regress_sink_owner;
SELECT * FROM paimon_sink.create_sink('x_sink', 'insert_only', mode => 'upsert');

-- what the committer counted (commit_stats) and what is pending; it writes
-- its counters at most a second after the requests: wait for the 9 requests
DO $$
BEGIN
	FOR i IN 1..600 LOOP
		EXIT WHEN (SELECT sum(commits + skipped_as_committed + failures)
			FROM paimon_sink.commit_stats
			WHERE sink_name IN ('accounts_sink', 'users_sink', 'rekeyed_sink')) >= 9;
		PERFORM pg_sleep(0.05);
	END LOOP;
END
$$;
SELECT sink_name, commits, skipped_as_committed, failures, failures_by_sqlstate, retries,
	rows_committed, bytes_committed > 0 AS bytes, last_commit_ms > 0 AS timed,
	p99_load_ms > 0 AS p99
  FROM paimon_sink.commit_stats WHERE sink_name IN ('accounts_sink', 'users_sink', 'rekeyed_sink')
 ORDER BY sink_name;
SELECT paimon_sink.drop_sink('accounts_sink');
SELECT paimon_sink.drop_sink('prices_sink');
SELECT paimon_sink.drop_sink('profiles_sink');
SELECT paimon_sink.drop_sink('readings_sink');
SELECT paimon_sink.drop_sink('tags_sink');
SELECT paimon_sink.drop_sink('rekeyed_sink');
SELECT paimon_sink.drop_sink('named_sink');
SELECT paimon_sink.drop_sink('users_sink');
SELECT paimon_sink.drop_sink('tickets_sink');
SELECT paimon_sink.drop_sink('amount_sink');
RESET ROLE;
DROP TABLE accounts, prices, profiles, plain_log, insert_only, readings, readings_audit, tags,
	rekeyed, users, tickets, deferred_key, ruled, by_amount, named;
DROP TYPE amount;
DROP FUNCTION readings_audit();
