# Breaking poison checkpoints (issue 17, item 4): hostile roles, odd input,
# rows of odd types and large values going into the rejects table, and many
# refused rows: the redo must stay bounded in memory.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use PaimonSinkTest qw(start_node try_sql writers_ready);

my $node = start_node("poisonbreak", "paimon_sink.parallel_load_rows = 0\n");

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE ROLE alice LOGIN;
	CREATE ROLE mallory LOGIN;
	CREATE ROLE reader LOGIN;
	GRANT EXECUTE ON FUNCTION paimon_sink.create_sink TO alice;
	GRANT USAGE ON FOREIGN SERVER paimon_sink TO alice;
	CREATE SCHEMA a AUTHORIZATION alice;
});
$node->safe_psql('postgres', q{
	SET ROLE alice;
	CREATE TABLE a.t (id int PRIMARY KEY, v text, b bytea, arr int[], c point);
	SELECT sink_name FROM paimon_sink.create_sink('as', 'a.t');
	GRANT SELECT ON a.t TO reader;
});
ok(writers_ready($node, 'postgres'), 'writers serve');

# checkpoint 1: a refused row with binary bytea, an array, a 1 MB value
$node->safe_psql('postgres', q{
	SET ROLE alice;
	INSERT INTO a.as VALUES (1, 'ok', '\x00ff', '{1,2}', '(1,2)'),
		(2, repeat('x', 1048576), '\x00', '{NULL,3}', '(3,4)');
	SELECT paimon_sink.prepare_commit('as', NULL, 1);
	ALTER TABLE a.t ADD CONSTRAINT small CHECK (length(v) < 100) NOT VALID;
});
my ($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.commit('as', NULL, 1)");
like($err, qr/23514/, 'stop: the commit fails on the refused row');

# hostile roles
($ret, $out, $err) = try_sql($node, "SET ROLE mallory; SELECT * FROM paimon_sink.reject_failing_rows('as', 1)");
like($err, qr/42501/, 'a role that owns nothing may not call reject_failing_rows on another sink');
($ret, $out, $err) = try_sql($node, "SET ROLE mallory; SELECT * FROM paimon_sink.reject_failing_rows('as', NULL)");
like($err, qr/ERROR/, 'a NULL checkpoint id is refused');
is(sql("SELECT count(*) FROM a.t"), '0', 'nothing applied by the refused calls');

is($node->safe_psql('postgres', "SET ROLE alice; SELECT row_count FROM paimon_sink.reject_failing_rows('as', 1)"),
	'1', 'the owner moves the refused row aside');
is($node->safe_psql('postgres', "SET ROLE alice; SELECT row_data->>'b' || ' ' || (row_data->>'arr') || ' ' || (row_data->>'c')
	|| ' ' || length(row_data->>'v') FROM paimon_sink.rejects"),
	'\x00 {NULL,3} (3,4) 1048576', 'bytea, array, point and a 1 MB value go into row_data as their text');
is($node->safe_psql('postgres', "SET ROLE mallory; SELECT count(*) FROM paimon_sink.rejects"), '0',
	'a role that is a member of nothing reads no rejects');
is($node->safe_psql('postgres', "SET ROLE reader; SELECT count(*) FROM paimon_sink.rejects"), '0',
	'a role with SELECT on the target only reads no rejects');
($ret, $out, $err) = try_sql($node, "SET ROLE alice; SELECT count(*) FROM paimon_sink.rejected_row");
like($err, qr/42501/, 'the table itself is refused to the owner');

sub committer_hwm_kb
{
	my $pid = sql("SELECT pid FROM pg_stat_activity WHERE backend_type LIKE '%committer%' LIMIT 1");
	open(my $fh, '<', "/proc/$pid/status") or die "no committer ($pid)";
	while (<$fh>) { return ($pid, $1) if /^VmHWM:\s+(\d+) kB/; }
	die "no VmHWM";
}
# time: 20,000 refused of 100,000 rows
$node->safe_psql('postgres', q{
	SET ROLE alice;
	ALTER TABLE a.t DROP CONSTRAINT small;
	INSERT INTO a.as SELECT 100000 + i, 'v' || i FROM generate_series(1, 100000) i;
	SELECT paimon_sink.prepare_commit('as', NULL, 2);
	ALTER TABLE a.t ADD CONSTRAINT fifth CHECK (id % 5 <> 0) NOT VALID;
});
my ($pid0, $hwm0) = committer_hwm_kb();
my $t0 = time;
is($node->safe_psql('postgres', "SET ROLE alice; SELECT row_count FROM paimon_sink.reject_failing_rows('as', 2)"),
	'80000', '80,000 rows applied, 20,000 refused');
my ($pid1, $hwm1) = committer_hwm_kb();
cmp_ok(int(($hwm1 - $hwm0) / 1024), '<', 64, '20,000 small refused rows: bounded memory');
note(sprintf("20,000 of 100,000 refused: %.1f s, committer peak grew by %d MB", time - $t0, int(($hwm1 - $hwm0) / 1024)));
is(sql("SELECT count(*) FROM paimon_sink.rejected_row WHERE checkpoint_id = 2"), '20000', 'all 20,000 recorded');

# memory: 100 refused rows of 1 MB each (the committer's peak must not hold them all)
$node->safe_psql('postgres', q{
	SET ROLE alice;
	ALTER TABLE a.t DROP CONSTRAINT fifth;
	INSERT INTO a.as SELECT 1000 + i * 5 + 1, repeat(md5(i::text), 32768) FROM generate_series(1, 100) i;
	SELECT paimon_sink.prepare_commit('as', NULL, 3);
	ALTER TABLE a.t ADD CONSTRAINT small CHECK (length(v) < 100) NOT VALID;
});
($pid0, $hwm0) = committer_hwm_kb();
$t0 = time;
is($node->safe_psql('postgres', "SET ROLE alice; SELECT row_count FROM paimon_sink.reject_failing_rows('as', 3)"),
	'0', '100 rows of 1 MB refused');
($pid1, $hwm1) = committer_hwm_kb();
is($pid1, $pid0, 'the same committer');
my $grown = int(($hwm1 - $hwm0) / 1024);
note(sprintf("100 x 1 MB rejects: committer peak grew by %d MB, %.1f s", $grown, time - $t0));
cmp_ok($grown, '<', 64, "the committer does not hold every refused row's value at once (grew $grown MB for 100 MB of rejects)");
is(sql("SELECT count(*) FROM paimon_sink.rejected_row WHERE checkpoint_id = 3"), '100', 'all 100 recorded');

done_testing();
