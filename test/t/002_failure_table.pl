# One test per row of the failure table (DESIGN.md section 5), driven by the
# fault-injection points: each checks exact row counts, the snapshot log,
# pg_prepared_xacts (nothing of ours left in doubt) and the staged-file
# folder (no leftovers).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(back_after_crash staged_files staged_files_left start_node try_sql writers_ready);

my $node = start_node('failures', "restart_after_crash = on\nlog_min_messages = log");

sub sql { return $node->safe_psql('postgres', shift); }

# after each row: nothing of ours in doubt, no file left once all is committed
sub clean
{
	my ($label) = @_;
	is(sql("SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'"), '0',
		"$label: nothing in doubt");
	is(sql("SELECT count(*) FROM paimon_sink.pending_checkpoints"), '0',
		"$label: nothing pending");
	is(staged_files_left($node), 0, "$label: no staged file left");
	is(sql("SELECT count(*) FROM (SELECT commit_user, commit_identifier FROM paimon_sink.snapshots
			GROUP BY 1, 2 HAVING count(*) > 1) d"), '0', "$label: one snapshot per identifier");
}

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE target (id int PRIMARY KEY, note text);
	CREATE TABLE ledger (id int PRIMARY KEY);
	SELECT sink_name FROM paimon_sink.create_sink('f', 'target', buckets => 4, bucket_key => '{id}');
});
ok(writers_ready($node, 'postgres'), 'writers serve');

my $next_id = 1;
sub insert_rows
{
	my ($n, $note, $commit_user, $writer_id) = @_;
	my $first = $next_id;
	$next_id += $n;
	my $set = $commit_user ? "SET paimon_sink.commit_user = '$commit_user';" : '';
	$set .= "SET paimon_sink.writer_id = $writer_id;" if defined $writer_id;
	sql("$set BEGIN; INSERT INTO f SELECT g, '$note' FROM generate_series($first, $first + $n - 1) g;
	   INSERT INTO ledger SELECT g FROM generate_series($first, $first + $n - 1) g; COMMIT;");
	return $first;
}

sub count_note { return sql("SELECT count(*) FROM target WHERE note = '$_[0]'"); }

# --- before the barrier of N: a crash loses no committed row, shows no aborted one
insert_rows(50, 'committed before crash');
my $offset = -s $node->logfile;
sql("SELECT paimon_sink.inject_fault('writer_after_receive', 'kill')");
my ($ret, $out, $err) = try_sql($node, "INSERT INTO f SELECT g, 'writer died' FROM generate_series(100001, 100010) g");
isnt($ret, 0, 'a writer killed before its acknowledgement fails the transaction');
ok(back_after_crash($node, 'postgres', $offset), 'cluster and writers are back');
$offset = -s $node->logfile;
sql("SELECT paimon_sink.inject_fault('backend_after_handoff', 'panic')");
($ret, $out, $err) = try_sql($node, "INSERT INTO f SELECT g, 'no commit record' FROM generate_series(100011, 100020) g");
isnt($ret, 0, 'a crash after the hand-off, before the commit record, fails the transaction');
ok(back_after_crash($node, 'postgres', $offset), 'cluster and writers are back after the PANIC');
# burn transaction ids: a reused xid must not make the dead rows look committed
sql("CREATE TABLE burn (x int)");
sql("INSERT INTO burn VALUES (1)") for 1 .. 20;
insert_rows(5, 'committed after crash');
is(sql("SELECT row_count FROM paimon_sink.checkpoint('f')"), '55',
	'the next checkpoint has every committed row and no row of a dead transaction');
is(count_note('writer died') + count_note('no commit record'), 0, 'dead rows never appear');
is(sql("SELECT count(*) FROM target t JOIN ledger l USING (id)") . '/' . sql("SELECT count(*) FROM ledger"),
	'55/55', 'target equals the ledger');
clean('before the barrier');

# --- a barrier cut after one writer sealed: nothing half-prepared
insert_rows(40, 'barrier cut', 'job-b');
sql("SELECT paimon_sink.inject_fault('barrier_after_first_writer', 'fatal')");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.prepare_commit('f', 'job-b', 1)");
like($err, qr/committer stopped while serving/, 'the prepare fails when the committer dies mid-barrier');
is(sql("SELECT count(*) FROM paimon_sink.committable WHERE commit_user = 'job-b'"), '0',
	'no committable of the cut barrier was recorded');
$node->poll_query_until('postgres', "SELECT count(*) = 2 FROM paimon_sink.writers WHERE ready");
is(sql("SELECT sum(row_count) FROM paimon_sink.prepare_commit('f', 'job-b', 1)"), '40',
	'the retry prepares every row once');
is(sql("SELECT row_count FROM paimon_sink.commit('f', 'job-b', 1)"), '40', 'and commits them');
is(count_note('barrier cut'), '40', 'each row once');
clean('barrier cut');

# --- after prepare of N, before commit(N): N stays prepared across a crash
insert_rows(30, 'prepared then crash', 'job-p');
sql("SELECT paimon_sink.prepare_commit('f', 'job-p', 1)");
$node->stop('immediate');
$node->start;
ok(writers_ready($node, 'postgres'), 'back after an immediate stop');
is(sql("SELECT checkpoint_id || ':' || row_count FROM paimon_sink.pending_checkpoints WHERE commit_user = 'job-p'"),
	'1:30', 'checkpoint 1 is still prepared');
is(sql("SELECT row_count || ' ' || newly_committed FROM paimon_sink.commit('f', 'job-p', 1)"), '30 true',
	'commit(1) commits it');
is(sql("SELECT row_count || ' ' || newly_committed FROM paimon_sink.commit('f', 'job-p', 1)"), '30 false',
	'a second commit(1) applies nothing');
is(count_note('prepared then crash'), '30', 'each row once');
clean('after prepare');

# --- inside commit, before PREPARE TRANSACTION: nothing applied, a retry commits once
insert_rows(20, 'before prepare', 'job-c');
sql("SELECT paimon_sink.prepare_commit('f', 'job-c', 1)");
sql("SELECT paimon_sink.inject_fault('committer_before_prepare', 'error')");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.commit('f', 'job-c', 1)");
like($err, qr/fault injected at committer_before_prepare/, 'the commit fails before PREPARE');
is(count_note('before prepare'), '0', 'nothing applied');
is(sql("SELECT paimon_sink.last_committed_checkpoint('f', 'job-c')"), '0', 'the mark did not move');
sql("SELECT paimon_sink.inject_fault('committer_before_prepare', 'fatal')");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.commit('f', 'job-c', 1)");
like($err, qr/committer stopped while serving/, 'the committer dying before PREPARE fails the commit');
is(count_note('before prepare'), '0', 'still nothing applied');
is(sql("SELECT row_count || ' ' || newly_committed FROM paimon_sink.commit('f', 'job-c', 1)"), '20 true',
	'the retry commits N once');
clean('before PREPARE TRANSACTION');

# --- after PREPARE, before COMMIT PREPARED: recovery commits the in-doubt transaction
insert_rows(25, 'in doubt', 'job-d');
sql("SELECT paimon_sink.prepare_commit('f', 'job-d', 1)");
$offset = -s $node->logfile;
sql("SELECT paimon_sink.inject_fault('committer_after_prepare', 'panic')");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.commit('f', 'job-d', 1)");
isnt($ret, 0, 'the cluster crashes between PREPARE and COMMIT PREPARED');
ok(back_after_crash($node, 'postgres', $offset), 'back after the crash');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'"),
	'the committer committed the in-doubt transaction at start');
is(count_note('in doubt'), '25', 'its rows are there once');
is(sql("SELECT row_count || ' ' || newly_committed FROM paimon_sink.commit('f', 'job-d', 1)"), '25 false',
	'a retry of commit(1) skips it');
is(count_note('in doubt'), '25', 'still once');
clean('after PREPARE');

# the same moment, paused: a recover() arriving meanwhile waits its turn
insert_rows(10, 'paused in doubt', 'job-r');
sql("SELECT paimon_sink.prepare_commit('f', 'job-r', 1)");
sql("SELECT paimon_sink.inject_fault('committer_after_prepare', 'pause')");
my ($in, $commit_out, $commit_err) = ('', '', '');
my $commit_run = IPC::Run::start(
	[ 'psql', '-XAt', '-d', $node->connstr('postgres'), '-c',
	  "SELECT row_count || ' ' || newly_committed FROM paimon_sink.commit('f', 'job-r', 1)" ],
	'<', \$in, '>', \$commit_out, '2>', \$commit_err);
ok($node->poll_query_until('postgres',
	"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'committer_after_prepare'"),
	'the commit is paused between PREPARE and COMMIT PREPARED');
is(sql("SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%:job-r~%'"), '1',
	'its transaction is in doubt');
($ret, $out, $err) = $node->psql('postgres', "SET lock_timeout = '10s'; DROP EXTENSION paimon_sink CASCADE");
like($err, qr/cannot drop extension paimon_sink while its transaction "paimon_sink:[^"]*:job-r~[0-9a-f]{16}" is in doubt/,
	'DROP EXTENSION is refused meanwhile, rather than waiting on its locks');
my ($recover_out, $recover_err) = ('', '');
my $recover_run = IPC::Run::start(
	[ 'psql', '-XAt', '-d', $node->connstr('postgres'), '-c',
	  "SELECT last_committed_checkpoint || ' ' || recommitted_checkpoints FROM paimon_sink.recover('f', 'job-r', 1)" ],
	'<', \$in, '>', \$recover_out, '2>', \$recover_err);
sleep 1;
is(count_note('paused in doubt'), '0', 'nothing visible while paused');
sql("SELECT paimon_sink.release_fault('committer_after_prepare')");
$commit_run->finish;
$recover_run->finish;
is($commit_out, "10 true\n", 'the paused commit completes');
is($recover_out, "1 0\n", 'recover() then finds it committed and re-commits nothing');
is(count_note('paused in doubt'), '10', 'rows once');
sql("SELECT paimon_sink.clear_faults()");
clean('recover during an in-doubt commit');

# --- after COMMIT PREPARED, before the reply: a retry returns the snapshot, applies nothing
insert_rows(15, 'reply lost', 'job-e');
sql("SELECT paimon_sink.prepare_commit('f', 'job-e', 1)");
sql("SELECT paimon_sink.inject_fault('committer_after_commit_prepared', 'fatal')");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.commit('f', 'job-e', 1)");
like($err, qr/committer stopped while serving/, 'the reply is lost');
is(count_note('reply lost'), '15', 'the commit happened');
is(sql("SELECT row_count || ' ' || newly_committed FROM paimon_sink.commit('f', 'job-e', 1)"), '15 false',
	'the retry returns the snapshot and applies nothing');
is(count_note('reply lost'), '15', 'once');
clean('after COMMIT PREPARED');

# --- commit(N) lost, commit(N+1) arrives: both, in order
insert_rows(3, 'lost n', 'job-l');
sql("SELECT paimon_sink.prepare_commit('f', 'job-l', 1)");
insert_rows(4, 'lost n+1', 'job-l');
sql("SELECT paimon_sink.prepare_commit('f', 'job-l', 2)");
is(sql("SELECT string_agg(checkpoint_id || ':' || row_count, ',' ORDER BY snapshot_id) FROM paimon_sink.commit('f', 'job-l', 2)"),
	'1:3,2:4', 'commit(2) commits 1 then 2');
clean('commit(N) lost');

# --- a job restores from M below its last prepared checkpoint
insert_rows(6, 'restore m', 'job-m');
sql("SELECT paimon_sink.prepare_commit('f', 'job-m', 1)");
insert_rows(7, 'after m prepared', 'job-m');
sql("SELECT paimon_sink.prepare_commit('f', 'job-m', 2)");
insert_rows(8, 'after m staged', 'job-m');
# every staged file but those of checkpoint 1 goes: checkpoint 2's and the open ones
my $expect_discarded = staged_files($node) - sql("SELECT count(*) FROM paimon_sink.committable
	WHERE commit_user = 'job-m' AND checkpoint_id = 1");
ok($expect_discarded > sql("SELECT count(*) FROM paimon_sink.committable
	WHERE commit_user = 'job-m' AND checkpoint_id = 2"), 'open files are staged too');
is(sql("SELECT last_committed_checkpoint || ' ' || recommitted_checkpoints || ' ' || discarded_checkpoints || ' ' || discarded_files
		FROM paimon_sink.recover('f', 'job-m', 1)"),
	"1 1 1 $expect_discarded", 'recover(1): checkpoint 1 re-committed, checkpoint 2 and the staged rows discarded, every file counted');
is(count_note('restore m') . ' ' . count_note('after m prepared') . ' ' . count_note('after m staged'),
	'6 0 0', 'only checkpoint 1 is in the target');
is(staged_files_left($node), 0, 'the discarded files are removed');
# the job replays its source from checkpoint 1 and commits it as checkpoint 2
sql("DELETE FROM ledger WHERE id IN (SELECT l.id FROM ledger l LEFT JOIN target t USING (id) WHERE t.id IS NULL)");
insert_rows(15, 'replayed', 'job-m');
sql("SELECT paimon_sink.prepare_commit('f', 'job-m', 2)");
is(sql("SELECT row_count FROM paimon_sink.commit('f', 'job-m', 2)"), '15', 'the replay commits once');
is(sql("SELECT count(*) FROM target t JOIN ledger l USING (id)") . '/' . sql("SELECT count(*) FROM ledger")
	. '/' . sql("SELECT count(*) FROM target"),
	join('/', (sql("SELECT count(*) FROM ledger")) x 3), 'target equals the ledger after the restore');
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.recover('f', 'job-m', 2, 'restore_and_fail')");
is($ret, 0, 'restore_and_fail with nothing to re-commit succeeds');
insert_rows(2, 'and fail', 'job-m');
sql("SELECT paimon_sink.prepare_commit('f', 'job-m', 3)");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.recover('f', 'job-m', 3, 'restore_and_fail')");
like($err, qr/55000: recovery committed checkpoints 3 to 3 of commit user "job-m"; restart the job/,
	'restore_and_fail raises after re-committing');
is(count_note('and fail'), '2', 'the re-commit happened');
clean('restore below last prepared');

# --- a job restores from M below its last committed checkpoint: reported, nothing doubled
my $before = sql("SELECT count(*) FROM target");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.recover('f', 'job-m', 1)");
like($err, qr/22023: stale restore: checkpoint 1 is below the last committed checkpoint 3/,
	'a stale restore is reported');
is(sql("SELECT count(*) FROM target"), $before, 'nothing doubled or removed');
is(sql("SELECT paimon_sink.last_committed_checkpoint('f', 'job-m')"), '3', 'the mark stands');
clean('stale restore');

# --- a transaction of the failed attempt commits after recover(): fenced off, never doubled
insert_rows(5, 'zombie base', 'job-z');
sql("SELECT paimon_sink.prepare_commit('f', 'job-z', 1)");
my $zombie = $node->background_psql('postgres', on_error_stop => 0);
$zombie->query_safe("SET paimon_sink.commit_user = 'job-z'");
$zombie->query_safe("BEGIN");
$zombie->query_safe("INSERT INTO f SELECT g, 'zombie' FROM generate_series(200001, 200010) g");
my $inflight = $node->background_psql('postgres', on_error_stop => 0);
$inflight->query_safe("SET paimon_sink.commit_user = 'job-z'");
$inflight->query_safe("INSERT INTO f SELECT g, 'handed off' FROM generate_series(200101, 200104) g");
is(sql("SELECT last_committed_checkpoint || ' ' || recommitted_checkpoints FROM paimon_sink.recover('f', 'job-z', 1)"),
	'1 1', 'the job restores from checkpoint 1 while a transaction of the failed attempt is open');
$zombie->query_safe("COMMIT");
is(sql("SELECT fence_epoch FROM paimon_sink.commit_user_state WHERE commit_user = 'job-z'"), '1',
	'recover() raised the fence epoch');
$zombie->query("INSERT INTO f VALUES (200011, 'zombie')");
like($zombie->{stderr}, qr/commit user "job-z" of sink "f" was recovered after this session began writing/,
	'a session of the failed attempt is refused from then on');
$zombie->{stderr} = '';    # this psql wrapper keeps a failed query's stderr
$inflight->query("INSERT INTO f VALUES (200105, 'handed off')");
like($inflight->{stderr}, qr/was recovered after this session began writing/, 'every such session');
$inflight->{stderr} = '';
$inflight->query_safe("SET paimon_sink.commit_user = 'job-z'");
$inflight->query_safe("INSERT INTO f SELECT g, 'rejoined' FROM generate_series(200201, 200203) g");
$zombie->quit;
$inflight->quit;
insert_rows(6, 'zombie replay', 'job-z');
sql("SELECT paimon_sink.prepare_commit('f', 'job-z', 2)");
is(sql("SELECT row_count FROM paimon_sink.commit('f', 'job-z', 2)"), '9',
	'checkpoint 2 holds the replay and the rejoined session, not the fenced rows');
is(count_note('zombie') . ' ' . count_note('handed off') . ' ' . count_note('rejoined') . ' '
	. count_note('zombie replay'), '0 0 3 6', 'rows written before recover() never appear');
ok($node->log_contains(qr/paimon_sink left out \d+ rows of commit user "job-z"/),
	'the writer logs the rows it left out');
clean('a transaction of the failed attempt commits after recover()');

# --- a staged file deleted by hand: the commit fails naming it, nothing
# applied, and its hint names the way forward; discard_missing_files() goes
# on without the file (its rows lost, and said so), for the sink's own commit
# user (which recover() refuses) as for a job's; the rest commits once
my $staged_dir = $node->data_dir . '/pg_paimon_sink';
# remove_staged(WHERE): deletes by hand the files of the pending committables
# WHERE picks; returns their rows and "checkpoint:file:rows" of each, sorted
sub remove_staged
{
	my ($where) = @_;
	my ($rows, @removed) = (0);
	for my $line (split /\n/, sql("SELECT checkpoint_id || ':' || file_name || ':' || row_count
			FROM paimon_sink.committable WHERE snapshot_id IS NULL AND $where
			ORDER BY checkpoint_id, file_name"))
	{
		my (undef, $file, $count) = split /:/, $line;
		my @paths = glob("$staged_dir/*/*/$file");
		die "no staged file $file" unless @paths == 1;
		unlink $paths[0] or die "cannot remove $paths[0]: $!";
		$rows += $count;
		push @removed, $line;
	}
	return ($rows, @removed);
}
sub pending_files
{
	return sql("SELECT string_agg(commit_user || ':' || checkpoint_id || ':' || file_name, ',' ORDER BY 1)
		FROM paimon_sink.committable WHERE snapshot_id IS NULL");
}
# target_matches_ledger(FROM): the ids from FROM on in the target, each once, are the ledger's
sub target_matches_ledger
{
	my ($from) = @_;
	my $range = "id >= $from AND id < $next_id";
	return sql("SELECT count(*) FROM target t JOIN ledger l USING (id) WHERE $range") . '/'
	  . sql("SELECT count(*) FROM ledger WHERE $range") . '/'
	  . sql("SELECT count(*) || '/' || count(DISTINCT id) FROM target WHERE $range");
}
my $own = sql("SELECT default_commit_user FROM paimon_sink.sinks WHERE sink_name = 'f'");

# the sink's own commit user: SQL sessions' rows, a checkpoint left prepared
my $own_first = insert_rows(20, 'own kept');
my $own_lost = insert_rows(12, 'own lost', undef, 7);
sql("SELECT paimon_sink.inject_fault('committer_before_prepare', 'error')");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('f')");
like($err, qr/fault injected at committer_before_prepare/, 'a checkpoint() whose commit fails leaves its checkpoint prepared');
my $own_ckpt = sql("SELECT checkpoint_id FROM paimon_sink.pending_checkpoints WHERE commit_user = '$own'");
like($own_ckpt, qr/^\d+$/, "the own commit user's checkpoint $own_ckpt is pending");
my ($own_lost_rows, @own_removed) = remove_staged("commit_user = '$own' AND writer_id = 7");
is($own_lost_rows, 12, 'the files deleted by hand held the 12 rows of writer id 7');
insert_rows(5, 'own later');
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('f')");
like($err, qr/58P01: staged files of checkpoint $own_ckpt of commit user "$own" are missing/,
	'checkpoint() fails with 58P01');
my (undef, $first_lost_file) = split /:/, $own_removed[0];
like($err, qr/DETAIL:  Missing: [^\n]*\Q$first_lost_file\E/, 'naming the missing files');
like($err, qr/HINT:  Restore the files and commit again; or call paimon_sink\.discard_missing_files\('f'\) to commit the rest without them \(their rows are lost\)\.\n/,
	'its hint names the way forward for the sink\'s own commit user, which recover() refuses');
is(count_note('own kept') + count_note('own later'), 0, 'nothing applied');
my $pending = pending_files();
my $staged = staged_files($node);

# refused, changing nothing: another role, an unknown sink, a transaction block
sql("CREATE ROLE outsider LOGIN");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.discard_missing_files('f')", 'outsider');
like($err, qr/ERROR:  42501: /, 'discard_missing_files() refuses a role that is not the sink\'s owner (42501)');
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.discard_missing_files('no_such_sink')");
like($err, qr/ERROR:  42704: /, 'and an unknown sink (42704)');
($ret, $out, $err) = try_sql($node, "BEGIN; SELECT * FROM paimon_sink.discard_missing_files('f')");
like($err, qr/ERROR:  25001: /, 'and a transaction block (25001)');
is(pending_files(), $pending, 'the refusals changed nothing');

($ret, $out, $err) = try_sql($node, "SELECT checkpoint_id || ':' || file_name || ':' || row_count
	FROM paimon_sink.discard_missing_files('f')");
is($out, join("\n", @own_removed), 'discard_missing_files() returns each missing file with its rows');
my $files = scalar(@own_removed);
like($err, qr/WARNING:  01000: discarded $files missing staged files? of commit user "$own" of sink "f": (its|their) 12 rows are lost\nDETAIL:  Pending checkpoints affected: 1\./,
	'and warns with the totals');
ok($node->log_contains(qr/paimon_sink discarded $files missing staged files? of commit user "$own" of sink "f": 12 rows lost\n[^\n]*DETAIL:  Pending checkpoints affected: 1\. Missing: [^\n]*\Q$first_lost_file\E/),
	'and logs them');
is(staged_files($node), $staged, 'no staged file was touched');
($ret, $out, $err) = try_sql($node, "SELECT count(*) FROM paimon_sink.discard_missing_files('f')");
is($out . ' ' . ($err =~ /WARNING/ ? 'warned' : 'quiet'), '0 quiet', 'a second call finds nothing missing');
is(sql("SELECT string_agg(checkpoint_id || ':' || row_count, ',' ORDER BY checkpoint_id) FROM paimon_sink.checkpoint('f')"),
	"$own_ckpt:20," . ($own_ckpt + 1) . ':5', 'the next checkpoint() commits the rest, and what was written since');
is(count_note('own kept') . ' ' . count_note('own lost') . ' ' . count_note('own later'), '20 0 5',
	'the rows of existing files once, none of the deleted ones');
sql("DELETE FROM ledger WHERE id BETWEEN $own_lost AND $own_lost + 11");
is(target_matches_ledger($own_first), '25/25/25/25', 'target equals the ledger, less the lost rows');
insert_rows(3, 'own after');
is(sql("SELECT row_count FROM paimon_sink.checkpoint('f')"), '3', 'later writes and checkpoints work');
clean('staged file deleted by hand, own commit user');

# a job's commit user: one checkpoint loses some files, the next all of its own
my $job_first = insert_rows(8, 'job kept', 'job-h');
my $job_lost = insert_rows(6, 'job lost', 'job-h', 3);
sql("SELECT count(*) FROM paimon_sink.prepare_commit('f', 'job-h', 1)");
my $job_lost2 = insert_rows(4, 'job lost', 'job-h', 3);
sql("SELECT count(*) FROM paimon_sink.prepare_commit('f', 'job-h', 2)");
$pending = pending_files();
($ret, $out, $err) = try_sql($node, "SELECT count(*) FROM paimon_sink.discard_missing_files('f', 'job-h')");
is($out . ' ' . ($err =~ /WARNING/ ? 'warned' : 'quiet'), '0 quiet', 'with no file missing, discard_missing_files() returns nothing');
is(pending_files(), $pending, 'and changes nothing');
my ($job_lost_rows, @job_removed) = remove_staged("commit_user = 'job-h' AND writer_id = 3");
is($job_lost_rows, 10, 'the files deleted by hand held the 10 rows of writer id 3');
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.commit('f', 'job-h', 2)");
like($err, qr/58P01: staged files of checkpoint 1 of commit user "job-h" are missing/, 'commit() fails with 58P01');
like($err, qr/HINT:  Restore the files and commit again; or call paimon_sink\.discard_missing_files\('f', 'job-h'\) to commit the rest without them \(their rows are lost\); or restore the job from an earlier checkpoint with paimon_sink\.recover\(\)\./,
	'its hint names the ways forward of a job');
is(count_note('job kept'), '0', 'nothing applied');
($ret, $out, $err) = try_sql($node, "SELECT checkpoint_id || ':' || file_name || ':' || row_count
	FROM paimon_sink.discard_missing_files('f', 'job-h')");
is($out, join("\n", @job_removed), 'discard_missing_files() returns the missing files of both checkpoints');
like($err, qr/discarded ${\ scalar(@job_removed)} missing staged files? of commit user "job-h" of sink "f": (its|their) 10 rows are lost\nDETAIL:  Pending checkpoints affected: 2\./,
	'and warns with the totals');
is(sql("SELECT string_agg(checkpoint_id::text, ',') FROM paimon_sink.pending_checkpoints WHERE commit_user = 'job-h'"),
	'1', 'checkpoint 2, left with no file, is no longer pending');
is(sql("SELECT string_agg(checkpoint_id || ':' || row_count || ':' || newly_committed, ',') FROM paimon_sink.commit('f', 'job-h', 2)"),
	'1:8:true,2:0:true', 'commit(2) commits what checkpoint 1 kept, and answers for the empty 2');
is(sql("SELECT paimon_sink.last_committed_checkpoint('f', 'job-h')"), '2',
	'and moves the mark over the empty checkpoint 2');
is(count_note('job kept') . ' ' . count_note('job lost'), '8 0', 'the kept rows once, the lost ones never');
insert_rows(4, 'job after', 'job-h');
sql("SELECT count(*) FROM paimon_sink.prepare_commit('f', 'job-h', 3)");
is(sql("SELECT checkpoint_id || ':' || row_count FROM paimon_sink.commit('f', 'job-h', 3)"), '3:4',
	'the job goes on with checkpoint 3');
sql("DELETE FROM ledger WHERE id BETWEEN $job_lost AND $job_lost + 5 OR id BETWEEN $job_lost2 AND $job_lost2 + 3");
is(target_matches_ledger($job_first), '12/12/12/12', 'target equals the ledger, less the lost rows');
clean('staged file deleted by hand, a job\'s commit user');

# --- end of input: committed at once; a later prepare is an error, never a skip
insert_rows(9, 'bounded', 'job-x');
is(sql("SELECT row_count || ' ' || (checkpoint_id = 9223372036854775807) FROM paimon_sink.end_input('f', 'job-x')"),
	'9 true', 'end_input commits the last checkpoint');
($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'job-x'; INSERT INTO f VALUES (999999, 'too late')");
like($err, qr/55000: commit user "job-x" of sink "f" has ended its input/,
	'a row written after the end of input is refused');
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.prepare_commit('f', 'job-x', 5)");
like($err, qr/55000: commit user "job-x" has ended its input/, 'a prepare after the end of input fails');

# --- orphan files: only files nobody refers to, older than the cut-off
# The live file is the one job-y's insert creates: files staged before it
# (of the checkpoint end_input committed, or of the refused insert) may still
# be on disk, waiting for the flush that lets their writer remove them, and
# would vanish under the test.
my %staged_before = map { $_ => 1 } glob($node->data_dir . '/pg_paimon_sink/*/*/*.stage');
insert_rows(1, 'staged, open', 'job-y');
my @new_files = grep { !$staged_before{$_} } glob($node->data_dir . '/pg_paimon_sink/*/*/*.stage');
is(scalar(@new_files), 1, 'a live staged file exists (an open stream)');
my $some_file = $new_files[0];
(my $orphan = $some_file) =~ s{[^/]+\.stage$}{00000000-0000-4000-8000-000000000001.stage};
PostgreSQL::Test::Utils::append_to_file($orphan, 'not a staged file of any stream');
utime(time - 7200, time - 7200, $orphan);
utime(time - 7200, time - 7200, $some_file);
is(sql("SELECT string_agg(file_name || ' ' || removed, ',') FROM paimon_sink.remove_orphan_files('f', '1 hour', true)"),
	'00000000-0000-4000-8000-000000000001.stage false', 'a dry run lists only the orphan');
ok(-e $orphan, 'a dry run removes nothing');
is(sql("SELECT count(*) FROM paimon_sink.remove_orphan_files('f', '3 hours')"), '0',
	'a younger orphan is kept');
is(sql("SELECT string_agg(file_name || ' ' || removed, ',') FROM paimon_sink.remove_orphan_files('f', '1 hour')"),
	'00000000-0000-4000-8000-000000000001.stage true', 'the orphan is removed');
ok(!-e $orphan && -e $some_file, 'the live file of the open stream stays');
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.remove_orphan_files('f', '-1 hour')");
like($err, qr/22023: older_than must not be negative/, 'a cut-off in the future is refused');

# --- a writer dies after a barrier request, before it answers: the request
# fails (the committer once waited for it forever, stalling every sink of
# the database), the writer comes back, the rows of the dying hand-off never
# appear and the next checkpoint works
sql("SELECT paimon_sink.inject_fault('writer_after_receive', 'pause')");
my $stuck = $node->background_psql('postgres', on_error_stop => 0);
$stuck->query_until(qr/sent/, "\\echo sent\nINSERT INTO f VALUES (900001, 'hand-off of a dying writer');\n");
ok($node->poll_query_until('postgres',
	"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'writer_after_receive'"),
	'a writer pauses before acknowledging a hand-off');
my $barrier = $node->background_psql('postgres', on_error_stop => 0);
$barrier->query_until(qr/sent/, "\\echo sent\nSELECT * FROM paimon_sink.checkpoint('f');\n");
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE '%paimon_sink.checkpoint(''f'')%' AND state = 'active' AND pid <> pg_backend_pid()"),
	'a checkpoint waits for the paused writer');
sql("SELECT pg_terminate_backend(paused_pid) FROM paimon_sink.faults WHERE point = 'writer_after_receive'");
sql("SELECT paimon_sink.clear_faults()");
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_stat_activity WHERE query LIKE '%paimon_sink.checkpoint(''f'')%' AND state = 'active' AND pid <> pg_backend_pid()"),
	'the checkpoint request ends once the writer is gone');
$barrier->quit;
$stuck->quit;
ok(writers_ready($node, 'postgres'), 'the writer is back');
sql("SELECT * FROM paimon_sink.checkpoint('f')");
is(sql("SELECT count(*) FROM target WHERE id = 900001"), '0', 'the dying hand-off left no row');
insert_rows(5, 'after the dying writer');
sql("SELECT * FROM paimon_sink.checkpoint('f')");
is(count_note('after the dying writer'), '5', 'the next checkpoint commits');

# --- a writer that dies while a request waits to send it the barrier is
#     started again by that request (it used to wait out handoff_timeout)
insert_rows(7, 'writer died before the barrier');
my $holder = $node->background_psql('postgres', on_error_stop => 0);
$holder->query_safe("BEGIN");
$holder->query_safe("SELECT 1 FROM paimon_sink.commit_user_state c JOIN paimon_sink.sinks s USING (sink_id)
	WHERE s.sink_name = 'f' AND c.commit_user = s.default_commit_user FOR UPDATE OF c");
my ($waiting_in, $waiting_out, $waiting_err) = ('', '', '');
my $waiting_timer = IPC::Run::timeout(180);
my $waiting = IPC::Run::start(
	[ 'psql', '-XAt', '-d', $node->connstr('postgres'), '-c',
	  "SELECT row_count FROM paimon_sink.checkpoint('f')" ],
	'<', \$waiting_in, '>', \$waiting_out, '2>', \$waiting_err, $waiting_timer);
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'paimon_sink committer' AND wait_event_type = 'Lock'"),
	'the checkpoint waits for the commit user, before its barrier');
sql("SELECT pg_terminate_backend(pid, 30000) FROM paimon_sink.writers WHERE writer = 1");
$holder->query_safe("COMMIT");
$holder->quit;
$waiting->finish;
is($waiting_out, "7\n", 'the request starts the writer again and commits') or diag($waiting_err);
is(count_note('writer died before the barrier'), '7', 'rows once');

# --- fault points are a superuser's
sql("CREATE ROLE plain LOGIN");
($ret, $out, $err) = $node->psql('postgres', "SET ROLE plain; SELECT paimon_sink.inject_fault('writer_after_ack', 'error')");
like($err, qr/permission denied/, 'a plain role cannot arm faults');
is(sql("SELECT count(*) FROM paimon_sink.faults WHERE action <> 'none' AND remaining <> 0"), '0',
	'no fault left armed');

$node->stop;
done_testing();
