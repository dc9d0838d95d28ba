# A job's identity travels in its transaction (issue 29): through PgBouncer
# in transaction and in session pooling mode, and directly, the zombies of a
# failed attempt are refused with 55000 once restart_job() gave the job a
# new fence epoch, and none of their rows or properties ever commits.
#
# For each way in (direct, PgBouncer transaction pooling, PgBouncer session
# pooling; 2 server connections per pool in transaction mode, more clients
# than that), a job (its own sink and commit user) runs attempt 1: two
# subtasks write per transaction (write_as with the epoch restart_job()
# gave), prepare checkpoint 1 with their positions, fence_epoch and the
# rows they sent (expected_rows), and it commits.  Two subtasks of attempt 1
# live on: one names its identity per transaction (write_as), one keeps
# session settings (SET commit_user, writer_id, fence_epoch); both write
# before the restart.  Then restart_job() (attempt 2), and each zombie
# tries again: write_as with the old epoch, prepare_commit and commit with
# it, an INSERT under the old session settings, a prepare falling back to
# them -- each refused with SQLSTATE 55000.  So are a session that sets
# only commit_user and writer_id (the README's way before issue 29) and a
# session that names no identity at all, writing into the job's sink.
# Attempt 2 writes and commits checkpoint 2; the target holds attempts 1
# and 2 exactly, the last commit's properties are attempt 2's, and a
# checkpoint of the sink's own commit user (what a periodic checkpoint
# does) commits none of the refused rows.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkPooler;
use PaimonSinkTest qw(start_node try_sql writers_ready);

if (my $why = PaimonSinkPooler::missing())
{
	plan skip_all => $why;
}

my $node = start_node('pooler');
$node->safe_psql('postgres', 'CREATE EXTENSION paimon_sink');
ok(writers_ready($node, 'postgres'), 'writers serve');

my %via = (
	direct => $node,
	transaction => PaimonSinkPooler->start($node, 'transaction',
		mode => 'transaction', pool_size => 2),
	# a session keeps its server connection: room for the two zombies and
	# the job's own calls
	session => PaimonSinkPooler->start($node, 'session',
		mode => 'session', pool_size => 4));

# sqlstate(STDERR): the SQLSTATE of the first error psql reported
# (VERBOSITY verbose), or 'none'.
sub sqlstate
{
	my ($err) = @_;
	return $err =~ /ERROR:  ([0-9A-Z]{5}):/ ? $1 : 'none';
}

# zombie(WAY): a psql session that lives on through WAY, going on after
# errors, with verbose errors.
sub zombie
{
	my ($way) = @_;
	return $via{$way}->background_psql('postgres', on_error_stop => 0,
		extra_params => [ '-v', 'VERBOSITY=verbose' ]);
}

# zombie_sql(SESSION, SQL): runs SQL in the zombie session; returns
# (stdout, stderr of this SQL).
sub zombie_sql
{
	my ($session, $sql) = @_;
	$session->{stderr} = '';
	my $out = $session->query($sql);
	return ($out, $session->{stderr});
}

# rows(FIRST, LAST, NOTE): a VALUES list of the ids FIRST..LAST with NOTE.
sub rows
{
	my ($first, $last, $note) = @_;
	return join(', ', map { "($_, '$note')" } $first .. $last);
}

for my $way (qw(direct transaction session))
{
	my $db = $via{$way};
	my $sink = "s_$way";
	my $job = "job-$way";
	$node->safe_psql('postgres', qq{
		CREATE TABLE t_$way (id int, note text);
		SELECT sink_name FROM paimon_sink.create_sink('$sink', 't_$way', buckets => 2,
			bucket_key => '{id}');
	});

	# restart(): restart_job() through the way; its checkpoint and epoch
	my $restart = sub {
		my ($ret, $out, $err) = try_sql($db,
			"SELECT checkpoint_id, fence_epoch FROM paimon_sink.restart_job('$sink', '$job')");
		is($ret, 0, "$way: restart_job() succeeds") or diag($err);
		return split /\|/, $out;
	};
	# write(S, EPOCH, FIRST, LAST, NOTE): subtask S's transaction, its
	# identity first
	my $write = sub {
		my ($s, $epoch, $first, $last, $note) = @_;
		return try_sql($db, "BEGIN;
			SELECT paimon_sink.write_as('$sink', '$job', $s, $epoch);
			INSERT INTO $sink VALUES " . rows($first, $last, $note) . ";
			COMMIT;");
	};
	# prepare(N, S, EPOCH, ROWS, POS): subtask S prepares checkpoint N
	my $prepare = sub {
		my ($n, $s, $epoch, $rows, $pos) = @_;
		return try_sql($db, "SELECT coalesce(sum(row_count), 0)
			FROM paimon_sink.prepare_commit('$sink', '$job', $n, $s, '{\"pos-$s\": $pos}',
				fence_epoch => $epoch, expected_rows => $rows)");
	};
	my $commit = sub {
		my ($n, $epoch) = @_;
		return try_sql($db, "SELECT count(*)
			FROM paimon_sink.commit('$sink', '$job', $n, fence_epoch => $epoch)");
	};

	# ---- attempt 1
	my ($m1, $e1) = $restart->();
	is($m1, 0, "$way: a new job restores checkpoint 0");
	for my $s (0, 1)
	{
		my ($ret, $out, $err) = $write->($s, $e1, 1 + 10 * $s, 10 + 10 * $s, 'a1');
		is($ret, 0, "$way: attempt 1, subtask $s writes 10 rows per transaction (write_as)")
		  or diag($err);
		($ret, $out, $err) = $prepare->(1, $s, $e1, 10, 10);
		is($ret . $out, "010", "$way: subtask $s prepares checkpoint 1 with expected_rows 10")
		  or diag($err);
	}
	my ($ret, $out, $err) = $commit->(1, $e1);
	is($ret, 0, "$way: checkpoint 1 commits") or diag($err);

	# two subtasks of attempt 1 live on: one names its identity per
	# transaction, one in its session
	my $zt = zombie($way);
	my $zs = zombie($way);
	($out, $err) = zombie_sql($zt, "BEGIN;
		SELECT paimon_sink.write_as('$sink', '$job', 0, $e1);
		INSERT INTO $sink VALUES " . rows(21, 25, 'zombie') . ";
		COMMIT;");
	is($err, '', "$way: before the restart the per-transaction subtask writes (epoch $e1)");
	($out, $err) = zombie_sql($zs, "SET paimon_sink.commit_user = '$job';
		SET paimon_sink.writer_id = 1; SET paimon_sink.fence_epoch = '$e1';");
	is($err, '', "$way: the session subtask sets its identity in its session");
	if ($way ne 'transaction')
	{
		# through transaction pooling its SETs stay on whichever server
		# connection served them: its writes are refused even now
		($out, $err) = zombie_sql($zs, "INSERT INTO $sink VALUES " . rows(31, 35, 'zombie'));
		is($err, '', "$way: before the restart the session subtask writes (epoch $e1)");
	}

	# ---- the restart: attempt 2
	my ($m2, $e2) = $restart->();
	is($m2, 1, "$way: restart_job() restores checkpoint 1");
	ok($e2 > $e1, "$way: with a new fence epoch ($e1 -> $e2)");

	# the zombies are refused, whatever they try
	($out, $err) = zombie_sql($zt, "BEGIN;
		SELECT paimon_sink.write_as('$sink', '$job', 0, $e1);
		INSERT INTO $sink VALUES " . rows(21, 25, 'zombie') . ";
		COMMIT;");
	is(sqlstate($err), '55000', "$way: the per-transaction zombie's write_as with epoch $e1 is refused (55000)")
	  or diag($err);
	($out, $err) = zombie_sql($zt, "SELECT count(*)
		FROM paimon_sink.prepare_commit('$sink', '$job', 2, 0, '{\"pos-0\": 999}',
			fence_epoch => $e1, expected_rows => 5)");
	is(sqlstate($err), '55000', "$way: its prepare_commit with epoch $e1 is refused (55000)")
	  or diag($err);
	($out, $err) = zombie_sql($zt, "SELECT count(*)
		FROM paimon_sink.commit('$sink', '$job', 2, fence_epoch => $e1)");
	is(sqlstate($err), '55000', "$way: its commit with epoch $e1 is refused (55000)")
	  or diag($err);
	($out, $err) = zombie_sql($zs, "INSERT INTO $sink VALUES " . rows(36, 40, 'zombie'));
	is(sqlstate($err), '55000',
		"$way: the session zombie's INSERT under paimon_sink.fence_epoch = $e1 is refused (55000)")
	  or diag($err);
	($out, $err) = zombie_sql($zs, "SELECT count(*)
		FROM paimon_sink.prepare_commit('$sink', '$job', 2, 1, '{\"pos-1\": 999}')");
	is(sqlstate($err), '55000',
		"$way: its prepare_commit falling back to the session's epoch is refused (55000)")
	  or diag($err);

	# the README's way before issue 29: commit user and writer id in the
	# session, no epoch
	($ret, $out, $err) = try_sql($db, "SET paimon_sink.commit_user = '$job';
		SET paimon_sink.writer_id = 0;
		INSERT INTO $sink VALUES " . rows(41, 45, 'readme'));
	is(sqlstate($err), '55000',
		"$way: a session that SETs only commit_user and writer_id is refused (55000)")
	  or diag($err);
	# no identity at all, into the job's sink
	($ret, $out, $err) = try_sql($db, "INSERT INTO $sink VALUES " . rows(46, 50, 'anonymous'));
	is(sqlstate($err), '55000', "$way: rows naming no identity are refused (55000)")
	  or diag($err);

	if ($way eq 'transaction')
	{
		# three more clients, idle after a query: five in all, on at most
		# two server connections
		my @more = map { $db->background_psql('postgres') } 1 .. 3;
		$_->query_safe('SELECT 1') for @more;
		my $user = getpwuid($<);
		my ($clients, $servers) = ($db->clients($user), $db->server_connections($user));
		ok($clients >= 5 && $servers <= 2,
			"$way: $clients clients are served by $servers server connection(s)");
		$_->quit for @more;
	}

	# ---- attempt 2 goes on from checkpoint 1
	for my $s (0, 1)
	{
		($ret, $out, $err) = $write->($s, $e2, 21 + 10 * $s, 30 + 10 * $s, 'a2');
		is($ret, 0, "$way: attempt 2, subtask $s writes (epoch $e2)") or diag($err);
		($ret, $out, $err) = $prepare->(2, $s, $e2, 10, 20);
		is($ret . $out, "010", "$way: subtask $s prepares checkpoint 2") or diag($err);
	}
	($ret, $out, $err) = $commit->(2, $e2);
	is($ret, 0, "$way: checkpoint 2 commits") or diag($err);

	my $content = qq{SELECT count(*), count(DISTINCT id), min(id), max(id),
		count(*) FILTER (WHERE note NOT IN ('a1', 'a2')) FROM t_$way};
	is($node->safe_psql('postgres', $content), '40|40|1|40|0',
		"$way: the target holds ids 1-40 once, from attempts 1 and 2 only");
	is($node->safe_psql('postgres',
			"SELECT checkpoint_id, properties FROM paimon_sink.last_commit('$sink', '$job')"),
		'2|{"pos-0": 20, "pos-1": 20}', "$way: the last commit's properties are attempt 2's");

	# a checkpoint of the sink's own commit user (a periodic checkpoint)
	# finds none of the refused rows staged under it
	($ret, $out, $err) = try_sql($node,
		"SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('$sink')");
	is($ret . $out, '00', "$way: a checkpoint of the sink's own commit user commits no row")
	  or diag($err);
	is($node->safe_psql('postgres', $content), '40|40|1|40|0',
		"$way: after it, the target still holds ids 1-40 once");
	is($node->safe_psql('postgres', qq{SELECT count(*) FROM paimon_sink.pending_checkpoints
			WHERE sink_name = '$sink'}), '0', "$way: nothing is left pending");
	$zt->quit;
	$zs->quit;
}

$via{$_}->stop for qw(transaction session);
$node->stop;
done_testing();
