# Concurrent commit() calls for the same and for successive checkpoint ids,
# made deterministic by pausing the first commit between PREPARE TRANSACTION
# and COMMIT PREPARED; and many sessions inserting while checkpoints run;
# checkpoint() calls queued for one sink served by one commit.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(start_node);

my $node = start_node('concurrency');

sub sql { return $node->safe_psql('postgres', shift); }

sub start_psql
{
	my ($query) = @_;
	my %run = (out => '', err => '', in => '');
	$run{handle} = IPC::Run::start(
		[ 'psql', '-XAt', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'), '-c', $query ],
		'<', \$run{in}, '>', \$run{out}, '2>', \$run{err});
	return \%run;
}

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE target (id int, note text);
	SELECT sink_name FROM paimon_sink.create_sink('c', 'target');
});
$node->poll_query_until('postgres', "SELECT count(*) = 2 FROM paimon_sink.writers WHERE ready");

sql("SET paimon_sink.commit_user = 'job'; INSERT INTO c SELECT g, 'one' FROM generate_series(1, 10) g");
sql("SELECT paimon_sink.prepare_commit('c', 'job', 1)");
sql("SET paimon_sink.commit_user = 'job'; INSERT INTO c SELECT g, 'two' FROM generate_series(11, 30) g");
sql("SELECT paimon_sink.prepare_commit('c', 'job', 2)");
sql("SELECT paimon_sink.inject_fault('committer_after_prepare', 'pause')");

my $first = start_psql("SELECT string_agg(checkpoint_id || ':' || newly_committed, ',') FROM paimon_sink.commit('c', 'job', 1)");
ok($node->poll_query_until('postgres',
	"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'committer_after_prepare'"),
	'commit(1) is paused between PREPARE and COMMIT PREPARED');
my $same = start_psql("SELECT string_agg(checkpoint_id || ':' || newly_committed, ',') FROM paimon_sink.commit('c', 'job', 1)");
my $next = start_psql("SELECT string_agg(checkpoint_id || ':' || newly_committed, ',') FROM paimon_sink.commit('c', 'job', 2)");
sleep 1;
is(sql("SELECT count(*) FROM target"), '0', 'nothing is visible while the first commit is in doubt');
is(sql("SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'"), '1',
	'one prepared transaction at a time');
sql("SELECT paimon_sink.clear_faults()");
$_->{handle}->finish for ($first, $same, $next);
is($first->{out}, "1:true\n", 'the first commit(1) made the snapshot');
is($same->{out}, "1:false\n", 'the concurrent commit(1) returned it without applying anything');
is($next->{out}, "2:true\n", 'the concurrent commit(2) committed checkpoint 2 after it');
is(sql("SELECT note || ':' || count(*) FROM target GROUP BY note ORDER BY note"), "one:10\ntwo:20",
	'every row once');
is(sql("SELECT string_agg(commit_identifier::text, ',' ORDER BY snapshot_id) FROM paimon_sink.snapshots"),
	'1,2', 'snapshots in checkpoint order');

# many sessions insert while checkpoint() runs in a loop: each row once
my @writers;
for my $w (1 .. 6)
{
	my $base = 1000 * $w;
	push @writers, start_psql(join(';',
		map { my $b = $base + 10 * $_; "INSERT INTO c SELECT g, 'load' FROM generate_series($b, $b + 9) g" } 0 .. 49));
}
my @checkpoints = map { start_psql("SELECT count(*) FROM paimon_sink.checkpoint('c')") } 1 .. 5;
$_->{handle}->finish for (@writers, @checkpoints);
is(join('', map { $_->{err} } @writers, @checkpoints), '', 'no session failed');
sql("SELECT paimon_sink.checkpoint('c')");
is(sql("SELECT count(*) || ' ' || count(DISTINCT id) FROM target WHERE note = 'load'"), '3000 3000',
	'3000 rows from 6 concurrent sessions, each once');

# a request whose caller is cancelled while it waits in the queue still runs
# (its work goes on, as for a running one), and its slot is freed after it
sql("INSERT INTO c VALUES (9001, 'queued')");
sql("SELECT paimon_sink.inject_fault('committer_before_prepare', 'pause')");
my $busy = start_psql("SELECT count(*) FROM paimon_sink.checkpoint('c')");
ok($node->poll_query_until('postgres',
	"SELECT hits > 0 FROM paimon_sink.faults WHERE point = 'committer_before_prepare'"),
	'the committer is held inside a checkpoint');
my @cancelled;
for my $n (1 .. 5)
{
	my ($ret, $out, $err) = $node->psql('postgres',
		"SET statement_timeout = '200ms'; SELECT * FROM paimon_sink.prepare_commit('c', 'cancelled-$n', 7)");
	push @cancelled, $err =~ /57014|statement timeout/ ? 1 : 0;
}
is(join('', @cancelled), '11111', 'five prepare_commit calls were cancelled while queued');
sql("SELECT paimon_sink.release_fault('committer_before_prepare')");
$busy->{handle}->finish;
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 5 FROM paimon_sink.commit_user_state WHERE commit_user LIKE 'cancelled-%' AND last_prepared_checkpoint = 7"),
	'every cancelled prepare_commit ran once the committer was free');
sql("SELECT paimon_sink.clear_faults()");
is(sql("SELECT count(*) FROM target WHERE note = 'queued'"), '1', 'the held checkpoint committed its row');

# checkpoint() calls of one sink queued behind a busy committer ride on one
# barrier, prepare and commit: one snapshot for them all, and each caller
# gets its answer
sql("INSERT INTO c VALUES (9101, 'held')");
sql("SELECT paimon_sink.inject_fault('committer_before_prepare', 'pause')");
my $before = sql("SELECT max(snapshot_id) FROM paimon_sink.snapshot_log");
my $held = start_psql("SELECT string_agg(row_count::text, ',') FROM paimon_sink.checkpoint('c')");
ok($node->poll_query_until('postgres',
	"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'committer_before_prepare'"),
	'the committer is held inside a checkpoint');
my @riders;
for my $n (1 .. 3)
{
	sql("INSERT INTO c VALUES (910$n, 'rider')");
	push @riders, start_psql("SELECT string_agg(row_count::text, ',') FROM paimon_sink.checkpoint('c')");
}
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 4 FROM pg_stat_activity WHERE query LIKE '%paimon_sink.checkpoint(''c'')%' "
	  . "AND wait_event_type = 'Extension' AND pid <> pg_backend_pid()"),
	'three checkpoint() calls wait behind it');
sql("SELECT paimon_sink.release_fault('committer_before_prepare')");
$_->{handle}->finish for ($held, @riders);
sql("SELECT paimon_sink.clear_faults()");
is($held->{out} . $held->{err}, "1\n", 'the held checkpoint commits its row');
is(join('|', map { $_->{out} . $_->{err} } @riders), "3\n|3\n|3\n",
	'each queued call gets the answer of the one checkpoint that took their 3 rows');
is(sql("SELECT max(snapshot_id) - $before FROM paimon_sink.snapshot_log"), '2',
	'two snapshots: the held one and one for the three calls queued behind it');
is(sql("SELECT count(*) FROM target WHERE note = 'rider'"), '3', 'each row once');

$node->stop;
done_testing();
