-- The changes of a sink's target that ALTER TABLE (and ALTER TYPE) refuse
-- as they are made, each with its SQLSTATE, and the near ones that pass and
-- are followed: a staged row, written before every change, commits after
-- them into the target as it is then (docs/schema-changes.md).
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;
CREATE TYPE mood AS ENUM ('calm', 'angry');
CREATE TYPE pair AS (x int, y int);
CREATE DOMAIN pair_domain AS pair;
CREATE DOMAIN positive AS int4 CHECK (VALUE > 0);
CREATE DOMAIN required AS int4 NOT NULL;
CREATE DOMAIN short_text AS varchar(5);
CREATE DOMAIN long_text AS varchar(20);
CREATE TABLE point_row (x int, y int);
CREATE TABLE shaped (id int PRIMARY KEY, n int4, big int8, c char(5), ts timestamp(0),
  f float4, v short_text, nums int4[], m mood, p pair_domain, ps pair[], r point_row,
  tags varchar(3)[]);
SELECT sink_name FROM paimon_sink.create_sink('shaped_sink', 'shaped');
INSERT INTO shaped_sink VALUES (1, 2147483647, 9007199254740993, 'ab', '2026-01-01 10:00:00',
  0.1, 'abcde', '{1,2}', 'calm', '(1,2)', '{"(3,4)"}', '(5,6)',
  '{abc,de}');

-- a cast that may not keep a staged value, or whose result reads a setting
-- (TimeZone), or a domain with a constraint: refused (42804)
ALTER TABLE shaped ALTER COLUMN big TYPE oid;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ALTER COLUMN n TYPE float4;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ALTER COLUMN big TYPE float8;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ALTER COLUMN n TYPE numeric(9, 0);
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ALTER COLUMN ts TYPE timestamptz;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ALTER COLUMN n TYPE positive;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ALTER COLUMN n TYPE required;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ALTER COLUMN v TYPE varchar(3);
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ALTER COLUMN c TYPE text[] USING ARRAY[c];
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ALTER COLUMN tags TYPE varchar(2)[];
\echo :LAST_ERROR_SQLSTATE
-- USING converts the table's rows otherwise than a load the staged ones (0A000)
ALTER TABLE shaped ALTER COLUMN n TYPE int8 USING n * 1000;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ALTER COLUMN n TYPE int4 USING n + 1;
\echo :LAST_ERROR_SQLSTATE

-- the layout of a type whose values are staged, through a domain and an
-- array, or a table's row type, and an enum's labels (0A000); a new enum
-- value is free
ALTER TYPE pair ADD ATTRIBUTE z int;
\echo :LAST_ERROR_SQLSTATE
ALTER TYPE pair DROP ATTRIBUTE y;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE point_row ADD COLUMN z int;
\echo :LAST_ERROR_SQLSTATE
ALTER TYPE mood RENAME VALUE 'calm' TO 'serene';
\echo :LAST_ERROR_SQLSTATE
ALTER TYPE mood ADD VALUE 'sad';

-- a column the sink does not write left NOT NULL without a default, however
-- it gets so (55000)
ALTER TABLE shaped ADD COLUMN w int NOT NULL;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ADD COLUMN w int NOT NULL DEFAULT NULL;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ADD COLUMN w required;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ADD COLUMN w int, ALTER COLUMN w SET NOT NULL;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ADD COLUMN extra int, ADD COLUMN filled int NOT NULL DEFAULT 0;
ALTER TABLE shaped ALTER COLUMN extra SET NOT NULL;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped DROP CONSTRAINT shaped_pkey, ADD PRIMARY KEY (id, extra);
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ALTER COLUMN filled DROP DEFAULT;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ALTER COLUMN filled SET DEFAULT NULL;
\echo :LAST_ERROR_SQLSTATE
-- ... and what leaves a value for it passes: a default first, a serial, a
-- column PostgreSQL skips (IF NOT EXISTS)
ALTER TABLE shaped ALTER COLUMN extra SET DEFAULT 7, ALTER COLUMN extra SET NOT NULL;
ALTER TABLE shaped ALTER COLUMN filled DROP DEFAULT, ALTER COLUMN filled SET DEFAULT 1;
ALTER TABLE shaped ADD COLUMN s serial NOT NULL;
ALTER TABLE shaped ADD COLUMN IF NOT EXISTS filled int NOT NULL;

-- a role that may not alter the table meets PostgreSQL's own error (42501),
-- and IF EXISTS of no table its notice
SET ROLE regress_sink_other;
ALTER TABLE shaped ALTER COLUMN n TYPE text;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE shaped ADD COLUMN z int NOT NULL;
\echo :LAST_ERROR_SQLSTATE
ALTER TYPE mood RENAME VALUE 'calm' TO 'serene';
\echo :LAST_ERROR_SQLSTATE
SET ROLE regress_sink_owner;
ALTER TABLE IF EXISTS no_such_table ADD COLUMN z int NOT NULL;

-- casts that keep every value pass, the staged row is cast as the table's
-- rows were: a longer char, more fractional seconds, a numeric with enough
-- digits, a domain over a longer varchar, arrays of a wider type, float4 to
-- float8, USING of the bare cast
ALTER TABLE shaped ALTER COLUMN c TYPE char(10);
ALTER TABLE shaped ALTER COLUMN ts TYPE timestamp(3);
ALTER TABLE shaped ALTER COLUMN n TYPE numeric(12, 0);
ALTER TABLE shaped ALTER COLUMN v TYPE long_text;
ALTER TABLE shaped ALTER COLUMN nums TYPE int8[];
ALTER TABLE shaped ALTER COLUMN tags TYPE varchar(10)[];
ALTER TABLE shaped ALTER COLUMN f TYPE float8;
ALTER TABLE shaped ALTER COLUMN big TYPE numeric(25, 0) USING big::numeric(25, 0);
SELECT row_count FROM paimon_sink.checkpoint('shaped_sink');
SELECT id, n, big, octet_length(c) AS c_length, ts, f = 0.1::float4 AS f_kept, v, nums, m, p, ps,
       r, tags, extra, filled, s
  FROM shaped;
SELECT paimon_sink.drop_sink('shaped_sink');
DROP TABLE shaped, point_row;
DROP TYPE pair CASCADE;

-- the last column a sink loads is not dropped (2BP01); one of two is
CREATE TABLE thin (id int, v text);
SELECT sink_name FROM paimon_sink.create_sink('thin_sink', 'thin');
INSERT INTO thin_sink VALUES (1, 'a');
ALTER TABLE thin ADD COLUMN w int DEFAULT 5;
ALTER TABLE thin DROP COLUMN id, DROP COLUMN v;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE thin DROP COLUMN v;
ALTER TABLE thin DROP COLUMN id;
\echo :LAST_ERROR_SQLSTATE
SELECT row_count FROM paimon_sink.checkpoint('thin_sink');
SELECT id, w FROM thin;
SELECT paimon_sink.drop_sink('thin_sink');
DROP TABLE thin;

-- a sink of a partition refuses what the statement on its parent would do to it
CREATE TABLE parted (id int, v int) PARTITION BY RANGE (id);
CREATE TABLE parted_low PARTITION OF parted FOR VALUES FROM (0) TO (100);
SELECT sink_name FROM paimon_sink.create_sink('parted_low_sink', 'parted_low');
ALTER TABLE parted ALTER COLUMN v TYPE float4;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE parted ADD COLUMN w int, ALTER COLUMN w SET NOT NULL;
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE parted ALTER COLUMN v TYPE bigint;
SELECT paimon_sink.drop_sink('parted_low_sink');
-- ... and a sink of the parent what a statement on a partition does: a
-- column made NOT NULL in one partition, a partition attached with one, while
-- the parent has no default for it (55000)
SELECT sink_name FROM paimon_sink.create_sink('parted_sink', 'parted');
ALTER TABLE parted ADD COLUMN extra int;
ALTER TABLE parted_low ALTER COLUMN extra SET NOT NULL;
\echo :LAST_ERROR_SQLSTATE
CREATE TABLE parted_high (id int, v bigint, extra int NOT NULL);
ALTER TABLE parted ATTACH PARTITION parted_high FOR VALUES FROM (100) TO (200);
\echo :LAST_ERROR_SQLSTATE
ALTER TABLE parted ALTER COLUMN extra SET DEFAULT 0;
ALTER TABLE parted ATTACH PARTITION parted_high FOR VALUES FROM (100) TO (200);
ALTER TABLE parted_low ALTER COLUMN extra SET NOT NULL;
INSERT INTO parted_sink VALUES (1, 1), (101, 2);
SELECT row_count FROM paimon_sink.checkpoint('parted_sink');
SELECT id, v, extra FROM parted ORDER BY id;
SELECT paimon_sink.drop_sink('parted_sink');
DROP TABLE parted;
DROP TYPE mood;
DROP DOMAIN positive, required, short_text, long_text;
RESET ROLE;
