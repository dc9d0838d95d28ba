# The committer's duties under a stream of requests: while sessions keep
# calling checkpoint() on two sinks (so that a request is always queued),
# the commit statistics still reach the views within their documented lag,
# and the snapshot expiry still runs, with retention settings changed at
# runtime (SIGHUP) taking effect.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(usleep time);
use PaimonSinkTest qw(start_node writers_ready);

my $node = start_node('duties',
	"paimon_sink.snapshots_retained = 100000\npaimon_sink.snapshot_retention = 0");

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE ta (id bigint, n int);
	CREATE TABLE tb (id bigint, n int);
	CREATE SEQUENCE ids;
	SELECT sink_name FROM paimon_sink.create_sink('a', 'ta');
	SELECT sink_name FROM paimon_sink.create_sink('b', 'tb');
	CREATE TABLE tc (id bigint, n int);
	SELECT sink_name FROM paimon_sink.create_sink('c', 'tc');
});
ok(writers_ready($node, 'postgres'), 'writers serve');

# three clients per sink, three sinks, each inserting a row and calling checkpoint() as fast
# as it can: the committer always finds a request queued after serving one
my @loads;
for my $sink ('a', 'b', 'c')
{
	my $file = "$PostgreSQL::Test::Utils::tmp_check/load_$sink.sql";
	append_to_file($file,
		"INSERT INTO $sink VALUES (nextval('ids'), 1);\n"
		  . "SELECT count(*) FROM paimon_sink.checkpoint('$sink');\n");
	my $run = { out => '', err => '' };
	$run->{harness} = IPC::Run::start(
		[ $node->installed_command('pgbench'), '-n', '-c', '3', '-f', $file, '-T', '40',
		  $node->connstr('postgres') ],
		'<', \undef, '>', \$run->{out}, '2>', \$run->{err}, IPC::Run::timeout(90));
	push @loads, $run;
}

# the statistics: at any time, every snapshot committed more than 2 s ago
# (the documented lag is a second) is counted in commit_stats
sleep 4;
my $lagging = 0;
my $rounds = 0;
for (1 .. 5)
{
	my ($counted, $old) = split /\|/, sql(q{
		SELECT (SELECT coalesce(sum(commits), 0) FROM paimon_sink.commit_stats
		          WHERE sink_name IN ('a', 'b', 'c')),
		       (SELECT count(*) FROM paimon_sink.snapshot_log
		          WHERE committed_at < now() - interval '2 s')});
	$rounds++;
	if ($counted < $old)
	{
		$lagging++;
		diag("commit_stats counts $counted commits, $old snapshots are older than 2 s");
	}
	usleep(500_000);
}
is($lagging, 0, "under a stream of requests, commit_stats lags less than 2 s ($rounds looks)");
my $snapshots = sql("SELECT count(*) FROM paimon_sink.snapshot_log");
cmp_ok($snapshots, '>', 40, "the load committed ($snapshots snapshots so far)");

# the expiry: retention lowered at runtime, the load still running
sql("ALTER SYSTEM SET paimon_sink.snapshots_retained = 5");
$node->reload;
my $start = time;
my $expired = 0;
while (time - $start < 15)
{
	if (sql("SELECT count(*) <= 3 * (5 + 64) FROM paimon_sink.snapshot_log") eq 't')
	{
		$expired = 1;
		last;
	}
	usleep(200_000);
}
ok($expired, sprintf('under the stream, a lowered snapshots_retained takes effect (%.1f s)',
	time - $start));

for my $run (@loads)
{
	$run->{harness}->signal('TERM');
	eval { $run->{harness}->finish; };
	unlike($run->{err}, qr/ERROR|aborted/, 'the load had no failure');
}
sql("SELECT count(*) FROM paimon_sink.checkpoint('a')");
sql("SELECT count(*) FROM paimon_sink.checkpoint('b')");
sql("SELECT count(*) FROM paimon_sink.checkpoint('c')");
is(sql("SELECT count(*) = count(DISTINCT id) FROM (SELECT id FROM ta UNION ALL SELECT id FROM tb UNION ALL SELECT id FROM tc) r"),
	't', 'every row committed once');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 15 FROM paimon_sink.snapshot_log"), 'once idle, 5 per sink are left');
$node->stop;
done_testing();
