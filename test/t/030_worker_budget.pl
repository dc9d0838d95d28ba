# The worker budget: a database that cannot get its workers is told so at
# once.  max_worker_processes = 4 with one writer per database leaves room
# for one database with paimon_sink (4 slots, minus 2 for the launchers,
# at 2 per database).
#
#  - CREATE EXTENSION in a second database fails at once with 53400 and the
#    budget's arithmetic in its detail;
#  - after a restart with less room than databases with the extension, the
#    writes, checkpoint() and create_sink of each database the budget does
#    not serve fail at once (far below paimon_sink.handoff_timeout) with
#    53400, while the served one works;
#  - the launcher names each starved database in its log, at most once a
#    minute per database, and after DROP EXTENSION there never again;
#  - once the served database drops the extension, its slots serve a starved
#    one, whose staged and new rows commit exactly once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use PaimonSinkTest qw(start_node try_sql);

my $small = q{
max_worker_processes = 4
max_parallel_workers_per_gather = 0
paimon_sink.writers_per_database = 1
paimon_sink.loaders_per_database = 0
paimon_sink.handoff_timeout = '60s'
};
my $node = start_node('worker_budget', $small);
my $launcher_line = 'paimon_sink launcher cannot start the workers of database';

# ready(DATABASE): whether the database's one writer serves now.
sub ready
{
	my ($database) = @_;
	my ($ret, $out) = try_sql($node,
		'SELECT pg_catalog.count(*) FROM paimon_sink.writers WHERE ready', undef, $database);
	return $ret == 0 && $out eq '1';
}

# wait_ready(DATABASE): polls up to 60 s until its writer serves.
sub wait_ready
{
	my ($database) = @_;
	for (1 .. 240)
	{
		return 1 if ready($database);
		usleep(250_000);
	}
	return 0;
}

# timed(DATABASE, SQL): (exit code, stderr, seconds taken).
sub timed
{
	my ($database, $sql) = @_;
	my $start = time;
	my ($ret, $out, $err) = try_sql($node, $sql, undef, $database);
	return ($ret, $err, time - $start);
}

# target(DATABASE): "count distinct-count" of its target's ids.
sub target
{
	my ($database) = @_;
	return $node->safe_psql($database, "SELECT count(*) || ' ' || count(DISTINCT id) FROM t");
}

$node->safe_psql('postgres', 'CREATE DATABASE d1; CREATE DATABASE d2; CREATE DATABASE d3;');
my $setup = q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE t (id int);
	SELECT sink_name FROM paimon_sink.create_sink('s', 't');
};
$node->safe_psql('d1', $setup);
ok(wait_ready('d1'), 'the first database gets its workers');
$node->safe_psql('d1', 'INSERT INTO s SELECT generate_series(1, 100)');
$node->safe_psql('d1', "SELECT count(*) FROM paimon_sink.checkpoint('s')");
is(target('d1'), '100 100', 'the first database commits');

# A second database: no room.
my ($ret, $err, $took) = timed('d2', 'CREATE EXTENSION paimon_sink');
isnt($ret, 0, 'CREATE EXTENSION fails in a database the budget cannot serve');
like($err, qr/ERROR:  53400: database "d2" cannot get its paimon_sink workers/,
	'with 53400, naming the database');
like($err,
	qr/DETAIL:  Databases the worker budget serves: \(max_worker_processes = 4, minus 2 for the launchers\) \/ 2 per database \(a committer and paimon_sink.writers_per_database = 1\) = 1; databases already served: 1\./,
	'the detail gives the budget arithmetic');
like($err, qr/HINT:  Raise max_worker_processes/, 'the hint names the settings');
cmp_ok($took, '<', 5, "CREATE EXTENSION answers at once ($took s)");
is($node->safe_psql('d2', "SELECT count(*) FROM pg_extension WHERE extname = 'paimon_sink'"),
	'0', 'and the extension is not created');

# Room for three: the extension in all of them, rows committed and staged.
$node->stop;
$node->append_conf('postgresql.conf', 'max_worker_processes = 8');
$node->start;
for my $database ('d2', 'd3')
{
	$node->safe_psql($database, $setup);
}
my %committed = (d1 => 100);
for my $database ('d1', 'd2', 'd3')
{
	ok(wait_ready($database), "$database gets its workers with room for three");
	if ($database ne 'd1')
	{
		$node->safe_psql($database, 'INSERT INTO s SELECT generate_series(1, 50)');
		$node->safe_psql($database, "SELECT count(*) FROM paimon_sink.checkpoint('s')");
		$committed{$database} = 50;
	}
	# staged, not committed: they must survive the starvation
	$node->safe_psql($database, 'INSERT INTO s SELECT generate_series(1001, 1030)');
	is(target($database), "$committed{$database} $committed{$database}",
		"$database: committed rows in the target, staged ones not yet");
}

# Room for one again: one database is served, two starve.
$node->stop;
$node->append_conf('postgresql.conf', 'max_worker_processes = 4');
my $log_offset = -s $node->logfile;
$node->start;
my @served;
for (1 .. 240)
{
	@served = grep { ready($_) } ('d1', 'd2', 'd3');
	last if @served;
	usleep(250_000);
}
is(scalar(@served), 1, 'one database gets its workers with room for one');
my $served = $served[0] // 'd1';
my @starved = grep { $_ ne $served } ('d1', 'd2', 'd3');

for my $database (@starved)
{
	($ret, $err, $took) = timed($database, 'INSERT INTO s VALUES (2000)');
	isnt($ret, 0, "$database: a write fails");
	like($err, qr/ERROR:  53400: database "$database" cannot get its paimon_sink workers/,
		"$database: with 53400");
	like($err, qr/DETAIL:  Databases the worker budget serves: .* = 1; databases already served: 1\./,
		"$database: the detail gives the budget");
	cmp_ok($took, '<', 5, "$database: the write fails at once ($took s, handoff_timeout 60 s)");

	($ret, $err, $took) = timed($database, "SELECT count(*) FROM paimon_sink.checkpoint('s')");
	like($err, qr/ERROR:  53400: database "$database" cannot get its paimon_sink workers/,
		"$database: checkpoint() fails with 53400");
	cmp_ok($took, '<', 5, "$database: at once ($took s)");

	($ret, $err, $took) =
	  timed($database, "SELECT count(*) FROM paimon_sink.create_sink('s2', 't')");
	like($err, qr/ERROR:  53400: database "$database" cannot get its paimon_sink workers/,
		"$database: create_sink fails with 53400");
	cmp_ok($took, '<', 5, "$database: at once ($took s)");
}
$node->safe_psql($served, 'INSERT INTO s SELECT generate_series(3001, 3010)');
$node->safe_psql($served, "SELECT count(*) FROM paimon_sink.checkpoint('s')");
is(target($served), ($committed{$served} + 40) . ' ' . ($committed{$served} + 40),
	"$served, served, commits its staged and new rows");

# The launcher's lines, each with the time the test first saw it.
my %seen_at = map { $_ => [] } ('d1', 'd2', 'd3');
my $log_read = $log_offset;
sub read_log
{
	my $log = slurp_file($node->logfile, $log_read);
	$log_read += length($log);
	my $now = time;
	while ($log =~ /\Q$launcher_line\E "(d\d)"/g)
	{
		push @{ $seen_at{$1} }, $now;
	}
}

# wait_line(DATABASE, COUNT, SECONDS): polls the log until the database has
# COUNT launcher lines, at most SECONDS.
sub wait_line
{
	my ($database, $count, $seconds) = @_;
	my $until = time + $seconds;
	while (time < $until)
	{
		read_log();
		return 1 if @{ $seen_at{$database} } >= $count;
		usleep(500_000);
	}
	return 0;
}

my ($s1, $s2) = @starved;
read_log();
my $first = scalar @{ $seen_at{$s1} };
ok(wait_line($s1, $first + 1, 90), "the launcher names $s1 again");
# the gaps between lines, as the test saw them (each up to half a second late)
my @at = @{ $seen_at{$s1} };
my $min_gap = 1e9;
for my $i (1 .. $#at)
{
	$min_gap = $at[$i] - $at[ $i - 1 ] if $at[$i] - $at[ $i - 1 ] < $min_gap;
}
cmp_ok(scalar(@at), '>=', 2, "$s1 was logged more than once meanwhile");
cmp_ok($min_gap, '>=', 55, "at most once a minute ($min_gap s apart)");
my $s1_lines = scalar @{ $seen_at{$s1} };
my $s1_last = $seen_at{$s1}[-1];

# DROP EXTENSION in a starved database: the launcher stops trying there.
$node->safe_psql($s1, 'DROP EXTENSION paimon_sink CASCADE');
my $s2_lines = scalar @{ $seen_at{$s2} };
ok(wait_line($s2, $s2_lines + 1, 90), "the launcher still names $s2, which still starves");
my $wait = $s1_last + 65 - time;
sleep($wait) if $wait > 0;
read_log();
is(scalar @{ $seen_at{$s1} }, $s1_lines,
	"no launcher line for $s1 over a minute after its DROP EXTENSION");

# The served database drops the extension: its slots serve the other one.
$node->safe_psql($served, 'DROP EXTENSION paimon_sink CASCADE');
ok(wait_ready($s2), "$s2 gets the freed slots");
$node->safe_psql($s2, "SELECT count(*) FROM paimon_sink.checkpoint('s')");
is(target($s2), ($committed{$s2} + 30) . ' ' . ($committed{$s2} + 30),
	"$s2 commits the rows staged before it starved, exactly once");
$node->safe_psql($s2, 'INSERT INTO s SELECT generate_series(4001, 4020)');
$node->safe_psql($s2, "SELECT count(*) FROM paimon_sink.checkpoint('s')");
is(target($s2), ($committed{$s2} + 50) . ' ' . ($committed{$s2} + 50),
	"$s2 writes and commits anew, exactly once");
read_log();
is(scalar @{ $seen_at{$s1} }, $s1_lines, "still nothing about $s1");

$node->stop;
done_testing();
