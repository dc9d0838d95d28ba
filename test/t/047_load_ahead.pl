# Loading ahead (issue 32, item 2): a transaction that streams its rows
# into an append sink has them loaded into the target while it runs, by a
# loader whose open transaction the checkpoint that takes them finishes
# and prepares under the checkpoint's own gid.  Each case stages rows into
# the sink and a ledger in the same transaction and checks the target
# against the ledger: the plain case (load_ahead_status counts the rows
# loaded before checkpoint()); a crash (immediate stop) at each moment
# (loading ahead, loaded and waiting, the checkpoint just given, before and
# after its PREPARE); a promoted standby at the loading-ahead moment and
# after the PREPARE; the streamed transaction rolled back after its rows
# were loaded ahead; the transaction itself waiting for a key the loader
# loaded from its rows; a checkpoint that does not take the transaction
# (still running) while other rows commit; load_ahead off.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(background_sql fault_paused finish_background ledger_diff ledger_setup
  load_ahead_counts nothing_in_doubt query_or_error scenario_rows scenario_sql stage_scenario waiting_loaders
  writers_ready);

my $exact = 'missing 0, duplicated 0, phantom 0';
my $rows = 20000;    # streamed: far past handoff_buffer_size

my $node = PostgreSQL::Test::Cluster->new('ahead');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf',
	"paimon_sink.handoff_buffer_size = '64kB'\n"
	  . "max_connections = 30\nshared_buffers = 16MB\n"
	  . "restart_after_crash = on");
$node->start;
ledger_setup($node);
ok(writers_ready($node, 'postgres'), 'writers serve');
is($node->safe_psql('postgres', 'SHOW paimon_sink.load_ahead'), 'on', 'loading ahead is the default');

# sql(SQL, [NODE]): query_or_error on NODE ($node).
sub sql { my ($query, $on) = @_; return query_or_error($on // $node, $query); }

# --- 1. the plain case: the rows are loaded before checkpoint() is called
my $scen = 1;
my $before = load_ahead_counts($node);
stage_scenario($node, $scen, $rows);
ok(waiting_loaders($node), 'plain: a loader loaded the transaction ahead and waits');
is(scenario_rows($node, $scen), '0', 'plain: none of its rows is visible before the checkpoint');
is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('s')"), $rows,
	'plain: checkpoint() commits all the rows');
my $after = load_ahead_counts($node);
is($after->{taken} - $before->{taken}, 1, 'plain: the checkpoint was given to the loader');
cmp_ok($after->{rows} - $before->{rows}, '>', 0, 'plain: rows were loaded before checkpoint()');
cmp_ok($after->{rows} - $before->{rows}, '<=', $rows, 'plain: no more than the transaction has');
cmp_ok($after->{bytes} - $before->{bytes}, '>', 0, 'plain: so were bytes');
note("plain: loaded before checkpoint(): " . ($after->{rows} - $before->{rows}) . " rows, "
	  . ($after->{bytes} - $before->{bytes}) . " bytes in " . ($after->{seconds} - $before->{seconds}) . " s");
is((ledger_diff($node, [$scen]))[0], $exact, 'plain: the target equals the ledger');
is(sql("SELECT count(*) FROM pg_prepared_xacts"), '0', 'plain: nothing is left prepared');
is(sql("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'paimon_sink loader'"), '0',
	'plain: the loader is gone');

# --- 2. a crash (immediate stop) at each moment of loading ahead
for my $moment (
	[ 'loader_ahead_loading', 'stage', 0 ],
	[ 'loader_ahead_waiting', 'stage', 0 ],
	[ 'loader_ahead_assigned', 'checkpoint', 0 ],
	[ 'loader_before_prepare', 'checkpoint', 0 ],
	[ 'loader_after_prepare', 'checkpoint', 1 ])
{
	my ($point, $when, $prepared) = @$moment;
	$scen++;
	sql("SELECT paimon_sink.inject_fault('$point', 'pause', 1)");
	my $run;
	if ($when eq 'stage')
	{
		stage_scenario($node, $scen, $rows);
	}
	else
	{
		stage_scenario($node, $scen, $rows);
		ok(waiting_loaders($node), "crash at $point: the loader loaded ahead");
		$run = background_sql($node, "SELECT * FROM paimon_sink.checkpoint('s')");
	}
	ok(fault_paused($node, $point), "crash at $point: paused there");
	is(scenario_rows($node, $scen), '0', "crash at $point: nothing is visible before");
	$node->stop('immediate');
	finish_background($run) if $run;
	$node->start;
	ok(writers_ready($node, 'postgres'), "crash at $point: the restarted server's writers serve");
	ok(nothing_in_doubt($node), "crash at $point: nothing of ours is left in doubt");
	if ($prepared)
	{
		is(scenario_rows($node, $scen), $rows, "crash at $point: recovery committed all of it");
		is(sql("SELECT count(*) FROM paimon_sink.checkpoint('s') WHERE newly_committed"),
			'0', "crash at $point: a retry of checkpoint() commits nothing new");
	}
	else
	{
		is(scenario_rows($node, $scen), '0', "crash at $point: nothing was applied");
		is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('s')"),
			$rows, "crash at $point: the next checkpoint() commits it");
	}
	is((ledger_diff($node, [$scen]))[0], $exact, "crash at $point: the target equals the ledger");
}

# --- 3. the streamed transaction rolls back after rows were loaded ahead
$scen++;
$before = load_ahead_counts($node);
sql("SELECT paimon_sink.inject_fault('loader_ahead_loading', 'pause', 1)");
my $run = background_sql($node, 'BEGIN; ' . scenario_sql($scen, $rows) . ' SELECT pg_sleep(1); ROLLBACK;');
ok(fault_paused($node, 'loader_ahead_loading'), 'rollback: the loader loads while it runs');
sql("SELECT paimon_sink.clear_faults()");
finish_background($run);
ok( $node->poll_query_until('postgres',
		"SELECT loaders_stopped > $before->{stopped} FROM paimon_sink.load_ahead_status()"),
	'rollback: the loader stopped');
is(sql("SELECT count(*) FROM paimon_sink.checkpoint('s') WHERE row_count > 0"), '0',
	'rollback: the checkpoint has no row');
is(scenario_rows($node, $scen), '0', 'rollback: nothing of it is in the target');
is(sql("SELECT count(*) FROM ledger WHERE scen = $scen"), '0', 'rollback: nor in the ledger');
is(load_ahead_counts($node)->{taken}, $before->{taken}, 'rollback: no checkpoint was given to it');

# --- 3b. the streamed transaction itself waits for a key the loader loaded from its rows:
# the loader sees it, rolls back, and the transaction goes on
sql(q{CREATE TABLE keyed (id bigint PRIMARY KEY, note text);
	SELECT sink_name FROM paimon_sink.create_sink('k', 'keyed');});
$before = load_ahead_counts($node);
my $t0 = time;
$run = background_sql($node, qq{BEGIN;
	INSERT INTO k SELECT g, repeat('n', 100) FROM generate_series(1, $rows) g;
	SELECT pg_sleep(2);
	INSERT INTO keyed VALUES (1, 'direct');
	DELETE FROM keyed WHERE note = 'direct';
	COMMIT;});
my $out = finish_background($run);
like($out, qr/COMMIT/, 'self-blocked: the transaction commits');
cmp_ok(time - $t0, '<', 60, 'self-blocked: it did not wait for load_ahead_max_wait');
cmp_ok(load_ahead_counts($node)->{stopped}, '>', $before->{stopped}, 'self-blocked: the loader rolled back');
is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('k')"), $rows,
	'self-blocked: the checkpoint commits every row');
is(sql('SELECT count(*) || \' \' || count(DISTINCT id) FROM keyed'), "$rows $rows",
	'self-blocked: each row once');
sql("SELECT paimon_sink.drop_sink('k', force => true)");

# --- 4. a checkpoint that does not take the running transaction commits its own rows
$scen++;
my $other = $scen + 1;
$before = load_ahead_counts($node);
$run = background_sql($node, 'BEGIN; ' . scenario_sql($scen, $rows) . ' SELECT pg_sleep(3); COMMIT;');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'paimon_sink loader'"),
	'excluded: a loader loads the running transaction ahead');
stage_scenario($node, $other, 100);
is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('s')"), '100',
	'excluded: a checkpoint meanwhile commits the other session\'s rows only');
is(scenario_rows($node, $scen), '0', 'excluded: none of the running transaction\'s');
cmp_ok(load_ahead_counts($node)->{stopped}, '>', $before->{stopped}, 'excluded: the loader was stopped first');
finish_background($run);
is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('s')"), $rows,
	'excluded: the next checkpoint commits the transaction');
is((ledger_diff($node, [ $scen, $other ]))[0], $exact, 'excluded: the target equals the ledger');

# --- 5. load_ahead off: nothing is loaded ahead, nothing held
$node->safe_psql('postgres', 'ALTER SYSTEM SET paimon_sink.load_ahead = off; SELECT pg_reload_conf();');
ok($node->poll_query_until('postgres', "SELECT current_setting('paimon_sink.load_ahead') = 'off'"),
	'off: the setting is read');
sleep(1);    # the workers' reload
$scen += 2;
$before = load_ahead_counts($node);
stage_scenario($node, $scen, $rows);
is(sql("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'paimon_sink loader'"), '0',
	'off: no loader runs between checkpoints');
is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('s')"), $rows, 'off: checkpoint() commits');
is(load_ahead_counts($node)->{started}, $before->{started}, 'off: no loader was started');
is((ledger_diff($node, [$scen]))[0], $exact, 'off: the target equals the ledger');
$node->safe_psql('postgres', 'ALTER SYSTEM RESET paimon_sink.load_ahead; SELECT pg_reload_conf();');
ok($node->poll_query_until('postgres', "SELECT current_setting('paimon_sink.load_ahead') = 'on'"),
	'on again');
sleep(1);

# --- 6. a promoted standby, at the loading-ahead moment and after the PREPARE
$node->backup('bk');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'bk', has_streaming => 1);
$standby->start;
$scen++;
sql("SELECT paimon_sink.inject_fault('loader_ahead_loading', 'pause', 1)");
stage_scenario($node, $scen, $rows);
ok(fault_paused($node, 'loader_ahead_loading'), 'failover loading: the loader holds while loading ahead');
$node->wait_for_catchup($standby, 'replay', $node->lsn('insert'));
$node->stop('immediate');
$standby->promote;
ok(writers_ready($standby, 'postgres'), 'failover loading: the promoted standby\'s writers serve');
ok(nothing_in_doubt($standby), 'failover loading: nothing of ours is in doubt');
is(scenario_rows($standby, $scen), '0', 'failover loading: nothing was applied');
is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('s')", $standby), $rows,
	'failover loading: checkpoint() on the promoted standby commits it');
is((ledger_diff($standby))[0], $exact, 'failover loading: the whole target equals the ledger');

# the promoted standby is the primary now; a new standby follows it
$standby->backup('bk2');
my $standby2 = PostgreSQL::Test::Cluster->new('standby2');
$standby2->init_from_backup($standby, 'bk2', has_streaming => 1);
$standby2->start;
$scen++;
stage_scenario($standby, $scen, $rows);
ok(waiting_loaders($standby), 'failover prepared: the loader loaded ahead');
sql("SELECT paimon_sink.inject_fault('loader_after_prepare', 'pause', 1)", $standby);
$run = background_sql($standby, "SELECT * FROM paimon_sink.checkpoint('s')");
ok(fault_paused($standby, 'loader_after_prepare'), 'failover prepared: the loader prepared the checkpoint');
$standby->wait_for_catchup($standby2, 'replay', $standby->lsn('insert'));
is(scenario_rows($standby2, $scen), '0', 'failover prepared: the standby shows none of its rows');
$standby->stop('immediate');
finish_background($run);
$standby2->promote;
ok(writers_ready($standby2, 'postgres'), 'failover prepared: the promoted standby\'s writers serve');
ok(nothing_in_doubt($standby2), 'failover prepared: nothing of ours is left in doubt');
is(scenario_rows($standby2, $scen), $rows, 'failover prepared: the promoted standby committed all of it');
is((ledger_diff($standby2))[0], $exact, 'failover prepared: the whole target equals the ledger');
$standby2->stop;

done_testing();
