# Rescaling (issue 29, item 3): one job restarted with fewer, then more
# subtasks than before, with checkpoints the old parallelism prepared and
# did not commit, through the one call restart_job().
#
# The job reads 12 source partitions of 40 records each.  An attempt with P
# subtasks gives partition p to subtask p mod P, which writes as writer id
# p mod P of the attempt's fence epoch (write_as() in each transaction,
# each subtask on a connection of its own) and prepares its checkpoints with
# its partitions' next record index ({"part-<p>": n}) and the rows it sent
# (expected_rows).  Positions are keyed by source partition, not by writer
# id, so a new parallelism takes them over.
#
#   attempt 1, 4 subtasks: checkpoints 1, 2 committed; 3 prepared by all four
#     subtasks; 4 written by all, prepared by subtasks 0 and 1 only; more rows
#     staged after; then an immediate stop of the server, the clients killed.
#     restart_job(restored_checkpoint_id => 3), as Flink restoring its own
#     checkpoint 3: 3 is committed once, 4 and the staged rows are discarded.
#     A zombie of attempt 1 (writer 3, which attempt 2 does not have) is
#     refused with 55000 per transaction, per session and at prepare.
#   attempt 2, 2 subtasks, checkpoint ids going on from 4 (the discarded 4
#     again): 4, 5 committed; 6 prepared by both; 7 prepared by subtask 0
#     only; more rows staged; then kill -9 of a writer (the cluster
#     crash-restarts), the clients killed.  A subtask of attempt 2 comes
#     back first and opens a transaction with its epoch, still the current
#     one; restart_job() with no restored id (to the last committed, 5)
#     discards 6, 7 and the staged rows for every writer id; the zombie's
#     commit comes after it and its prepare is refused.
#   attempt 3, 6 subtasks (writer ids 4 and 5 are new), checkpoint ids from
#     10: zombies of attempts 1 and 2 refused; the job runs to the end.
#
# The targets have no key, so that a row committed twice shows.  At the
# end every record is in the target once, the rows each attempt
# committed are what the restored positions say, the last commit holds
# every partition's final position, and no checkpoint, prepared
# transaction or staged file is left.  The same again over a sink group of
# two sinks (each record into both, no expected_rows: a group takes none).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(back_after_crash staged_files_left start_node writers_ready);

my $node = start_node('rescale', "restart_after_crash = on");
my $parts = 12;    # source partitions
my $records = 40;  # records per partition
my $step = 2;      # records a subtask reads from each partition per checkpoint
my $zombie_id = 900000;    # ids of the zombies' rows, never in the source

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE events (id int NOT NULL, attempt int NOT NULL, writer int NOT NULL);
	SELECT sink_name FROM paimon_sink.create_sink('events_sink', 'events', buckets => 2,
		bucket_key => '{id}');
	CREATE TABLE left_t (id int NOT NULL, attempt int NOT NULL, writer int NOT NULL);
	CREATE TABLE right_t (id int NOT NULL, attempt int NOT NULL, writer int NOT NULL);
	SELECT sink_name FROM paimon_sink.create_sink('left_sink', 'left_t', buckets => 2,
		bucket_key => '{id}');
	SELECT sink_name FROM paimon_sink.create_sink('right_sink', 'right_t');
	SELECT paimon_sink.create_sink_group('pair', ARRAY['left_sink', 'right_sink']);
});
ok(writers_ready($node, 'postgres'), 'writers serve');

# record(p, k): the id of partition p's record k (0-based)
sub record { my ($p, $k) = @_; return $p * 1000 + $k; }

# A session of a subtask (or a zombie): psql on its own connection, errors
# with their SQLSTATE.  run(session, sql) returns (stdout, errors).
sub session
{
	return $node->background_psql('postgres', on_error_stop => 0,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
}

sub run
{
	my ($session, $sql) = @_;
	$session->{stderr} = '';
	my $out = $session->query($sql);
	my $err = $session->{stderr};
	# notices are not errors; a refusal is
	return ($out, $err =~ /ERROR/ ? $err : '');
}

# kill_clients(attempt): the attempt's client processes die (kill -9)
sub kill_clients
{
	my ($att) = @_;
	$_->{run}->kill_kill for @{ $att->{sessions} };
	$att->{sessions} = [];
	return;
}

# props(pos, partitions): the JSON of the positions of those partitions
sub props
{
	my ($pos, @p) = @_;
	return '{' . join(', ', map { "\"part-$_\": $pos->{$_}" } sort { $a <=> $b } @p) . '}';
}

# The scenarios: one sink, and a group of two sinks.
my @scenarios = (
	{
		name => 'one sink',
		job => 'job-58',
		target => 'events_sink',
		sinks => ['events_sink'],
		tables => ['events'],
		group => 0,
	},
	{
		name => 'sink group',
		job => 'job-58-group',
		target => 'pair',
		sinks => [ 'left_sink', 'right_sink' ],
		tables => [ 'left_t', 'right_t' ],
		group => 1,
	});

my %figures;
for my $sc (@scenarios)
{
	my ($job, $target, $name) = ($sc->{job}, $sc->{target}, $sc->{name});
	my %pos = map { $_ => 0 } 0 .. $parts - 1;    # the source's read positions
	my %at;                                        # positions prepared by all at checkpoint n
	my %expected_rows;                             # rows each attempt should commit
	my $kills = 0;

	# partitions(att, s): the partitions subtask s of the attempt reads
	my $partitions = sub {
		my ($att, $s) = @_;
		return grep { $_ % $att->{parallelism} == $s } 0 .. $parts - 1;
	};

	# write(att, s): subtask s reads the next records of its partitions and
	# writes them in one transaction that names its identity
	my $write = sub {
		my ($att, $s) = @_;
		my @rows;
		for my $p ($partitions->($att, $s))
		{
			my $to = $pos{$p} + $step > $records ? $records : $pos{$p} + $step;
			push @rows, map { '(' . record($p, $_) . ", $att->{n}, $s)" } $pos{$p} .. $to - 1;
			$pos{$p} = $to;
		}
		return unless @rows;
		my $values = join(',', @rows);
		my ($out, $err) = run($att->{sessions}[$s],
			"BEGIN;
			 SELECT paimon_sink.write_as('$target', '$job', $s, $att->{epoch});\n"
			  . join('', map { "INSERT INTO $_ VALUES $values;\n" } @{ $sc->{sinks} })
			  . "COMMIT;");
		is($err, '', "$name: attempt $att->{n} subtask $s writes " . scalar(@rows) . ' rows')
		  or diag($err);
		$att->{sent}[$s] += @rows;
		return;
	};

	# prepare(att, s, n): subtask s prepares checkpoint n with its positions
	my $prepare = sub {
		my ($att, $s, $n) = @_;
		my $props = props(\%pos, $partitions->($att, $s));
		my $expected = $sc->{group} ? '' : ", expected_rows => $att->{sent}[$s]";
		my ($out, $err) = run($att->{sessions}[$s],
			"SELECT count(*) FROM paimon_sink.prepare_commit('$target', '$job', $n, $s, '$props',
			   fence_epoch => $att->{epoch}$expected)");
		is($err, '', "$name: attempt $att->{n} subtask $s prepares checkpoint $n") or diag($err);
		$att->{sent}[$s] = 0;
		return;
	};

	# checkpoint(att, n, prepared_by, commit): every subtask writes, those
	# listed prepare checkpoint n, then it is committed if told to
	my $checkpoint = sub {
		my ($att, $n, $prepared_by, $commit) = @_;
		$write->($att, $_) for 0 .. $att->{parallelism} - 1;
		$prepare->($att, $_, $n) for @$prepared_by;
		$at{$n} = {%pos} if @$prepared_by == $att->{parallelism};
		if ($commit)
		{
			my ($ret, $out, $err) = $node->psql('postgres',
				"SELECT count(*) FROM paimon_sink.commit('$target', '$job', $n, $att->{epoch})");
			is($ret, 0, "$name: attempt $att->{n} commits checkpoint $n") or diag($err);
		}
		return;
	};

	# start(n, parallelism, restored): the attempt's restart_job() and its
	# subtasks' sessions; returns the attempt and restart_job()'s row
	my $start = sub {
		my ($n, $parallelism, $restored) = @_;
		my $row = sql("SELECT checkpoint_id, coalesce(properties::text, ''),
				recommitted_checkpoints, discarded_checkpoints, discarded_files, fence_epoch
			FROM paimon_sink.restart_job('$target', '$job', 60000, " . ($restored // 'NULL') . ')');
		my @r = split(/\|/, $row);
		my $att = {
			n => $n,
			parallelism => $parallelism,
			epoch => $r[5],
			sent => [ (0) x $parallelism ],
			sessions => [ map { session() } 1 .. $parallelism ],
		};
		note("$name: attempt $n, parallelism $parallelism, restart_job("
			  . ($restored // 'NULL') . "): checkpoint $r[0], recommitted $r[2], "
			  . "discarded checkpoints $r[3], discarded files $r[4], fence epoch $r[5]");
		return ($att, @r);
	};

	# resume(properties): the source resumes from the restored properties
	# (every partition at 0 before the first commit)
	my $resume = sub {
		my ($props) = @_;
		%pos = map { $_ => 0 } 0 .. $parts - 1;
		while ($props =~ /"part-(\d+)": (\d+)/g) { $pos{$1} = $2; }
		return;
	};

	my $sum = sub { my ($h) = @_; my $t = 0; $t += $_ for values %$h; return $t; };

	# rows(): the rows in each target table, space-separated
	my $rows = sub {
		return join(' ', map { sql("SELECT count(*) FROM $_") } @{ $sc->{tables} });
	};

	# zombie(writer, epoch, n, what): a subtask of a fenced attempt writes
	# per transaction, per session, and prepares: each refused with 55000
	my $zombie = sub {
		my ($w, $epoch, $n, $what) = @_;
		my $z = session();
		my $values = '(' . ($zombie_id + $n) . ", -1, $w)";
		my ($out, $err) = run($z,
			"BEGIN;
			 SELECT paimon_sink.write_as('$target', '$job', $w, $epoch);
			 INSERT INTO $sc->{sinks}[0] VALUES $values;
			 COMMIT;");
		like($err, qr/ERROR:  55000: fence epoch $epoch of commit user "$job" of sink "\w+" is stale/,
			"$name: $what writing per transaction is refused (55000)");
		($out, $err) = run($z,
			"SET paimon_sink.commit_user = '$job'; SET paimon_sink.writer_id = $w;
			 SET paimon_sink.fence_epoch = '$epoch';
			 INSERT INTO $sc->{sinks}[0] VALUES $values;");
		like($err, qr/ERROR:  55000: /, "$name: $what writing with session settings is refused (55000)");
		($out, $err) = run($z,
			"RESET paimon_sink.commit_user; RESET paimon_sink.writer_id; RESET paimon_sink.fence_epoch;
			 SELECT count(*) FROM paimon_sink.prepare_commit('$target', '$job', $n, $w,
			   '{\"part-$w\": 999}', fence_epoch => $epoch)");
		like($err, qr/ERROR:  55000: fence epoch $epoch .* is stale/,
			"$name: $what preparing checkpoint $n with its positions is refused (55000)");
		$z->quit;
		return;
	};

	# ---- attempt 1: 4 subtasks
	my ($a1, @r1) = $start->(1, 4, undef);
	is("$r1[0] $r1[1]", '0 ', "$name: the first attempt starts from nothing committed");
	$checkpoint->($a1, 1, [ 0 .. 3 ], 1);
	$checkpoint->($a1, 2, [ 0 .. 3 ], 1);
	$checkpoint->($a1, 3, [ 0 .. 3 ], 0);    # prepared by all, not committed
	$checkpoint->($a1, 4, [ 0, 1 ], 0);      # prepared by some
	$write->($a1, $_) for 0 .. 3;            # staged after the last prepare
	is(sql("SELECT string_agg(DISTINCT checkpoint_id::text, ',' ORDER BY checkpoint_id::text)
		FROM paimon_sink.pending_checkpoints WHERE commit_user = '$job'"), '3,4',
		"$name: checkpoints 3 and 4 are pending at the kill");
	$expected_rows{1} = $sum->($at{3});

	# the kill: the server stops at once, the clients die
	$node->stop('immediate');
	kill_clients($a1);
	$kills++;
	$node->start;
	ok(writers_ready($node, 'postgres'), "$name: writers serve after the immediate stop");

	# ---- attempt 2: 2 subtasks, restored to the checkpoint all 4 prepared
	my ($a2, @r2) = $start->(2, 2, 3);
	is($r2[0], 3, "$name: restart_job(restored 3) returns checkpoint 3");
	is($r2[1], props($at{3}, 0 .. $parts - 1),
		"$name: with every partition's position as the four subtasks prepared it");
	is($r2[2], 1, "$name: checkpoint 3 is committed by the restore");
	ok($r2[3] >= 1 && $r2[4] >= 1,
		"$name: checkpoint 4 and the staged rows are discarded ($r2[3] checkpoints, $r2[4] files)");
	ok($r2[5] > $a1->{epoch}, "$name: attempt 2 has a newer fence epoch");
	is($rows->(), join(' ', ($sum->($at{3})) x @{ $sc->{tables} }),
		"$name: the target holds the rows up to checkpoint 3, once");
	is(sql("SELECT count(*) FROM paimon_sink.pending_checkpoints WHERE commit_user = '$job'"),
		0, "$name: nothing is pending after the restore");
	$zombie->(3, $a1->{epoch}, 4, 'a zombie of attempt 1 (writer 3)');
	$resume->($r2[1]);
	$checkpoint->($a2, 4, [ 0, 1 ], 1);      # the discarded id again
	$checkpoint->($a2, 5, [ 0, 1 ], 1);
	$checkpoint->($a2, 6, [ 0, 1 ], 0);      # prepared by both, not committed
	$checkpoint->($a2, 7, [0], 0);           # prepared by subtask 0 only
	$write->($a2, $_) for 0 .. 1;            # staged after the last prepare
	is(sql("SELECT string_agg(DISTINCT checkpoint_id::text, ',' ORDER BY checkpoint_id::text)
		FROM paimon_sink.pending_checkpoints WHERE commit_user = '$job'"), '6,7',
		"$name: checkpoints 6 and 7 are pending at the kill");
	$expected_rows{2} = $sum->($at{5}) - $sum->($at{3});

	# the kill: kill -9 of a writer, the cluster crash-restarts; the clients die
	my $offset = -s $node->logfile;
	my $writer = sql('SELECT pid FROM paimon_sink.writers WHERE pid IS NOT NULL LIMIT 1');
	kill 'KILL', $writer;
	kill_clients($a2);
	$kills++;
	ok(back_after_crash($node, 'postgres', $offset),
		"$name: back after the kill -9 of writer $writer");

	# a subtask of attempt 2 reconnects first and writes with its epoch, the
	# current one until the restart: its transaction stays open across it
	my $late = session();
	my ($out, $err) = run($late,
		"BEGIN;
		 SELECT paimon_sink.write_as('$target', '$job', 1, $a2->{epoch});
		 INSERT INTO $sc->{sinks}[0] VALUES (" . ($zombie_id + 1) . ", -2, 1);");
	is($err, '', "$name: a subtask of attempt 2 writes before the restart (its epoch is current)");

	# ---- attempt 3: 6 subtasks, restored to the last committed
	my ($a3, @r3) = $start->(3, 6, undef);
	is($r3[0], 5, "$name: restart_job(NULL) returns the last committed checkpoint, 5");
	is($r3[1], props($at{5}, 0 .. $parts - 1),
		"$name: with every partition's position as the two subtasks prepared it");
	is($r3[2], 0, "$name: nothing is committed by the restore");
	ok($r3[3] >= 2, "$name: checkpoints 6 and 7 are discarded ($r3[3] checkpoints, $r3[4] files)");
	ok($r3[5] > $a2->{epoch}, "$name: attempt 3 has a newer fence epoch");
	($out, $err) = run($late, 'COMMIT');
	note("$name: the late subtask's commit after the restart: " . ($err eq '' ? 'accepted' : $err));
	($out, $err) = run($late,
		"SELECT count(*) FROM paimon_sink.prepare_commit('$target', '$job', 10, 1,
		   '{\"part-1\": 999}', fence_epoch => $a2->{epoch})");
	like($err, qr/ERROR:  55000: /, "$name: its prepare after the restart is refused (55000)");
	$late->quit;
	is($rows->(), join(' ', ($sum->($at{5})) x @{ $sc->{tables} }),
		"$name: the target holds the rows up to checkpoint 5, once");
	$zombie->(1, $a2->{epoch}, 10, 'a zombie of attempt 2 (writer 1)');
	$zombie->(3, $a1->{epoch}, 10, 'a zombie of attempt 1 (writer 3)');
	$resume->($r3[1]);
	my $n = 10;    # the job's checkpoint counter skipped 8 and 9
	my $before = $sum->(\%pos);
	while ($sum->(\%pos) < $parts * $records)
	{
		$checkpoint->($a3, $n++, [ 0 .. 5 ], 1);
	}
	$expected_rows{3} = $sum->(\%pos) - $before;
	my $last = sql("SELECT checkpoint_id || ' ' || properties::text
		FROM paimon_sink.last_commit('$target', '$job')");
	is($last, ($n - 1) . ' ' . props(\%pos, 0 .. $parts - 1),
		"$name: the last commit holds every partition's final position");
	my @committed = (1 .. 5, 10 .. $n - 1);
	is(sql("SELECT string_agg(sink_name || ':' || ids, ' ' ORDER BY sink_name) FROM
			(SELECT sink_name, string_agg(commit_identifier::text, ',' ORDER BY commit_identifier) AS ids
			 FROM paimon_sink.snapshots WHERE commit_user = '$job' GROUP BY sink_name) s"),
		join(' ', map { "$_:" . join(',', @committed) } sort @{ $sc->{sinks} }),
		"$name: each sink committed checkpoints 1-5 and 10-" . ($n - 1) . ' once, 6 and 7 never');
	my ($ret, $end_out, $end_err) = $node->psql('postgres',
		"SELECT count(*) FROM paimon_sink.end_input('$target', '$job', $a3->{epoch})");
	is($ret, 0, "$name: the job ends its input") or diag($end_err);
	$_->quit for @{ $a3->{sessions} };

	# ---- exactly once
	my $total = $parts * $records;
	for my $t (@{ $sc->{tables} })
	{
		is(sql("WITH src AS (SELECT p * 1000 + k AS id FROM generate_series(0, $parts - 1) p,
				generate_series(0, $records - 1) k)
			SELECT (SELECT count(*) FROM $t) || ' missing ' ||
				(SELECT count(*) FROM src WHERE NOT EXISTS (SELECT FROM $t t WHERE t.id = src.id))
				|| ' duplicated ' || (SELECT count(*) - count(DISTINCT id) FROM $t)
				|| ' phantom ' || (SELECT count(*) FROM $t t WHERE NOT EXISTS
					(SELECT FROM src WHERE src.id = t.id))"),
			"$total missing 0 duplicated 0 phantom 0", "$name: every record is in $t once");
		is(sql("SELECT string_agg(attempt || ':' || n, ' ' ORDER BY attempt)
				FROM (SELECT attempt, count(*) AS n FROM $t GROUP BY attempt) a"),
			join(' ', map { "$_:$expected_rows{$_}" } 1 .. 3),
			"$name: each attempt committed the rows its restored positions say ($t)");
		is(sql("SELECT string_agg(DISTINCT writer::text, ',' ORDER BY writer::text) FROM $t
				WHERE attempt = 3"), '0,1,2,3,4,5',
			"$name: attempt 3 wrote as writer ids 0 to 5 ($t)");
	}
	is($sum->(\%pos), $total, "$name: positions = rows ($total)");
	is(sql("SELECT count(*) FROM paimon_sink.pending_checkpoints WHERE commit_user = '$job'"),
		0, "$name: no checkpoint is pending");

	my $per_attempt = sql("SELECT string_agg('attempt ' || attempt || ': ' || n || ' rows', ', '
			ORDER BY attempt) FROM (SELECT attempt, count(*) AS n FROM $sc->{tables}[0]
			GROUP BY attempt) a");
	diag("$name: $total records, 3 attempts (parallelism 4, 2, 6), $kills kills; $per_attempt");
}

is(sql('SELECT count(*) FROM pg_prepared_xacts'), 0, 'no prepared transaction is left');
is(staged_files_left($node), 0, 'no staged file is left');
$node->stop;

done_testing();
