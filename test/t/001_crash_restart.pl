# Crash-restart: staged rows of committed transactions survive and go into
# the next checkpoint exactly once; in-doubt prepared transactions of ours
# are committed at committer start, and nobody else's are touched.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(back_after_crash staged_files staged_files_left start_node writers_ready);
use Time::HiRes qw(usleep);

my $node = start_node('crash', 'restart_after_crash = on');

$node->safe_psql('postgres', q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE target (id int PRIMARY KEY, note text);
	SELECT sink_name FROM paimon_sink.create_sink('crash_sink', 'target');
});

my $staged_dir = $node->data_dir . '/pg_paimon_sink';
my ($ret, $stdout, $stderr);

ok(writers_ready($node, 'postgres'), 'writers serve after CREATE EXTENSION');

# committed rows, staged but not checkpointed; rolled-back rows never staged
$node->safe_psql('postgres',
	"INSERT INTO crash_sink SELECT g, 'before crash' FROM generate_series(1, 500) g");
$node->safe_psql('postgres',
	"BEGIN; INSERT INTO crash_sink VALUES (9999, 'rolled back'); ROLLBACK;");
is($node->safe_psql('postgres', 'SELECT count(*) FROM target'), '0',
	'nothing visible before a checkpoint');
ok(staged_files($node) >= 1, 'rows are staged in a file');

# kill -9 a writer: the postmaster crash-restarts the whole cluster
my $writer_pid = $node->safe_psql('postgres',
	'SELECT pid FROM paimon_sink.writers WHERE pid IS NOT NULL LIMIT 1');
kill 'KILL', $writer_pid;
ok($node->poll_query_until('postgres', 'SELECT true', 't'), 'cluster is back after the crash');
ok(writers_ready($node, 'postgres'), 'the launcher brought writers back');
my $log = slurp_file($node->logfile);
like($log, qr/terminated by signal 9/, 'the writer was killed');

$node->safe_psql('postgres',
	"INSERT INTO crash_sink SELECT g, 'after crash' FROM generate_series(501, 600) g");
my $snapshots = $node->safe_psql('postgres',
	"SELECT checkpoint_id || ':' || row_count FROM paimon_sink.checkpoint('crash_sink')");
is($snapshots, '1:600', 'one checkpoint commits the rows from before and after the crash');
is($node->safe_psql('postgres',
	"SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || count(*) FILTER (WHERE note = 'before crash') FROM target"),
	'600 600 500', 'each committed row exactly once, no rolled-back row');
is(staged_files_left($node), 0, 'no staged file is left after the commit');

# the same after an immediate shutdown (no checkpoint record, like a power cut)
$node->safe_psql('postgres',
	"INSERT INTO crash_sink SELECT g, 'before immediate stop' FROM generate_series(601, 700) g");
$node->stop('immediate');
$node->start;
ok(writers_ready($node, 'postgres'), 'writers serve after restart');
is($node->safe_psql('postgres',
	"SELECT row_count FROM paimon_sink.checkpoint('crash_sink')"), '100',
	'staged rows survive an immediate shutdown');
is($node->safe_psql('postgres', 'SELECT count(*) FROM target'), '700', 'all rows once');

# a crash once a checkpoint's REMOVE records are durable (they are written
# right after COMMIT PREPARED, unflushed; here another commit flushes them):
# redo removes the files, and the committed rows stay, once
$node->safe_psql('postgres',
	"INSERT INTO crash_sink SELECT g, 'before removal records' FROM generate_series(701, 750) g");
$node->safe_psql('postgres',
	"SELECT paimon_sink.inject_fault('committer_after_removal_records', 'pause')");
my ($in, $out, $err) = ('', '', '');
my $paused = IPC::Run::start(
	[ 'psql', '-XAt', '-d', $node->connstr('postgres'), '-c',
	  "SELECT row_count FROM paimon_sink.checkpoint('crash_sink')" ],
	'<', \$in, '>', \$out, '2>', \$err);
ok($node->poll_query_until('postgres',
	"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'committer_after_removal_records'"),
	'a checkpoint paused after its COMMIT PREPARED and REMOVE records');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'"), '0',
	'its prepared transaction is committed before any REMOVE record is written');
ok(staged_files($node) >= 1, 'its staged files are still there');
$node->safe_psql('postgres', 'CREATE TABLE flushes_the_wal (); DROP TABLE flushes_the_wal');
$node->stop('immediate');
$paused->finish;
$node->start;
ok(writers_ready($node, 'postgres'), 'writers serve after the crash');
is($node->safe_psql('postgres',
	"SELECT count(*) || ' ' || count(DISTINCT id) FROM target WHERE note = 'before removal records'"),
	'50 50', 'each of its rows once');
is(staged_files_left($node), 0, 'and its files are gone');
is($node->safe_psql('postgres', "SELECT count(*) FROM paimon_sink.checkpoint('crash_sink')"), '0',
	'the next checkpoint finds nothing more to commit');

# files of committed checkpoints are unlinked once a later flush covers
# their REMOVE records, at the latest when the committer has nothing to do
$node->safe_psql('postgres',
	"INSERT INTO crash_sink SELECT g, 'unlinked later' FROM generate_series(751, 760) g");
is($node->safe_psql('postgres', "SELECT row_count FROM paimon_sink.checkpoint('crash_sink')"), '10',
	'a checkpoint commits');
is(staged_files_left($node), 0, 'its files are removed without another request');

# in-doubt transactions: ours are committed at committer start; another
# application's, another database's, and one named like ours for a
# checkpoint that was never prepared (even a superuser's) are not
my $dboid = $node->safe_psql('postgres',
	"SELECT oid FROM pg_database WHERE datname = 'postgres'");
my $sink_id = $node->safe_psql('postgres',
	"SELECT sink_id FROM paimon_sink.sinks WHERE sink_name = 'crash_sink'");
$node->safe_psql('postgres', 'CREATE TABLE marker (what text)');
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE TABLE marker (what text)');
$node->safe_psql('postgres', qq{
	BEGIN;
	INSERT INTO marker VALUES ('named like ours');
	PREPARE TRANSACTION 'paimon_sink:$dboid:$sink_id:77:job-x';
});
$node->safe_psql('postgres', q{
	BEGIN;
	INSERT INTO marker VALUES ('another application');
	PREPARE TRANSACTION 'other_app_gid';
});
$node->safe_psql('other', qq{
	BEGIN;
	INSERT INTO marker VALUES ('another database');
	PREPARE TRANSACTION 'paimon_sink:$dboid:$sink_id:78:job-x';
});
my $crash_offset = -s $node->logfile;
$node->safe_psql('postgres', q{
	INSERT INTO crash_sink (id, note) SELECT g, 'in doubt' FROM generate_series(2001, 2010) g;
	SELECT paimon_sink.inject_fault('committer_after_prepare', 'panic');
});
$node->psql('postgres', "SELECT * FROM paimon_sink.checkpoint('crash_sink')");
ok(back_after_crash($node, 'postgres', $crash_offset),
	'back after a crash between PREPARE and COMMIT PREPARED');
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM paimon_sink.in_doubt WHERE ours"),
	'our in-doubt transaction was committed at committer start');
is($node->safe_psql('postgres', "SELECT count(*) FROM target WHERE note = 'in doubt'"), '10',
	'its work is visible, once');
is($node->safe_psql('postgres', 'SELECT count(*) FROM marker'), '0',
	'the work of the one named like ours is not');
is($node->safe_psql('postgres',
	"SELECT string_agg(gid || '\@' || database, ',' ORDER BY gid) FROM pg_prepared_xacts"),
	"other_app_gid\@postgres,paimon_sink:$dboid:$sink_id:77:job-x\@postgres,paimon_sink:$dboid:$sink_id:78:job-x\@other",
	'other applications\', other databases\' and look-alike prepared transactions are untouched');
is($node->safe_psql('postgres', "SELECT gid || ' ' || ours || ' ' || foreign_reason FROM paimon_sink.in_doubt"),
	"paimon_sink:$dboid:$sink_id:77:job-x false It names checkpoint 77 of commit user \"job-x\", which is neither prepared nor committed.",
	'in_doubt lists the look-alike as foreign, with the reason');
like(slurp_file($node->logfile), qr/committed in-doubt transaction "paimon_sink:$dboid:$sink_id:\d+:[^"]+"/,
	'recovery logs what it committed');
like(slurp_file($node->logfile), qr/leaves prepared transaction "paimon_sink:$dboid:$sink_id:77:job-x" alone: it is not its own/,
	'and what it left alone');
$node->safe_psql('postgres', "ROLLBACK PREPARED 'other_app_gid'");
$node->safe_psql('postgres', "ROLLBACK PREPARED 'paimon_sink:$dboid:$sink_id:77:job-x'");
$node->safe_psql('other', "ROLLBACK PREPARED 'paimon_sink:$dboid:$sink_id:78:job-x'");
$node->safe_psql('postgres', 'SELECT paimon_sink.clear_faults()');

# DROP DATABASE is not blocked by the workers of a database with sinks
$node->safe_psql('other', 'CREATE EXTENSION paimon_sink');
$node->safe_psql('other', "CREATE TABLE t (x int); SELECT sink_name FROM paimon_sink.create_sink('s', 't')");
ok($node->poll_query_until('other', 'SELECT count(*) = 2 FROM paimon_sink.writers WHERE ready'),
	'workers run in the second database');
$node->safe_psql('postgres', 'DROP DATABASE other');
is($node->safe_psql('postgres', "SELECT count(*) FROM pg_database WHERE datname = 'other'"), '0',
	'DROP DATABASE stopped them and went through');

# a staged file deleted by hand: the commit fails naming it, nothing applied
$node->safe_psql('postgres', "SET paimon_sink.commit_user = 'job-m'; INSERT INTO crash_sink VALUES (801, 'lost file'), (802, 'lost file')");
my $file = $node->safe_psql('postgres',
	"SELECT file_name FROM paimon_sink.prepare_commit('crash_sink', 'job-m', 1)");
my @paths = glob("$staged_dir/*/*/$file");
is(scalar(@paths), 1, 'the prepared checkpoint has its staged file');
unlink $paths[0];
($ret, $stdout, $stderr) = $node->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM paimon_sink.commit('crash_sink', 'job-m', 1)");
like($stderr, qr/58P01: staged files of checkpoint 1 of commit user "job-m" are missing/,
	'commit fails with SQLSTATE 58P01');
like($stderr, qr/Missing: .*\Q$file\E/, 'naming the file');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM target WHERE note = 'lost file'") . ' '
	. $node->safe_psql('postgres', "SELECT paimon_sink.last_committed_checkpoint('crash_sink', 'job-m')") . ' '
	. $node->safe_psql('postgres', "SELECT count(*) FROM paimon_sink.pending_checkpoints WHERE commit_user = 'job-m'"),
	'0 0 1', 'nothing applied, the mark unchanged, the checkpoint still prepared');

# drop_sink: the staged files go once the drop committed, not before
$node->safe_psql('postgres', "INSERT INTO crash_sink VALUES (901, 'staged at drop')");
my ($sink_dir) = glob("$staged_dir/*/$sink_id");
ok(-d $sink_dir, 'the sink has a folder of staged files');
$node->safe_psql('postgres', "BEGIN; SELECT paimon_sink.drop_sink('crash_sink', force => true); ROLLBACK;");
sleep 1;
ok(-d $sink_dir, 'a rolled-back drop removes nothing');
# a folder that cannot go yet keeps its cleanup record, and goes later
chmod 0500, $sink_dir;
my $log_offset = -s $node->logfile;
$node->safe_psql('postgres', "SELECT paimon_sink.drop_sink('crash_sink', force => true)");
my $waited = 0;
while (!$node->log_contains(qr/could not remove the staged files of dropped sink $sink_id/,
		$log_offset) && $waited++ < 100)
{
	select(undef, undef, undef, 0.1);
}
ok($node->log_contains(qr/could not remove the staged files of dropped sink $sink_id/, $log_offset),
	'a folder that cannot be removed is warned of');
ok(-d $sink_dir, 'and stays');
is($node->safe_psql('postgres', 'SELECT count(*) FROM paimon_sink.dropped_sink'), '1',
	'and so does its cleanup record');
chmod 0700, $sink_dir;
$waited = 0;
while (-d $sink_dir && $waited++ < 300) { select(undef, undef, undef, 0.1); }
ok(!-d $sink_dir, 'a committed drop removes the staged files');
is($node->safe_psql('postgres', 'SELECT count(*) FROM paimon_sink.dropped_sink'), '0',
	'and its cleanup record');

# a staged file whose header never became durable is left alone, logged,
# and does not keep the writers from starting
$node->safe_psql('postgres', "CREATE TABLE t2 (id int); SELECT sink_name FROM paimon_sink.create_sink('s2', 't2')");
my $s2 = $node->safe_psql('postgres', "SELECT sink_id FROM paimon_sink.sinks WHERE sink_name = 's2'");
$node->safe_psql('postgres', "INSERT INTO s2 VALUES (1)");
my ($s2_dir) = glob("$staged_dir/*/$s2");
my $torn = "$s2_dir/00000000-0000-4000-8000-00000000000a.stage";
PostgreSQL::Test::Utils::append_to_file($torn, '');
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'paimon_sink writer'");
ok(writers_ready($node, 'postgres'), 'writers start again despite a file with no header');
like(slurp_file($node->logfile), qr/staged file ".*00000000-0000-4000-8000-00000000000a\.stage" has an invalid header/,
	'the file is reported');
is($node->safe_psql('postgres', "SELECT row_count FROM paimon_sink.checkpoint('s2')"), '1',
	'the sink goes on committing');
is($node->safe_psql('postgres', "SELECT string_agg(file_name, ',') FROM paimon_sink.remove_orphan_files('s2', '0')"),
	'00000000-0000-4000-8000-00000000000a.stage', 'orphan removal takes it');

# a header a writer was making when it ended (its temporary name carries the
# writer's index): that writer removes it when it starts again, no other does
my @temporary = map { "$s2_dir/00000000-0000-4000-8000-00000000000b.stage.$_.tmp" } (0, 1, 9);
PostgreSQL::Test::Utils::append_to_file($_, 'half a header') for @temporary;
$node->safe_psql('postgres',
	"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'paimon_sink writer'");
$waited = 0;
while ((-e $temporary[0] || -e $temporary[1]) && $waited++ < 100) { usleep(100_000); }
ok(!-e $temporary[0] && !-e $temporary[1], 'writers 0 and 1 remove the temporary files they left');
ok(-e $temporary[2], 'a temporary file of a writer that does not run is left alone');
ok(writers_ready($node, 'postgres'), 'writers serve');
is($node->safe_psql('postgres', "SELECT string_agg(file_name, ',') FROM paimon_sink.remove_orphan_files('s2', '0')"),
	'00000000-0000-4000-8000-00000000000b.stage.9.tmp', 'orphan removal takes that one');

# DROP EXTENSION leaves staged rows of its sinks; a new sink with the same id
# must never take them
$node->safe_psql('postgres', "SET paimon_sink.commit_user = 'old-job'; INSERT INTO s2 VALUES (666)");
$node->safe_psql('postgres', 'DROP EXTENSION paimon_sink CASCADE');
$node->safe_psql('postgres', 'CREATE EXTENSION paimon_sink');
$node->safe_psql('postgres', "CREATE TABLE t3 (id int)");
my $reused = 0;
for my $n (1 .. $s2 + 1)
{
	$node->safe_psql('postgres', "SELECT paimon_sink.drop_sink('s3') FROM paimon_sink.sinks WHERE sink_name = 's3'");
	$node->safe_psql('postgres', "SELECT paimon_sink.create_sink('s3', 't3')");
	$reused = $node->safe_psql('postgres', "SELECT sink_id FROM paimon_sink.sinks WHERE sink_name = 's3'");
	last if $reused == $s2;
}
ok(writers_ready($node, 'postgres'), 'writers serve the re-created extension');
is($reused, $s2, 'the new sink has the id of the dropped one');
$node->safe_psql('postgres', "SELECT paimon_sink.prepare_commit('s3', 'old-job', 1)");
$node->safe_psql('postgres', "SELECT paimon_sink.commit('s3', 'old-job', 1)");
is($node->safe_psql('postgres', 'SELECT count(*) FROM t3'), '0', 'no row of the dropped sink reaches it');

$node->stop;

# without prepared transactions, sinks are refused with a clear error
my $plain = PostgreSQL::Test::Cluster->new('no_prepared');
$plain->init;
$plain->append_conf('postgresql.conf', 'max_prepared_transactions = 0');
$plain->start;
$plain->safe_psql('postgres', 'CREATE EXTENSION paimon_sink; CREATE TABLE t (x int);');
($ret, $stdout, $stderr) = $plain->psql('postgres',
	"\\set VERBOSITY verbose\nSELECT * FROM paimon_sink.create_sink('s', 't')");
like($stderr, qr/55000: paimon_sink needs prepared transactions/, 'create_sink: SQLSTATE 55000');
like($stderr, qr/HINT:  Set max_prepared_transactions/, 'with a hint');
$plain->stop;

done_testing();
