# A standby that crashes (immediate stop) while it replays a load, with a
# restartpoint behind it, replays again what it had replayed: staged-file
# redo is idempotent.  Once caught up its staged folder holds the
# primary's files (names and sizes), and promoted, after a checkpoint(),
# its target equals its ledger (the same ids, written in the same
# transactions into a plain table): nothing missing, duplicated or phantom.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(staged_files_left checkpoint_ok ledger_diff ledger_rows ledger_setup run_load
  same_staged_files staged_files start_checkpoints start_load stop_load wait_rows writers_ready);

my $exact = 'missing 0, duplicated 0, phantom 0';

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->append_conf('postgresql.conf', "max_connections = 30\nshared_buffers = 16MB");
$primary->start;
ledger_setup($primary);
ok(writers_ready($primary, 'postgres'), 'writers serve');

run_load($primary, 1, 10);
checkpoint_ok($primary, 'before the backup');
run_load($primary, 1, 5);
$primary->backup('standby');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'standby', has_streaming => 1);
$standby->start;
my $backup_redo = $standby->safe_psql('postgres', 'SELECT redo_lsn FROM pg_control_checkpoint()');

# the standby crashes while it replays sessions writing and checkpoints
# committing, after a restartpoint
my $load = start_load($primary, 1);
my $checkpoints = start_checkpoints($primary);
ok(wait_rows($primary, 1, ledger_rows($primary, 1) + 300), 'load runs');
$primary->safe_psql('postgres', 'CHECKPOINT');
$primary->wait_for_catchup($standby);
$standby->safe_psql('postgres', 'CHECKPOINT');
my $restartpoint = $standby->safe_psql('postgres', 'SELECT redo_lsn FROM pg_control_checkpoint()');
ok($standby->safe_psql('postgres', "SELECT '$restartpoint'::pg_lsn > '$backup_redo'") eq 't',
	"a restartpoint in the middle of the load ($restartpoint)");
my $seen = ledger_rows($standby, 1);
ok(wait_rows($standby, 1, $seen + 500), 'the standby replays the load');
$standby->stop('immediate');
ok(wait_rows($primary, 1, ledger_rows($primary, 1) + 300), 'load runs while the standby is down');
$standby->start;
ok($standby->log_contains(qr/redo starts at \Q$restartpoint\E/),
	'the restarted standby replays again from the restartpoint');
ok(wait_rows($standby, 1, ledger_rows($primary, 1)), 'the restarted standby catches up under load');
stop_load($checkpoints);
stop_load($load);
run_load($primary, 1, 5);
same_staged_files($primary, $standby, 'after the crash under load');

# again at a quiet moment: the whole replay since the restartpoint once more
$standby->stop('immediate');
$standby->start;
same_staged_files($primary, $standby, 'after a crash at a quiet moment');

# the primary dies with rows staged; the standby takes over
my $all = ledger_rows($primary, 1);
$primary->stop('immediate');
$standby->promote;
is(ledger_rows($standby, 1), $all, 'the promoted standby has every committed transaction');
ok(writers_ready($standby, 'postgres'), 'writers serve on the promoted standby');
checkpoint_ok($standby, 'promoted');
my ($diff, $rows) = ledger_diff($standby, [1]);
is($diff, $exact, "promoted: the target equals the ledger ($rows rows)");

run_load($standby, 2, 5);
checkpoint_ok($standby, 'new rows');
($diff, $rows) = ledger_diff($standby, [ 1, 2 ]);
is($diff, $exact, "with new rows, the target equals the ledger ($rows rows)");
is($standby->safe_psql('postgres',
		"SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'")
	  . ' ' . $standby->safe_psql('postgres', 'SELECT count(*) FROM paimon_sink.pending_checkpoints')
	  . ' ' . staged_files_left($standby),
	'0 0 0', 'nothing in doubt, nothing pending, no staged file left');
$standby->stop;
done_testing();
