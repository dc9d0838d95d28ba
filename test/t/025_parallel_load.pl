# A large checkpoint of an append sink loaded by the loader workers with
# paimon_sink.nonatomic_parallel_load (045 has the default, whole load), each
# share in a prepared transaction of its own, committed as one by the
# committer's decision record (issue 16, item 4): the shares are seen
# prepared under loader gids; the target equals a ledger written in the
# same transactions; a loader's unique violation reaches checkpoint() with
# its SQLSTATE and constraint, nothing applied, and a later checkpoint
# commits once the target is fixed; two shares that block each other fall
# back to the committer's own load; a loader that fails, exits or is
# killed, and a crash (immediate stop) at each moment of the parallel
# commit, leave the checkpoint all or nothing, then committed exactly once,
# nothing of ours in doubt; a standby promoted after the decision commits
# the shares.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(background_sql fault_paused finish_background ledger_diff ledger_setup nothing_in_doubt
  scenario_rows stage_scenario try_sql writers_ready);

my $exact = 'missing 0, duplicated 0, phantom 0';
my $rows = 20000;    # each checkpoint; 100-byte notes: many 64 kB batches per file

my $node = PostgreSQL::Test::Cluster->new('loaders');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf',
	"paimon_sink.parallel_load_rows = 1000\npaimon_sink.nonatomic_parallel_load = on\n"
	  . "max_connections = 30\nshared_buffers = 16MB\n"
	  . "restart_after_crash = on");
$node->start;
ledger_setup($node);
ok(writers_ready($node, 'postgres'), 'writers serve');

sub sql { return $node->safe_psql('postgres', $_[0]); }

# --- the loaders commit a checkpoint: K loader gids, the log line, exact
my $log_offset = -s $node->logfile;
stage_scenario($node, 1, $rows);
sql("SELECT paimon_sink.inject_fault('loader_after_prepare', 'pause', -1)");
my $run = background_sql($node, "SELECT row_count FROM paimon_sink.checkpoint('s')");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM paimon_sink.in_doubt WHERE ours AND loader_part IS NOT NULL"),
	'both loaders prepared their shares');
is( sql(
		"SELECT string_agg(loader_part || ' ' || (gid ~ ('^paimon_sink:[0-9]+:[0-9]+:[0-9]+:[^/~]+/'
		  || loader_part || '~[0-9a-f]{16}\$')), ',' ORDER BY loader_part)
		 FROM paimon_sink.in_doubt WHERE loader_part IS NOT NULL"),
	'0 true,1 true',
	'in_doubt shows the loader gids (<checkpoint gid>/<part>~<random>) with their parts');
is(sql("SELECT count(*) FROM pg_prepared_xacts WHERE gid ~ '^paimon_sink:.*/[0-9]+~'"),
	'2', 'pg_prepared_xacts holds 2 loader gids');
is( sql("SELECT loaders || ' ' || phase || ' ' || rows_done || ' ' || rows_total
		 FROM paimon_sink.commit_progress"),
	"2 loading $rows $rows",
	'commit_progress shows the 2 loaders and their rows, summed');
is(scenario_rows($node, 1), '0', 'nothing is visible before the decision');
sql("SELECT paimon_sink.clear_faults()");
is(finish_background($run), "$rows\n", 'checkpoint() returns the snapshot of all the rows');
is((ledger_diff($node, [1]))[0], $exact, 'the target equals the ledger');
is(sql("SELECT count(*) FROM pg_prepared_xacts"), '0', 'nothing is left prepared');
like(
	substr(slurp_file($node->logfile), $log_offset),
	qr/committed snapshot \d+ of sink "s": commit user "[^"]+", identifier \d+, $rows rows, 4 files, 2 loaders/,
	'the commit\'s log line says 2 loaders');

# --- a loader's unique violation: SQLSTATE and constraint reach checkpoint()
sql(q{CREATE TABLE keyed (id bigint PRIMARY KEY, note text);
	SELECT sink_name FROM paimon_sink.create_sink('k', 'keyed');});
sql("INSERT INTO keyed VALUES ($rows, 'already there')");    # the last row: the last share's
sql("INSERT INTO k SELECT g, repeat('n', 100) FROM generate_series(1, $rows) g");
my ($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('k')");
isnt($ret, 0, 'a loader\'s unique violation fails checkpoint()');
like($err, qr/ERROR:  23505: duplicate key value violates unique constraint "keyed_pkey"/,
	'its SQLSTATE and message reach the caller');
like($err, qr/CONSTRAINT NAME:  keyed_pkey/, 'with the constraint name');
like($err, qr/TABLE NAME:  keyed/, 'and the table name');
like($err, qr/paimon_sink loader loading part 2 of 2 of checkpoint/,
	'its context names the loader\'s share');
is(sql('SELECT count(*) FROM keyed'), '1', 'nothing of the checkpoint was applied');
is(sql("SELECT count(*) FROM pg_prepared_xacts"), '0',
	'the other loader\'s prepared share was rolled back');
is(sql("SELECT count(*) FROM paimon_sink.pending_checkpoints WHERE sink_name = 'k'"),
	'1', 'the checkpoint stays prepared');
sql("DELETE FROM keyed");
is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('k')"),
	$rows, 'once the target is fixed, a later checkpoint() commits it');
is(sql('SELECT count(*) || \' \' || count(DISTINCT id) FROM keyed'),
	"$rows $rows", 'every row once');

# --- two shares inserting one key block each other: the committer loads it
sql("INSERT INTO k SELECT g, 'twice' FROM generate_series(100001, 100000 + $rows) g");
sql("INSERT INTO k VALUES (100001, 'again')");    # the last share meets the first's key
$log_offset = -s $node->logfile;
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('k')");
like($err, qr/ERROR:  23505: duplicate key value violates unique constraint "keyed_pkey"/,
	'two shares meeting on a key: the committer\'s own load raises the violation');
unlike($err, qr/paimon_sink loader loading part/, 'from the committer, not from a loader');
like(substr(slurp_file($node->logfile), $log_offset),
	qr/loads checkpoint \d+ of commit user "[^"]+" of sink \d+ itself/,
	'the log says the committer loaded it itself');
is(sql("SELECT count(*) FROM keyed WHERE id > 100000"), '0', 'nothing of it was applied');
is(sql("SELECT count(*) FROM pg_prepared_xacts"), '0', 'nothing is left prepared');
sql("SELECT paimon_sink.drop_sink('k', force => true)");

# --- a loader that fails, exits, or is killed before its PREPARE
my $scen = 1;
for my $case (['error', 'XX000', 'fault injected at loader_before_prepare'],
	['fatal', '08006', 'paimon_sink loader \d of 2 exited before it prepared its share'])
{
	my ($action, $state, $message) = @$case;
	$scen++;
	stage_scenario($node, $scen, $rows);
	sql("SELECT paimon_sink.inject_fault('loader_before_prepare', '$action', 1)");
	($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('s')");
	like($err, qr/ERROR:  $state: $message/, "a loader's $action reaches checkpoint() ($state)");
	is(scenario_rows($node, $scen), '0', "$action: nothing was applied");
	is(sql("SELECT count(*) FROM pg_prepared_xacts"), '0', "$action: no share is left prepared");
	sql("SELECT paimon_sink.clear_faults()");
	is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('s')"), $rows,
		"$action: the next checkpoint() commits it");
	is((ledger_diff($node, [$scen]))[0], $exact, "$action: the target equals the ledger");
}

# a loader killed mid-load (SIGKILL: the server crash-restarts)
$scen++;
stage_scenario($node, $scen, $rows);
sql("SELECT paimon_sink.inject_fault('loader_before_prepare', 'kill', 1)");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('s')");
isnt($ret, 0, 'a killed loader: checkpoint() fails (the server crash-restarts)');
ok(writers_ready($node, 'postgres'), 'killed loader: the writers serve again');
ok(nothing_in_doubt($node), 'killed loader: the other loader\'s share was rolled back');
is(scenario_rows($node, $scen), '0', 'killed loader: nothing was applied');
is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('s')"), $rows,
	'killed loader: the next checkpoint() commits it');
is((ledger_diff($node, [$scen]))[0], $exact, 'killed loader: the target equals the ledger');

# the committer ends while its loaders load: they stop, the next committer rolls back
$scen++;
stage_scenario($node, $scen, $rows);
sql("SELECT paimon_sink.inject_fault('loader_after_prepare', 'pause', 1)");
$run = background_sql($node, "SELECT * FROM paimon_sink.checkpoint('s')");
ok(fault_paused($node, 'loader_after_prepare'), 'committer ends: a loader prepared its share');
sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'paimon_sink committer'");
like(finish_background($run), qr/08006|stopped while serving/, 'committer ends: the request fails, its outcome unknown');
sql("SELECT paimon_sink.clear_faults()");
ok(writers_ready($node, 'postgres'), 'committer ends: a new committer serves');
ok(nothing_in_doubt($node), 'committer ends: the new committer rolled the shares back');
is(scenario_rows($node, $scen), '0', 'committer ends: nothing was applied');
is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('s')"), $rows,
	'committer ends: the next checkpoint() commits it');
is((ledger_diff($node, [$scen]))[0], $exact, 'committer ends: the target equals the ledger');

# --- a crash (immediate stop) at each moment of the parallel commit
for my $moment (['loader_before_prepare', 0], ['loader_after_prepare', 0],
	['committer_before_decision', 0], ['committer_after_decision', 1])
{
	my ($point, $decided) = @$moment;
	$scen++;
	stage_scenario($node, $scen, $rows);
	sql("SELECT paimon_sink.inject_fault('$point', 'pause', 1)");
	$run = background_sql($node, "SELECT * FROM paimon_sink.checkpoint('s')");
	ok(fault_paused($node, $point), "$point: paused there");
	$node->stop('immediate');
	finish_background($run);
	$node->start;
	ok(writers_ready($node, 'postgres'), "$point: the restarted server's writers serve");
	ok(nothing_in_doubt($node), "$point: nothing of ours is left in doubt");
	is(scenario_rows($node, $scen), $decided ? $rows : '0',
		"$point: the checkpoint is " . ($decided ? 'all there' : 'not there at all'));
	is(sql("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')"),
		$decided ? '0' : $rows, "$point: the next checkpoint() commits what is left");
	is((ledger_diff($node, [$scen]))[0], $exact, "$point: the target equals the ledger");
}

# --- a standby promoted after the decision commits the shares
$node->backup('bk');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'bk', has_streaming => 1);
$standby->start;
$scen++;
stage_scenario($node, $scen, $rows);
sql("SELECT paimon_sink.inject_fault('committer_after_decision', 'pause', 1)");
$run = background_sql($node, "SELECT * FROM paimon_sink.checkpoint('s')");
ok(fault_paused($node, 'committer_after_decision'), 'failover: the decision is committed, paused');
is(sql("SELECT count(*) FROM pg_prepared_xacts WHERE gid ~ '/[0-9]+~'"), '2',
	'failover: the two shares are still prepared');
$node->wait_for_catchup($standby, 'replay', $node->lsn('flush'));
$node->stop('immediate');
finish_background($run);
$standby->promote;
ok(writers_ready($standby, 'postgres'), 'failover: the promoted standby\'s writers serve');
ok(nothing_in_doubt($standby), 'failover: the promoted standby commits the shares');
is(scenario_rows($standby, $scen), $rows, 'failover: the checkpoint is all there');
is((ledger_diff($standby))[0], $exact, 'failover: the whole target equals the ledger');
$standby->stop;

done_testing();
