# The 1-row round without a writer fsync or an idle writer's round trip:
# a checkpoint barrier seals a writer's files without fsyncing them (its
# sync window fsyncs them as it closes, and a PostgreSQL checkpoint waits
# for that), and skips a writer that holds nothing of the sink.  Crashes
# at each moment this opens (the checkpoint committed, between its
# committables and PREPARE, between PREPARE and COMMIT PREPARED, each time
# with the sealed file never fsynced and the page cache lost) keep every
# committed row exactly once, a PostgreSQL checkpoint taken while a sealed
# file is unsynced waits for its fsync, an idle committer still unlinks
# the committed files (it flushes their REMOVE records after a short nap
# when no other flush did), and a streaming standby that replays the WAL
# holds what the primary holds.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(writers_ready try_sql background_sql stop_load staged_files staged_files_left staged_listing
  same_staged_files exactly_once lose_page_cache sink_setup book_insert fault_paused windows_closed);
use Time::HiRes qw(usleep);

# fsync on, a window of 1 s: a checkpoint() ends well inside the window
my $node = PostgreSQL::Test::Cluster->new('nofsync');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf',
	"restart_after_crash = on\nfsync = on\npaimon_sink.group_fsync_delay = '1000ms'\n"
	  . "paimon_sink.handoff_timeout = '60s'\nmax_connections = 30");
$node->start;

sub sql { return $node->safe_psql('postgres', $_[0]); }

ok(sink_setup($node), 'writers serve');

# a standby that replays everything below, crashes of the primary included
$node->backup('bk');
my $standby = PostgreSQL::Test::Cluster->new('nofsync_standby');
$standby->init_from_backup($node, 'bk', has_streaming => 1);
$standby->start;

my %committed;

sub committed_insert { book_insert($node, \%committed, @_); return; }
sub check_exact { exactly_once($node, \%committed, $_[0]); return; }

sub paused { return fault_paused($node, $_[0]); }

sub fsyncs { return sql('SELECT sum(fsyncs) FROM paimon_sink.writers'); }

committed_insert(1, 10, 'warm up');
check_exact('warm up');

# --- 1. checkpoint() waits for no writer fsync: the writer's window is
# held before its fsyncs, the checkpoint commits all the same; then the
# cluster dies and the page cache with it: the WAL brings the rows back
# once, and the committed file's removal stands
sql('CHECKPOINT');
my %sizes = map { split / / } staged_listing($node);
ok(windows_closed($node), 'the earlier sync windows closed');
sql("SELECT paimon_sink.inject_fault('writer_before_window_sync', 'pause')");
my $before = fsyncs();
committed_insert(101, 110, 'committed, its file never fsynced');
my ($ret, $out, $err) = try_sql($node,
	"SET statement_timeout = '10s'; SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')");
is($ret, 0, 'checkpoint() returns while the writer has not fsynced') or diag($err);
like($out, qr/^10$/m, 'the checkpoint commits the 10 rows');
is(fsyncs(), $before, 'no staged file was fsynced for that checkpoint');
ok(paused('writer_before_window_sync'), 'the window closes after it, held before its fsyncs');
$node->stop('immediate');
lose_page_cache($node, \%sizes);
$node->start;
ok(writers_ready($node, 'postgres'), 'the cluster is back');
check_exact('crash after a checkpoint committed an unsynced file');

# --- 2, 3. crashes between the committables and PREPARE, and between
# PREPARE and COMMIT PREPARED, the sealed file unsynced and then lost:
# redo rebuilds it, and the checkpoint is committed once
my $n = 200;
for my $point ('committer_before_prepare', 'committer_after_prepare')
{
	sql('CHECKPOINT');
	%sizes = map { split / / } staged_listing($node);
	ok(windows_closed($node), 'the earlier sync windows closed');
	sql("SELECT paimon_sink.inject_fault('writer_before_window_sync', 'pause')");
	sql("SELECT paimon_sink.inject_fault('$point', 'pause')");
	committed_insert($n + 1, $n + 10, "committed, sealed unsynced, crash at $point");
	my $checkpoint = background_sql($node, "SELECT count(*) FROM paimon_sink.checkpoint('s')");
	ok(paused($point), "$point: the committer holds there");
	ok(paused('writer_before_window_sync'), "$point: the sealed file's window holds before its fsyncs");
	# the committables' commit is asynchronous: the WAL writer flushes it meanwhile
	usleep(500_000);
	$node->stop('immediate');
	stop_load($checkpoint);
	ok(lose_page_cache($node, \%sizes) > 0, "$point: the sealed file is lost with the page cache");
	$node->start;
	ok(writers_ready($node, 'postgres'), "$point: the cluster is back");
	check_exact("crash at $point, the sealed file unsynced");
	$n += 100;
}

# --- 4. a PostgreSQL checkpoint taken while a sealed file is unsynced
# waits for the window, which fsyncs that file (and its folder) first
ok(windows_closed($node), 'the earlier sync windows closed');
sql("SELECT paimon_sink.inject_fault('writer_before_window_sync', 'pause')");
sql("SELECT paimon_sink.inject_fault('committer_before_prepare', 'pause')");
committed_insert(401, 410, 'sealed during a PostgreSQL checkpoint');
my $checkpoint = background_sql($node, "SELECT count(*) FROM paimon_sink.checkpoint('s')");
ok(paused('committer_before_prepare'), 'the file is sealed and recorded, not yet committed');
ok(paused('writer_before_window_sync'), 'its window holds before its fsyncs');
my $fsyncs_open = fsyncs();
my $pg_checkpoint = background_sql($node, 'CHECKPOINT');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE query = 'CHECKPOINT' AND state = 'active'"),
	'a CHECKPOINT is requested');
sleep 2;
is(sql("SELECT count(*) FROM pg_stat_activity WHERE query = 'CHECKPOINT' AND state = 'active'"),
	'1', 'the CHECKPOINT waits while the sealed file is unsynced');
sql("SELECT paimon_sink.release_fault('writer_before_window_sync')");
ok(eval { $pg_checkpoint->{harness}->finish; }, 'the CHECKPOINT completes once the window closed')
  or diag($pg_checkpoint->{err});
cmp_ok(fsyncs() - $fsyncs_open, '>=', 2, 'the window fsynced the sealed file and its folder');
# the crash after that checkpoint: redo starts after the file's records
$node->stop('immediate');
stop_load($checkpoint);
$node->start;
ok(writers_ready($node, 'postgres'), 'the cluster is back after a crash after the checkpoint');
check_exact('crash after a checkpoint that waited for the sealed file');

# --- 5. a writer that holds nothing of the sink is not asked: stopped, it
# does not hold a checkpoint() up (one empty checkpoint first: a writer
# forgets the files of the last one at the next barrier)
sql("SELECT count(*) FROM paimon_sink.checkpoint('s')");
committed_insert(501, 510, 'on one writer');
my $idle_pid = sql('SELECT pid FROM paimon_sink.writers WHERE files_open = 0 ORDER BY writer LIMIT 1');
my $busy = sql('SELECT count(*) FROM paimon_sink.writers WHERE files_open > 0');
is($busy, '1', 'one writer holds the rows of the sink');
ok($idle_pid =~ /^\d+$/, 'the other writer holds no file');
kill 'STOP', $idle_pid;
($ret, $out, $err) = try_sql($node,
	"SET statement_timeout = '10s'; SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')");
kill 'CONT', $idle_pid;
is($ret, 0, 'checkpoint() does not wait for a writer that holds nothing of the sink') or diag($err);
like($out, qr/^10$/m, 'the checkpoint commits the 10 rows of the busy writer');
check_exact('a barrier that skipped a writer');

# an idle committer flushes the REMOVE records itself after a short nap:
# the committed files go though no other flush comes
is(staged_files_left($node), 0, 'the committed files are unlinked while nothing else flushes the WAL');

# many 1-row rounds from two sessions at once
my @loads;
for my $s (0, 1)
{
	my $file = "$PostgreSQL::Test::Utils::tmp_check/rounds_$s.sql";
	my $script = '';
	for my $i (1 .. 100)
	{
		my $id = 10_000 + $s * 1000 + $i;
		$script .= "INSERT INTO s VALUES ($id, 'round');\n"
		  . "SELECT count(*) FROM paimon_sink.checkpoint('s');\n";
	}
	PostgreSQL::Test::Utils::append_to_file($file, $script);
	my $run = { out => '', err => '' };
	$run->{harness} = IPC::Run::start(
		[ $node->installed_command('psql'), '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d',
		  $node->connstr('postgres'), '-f', $file ],
		'<', \undef, '>', \$run->{out}, '2>', \$run->{err}, IPC::Run::timeout(150));
	push @loads, $run;
}
for my $load (@loads)
{
	ok(eval { $load->{harness}->finish; }, 'a session of 1-row rounds completes')
	  or diag($load->{err});
}
for my $s (0, 1) { $committed{ 10_000 + $s * 1000 + $_ } = 1 for 1 .. 100; }
check_exact('two sessions of 1-row rounds');

# --- the standby replayed all of it: the same rows, the same staged files
committed_insert(601, 610, 'staged at the end');
$node->wait_for_catchup($standby, 'replay', $node->lsn('insert'));
is($standby->safe_psql('postgres', 'SELECT count(*) || \' \' || coalesce(sum(id), 0) FROM target'),
	sql('SELECT count(*) || \' \' || coalesce(sum(id), 0) FROM target'),
	'the standby holds the primary\'s target rows');
same_staged_files($node, $standby, 'after the crashes');

$standby->stop;
$node->stop;
done_testing();
