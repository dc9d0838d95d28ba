# Rows that reach a sink through postgres_fdw from another database meet
# the checks of a direct INSERT: postgres_fdw runs a plain INSERT (or, for
# a local statement with ON CONFLICT DO NOTHING, one with ON CONFLICT DO
# NOTHING, which it passes through as it reads it: the server log shows
# what it sends) on the sink's foreign table, whose planner refuses ON
# CONFLICT (0A000); the target's constraints and the remote session's
# commit user are checked there.  The same through a local partitioned
# table whose partition is the postgres_fdw table, where postgres_fdw's
# BeginForeignInsert passes the ON CONFLICT on.  A checkpoint then commits
# exactly the rows taken, and fails on none.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(start_node try_sql writers_ready);

my $node = start_node('postgres_fdw', "log_statement = 'all'");

if ($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_available_extensions WHERE name = 'postgres_fdw'") ne '1')
{
	$node->stop;
	plan skip_all => 'the PostgreSQL under test has no postgres_fdw (contrib)';
}

$node->safe_psql('postgres', 'CREATE DATABASE sinkdb');
$node->safe_psql('postgres', 'CREATE DATABASE app');
$node->safe_psql('sinkdb', q{
	CREATE EXTENSION paimon_sink;
	CREATE ROLE fdw_writer LOGIN;
	CREATE TABLE t (k int PRIMARY KEY, v text NOT NULL CHECK (v <> ''));
	SELECT sink_name FROM paimon_sink.create_sink('t_sink', 't');
	GRANT INSERT ON t_sink TO fdw_writer;
	INSERT INTO t VALUES (1, 'committed before');
});
ok(writers_ready($node, 'sinkdb'), 'the writers of the sink database serve');

# the application's database reaches the sink as fdw_writer, whose sessions
# write under commit user fdw-job
my $host = $node->host;
my $port = $node->port;
$node->safe_psql('app', qq{
	CREATE EXTENSION postgres_fdw;
	CREATE SERVER sinkdb FOREIGN DATA WRAPPER postgres_fdw
		OPTIONS (host '$host', port '$port', dbname 'sinkdb',
			options '-c paimon_sink.commit_user=fdw-job');
	CREATE USER MAPPING FOR CURRENT_USER SERVER sinkdb OPTIONS (user 'fdw_writer');
	CREATE FOREIGN TABLE remote_sink (k int, v text) SERVER sinkdb
		OPTIONS (schema_name 'public', table_name 't_sink');
	CREATE FOREIGN TABLE remote_batched (k int, v text) SERVER sinkdb
		OPTIONS (schema_name 'public', table_name 't_sink', batch_size '10');
	CREATE TABLE router (k int, v text) PARTITION BY RANGE (k);
	CREATE TABLE router_low PARTITION OF router FOR VALUES FROM (0) TO (1);
	ALTER TABLE router ATTACH PARTITION remote_sink FOR VALUES FROM (1) TO (1000);
});

sub app { return try_sql($node, shift, undef, 'app'); }

# sqlstate(STDERR): the SQLSTATE of the first error (VERBOSITY verbose)
sub sqlstate
{
	my ($err) = @_;
	return ($err =~ /ERROR:  ([0-9A-Z]{5}):/) ? $1 : 'none';
}

my ($ret, $out, $err);

# plain inserts, one by one and batched
($ret, $out, $err) = app(q{INSERT INTO remote_sink VALUES (2, 'through postgres_fdw');
	INSERT INTO remote_batched SELECT g, 'batched' FROM generate_series(10, 34) g;
	INSERT INTO router VALUES (3, 'routed through postgres_fdw');});
is($ret, 0, 'postgres_fdw inserts into the sink, directly, batched and routed') or diag($err);

# ON CONFLICT DO NOTHING: passed through, and refused by the sink
my $log_offset = -s $node->logfile;
($ret, $out, $err) = app(q{INSERT INTO remote_sink VALUES (1, 'dup') ON CONFLICT DO NOTHING});
is(sqlstate($err), '0A000', 'INSERT ... ON CONFLICT through postgres_fdw is refused by the sink');
like($err, qr/INSERT with ON CONFLICT is not supported on foreign table "t_sink" of sink "t_sink"/,
	'the sink\'s own message reaches the client');
like(slurp_file($node->logfile, $log_offset),
	qr/INSERT INTO public\.t_sink\(k, v\) VALUES \(\$1, \$2\) ON CONFLICT DO NOTHING/,
	'postgres_fdw sends ON CONFLICT DO NOTHING on to the sink');
($ret, $out, $err) = app(q{INSERT INTO router VALUES (1, 'dup') ON CONFLICT DO NOTHING});
is(sqlstate($err), '0A000',
	'INSERT ... ON CONFLICT routed into a postgres_fdw partition is refused by the sink');
($ret, $out, $err) = app(q{INSERT INTO remote_batched SELECT g, 'dup' FROM generate_series(1, 3) g
	ON CONFLICT DO NOTHING});
is(sqlstate($err), '0A000', 'and batched');

# the target's constraints, checked in the sink's database
($ret, $out, $err) = app(q{INSERT INTO remote_sink VALUES (4, NULL)});
is(sqlstate($err), '23502', 'a NULL that the target refuses fails the remote INSERT');
($ret, $out, $err) = app(q{INSERT INTO router VALUES (4, '')});
is(sqlstate($err), '23514', 'a row a CHECK refuses fails the routed insert');
($ret, $out, $err) = app(q{INSERT INTO remote_batched VALUES (5, 'fine'), (6, NULL)});
is(sqlstate($err), '23502', 'and the batched insert, with the rows before it');

# reading or updating through postgres_fdw is refused by the sink
($ret, $out, $err) = app(q{SELECT * FROM remote_sink});
is(sqlstate($err), '0A000', 'reading the sink through postgres_fdw is refused');
($ret, $out, $err) = app(q{UPDATE remote_sink SET v = 'x' WHERE k = 2});
isnt($ret, 0, 'an UPDATE through postgres_fdw fails');

# the remote session's commit user: one whose input has ended takes no rows
($ret, $out, $err) = app(q{INSERT INTO remote_sink VALUES (7, 'under fdw-job')});
is($ret, 0, 'rows under the remote session\'s commit user') or diag($err);
is( $node->safe_psql('sinkdb', q{SELECT checkpoint_id FROM paimon_sink.prepare_commit('t_sink', 'fdw-job', 1)}),
	'1', 'the rows of postgres_fdw\'s sessions are commit user fdw-job\'s');
$node->safe_psql('sinkdb', q{SELECT count(*) FROM paimon_sink.commit('t_sink', 'fdw-job', 1);
	SELECT count(*) FROM paimon_sink.end_input('t_sink', 'fdw-job')});
($ret, $out, $err) = app(q{INSERT INTO remote_sink VALUES (8, 'after the end')});
is(sqlstate($err), '55000', 'a commit user whose input ended is refused through postgres_fdw');

is( $node->safe_psql('sinkdb',
		q{SELECT count(*), count(*) FILTER (WHERE v = 'batched'), min(k), max(k) FROM t}),
	'29|25|1|34', 'exactly the rows taken are committed, none refused or doubled');
is($node->safe_psql('sinkdb', 'SELECT count(*) FROM paimon_sink.pending_checkpoints'),
	'0', 'and nothing waits');

$node->stop;
done_testing();
