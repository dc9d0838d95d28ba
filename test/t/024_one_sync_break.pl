# The one-sync path under the failures around it: a writer stopped or
# ended alone inside its sync window, a standby promoted after its primary
# died with a window open, a base backup taken while a window is open,
# recovery to a target between a transaction's batches and its commit, and
# an xid epoch moved by pg_resetwal.  Each ends with every committed row
# exactly once and no row of a transaction that did not commit.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(writers_ready try_sql background_sql stop_load sink_setup book_insert fault_paused
  exactly_once windows_closed);

my %committed;    # node name -> { id => 1 }

sub new_node
{
	my ($name, %params) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init(%params);
	$node->append_conf('postgresql.conf',
		"restart_after_crash = on\npaimon_sink.group_fsync_delay = '100ms'");
	$node->start;
	ok(sink_setup($node), "$name: writers serve");
	return $node;
}

sub check_exact
{
	my ($node, $book, $label) = @_;
	exactly_once($node, $book, $label);
	is($node->safe_psql('postgres', "SELECT count(*) FROM target WHERE note LIKE 'dead%'"),
		'0', "$label: no row of a transaction that did not commit");
	return;
}

# a CHECKPOINT in the background that must complete within $secs
sub checkpoint_completes
{
	my ($node, $secs, $label) = @_;
	my ($ret, $out, $err) = try_sql($node, "SET statement_timeout = '${secs}s'; CHECKPOINT;");
	is($ret, 0, $label) or diag($err);
	return;
}

# --- a writer ended alone (no crash restart) inside its window: with
# hand-offs logged and not acknowledged, and after acknowledging committed
# ones; the checkpoints that follow do not wait for it, and a later crash
# keeps exactly the committed rows
{
	my $node = new_node('alone');
	my %book;
	book_insert($node, \%book, 1, 10, 'first');
	$node->safe_psql('postgres', "SELECT paimon_sink.inject_fault('writer_after_receive', 'pause')");
	my $dead = background_sql($node,
		"INSERT INTO s SELECT g, 'dead: its writer ended' FROM generate_series(101, 110) g");
	ok(fault_paused($node, 'writer_after_receive'), 'alone: a writer holds logged, unacknowledged hand-offs');
	my $pid = $node->safe_psql('postgres',
		"SELECT paused_pid FROM paimon_sink.faults WHERE point = 'writer_after_receive'");
	$node->safe_psql('postgres', "SELECT pg_terminate_backend($pid)");
	eval { $dead->{harness}->finish; };
	like($dead->{err}, qr/the sink writer stopped/, 'alone: the transaction whose writer ended fails');
	ok(writers_ready($node, 'postgres'), 'alone: the writer is back');
	checkpoint_completes($node, 20, 'alone: a CHECKPOINT after the writer ended completes');
	book_insert($node, \%book, 11, 20, 'after the writer ended');

	ok(windows_closed($node), 'the earlier sync windows closed');
	$node->safe_psql('postgres',
		"SELECT paimon_sink.inject_fault('writer_before_window_sync', 'fatal')");
	book_insert($node, \%book, 21, 30, 'acknowledged, then the writer ends');
	ok($node->poll_query_until('postgres',
			"SELECT hits > 0 FROM paimon_sink.faults WHERE point = 'writer_before_window_sync'"),
		'alone: the writer ended before its window fsync');
	ok(writers_ready($node, 'postgres'), 'alone: the writer is back again');
	checkpoint_completes($node, 20, 'alone: a CHECKPOINT after that completes');
	book_insert($node, \%book, 31, 40, 'after the second end');
	unlike(slurp_file($node->logfile), qr/terminated; reinitializing|all server processes terminated/,
		'alone: the writers ended without a crash restart');
	$node->stop('immediate');
	$node->start;
	ok(writers_ready($node, 'postgres'), 'alone: the cluster is back after a crash');
	book_insert($node, \%book, 41, 50, 'after the crash');
	check_exact($node, \%book, 'writer ended alone');
	$node->stop;
}

# --- a writer stopped (SIGSTOP) inside its window: a CHECKPOINT waits for
# it; once it goes on (SIGCONT) the CHECKPOINT completes
{
	my $node = new_node('stopped');
	my %book;
	book_insert($node, \%book, 1, 10, 'first');
	ok(windows_closed($node), 'the earlier sync windows closed');
	$node->safe_psql('postgres',
		"SELECT paimon_sink.inject_fault('writer_before_window_sync', 'pause')");
	book_insert($node, \%book, 11, 20, 'committed, window open');
	ok(fault_paused($node, 'writer_before_window_sync'), 'stopped: a writer holds its window open');
	my $pid = $node->safe_psql('postgres',
		"SELECT paused_pid FROM paimon_sink.faults WHERE point = 'writer_before_window_sync'");
	kill 'STOP', $pid;
	$node->safe_psql('postgres', "SELECT paimon_sink.release_fault('writer_before_window_sync')");
	my $checkpoint = background_sql($node, 'CHECKPOINT');
	sleep 3;
	ok($checkpoint->{harness}->pumpable, 'stopped: the CHECKPOINT waits for the stopped writer');
	my $activity = $node->safe_psql('postgres',
		"SELECT state || ': ' || query FROM pg_stat_activity WHERE pid = $pid");
	like($activity, qr/^active: sync window open/, 'stopped: pg_stat_activity shows the writer holds a sync window');
	kill 'CONT', $pid;
	my $finished = eval { $checkpoint->{harness}->finish; };
	ok($finished, 'stopped: the CHECKPOINT completes once the writer goes on');
	ok($node->poll_query_until('postgres',
			"SELECT state = 'idle' AND query NOT LIKE 'sync window%' FROM pg_stat_activity WHERE pid = $pid"),
		'stopped: the writer shows idle once its window closed');
	check_exact($node, \%book, 'writer stopped in its window');

	# a fast and a smart shutdown with a writer paused inside its window:
	# the pause ends on the shutdown's SIGTERM, the writer fsyncs as it
	# exits, and the shutdown checkpoint does not wait for it
	for my $mode ('fast', 'smart')
	{
		ok(windows_closed($node), 'the earlier sync windows closed');
		$node->safe_psql('postgres',
			"SELECT paimon_sink.inject_fault('writer_before_window_sync', 'pause')");
		book_insert($node, \%book, $mode eq 'fast' ? 21 : 31, $mode eq 'fast' ? 30 : 40,
			"committed before a $mode shutdown");
		ok(fault_paused($node, 'writer_before_window_sync'), "stopped: a writer holds its window ($mode)");
		$node->stop($mode);
		pass("stopped: a $mode shutdown completes");
		$node->start;
		ok(writers_ready($node, 'postgres'), "stopped: the cluster is back after a $mode shutdown");
		check_exact($node, \%book, "$mode shutdown with a window open");
	}
	$node->stop('fast');
}

# --- a standby, synchronous and asynchronous, promoted after its primary
# died with a window open: committed rows not yet fsynced by the writer,
# and an acknowledged transaction with no commit record
for my $sync (1, 0)
{
	my $tag = $sync ? 'sync' : 'async';
	my $primary = new_node("primary_$tag", allows_streaming => 1);
	my %book;
	book_insert($primary, \%book, 1, 10, 'first');
	$primary->backup("bk_$tag");
	my $standby = PostgreSQL::Test::Cluster->new("standby_$tag");
	$standby->init_from_backup($primary, "bk_$tag", has_streaming => 1);
	$standby->start;
	if ($sync)
	{
		$primary->append_conf('postgresql.conf', "synchronous_standby_names = '*'");
		$primary->reload;
	}
	ok($primary->poll_query_until('postgres',
			"SELECT string_agg(sync_state, ',') FROM pg_stat_replication", $tag),
		"$tag: the standby streams");
	book_insert($primary, \%book, 11, 20, 'before the window');
	$primary->safe_psql('postgres', "SELECT paimon_sink.inject_fault('backend_after_handoff', 'pause')");
	my $dead = background_sql($primary,
		"INSERT INTO s SELECT g, 'dead: acknowledged, no commit' FROM generate_series(101, 110) g");
	ok(fault_paused($primary, 'backend_after_handoff'), "$tag: a transaction is acknowledged, not committed");
	ok(windows_closed($primary), 'the earlier sync windows closed');
	$primary->safe_psql('postgres',
		"SELECT paimon_sink.inject_fault('writer_before_window_sync', 'pause')");
	book_insert($primary, \%book, 21, 30, 'committed, window open');
	ok(fault_paused($primary, 'writer_before_window_sync'), "$tag: the primary's writer holds its window");
	$primary->wait_for_catchup($standby, 'write', $primary->lsn('insert'))
	  if !$sync;
	$primary->stop('immediate');
	stop_load($dead);
	$standby->promote;
	ok(writers_ready($standby, 'postgres'), "$tag: the promoted standby's writers serve");
	book_insert($standby, \%book, 31, 40, 'on the promoted node');
	check_exact($standby, \%book, "$tag standby promoted after a crash mid-window");
	$standby->stop('immediate');
	$standby->start;
	ok(writers_ready($standby, 'postgres'), "$tag: the promoted node is back after a crash");
	book_insert($standby, \%book, 41, 50, 'after its crash');
	check_exact($standby, \%book, "$tag promoted node after a crash");
	$standby->stop;
}

# --- a base backup whose checkpoint meets an open window, and recovery to
# a target that falls between a transaction's batches and its commit
{
	my $node = new_node('pitr', has_archiving => 1, allows_streaming => 1);
	my %book;
	book_insert($node, \%book, 1, 10, 'before the backup');
	ok(windows_closed($node), 'the earlier sync windows closed');
	$node->safe_psql('postgres',
		"SELECT paimon_sink.inject_fault('writer_before_window_sync', 'pause')");
	book_insert($node, \%book, 11, 20, 'committed, window open at the backup');
	ok(fault_paused($node, 'writer_before_window_sync'), 'pitr: a writer holds its window');
	my $release = background_sql($node,
		"SELECT pg_sleep(2); SELECT paimon_sink.release_fault('writer_before_window_sync')");
	$node->backup('bk');
	stop_load($release);
	pass('pitr: the base backup completes once the window closed');
	book_insert($node, \%book, 21, 30, 'after the backup');
	$node->safe_psql('postgres', "SELECT paimon_sink.inject_fault('backend_after_handoff', 'pause')");
	my $late = background_sql($node,
		"INSERT INTO s SELECT g, 'dead: committed after the target' FROM generate_series(101, 110) g");
	ok(fault_paused($node, 'backend_after_handoff'), 'pitr: a transaction is acknowledged before the target');
	$node->safe_psql('postgres', "SELECT pg_create_restore_point('target')");
	$node->safe_psql('postgres', "SELECT paimon_sink.release_fault('backend_after_handoff')");
	stop_load($late);
	is($late->{err}, '', 'pitr: it commits after the target');
	$node->safe_psql('postgres',
		"INSERT INTO s SELECT g, 'dead: after the target' FROM generate_series(201, 210) g");
	$node->safe_psql('postgres', 'SELECT pg_switch_wal()');
	$node->poll_query_until('postgres',
		"SELECT last_archived_wal IS NOT NULL AND last_failed_wal IS NULL FROM pg_stat_archiver");
	sleep 1;
	$node->stop('immediate');

	my $restored = PostgreSQL::Test::Cluster->new('restored');
	$restored->init_from_backup($node, 'bk', has_restoring => 1);
	$restored->append_conf('postgresql.conf',
		"recovery_target_name = 'target'\nrecovery_target_action = 'promote'");
	$restored->start;
	ok($restored->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
		'pitr: the restored node reached its target');
	ok(writers_ready($restored, 'postgres'), 'pitr: its writers serve');
	book_insert($restored, \%book, 31, 40, 'on the restored node');
	check_exact($restored, \%book, 'recovery to a target');
	$restored->stop;
}

# --- an xid epoch moved by pg_resetwal (everything of the earlier epoch
# committed first: a staged batch of it is refused at the next barrier as
# outside the range still known), then batches of the new epoch through a
# crash: their redo advances the next xid within the new epoch
{
	my $node = new_node('epoch');
	my %book;
	book_insert($node, \%book, 1, 10, 'epoch 0, checkpointed');
	check_exact($node, \%book, 'epoch: before the reset');
	$node->stop;
	command_ok([ 'pg_resetwal', '-e', '3', $node->data_dir ], 'epoch: pg_resetwal -e 3');
	$node->start;
	ok(writers_ready($node, 'postgres'), 'epoch: writers serve after the reset');
	like($node->safe_psql('postgres', 'SELECT txid_current() >> 32'), qr/^3$/, 'epoch: epoch 3');
	book_insert($node, \%book, 21, 30, 'epoch 3, staged');
	my $before = $node->safe_psql('postgres', 'SELECT txid_current()');
	$node->stop('immediate');
	$node->start;
	ok(writers_ready($node, 'postgres'), 'epoch: back after a crash');
	my $after = $node->safe_psql('postgres', 'SELECT txid_current()');
	ok($after >= $before && $after < $before + 1000,
		"epoch: redo kept the next xid in the new epoch ($before, then $after)");
	book_insert($node, \%book, 31, 40, 'epoch 3, after the crash');
	check_exact($node, \%book, 'epoch moved by pg_resetwal');
	$node->stop;
}

done_testing();
