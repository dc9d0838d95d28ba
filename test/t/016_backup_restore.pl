# Backup and restore: a base backup taken while sessions write and
# checkpoints commit, restored with the WAL archive (a) to its end and (b)
# to a restore point made in the middle of the load.  Staged rows are
# WAL-logged, so each restored node holds every row whose transaction
# committed before its recovery ended: after a checkpoint() its target
# equals its own ledger (the same ids, written in the same transactions
# into a plain table), nothing missing, duplicated or phantom; and it takes
# new rows, whose transaction ids the failed history may have used before.
# A backup whose checkpoint comes while a writer is between a change to a
# staged file and its WAL record (fault point writer_before_wal) restores
# exactly too.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PaimonSinkTest qw(staged_files_left background_sql checkpoint_ok ledger_diff ledger_rows ledger_setup run_load
  staged_files start_checkpoints start_load stop_load wait_rows writers_ready);

my $exact = 'missing 0, duplicated 0, phantom 0';

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1, has_archiving => 1);
$primary->append_conf('postgresql.conf', "max_connections = 30\nshared_buffers = 16MB");
$primary->start;
ledger_setup($primary);
ok(writers_ready($primary, 'postgres'), 'writers serve');

# committed rows and staged ones before the backup
run_load($primary, 1, 10);
checkpoint_ok($primary, 'before the backup');
run_load($primary, 1, 5);

# the backup and the restore point while sessions write and checkpoints commit
my $snapshots_before =
  $primary->safe_psql('postgres', 'SELECT count(*) FROM paimon_sink.snapshots');
my $load = start_load($primary, 1);
my $checkpoints = start_checkpoints($primary);
ok(wait_rows($primary, 1, ledger_rows($primary, 1) + 300), 'load runs');
my $at_backup = ledger_rows($primary, 1);
$primary->backup('during_load');
ok(wait_rows($primary, 1, ledger_rows($primary, 1) + 500), 'load runs after the backup');
$primary->safe_psql('postgres', "SELECT pg_create_restore_point('middle')");
my $at_point = ledger_rows($primary, 1);
ok(wait_rows($primary, 1, $at_point + 500), 'load runs after the restore point');
# the load may outrun the checkpoints (3 a second): wait for two to commit under it
ok($primary->poll_query_until('postgres',
		"SELECT count(*) > $snapshots_before + 1 FROM paimon_sink.snapshots"),
	'checkpoints committed during the load');
stop_load($checkpoints);
stop_load($load);

# rows staged at the end, and everything archived
run_load($primary, 1, 5);
my $all = ledger_rows($primary, 1);
my $segment = $primary->safe_psql('postgres', 'SELECT pg_walfile_name(pg_current_wal_lsn())');
$primary->safe_psql('postgres', 'SELECT pg_switch_wal()');
ok($primary->poll_query_until('postgres',
		"SELECT last_archived_wal >= '$segment' FROM pg_stat_archiver"),
	'the WAL is archived');

# restored to the end of the archive: a new primary
my $end = PostgreSQL::Test::Cluster->new('restored_end');
$end->init_from_backup($primary, 'during_load', has_restoring => 1, standby => 0);
$end->append_conf('postgresql.conf', 'archive_mode = off');
$end->start;
ok($end->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
	'end of the archive: recovery ends');
is($end->safe_psql('postgres', 'SHOW shared_preload_libraries'), 'paimon_sink',
	'end of the archive: the library is preloaded');
is(ledger_rows($end, 1), $all, 'end of the archive: every committed transaction is there');
ok(writers_ready($end, 'postgres'), 'end of the archive: writers serve');
checkpoint_ok($end, 'end of the archive');
my ($diff, $rows) = ledger_diff($end, [1]);
is($diff, $exact, "end of the archive: the target equals the ledger ($rows rows)");

# restored to the restore point: a new primary whose history left off there
my $middle = PostgreSQL::Test::Cluster->new('restored_middle');
$middle->init_from_backup($primary, 'during_load', has_restoring => 1, standby => 0);
$middle->append_conf('postgresql.conf', "archive_mode = off
recovery_target_name = 'middle'
recovery_target_action = 'promote'");
$middle->start;
ok($middle->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
	'restore point: recovery ends');
ok($middle->log_contains(qr/recovery stopping at restore point "middle"/),
	'restore point: recovery stopped there');
my $restored = ledger_rows($middle, 1);
ok($restored > $at_backup && $restored <= $at_point,
	"restore point: the ledger is the one of the middle of the load ($at_backup < $restored <= $at_point)");
ok(writers_ready($middle, 'postgres'), 'restore point: writers serve');
checkpoint_ok($middle, 'restore point');
($diff, $rows) = ledger_diff($middle, [1]);
is($diff, $exact, "restore point: the target equals the ledger ($rows rows)");

# each restored node takes new rows once: more transactions than the
# primary ran after the restore point, so that their ids were the primary's
my $after_point = int(($all - $at_point) / 30) + 20;
for my $node ($end, $middle)
{
	my $name = $node->name;
	run_load($node, 2, $after_point);
	checkpoint_ok($node, "$name, new rows");
	($diff, $rows) = ledger_diff($node, [ 1, 2 ]);
	is($diff, $exact, "$name: with new rows, the target equals the ledger ($rows rows)");
	is($node->safe_psql('postgres',
			"SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'")
		  . ' ' . $node->safe_psql('postgres', 'SELECT count(*) FROM paimon_sink.pending_checkpoints')
		  . ' ' . staged_files_left($node),
		'0 0 0', "$name: nothing in doubt, nothing pending, no staged file left");
	$node->stop;
}

# a base backup whose checkpoint comes while a writer has made a change
# (a new file; a batch in a file it had) and not yet logged it: the change
# is in the copy or in the redo, whichever side of the checkpoint its
# record falls on
my %paused = (file => 3, batch => 4);
for my $change (qw(file batch))
{
	my $scen = $paused{$change};
	if ($change eq 'file')
	{
		checkpoint_ok($primary, "paused $change");    # the next batch opens new files
	}
	else
	{
		run_load($primary, $scen, 2);                  # files open
		# let the writers' sync windows close: a writer paused inside one
		# would hold the backup's checkpoint until it is released
		usleep(3 * 100_000);
	}
	$primary->safe_psql('postgres', "SELECT paimon_sink.inject_fault('writer_before_wal', 'pause')");
	my $insert = background_sql($primary, "BEGIN;
		INSERT INTO s SELECT $scen * 1000000000::bigint + g, $scen, 'paused' FROM generate_series(1, 10) g;
		INSERT INTO ledger SELECT $scen * 1000000000::bigint + g, $scen FROM generate_series(1, 10) g;
		COMMIT;");
	ok($primary->poll_query_until('postgres',
			"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'writer_before_wal'"),
		"paused $change: a writer stops between the change and its record");
	$primary->backup("paused_$change");
	$primary->safe_psql('postgres', "SELECT paimon_sink.release_fault('writer_before_wal')");
	stop_load($insert);
	is($insert->{err}, '', "paused $change: the transaction commits");
	run_load($primary, $scen, 3);                      # later batches in the same files
}
$primary->safe_psql('postgres', 'SELECT paimon_sink.clear_faults()');
$segment = $primary->safe_psql('postgres', 'SELECT pg_walfile_name(pg_current_wal_lsn())');
$primary->safe_psql('postgres', 'SELECT pg_switch_wal()');
ok($primary->poll_query_until('postgres',
		"SELECT last_archived_wal >= '$segment' FROM pg_stat_archiver"),
	'the WAL is archived again');
for my $change (qw(file batch))
{
	my $node = PostgreSQL::Test::Cluster->new("restored_paused_$change");
	$node->init_from_backup($primary, "paused_$change", has_restoring => 1, standby => 0);
	$node->append_conf('postgresql.conf', 'archive_mode = off');
	$node->start;
	ok($node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'),
		"paused $change: recovery ends");
	ok(writers_ready($node, 'postgres'), "paused $change: writers serve");
	checkpoint_ok($node, "paused $change, restored");
	($diff, $rows) = ledger_diff($node, [ 3, 4 ]);
	is($diff, $exact, "paused $change: the restored target equals the ledger ($rows rows)");
	$node->stop;
}

# the primary itself, for comparison
checkpoint_ok($primary, 'primary');
($diff, $rows) = ledger_diff($primary, [ 1, 3, 4 ]);
is($diff, $exact, "primary: the target equals the ledger ($rows rows)");
$primary->stop;
done_testing();
