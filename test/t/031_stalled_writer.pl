# A writer that stops answering (SIGSTOP; a fault point that pauses it)
# never stalls the sink: the sessions waiting on it get SQLSTATE 57014
# within paimon_sink.handoff_timeout, an append sink without a bucket key
# keeps taking rows through the other writer, a bucketed sink whose bucket
# is on the stopped writer fails within the timeout, the committer fences
# the writer (logged) and releases its hold on PostgreSQL's checkpoints, a
# CHECKPOINT issued meanwhile completes, and once the process goes on (or
# is killed, when paimon_sink.fenced_writer_kill_delay asks for it) the
# writer is restarted and every row is exactly once against a ledger
# written in the same transactions; a hand-off its session gave up on is
# never committed, even when the writer writes and acknowledges it later.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use PaimonSinkTest qw(writers_ready background_verbose finish_within holds_ledger_exactly windows_closed);
use Time::HiRes qw(time usleep);

my $timeout = 4;    # paimon_sink.handoff_timeout, seconds

my $node = PostgreSQL::Test::Cluster->new('stalled');
$node->init;
$node->append_conf('postgresql.conf',
	"paimon_sink.handoff_timeout = '${timeout}s'\npaimon_sink.group_fsync_delay = '100ms'\n"
	  . "restart_after_crash = on");
$node->start;
$node->safe_psql('postgres', q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE tu (id int, note text);
	CREATE TABLE ledger_u (id int PRIMARY KEY);
	CREATE TABLE tb (id int, note text);
	CREATE TABLE ledger_b (id int PRIMARY KEY);
	SELECT sink_name FROM paimon_sink.create_sink('u', 'tu');
	SELECT sink_name FROM paimon_sink.create_sink('b', 'tb', buckets => 8, bucket_key => '{id}');
});
ok(writers_ready($node, 'postgres'), 'the writers serve');

# write_sql(SINK, FIRST, LAST, NOTE): one transaction writing ids
# FIRST..LAST into the sink and its ledger
sub write_sql
{
	my ($sink, $first, $last, $note) = @_;
	return "BEGIN; INSERT INTO $sink SELECT g, '$note' FROM generate_series($first, $last) g; "
	  . "INSERT INTO ledger_$sink SELECT g FROM generate_series($first, $last) g; COMMIT;";
}

# background(SQL): psql running SQL in the background (at most 150 s);
# finish_within takes it
sub background
{
	return background_verbose($node, $_[0], 150);
}

# run_sql(SQL): runs SQL, for at most $timeout + 15 s (a wait that does not
# end fails the test rather than hang it); returns (0 when it succeeded,
# stderr, seconds taken)
sub run_sql
{
	my ($sql) = @_;
	my $run = background($sql);
	my $secs = finish_within($run, $timeout + 15);
	if (!defined $secs)
	{
		return (1, "did not end within " . ($timeout + 15) . " s", $timeout + 15);
	}
	return ($run->{err} =~ /ERROR:/ ? 1 : 0, $run->{err}, $secs);
}

# write_rows(SINK, FIRST, LAST, NOTE): write_sql run by run_sql
sub write_rows
{
	return run_sql(write_sql(@_));
}

sub log_has
{
	my ($pattern, $secs) = @_;
	my $deadline = time + $secs;
	while (time < $deadline)
	{
		return 1 if slurp_file($node->logfile) =~ $pattern;
		usleep(100_000);
	}
	return 0;
}

# exact(SINK, LABEL): a checkpoint works, and the target holds every ledger
# row exactly once
sub exact
{
	my ($sink, $label) = @_;
	my ($ret, $err) = run_sql("SELECT count(*) FROM paimon_sink.checkpoint('$sink')");
	is($ret, 0, "$label: checkpoint('$sink') works") or diag($err);
	holds_ledger_exactly($node, "t$sink", "ledger_$sink", $label);
	return;
}

sub paused_pid
{
	my ($point) = @_;
	$node->poll_query_until('postgres',
		"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = '$point'")
	  or return undef;
	return $node->safe_psql('postgres',
		"SELECT paused_pid FROM paimon_sink.faults WHERE point = '$point'");
}

my ($ret, $err, $secs);
($ret, $err) = write_rows('u', 1, 10, 'before');
is($ret, 0, 'a first transaction into the unbucketed sink') or diag($err);
($ret, $err) = write_rows('b', 1, 100, 'before');
is($ret, 0, 'a first transaction into the bucketed sink') or diag($err);
exact('u', 'before');
exact('b', 'before');

# --- the writer of the unbucketed sink stops (SIGSTOP) inside its sync
# window, after acknowledging a committed transaction
ok(windows_closed($node), 'the earlier sync windows closed');
$node->safe_psql('postgres', "SELECT paimon_sink.inject_fault('writer_before_window_sync', 'pause')");
($ret, $err) = write_rows('u', 11, 20, 'committed, window open');
is($ret, 0, 'a transaction commits; its writer holds its window open') or diag($err);
my $pid = paused_pid('writer_before_window_sync');
ok(defined $pid, 'the writer pauses inside its window');
my $index = $node->safe_psql('postgres', "SELECT writer FROM paimon_sink.writers WHERE pid = $pid");
kill 'STOP', $pid;
my $stopped_at = time;
$node->safe_psql('postgres', "SELECT paimon_sink.release_fault('writer_before_window_sync')");

my $checkpoint = background('CHECKPOINT');
my $bucketed = background(write_sql('b', 1001, 1100, 'dead: its writer stopped'));

# while the writer has not been fenced yet, and after: the unbucketed sink
# takes rows through the other writer
usleep(2_500_000);
my $all_ok = 1;
for my $n (0 .. 4)
{
	($ret, $err, $secs) = write_rows('u', 100 + 10 * $n, 109 + 10 * $n, 'through the other writer');
	$all_ok &&= $ret == 0 && $secs < $timeout;
	diag("transaction $n: $ret after ${secs}s: $err") if $ret != 0 || $secs >= $timeout;
}
ok($all_ok, 'the unbucketed sink keeps taking rows while its writer is stopped, each within the timeout');

$secs = finish_within($bucketed, $timeout + 10);
ok(defined $secs && $secs < $timeout + 3,
	'a bucketed transaction waiting on the stopped writer ends within the timeout')
  or diag('it took ' . ($secs // 'more than ' . ($timeout + 10)) . ' s');
like($bucketed->{err}, qr/ERROR:  57014: /, 'it gets the documented error (57014)')
  or diag($bucketed->{err});
like($bucketed->{err}, qr/sink writer $index \(pid $pid\) did not answer the hand-off of this transaction/,
	'the error names the writer, its pid and the wait');

ok(log_has(qr/fences writer $index \(pid $pid\) of database "postgres"/, 20),
	'the committer fences the writer and says so in the log');
$secs = finish_within($checkpoint, 20);
ok(defined $secs, 'a CHECKPOINT issued while the writer is stopped in its window completes');
ok(defined $secs && time - $stopped_at < $timeout + 15, 'within a bound')
  or diag('the CHECKPOINT took ' . ($secs // 'more than 20') . ' s');
is($checkpoint->{err}, '', 'the CHECKPOINT succeeds');
ok(log_has(qr/released the checkpoint hold of fenced writer $index \(pid $pid\)/, 5),
	'the committer released its hold on the checkpoint, and says so');
is($node->safe_psql('postgres',
		"SELECT concat_ws(' ', fenced, fences, last_fenced_at IS NOT NULL) FROM paimon_sink.writers WHERE writer = $index"),
	't 1 t', 'the writers view shows the writer fenced, once, and when');

($ret, $err, $secs) = write_rows('b', 2001, 2100, 'dead: its writer is fenced');
like($err, qr/ERROR:  57014: sink writer $index \(pid $pid\) did not answer/,
	'a bucketed transaction whose bucket is on the fenced writer fails with 57014');
ok($secs < $timeout, 'at once') or diag("it took ${secs}s");
($ret, $err, $secs) = write_rows('u', 200, 209, 'after the fence');
is($ret, 0, 'the unbucketed sink takes rows after the fence') or diag($err);
my ($cret, $cerr) = run_sql("SELECT * FROM paimon_sink.checkpoint('u')");
like($cerr, qr/57014: sink writer $index \(pid $pid\) did not answer the barrier/,
	'a checkpoint while the writer is fenced fails with 57014 naming it');

kill 'CONT', $pid;
ok(log_has(qr/writer $index \(pid $pid\) of database "postgres" has left after its fence/, 20),
	'once it goes on, the fenced process leaves and the committer says so');
ok(writers_ready($node, 'postgres'), 'the committer restarts the writer');
is($node->safe_psql('postgres',
		"SELECT concat_ws(' ', fenced, fences, last_fenced_at IS NOT NULL) FROM paimon_sink.writers WHERE writer = $index"),
	'f 1 t', 'its new process is not fenced; the count of fences and the last one stay');
isnt($node->safe_psql('postgres', "SELECT pid FROM paimon_sink.writers WHERE writer = $index"),
	$pid, 'with a new process');
exact('u', 'after SIGCONT');
exact('b', 'after SIGCONT');
is($node->safe_psql('postgres', "SELECT count(*) FROM tb WHERE note LIKE 'dead%'"), '0',
	'no row of a transaction that gave up');

# --- a hand-off its session gave up on (cancelled) that the writer writes
# and acknowledges afterwards is never committed
$node->safe_psql('postgres', "SELECT paimon_sink.inject_fault('writer_after_receive', 'pause')");
my $given_up = background(write_sql('u', 3001, 3010, 'dead: given up'));
$pid = paused_pid('writer_after_receive');
ok(defined $pid, 'a writer holds a hand-off written and logged, not acknowledged');
$node->safe_psql('postgres',
	"SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE query LIKE '%dead: given up%' AND pid <> pg_backend_pid()");
$secs = finish_within($given_up, 20);
like($given_up->{err}, qr/canceling statement due to user request/, 'its session gives up');
$node->safe_psql('postgres', "SELECT paimon_sink.release_fault('writer_after_receive')");
($ret, $err) = write_rows('u', 3011, 3020, 'after a given-up hand-off');
is($ret, 0, 'the writer goes on') or diag($err);
exact('u', 'a given-up hand-off acknowledged later');
is($node->safe_psql('postgres', "SELECT count(*) FROM tu WHERE id BETWEEN 3001 AND 3010"), '0',
	'the given-up hand-off left no row');

# --- the same, the session's wait ended by the timeout: the committer
# fences the paused writer, whose SIGTERM ends it without acknowledging;
# its successor adopts the file with the batch of the rolled-back
# transaction
$node->safe_psql('postgres', "SELECT paimon_sink.inject_fault('writer_after_receive', 'pause')");
my $timed_out = background(write_sql('u', 4001, 4010, 'dead: timed out'));
$pid = paused_pid('writer_after_receive');
$secs = finish_within($timed_out, $timeout + 10);
ok(defined $secs && $secs < $timeout + 3, 'a hand-off the writer holds unacknowledged ends within the timeout')
  or diag('it took ' . ($secs // 'more than ' . ($timeout + 10)) . ' s');
like($timed_out->{err}, qr/57014: sink writer \d+ \(pid $pid\) did not answer the hand-off/,
	'with 57014 naming the writer');
ok(log_has(qr/fences writer \d+ \(pid $pid\)/, $timeout + 10), 'the committer fences the paused writer');
$node->safe_psql('postgres', "SELECT paimon_sink.clear_faults()");
ok(writers_ready($node, 'postgres'), 'the fenced writer is restarted');
exact('u', 'a hand-off ended by the timeout');
is($node->safe_psql('postgres', "SELECT count(*) FROM tu WHERE id BETWEEN 4001 AND 4010"), '0',
	'it left no row');

# --- paimon_sink.fenced_writer_kill_delay: a fenced process that does not
# leave is sent SIGKILL, and the cluster's crash restart keeps every row
$node->append_conf('postgresql.conf', "paimon_sink.fenced_writer_kill_delay = '1s'");
$node->reload;
($ret, $err) = write_rows('u', 5001, 5010, 'before the kill');
is($ret, 0, 'a committed transaction before the writer stops') or diag($err);
$pid = $node->safe_psql('postgres',
	"SELECT w.pid FROM paimon_sink.writers w ORDER BY w.handoffs DESC LIMIT 1");
kill 'STOP', $pid;
ok(log_has(qr/sends SIGKILL to fenced writer \d+ \(pid $pid\)/, $timeout + 15),
	'the committer sends SIGKILL to the fenced writer that does not leave');
ok(log_has(qr/terminated by signal 9|all server processes terminated/, 20),
	'the postmaster restarts the cluster');
$node->poll_query_until('postgres', 'SELECT true') or die 'the cluster did not come back';
ok(writers_ready($node, 'postgres'), 'the writers serve after the crash restart');
exact('u', 'after SIGKILL and the crash restart');
exact('b', 'after SIGKILL and the crash restart');

kill 'CONT', $pid;    # a stopped process would hold the shutdown
$node->stop;
done_testing();
