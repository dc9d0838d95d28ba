# A large checkpoint's loader does not hold up the other sinks (issue 16,
# item 5): while sink a's big checkpoint is held in its loader (paused
# before its PREPARE; by default one loader loads a large checkpoint
# whole, in the checkpoint's own transaction), sink b's checkpoint() calls complete and sink c's
# periodic checkpoints go on; a's own checkpoint(), a job's commit() of
# several checkpoints of a, a recover() of a, and a checkpoint() of sink d
# (into a's target) wait, then answer correctly once the loader is done.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(background_sql writers_ready);

my $node = PostgreSQL::Test::Cluster->new('hol');
$node->init;
$node->append_conf('postgresql.conf',
	"paimon_sink.parallel_load_rows = 1000\nmax_connections = 40\nshared_buffers = 16MB");
$node->start;

sub sql { return $node->safe_psql('postgres', $_[0], timeout => 120); }

sql(q{CREATE EXTENSION paimon_sink;
	CREATE TABLE ta (id bigint, note text);
	CREATE TABLE tb (id bigint);
	CREATE TABLE tc (id bigint);
	SELECT sink_name FROM paimon_sink.create_sink('a', 'ta');
	SELECT sink_name FROM paimon_sink.create_sink('b', 'tb');
	SELECT sink_name FROM paimon_sink.create_sink('c', 'tc', checkpoint_interval => '200 ms');
	SELECT sink_name FROM paimon_sink.create_sink('d', 'ta');});
ok(writers_ready($node, 'postgres'), 'writers serve');

# finish(RUN): waits for a background psql to end; returns its output.
sub finish
{
	my ($run) = @_;
	eval { $run->{harness}->finish; };
	return $run->{out} . $run->{err};
}

# waiting(PATTERN, N): waits until N sessions run a statement matching PATTERN.
sub waiting
{
	my ($pattern, $n) = @_;
	$pattern =~ s/'/''/g;
	return $node->poll_query_until('postgres',
		"SELECT count(*) = $n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '$pattern'"
	);
}

# big(SINK, FROM, ROWS[, USER]): ROWS rows into SINK, as commit user USER.
sub big
{
	my ($sink, $from, $rows, $user) = @_;
	my $set = $user ? "SET paimon_sink.commit_user = '$user';" : '';
	sql("$set INSERT INTO $sink SELECT g, repeat('n', 100) FROM generate_series($from, $from + $rows - 1) g");
	return;
}

# a job's two prepared checkpoints of a: 5000 rows (loaded by the loader), then 10
big('a', 1000001, 5000, 'job');
sql("SELECT count(*) FROM paimon_sink.prepare_commit('a', 'job', 1)");
big('a', 1006001, 10, 'job');
sql("SELECT count(*) FROM paimon_sink.prepare_commit('a', 'job', 2)");

# --- a's big checkpoint held in its loader
big('a', 1, 20000);
sql("SELECT paimon_sink.inject_fault('loader_before_prepare', 'pause', -1)");
my $first = background_sql($node, "SELECT sum(row_count) FROM paimon_sink.checkpoint('a')");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'paimon_sink loader'"),
	'a\'s loader runs');
ok( $node->poll_query_until('postgres',
		"SELECT hits = 1 FROM paimon_sink.faults WHERE point = 'loader_before_prepare'"),
	'it is held before its PREPARE');
is(sql("SELECT sink_name || ' ' || loaders || ' ' || phase FROM paimon_sink.commit_progress"),
	'a 1 loading', 'commit_progress shows a\'s checkpoint in its loader');

# a's second checkpoint(), the job's commit() of two checkpoints, d's checkpoint() wait
big('a', 30001, 7);
my $second = background_sql($node, "SELECT sum(row_count) FROM paimon_sink.checkpoint('a')");
my $job = background_sql($node,
	"SELECT count(*) || ' ' || sum(row_count) FROM paimon_sink.commit('a', 'job', 2) WHERE newly_committed");
sql("INSERT INTO d SELECT g, 'd' FROM generate_series(40001, 40003) g");
my $same_target = background_sql($node, "SELECT sum(row_count) FROM paimon_sink.checkpoint('d')");
ok(waiting(q{%checkpoint('a')%}, 2), 'a second checkpoint() of a waits');
ok(waiting(q{%commit('a', 'job', 2)%}, 1), 'the job\'s commit() of a waits');
ok(waiting(q{%checkpoint('d')%}, 1), 'a checkpoint() of sink d, into a\'s target, waits');

# meanwhile b's checkpoint() calls complete and c's periodic checkpoints go on
for my $round (1 .. 5)
{
	sql("INSERT INTO b SELECT g FROM generate_series($round * 10, $round * 10 + 2) g");
	is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('b')"), '3',
		"round $round: b's checkpoint() completes while a's loader loads");
}
is(sql('SELECT count(*) FROM tb'), '15', 'b\'s rows are all there');
sql('INSERT INTO c SELECT generate_series(1, 4)');
ok($node->poll_query_until('postgres', 'SELECT count(*) = 4 FROM tc'),
	'c\'s periodic checkpoint commits meanwhile');
is(sql("SELECT count(*) FROM ta"), '0', 'nothing of a is visible yet');
ok(waiting(q{%checkpoint('a')%}, 2), 'a\'s checkpoint() calls still wait');
ok(waiting(q{%commit('a', 'job', 2)%}, 1), 'the job\'s commit() still waits');

# --- the loader goes on: every waiting call answers
sql("SELECT paimon_sink.clear_faults()");
is(finish($first), "20000\n", 'a\'s big checkpoint() returns its 20000 rows');
is(finish($second), "7\n", 'a\'s second checkpoint() then commits its 7 rows');
is(finish($job), "2 5010\n",
	'the job\'s commit() commits both its checkpoints, the large one by the loader');
is(finish($same_target), "3\n", 'd\'s checkpoint() commits once a\'s loader is done');
is(sql("SELECT count(*) || ' ' || count(DISTINCT id) FROM ta"), '25020 25020',
	'a\'s target holds every row once');
is(sql("SELECT count(*) FROM pg_prepared_xacts"), '0', 'nothing is left prepared');
is(sql("SELECT paimon_sink.last_committed_checkpoint('a', 'job')"), '2',
	'the job\'s mark is at 2');

# --- a recover() of a waits for a's loader too, then commits what it restores
big('a', 2000001, 3000, 'job2');
sql("SELECT count(*) FROM paimon_sink.prepare_commit('a', 'job2', 1)");
big('a', 50001, 2000);
sql("SELECT paimon_sink.inject_fault('loader_before_prepare', 'pause', -1)");
$first = background_sql($node, "SELECT sum(row_count) FROM paimon_sink.checkpoint('a')");
ok( $node->poll_query_until('postgres',
		"SELECT hits = 1 FROM paimon_sink.faults WHERE point = 'loader_before_prepare'"),
	'a\'s next big checkpoint is held in its loader');
my $recover = background_sql($node,
	"SELECT last_committed_checkpoint || ' ' || recommitted_checkpoints FROM paimon_sink.recover('a', 'job2', 1)");
ok(waiting(q{%recover('a'%}, 1), 'a recover() of a waits');
sql("INSERT INTO b VALUES (1000)");
is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('b')"), '1',
	'b\'s checkpoint() completes meanwhile');
sql("SELECT paimon_sink.clear_faults()");
is(finish($first), "2000\n", 'a\'s checkpoint() returns its rows');
is(finish($recover), "1 1\n", 'recover() then commits the restored checkpoint once');
is(sql("SELECT count(*) || ' ' || count(DISTINCT id) FROM ta"), '30020 30020',
	'a\'s target holds every row once');
is(sql("SELECT count(*) FROM pg_prepared_xacts"), '0', 'nothing is left prepared');

done_testing();
