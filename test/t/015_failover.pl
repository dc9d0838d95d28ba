# Failover: the primary dies (immediate stop) and its streaming standby is
# promoted.  Staged rows are WAL-logged, so the promoted node holds every
# row whose transaction committed there: after a checkpoint() its target
# equals its ledger (the same ids, written in the same transactions into a
# plain table), nothing missing, duplicated or phantom.  Once with a
# synchronous standby, once with an asynchronous one, the primary dies at
# each moment: (a) under load with rows staged, no checkpoint in flight;
# (b) between the barrier and PREPARE (committer_before_prepare paused);
# (c) between PREPARE and COMMIT PREPARED (committer_after_prepare paused);
# (d) while a commit loads (a row trigger on the target sleeps while
# slow_load holds a row, so the load is seen in progress in
# commit_progress).  Then the promoted node takes new rows.
# At a quiet moment after catch-up the standby's staged folder holds the
# primary's files, names and sizes: redo keeps it in step.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PaimonSinkTest qw(staged_files_left background_sql checkpoint_ok ledger_diff ledger_rows ledger_setup run_load
  same_staged_files staged_files start_load stop_load wait_rows writers_ready);

my $exact = 'missing 0, duplicated 0, phantom 0';

# a node that streams, with room for the load's connections
sub streaming_conf
{
	my ($node) = @_;
	$node->append_conf('postgresql.conf', "max_connections = 30\nshared_buffers = 16MB");
	return;
}

# every scenario's primary starts from a backup of this one, with the sink
# and its tables made (quicker than initdb each time, and each scenario
# stands alone)
my $template = PostgreSQL::Test::Cluster->new('template');
$template->init(allows_streaming => 1);
streaming_conf($template);
$template->start;
ledger_setup($template);
ok(writers_ready($template, 'postgres'), 'writers serve');
$template->backup('template');
$template->stop;

my $scen = 0;
my %moments = (
	a => 'under load, rows staged',
	b => 'between the barrier and PREPARE',
	c => 'between PREPARE and COMMIT PREPARED',
	d => 'while a commit loads');
for my $sync (1, 0)
{
	for my $moment (qw(a b c d))
	{
		$scen++;
		my $label = ($sync ? 'sync' : 'async') . " ($moment) $moments{$moment}";

		my $primary = PostgreSQL::Test::Cluster->new("primary$scen");
		$primary->init_from_backup($template, 'template');
		$primary->append_conf('postgresql.conf',
			"synchronous_standby_names = '" . ($sync ? '*' : '') . "'");
		$primary->start;
		ok(writers_ready($primary, 'postgres'), "$label: writers serve on the primary");

		# a standby from a backup of the quiet primary
		$primary->backup("bk$scen");
		my $standby = PostgreSQL::Test::Cluster->new("standby$scen");
		$standby->init_from_backup($primary, "bk$scen", has_streaming => 1);
		$standby->append_conf('postgresql.conf', "synchronous_standby_names = ''");
		$standby->start;
		is($standby->safe_psql('postgres', 'SHOW shared_preload_libraries'), 'paimon_sink',
			"$label: the standby preloads the library");
		ok($primary->poll_query_until('postgres',
				"SELECT string_agg(sync_state, ',') FROM pg_stat_replication", $sync ? 'sync' : 'async'),
			"$label: the standby streams, " . ($sync ? 'synchronously' : 'asynchronously'));

		# committed rows, then staged ones; the folders agree at a quiet moment
		run_load($primary, $scen, 15);
		checkpoint_ok($primary, "$label, before the failure");
		run_load($primary, $scen, 10);
		same_staged_files($primary, $standby, $label);

		# the failure, under load
		my $load = start_load($primary, $scen);
		my $seen = ledger_rows($primary, $scen);
		ok(wait_rows($primary, $scen, $seen + 300), "$label: load runs");
		my $in_flight;
		if ($moment eq 'b' || $moment eq 'c')
		{
			my $point = $moment eq 'b' ? 'committer_before_prepare' : 'committer_after_prepare';
			$primary->safe_psql('postgres', "SELECT paimon_sink.inject_fault('$point', 'pause')");
			$in_flight = background_sql($primary, "SELECT * FROM paimon_sink.checkpoint('s')");
			ok($primary->poll_query_until('postgres',
					"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = '$point'"),
				"$label: a checkpoint is paused at $point");
			if ($moment eq 'c')
			{
				is($primary->safe_psql('postgres',
						"SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'"),
					'1', "$label: its transaction is prepared");
				# the standby has the PREPARE (async: not before it replayed it)
				$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
			}
		}
		elsif ($moment eq 'd')
		{
			$primary->safe_psql('postgres', 'INSERT INTO slow_load VALUES (true)');
			$in_flight = background_sql($primary, "SELECT * FROM paimon_sink.checkpoint('s')");
			ok($primary->poll_query_until('postgres',
					"SELECT count(*) = 1 FROM paimon_sink.commit_progress WHERE phase = 'loading' AND rows_done > 0"),
				"$label: a commit is loading");
			usleep(300_000);
			ok($primary->safe_psql('postgres',
					"SELECT rows_done < rows_total FROM paimon_sink.commit_progress") eq 't',
				"$label: and not done");
		}
		$seen = ledger_rows($primary, $scen);
		wait_rows($primary, $scen, $seen + 100);
		$primary->stop('immediate');
		stop_load($load);
		stop_load($in_flight) if $in_flight;

		# the standby takes over
		$standby->promote;
		ok(writers_ready($standby, 'postgres'), "$label: writers serve on the promoted node");
		$standby->safe_psql('postgres', 'DELETE FROM slow_load');
		my $committed = checkpoint_ok($standby, "$label, promoted");
		my ($diff, $rows) = ledger_diff($standby, [$scen]);
		is($diff, $exact, "$label: the promoted node's target equals its ledger ($rows rows)");
		is($standby->safe_psql('postgres',
				"SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'")
			  . ' ' . $standby->safe_psql('postgres', 'SELECT count(*) FROM paimon_sink.in_doubt'),
			'0 0', "$label: nothing of ours in doubt");
		if ($moment eq 'c')
		{
			ok($standby->log_contains(qr/committed in-doubt transaction "paimon_sink:/),
				"$label: the promoted node's committer committed the in-doubt transaction");
		}

		# the promoted node goes on: new rows appear once
		run_load($standby, $scen + 100, 5);
		checkpoint_ok($standby, "$label, new rows");
		($diff, $rows) = ledger_diff($standby, [ $scen, $scen + 100 ]);
		is($diff, $exact, "$label: with new rows, target equals ledger ($rows rows)");
		is($standby->safe_psql('postgres', 'SELECT count(*) FROM paimon_sink.pending_checkpoints')
			  . ' ' . staged_files_left($standby),
			'0 0', "$label: nothing pending, no staged file left");

		$standby->stop;
	}
}

done_testing();
