# Upsert sinks under failures: sequence numbers that keep increasing across
# writer deaths and crash-restarts, the failure table's moments for an
# upsert sink, and a streamed transaction's versions kept in order.  Every
# check compares the target with "expected", an ordinary table holding the
# state the committed change stream implies, written in the same
# transactions as the sink.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(back_after_crash start_node try_sql writers_ready);

my $node = start_node('upsert', "restart_after_crash = on\nlog_min_messages = log\npaimon_sink.handoff_buffer_size = '256kB'");

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE kv (id int PRIMARY KEY, v text NOT NULL, version int NOT NULL);
	CREATE TABLE expected (LIKE kv INCLUDING ALL);
	SELECT sink_name FROM paimon_sink.create_sink('u', 'kv', mode => 'upsert', buckets => 4);
});
ok(writers_ready($node, 'postgres'), 'writers serve');

# Keys first..last each get versions 1..n, in that order, in one transaction.
sub upsert_versions
{
	my ($first, $last, $n, $tag, $commit_user) = @_;
	my $set = $commit_user ? "SET paimon_sink.commit_user = '$commit_user';" : '';
	sql("$set BEGIN;
		INSERT INTO u (id, v, version)
		  SELECT k, '$tag-' || n, n FROM generate_series(1, $n) n, generate_series($first, $last) k
		  ORDER BY n, k;
		INSERT INTO expected SELECT k, '$tag-$n', $n FROM generate_series($first, $last) k
		  ON CONFLICT (id) DO UPDATE SET v = excluded.v, version = excluded.version;
		COMMIT;");
}

sub delete_keys
{
	my ($first, $last, $commit_user) = @_;
	my $set = $commit_user ? "SET paimon_sink.commit_user = '$commit_user';" : '';
	sql("$set BEGIN;
		INSERT INTO u (id, _row_kind) SELECT k, '-D' FROM generate_series($first, $last) k;
		DELETE FROM expected WHERE id BETWEEN $first AND $last;
		COMMIT;");
}

sub wrong_keys
{
	return sql("SELECT count(*) FROM ((TABLE kv EXCEPT TABLE expected)
		UNION ALL (TABLE expected EXCEPT TABLE kv)) d");
}

sub clean
{
	my ($label) = @_;
	is(wrong_keys(), '0', "$label: the target is the state the change stream implies");
	is(sql("SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'"), '0',
		"$label: nothing in doubt");
	is(sql("SELECT count(*) FROM paimon_sink.pending_checkpoints"), '0',
		"$label: nothing pending");
	my @files = glob($node->data_dir . '/pg_paimon_sink/*/*/*.stage');
	is(scalar(@files), 0, "$label: no staged file left");
}

sub max_sequence
{
	return sql("SELECT coalesce(max(max_sequence), 0) FROM paimon_sink.committable");
}

# --- sequence numbers continue after a writer dies: a newer version written
# after the restart must still win within one checkpoint
upsert_versions(1, 10, 50, 'before kill');
sql("SELECT pg_terminate_backend(pid) FROM paimon_sink.writers");
ok(writers_ready($node, 'postgres'), 'writers restarted');
upsert_versions(1, 10, 1, 'after kill');
sql("SELECT paimon_sink.checkpoint('u')");
is(sql("SELECT string_agg(DISTINCT v, ',') FROM kv"), 'after kill-1',
	'the version written after the writer restart wins');
clean('writer restart');
my $high = max_sequence();
cmp_ok($high, '>=', 50, 'committables record the highest sequence number');

# --- the same across a crash-restart of the cluster (the files are adopted)
upsert_versions(1, 10, 30, 'before crash');
$node->stop('immediate');
$node->start;
ok(writers_ready($node, 'postgres'), 'back after an immediate stop');
upsert_versions(1, 10, 1, 'after crash');
sql("SELECT paimon_sink.checkpoint('u')");
is(sql("SELECT string_agg(DISTINCT v, ',') FROM kv"), 'after crash-1',
	'the version written after the crash wins');
clean('crash restart');
# committed files are gone: the restarted writers continue above their committables
sql("SELECT pg_terminate_backend(pid) FROM paimon_sink.writers");
ok(writers_ready($node, 'postgres'), 'writers restarted again');
my $before = max_sequence();
upsert_versions(1, 10, 1, 'after committed');
sql("SELECT paimon_sink.checkpoint('u')");
cmp_ok(max_sequence(), '>', $before, 'sequence numbers keep increasing across checkpoints and restarts');
clean('restart after commit');

# --- inside commit, before PREPARE TRANSACTION: nothing applied; a retry applies once
upsert_versions(11, 20, 3, 'before prepare');
delete_keys(1, 5);
sql("SELECT paimon_sink.inject_fault('committer_before_prepare', 'error')");
my ($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('u')");
like($err, qr/fault injected at committer_before_prepare/, 'the commit fails before PREPARE');
is(sql("SELECT count(*) FROM kv WHERE id BETWEEN 11 AND 20 OR id BETWEEN 1 AND 5"), '5',
	'nothing of the checkpoint applied');
is(sql("SELECT count(*) FROM paimon_sink.commit('u', NULL, 1000)"), '1',
	'the retry commits the prepared checkpoint');
clean('before PREPARE');

# --- after PREPARE, before COMMIT PREPARED: recovery commits it; a retry skips it
upsert_versions(21, 30, 2, 'in doubt', 'job-d');
sql("SELECT paimon_sink.prepare_commit('u', 'job-d', 1)");
upsert_versions(21, 25, 1, 'in doubt later', 'job-d');
sql("SELECT paimon_sink.prepare_commit('u', 'job-d', 2)");
my $offset = -s $node->logfile;
sql("SELECT paimon_sink.inject_fault('committer_after_prepare', 'panic')");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.commit('u', 'job-d', 2)");
isnt($ret, 0, 'the cluster crashes between PREPARE and COMMIT PREPARED');
ok(back_after_crash($node, 'postgres', $offset), 'back after the crash');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'"),
	'the in-doubt transaction is committed at start');
is(sql("SELECT checkpoint_id || ' ' || newly_committed FROM paimon_sink.commit('u', 'job-d', 2)"),
	'2 true', 'the retry skips checkpoint 1 and commits checkpoint 2 after it');
clean('after PREPARE');

# --- commit(N) lost, commit(N+1) arrives: N then N+1, so N+1's versions win
upsert_versions(31, 40, 1, 'checkpoint one', 'job-l');
sql("SELECT paimon_sink.prepare_commit('u', 'job-l', 1)");
delete_keys(31, 35, 'job-l');
upsert_versions(36, 40, 2, 'checkpoint two', 'job-l');
sql("SELECT paimon_sink.prepare_commit('u', 'job-l', 2)");
is(sql("SELECT count(*) FROM paimon_sink.commit('u', 'job-l', 2)"), '2', 'both committed, in order');
clean('lost commit');

# --- a job restores from M: versions prepared after M are discarded, the replay wins
upsert_versions(41, 50, 1, 'kept', 'job-r');
sql("SELECT paimon_sink.prepare_commit('u', 'job-r', 1)");
sql("BEGIN; SET LOCAL paimon_sink.commit_user = 'job-r';
	INSERT INTO u (id, v, version) SELECT k, 'discarded', 9 FROM generate_series(41, 50) k; COMMIT;");
sql("SELECT paimon_sink.prepare_commit('u', 'job-r', 2)");
is(sql("SELECT recommitted_checkpoints || '/' || discarded_checkpoints FROM paimon_sink.recover('u', 'job-r', 1)"),
	'1/1', 'recover() commits 1 and discards 2');
upsert_versions(41, 45, 1, 'replayed', 'job-r');
sql("SELECT paimon_sink.prepare_commit('u', 'job-r', 2)");
sql("SELECT paimon_sink.commit('u', 'job-r', 2)");
is(sql("SELECT count(*) FROM kv WHERE v = 'discarded'"), '0', 'no discarded version appears');
clean('restore');

# --- a streamed transaction (past handoff_buffer_size) keeps each key's order
sql("BEGIN;
	INSERT INTO u (id, v, version)
	  SELECT k, repeat('x', 40) || n, n FROM generate_series(1, 400) n, generate_series(100, 199) k
	  ORDER BY n, k;
	INSERT INTO expected SELECT k, repeat('x', 40) || 400, 400 FROM generate_series(100, 199) k;
	COMMIT;");
is(sql("SELECT row_count FROM paimon_sink.checkpoint('u')"), '40000', 'all 40000 versions staged');
clean('streamed transaction');

# --- a key inserted into the target by another session while the commit
# runs: the commit waits for it, then updates it (MERGE runs again)
upsert_versions(500, 502, 2, 'sink wins');
my ($in, $direct_out, $direct_err, $ckpt_out, $ckpt_err) = ('', '', '', '', '');
my $direct = IPC::Run::start(
	[ 'psql', '-XAt', '-d', $node->connstr('postgres'), '-c',
	  "BEGIN; INSERT INTO kv VALUES (501, 'direct', 0); SELECT pg_sleep(3); COMMIT;" ],
	'<', \$in, '>', \$direct_out, '2>', \$direct_err);
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE '%pg_sleep(3)%' AND state = 'active' AND pid <> pg_backend_pid()"),
	'another session holds an uncommitted row of key 501');
my $ckpt = IPC::Run::start(
	[ 'psql', '-XAt', '-d', $node->connstr('postgres'), '-c',
	  "SELECT row_count FROM paimon_sink.checkpoint('u')" ],
	'<', \$in, '>', \$ckpt_out, '2>', \$ckpt_err);
$direct->finish;
$ckpt->finish;
is($ckpt_out, "6\n", 'the checkpoint commits once the other session committed');
is($ckpt_err, '', 'without an error');
is(sql("SELECT v FROM kv WHERE id = 501"), 'sink wins-2', 'the sink\'s version of key 501 wins');
clean('concurrent insert of a key');

# --- NULL keys and bad row kinds fail the transaction, which stages nothing
($ret, $out, $err) = try_sql($node, "BEGIN; INSERT INTO u VALUES (300, 'a', 1);
	INSERT INTO u (id, v, version, _row_kind) VALUES (301, 'b', 1, 'X'); COMMIT;");
like($err, qr/22023/, 'an unknown row kind is 22023');
($ret, $out, $err) = try_sql($node, "INSERT INTO u (v, version) VALUES ('no key', 1)");
like($err, qr/23502/, 'a NULL key is 23502');
is(sql("SELECT count(*) FROM paimon_sink.checkpoint('u')"), '0', 'nothing was staged');
clean('bad input');

done_testing();
