# The way forward for sinks that 0.1 left without an owner (issue 28, item
# 4).  0.1 recorded a sink's owner apart from its foreign table's, and let
# the foreign table go: a server running each released library (built by
# test/release-install, passed in PAIMON_SINK_RELEASES as for 009) breaks
# four sinks with checkpoints pending, each a way 0.1 allowed:
#   moved   REASSIGN OWNED BY its owner TO ops2, DROP OWNED, DROP ROLE (the
#           issue's sequence: the owner left a bare oid, commits 42501);
#   lost    DROP OWNED BY its owner (its foreign table with it), DROP ROLE;
#   dropped DROP FOREIGN TABLE by its owner, who stays (an upsert sink);
#   gone    DROP TABLE target CASCADE (the foreign table with it);
#   blocked DROP FOREIGN TABLE, and another table took its name.
# This library then starts on the same data directory, and ALTER EXTENSION
# paimon_sink UPDATE must give each sink a live owner: moved the owner of
# its foreign table, dropped its foreign table back (owned by the recorded
# owner, who exists), out of the extension's members and tied to its
# target, so that every pending row commits once; lost, whose recorded
# owner is gone too, is left to a superuser's restore_foreign_table() that
# names the owner its commits will run as (the update never guesses one:
# it warns, saying how); gone, with nothing left to commit into, is a
# superuser's to drop; blocked is left to a superuser's
# restore_foreign_table() (the update warns and goes on).  Afterwards DROP ROLE is refused while the
# role owns a sink.
use strict;
use warnings;
use File::Copy qw(move);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(try_sql writers_ready released_versions);

my %releases = released_versions();

for my $version (sort keys %releases)
{
	upgrade_from($version, $releases{$version});
}
done_testing();

sub upgrade_from
{
	my ($version, $install_path) = @_;
	my $old = PostgreSQL::Test::Cluster->new("old_owners_$version", install_path => $install_path);
	$old->init;
	$old->start;
	my $sql = sub { return $old->safe_psql('postgres', shift); };
	my $as = sub {
		my ($role, $statement) = @_;
		my ($ret, $out, $err) = try_sql($old, $statement, $role);
		is($ret, 0, "$version: $role: $statement") or diag($err);
	};

	$sql->(q{
		CREATE EXTENSION paimon_sink;
		CREATE ROLE ops2 LOGIN;
		CREATE ROLE tgt_owner LOGIN;
		DO $$
		DECLARE
			r text;
		BEGIN
			FOREACH r IN ARRAY ARRAY['ops_a', 'ops_b', 'ops_c', 'ops_d', 'ops_e'] LOOP
				EXECUTE format('CREATE ROLE %I LOGIN', r);
				EXECUTE format('GRANT EXECUTE ON FUNCTION paimon_sink.create_sink(text, regclass, text, '
					'integer, text[], interval, text, boolean) TO %I', r);
				EXECUTE format('GRANT CREATE ON SCHEMA public TO %I', r);
			END LOOP;
		END
		$$;
		CREATE TABLE t_moved (id int PRIMARY KEY, v text);
		GRANT INSERT ON t_moved TO ops_a, ops2;
		CREATE TABLE t_lost (id int PRIMARY KEY, v text);
		ALTER TABLE t_lost OWNER TO tgt_owner;
		GRANT INSERT ON t_lost TO ops_b;
		CREATE TABLE t_dropped (id int PRIMARY KEY, v text);
		GRANT SELECT, INSERT, UPDATE, DELETE ON t_dropped TO ops_c;
		CREATE TABLE t_gone (id int PRIMARY KEY, v text);
		GRANT INSERT ON t_gone TO ops_d;
		CREATE TABLE t_blocked (id int PRIMARY KEY, v text);
		GRANT INSERT ON t_blocked TO ops_e;
	});
	$as->('ops_a', "SELECT sink_name FROM paimon_sink.create_sink('moved', 't_moved')");
	$as->('ops_b', "SELECT sink_name FROM paimon_sink.create_sink('lost', 't_lost')");
	$as->('ops_c', "SELECT sink_name FROM paimon_sink.create_sink('dropped', 't_dropped', mode => 'upsert')");
	$as->('ops_d', "SELECT sink_name FROM paimon_sink.create_sink('gone', 't_gone')");
	$as->('ops_e', "SELECT sink_name FROM paimon_sink.create_sink('blocked', 't_blocked')");
	ok($old->poll_query_until('postgres', "SELECT count(*) = 2 FROM paimon_sink.writers WHERE ready"),
		"$version: its writers serve");
	# each sink: checkpoint 1 prepared (ids 1-5), ids 6-10 staged only
	for my $sink (qw(moved lost dropped gone blocked))
	{
		$sql->("SET paimon_sink.commit_user = 'job';
			INSERT INTO $sink SELECT g, 'one' FROM generate_series(1, 5) g");
		$sql->("SELECT count(*) FROM paimon_sink.prepare_commit('$sink', 'job', 1)");
		$sql->("SET paimon_sink.commit_user = 'job';
			INSERT INTO $sink SELECT g, 'two' FROM generate_series(6, 10) g");
	}
	# what 0.1 let through
	$sql->('REASSIGN OWNED BY ops_a TO ops2; DROP OWNED BY ops_a; DROP ROLE ops_a');
	$sql->('DROP OWNED BY ops_b; DROP ROLE ops_b');
	$as->('ops_c', 'DROP FOREIGN TABLE dropped');
	$sql->('DROP TABLE t_gone CASCADE');
	$as->('ops_e', 'DROP FOREIGN TABLE blocked');
	$sql->('CREATE TABLE blocked (squatter int)');
	is($sql->("SELECT string_agg(sink_name || ':' || coalesce(to_regclass(sink_name)::text, '-'), ' '
			ORDER BY sink_name) FROM paimon_sink.sinks"),
		'blocked:blocked dropped:- gone:- lost:- moved:moved', "$version: four sinks lost their foreign tables");
	is($sql->("SELECT count(*) FROM paimon_sink.pending_checkpoints"), '5',
		"$version: every sink has its checkpoint pending");
	$old->stop;

	# the same data directory, started by this library
	my $new = PostgreSQL::Test::Cluster->new("new_owners_$version");
	rmdir $new->data_dir;
	move($old->data_dir, $new->data_dir) or die "could not move the data directory: $!";
	$new->append_conf('postgresql.conf', "port = " . $new->port);
	$new->start;
	$sql = sub { return $new->safe_psql('postgres', shift); };
	my ($ret, $out, $err) = try_sql($new, 'ALTER EXTENSION paimon_sink UPDATE');
	is($ret, 0, "$version: the update runs") or diag($err);
	like($err, qr/WARNING:  01000: sink "moved" is owned by role "ops2" from now on, the owner of its foreign table \(it was recorded as a dropped role, OID \d+\)/,
		"$version: it says the moved sink's owner is its foreign table's");
	like($err, qr/WARNING:  01000: restored foreign table (public\.)?dropped of sink "dropped", owned by role "ops_c"/,
		"$version: it restores a foreign table dropped by its owner, owned by that owner");
	like($err, qr/WARNING:  01000: sink "lost" has no foreign table and its recorded owner was dropped: it has no owner.*HINT:  A superuser gives it one with SELECT paimon_sink\.restore_foreign_table\('lost', 'role'\)/s,
		"$version: and names no owner for one whose recorded owner is gone, saying how to give it one");
	like($err, qr/WARNING:  01000: could not restore the foreign table of sink "blocked": relation "blocked" already exists.*HINT:  The sink has no owner until a superuser calls paimon_sink\.restore_foreign_table\(\)/s,
		"$version: and goes on past one it cannot restore, saying what to do");
	ok(writers_ready($new, 'postgres'), "$version: writers serve after the update");
	is($sql->("SELECT string_agg(sink_name || ':' || coalesce(owner_role::text, '-'), ' ' ORDER BY sink_name)
			FROM paimon_sink.sinks"),
		'blocked:- dropped:ops_c gone:- lost:- moved:ops2', "$version: each sink has its owner, or none guessed");
	($ret, $out, $err) = try_sql($new, "SELECT paimon_sink.restore_foreign_table('lost', NULL)");
	like($err, qr/22004: the owner of the restored foreign table of sink "lost" must not be NULL/,
		"$version: restore_foreign_table() takes no NULL owner");
	($ret, $out, $err) = try_sql($new, "SELECT paimon_sink.restore_foreign_table('lost', owner => 'tgt_owner')");
	is($ret . ' ' . $out, '0 lost', "$version: a superuser restores it, naming its owner") or diag($err);
	is($sql->("SELECT count(*) FROM pg_attribute WHERE attrelid = 'paimon_sink.sink_definition'::regclass
			AND attname = 'owner_role' AND NOT attisdropped"), '0',
		"$version: the catalog no longer records the owner apart");
	is($sql->("SELECT count(*) FROM pg_depend WHERE refclassid = 'pg_extension'::regclass
			AND classid = 'pg_class'::regclass AND objid IN ('lost'::regclass, 'dropped'::regclass)"), '0',
		"$version: the restored foreign tables are not the extension's");
	like((try_sql($new, 'DROP TABLE t_lost'))[2], qr/2BP01: cannot drop table t_lost because other objects depend on it/,
		"$version: and they depend on their targets");
	is($sql->("SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', ' ORDER BY attnum)
			FROM pg_attribute WHERE attrelid = 'dropped'::regclass AND attnum > 0"),
		'id integer, v text, _row_kind text', "$version: in the sink's layout");

	# every pending row commits once, as each sink's owner
	for my $case ([ 'moved', 'ops2' ], [ 'lost', 'tgt_owner' ], [ 'dropped', 'ops_c' ])
	{
		my ($sink, $owner) = @$case;
		($ret, $out, $err) = try_sql($new, "SELECT sum(row_count) FROM paimon_sink.prepare_commit('$sink', 'job', 2);
			SELECT count(*) FROM paimon_sink.commit('$sink', 'job', 2)", $owner);
		is($ret, 0, "$version: $owner prepares and commits $sink") or diag($err);
		is($sql->("SELECT count(*) || ' ' || count(DISTINCT id) FROM t_$sink"), '10 10',
			"$version: $sink: every row once");
	}
	($ret, $out, $err) = try_sql($new, "GRANT INSERT ON lost TO ops2", 'tgt_owner');
	($ret, $out, $err) = try_sql($new, "INSERT INTO lost VALUES (11, 'three')", 'ops2');
	is($ret, 0, "$version: the restored sink takes rows once its owner grants INSERT") or diag($err);
	($ret, $out, $err) = try_sql($new, "SELECT count(*) FROM paimon_sink.checkpoint('lost')", 'tgt_owner');
	is($sql->("SELECT count(*) FROM t_lost"), '11', "$version: and commits them");

	# the blocked sink: a superuser moves the other table away and restores it
	like((try_sql($new, "SELECT count(*) FROM paimon_sink.commit('blocked', 'job', 1)", 'ops_e'))[2],
		qr/42P01: cannot commit sink "blocked": its foreign table was dropped.*restore_foreign_table\('blocked'/s,
		"$version: the blocked sink says how to restore it");
	($ret, $out, $err) = try_sql($new, "ALTER TABLE blocked RENAME TO squatter;
		SELECT paimon_sink.restore_foreign_table('blocked', owner => 'ops_e')");
	is($ret . ' ' . $out, '0 blocked', "$version: a superuser restores it, owned by ops_e") or diag($err);
	($ret, $out, $err) = try_sql($new, "SELECT count(*) FROM paimon_sink.prepare_commit('blocked', 'job', 2);
		SELECT count(*) FROM paimon_sink.commit('blocked', 'job', 2)", 'ops_e');
	is($ret, 0, "$version: ops_e commits it") or diag($err);
	is($sql->("SELECT count(*) || ' ' || count(DISTINCT id) FROM t_blocked"), '10 10',
		"$version: blocked: every row once");

	is($sql->("SELECT count(*) FROM paimon_sink.pending_checkpoints WHERE sink_name <> 'gone'"), '0',
		"$version: nothing pending but the sink with no target");

	# the sink with no target: a superuser drops it, nothing else can
	like((try_sql($new, "SELECT paimon_sink.restore_foreign_table('gone', owner => 'ops_d')"))[2],
		qr/42P01: the target table of sink "gone" was dropped.*drop_sink\('gone', force => true\)/s,
		"$version: a sink whose target is gone cannot be restored");
	like((try_sql($new, "SELECT paimon_sink.drop_sink('gone', force => true)", 'ops_d'))[2],
		qr/42P01: cannot drop sink "gone": its foreign table was dropped/,
		"$version: its old owner cannot drop it");
	($ret, $out, $err) = try_sql($new, "SELECT paimon_sink.drop_sink('gone', force => true)");
	is($ret, 0, "$version: a superuser drops it") or diag($err);

	# and from now on the owner is a dependency
	like((try_sql($new, 'DROP ROLE ops2'))[2], qr/2BP01: role "ops2" cannot be dropped because it owns sink "moved"/,
		"$version: DROP ROLE is refused while the role owns a sink");
	like((try_sql($new, 'DROP OWNED BY ops_c'))[2], qr/2BP01: cannot drop foreign table public\.dropped because sink "dropped"/,
		"$version: and DROP OWNED would not take its foreign table");
	$new->stop;
}
