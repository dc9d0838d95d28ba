# A replay after a refused stale restore (issue 17, item 6;
# shared/cases/replay-after-refused-restore.md): a job of commit user U
# committed checkpoints 1..10 (ids 1..100), restores from its state at
# checkpoint 5 (recover() refuses the stale restore, correctly), replays
# ids 51..100 anyway as checkpoints 6..10 (each prepare refused, each commit
# a no-op), then writes ids 101..110 as checkpoint 11.  Rows written for a
# checkpoint id at or below the commit user's mark are dropped at the
# refused prepare's barrier, counted in a LOG line and in the error's
# detail: checkpoint 11 carries its 10 rows only, and the target holds ids
# 1..110 once each.  The same for an upsert sink, where the values of
# 51..100 stay those of the first run.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(start_node try_sql writers_ready);

my $node = start_node('replay', "log_min_messages = log\n");

sub sql { return $node->safe_psql('postgres', shift); }

# as_job(SQL): SQL in a session of commit user job-r; returns (exit code, stdout, stderr)
sub as_job
{
	my ($sql) = @_;
	return try_sql($node, "SET paimon_sink.commit_user = 'job-r';\n$sql");
}

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE events (id int, v text);
	CREATE TABLE accounts (id int PRIMARY KEY, v text);
	SELECT sink_name FROM paimon_sink.create_sink('events_sink', 'events', buckets => 4,
		bucket_key => '{id}');
	SELECT sink_name FROM paimon_sink.create_sink('accounts_sink', 'accounts', mode => 'upsert',
		buckets => 2);
});
ok(writers_ready($node, 'postgres'), 'writers serve');

for my $variant ([ 'append', 'events_sink', 'events' ], [ 'upsert', 'accounts_sink', 'accounts' ])
{
	my ($mode, $sink, $target) = @$variant;
	my ($ret, $out, $err);

	# checkpoints 1..10, ten rows each, each committed
	for my $c (1 .. 10)
	{
		my ($from, $to) = (($c - 1) * 10 + 1, $c * 10);
		($ret, $out, $err) = as_job(
			"INSERT INTO $sink SELECT g, 'first' FROM generate_series($from, $to) g;
			 SELECT sum(row_count) FROM paimon_sink.prepare_commit('$sink', 'job-r', $c);
			 SELECT row_count FROM paimon_sink.commit('$sink', 'job-r', $c);");
		is($out, "10\n10", "$mode: checkpoint $c commits 10 rows") or diag($err);
	}

	# the restore from checkpoint 5 is refused as stale
	($ret, $out, $err) = as_job("SELECT * FROM paimon_sink.recover('$sink', 'job-r', 5)");
	like($err, qr/ERROR:  22023: stale restore: checkpoint 5 is below the last committed checkpoint 10/,
		"$mode: recover() from checkpoint 5 is refused as a stale restore");

	# the replay anyway: ids 51..100 as checkpoints 6..10
	my $log_offset = -s $node->logfile;
	for my $c (6 .. 10)
	{
		my ($from, $to) = (($c - 1) * 10 + 1, $c * 10);
		($ret, $out, $err) = as_job(
			"INSERT INTO $sink SELECT g, 'replay' FROM generate_series($from, $to) g;");
		is($ret, 0, "$mode: the replay of checkpoint $c is written") or diag($err);
		($ret, $out, $err) =
		  as_job("SELECT * FROM paimon_sink.prepare_commit('$sink', 'job-r', $c)");
		like($err, qr/ERROR:  22023: checkpoint id $c is not above the last committed checkpoint 10/,
			"$mode: the prepare of checkpoint $c is refused");
		like($err, qr/DETAIL:  .*10 rows staged for it were dropped/,
			"$mode: its detail says that its 10 rows were dropped");
		($ret, $out, $err) = as_job(
			"SELECT checkpoint_id, newly_committed FROM paimon_sink.commit('$sink', 'job-r', $c)");
		is($ret, 0, "$mode: the commit of checkpoint $c is harmless") or diag($err);
		like($out, qr/^$c\|f$/, "$mode: and answers that $c is not newly committed");
	}
	my $log = slurp_file($node->logfile, $log_offset);
	my $dropped = 0;
	$dropped += $1
	  while $log =~ /paimon_sink dropped (\d+) rows? of commit user "job-r" of sink "$sink" written for checkpoint \d+/g;
	is($dropped, 50, "$mode: LOG lines count the 50 rows dropped");

	# new rows as checkpoint 11
	($ret, $out, $err) = as_job(
		"INSERT INTO $sink SELECT g, 'new' FROM generate_series(101, 110) g;
		 SELECT sum(row_count) FROM paimon_sink.prepare_commit('$sink', 'job-r', 11);
		 SELECT row_count FROM paimon_sink.commit('$sink', 'job-r', 11);");
	is($out, "10\n10", "$mode: checkpoint 11 carries its 10 new rows only") or diag($err);

	is(sql("SELECT count(*), count(DISTINCT id), min(id), max(id) FROM $target"), '110|110|1|110',
		"$mode: the target holds ids 1..110, each once");
	is(sql("SELECT count(*) FROM $target WHERE v = 'replay'"), '0',
		"$mode: no replayed value reached the target");
	is(sql("SELECT count(*) FROM $target WHERE id BETWEEN 51 AND 100 AND v = 'first'"), '50',
		"$mode: ids 51..100 keep the values of the first run");
	is(sql("SELECT count(*) FROM paimon_sink.pending_checkpoints"), '0',
		"$mode: nothing is left pending");
	is(sql("SELECT coalesce(sum(rows_staged), 0) >= 0 FROM paimon_sink.writers"), 't',
		"$mode: the writers still serve");
}

# a checkpoint after a restart finds nothing of the replay either
$node->restart;
ok(writers_ready($node, 'postgres'), 'writers serve after a restart');
my ($ret, $out, $err) = as_job(
	"SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('events_sink', 'job-r', 12);
	 SELECT checkpoint_id, row_count FROM paimon_sink.commit('events_sink', 'job-r', 12);");
is($out, "12|0\n12|0", 'after a restart, the next checkpoint is empty') or diag($err);
is(sql('SELECT count(*) FROM events'), '110', 'and the target still holds 110 rows');

$node->stop;
done_testing();
