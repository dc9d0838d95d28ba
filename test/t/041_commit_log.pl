# The commit's log line and paimon_sink.log_commit_min_duration: 0 (the
# default) logs every commit, a duration logs only the commits that took at
# least that long, -1 none; a failed commit is logged whatever the setting.
# At 100 sinks checkpointed every 200 ms, a line per commit is 500 lines a
# second in the server log; the setting is PostgreSQL's
# log_autovacuum_min_duration for the committer's commits.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Basename qw(dirname);
use File::Spec;
use IPC::Run;
use PaimonSinkTest qw(start_node try_sql writers_ready);

my $node = start_node('commit_log');

sub sql { return $node->safe_psql('postgres', shift); }

# set_threshold(VALUE): paimon_sink.log_commit_min_duration, reloaded, and
# the committer's value seen (it reads the file at its next turn)
sub set_threshold
{
	my $value = shift;
	sql("ALTER SYSTEM SET paimon_sink.log_commit_min_duration = '$value'; SELECT pg_reload_conf()");
	# a reload reaches the committer at its next turn; a checkpoint of nothing is one
	sleep 1;
	sql("SELECT count(*) FROM paimon_sink.checkpoint('fast')");
}

# checkpoint_row(SINK, ID): writes row ID into SINK and checkpoints it; returns the checkpoint's id
sub checkpoint_row
{
	my ($sink, $id) = @_;
	return sql("INSERT INTO $sink VALUES ($id);
		SELECT checkpoint_id FROM paimon_sink.checkpoint('$sink')");
}

# commit_logged(SINK, ID, OFFSET): whether the log since OFFSET names the
# commit of checkpoint ID of SINK
sub commit_logged
{
	my ($sink, $id, $offset) = @_;
	return $node->log_contains(
		qr/paimon_sink committed snapshot \d+ of sink "$sink": commit user "[^"]+", identifier $id, /,
		$offset);
}

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE fast_target (id int);
	CREATE TABLE slow_target (id int PRIMARY KEY);
	-- a load that takes half a second: its commit takes at least that long
	CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN PERFORM pg_sleep(0.5); RETURN NEW; END $$;
	CREATE TRIGGER slow BEFORE INSERT ON slow_target FOR EACH ROW EXECUTE FUNCTION slow_row();
	SELECT sink_name FROM paimon_sink.create_sink('fast', 'fast_target');
	SELECT sink_name FROM paimon_sink.create_sink('slow', 'slow_target');
});
ok(writers_ready($node, 'postgres'), 'writers serve');

# the default: every commit
my $offset = -s $node->logfile;
my $id = checkpoint_row('fast', 1);
ok(commit_logged('fast', $id, $offset), 'by default a commit is logged');

# test/demo's report reads the committer's own time from this line
# (test/py/demo_ckpt.py stats): it parses the real one
{
	my $csv = $node->basedir . '/demo_checkpoints.csv';
	open(my $fh, '>', $csv) or die "cannot write $csv: $!";
	print $fh "0.000,ok,1,1,1.000,\n";
	close($fh);
	my $script = File::Spec->catfile(dirname(__FILE__), '..', 'py', 'demo_ckpt.py');
	my ($stdout, $stderr);
	IPC::Run::run([ '/usr/bin/python3', '-B', $script, 'stats', $csv, $node->logfile, 'fast' ],
		'>', \$stdout, '2>', \$stderr);
	like($stdout, qr/^log_n=[1-9][0-9]*$/m, "the demo's report finds the commit's log line")
	  or diag($stderr);
	like($stdout, qr/^log_p50=[0-9]+\.[0-9]$/m, "the demo's report reads its time") or diag($stderr);
}

# a threshold above the fast commit and below the slow one
set_threshold('300ms');
$offset = -s $node->logfile;
$id = checkpoint_row('fast', 2);
my $slow_id = checkpoint_row('slow', 1);
ok(!commit_logged('fast', $id, $offset), 'a commit faster than the threshold is not logged');
ok(commit_logged('slow', $slow_id, $offset), 'a commit slower than the threshold is logged');

# a failed commit is logged whatever the threshold: the key exists
$offset = -s $node->logfile;
sql("INSERT INTO slow VALUES (1)");
my ($ret, $out, $err) =
  try_sql($node, "SELECT count(*) FROM paimon_sink.checkpoint('slow')");
like($err, qr/23505/, 'the duplicate key fails the commit');
ok($node->log_contains(qr/paimon_sink committer request failed with SQLSTATE 23505/, $offset),
	'the failed commit is logged');
sql("DELETE FROM slow_target");
sql("SELECT count(*) FROM paimon_sink.checkpoint('slow')");

# -1: none, however slow
set_threshold('-1');
$offset = -s $node->logfile;
$slow_id = checkpoint_row('slow', 3);
$id = checkpoint_row('fast', 3);
ok(!commit_logged('slow', $slow_id, $offset), 'with -1 a slow commit is not logged');
ok(!commit_logged('fast', $id, $offset), 'with -1 a fast commit is not logged');
is(sql("SELECT count(*) FROM slow_target"), '2', 'the commits happened all the same');
is(sql("SELECT count(*) FROM fast_target"), '3', 'every fast commit happened');

# back to 0: logged again
set_threshold('0');
$offset = -s $node->logfile;
$id = checkpoint_row('fast', 4);
ok(commit_logged('fast', $id, $offset), 'with 0 every commit is logged again');

$node->stop;
done_testing();
