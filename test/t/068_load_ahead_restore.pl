# Loading ahead (issue 32, item 2) and point-in-time restore: a base
# backup taken while a loader holds a streamed transaction's rows in its
# open transaction, restored with the WAL archive (a) to a restore point
# made while the loader waits for its checkpoint, (b) to one made after the
# loader prepared the checkpoint and before its COMMIT PREPARED, and (c) to
# the archive's end.  The loader's open transaction never reaches the
# archive as committed, so (a) holds none of its rows and the restored
# node's checkpoint() loads them the usual way; (b) holds the prepared
# checkpoint, which the restored node's committer finishes; (c) holds it
# committed.  Each restored target equals its own ledger (the same ids,
# written in the same transactions into a plain table).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(background_sql fault_paused finish_background ledger_diff ledger_setup nothing_in_doubt
  scenario_rows stage_scenario waiting_loaders writers_ready);

my $exact = 'missing 0, duplicated 0, phantom 0';
my $rows = 20000;    # streamed: far past handoff_buffer_size

my $primary = PostgreSQL::Test::Cluster->new('ahead_primary');
$primary->init(allows_streaming => 1, has_archiving => 1);
$primary->append_conf('postgresql.conf',
	"paimon_sink.handoff_buffer_size = '64kB'\nmax_connections = 30\nshared_buffers = 16MB");
$primary->start;
ledger_setup($primary);
ok(writers_ready($primary, 'postgres'), 'writers serve');

$primary->backup('base');

# (a) the restore point while the loader holds scenario 1's rows loaded ahead
stage_scenario($primary, 1, $rows);
ok(waiting_loaders($primary), 'waiting: a loader loaded scenario 1 ahead');
is(scenario_rows($primary, 1), '0', 'waiting: none of its rows is visible');
$primary->safe_psql('postgres', "SELECT pg_create_restore_point('loaded_ahead')");
is($primary->safe_psql('postgres', "SELECT sum(row_count) FROM paimon_sink.checkpoint('s')"),
	$rows, 'waiting: the primary then commits it');

# (b) the restore point between the loader's PREPARE and COMMIT PREPARED
stage_scenario($primary, 2, $rows);
ok(waiting_loaders($primary), 'prepared: a loader loaded scenario 2 ahead');
$primary->safe_psql('postgres', "SELECT paimon_sink.inject_fault('loader_after_prepare', 'pause', 1)");
my $run = background_sql($primary, "SELECT * FROM paimon_sink.checkpoint('s')");
ok(fault_paused($primary, 'loader_after_prepare'), 'prepared: the loader prepared the checkpoint');
is($primary->safe_psql('postgres', "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon\\_sink:%'"),
	'1', 'prepared: it is in doubt on the primary');
$primary->safe_psql('postgres', "SELECT pg_create_restore_point('prepared')");
$primary->safe_psql('postgres', 'SELECT paimon_sink.clear_faults()');
finish_background($run);
ok(nothing_in_doubt($primary), 'prepared: the primary then commits it');
is(scenario_rows($primary, 2), $rows, 'prepared: every row of it');

# everything archived
my $segment = $primary->safe_psql('postgres', 'SELECT pg_walfile_name(pg_current_wal_lsn())');
$primary->safe_psql('postgres', 'SELECT pg_switch_wal()');
ok($primary->poll_query_until('postgres', "SELECT last_archived_wal >= '$segment' FROM pg_stat_archiver"),
	'the WAL is archived');

# restore(NAME, TARGET): a new primary from the base backup and the
# archive, recovered to the restore point TARGET (the archive's end when
# undef), its writers serving.
sub restore
{
	my ($name, $target) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init_from_backup($primary, 'base', has_restoring => 1, standby => 0);
	$node->append_conf('postgresql.conf', 'archive_mode = off');
	$node->append_conf('postgresql.conf',
		"recovery_target_name = '$target'\nrecovery_target_action = 'promote'")
	  if defined $target;
	$node->start;
	ok($node->poll_query_until('postgres', 'SELECT NOT pg_is_in_recovery()'), "$name: recovery ends");
	ok($node->log_contains(qr/recovery stopping at restore point "$target"/), "$name: it stopped at $target")
	  if defined $target;
	ok(writers_ready($node, 'postgres'), "$name: writers serve");
	return $node;
}

my $at_ahead = restore('restored_ahead', 'loaded_ahead');
ok(nothing_in_doubt($at_ahead), 'restored_ahead: nothing of ours is in doubt');
is(scenario_rows($at_ahead, 1, 'ledger'), $rows, 'restored_ahead: scenario 1 committed before the restore point');
is(scenario_rows($at_ahead, 1), '0', 'restored_ahead: none of its rows was loaded (the loader never committed)');
is($at_ahead->safe_psql('postgres', "SELECT sum(row_count) FROM paimon_sink.checkpoint('s')"),
	$rows, 'restored_ahead: its checkpoint() commits scenario 1');
is((ledger_diff($at_ahead))[0], $exact, 'restored_ahead: the target equals the ledger');
$at_ahead->stop;

my $at_prepared = restore('restored_prepared', 'prepared');
ok(nothing_in_doubt($at_prepared), 'restored_prepared: the committer finished the prepared checkpoint');
is(scenario_rows($at_prepared, 2), $rows, 'restored_prepared: every row of scenario 2 is there');
is($at_prepared->safe_psql('postgres', "SELECT count(*) FROM paimon_sink.checkpoint('s') WHERE newly_committed"),
	'0', 'restored_prepared: a checkpoint() commits nothing new');
is((ledger_diff($at_prepared))[0], $exact, 'restored_prepared: the target equals the ledger');
$at_prepared->stop;

my $at_end = restore('restored_end', undef);
ok(nothing_in_doubt($at_end), 'restored_end: nothing of ours is in doubt');
is((ledger_diff($at_end))[0], $exact, 'restored_end: the target equals the ledger');
is(scenario_rows($at_end, 1) + scenario_rows($at_end, 2), 2 * $rows, 'restored_end: both scenarios are there');
$at_end->stop;

$primary->stop;
done_testing();
