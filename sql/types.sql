-- Every column reaches the target exactly as it was written, whichever way
-- the sink encodes it: the built-in types it writes in COPY's binary format
-- itself (integers, oid, floats, bool, text, varchar, char, bytea, uuid,
-- date, time, timestamp, timestamptz, and domains over them) and the rest,
-- left to the type's send function (numeric, arrays, jsonb, interval,
-- composite types).  Compared by each row's text output with the source
-- rows, so that -0, NaN, infinities, char padding and every digit count.
\set SHOW_CONTEXT never
SET ROLE regress_sink_owner;
CREATE DOMAIN positive_int AS int CHECK (VALUE > 0);
CREATE TYPE pair AS (a int, b text);
CREATE TABLE types_source (
	id int PRIMARY KEY,
	i2 int2, i4 int4, i8 int8, o oid, f4 float4, f8 float8, b bool,
	t text, vc varchar(10), bc char(5), by bytea, u uuid,
	d date, tm time, ts timestamp, tstz timestamptz, dom positive_int,
	num numeric, arr int[], js jsonb, iv interval, p pair);
INSERT INTO types_source VALUES
	(1, -32768, -2147483648, -9223372036854775808, 4294967295, '-0', '-0', true,
	 '', '', '', '\x', '00000000-0000-0000-0000-000000000000',
	 '-infinity', '00:00', '-infinity', '-infinity', 1,
	 'NaN', '{}', '{}', '-178000000 years', ROW(NULL, NULL)),
	(2, 32767, 2147483647, 9223372036854775807, 0, 'NaN', 'NaN', false,
	 E'ünïcødé ✓ tab\there', 'abc', 'ab', '\xdeadbeef00', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
	 'infinity', '24:00', 'infinity', 'infinity', 2147483647,
	 '123456789012345678901234567890.123456789', '{1,NULL,3}', '{"a": [1, 2]}',
	 '1 year 2 mons 3 days 04:05:06.789', ROW(1, 'x')),
	(3, 0, 0, 0, 1, 'Infinity', '-Infinity', NULL,
	 'x', 'ten chars!', 'abcde', '\x00ff', 'ffffffff-ffff-ffff-ffff-ffffffffffff',
	 '1999-12-31', '12:34:56.789012', '2000-01-01 00:00:00.000001',
	 '2000-01-01 00:00:00.000001+05', 42, '-0.000000001', '{{1,2},{3,4}}', 'null',
	 '-1 microseconds', ROW(-1, '')),
	(4, 1, 1, 1, 1, 3.4028235e38, 1.7976931348623157e308, true,
	 NULL, NULL, 'a', NULL, NULL, '4713-01-01 BC', NULL, '294276-12-31 23:59:59.999999',
	 '4714-11-24 00:00:00+00 BC', NULL, NULL, NULL, NULL, NULL, NULL),
	(5, NULL, NULL, NULL, NULL, 1.17549435e-38, 2.2250738585072014e-308, NULL,
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
-- values stored compressed or out of line: the sink reads them whole
INSERT INTO types_source (id, t, by, vc)
	VALUES (6, repeat('compressible ', 20000), convert_to(repeat('y', 300000), 'UTF8'), 'short'),
	       (7, (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 2000) g),
	        decode((SELECT string_agg(md5(g::text), '') FROM generate_series(1, 2000) g), 'hex'),
	        NULL);
CREATE TABLE types_target (LIKE types_source INCLUDING ALL);
SELECT sink_name FROM paimon_sink.create_sink('types_sink', 'types_target');
INSERT INTO types_sink SELECT * FROM types_source;
SELECT row_count FROM paimon_sink.checkpoint('types_sink');
SET extra_float_digits = 3;
SELECT s.id, s::text = r::text AS same_text, s.t = r.t AS same_t, s.by = r.by AS same_bytea
  FROM types_source s LEFT JOIN types_target r USING (id) ORDER BY s.id;
-- -0 stays negative, NaN stays NaN
SELECT id, f4::text, f8::text, float8send(f8) = float8send('-0'::float8) AS negative_zero
  FROM types_target WHERE id = 1;
-- a bucket key without a hash function (json) hashes its send bytes, in
-- the database encoding: a LATIN1 session puts each value in the bucket a
-- UTF8 session puts it in
CREATE TABLE json_keys (k json, n int);
SELECT sink_name FROM paimon_sink.create_sink('json_sink', 'json_keys', buckets => 8,
	bucket_key => '{k}');
CREATE TEMP TABLE json_buckets (encoding text, n int, bucket int);
SELECT s.default_commit_user AS cu FROM paimon_sink.sinks s WHERE s.sink_name = 'json_sink' \gset
\set ECHO none
\o /dev/null
SELECT format('SET client_encoding = %L', e),
       format('INSERT INTO json_sink VALUES (pg_catalog.to_json(chr(233) || %s), %s)', g, g),
       format('INSERT INTO json_buckets SELECT %L, %s, c.bucket '
              'FROM paimon_sink.prepare_commit(''json_sink'', %L, %s) c', e, g, :'cu', i),
       'RESET client_encoding'
  FROM (SELECT e, g, row_number() OVER (ORDER BY e DESC, g) AS i
          FROM unnest(ARRAY['UTF8', 'LATIN1']) e, generate_series(1, 8) g) q
 ORDER BY i \gexec
\o
\set ECHO all
SELECT count(*) AS values_staged, count(*) FILTER (WHERE u.bucket = l.bucket) AS same_bucket
  FROM json_buckets u JOIN json_buckets l USING (n)
 WHERE u.encoding = 'UTF8' AND l.encoding = 'LATIN1';
SELECT count(*) FROM paimon_sink.commit('json_sink', :'cu', 16);
SELECT count(*) AS rows, count(DISTINCT k::text) AS keys FROM json_keys;
SELECT count(*) FROM paimon_sink.drop_sink('json_sink');
DROP TABLE json_keys;
SELECT count(*) FROM paimon_sink.drop_sink('types_sink');
DROP TABLE types_source, types_target;
DROP TYPE pair;
DROP DOMAIN positive_int;
RESET ROLE;
