# The commit statistics of a sink being dropped: the committer writes every
# sink's counts in one transaction, at most a second after the commits.  A
# drop_sink() left open in a transaction (it deletes the sink's statistics
# row) must neither stall the committer (every sink's requests wait behind
# it) nor, once it commits, cost the other sinks their counts; and the
# dropped sink's counts do not bring its row back.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PaimonSinkTest qw(start_node try_sql writers_ready);

my $node = start_node('stats_drop');

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE tx (id int);
	CREATE TABLE ty (id int);
	SELECT sink_name FROM paimon_sink.create_sink('x', 'tx');
	SELECT sink_name FROM paimon_sink.create_sink('y', 'ty');
});
ok(writers_ready($node, 'postgres'), 'writers serve');

sql("INSERT INTO x VALUES (1); SELECT count(*) FROM paimon_sink.checkpoint('x')");
ok($node->poll_query_until('postgres',
	"SELECT commits = 1 FROM paimon_sink.commit_stats WHERE sink_name = 'x'"),
	'x has its statistics row');
sleep 1;

# two commits of x: the first one's counts are written at once (a second
# passed since the last write), the second's wait a second; meanwhile a drop
# of x is left open
my $drop = $node->background_psql('postgres', on_error_stop => 1);
sql("INSERT INTO x VALUES (2); SELECT count(*) FROM paimon_sink.checkpoint('x');
	 INSERT INTO x VALUES (3); SELECT count(*) FROM paimon_sink.checkpoint('x')");
$drop->query_safe("BEGIN; SELECT paimon_sink.drop_sink('x')");
sleep 2; # the statistics are due meanwhile

my ($ret, $out, $err) = try_sql($node,
	"SET statement_timeout = '10s'; INSERT INTO y VALUES (1);
	 SELECT sum(row_count) FROM paimon_sink.checkpoint('y')");
is($out, '1', 'another sink\'s checkpoint is served while the drop is open') or diag($err);

$drop->query_safe("COMMIT");
$drop->quit;
sql("INSERT INTO y VALUES (2); SELECT count(*) FROM paimon_sink.checkpoint('y')");
ok($node->poll_query_until('postgres',
	"SELECT commits = 2 FROM paimon_sink.commit_stats WHERE sink_name = 'y'"),
	'y\'s statistics count both its commits');
sleep 2;
is(sql("SELECT count(*) FROM paimon_sink.commit_statistics c WHERE NOT EXISTS
	(SELECT FROM paimon_sink.sink_definition d WHERE d.sink_id = c.sink_id)"), '0',
	'the dropped sink has no statistics row');
unlike(slurp_file($node->logfile), qr/violates foreign key constraint/,
	'no statistics write failed');

$node->stop;
done_testing();
