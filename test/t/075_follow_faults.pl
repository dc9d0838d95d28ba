# Faults found by trying the schema following (issue "6 — The target
# changes while rows wait", item 1) and sink_stats (issue "7 — Operated
# like the extensions DBAs already run", item 1) as a hostile user and a
# DBA would.  Each test fails on the code it was written against and says
# what a fix must give, without prescribing which fix:
# - ALTER COLUMN ... TYPE ... USING: the staged rows must end as the rows
#   already in the table did, or the ALTER be refused;
# - a timestamp widened to timestamptz: the staged rows must be read in the
#   same time zone as the rows the ALTER converted, or the ALTER be refused;
# - ALTER TABLE by a role that does not own the target fails with
#   PostgreSQL's own 42501, not with the sink's refusal naming the sink;
# - ADD COLUMN ... serial NOT NULL works on a sink's target;
# - a NOT NULL column without a default, made in two steps (ADD, then SET
#   NOT NULL), is refused or the commit goes through;
# - a domain with a CHECK the staged values break is refused or the commit
#   goes through;
# - every staged column dropped and one added with a default: the rows load
#   with the default, or the drop is refused and they load as staged, with
#   the default;
# - ALTER TYPE ... ADD ATTRIBUTE of a composite type a staged column has,
#   with rows written before and after it in one checkpoint: refused, or
#   the checkpoint commits (it could commit in neither layout);
# - in a database whose extension is still at 0.1 (the library updated, ALTER
#   EXTENSION ... UPDATE not run yet), ALTER TABLE ... ADD COLUMN, DROP
#   COLUMN and ALTER COLUMN TYPE of any table still work;
# - an open transaction that called reset_sink_stats() does not stall the
#   commits of the database's other sinks (the committer, one per database,
#   waits for its row lock in a commit of the reset sink).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use PaimonSinkTest qw(start_node try_sql writers_ready);

my $node = start_node('follow_faults');

sub sql { return $node->safe_psql('postgres', shift); }

# stage(sink, rows sql values, checkpoint): rows written as commit user j, checkpoint prepared
sub stage
{
	my ($sink, $values, $checkpoint) = @_;
	my ($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'j';
		INSERT INTO $sink VALUES $values;
		SELECT count(*) FROM paimon_sink.prepare_commit('$sink', 'j', $checkpoint);");
	is($ret, 0, "$sink: checkpoint $checkpoint staged and prepared") or diag($err);
	return;
}

# commit(sink, checkpoint): (exit code, stderr) of commit()
sub commit
{
	my ($sink, $checkpoint) = @_;
	my ($ret, $out, $err) =
	  try_sql($node, "SELECT count(*) FROM paimon_sink.commit('$sink', 'j', $checkpoint)");
	return ($ret, $err);
}

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE t_using (id int PRIMARY KEY, n int4);
	CREATE TABLE t_tz (id int PRIMARY KEY, ts timestamp);
	CREATE TABLE t_owner (id int PRIMARY KEY, n int4);
	CREATE TABLE t_serial (id int PRIMARY KEY, n int4);
	CREATE TABLE t_notnull (id int PRIMARY KEY, n int4);
	CREATE DOMAIN posint AS int4 CHECK (VALUE > 0);
	CREATE TABLE t_domain (id int PRIMARY KEY, n int4);
	CREATE TABLE t_alldropped (id int, v text);
	CREATE TABLE t_a (id int);
	CREATE TABLE t_b (id int);
	SELECT count(*) FROM paimon_sink.create_sink('using_sink', 't_using');
	SELECT count(*) FROM paimon_sink.create_sink('tz_sink', 't_tz');
	SELECT count(*) FROM paimon_sink.create_sink('owner_sink', 't_owner');
	SELECT count(*) FROM paimon_sink.create_sink('serial_sink', 't_serial');
	SELECT count(*) FROM paimon_sink.create_sink('notnull_sink', 't_notnull');
	SELECT count(*) FROM paimon_sink.create_sink('domain_sink', 't_domain');
	SELECT count(*) FROM paimon_sink.create_sink('alldropped_sink', 't_alldropped');
	SELECT count(*) FROM paimon_sink.create_sink('a_sink', 't_a');
	SELECT count(*) FROM paimon_sink.create_sink('b_sink', 't_b');
	CREATE ROLE mallory LOGIN;
	GRANT USAGE ON SCHEMA public TO mallory;
	CREATE ROLE watcher LOGIN IN ROLE pg_monitor;
});
ok(writers_ready($node, 'postgres'), 'writers serve');

# --- ALTER COLUMN TYPE ... USING: a row committed before and a row staged before end alike
stage('using_sink', '(1, 7)', 1);
is((commit('using_sink', 1))[0], 0, 'using: the first row committed');
stage('using_sink', '(2, 7)', 2);
my ($ret, $out, $err) =
  try_sql($node, 'ALTER TABLE t_using ALTER COLUMN n TYPE bigint USING n * 1000');
if ($ret == 0)
{
	($ret, $err) = commit('using_sink', 2);
	is($ret, 0, 'using: the staged row commits after the change') or diag($err);
	is(sql('SELECT count(DISTINCT n) FROM t_using'), '1',
		'using: the staged row got what USING made of the same value in the table')
	  or diag(sql('SELECT id, n FROM t_using ORDER BY id'));
}
else
{
	like($err, qr/ERROR:  \w{5}: .*using_sink/s, 'using: the ALTER is refused, naming the sink');
}

# --- timestamp to timestamptz: the server's time zone is not the ALTER session's
sql(q{ALTER SYSTEM SET timezone = 'America/New_York'; SELECT pg_reload_conf();});
sleep 1;
stage('tz_sink', q{(1, '2026-01-01 00:00')}, 1);
is((commit('tz_sink', 1))[0], 0, 'tz: the first row committed');
stage('tz_sink', q{(2, '2026-01-01 00:00')}, 2);
($ret, $out, $err) = try_sql($node,
	q{SET TimeZone = 'UTC'; ALTER TABLE t_tz ALTER COLUMN ts TYPE timestamptz});
if ($ret == 0)
{
	($ret, $err) = commit('tz_sink', 2);
	is($ret, 0, 'tz: the staged row commits after the change') or diag($err);
	is(sql('SELECT count(DISTINCT ts) FROM t_tz'), '1',
		'tz: the staged row is read in the time zone the ALTER read the table in')
	  or diag(sql(q{SET TimeZone = 'UTC'; SELECT id, ts FROM t_tz ORDER BY id}));
}
else
{
	like($err, qr/ERROR:  \w{5}: .*tz_sink/s, 'tz: the ALTER is refused, naming the sink');
}
sql(q{ALTER SYSTEM RESET timezone; SELECT pg_reload_conf();});

# --- ALTER TABLE by a role that does not own the target
for my $statement ('ALTER TABLE t_owner ALTER COLUMN n TYPE text',
	'ALTER TABLE t_owner ADD COLUMN z int NOT NULL')
{
	($ret, $out, $err) = try_sql($node, $statement, 'mallory');
	like($err, qr/ERROR:  42501: must be owner of table t_owner/,
		"a non-owner's \"$statement\" fails with PostgreSQL's own error");
	unlike($err, qr/owner_sink/, "a non-owner's \"$statement\" is not told the sink's name");
}

# --- ADD COLUMN ... serial NOT NULL
($ret, $out, $err) = try_sql($node, 'ALTER TABLE t_serial ADD COLUMN s serial NOT NULL');
is($ret, 0, 'a serial NOT NULL column can be added to a sink\'s target') or diag($err);

# --- a NOT NULL column without a default in two steps
stage('notnull_sink', '(1, 1)', 1);
($ret, $out, $err) = try_sql($node,
	'ALTER TABLE t_notnull ADD COLUMN y int, ALTER COLUMN y SET NOT NULL');
if ($ret == 0)
{
	($ret, $err) = commit('notnull_sink', 1);
	is($ret, 0, 'notnull: the commit goes through after ADD COLUMN y, SET NOT NULL')
	  or diag($err);
}
else
{
	like($err, qr/ERROR:  55000: /, 'notnull: ADD COLUMN y, SET NOT NULL is refused');
}

# --- a domain whose CHECK the staged values break
stage('domain_sink', '(1, -5)', 1);
($ret, $out, $err) = try_sql($node, 'ALTER TABLE t_domain ALTER COLUMN n TYPE posint');
if ($ret == 0)
{
	($ret, $err) = commit('domain_sink', 1);
	is($ret, 0, 'domain: the commit goes through after the change') or diag($err);
}
else
{
	like($err, qr/ERROR:  42804: .*domain_sink/s, 'domain: the change is refused, naming the sink');
}

# --- every staged column dropped, one added with a default
stage('alldropped_sink', q{(1, 'a'), (2, 'b')}, 1);
sql('ALTER TABLE t_alldropped ADD COLUMN w int DEFAULT 5');
($ret, $out, $err) =
  try_sql($node, 'ALTER TABLE t_alldropped DROP COLUMN id, DROP COLUMN v');
if ($ret == 0)
{
	($ret, $err) = commit('alldropped_sink', 1);
	is($ret, 0, 'alldropped: the commit goes through') or diag($err);
}
else
{
	like($err, qr/ERROR:  2BP01: .*alldropped_sink/s,
		'alldropped: dropping every staged column is refused, naming the sink');
	($ret, $err) = commit('alldropped_sink', 1);
	diag($err) if $ret != 0;
}
is(sql('SELECT count(*) FROM t_alldropped WHERE w = 5'), '2',
	'alldropped: the staged rows are loaded with the added column\'s default');

# --- an open transaction after reset_sink_stats() (a pg_monitor member's) and another sink
stage('a_sink', '(1)', 1);
is((commit('a_sink', 1))[0], 0, 'a_sink: committed once');
stage('b_sink', '(1)', 1);
stage('a_sink', '(2)', 2);    # prepared before the reset: a prepare would wait for it itself
my ($in, $hold_out, $hold_err) = ('', '', '');
my $hold = IPC::Run::start(
	[ 'psql', '-XAt', '-d', $node->connstr('postgres'), '-U', 'watcher', '-c',
	  "BEGIN; SELECT paimon_sink.reset_sink_stats('a_sink'); SELECT pg_sleep(30); COMMIT;" ],
	'<', \$in, '>', \$hold_out, '2>', \$hold_err);
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE usename = 'watcher' AND query LIKE '%pg_sleep%'"),
	'the reset\'s transaction is open');
# a commit of a_sink (a periodic checkpoint would do the same) meets the reset's row lock
my ($a_out, $a_err) = ('', '');
my $a_commit = IPC::Run::start(
	[ 'psql', '-XAt', '-d', $node->connstr('postgres'), '-c',
	  "SELECT count(*) FROM paimon_sink.commit('a_sink', 'j', 2)" ],
	'<', \$in, '>', \$a_out, '2>', \$a_err);
sleep 1;
my $start = time;
($ret, $err) = commit('b_sink', 1);
my $took = time - $start;
is($ret, 0, 'b_sink commits meanwhile') or diag($err);
cmp_ok($took, '<', 10, "another sink's commit is not held up by the open reset (took ${took}s)");
sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'watcher'");
$hold->finish;
$a_commit->finish;

# --- a composite column's type changed between two rows of one checkpoint
sql(q{CREATE TYPE pair AS (x int, y int);
	CREATE TABLE t_pair (id int PRIMARY KEY, p pair);
	SELECT count(*) FROM paimon_sink.create_sink('pair_sink', 't_pair');});
ok(writers_ready($node, 'postgres'), 'writers serve pair_sink');
($ret, $out, $err) = try_sql($node, q{SET paimon_sink.commit_user = 'j';
	INSERT INTO pair_sink VALUES (1, '(1,2)');});
is($ret, 0, 'pair: a row staged') or diag($err);
($ret, $out, $err) = try_sql($node, 'ALTER TYPE pair ADD ATTRIBUTE z int');
if ($ret == 0)
{
	($ret, $out, $err) = try_sql($node, q{SET paimon_sink.commit_user = 'j';
		INSERT INTO pair_sink VALUES (2, '(3,4,5)');
		SELECT count(*) FROM paimon_sink.prepare_commit('pair_sink', 'j', 1);});
	is($ret, 0, 'pair: a row staged after the change and the checkpoint prepared') or diag($err);
	($ret, $err) = commit('pair_sink', 1);
	is($ret, 0, 'pair: the checkpoint holding both layouts commits') or diag($err);
}
else
{
	like($err, qr/ERROR:  \w{5}: .*pair_sink/s, 'pair: ALTER TYPE is refused, naming the sink');
}

# --- a database whose extension was not updated yet: DDL on an unrelated table
sql('CREATE DATABASE old01');
$node->safe_psql('old01', "CREATE EXTENSION paimon_sink VERSION '0.1'; CREATE TABLE plain (id int)");
for my $statement ('ALTER TABLE plain ADD COLUMN x int',
	'ALTER TABLE plain ALTER COLUMN id TYPE bigint', 'ALTER TABLE plain DROP COLUMN id')
{
	($ret, $out, $err) = try_sql($node, $statement, undef, 'old01');
	is($ret, 0, "extension at 0.1: \"$statement\" on a table no sink writes works") or diag($err);
}

$node->stop;
done_testing();
