# A large checkpoint of an append sink loaded whole by one loader worker,
# the default (issue 32): the loader loads every file, records the
# snapshot and raises the mark, and prepares under the checkpoint's own
# gid, which the committer then commits (025 has the nonatomic split).
# Each case stages rows into the sink and a ledger in the same
# transactions and checks the target against the ledger: the plain commit
# (one prepared transaction, the checkpoint's own gid, 1 loader); a
# loader's unique violation reaching checkpoint(); a loader that fails,
# exits or is killed before its PREPARE, or exits after it; the committer
# ending, or another sink's request failing, while the prepared loader
# waits; a crash at each moment (loading, prepared by the
# loader, the committer about to COMMIT PREPARED), a prepared gid being
# committed by recovery with no further checkpoint(); a reader that only
# ever sees whole checkpoints; a standby that shows nothing of the
# prepared checkpoint and, promoted, commits it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(background_sql fault_paused finish_background ledger_diff ledger_setup nothing_in_doubt
  query_or_error scenario_rows stage_scenario try_sql writers_ready);

my $exact = 'missing 0, duplicated 0, phantom 0';
my $rows = 20000;    # each checkpoint: at least parallel_load_rows, so the loader loads it

my $node = PostgreSQL::Test::Cluster->new('whole');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf',
	"paimon_sink.parallel_load_rows = 1000\n"
	  . "max_connections = 30\nshared_buffers = 16MB\n"
	  . "restart_after_crash = on");
$node->start;
ledger_setup($node);
ok(writers_ready($node, 'postgres'), 'writers serve');
is($node->safe_psql('postgres', 'SHOW paimon_sink.nonatomic_parallel_load'),
	'off', 'the whole load is the default');

# sql(SQL): query_or_error on $node.
sub sql { return query_or_error($node, $_[0]); }

# whole_gid(NODE): the one prepared transaction of ours, when it is a
# whole checkpoint's (loader_part NULL, ours, named "paimon_sink:D:S:N:U~R"):
# "<gid> <checkpoint id>"; else what in_doubt holds, for the message.
sub whole_gid
{
	my ($on) = @_;
	return $on->safe_psql('postgres', q{
		SELECT CASE WHEN count(*) = 1 AND bool_and(ours) AND bool_and(loader_part IS NULL)
			AND bool_and(gid ~ '^paimon_sink:[0-9]+:[0-9]+:[0-9]+:[^/~]+~[0-9a-f]{16}$')
			THEN min(gid) || ' ' || min(checkpoint_id)
			ELSE 'in_doubt: ' || coalesce(string_agg(gid || ' part ' || coalesce(loader_part::text, '-')
				|| ' ours ' || ours, '; '), 'empty') END
		FROM paimon_sink.in_doubt});
}

# whole_parts(WHOLE): (gid, checkpoint id) from what whole_gid returned;
# ('none', 0) when it found no whole checkpoint's gid.
sub whole_parts
{
	my ($whole) = @_;
	return $whole =~ /^(paimon_sink:\S+) (\d+)$/ ? ($1, $2) : ('none', 0);
}

# snapshot_of(NODE, CHECKPOINT): "<snapshots> <row_count> <file_count>"
# recorded for the sink s's checkpoint CHECKPOINT of its own commit user.
sub snapshot_of
{
	my ($on, $checkpoint) = @_;
	return $on->safe_psql('postgres', qq{
		SELECT count(*) || ' ' || coalesce(sum(row_count), 0) || ' ' || coalesce(sum(file_count), 0)
		FROM paimon_sink.snapshots n JOIN paimon_sink.sinks k USING (sink_name)
		WHERE n.sink_name = 's' AND n.commit_user = k.default_commit_user
		  AND n.commit_identifier = $checkpoint});
}

# --- 1. the plain case: one loader prepares the checkpoint under its own gid
my $scen = 1;
my $log_offset = -s $node->logfile;
stage_scenario($node, $scen, $rows);
my $snapshots = sql("SELECT count(*) FROM paimon_sink.snapshots");
sql("SELECT paimon_sink.inject_fault('loader_after_prepare', 'pause', -1)");
my $run = background_sql($node, "SELECT row_count FROM paimon_sink.checkpoint('s')");
ok(fault_paused($node, 'loader_after_prepare'), 'plain: the loader prepared and holds');
# its committables are the prepared transaction's to mark committed
my $files = sql("SELECT file_count FROM paimon_sink.pending_checkpoints WHERE sink_name = 's'");
is(sql("SELECT count(*) FROM pg_prepared_xacts"), '1', 'plain: exactly one prepared transaction');
my $whole = whole_gid($node);
like($whole, qr/^paimon_sink:\S+ \d+$/,
	'plain: it is the checkpoint\'s own gid (no loader part), ours');
my ($gid, $checkpoint) = whole_parts($whole);
is( sql("SELECT loaders || ' ' || phase || ' ' || rows_done || ' ' || rows_total || ' '
		  || checkpoint_id FROM paimon_sink.commit_progress"),
	"1 loading $rows $rows $checkpoint",
	'plain: commit_progress shows 1 loader with all the rows, of that checkpoint');
is(scenario_rows($node, $scen), '0', 'plain: no row is visible while it is prepared');
is(sql("SELECT count(*) FROM paimon_sink.snapshots"),
	$snapshots, 'plain: nor its snapshot (it is in the prepared transaction)');
sql("SELECT paimon_sink.clear_faults()");
is(finish_background($run), "$rows\n", 'plain: checkpoint() returns the snapshot of all the rows');
is((ledger_diff($node, [$scen]))[0], $exact, 'plain: the target equals the ledger');
is(sql("SELECT count(*) FROM pg_prepared_xacts"), '0', 'plain: nothing is left prepared');
is(snapshot_of($node, $checkpoint), "1 $rows $files", 'plain: one snapshot, its row and file counts');
is(sql("SELECT last_committed_checkpoint FROM paimon_sink.sinks WHERE sink_name = 's'"),
	$checkpoint, 'plain: the commit user\'s mark is raised to it');
like(
	substr(slurp_file($node->logfile), $log_offset),
	qr/committed snapshot \d+ of sink "s": commit user "[^"]+", identifier $checkpoint, $rows rows, $files files, 1 loaders/,
	'plain: the commit\'s log line says 1 loader');

# --- 2. a loader's unique violation: SQLSTATE and constraint reach checkpoint()
sql(q{CREATE TABLE keyed (id bigint PRIMARY KEY, note text);
	SELECT sink_name FROM paimon_sink.create_sink('k', 'keyed');});
sql("INSERT INTO keyed VALUES ($rows, 'already there')");
sql("INSERT INTO k SELECT g, repeat('n', 100) FROM generate_series(1, $rows) g");
my ($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('k')");
isnt($ret, 0, 'violation: checkpoint() fails');
like($err, qr/ERROR:  23505: duplicate key value violates unique constraint "keyed_pkey"/,
	'violation: its SQLSTATE and message reach the caller');
like($err, qr/CONSTRAINT NAME:  keyed_pkey/, 'violation: with the constraint name');
like($err, qr/paimon_sink loader loading checkpoint \d+ of commit user/,
	'violation: its context names the whole checkpoint\'s loader');
is(sql('SELECT count(*) FROM keyed'), '1', 'violation: nothing of the checkpoint was applied');
is(sql("SELECT count(*) FROM pg_prepared_xacts"), '0', 'violation: nothing is left prepared');
is(sql("SELECT count(*) FROM paimon_sink.pending_checkpoints WHERE sink_name = 'k'"),
	'1', 'violation: the checkpoint stays pending');
sql("DELETE FROM keyed");
is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('k')"),
	$rows, 'violation: once the target is fixed, a later checkpoint() commits it');
is(sql('SELECT count(*) || \' \' || count(DISTINCT id) FROM keyed'),
	"$rows $rows", 'violation: every row once');
sql("SELECT paimon_sink.drop_sink('k', force => true)");

# --- 3. a loader that fails or exits before its PREPARE
for my $case (['error', 'XX000', 'fault injected at loader_before_prepare'],
	['fatal', '08006', 'paimon_sink loader \d of 1 exited before it prepared its share'])
{
	my ($action, $state, $message) = @$case;
	$scen++;
	stage_scenario($node, $scen, $rows);
	sql("SELECT paimon_sink.inject_fault('loader_before_prepare', '$action', 1)");
	($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('s')");
	like($err, qr/ERROR:  $state: $message/, "loader $action: it reaches checkpoint() ($state)");
	is(scenario_rows($node, $scen), '0', "loader $action: nothing was applied");
	is(sql("SELECT count(*) FROM pg_prepared_xacts"), '0', "loader $action: nothing is left prepared");
	sql("SELECT paimon_sink.clear_faults()");
	is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('s')"),
		$rows, "loader $action: the next checkpoint() commits it");
	is((ledger_diff($node, [$scen]))[0], $exact, "loader $action: the target equals the ledger");
}

# a loader killed mid-load (SIGKILL: the server crash-restarts)
$scen++;
stage_scenario($node, $scen, $rows);
sql("SELECT paimon_sink.inject_fault('loader_before_prepare', 'kill', 1)");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('s')");
isnt($ret, 0, 'loader killed: checkpoint() fails (the server crash-restarts)');
ok(writers_ready($node, 'postgres'), 'loader killed: the writers serve again');
ok(nothing_in_doubt($node), 'loader killed: nothing of ours is in doubt');
is(scenario_rows($node, $scen), '0', 'loader killed: nothing was applied');
is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('s')"),
	$rows, 'loader killed: the next checkpoint() commits it');
is((ledger_diff($node, [$scen]))[0], $exact, 'loader killed: the target equals the ledger');

# the committer ends while its loader holds the prepared checkpoint: it is
# complete, so the next committer commits it
$scen++;
stage_scenario($node, $scen, $rows);
sql("SELECT paimon_sink.inject_fault('loader_after_prepare', 'pause', 1)");
$run = background_sql($node, "SELECT * FROM paimon_sink.checkpoint('s')");
ok(fault_paused($node, 'loader_after_prepare'), 'committer ends: the loader prepared the checkpoint');
sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'paimon_sink committer'");
like(finish_background($run), qr/08006|stopped while serving/,
	'committer ends: the request fails, its outcome unknown');
ok( $node->poll_query_until('postgres',
		"SELECT paused_pid IS NULL FROM paimon_sink.faults WHERE point = 'loader_after_prepare'"),
	'committer ends: its loader, terminated while paused, is no longer shown paused');
sql("SELECT paimon_sink.clear_faults()");
ok(writers_ready($node, 'postgres'), 'committer ends: a new committer serves');
ok(nothing_in_doubt($node), 'committer ends: nothing of ours is left in doubt');
is(scenario_rows($node, $scen), $rows, 'committer ends: the new committer committed all of it');
is(sql("SELECT count(*) FROM paimon_sink.checkpoint('s') WHERE newly_committed"),
	'0', 'committer ends: a retry of checkpoint() commits nothing new');
is((ledger_diff($node, [$scen]))[0], $exact, 'committer ends: the target equals the ledger');

# the loader exits right after its PREPARE, before it reports: the
# checkpoint is complete, recovery commits it, and the error says so
$scen++;
stage_scenario($node, $scen, $rows);
sql("SELECT paimon_sink.inject_fault('loader_after_prepare', 'fatal', 1)");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('s')");
like($err, qr/ERROR:  08006: paimon_sink loader exited after it prepared checkpoint \d+/,
	'loader exits after its PREPARE: checkpoint() fails saying the checkpoint is prepared');
like($err, qr/DETAIL:  The checkpoint is complete in prepared transaction "paimon_sink:/,
	'loader exits after its PREPARE: naming its gid, not "nothing applied"');
sql("SELECT paimon_sink.clear_faults()");
is(sql("SELECT count(*) FROM paimon_sink.checkpoint('s') WHERE newly_committed"),
	'0', 'loader exits after its PREPARE: the retry finds it committed');
ok(nothing_in_doubt($node), 'loader exits after its PREPARE: nothing of ours is left in doubt');
is((ledger_diff($node, [$scen]))[0], $exact, 'loader exits after its PREPARE: the target equals the ledger');

# another sink's request fails while the loader's gid is prepared: the
# in-doubt resolution that follows leaves that gid to the commit in flight
sql(q{CREATE TABLE keyed2 (id bigint PRIMARY KEY);
	SELECT sink_name FROM paimon_sink.create_sink('k2', 'keyed2');
	INSERT INTO keyed2 VALUES (1);});
$scen++;
stage_scenario($node, $scen, $rows);
sql("SELECT paimon_sink.inject_fault('loader_after_prepare', 'pause', 1)");
$run = background_sql($node, "SELECT row_count FROM paimon_sink.checkpoint('s')");
ok(fault_paused($node, 'loader_after_prepare'), 'another request fails: the loader prepared the checkpoint');
sql("INSERT INTO k2 VALUES (1)");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('k2')");
like($err, qr/ERROR:  23505:/, 'another request fails: a unique violation of sink k2, meanwhile');
$log_offset = -s $node->logfile;
sql("SELECT paimon_sink.clear_faults()");
is(finish_background($run), "$rows\n", 'another request fails: checkpoint() of s still answers its snapshot');
unlike(substr(slurp_file($node->logfile), $log_offset), qr/committed in-doubt transaction/,
	'another request fails: the committer committed the gid, not the in-doubt resolution');
is((ledger_diff($node, [$scen]))[0], $exact, 'another request fails: the target equals the ledger');
sql("SELECT paimon_sink.drop_sink('k2', force => true)");

# --- 4. a crash (immediate stop) at each moment of the whole load
for my $moment (['loader_before_prepare', 0], ['loader_after_prepare', 1],
	['committer_after_prepare', 1])
{
	my ($point, $prepared) = @$moment;
	$scen++;
	stage_scenario($node, $scen, $rows);
	sql("SELECT paimon_sink.inject_fault('$point', 'pause', 1)");
	$run = background_sql($node, "SELECT * FROM paimon_sink.checkpoint('s')");
	ok(fault_paused($node, $point), "crash at $point: paused there");
	if ($prepared)
	{
		($gid, $checkpoint) = whole_parts(whole_gid($node));
		like($gid, qr/^paimon_sink:/, "crash at $point: the checkpoint's own gid is prepared");
		is(scenario_rows($node, $scen), '0', "crash at $point: nothing is visible before");
	}
	if ($point eq 'committer_after_prepare')
	{
		is(sql("SELECT phase || ' ' || gid || ' ' || loaders FROM paimon_sink.commit_progress"),
			"preparing $gid 1", "crash at $point: the committer is committing the loader's gid");
	}
	$log_offset = -s $node->logfile;
	$node->stop('immediate');
	finish_background($run);
	$node->start;
	ok(writers_ready($node, 'postgres'), "crash at $point: the restarted server's writers serve");
	ok(nothing_in_doubt($node), "crash at $point: nothing of ours is left in doubt");
	if ($prepared)
	{
		is(scenario_rows($node, $scen), $rows,
			"crash at $point: recovery committed all of it, with no checkpoint() call");
		like(substr(slurp_file($node->logfile), $log_offset),
			qr/committed in-doubt transaction "\Q$gid\E"/,
			"crash at $point: the log says recovery committed the gid");
		is(snapshot_of($node, $checkpoint) =~ s/ \d+$//r, "1 $rows",
			"crash at $point: with its one snapshot");
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

# --- 6. a reader polling count(*) only ever sees whole checkpoints
my $big = 200000;
$scen++;
sql(q{CREATE SEQUENCE reader_polls;
	CREATE FUNCTION poll_counts(final bigint, secs int) RETURNS text LANGUAGE plpgsql AS $$
	DECLARE
		c bigint;
		seen bigint[] := '{}';
		polls int := 0;
		t0 timestamptz := clock_timestamp();
	BEGIN
		LOOP
			SELECT count(*) INTO c FROM target;  -- a new snapshot each time (read committed)
			polls := polls + 1;
			PERFORM nextval('reader_polls');  -- seen by others at once
			IF NOT c = ANY (seen) THEN seen := seen || c; END IF;
			EXIT WHEN c >= final OR clock_timestamp() - t0 > make_interval(secs => secs);
			PERFORM pg_sleep(0.002);
		END LOOP;
		RETURN polls || ' ' || array_to_string(seen, ',');
	END $$});
stage_scenario($node, $scen, $big);
my $before = sql('SELECT count(*) FROM target');
my $after = $before + $big;
sql("SELECT paimon_sink.inject_fault('loader_after_prepare', 'pause', 1)");
$run = background_sql($node, "SELECT row_count FROM paimon_sink.checkpoint('s')");
ok(fault_paused($node, 'loader_after_prepare'), 'reader: the big checkpoint is prepared, held');
my $reader = background_sql($node, "SELECT poll_counts($after, 60)");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE 'SELECT poll_counts%'"),
	'reader: polling');
ok($node->poll_query_until('postgres', 'SELECT last_value >= 20 FROM reader_polls'),
	'reader: it polled 20 times while the checkpoint was prepared, not committed');
sql("SELECT paimon_sink.clear_faults()");
is(finish_background($run), "$big\n", 'reader: checkpoint() commits the big checkpoint');
my ($polls, $seen) = split / /, finish_background($reader) =~ s/\n//r;
is($seen, "$before,$after", "reader: it saw $before rows, then $after, nothing between");
note("reader: $polls polls");
is((ledger_diff($node, [$scen]))[0], $exact, 'reader: the target equals the ledger');

# --- 5. a standby shows nothing of a prepared checkpoint; promoted, it commits it
$node->backup('bk');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($node, 'bk', has_streaming => 1);
$standby->start;
$scen++;
stage_scenario($node, $scen, $rows);
sql("SELECT paimon_sink.inject_fault('loader_after_prepare', 'pause', 1)");
$run = background_sql($node, "SELECT * FROM paimon_sink.checkpoint('s')");
ok(fault_paused($node, 'loader_after_prepare'), 'failover: the loader prepared the checkpoint');
($gid, $checkpoint) = whole_parts(whole_gid($node));
like($gid, qr/^paimon_sink:/, 'failover: the checkpoint\'s own gid is prepared on the primary');
my $prepared_lsn = $node->lsn('insert');    # the PREPARE's record is behind it
$node->wait_for_catchup($standby, 'replay', $prepared_lsn);
is($standby->safe_psql('postgres', "SELECT pg_last_wal_replay_lsn() >= '$prepared_lsn'"),
	't', 'failover: the standby replayed the PREPARE');
is(scenario_rows($standby, $scen), '0', 'failover: the standby shows none of its rows');
$node->stop('immediate');
finish_background($run);
$standby->promote;
ok(writers_ready($standby, 'postgres'), 'failover: the promoted standby\'s writers serve');
ok(nothing_in_doubt($standby), 'failover: nothing of ours is left in doubt');
is(scenario_rows($standby, $scen), $rows, 'failover: the promoted standby committed all of it');
like(slurp_file($standby->logfile), qr/committed in-doubt transaction "\Q$gid\E"/,
	'failover: its committer committed the in-doubt gid');
is((ledger_diff($standby))[0], $exact, 'failover: the whole target equals the ledger');
$standby->stop;

done_testing();
