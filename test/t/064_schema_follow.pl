# The target changes while rows wait (issue "6 — The target changes while
# rows wait", item 1): a sink follows its target's schema changes.  An
# append sink, an upsert sink, a sink group's member and an overwrite sink each have a
# checkpoint prepared and more rows staged when their target changes:
# a column renamed (followed by its attribute number), three types
# widened (int2 to int8, float4 to float8, varchar(5) to varchar(10)), a
# column dropped (skipped, with a WARNING naming it and the rows) and one
# added with a default (filled by it).  A crash (immediate stop and
# restart) comes between the staging and the commit.  After the commits,
# and after rows written through the unchanged foreign tables since, each
# target equals a ledger of what was sent.
# The changes a sink cannot follow are refused by ALTER TABLE with their
# SQLSTATEs, leaving the table and the sink as they were: a narrowing type
# (42804), a type without an implicit cast (42804), the drop of an upsert
# sink's primary-key column (2BP01), a NOT NULL column without a default
# (55000), and a narrowing type through a partitioned parent of the target.
# Then, on the changed targets: a row the target refuses (the redo row by
# row, reject_failing_rows()), a dynamic-partition overwrite routed by a
# renamed partition key, an upsert sink's key column renamed and widened.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(nothing_in_doubt schema_commit schema_diff schema_follow schema_prepare
  schema_refused schema_setup schema_write start_node try_sql writers_ready);

my $node = start_node('schema_follow', 'restart_after_crash = on');

sub sql { return $node->safe_psql('postgres', shift); }

# the changed targets (PaimonSinkTest's schema_setup: an append sink, an upsert sink, the
# group grp's member and an overwrite sink, whose job replaces its target's rows, those
# before it not in the ledger, in its first commit, then appends), and a partitioned
# table with a sink into its partition
my @cases = schema_setup($node);
sql(q{
	CREATE TABLE parted (id int, s varchar(5)) PARTITION BY RANGE (id);
	CREATE TABLE part1 PARTITION OF parted FOR VALUES FROM (0) TO (1000);
	SELECT sink_name FROM paimon_sink.create_sink('part_sink', 'part1');
});
ok(writers_ready($node, 'postgres'), 'writers serve');

sub write_rows { return schema_write($node, @_); }
sub prepare { return schema_prepare($node, @_); }
sub commit { return schema_commit($node, @_); }
sub differs { return schema_diff($node, @_); }
sub refused { return schema_refused($node, @_); }

my $exact = 'missing 0, extra 0';

# --- rows staged, a checkpoint prepared and more rows staged before the changes
for my $case (@cases)
{
	write_rows($case, 1, 20, 'a');
	prepare($case, 1);
	write_rows($case, $case->{upsert} ? 15 : 21, 30, 'b');
}

# --- the changes that cannot be followed are refused, with everything as it was
refused('ap', 'ALTER TABLE ap ALTER COLUMN s TYPE varchar(3)', '42804', 'a narrower varchar');
refused('ap', 'ALTER TABLE ap ALTER COLUMN n TYPE numeric(3, 0)', '42804', 'a numeric with fewer digits');
refused('ap', 'ALTER TABLE ap ALTER COLUMN id TYPE text', '42804', 'a type without an implicit cast');
refused('up', 'ALTER TABLE up DROP COLUMN id', '2BP01', "the drop of an upsert sink's key column");
refused('g1', 'ALTER TABLE g1 ADD COLUMN nn int NOT NULL', '55000',
	'a NOT NULL column without a default');
refused('part1', 'ALTER TABLE parted ALTER COLUMN s TYPE varchar(2)', '42804',
	"a narrower varchar through the target's partitioned parent");

# --- the changes followed: rename, widen, drop, add
schema_follow($node, $_) for @cases;

# --- a crash between the staging and the commit
$node->stop('immediate');
$node->start;
ok(writers_ready($node, 'postgres'), 'the restarted server serves');
my $log_offset = -s $node->logfile;

for my $case (@cases)
{
	prepare($case, 2);
	commit($case, 2);
	is(differs($case), $exact, "$case->{target}: the target equals the ledger after the changes");
	is(sql("SELECT count(*) FROM $case->{target} WHERE added <> 'dflt'"), '0',
		"$case->{target}: the added column holds its default");
}
my $log = slurp_file($node->logfile, $log_offset);
like($log, qr/WARNING:  column "gone" of sink "ap_sink" was dropped from its target: its values in \d+ staged rows were not loaded/,
	'the append load warns of the dropped column, naming the rows')
  or diag($log);
like($log, qr/WARNING:  column "gone" of sink "up_sink" was dropped from its target/,
	'the upsert apply warns of the dropped column');
like($log, qr/WARNING:  column "gone" of sink "g1_sink" was dropped from its target/,
	"the group member's load warns of the dropped column");
is(sql('SELECT count(*) FROM g2'), '30', "the group's other member committed with it");

# --- rows written since, through the foreign tables as they were
for my $case (@cases)
{
	write_rows($case, $case->{upsert} ? 25 : 31, 40, 'c');
	prepare($case, 3);
	commit($case, 3);
	is(differs($case), $exact, "$case->{target}: rows written after the changes load too");
}
# an upsert update of a key written before the rename: replaced, by its renamed key
is(sql("SELECT n || ' ' || renamed FROM up WHERE id = 16"), '16 b', 'the upsert sink replaced key 16');
# --- a row the changed target refuses: the load is redone row by row in the target's layout
# now (renamed, widened, dropped), names the row's key, applies nothing; reject_failing_rows()
# commits the rest
my $ap = $cases[0];
write_rows($ap, 41, 45, 'd');
my ($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'ap-job';
	INSERT INTO ap_sink (id, n, f, s, old, gone) VALUES (1, 1, 1, 'dup', 'dup', 'dup');");
is($ret, 0, 'ap_sink: a row with a key the target holds written') or diag($err);
prepare($ap, 4);
($ret, $out, $err) = try_sql($node, "SELECT count(*) FROM paimon_sink.commit('ap_sink', 'ap-job', 4)");
like($err, qr/23505: .*the row with key \(id\)=\(1\)/s, 'the commit fails naming the row');
sql('DELETE FROM ledger_ap WHERE id BETWEEN 41 AND 45');
is(differs($ap), $exact, 'nothing of it applied');
is(sql("SELECT row_count FROM paimon_sink.reject_failing_rows('ap_sink', 4, 'ap-job')"), '5',
	'reject_failing_rows() commits the other rows');
sql("INSERT INTO ledger_ap SELECT g, g, g / 2.0, 's' || g, 'd' FROM generate_series(41, 45) g");
is(differs($ap), $exact, 'the target equals the ledger');

# --- a dynamic-partition overwrite routes the staged rows by a partition key column renamed
# since, into partitions whose other columns were widened and dropped since
sql(q{
	CREATE TABLE dp (day int, id int, v varchar(5), gone text, PRIMARY KEY (day, id))
		PARTITION BY LIST (day);
	CREATE TABLE dp1 PARTITION OF dp FOR VALUES IN (1);
	CREATE TABLE dp2 PARTITION OF dp FOR VALUES IN (2);
	INSERT INTO dp SELECT d, g, 'old', 'x' FROM generate_series(1, 2) d, generate_series(1, 3) g;
	SELECT sink_name FROM paimon_sink.create_sink('dp_sink', 'dp', mode => 'overwrite',
		dynamic_partition_overwrite => true);
});
my $dp = { sink => 'dp_sink', job => 'dp-job', call => 'dp_sink' };
($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'dp-job';
	INSERT INTO dp_sink SELECT 1, g, 'new', 'gone' FROM generate_series(2, 5) g;");
is($ret, 0, 'dp_sink: a rebuild of day 1 written') or diag($err);
prepare($dp, 1);
($ret, $out, $err) = try_sql($node, 'ALTER TABLE dp RENAME COLUMN day TO d;
	ALTER TABLE dp ALTER COLUMN v TYPE varchar(20); ALTER TABLE dp DROP COLUMN gone;');
is($ret, 0, 'dp: its partition key column renamed, a column widened, one dropped') or diag($err);
commit($dp, 1);
is(sql("SELECT string_agg(d || ':' || id || ':' || v, ',' ORDER BY d, id) FROM dp"),
	'1:2:new,1:3:new,1:4:new,1:5:new,2:1:old,2:2:old,2:3:old',
	'day 1 replaced by the rebuild, day 2 as it was');

# --- an upsert sink's key column renamed and widened while its changes wait: the changes
# are keyed by the column followed, compared in its new type
sql(q{
	CREATE TABLE uk (k int2 PRIMARY KEY, v text);
	SELECT sink_name FROM paimon_sink.create_sink('uk_sink', 'uk', mode => 'upsert');
});
my $uk = { sink => 'uk_sink', job => 'uk-job', call => 'uk_sink' };
($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'uk-job';
	INSERT INTO uk_sink (k, v) SELECT g, 'v1' FROM generate_series(1, 10) g;");
is($ret, 0, 'uk_sink: keys 1..10 written') or diag($err);
prepare($uk, 1);
($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'uk-job';
	INSERT INTO uk_sink (k, v) SELECT g, 'v2' FROM generate_series(5, 15) g;
	INSERT INTO uk_sink (k, _row_kind) VALUES (1, '-D');");
is($ret, 0, 'uk_sink: keys 5..15 replaced or added, key 1 deleted') or diag($err);
($ret, $out, $err) = try_sql($node, 'ALTER TABLE uk RENAME COLUMN k TO key;
	ALTER TABLE uk ALTER COLUMN key TYPE bigint;');
is($ret, 0, "uk: the upsert sink's key column renamed and widened") or diag($err);
prepare($uk, 2);
commit($uk, 2);
is(sql("SELECT string_agg(key || ':' || v, ',' ORDER BY key) FROM uk"),
	join(',', (map { "$_:v1" } 2 .. 4), (map { "$_:v2" } 5 .. 15)),
	'each key once, its newest version, key 1 deleted');
is(sql("SELECT pg_typeof(key) FROM uk LIMIT 1"), 'bigint', 'in the widened key column');
ok(nothing_in_doubt($node), 'nothing in doubt');

done_testing();
