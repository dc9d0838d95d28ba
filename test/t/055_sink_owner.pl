# A sink's owner is a real dependency (issue 28, item 4).  A sink's owner is
# its foreign table's owner, which PostgreSQL records in pg_shdepend:
#  - the issue's sequence, REASSIGN OWNED BY ops TO ops2; DROP OWNED BY ops;
#    DROP ROLE ops, with checkpoints pending, moves the sink to ops2 (the
#    sinks view names it), and ops2's commit() commits the rows once (0.1
#    left the owner a bare oid and every commit() failed with 42501);
#  - without the REASSIGN, DROP ROLE and DROP OWNED are refused (2BP01,
#    naming the sink), nothing lost;
#  - a new owner lacking INSERT on the target fails the commit with 42501
#    naming the right and the GRANT, nothing applied, and commits once
#    granted; ALTER FOREIGN TABLE ... OWNER TO moves the sink too;
#  - the foreign table goes only with its sink: DROP FOREIGN TABLE, DROP
#    TABLE target CASCADE, DROP SCHEMA ... CASCADE and the DROP of a
#    partitioned parent are refused, the pending rows still commit once;
#    drop_sink and DROP EXTENSION go through;
#  - a sink group has no owner of its own: it follows its members';
#  - a sink that lost its foreign table anyway (dropped while the library
#    was not loaded) has no owner, and restore_foreign_table() (a
#    superuser's) gives it one back: its rows commit once.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(start_node try_sql writers_ready);

my $node = start_node('sink_owner');
my $create_sink = 'paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, '
  . 'boolean, text, boolean, boolean, boolean)';

sub sql { return $node->safe_psql('postgres', shift); }

# refused(SQL, ROLE): the stderr of SQL run as ROLE, which must fail
sub refused
{
	my ($sql, $role) = @_;
	my ($ret, $out, $err) = try_sql($node, $sql, $role);
	return $ret == 0 ? "(succeeded)" : $err;
}

# ok_as(SQL, ROLE, NAME): SQL as ROLE succeeds; returns its output
sub ok_as
{
	my ($sql, $role, $name) = @_;
	my ($ret, $out, $err) = try_sql($node, $sql, $role);
	is($ret, 0, $name) or diag($err);
	return $out;
}

sql(qq{
	CREATE EXTENSION paimon_sink;
	CREATE ROLE ops2 LOGIN;
	CREATE ROLE ops3 LOGIN;
	CREATE ROLE writer LOGIN;
	GRANT EXECUTE ON FUNCTION $create_sink TO ops2;
	GRANT CREATE ON SCHEMA public TO ops2;
});
ok(writers_ready($node, 'postgres'), 'writers serve');

# owned_sink(ROLE, SINK, [MODE], [SCHEMA]): a new role ROLE creates sink
# SINK on a new table t_SINK (the superuser's, INSERT granted to ROLE and
# ops2), writes 5 rows as writer under commit user job and prepares them as
# checkpoint 1, then 5 more staged only
sub owned_sink
{
	my ($role, $sink, $mode, $schema) = @_;
	$mode //= 'append';
	$schema //= 'public';
	sql(qq{
		CREATE ROLE $role LOGIN;
		GRANT EXECUTE ON FUNCTION $create_sink TO $role;
		GRANT CREATE, USAGE ON SCHEMA $schema TO $role;
		GRANT USAGE ON SCHEMA $schema TO writer;
		CREATE TABLE $schema.t_$sink (id int PRIMARY KEY, v text);
		GRANT SELECT, INSERT, UPDATE, DELETE ON $schema.t_$sink TO $role, ops2;
	});
	ok_as(qq{SELECT sink_name FROM paimon_sink.create_sink('$sink', '$schema.t_$sink', mode => '$mode');
		GRANT INSERT ON $schema.$sink TO writer;}, $role, "$role creates sink $sink");
	ok_as(qq{SET paimon_sink.commit_user = 'job';
		INSERT INTO $schema.$sink SELECT g, 'first' FROM generate_series(1, 5) g;}, 'writer',
		"$sink: rows written");
	ok_as("SELECT count(*) FROM paimon_sink.prepare_commit('$sink', 'job', 1)", $role,
		"$sink: checkpoint 1 prepared");
	ok_as(qq{SET paimon_sink.commit_user = 'job';
		INSERT INTO $schema.$sink SELECT g, 'second' FROM generate_series(6, 10) g;}, 'writer',
		"$sink: more rows staged");
}

# committed_once(SINK, ROLE, [SCHEMA]): ROLE prepares checkpoint 2 and
# commits up to it; the target then holds the 10 rows, each once
sub committed_once
{
	my ($sink, $role, $schema) = @_;
	$schema //= 'public';
	ok_as(qq{SELECT count(*) FROM paimon_sink.prepare_commit('$sink', 'job', 2);
		SELECT count(*) FROM paimon_sink.commit('$sink', 'job', 2);}, $role,
		"$sink: $role commits the pending checkpoints");
	is(sql("SELECT count(*) || ' ' || count(DISTINCT id) FROM $schema.t_$sink"), '10 10',
		"$sink: every row once");
	is(sql("SELECT count(*) FROM paimon_sink.pending_checkpoints WHERE sink_name = '$sink'"), '0',
		"$sink: nothing pending");
}

# --- the issue's sequence: the sink moves to ops2, nothing is lost
owned_sink('ops', 'issue');
my ($ret, $out, $err) = try_sql($node, 'REASSIGN OWNED BY ops TO ops2; DROP OWNED BY ops; DROP ROLE ops');
is($ret, 0, 'REASSIGN OWNED, DROP OWNED and DROP ROLE of the old owner go through') or diag($err);
is(sql("SELECT owner_role FROM paimon_sink.sinks WHERE sink_name = 'issue'"), 'ops2',
	'the sinks view names the new owner');
is(sql("SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = 'issue'::regclass"), 'ops2',
	'which owns the foreign table');
committed_once('issue', 'ops2');
is(sql("SELECT bool_or(newly_committed) FROM paimon_sink.commit('issue', 'job', 2)"), 'f',
	'a superuser\'s commit() again commits nothing twice');
like(refused('DROP ROLE ops2'), qr/2BP01: role "ops2" cannot be dropped because it owns sink "issue"/,
	'the new owner cannot be dropped in turn');

# --- no REASSIGN: DROP ROLE and DROP OWNED are refused, naming the sink
owned_sink('ops_b', 'kept');
like(refused('DROP ROLE ops_b'),
	qr/ERROR:  2BP01: role "ops_b" cannot be dropped because it owns sink "kept".*REASSIGN OWNED BY ops_b TO new_owner.*paimon_sink\.drop_sink\('kept'\)/s,
	'DROP ROLE of a sink\'s owner is refused, naming the sink and the ways on');
like(refused('DROP OWNED BY ops_b'),
	qr/ERROR:  2BP01: cannot drop foreign table public\.kept because sink "kept" writes through it.*HINT:  .*REASSIGN OWNED BY ops_b TO new_owner/s,
	'DROP OWNED BY the owner is refused: it would drop the foreign table');
like(refused('DROP ROLE ops_b'), qr/2BP01: role "ops_b" cannot be dropped because it owns sink "kept"/,
	'and DROP ROLE still is');
is(sql("SELECT owner_role || ' ' || (SELECT count(*) FROM paimon_sink.pending_checkpoints p
		WHERE p.sink_name = s.sink_name) FROM paimon_sink.sinks s WHERE sink_name = 'kept'"), 'ops_b 1',
	'nothing was lost: the owner and the pending checkpoint are there');
ok_as(q{SET paimon_sink.commit_user = 'job'; INSERT INTO kept VALUES (11, 'third')}, 'writer',
	'the writer still writes');
ok_as(qq{SELECT count(*) FROM paimon_sink.prepare_commit('kept', 'job', 2);
	SELECT count(*) FROM paimon_sink.commit('kept', 'job', 2);}, 'ops_b', 'the owner commits');
is(sql("SELECT count(*) || ' ' || count(DISTINCT id) FROM t_kept"), '11 11', 'kept: every row once');

# --- a new owner lacking INSERT on the target: 42501 with the GRANT, then once granted
owned_sink('ops_c', 'ungranted');
sql('REASSIGN OWNED BY ops_c TO ops3');
is(sql("SELECT owner_role FROM paimon_sink.sinks WHERE sink_name = 'ungranted'"), 'ops3',
	'REASSIGN OWNED moved the sink to ops3');
like(refused("SELECT count(*) FROM paimon_sink.commit('ungranted', 'job', 1)", 'ops3'),
	qr/ERROR:  42501: permission denied for table t_ungranted.*DETAIL:  Commits of sink "ungranted" run as its owner, role "ops3" .* which lacks INSERT on public\.t_ungranted.*HINT:  GRANT INSERT ON TABLE public\.t_ungranted TO ops3;/s,
	'its commit fails naming the right and the GRANT');
is(sql("SELECT count(*) FROM t_ungranted") . ' '
	. sql("SELECT count(*) FROM paimon_sink.pending_checkpoints WHERE sink_name = 'ungranted'"),
	'0 1', 'nothing was applied: the checkpoint stays prepared');
like(refused("SELECT count(*) FROM paimon_sink.commit('ungranted', 'job', 1)", 'ops_c'),
	qr/42501: permission denied to commit sink "ungranted".*role "ops3"/s,
	'the old owner may not commit it any more');
sql('GRANT INSERT ON t_ungranted TO ops3');
committed_once('ungranted', 'ops3');

# --- ALTER FOREIGN TABLE ... OWNER TO moves the sink
owned_sink('ops_d', 'altered');
sql('ALTER FOREIGN TABLE altered OWNER TO ops2');
is(sql("SELECT owner_role FROM paimon_sink.sinks WHERE sink_name = 'altered'"), 'ops2',
	'ALTER FOREIGN TABLE ... OWNER TO moves the sink');
committed_once('altered', 'ops2');
($ret, $out, $err) = try_sql($node, 'DROP OWNED BY ops_d; DROP ROLE ops_d');
is($ret, 0, 'and its old owner can go') or diag($err);

# --- the drop paths: each refused, naming the sink, nothing lost
sql('CREATE SCHEMA sch');
owned_sink('ops_e', 'guarded', 'upsert', 'sch');
like(refused('DROP FOREIGN TABLE sch.guarded', 'ops_e'),
	qr/ERROR:  2BP01: cannot drop foreign table sch\.guarded because sink "guarded" writes through it.*HINT:  Drop the sink first with SELECT paimon_sink\.drop_sink\('guarded'\)/s,
	'DROP FOREIGN TABLE by its owner is refused');
like(refused('DROP TABLE sch.t_guarded CASCADE'), qr/2BP01: cannot drop foreign table sch\.guarded because sink "guarded"/,
	'DROP TABLE target CASCADE is refused');
like(refused('DROP SCHEMA sch CASCADE'), qr/2BP01: cannot drop foreign table sch\.guarded because sink "guarded"/,
	'DROP SCHEMA ... CASCADE is refused');
like(refused('BEGIN; DROP FOREIGN TABLE sch.guarded; COMMIT'), qr/2BP01/,
	'in a transaction block too');
sql(q{CREATE TABLE sch.router (id int, v text, _row_kind text) PARTITION BY RANGE (id);
	ALTER TABLE sch.router ATTACH PARTITION sch.guarded FOR VALUES FROM (0) TO (1000)});
like(refused('DROP TABLE sch.router'), qr/2BP01: cannot drop foreign table sch\.guarded because sink "guarded"/,
	'dropping a partitioned parent that would take it is refused');
sql('ALTER TABLE sch.router DETACH PARTITION sch.guarded; DROP TABLE sch.router');
is(sql("SELECT count(*) FROM pg_class WHERE oid = 'sch.guarded'::regclass"), '1', 'the foreign table is there');
committed_once('guarded', 'ops_e', 'sch');
ok_as(q{SELECT paimon_sink.drop_sink('guarded')}, 'ops_e', 'drop_sink drops it');
($ret, $out, $err) = try_sql($node, 'DROP SCHEMA sch CASCADE');
is($ret, 0, 'and then the target and its schema go') or diag($err);

# --- a sink group follows its members' owners
owned_sink('ops_g', 'g1');
sql(q{CREATE TABLE t_g2 (id int PRIMARY KEY, v text); GRANT INSERT ON t_g2 TO ops_g, ops2});
ok_as(q{SELECT sink_name FROM paimon_sink.create_sink('g2', 't_g2');
	SELECT paimon_sink.create_sink_group('grp', ARRAY['g1', 'g2'])}, 'ops_g', 'ops_g groups its sinks');
($ret, $out, $err) = try_sql($node, 'REASSIGN OWNED BY ops_g TO ops2; DROP OWNED BY ops_g; DROP ROLE ops_g');
is($ret, 0, 'the group\'s creator can be reassigned and dropped') or diag($err);
is(sql("SELECT owners::text FROM paimon_sink.sink_groups WHERE group_name = 'grp'"), '{ops2}',
	'the group\'s owners are its members\', moved with them');
ok_as(q{SELECT count(*) FROM paimon_sink.commit('grp', 'job', 1)}, 'ops2',
	'the new owner commits the group');
is(sql('SELECT count(*) FROM t_g1'), '5', 'checkpoint 1 of the group committed');
ok_as(q{SELECT paimon_sink.drop_sink_group('grp')}, 'ops2', 'and drops it');

# --- a sink whose foreign table went while the library was not loaded
owned_sink('ops_f', 'orphaned');
sql("GRANT INSERT ON t_orphaned TO ops3");
$node->append_conf('postgresql.conf', "shared_preload_libraries = ''");
$node->restart;
sql('DROP FOREIGN TABLE orphaned');
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'paimon_sink'");
$node->restart;
ok(writers_ready($node, 'postgres'), 'writers serve again');
is(sql("SELECT owner_role IS NULL FROM paimon_sink.sinks WHERE sink_name = 'orphaned'"), 't',
	'the sink has no owner');
like(refused("SELECT count(*) FROM paimon_sink.commit('orphaned', 'job', 1)"),
	qr/ERROR:  42P01: cannot commit sink "orphaned": its foreign table was dropped.*paimon_sink\.restore_foreign_table\('orphaned'/s,
	'its commit says so, and how to restore it');
like(refused("SELECT count(*) FROM paimon_sink.commit('orphaned', 'job', 1)", 'ops_f'),
	qr/42P01: cannot commit sink "orphaned": its foreign table was dropped/, 'to its old owner too');
like(refused("SELECT paimon_sink.restore_foreign_table('orphaned', owner => 'ops3')", 'ops_f'),
	qr/42501/, 'restore_foreign_table() is a superuser\'s');
($ret, $out, $err) = try_sql($node, "SELECT paimon_sink.restore_foreign_table('orphaned', owner => 'ops3')");
is($ret . ' ' . $out, '0 orphaned', 'a superuser restores the foreign table') or diag($err);
like($err, qr/NOTICE:  00000: restored foreign table public\.orphaned of sink "orphaned", owned by role "ops3"/,
	'with a notice naming its owner');
is(sql("SELECT owner_role FROM paimon_sink.sinks WHERE sink_name = 'orphaned'"), 'ops3',
	'the sink has an owner again');
is(sql("SELECT paimon_sink.restore_foreign_table('orphaned', owner => 'ops_f')"), 'orphaned',
	'a second call leaves it as it is');
committed_once('orphaned', 'ops3');
ok_as(q{GRANT INSERT ON orphaned TO writer}, 'ops3', 'its owner grants INSERT again');
ok_as(q{INSERT INTO orphaned VALUES (100, 'after')}, 'writer', 'and the sink takes rows');
ok_as(q{SELECT count(*) FROM paimon_sink.checkpoint('orphaned')}, 'ops3', 'which commit');
is(sql('SELECT count(*) FROM t_orphaned'), '11', 'the restored sink wrote its row');

# --- DROP EXTENSION still takes every sink with it
($ret, $out, $err) = try_sql($node, 'DROP EXTENSION paimon_sink CASCADE');
is($ret, 0, 'DROP EXTENSION ... CASCADE drops the sinks\' foreign tables with it') or diag($err);
is(sql("SELECT count(*) FROM pg_class WHERE relname IN ('issue', 'kept', 'orphaned')"), '0',
	'they are gone');

done_testing();
