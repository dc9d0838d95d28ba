# Periodic checkpoints: a sink with a checkpoint_interval (or the default
# paimon_sink.checkpoint_interval) is committed by the committer on its
# own, without any call; empty intervals make no snapshot; a checkpoint
# that fails is logged and tried again, and the other sinks go on.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

my $node = PostgreSQL::Test::Cluster->new('periodic');
$node->init;
$node->append_conf('postgresql.conf', "log_min_messages = log");
$node->start;

sub sql { return $node->safe_psql('postgres', shift); }

# Seconds until the query returns 't', polling every 20 ms (undef after 30 s).
sub seconds_until
{
	my ($query) = @_;
	my $start = time;
	while (time - $start < 30)
	{
		return time - $start if sql($query) eq 't';
		usleep(20_000);
	}
	return undef;
}

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE fast (id int PRIMARY KEY, note text);
	CREATE TABLE manual (id int PRIMARY KEY, note text);
	SELECT sink_name FROM paimon_sink.create_sink('fast_sink', 'fast', checkpoint_interval => '200ms');
	SELECT sink_name FROM paimon_sink.create_sink('manual_sink', 'manual');
});
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 2 FROM paimon_sink.writers WHERE ready"), 'writers serve');

# --- a committed insert shows up on its own, within 2 s
sql("INSERT INTO fast_sink VALUES (1, 'periodic')");
my $waited = seconds_until("SELECT count(*) = 1 FROM fast");
ok(defined $waited && $waited < 2,
	sprintf('a committed insert is visible after %.2f s without any call', $waited // -1));
sql("INSERT INTO fast_sink SELECT g, 'periodic' FROM generate_series(2, 100) g");
$waited = seconds_until("SELECT count(*) = 100 FROM fast");
ok(defined $waited && $waited < 2, sprintf('and the next ones after %.2f s', $waited // -1));

# --- a sink without an interval is left alone
sql("INSERT INTO manual_sink VALUES (1, 'manual')");
sleep 1;
is(sql("SELECT count(*) FROM manual"), '0', 'a sink without an interval waits for checkpoint()');

# --- empty intervals make no snapshot
my $snapshots = sql("SELECT count(*) FROM paimon_sink.snapshots WHERE sink_name = 'fast_sink'");
sleep 1;
is(sql("SELECT count(*) FROM paimon_sink.snapshots WHERE sink_name = 'fast_sink'"), $snapshots,
	'no snapshot while nothing is written');

# --- the default interval applies to sinks created without one
$node->safe_psql('postgres', "ALTER SYSTEM SET paimon_sink.checkpoint_interval = '300ms'");
$node->reload;
sql("SELECT pg_sleep(0.2)");
sql(q{
	CREATE TABLE later (id int PRIMARY KEY);
	SELECT sink_name FROM paimon_sink.create_sink('later_sink', 'later');
	INSERT INTO later_sink VALUES (1);
});
$waited = seconds_until("SELECT count(*) = 1 FROM later");
ok(defined $waited && $waited < 2,
	sprintf('paimon_sink.checkpoint_interval covers a new sink: visible after %.2f s', $waited // -1));
$waited = seconds_until("SELECT count(*) = 1 FROM manual");
ok(defined $waited && $waited < 2, 'and the sinks created before it');
$node->safe_psql('postgres', "ALTER SYSTEM RESET paimon_sink.checkpoint_interval");
$node->reload;

# --- a failing checkpoint is logged and retried; other sinks go on
sql("INSERT INTO fast VALUES (1000, 'in the way')");
sql("INSERT INTO fast_sink VALUES (1000, 'conflict')");
ok($node->wait_for_log(qr/committer request failed with SQLSTATE 23505/),
	'the failed periodic checkpoint is logged with its SQLSTATE');
sql("INSERT INTO later_sink VALUES (2)");
sql("SELECT paimon_sink.checkpoint('later_sink')");
is(sql("SELECT count(*) FROM later"), '2', 'the committer serves other sinks meanwhile');
sql("DELETE FROM fast WHERE id = 1000");
$waited = seconds_until("SELECT note = 'conflict' FROM fast WHERE id = 1000");
ok(defined $waited, 'once the target allows it, the retry commits the row');
is(sql("SELECT count(*) FROM paimon_sink.pending_checkpoints"), '0', 'nothing left pending');

done_testing();
