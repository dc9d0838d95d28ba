# pg_dump of a database with sinks restores their definitions, marks and
# snapshots: the restored sinks take writes and commit, and a new sink gets
# an id of its own.  A sink's owner (its foreign table's) comes back with it,
# and the restored foreign table still goes only with its sink.  The restore's CREATE EXTENSION starts the workers once
# it commits, however long it takes.  A target whose dropped column the
# restore left out (its columns' numbers moved) loads each column into its
# own.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(start_node);

my $node = start_node('dump');

sub sql { my ($db, $query) = @_; return $node->safe_psql($db, $query); }

$node->safe_psql('postgres', 'CREATE DATABASE source_db');
$node->safe_psql('postgres', 'CREATE ROLE dump_owner LOGIN');
sql('source_db', q{
	CREATE EXTENSION paimon_sink;
	GRANT CREATE ON SCHEMA public TO dump_owner;
	GRANT EXECUTE ON FUNCTION paimon_sink.create_sink(text, regclass, text, integer, text[], interval,
		text, boolean, text, boolean, boolean, boolean) TO dump_owner;
	CREATE TABLE owned_events (id int);
	GRANT INSERT ON owned_events TO dump_owner;
	SET ROLE dump_owner;
	SELECT sink_name FROM paimon_sink.create_sink('owned_sink', 'owned_events');
	RESET ROLE;
	CREATE TABLE events (id int, note text);
	CREATE TABLE accounts (id int PRIMARY KEY, balance int);
	SELECT sink_name FROM paimon_sink.create_sink('events_sink', 'events', buckets => 2, bucket_key => '{id}');
	SELECT sink_name FROM paimon_sink.create_sink('accounts_sink', 'accounts', mode => 'upsert',
		checkpoint_interval => '1 hour');
	CREATE TABLE shifted (id int, gone int, note text);
	ALTER TABLE shifted DROP COLUMN gone;
	SELECT sink_name FROM paimon_sink.create_sink('shifted_sink', 'shifted');
	INSERT INTO events_sink VALUES (1, 'one');
	INSERT INTO accounts_sink VALUES (1, 10);
	-- a column added to the target and to the sink (alter_sink): its layout grew
	ALTER TABLE accounts ADD COLUMN note text DEFAULT 'none';
	SELECT count(*) FROM paimon_sink.alter_sink('accounts_sink');
	INSERT INTO accounts_sink (id, balance, note) VALUES (1, 11, 'eleven');
	SELECT paimon_sink.checkpoint('events_sink');
	SELECT paimon_sink.checkpoint('accounts_sink');
});

my $dump = $node->basedir . '/source_db.sql';
$node->command_ok([ 'pg_dump', '-d', $node->connstr('source_db'), '-f', $dump ], 'pg_dump runs');
$node->safe_psql('postgres', 'CREATE DATABASE restored_db');
$node->command_ok([ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-q', '-d', $node->connstr('restored_db'), '-f', $dump ],
	'the dump restores without an error');

is(sql('restored_db', "SELECT string_agg(sink_name || ':' || mode || ':' || buckets || ':' ||
		coalesce(checkpoint_interval::text, '-') || ':' || last_committed_checkpoint, ' ' ORDER BY sink_name)
		FROM paimon_sink.sinks"),
	'accounts_sink:upsert:1:01:00:00:1 events_sink:append:2:-:1 owned_sink:append:1:-:0 shifted_sink:append:1:-:0',
	'the sinks and their marks are back');
is(sql('restored_db', "SELECT owner_role || ' ' || foreign_table FROM paimon_sink.sinks
		WHERE sink_name = 'owned_sink'"),
	'dump_owner owned_sink', 'a sink comes back with its owner, through its foreign table');
my ($ret, $out, $err) = $node->psql('restored_db', 'DROP FOREIGN TABLE owned_sink');
like($err, qr/because sink "owned_sink" writes through it/,
	'the restored foreign table goes only with its sink');
is(sql('restored_db', "SELECT count(*) FROM paimon_sink.snapshots"), '2', 'and their snapshots');
ok($node->poll_query_until('restored_db', "SELECT count(*) = 2 FROM paimon_sink.writers WHERE ready"),
	'the restored database gets its writers');
sql('restored_db', q{
	INSERT INTO events_sink VALUES (2, 'two');
	INSERT INTO accounts_sink (id, balance, note) VALUES (1, 12, 'twelve'), (2, 20, DEFAULT);
	SELECT paimon_sink.checkpoint('events_sink');
	SELECT paimon_sink.checkpoint('accounts_sink');
});
is(sql('restored_db', "SELECT string_agg(id || '=' || note, ',' ORDER BY id) FROM events"), '1=one,2=two',
	'a restored append sink commits');
is(sql('restored_db', "SELECT string_agg(id || '=' || balance || '=' || note, ',' ORDER BY id) FROM accounts"),
	'1=12=twelve,2=20=none', 'a restored upsert sink commits, keyed as before, with the column alter_sink() added');
# the restored target lost its dropped column, and its columns' numbers moved: the sink
# matches its staged columns by name again (the numbers were the old relation's)
sql('restored_db', q{
	INSERT INTO shifted_sink VALUES (3, 'three');
	SELECT paimon_sink.checkpoint('shifted_sink');
});
is(sql('restored_db', "SELECT string_agg(id || '=' || note, ',' ORDER BY id) FROM shifted"), '3=three',
	"a restored target whose columns' numbers moved loads each column into its own");
sql('restored_db', "CREATE TABLE more (id int)");
is(sql('restored_db', "SELECT sink_name FROM paimon_sink.create_sink('more_sink', 'more')"), 'more_sink',
	'a new sink gets an id of its own');
is(sql('source_db', "SELECT string_agg(id || '=' || balance || '=' || note, ',' ORDER BY id) FROM accounts"),
	'1=11=eleven', 'the source database is untouched');

# CREATE EXTENSION starts the workers from inside its own transaction: the
# committer may look before that commits, and must look again after
$node->safe_psql('postgres', 'CREATE DATABASE slow_db');
sql('slow_db', "BEGIN; CREATE EXTENSION paimon_sink; SELECT pg_sleep(2); COMMIT;");
ok($node->poll_query_until('slow_db', "SELECT count(*) = 2 FROM paimon_sink.writers WHERE ready"),
	'the workers serve a database whose CREATE EXTENSION took a while to commit');

done_testing();
