# checkpoint() answers with the snapshot it made even when snapshot expiry
# runs between the committer's answer and the session reading it.  The
# answer was read from snapshot_log after the request was answered, and
# with paimon_sink.snapshots_retained = 1 and
# paimon_sink.snapshot_retention = 0 the committer's expiry forgets that
# snapshot as soon as another commit of the sink makes it neither the
# sink's newest nor its commit user's last.  The session here is held
# (SIGSTOP) between the answer and the read, as a busy machine's scheduler
# may hold it; the call then returned no row although it committed its
# checkpoint, and a caller could not tell it from a checkpoint of nothing.
# Now the committer hands the snapshots a request made back with its
# answer (metadata_return_snapshots).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use PaimonSinkTest qw(start_node writers_ready fault_paused);

my $node = start_node('answer_expiry',
	"paimon_sink.snapshots_retained = 1\npaimon_sink.snapshot_retention = 0\n");

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE t (id int);
	SELECT sink_name FROM paimon_sink.create_sink('e', 't');
});
ok(writers_ready($node, 'postgres'), 'writers serve');
sql("INSERT INTO e VALUES (1); SELECT count(*) FROM paimon_sink.checkpoint('e')");

# the session's checkpoint() of row 2, held by the committer before its PREPARE
sql("INSERT INTO e VALUES (2)");
sql("SELECT paimon_sink.inject_fault('committer_before_prepare', 'pause')");
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[ $node->installed_command('psql'), '-XAt', '-d', $node->connstr('postgres'), '-c',
	  "SELECT checkpoint_id || ':' || row_count FROM paimon_sink.checkpoint('e')" ],
	'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(120));
ok(fault_paused($node, 'committer_before_prepare'), 'the committer holds the checkpoint');
my $pid = sql(q{SELECT pid FROM pg_stat_activity
	WHERE query LIKE '%paimon_sink.checkpoint(''e'')%' AND backend_type = 'client backend'
	AND pid <> pg_backend_pid()});
like($pid, qr/^\d+$/, 'the calling session is found');

# the session stops waiting; the committer commits and answers meanwhile
kill 'STOP', $pid;
sql("SELECT paimon_sink.release_fault('committer_before_prepare')");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM t WHERE id = 2"),
	'the checkpoint of row 2 is committed');
my $made = sql("SELECT commit_identifier FROM paimon_sink.snapshots
	WHERE sink_name = 'e' ORDER BY snapshot_id DESC LIMIT 1");

# another commit of the sink, and the expiry that follows it
sql("INSERT INTO e VALUES (3); SELECT count(*) FROM paimon_sink.checkpoint('e')");
ok( $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM paimon_sink.snapshots
		 WHERE sink_name = 'e' AND commit_identifier = $made"),
	'expiry forgot the snapshot of row 2');

# the session goes on and reads its answer
kill 'CONT', $pid;
$h->finish;
is($err, '', 'checkpoint() succeeded');
chomp $out;
is($out, "$made:1", 'checkpoint() answers with the snapshot it made');

$node->stop;
done_testing();
