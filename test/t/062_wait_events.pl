# The waits on the sink are named in pg_stat_activity.wait_event, where a
# DBA's usual query looks: a session whose rows a writer has not
# acknowledged yet waits on PaimonSinkHandoffAck, a checkpoint() the
# committer has not answered yet on PaimonSinkCommitterRequest, a process
# held at a fault point on PaimonSinkFaultPause, the idle committer and
# launcher on PaimonSinkCommitterMain and PaimonSinkLauncherMain.  Custom
# wait events start in PostgreSQL 17: before it, each of these waits shows
# as wait_event_type Extension, wait_event Extension, and this test checks
# that instead, saying so.  Each wait is held by a paused fault point.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(sink_setup background_sql fault_paused);

# handoff_timeout well above the holds: nothing is fenced meanwhile
my $node = PostgreSQL::Test::Cluster->new('wait_events');
$node->init;
$node->append_conf('postgresql.conf', "paimon_sink.handoff_timeout = '120s'\n");
$node->start;

sub sql { return $node->safe_psql('postgres', $_[0]); }

ok(sink_setup($node), 'writers serve');
my $version = sql('SHOW server_version_num');
my $named = $version >= 170000;
diag("PostgreSQL $version: custom wait events start in 17, so every wait of "
	  . "paimon_sink shows as Extension here and the test checks that")
  unless $named;

# expect(NAME): the (wait_event_type, wait_event) a wait of NAME shows
sub expect
{
	my ($name) = @_;
	return $named ? ('Extension', $name) : ('Extension', 'Extension');
}

# waits_on(WHERE, NAME, LABEL): waits until the process WHERE picks out of
# pg_stat_activity waits on NAME (as expect() says it shows); one test
sub waits_on
{
	my ($where, $name, $label) = @_;
	my ($type, $event) = expect($name);
	my $ok = $node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_catalog.pg_stat_activity WHERE $where "
		  . "AND wait_event_type = '$type' AND wait_event = '$event'");
	ok($ok, "$label: wait_event_type $type, wait_event $event")
	  or diag(sql("SELECT pid, backend_type, wait_event_type, wait_event, query "
			  . "FROM pg_catalog.pg_stat_activity WHERE $where"));
	return;
}

# the idle workers
waits_on("backend_type = 'paimon_sink committer' AND datname = 'postgres'",
	'PaimonSinkCommitterMain', 'the idle committer');
waits_on("backend_type = 'paimon_sink launcher'", 'PaimonSinkLauncherMain', 'the launcher');

# a session whose rows a writer holds before acknowledging them
sql("SELECT paimon_sink.inject_fault('writer_after_receive', 'pause')");
my $insert = background_sql($node,
	"INSERT INTO s SELECT g, 'held hand-off' FROM generate_series(1, 10) g");
ok(fault_paused($node, 'writer_after_receive'), 'a writer holds the rows before its acknowledgement');
# read at once: a writer held past handoff_timeout is fenced and leaves the point
my $writer_pid =
  sql("SELECT coalesce(paused_pid, 0) FROM paimon_sink.faults WHERE point = 'writer_after_receive'");
waits_on("query LIKE 'INSERT INTO s SELECT g, ''held hand-off''%'",
	'PaimonSinkHandoffAck', 'the session waits for the hand-off acknowledgement');
waits_on("pid = $writer_pid", 'PaimonSinkFaultPause', 'the writer held at the fault point');
sql("SELECT paimon_sink.release_fault('writer_after_receive')");
eval { $insert->{harness}->finish; };
is($insert->{err}, '', 'the INSERT commits once the writer acknowledges');

# a checkpoint() the committer holds before its PREPARE
sql("SELECT paimon_sink.inject_fault('committer_before_prepare', 'pause')");
my $checkpoint = background_sql($node,
	"SELECT row_count FROM paimon_sink.checkpoint('s')");
ok(fault_paused($node, 'committer_before_prepare'), 'the committer holds the checkpoint');
waits_on("query LIKE 'SELECT row_count FROM paimon_sink.checkpoint%'",
	'PaimonSinkCommitterRequest', 'checkpoint() waits for the committer');
waits_on("backend_type = 'paimon_sink committer' AND datname = 'postgres'",
	'PaimonSinkFaultPause', 'the committer held at the fault point');
sql("SELECT paimon_sink.release_fault('committer_before_prepare')");
eval { $checkpoint->{harness}->finish; };
is($checkpoint->{out}, "10\n", 'checkpoint() commits the ten rows once released')
  or diag($checkpoint->{err});
is(sql('SELECT count(*) FROM target'), '10', 'the target holds them');

$node->stop;
done_testing();
