# A committer that stops answering (SIGSTOP), or that is gone, never makes
# a session wait without bound: checkpoint() waiting on it ends with
# SQLSTATE 57014 within paimon_sink.committer_timeout (plus slack), the
# message naming the committer's pid and the database, the detail how long
# it showed no progress and what became of the request, the hint what to
# check (max_worker_processes when no committer runs).  The request given up
# on stays queued, as a cancelled one does, and runs once the committer goes
# on; after SIGCONT every row is in the target exactly once.  A committer
# that is merely busy with a long load keeps beating: a checkpoint of
# 300,000 rows that takes longer than the timeout, and another sink's
# checkpoint queued behind it, both succeed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use PaimonSinkTest qw(writers_ready background_verbose finish_within holds_ledger_exactly);
use Time::HiRes qw(time usleep);

my $timeout = 2;    # paimon_sink.committer_timeout, seconds

my $node = PostgreSQL::Test::Cluster->new('stalled_committer');
$node->init;
# the load of the large checkpoint is the committer's own (no loaders, and
# nothing loaded ahead while the rows are written, which would leave the
# checkpoint little to load), so that its beats come from the load itself
$node->append_conf('postgresql.conf',
	"paimon_sink.committer_timeout = '${timeout}s'\npaimon_sink.parallel_load_rows = 0\n"
	  . "paimon_sink.load_ahead = off\n");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE tu (id int, note text);
	CREATE TABLE ledger_u (id int PRIMARY KEY);
	CREATE TABLE tv (id int, note text);
	CREATE TABLE ledger_v (id int PRIMARY KEY);
	SELECT sink_name FROM paimon_sink.create_sink('u', 'tu');
	SELECT sink_name FROM paimon_sink.create_sink('v', 'tv');
});
ok(writers_ready($node, 'postgres'), 'the writers serve');

# background(SQL): psql running SQL in the background (at most 120 s);
# finish_within takes it
sub background
{
	return background_verbose($node, $_[0], 120);
}

# exact(SINK, LABEL): a checkpoint succeeds, and the target holds every
# ledger row exactly once
sub exact
{
	my ($sink, $label) = @_;
	my $run = background("SELECT count(*) FROM paimon_sink.checkpoint('$sink')");
	my $secs = finish_within($run, 60);
	ok(defined $secs && $run->{err} eq '', "$label: checkpoint('$sink') succeeds")
	  or diag($run->{err});
	holds_ledger_exactly($node, "t$sink", "ledger_$sink", $label);
	return;
}

# write_rows(SINK, FIRST, LAST): one transaction writing ids FIRST..LAST
# into the sink and its ledger
sub write_rows
{
	my ($sink, $first, $last) = @_;
	$node->safe_psql('postgres',
		"BEGIN; INSERT INTO $sink SELECT g, repeat('x', 40) FROM generate_series($first, $last) g; "
		  . "INSERT INTO ledger_$sink SELECT g FROM generate_series($first, $last) g; COMMIT;");
	return;
}

sub committer_pid
{
	$node->poll_query_until('postgres', q{
		SELECT count(*) = 1 FROM pg_stat_activity
		WHERE application_name = 'paimon_sink committer' AND datname = 'postgres'})
	  or return undef;
	return $node->safe_psql('postgres', q{
		SELECT pid FROM pg_stat_activity
		WHERE application_name = 'paimon_sink committer' AND datname = 'postgres'});
}

write_rows('u', 1, 100);
exact('u', 'before');

# --- the committer stops (SIGSTOP): a checkpoint() waiting on it ends
# within the timeout with 57014 naming it
my $pid = committer_pid();
ok(defined $pid, 'the committer runs');
write_rows('u', 101, 200);
kill 'STOP', $pid;
my $run = background("SELECT count(*) FROM paimon_sink.checkpoint('u')");
my $secs = finish_within($run, $timeout + 20);
ok(defined $secs, 'a checkpoint() waiting on a stopped committer ends')
  or diag('it did not end within ' . ($timeout + 20) . ' s');
ok(defined $secs && $secs >= $timeout * 0.9 && $secs < $timeout + 5,
	"within paimon_sink.committer_timeout ($timeout s) and a slack")
  or diag('it took ' . ($secs // 'more than ' . ($timeout + 20)) . ' s');
like($run->{err}, qr/ERROR:  57014: the paimon_sink committer \(pid $pid\) of database "postgres" did not answer this request/,
	'it gets 57014 naming the committer, its pid and the database')
  or diag($run->{err});
like($run->{err}, qr/DETAIL:  It showed no progress for \d+ ms; paimon_sink.committer_timeout is 2000 ms\. The request stays queued/,
	'the detail says for how long, the bound, and that the request stays queued');
like($run->{err}, qr/HINT:  Look at process $pid/, 'the hint names the process to look at');

# a session that only writes does not need the committer
my ($wret, $wout, $werr) = ('', '', '');
$wret = $node->psql('postgres',
	"BEGIN; INSERT INTO u SELECT g, repeat('x', 40) FROM generate_series(201, 300) g; "
	  . "INSERT INTO ledger_u SELECT g FROM generate_series(201, 300) g; COMMIT;",
	stdout => \$wout, stderr => \$werr, timeout => 30);
is($wret, 0, 'writes go on while the committer is stopped') or diag($werr);

kill 'CONT', $pid;
# the request given up on runs all the same, as a cancelled one does
$node->poll_query_until('postgres',
	"SELECT count(*) >= 200 FROM tu")
  or diag('the queued checkpoint did not run');
exact('u', 'after SIGCONT');

# --- no committer at all: the launcher stopped, the committer ended while
# a checkpoint() waits on it; the wait ends within the timeout, saying no
# committer runs and naming max_worker_processes
my $launcher = $node->safe_psql('postgres',
	"SELECT pid FROM pg_stat_activity WHERE application_name = 'paimon_sink launcher'");
ok($launcher ne '', 'the launcher runs');
write_rows('u', 301, 400);
kill 'STOP', $pid;
$run = background("SELECT count(*) FROM paimon_sink.checkpoint('u')");
usleep(300_000);
kill 'STOP', $launcher;
kill 'TERM', $pid;
kill 'CONT', $pid;
$secs = finish_within($run, $timeout + 20);
ok(defined $secs && $secs < $timeout + 5,
	'a checkpoint() waiting when no committer runs ends within the timeout')
  or diag('it took ' . ($secs // 'more than ' . ($timeout + 20)) . ' s');
like($run->{err}, qr/ERROR:  57014: no paimon_sink committer is running in database "postgres"/,
	'it gets 57014 saying that no committer runs')
  or diag($run->{err});
like($run->{err}, qr/HINT:  Check that max_worker_processes leaves room/,
	'the hint names max_worker_processes');
kill 'CONT', $launcher;
my $new_pid = committer_pid();
ok(defined $new_pid && $new_pid != $pid, 'the launcher starts a new committer');
ok(writers_ready($node, 'postgres'), 'the writers serve again');
exact('u', 'after the committer came back');

# --- a committer busy with a long load beats: neither the session waiting
# for it nor one queued behind it (another sink's checkpoint) gives up.  A
# trigger of the target that sleeps 20 ms at every 1000th row makes the load
# of 300,000 rows last 6 s at least, three times the timeout, whatever the
# machine's speed.
$node->safe_psql('postgres', q{
	CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF NEW.id % 1000 = 0 THEN
			PERFORM pg_catalog.pg_sleep(0.02);
		END IF;
		RETURN NEW;
	END $$;
	CREATE TRIGGER slow_row BEFORE INSERT ON tu FOR EACH ROW EXECUTE FUNCTION slow_row();
});
write_rows('u', 100_001, 400_000);
write_rows('v', 1, 100);
my $big = background("SELECT count(*) FROM paimon_sink.checkpoint('u')");
$node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM paimon_sink.commit_progress WHERE phase = 'loading'")
  or diag('the large checkpoint was not seen loading');
my $queued = background("SELECT count(*) FROM paimon_sink.checkpoint('v')");
my $big_secs = finish_within($big, 100);
my $queued_secs = finish_within($queued, 100);
ok(defined $big_secs && $big->{err} eq '', 'the large checkpoint succeeds')
  or diag($big->{err});
ok(defined $queued_secs && $queued->{err} eq '',
	"the checkpoint queued behind it succeeds (no 57014)")
  or diag($queued->{err});
ok(defined $big_secs && $big_secs > 3 * $timeout,
	'the large checkpoint took longer than three times paimon_sink.committer_timeout, beating')
  or diag('it took ' . ($big_secs // '?') . ' s');
exact('u', 'after the large checkpoint');
exact('v', 'after the queued checkpoint');

$node->stop;
done_testing();
