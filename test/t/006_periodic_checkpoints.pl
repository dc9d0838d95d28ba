# Periodic checkpoints: a sink with a checkpoint_interval (or the default
# paimon_sink.checkpoint_interval) is committed by the committer on its
# own, without any call; empty intervals make no snapshot; a checkpoint
# that fails is logged and tried again, and the other sinks go on; an
# overloaded committer takes the sinks earliest deadline first, so none
# starves, and the checkpoint_schedule view counts how late each is.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(start_node);
use Time::HiRes qw(time usleep);

my $node = start_node('periodic', "log_min_messages = log");

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

# --- earliest deadline first: an overloaded committer slows every sink alike.
# 16 sinks with a 1 ms interval are more than a committer can checkpoint.
# Taking the first due sink in array order (creation order), the sinks at
# the back never ran: the ones before them were due again first.
my @edf = map { sprintf('edf_%02d', $_) } 1 .. 16;
sql(join("\n", map {
	"CREATE TABLE ${_}_t (id int);
	 SELECT sink_name FROM paimon_sink.create_sink('$_', '${_}_t', checkpoint_interval => '1ms');"
} @edf));
sql(join("\n", map { "INSERT INTO $_ VALUES (1);" } @edf));
my $all_arrived = 'SELECT ' . join(' AND ', map { "EXISTS (SELECT FROM ${_}_t)" } @edf);
$waited = seconds_until($all_arrived);
ok(defined $waited && $waited < 10,
	sprintf('every one of 16 overloaded sinks commits its row, the last created too (after %.2f s)',
		$waited // -1));
my $runs = "SELECT string_agg(checkpoints::text, ' ' ORDER BY sink_name)
	FROM paimon_sink.checkpoint_schedule WHERE sink_name LIKE 'edf\\_%'";
my @before = split / /, sql($runs);
sleep 1;
my @after = split / /, sql($runs);
is(scalar(@after), 16, 'checkpoint_schedule shows each of them');
my @turns = map { $after[$_] - $before[$_] } 0 .. $#after;
my ($fewest, $most) = (sort { $a <=> $b } @turns)[ 0, -1 ];
ok($fewest > 0 && $fewest * 2 >= $most,
	"over a second each sink had its turns, none fewer than half the most: @turns");
is(sql("SELECT count(*) FROM paimon_sink.checkpoint_schedule
	WHERE sink_name LIKE 'edf\\_%' AND overdue > 0 AND max_late_ms > 0
	  AND next_due IS NOT NULL AND last_run IS NOT NULL AND interval_ms = 1"), '16',
	'and counts each one\'s overdue slots and lateness');
# and the committer's other duties get their turns between them: an orphan
# file is removed on schedule (taking the first due duty, orphan removal
# never came while a periodic checkpoint was due)
my $edf_dir = $node->data_dir . '/pg_paimon_sink/'
  . sql("SELECT oid FROM pg_database WHERE datname = current_database()") . '/'
  . sql("SELECT sink_id FROM paimon_sink.sink_definition WHERE sink_name = 'edf_16'");
mkdir $edf_dir unless -d $edf_dir;
my $edf_orphan = "$edf_dir/0a0b0c0d-0000-4000-8000-000000000016.stage";
open(my $fh, '>', $edf_orphan) or die "cannot create $edf_orphan: $!";
print $fh "left by a crash long ago";
close $fh;
sql("ALTER SYSTEM SET paimon_sink.orphan_removal_interval = '1s'");
sql("ALTER SYSTEM SET paimon_sink.orphan_file_age = 0");
$node->reload;
$waited = seconds_until("SELECT (pg_stat_file('$edf_orphan', true)).size IS NULL");
ok(defined $waited && $waited < 10,
	sprintf('the overloaded committer still removes an orphan file on schedule (after %.2f s)',
		$waited // -1));
sql("ALTER SYSTEM RESET paimon_sink.orphan_removal_interval");
sql("ALTER SYSTEM RESET paimon_sink.orphan_file_age");
$node->reload;
sql(join("\n", map { "SELECT paimon_sink.drop_sink('$_', true); DROP TABLE ${_}_t;" } @edf));
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM paimon_sink.checkpoint_schedule_status() p
	 WHERE NOT EXISTS (SELECT FROM paimon_sink.sink_definition s WHERE s.sink_id = p.sink_id)"),
	'dropped sinks leave the schedule');

# --- a DROP DATABASE that fails stops the workers only for the while it tries
$node->safe_psql('postgres', 'CREATE DATABASE kept');
$node->safe_psql('kept', q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE kept_target (id int PRIMARY KEY);
	SELECT sink_name FROM paimon_sink.create_sink('kept_sink', 'kept_target', checkpoint_interval => '3s');
	INSERT INTO kept_sink VALUES (1);
});
ok($node->poll_query_until('kept', "SELECT count(*) = 1 FROM kept_target"), 'a second database checkpoints');
my $user = $node->background_psql('kept', on_error_stop => 0);
$user->query_safe("SELECT 1");
# staged, not yet committed (the next periodic checkpoint is seconds away)
$node->safe_psql('kept', "INSERT INTO kept_sink VALUES (2)");
my $committer_of_kept = "SELECT pid FROM pg_stat_activity WHERE datname = 'kept' AND backend_type = 'paimon_sink committer'";
my $before = sql($committer_of_kept);
isnt($before, '', 'its committer runs');
my ($ret, $out, $err) = $node->psql('postgres', 'DROP DATABASE kept');
like($err, qr/database "kept" is being accessed by other users/, 'DROP DATABASE fails while a session stays');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM ($committer_of_kept) c WHERE pid <> $before"),
	'the drop stopped its committer, and a new one runs');
ok($node->poll_query_until('kept', "SELECT count(*) = 2 FROM kept_target"),
	'and checkpoints on its own');
$user->quit;
$node->safe_psql('postgres', 'DROP DATABASE kept');
is(sql("SELECT count(*) FROM pg_database WHERE datname = 'kept'"), '0', 'and once it is left, the drop succeeds');

done_testing();
