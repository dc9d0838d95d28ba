# Maintenance after commits: 10,000 small checkpoints leave the staged-file
# folder and the snapshot table bounded under the retention settings;
# expire_snapshots() keeps every commit user's last snapshot and high-water
# mark, and an upsert sink's sequence numbers; a failed maintenance never
# fails the commit that triggered it and is reported with the next one.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(staged_files start_node);

my $node = start_node('maintenance', "log_min_messages = log\npaimon_sink.snapshots_retained = 20\npaimon_sink.snapshot_retention = 0");

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE small (id int PRIMARY KEY);
	SELECT sink_name FROM paimon_sink.create_sink('small_sink', 'small', buckets => 2, bucket_key => '{id}');
});
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 2 FROM paimon_sink.writers WHERE ready"), 'writers serve');

# --- 10,000 small checkpoints, in rounds of 1,000; bounds checked after each
my ($most_snapshots, $most_committables, $most_files) = (0, 0, 0);
for my $round (0 .. 9)
{
	my $script = '';
	for my $i (1 .. 1000)
	{
		my $id = $round * 1000 + $i;
		$script .= "INSERT INTO small_sink VALUES ($id);\nSELECT 1 FROM paimon_sink.checkpoint('small_sink');\n";
	}
	$node->safe_psql('postgres', $script);
	my $snapshots = sql("SELECT count(*) FROM paimon_sink.snapshot_log");
	my $committables = sql("SELECT count(*) FROM paimon_sink.committable");
	my $files = staged_files($node);
	$most_snapshots = $snapshots if $snapshots > $most_snapshots;
	$most_committables = $committables if $committables > $most_committables;
	$most_files = $files if $files > $most_files;
	# the committer expires when idle, or every 64 commits: once idle, the 20 newest are left
	ok($node->poll_query_until('postgres', "SELECT count(*) = 20 FROM paimon_sink.snapshot_log"),
		"round $round: the expiry catches up once the committer is idle");
}
is(sql("SELECT count(*) || ' ' || count(DISTINCT id) FROM small"), '10000 10000',
	'10,000 checkpoints committed every row once');
is(sql("SELECT last_committed_checkpoint FROM paimon_sink.sinks WHERE sink_name = 'small_sink'"),
	'10000', 'the high-water mark is the 10,000th checkpoint');
# expiry runs at most 64 commits (or a second) after a commit, off the commit path
cmp_ok($most_snapshots, '<=', 20 + 64 + 1, "the snapshot table stayed bounded (at most $most_snapshots rows)");
cmp_ok($most_committables, '<=', 2 * (20 + 64 + 1), "committables too (at most $most_committables rows)");
cmp_ok($most_files, '<=', 2, "and the staged-file folder (at most $most_files files)");
is(sql("SELECT max(snapshot_id) FROM paimon_sink.snapshot_log"), '10000',
	'snapshot ids keep counting after expiry');

# --- expire_snapshots(): a commit user's last snapshot and its mark stay
sql("SET paimon_sink.commit_user = 'job-a'; INSERT INTO small_sink VALUES (20001);");
sql("SELECT paimon_sink.prepare_commit('small_sink', 'job-a', 7)");
sql("SELECT paimon_sink.commit('small_sink', 'job-a', 7)");
sql("INSERT INTO small_sink VALUES (20002)");
sql("SELECT paimon_sink.checkpoint('small_sink')");
# the committer's own expiry is done with them first: nothing changes under the call below
ok($node->poll_query_until('postgres', "SELECT count(*) = 20 FROM paimon_sink.snapshot_log"),
	'the committer expired what its settings allow');
my $before = sql("SELECT count(*) FROM paimon_sink.snapshot_log");
is(sql("SELECT paimon_sink.expire_snapshots('small_sink', 1, '0')"), $before - 2,
	'expire_snapshots keeps the newest and each commit user\'s last');
is(sql("SELECT string_agg(commit_user, ',' ORDER BY commit_user = 'job-a') FROM paimon_sink.snapshots"),
	sql("SELECT default_commit_user FROM paimon_sink.sinks") . ',job-a', 'both commit users keep their last');
is(sql("SELECT paimon_sink.last_committed_checkpoint('small_sink', 'job-a')"), '7',
	'the high-water mark never goes');
is(sql("SELECT newly_committed FROM paimon_sink.commit('small_sink', 'job-a', 7)"), 'f',
	'a retried commit of an old checkpoint is still skipped');
my ($ret, $out, $err) = $node->psql('postgres', "SELECT paimon_sink.expire_snapshots('small_sink', 0, '0')");
like($err, qr/retain_last must be at least 1/, 'retain_last below 1 is refused');

# --- an upsert sink's sequence numbers survive the expiry of their committables
sql(q{
	CREATE TABLE kv (id int PRIMARY KEY, v text);
	SELECT sink_name FROM paimon_sink.create_sink('kv_sink', 'kv', mode => 'upsert', buckets => 4);
	INSERT INTO kv_sink SELECT 1, 'v' || g FROM generate_series(1, 300) g;
	SELECT paimon_sink.checkpoint('kv_sink');
	INSERT INTO kv_sink VALUES (2, 'x');
	SELECT paimon_sink.checkpoint('kv_sink');
});
my $high = sql("SELECT max(max_sequence) FROM paimon_sink.committable c JOIN paimon_sink.sinks s USING (sink_id) WHERE s.sink_name = 'kv_sink'");
sql("SELECT paimon_sink.expire_snapshots('kv_sink', 1, '0')");
is(sql("SELECT count(*) FROM paimon_sink.bucket_sequence b JOIN paimon_sink.sinks s USING (sink_id) WHERE s.sink_name = 'kv_sink'"),
	'1', 'the expired committable leaves its highest sequence number');
is(sql("SELECT max(m) FROM (SELECT max_sequence m, sink_id FROM paimon_sink.bucket_sequence UNION ALL
		SELECT max_sequence, sink_id FROM paimon_sink.committable) x JOIN paimon_sink.sinks s USING (sink_id)
		WHERE s.sink_name = 'kv_sink'"), $high, 'no sequence number is forgotten');
sql("SELECT pg_terminate_backend(pid) FROM paimon_sink.writers");
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 2 FROM paimon_sink.writers WHERE ready"), 'writers restarted');
sql("INSERT INTO kv_sink VALUES (1, 'after restart'); SELECT paimon_sink.checkpoint('kv_sink');");
cmp_ok(sql("SELECT max(max_sequence) FROM paimon_sink.committable c JOIN paimon_sink.sinks s USING (sink_id) WHERE s.sink_name = 'kv_sink'"),
	'>', $high, 'a restarted writer continues above them');

# --- a failed maintenance does not fail its commit; the next commit reports it
# (the expiry runs off the commit path, for any sink that committed lately:
# the failure is the sink's the log names, and its next commit reports it)
my $log_offset = -s $node->logfile;
sql("SELECT paimon_sink.inject_fault('committer_maintenance', 'error')");
sql("INSERT INTO small_sink VALUES (30001)");
my $first_err;
($ret, $out, $first_err) =
  $node->psql('postgres', "SELECT row_count FROM paimon_sink.checkpoint('small_sink')");
is($ret . ' ' . $out, '0 1', 'the commit before the failed maintenance succeeds');
ok($node->wait_for_log(qr/maintenance after a commit of sink \d+ failed: fault injected/, $log_offset),
	'the failure is logged');
my ($failed_id) = substr(slurp_file($node->logfile), $log_offset)
  =~ /maintenance after a commit of sink (\d+) failed: fault injected/;
my $failed = sql("SELECT sink_name FROM paimon_sink.sinks WHERE sink_id = $failed_id");
my %row = (small_sink => '30002', kv_sink => "30002, 'w'");
($ret, $out, $err) = $node->psql('postgres',
	"INSERT INTO $failed VALUES ($row{$failed}); SELECT row_count FROM paimon_sink.checkpoint('$failed')");
is($ret . ' ' . $out, '0 1', 'the next commit of that sink succeeds');
# the maintenance of an earlier commit may fail before small_sink's commit
# above: then that commit was the sink's next one, and reported it
my $warning = qr/WARNING:  paimon_sink maintenance after a commit of sink $failed_id failed/;
ok($err =~ $warning || ($failed eq 'small_sink' && $first_err =~ $warning),
	'and the sink\'s next commit reports the failure as a warning')
  or diag("first commit: $first_err; next commit: $err");
$row{small_sink} = '30003';
$row{kv_sink} = "30003, 'w'";
($ret, $out, $err) = $node->psql('postgres',
	"INSERT INTO $failed VALUES ($row{$failed}); SELECT row_count FROM paimon_sink.checkpoint('$failed')");
is($err, '', 'once');

# --- a commit in progress shows in commit_progress, as COPY's in pg_stat_progress_copy
is(sql("SELECT count(*) FROM paimon_sink.commit_progress"), '0', 'no commit in progress');
sql("INSERT INTO small_sink SELECT g FROM generate_series(50001, 52000) g");
sql("SELECT paimon_sink.inject_fault('committer_before_prepare', 'pause')");
my ($in, $ckpt_out, $ckpt_err) = ('', '', '');
my $ckpt = IPC::Run::start(
	[ 'psql', '-XAt', '-d', $node->connstr('postgres'), '-c',
	  "SELECT row_count FROM paimon_sink.checkpoint('small_sink')" ],
	'<', \$in, '>', \$ckpt_out, '2>', \$ckpt_err);
ok($node->poll_query_until('postgres',
	"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'committer_before_prepare'"),
	'a commit paused after its load');
is(sql("SELECT sink_name || ' ' || phase || ' ' || files_done || '/' || files_total || ' ' || rows_done || '/' || rows_total
	FROM paimon_sink.commit_progress"), 'small_sink preparing 2/2 2000/2000',
	'commit_progress shows its sink, phase, files and rows');
sql("SELECT paimon_sink.release_fault('committer_before_prepare')");
$ckpt->finish;
is($ckpt_out, "2000\n", 'the commit completes');
is(sql("SELECT count(*) FROM paimon_sink.commit_progress"), '0', 'and leaves the view');
sql("SELECT paimon_sink.clear_faults()");

# --- orphan files are removed on a schedule; files a writer holds are not
sql("INSERT INTO small_sink VALUES (40001)");	# staged, held by its writer
my ($dir) = glob($node->data_dir . '/pg_paimon_sink/*/1');
my $orphan = "$dir/0a0b0c0d-0000-4000-8000-000000000001.stage";
open(my $fh, '>', $orphan) or die "cannot create $orphan: $!";
print $fh "left by a crash long ago";
close $fh;
is(staged_files($node), 2, 'an orphan file next to a held one');
$node->append_conf('postgresql.conf', "paimon_sink.orphan_removal_interval = '1s'\npaimon_sink.orphan_file_age = 0");
$node->reload;
ok($node->poll_query_until('postgres', "SELECT (pg_stat_file('" . $orphan . "', true)).size IS NULL"),
	'the scheduled removal takes the orphan');
is(staged_files($node), 1, 'and leaves the file a writer holds');
is(sql("SELECT row_count FROM paimon_sink.checkpoint('small_sink')"), '1', 'whose row commits');

done_testing();
