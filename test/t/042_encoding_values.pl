# Values whose send function depends on the session's client encoding reach
# the target as written, and never make a checkpoint that cannot commit:
#  - in a LATIN1 database, an xml value staged by a session whose client
#    encoding is SQL_ASCII (fdw.c does not switch such a session to the
#    database encoding, so xml_send writes LATIN1 bytes without an encoding
#    declaration, and xml_recv in the committer reads them as UTF-8: the
#    commit fails every time, "invalid XML content");
#  - in a LATIN1 database, an xml value staged by a UTF8 session comes out
#    of xml_send with an encoding declaration, which the target keeps: the
#    value is not the one inserted;
#  - in a UTF8 database, a statement that changes client_encoding while it
#    runs (a function calling set_config) stages the rows after the change
#    in the new encoding (fdw.c reads the client encoding once, when the
#    statement starts): json_send converts them, and the committer's
#    json_recv refuses them, "invalid byte sequence": the commit fails every
#    time;
#  - in a SQL_ASCII database, whose values are bytes, a UTF8 session stages
#    a text value holding bytes that are not UTF-8 (value_encoding.c copies
#    it) but not a text[] or a record holding the same value (their send
#    functions validate it in the client encoding: 22021 at the INSERT),
#    where an INSERT into a table takes both.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(start_node try_sql writers_ready);

my $node = start_node('encoding_values');

$node->safe_psql('postgres',
	"CREATE DATABASE latin1db ENCODING 'LATIN1' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'");

sub latin1 { return $node->safe_psql('latin1db', shift); }

latin1(q{
	CREATE EXTENSION paimon_sink;
	-- '<a>é</a>' with é spelt by its code, whatever psql's encoding
	CREATE TABLE src (id int, x xml);
	INSERT INTO src VALUES (1, ('<a>' || chr(233) || '</a>')::xml);
	CREATE TABLE t_ascii (id int, x xml);
	CREATE TABLE t_utf8 (id int, x xml);
	SELECT sink_name FROM paimon_sink.create_sink('s_ascii', 't_ascii');
	SELECT sink_name FROM paimon_sink.create_sink('s_utf8', 't_utf8');
});
ok(writers_ready($node, 'latin1db'), 'the writers of the LATIN1 database serve');

# stage(DATABASE, ENCODING, SINK, SELECT): a session of client_encoding
# ENCODING writes SELECT's rows into SINK, then checkpoints it; returns
# (exit code, stdout, stderr)
sub stage
{
	my ($database, $encoding, $sink, $select) = @_;
	return try_sql($node, "SET client_encoding = '$encoding';
		INSERT INTO $sink $select;
		RESET client_encoding;
		SELECT row_count FROM paimon_sink.checkpoint('$sink');", undef, $database);
}

# a SQL_ASCII client: the checkpoint commits
my ($ret, $out, $err) = stage('latin1db', 'SQL_ASCII', 's_ascii', 'SELECT * FROM src');
is($ret, 0, 'LATIN1 database: xml staged by a SQL_ASCII session commits') or diag($err);
is( latin1(q{SELECT count(*) FROM t_ascii t JOIN src s USING (id)
		WHERE t.x::text = s.x::text}),
	'1', 'LATIN1 database: the xml of a SQL_ASCII session reaches the target as written');

# a UTF8 client: the value reaches the target as written (no declaration added)
($ret, $out, $err) = stage('latin1db', 'UTF8', 's_utf8', 'SELECT * FROM src');
is($ret, 0, 'LATIN1 database: xml staged by a UTF8 session commits') or diag($err);
is( latin1(q{SELECT count(*) FROM t_utf8 t JOIN src s USING (id)
		WHERE t.x::text = s.x::text}),
	'1', 'LATIN1 database: the xml of a UTF8 session reaches the target as written')
  or diag(latin1("SELECT x::text FROM t_utf8"));

# --- a UTF8 database: client_encoding changed while the statement runs
$node->safe_psql('postgres', q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE jsrc (id int, j json, t text);
	INSERT INTO jsrc SELECT g, to_json(chr(233)), chr(233) FROM generate_series(1, 3) g;
	CREATE TABLE jt (LIKE jsrc);
	SELECT sink_name FROM paimon_sink.create_sink('js', 'jt');
	-- a function of the statement that switches the session to LATIN1 at row 2
	CREATE FUNCTION flip(i int) RETURNS int LANGUAGE plpgsql AS $$
	BEGIN
		IF i = 2 THEN PERFORM set_config('client_encoding', 'LATIN1', false); END IF;
		RETURN i;
	END $$;
});
ok(writers_ready($node, 'postgres'), 'the writers of the UTF8 database serve');
($ret, $out, $err) =
  stage('postgres', 'UTF8', 'js', 'SELECT flip(id), j, t FROM jsrc ORDER BY id');
is($ret, 0, 'rows staged after a client_encoding change in the statement commit') or diag($err);
is( $node->safe_psql('postgres', q{SELECT count(*) FROM jt t JOIN jsrc s USING (id)
		WHERE t.j::text = s.j::text AND t.t = s.t}),
	'3', 'every row reaches the target as written');

# --- a SQL_ASCII database: bytes that are not UTF-8, staged by a UTF8 session
$node->safe_psql('postgres',
	"CREATE DATABASE asciidb ENCODING 'SQL_ASCII' TEMPLATE template0 LC_COLLATE 'C' LC_CTYPE 'C'");
$node->safe_psql('asciidb', q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE bsrc (id int, t text, a text[]);
	INSERT INTO bsrc VALUES (1, E'\\xff\\xfe', ARRAY[E'\\xff']);
	CREATE TABLE bt (LIKE bsrc);
	SELECT sink_name FROM paimon_sink.create_sink('bs', 'bt');
});
ok(writers_ready($node, 'asciidb'), 'the writers of the SQL_ASCII database serve');
($ret, $out, $err) = stage('asciidb', 'UTF8', 'bs', 'SELECT * FROM bsrc');
is($ret, 0, 'SQL_ASCII database: a UTF8 session stages text and text[] alike') or diag($err);
is( $node->safe_psql('asciidb', q{SELECT count(*) FROM bt t JOIN bsrc s USING (id)
		WHERE t.t = s.t AND t.a = s.a}),
	'1', 'SQL_ASCII database: the bytes reach the target as written');

$node->stop;
done_testing();
