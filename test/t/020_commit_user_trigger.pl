# The commit user's trigger (0.1--0.2 replaced a CHECK with it) refuses a
# bad commit user written by hand (23514) whatever the writer does: with
# session_replication_role = replica (as logical replication's apply and
# some restores run), with functions and operators named like the ones it
# uses planted in public and pg_temp, and it cannot be lost with plpgsql:
# the extension requires the language, so CREATE EXTENSION without it says
# so, and dropping the language cannot leave the extension without its check.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(start_node try_sql writers_ready);

my $node = start_node('commit_user');

sub sql { return $node->safe_psql(shift, shift); }

sql('postgres', q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE t (id int);
	SELECT sink_name FROM paimon_sink.create_sink('s', 't');
	CREATE ROLE hostile LOGIN;
	GRANT CREATE ON SCHEMA public TO hostile;
});
my $sink_id = sql('postgres', "SELECT sink_id FROM paimon_sink.sink_definition WHERE sink_name = 's'");
my $bad_insert =
  "INSERT INTO paimon_sink.commit_user_state (sink_id, commit_user) VALUES ($sink_id, 'has space')";

# a writer in replica mode (a subscription's apply, pg_restore --disable-triggers' kin)
my ($ret, $out, $err) = try_sql($node, "SET session_replication_role = replica; $bad_insert");
like($err, qr/ERROR:  23514: invalid commit user "has space"/,
	'replica mode: a bad commit user is refused with 23514');

# names like the ones the trigger uses, planted where a writer's search_path looks
($ret, $out, $err) = try_sql($node, q{
	CREATE FUNCTION public.format(text, text) RETURNS text LANGUAGE sql AS $$SELECT 'hijacked'$$;
	CREATE FUNCTION public.never_matches(text, text) RETURNS boolean LANGUAGE sql AS $$SELECT false$$;
	CREATE OPERATOR public.!~ (LEFTARG = text, RIGHTARG = text, FUNCTION = public.never_matches);
	CREATE FUNCTION pg_temp.format(text, text) RETURNS text LANGUAGE sql AS $$SELECT 'hijacked'$$;
	CREATE OPERATOR pg_temp.!~ (LEFTARG = text, RIGHTARG = text, FUNCTION = public.never_matches);
}, 'hostile');
is($ret, 0, 'a hostile role plants format() and !~ in public') or diag($err);
($ret, $out, $err) = try_sql($node,
	"SET search_path = public, pg_temp, pg_catalog;
	 CREATE FUNCTION pg_temp.format(text, text) RETURNS text LANGUAGE sql AS \$\$SELECT 'hijacked'\$\$;
	 $bad_insert");
like($err, qr/ERROR:  23514: invalid commit user "has space"/,
	'planted names change neither the check nor its message');

# without plpgsql
sql('postgres', 'CREATE DATABASE bare');
sql('bare', 'DROP EXTENSION plpgsql');
($ret, $out, $err) = try_sql($node, 'CREATE EXTENSION paimon_sink', undef, 'bare');
like($err, qr/required extension "plpgsql" is not installed/,
	'CREATE EXTENSION without plpgsql says that it requires it');
($ret, $out, $err) = try_sql($node, 'CREATE EXTENSION paimon_sink CASCADE', undef, 'bare');
is($ret, 0, 'and CASCADE installs it') or diag($err);

# dropping the language: refused, and with CASCADE the extension goes too,
# never left without its check
($ret, $out, $err) = try_sql($node, 'DROP EXTENSION plpgsql');
like($err, qr/2BP01/, 'DROP EXTENSION plpgsql is refused while paimon_sink needs it');
($ret, $out, $err) = try_sql($node, "DROP EXTENSION plpgsql CASCADE; $bad_insert", undef, 'bare');
unlike($out . $err, qr/INSERT 0 1/, 'once plpgsql is dropped, no bad commit user is accepted');
($ret, $out, $err) = try_sql($node, $bad_insert);
like($err, qr/ERROR:  23514/, 'the first database still refuses one');

$node->stop;
done_testing();
