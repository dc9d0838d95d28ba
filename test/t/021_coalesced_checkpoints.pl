# checkpoint() calls coalesced on one sink (served by one checkpoint): each
# caller's own rows are committed when its call returns, whatever ran
# concurrently; a failing checkpoint reaches every caller that rode on it
# with its error, never a success; a caller cancelled while it rides gets
# its cancellation, the others their answer, and its slot is freed.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use PaimonSinkTest qw(start_node writers_ready);

my $node = start_node('coalesced');

sub sql { return $node->safe_psql('postgres', shift); }

sub start_psql
{
	my ($query, $options) = @_;
	my $connstr = $node->connstr('postgres') . ($options ? " options='$options'" : '');
	my %run = (out => '', err => '', in => '');
	$run{handle} = IPC::Run::start(
		[ $node->installed_command('psql'), '-XAt', '-v', 'ON_ERROR_STOP=1', '-v', 'VERBOSITY=verbose',
		  '-d', $connstr, '-c', $query ],
		'<', \$run{in}, '>', \$run{out}, '2>', \$run{err});
	return \%run;
}

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE target (id bigint, note text);
	CREATE UNIQUE INDEX target_id ON target (id);
	CREATE SEQUENCE ids;
	SELECT sink_name FROM paimon_sink.create_sink('s', 'target');
});
ok(writers_ready($node, 'postgres'), 'writers serve');

# --- six sessions insert a row and call checkpoint(), as fast as they can;
# after each call its row must be in the target, once, and the snapshot the
# call reports (none when another call's checkpoint took its row) must exist
my $file = "$PostgreSQL::Test::Utils::tmp_check/coalesced.sql";
append_to_file($file, <<'SQL');
SELECT nextval('ids') AS id \gset
INSERT INTO s VALUES (:id, 'load');
SELECT coalesce(max(snapshot_id), 0) AS snap FROM paimon_sink.checkpoint('s') \gset
SELECT 1 / count(*) FROM target WHERE id = :id HAVING count(*) = 1;
SELECT 1 / count(*) FROM paimon_sink.snapshot_log WHERE snapshot_id = :snap OR :snap = 0;
SQL
my ($out, $err) = ('', '');
IPC::Run::run([ $node->installed_command('pgbench'), '-n', '-c', '6', '-f', $file, '-T', '5',
		$node->connstr('postgres') ],
	'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(60));
like($out, qr/number of failed transactions: 0 /, 'each call found its row committed once')
  or diag($out . $err);
unlike($err, qr/aborted|ERROR/, 'no client failed') or diag($err);
my ($rows, $distinct, $last) = split /\|/,
  sql("SELECT count(*), count(DISTINCT id), (SELECT last_value FROM ids) FROM target");
is("$rows $distinct", "$last $last", "every row of the $last once");
note("snapshots: " . sql("SELECT count(*) FROM paimon_sink.snapshot_log") . " for $last calls");

# --- a failing checkpoint: every caller riding on it gets its error
sub hold
{
	my ($id) = @_;
	sql("INSERT INTO s VALUES ($id, 'held')");
	sql("SELECT paimon_sink.inject_fault('committer_before_prepare', 'pause')");
	my $held = start_psql("SELECT count(*) FROM paimon_sink.checkpoint('s')");
	ok($node->poll_query_until('postgres',
		"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'committer_before_prepare'"),
		'the committer is held inside a checkpoint');
	return $held;
}

sub wait_queued
{
	my ($n) = @_;
	return $node->poll_query_until('postgres',
		"SELECT count(*) = $n FROM pg_stat_activity WHERE query LIKE '%paimon_sink.checkpoint(''s'')%' "
		  . "AND wait_event_type = 'Extension' AND pid <> pg_backend_pid()");
}

my $held = hold(-10);
sql("INSERT INTO target VALUES (-1, 'direct')");
sql("INSERT INTO s VALUES (-1, 'conflicts with a row of the target')");
my @riders = map { start_psql("SELECT count(*) FROM paimon_sink.checkpoint('s')") } 1 .. 3;
ok(wait_queued(4), 'three checkpoint() calls queue behind it');
sql("SELECT paimon_sink.release_fault('committer_before_prepare')");
$_->{handle}->finish for ($held, @riders);
sql("SELECT paimon_sink.clear_faults()");
is($held->{out} . $held->{err}, "1\n", 'the held checkpoint commits its row');
is(join('|', map { $_->{out} eq '' && $_->{err} =~ /ERROR:  23505/ ? 'error 23505' : "$_->{out}$_->{err}" } @riders),
	'error 23505|error 23505|error 23505', 'each caller riding on the failed checkpoint gets its error');
sql("DELETE FROM target WHERE note = 'direct'");
is(sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('s')"), '1', 'once allowed, the row commits');
is(sql("SELECT count(*) FROM target WHERE id = -1"), '1', 'once');

# --- a rider cancelled while it waits
$held = hold(-20);
sql("INSERT INTO s VALUES (-2, 'rider')");
my $cancelled = start_psql("SELECT count(*) FROM paimon_sink.checkpoint('s')",
	'-c statement_timeout=1000');
my $other = start_psql("SELECT sum(row_count) FROM paimon_sink.checkpoint('s')");
ok(wait_queued(3), 'two checkpoint() calls queue behind it');
sleep 2;
sql("SELECT paimon_sink.release_fault('committer_before_prepare')");
$_->{handle}->finish for ($held, $cancelled, $other);
sql("SELECT paimon_sink.clear_faults()");
like($cancelled->{err}, qr/57014/, 'the cancelled rider gets its cancellation');
is($other->{out} . $other->{err}, "1\n", 'the other rider its answer');
is(sql("SELECT count(*) FROM target WHERE id = -2"), '1', 'the row committed once');
# every request slot free again: more calls than slots go through
for my $i (1 .. 20)
{
	sql("INSERT INTO s VALUES (-100 - $i, 'after')");
	sql("SELECT count(*) FROM paimon_sink.checkpoint('s')");
}
is(sql("SELECT count(*) FROM target WHERE note = 'after'"), '20', 'later calls are served');

$node->stop;
done_testing();
