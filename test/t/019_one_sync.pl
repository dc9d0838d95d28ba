# One sync per small transaction: a writer acknowledges a hand-off once its
# batch is written and logged, the commit record's flush makes the batch
# durable, and the writer fsyncs its files when its sync window closes
# (a PostgreSQL checkpoint waits for that).  Crashes at each moment of
# that path keep every committed row exactly once and no row of a
# transaction that did not commit; a crash cannot make a dead batch count
# as committed by a new transaction that recovery gives its xid.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(back_after_crash start_node writers_ready try_sql background_sql stop_load staged_listing
  exactly_once lose_page_cache sink_setup book_insert windows_closed);
use Time::HiRes qw(usleep);

# fsync on: the WAL syncs are what this test counts
my $node = start_node('onesync',
	"restart_after_crash = on\nfsync = on\npaimon_sink.group_fsync_delay = '100ms'");

sub sql { return $node->safe_psql('postgres', $_[0]); }

ok(sink_setup($node), 'writers serve');

# the ids of every committed row; check_exact compares the target with them
my %committed;

sub committed_insert { book_insert($node, \%committed, @_); return; }

sub check_exact
{
	my ($label) = @_;
	exactly_once($node, \%committed, $label);
	is(sql("SELECT count(*) FROM target WHERE note LIKE 'dead%'"), '0',
		"$label: no row of a transaction that did not commit");
	return;
}

# a transaction that crashes the cluster at a fault point; returns its output
sub crashing_insert
{
	my ($point, $first, $last, $note) = @_;
	my $offset = -s $node->logfile;
	sql("SELECT paimon_sink.inject_fault('$point', 'panic')");
	my ($ret, $out, $err) = try_sql($node,
		"BEGIN; SELECT txid_current(); INSERT INTO s SELECT g, '$note' FROM generate_series($first, $last) g; COMMIT;");
	isnt($ret, 0, "$point: the transaction fails with the crash");
	ok(back_after_crash($node, 'postgres', $offset), "$point: the cluster and its writers are back");
	return $out;
}

# --- the syncs of small transactions
committed_insert(1, 1, 'warm up');
my $fsyncs_before = sql('SELECT sum(fsyncs) FROM paimon_sink.writers');
# the WAL's syncs: pg_stat_wal's wal_sync until 17; from 18 pg_stat_io's
# fsyncs of the object 'wal' (18 moved the WAL's I/O counts there)
my $wal_sync_query =
  sql('SHOW server_version_num') >= 180000
  ? "SELECT sum(fsyncs) FROM pg_stat_io WHERE object = 'wal'"
  : 'SELECT wal_sync FROM pg_stat_wal';
my $wal_before = sql($wal_sync_query);
my $n = 200;
my $script = join('', map { "INSERT INTO s VALUES (" . (100 + $_) . ", 'small');\n" } 1 .. $n);
my ($ret, $out, $err) = try_sql($node, $script);
is($ret, 0, "$n one-row transactions commit") or diag($err);
$committed{ 100 + $_ } = 1 for 1 .. $n;
# a new session: the one that ran them reported its WAL statistics as it ended
my $wal_syncs = sql($wal_sync_query) - $wal_before;
my $fsyncs = sql('SELECT sum(fsyncs) FROM paimon_sink.writers') - $fsyncs_before;
note("$n transactions: $wal_syncs WAL syncs, $fsyncs staged-file fsyncs");
ok($wal_syncs >= $n * 0.5 && $wal_syncs <= $n * 1.5,
	"about one WAL sync per small transaction ($wal_syncs for $n)");
ok($fsyncs < $n / 2, "the writers' fsyncs do not grow per transaction ($fsyncs for $n)");

# --- crashes before the commit record: rows written, not logged; logged,
# not acknowledged; acknowledged, no commit record
committed_insert(1001, 1010, 'before the crashes');
crashing_insert('writer_before_wal', 2001, 2010, 'dead: written, not logged');
committed_insert(1011, 1020, 'after a crash');
crashing_insert('writer_after_receive', 2011, 2020, 'dead: logged, not acknowledged');
committed_insert(1021, 1030, 'after a crash');
crashing_insert('backend_after_handoff', 2021, 2030, 'dead: acknowledged, no commit record');
committed_insert(1031, 1040, 'after a crash');
check_exact('crashes before the commit record');

# --- the commit flushed, the window's fsync not done: the WAL brings the
# rows back even when the file writes are lost with the page cache
sql('CHECKPOINT');
my %size_at_checkpoint = map { split / / } staged_listing($node);
ok(windows_closed($node), 'the earlier sync windows closed');
sql("SELECT paimon_sink.inject_fault('writer_before_window_sync', 'pause')");
committed_insert(3001, 3010, 'committed, not fsynced');
pass('the commit returns before the writer fsyncs');
ok($node->poll_query_until('postgres',
		"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'writer_before_window_sync'"),
	'the writer holds its sync window open');
$node->stop('immediate');
# what the page cache held since the checkpoint is gone, as after a power cut
my $cut = lose_page_cache($node, \%size_at_checkpoint);
ok($cut > 0, 'the bytes written since the checkpoint are cut off the staged files');
$node->start;
ok(writers_ready($node, 'postgres'), 'the cluster is back');
check_exact('crash after the commit, before the fsync');

# --- a checkpoint waits for an open window, and completes once it closed
ok(windows_closed($node), 'the earlier sync windows closed');
sql("SELECT paimon_sink.inject_fault('writer_before_window_sync', 'pause')");
committed_insert(4001, 4010, 'written during a checkpoint');
ok($node->poll_query_until('postgres',
		"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'writer_before_window_sync'"),
	'the writer holds its sync window open');
my $fsyncs_open = sql('SELECT sum(fsyncs) FROM paimon_sink.writers');
my $checkpoint = background_sql($node, 'CHECKPOINT');
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE query = 'CHECKPOINT' AND state = 'active'"),
	'a CHECKPOINT is requested');
sleep 2;
is(sql("SELECT count(*) FROM pg_stat_activity WHERE query = 'CHECKPOINT' AND state = 'active'"),
	'1', 'the CHECKPOINT waits while the window is open');
sql("SELECT paimon_sink.release_fault('writer_before_window_sync')");
my $finished = eval { $checkpoint->{harness}->finish; };
ok($finished, 'the CHECKPOINT completes once the window closed')
  or diag($checkpoint->{err});
ok(sql('SELECT sum(fsyncs) FROM paimon_sink.writers') > $fsyncs_open,
	'the writer fsynced before the checkpoint completed');
$node->stop('immediate');
$node->start;
ok(writers_ready($node, 'postgres'), 'the cluster is back after a crash after the checkpoint');
check_exact('crash after a checkpoint that waited for a window');

# --- a batch on disk that was never logged, and its xid handed out again
# by recovery to committed transactions: its rows must stay out
committed_insert(5001, 5010, 'the file of the next batch');
my $dead_xid = crashing_insert('writer_before_wal', 6001, 6010, 'dead: its xid reused');
chomp $dead_xid;
like($dead_xid, qr/^\d+$/, 'the dead transaction had an xid');
my ($next_xid) = slurp_file($node->logfile)
  =~ /The batch there has transaction id $dead_xid; the next transaction id after recovery is (\d+)\./;
ok(defined $next_xid && $next_xid <= $dead_xid,
	"the end of recovery cut the batch that was never logged, whose xid recovery hands out again");
my $burnt = 0;
$burnt = sql('SELECT txid_current()') while $burnt <= $dead_xid + 1;
committed_insert(5011, 5020, 'after the xid reuse');
check_exact('xid of a dead batch reused');

# --- a logged batch of a transaction that did not commit, followed in its
# file by the batch of a committed transaction with an older xid: redo
# moves the next xid past the logged batch, so the end of recovery keeps
# the committed batch after it
sql("SELECT paimon_sink.inject_fault('backend_after_handoff', 'pause')");
my $older = background_sql($node,
	"BEGIN; SELECT 'xid ' || txid_current(); SELECT pg_sleep(3) IS NULL; INSERT INTO s SELECT g, 'older xid, committed later' FROM generate_series(7001, 7010) g; COMMIT;");
ok($node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE 'BEGIN; SELECT ''xid '' || txid_current(); SELECT pg_sleep(3)%' AND backend_xid IS NOT NULL"),
	'a transaction with the older xid runs');
my $younger = background_sql($node,
	"BEGIN; SELECT txid_current(); INSERT INTO s SELECT g, 'dead: logged, never committed' FROM generate_series(8001, 8010) g; COMMIT;");
ok($node->poll_query_until('postgres',
		"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'backend_after_handoff'"),
	'the younger transaction is acknowledged and holds before its commit record');
my $older_done = eval { $older->{harness}->finish; };
my ($older_xid) = $older->{out} =~ /^xid (\d+)$/m;
ok($older_done && defined $older_xid, 'the older transaction commits after it')
  or diag($older->{out} . $older->{err});
$committed{$_} = 1 for 7001 .. 7010;
my $younger_pid = sql("SELECT paused_pid FROM paimon_sink.faults WHERE point = 'backend_after_handoff'");
my $younger_xid = sql("SELECT backend_xid FROM pg_stat_activity WHERE pid = $younger_pid");
ok($older_xid < $younger_xid, "the committed batch has the older xid ($older_xid < $younger_xid)");
$node->stop('immediate');
stop_load($younger);
$node->start;
ok(writers_ready($node, 'postgres'), 'the cluster is back');
check_exact('a logged dead batch before a committed one');

done_testing();
