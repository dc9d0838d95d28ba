# A committer error reaches the client whole: the load's own SQLSTATE with
# the schema, table, column and constraint names it carries, and a long
# detail uncut; one too long for the request slot arrives cut with a
# marker.  The commit runs in the committer, so these fields cross from it
# to the calling backend (request.c).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(writers_ready);

my $node = PostgreSQL::Test::Cluster->new('error_relay');
$node->init;
$node->start;

sub sql { return $node->safe_psql('postgres', shift); }

# psql in verbose mode prints every field of the error: SQLSTATE after the
# severity, then SCHEMA NAME, TABLE NAME, COLUMN NAME, CONSTRAINT NAME
sub try_sql
{
	my ($sql) = @_;
	my ($ret, $stdout, $stderr) =
	  $node->psql('postgres', "\\set VERBOSITY verbose\n$sql", on_error_stop => 1);
	return ($ret, $stderr);
}

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE SCHEMA app;
	CREATE TABLE app.target_u (id int CONSTRAINT target_u_key PRIMARY KEY, note text);
	CREATE TABLE app.target_n (id int, note text);
	CREATE TABLE app.target_t (id int, note text);
	CREATE FUNCTION app.refuse() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF NEW.note = 'long' THEN
			RAISE EXCEPTION 'row % refused', NEW.id
				USING ERRCODE = '22023', DETAIL = pg_catalog.repeat('d', 3000) || '<end>';
		END IF;
		IF NEW.note = 'too long' THEN
			RAISE EXCEPTION 'row % refused', NEW.id
				USING ERRCODE = '22023', DETAIL = pg_catalog.repeat('e', 20000) || '<end>';
		END IF;
		RETURN NEW;
	END $$;
	CREATE TRIGGER refuse BEFORE INSERT ON app.target_t FOR EACH ROW EXECUTE FUNCTION app.refuse();
	SELECT sink_name FROM paimon_sink.create_sink('s_u', 'app.target_u');
	SELECT sink_name FROM paimon_sink.create_sink('s_n', 'app.target_n');
	SELECT sink_name FROM paimon_sink.create_sink('s_t', 'app.target_t');
	SELECT sink_name FROM paimon_sink.create_sink('s_t2', 'app.target_t');
});
ok(writers_ready($node, 'postgres'), 'writers serve');

# --- a unique violation in the target, raised by the commit's load
sql("INSERT INTO app.s_u VALUES (1, 'first')");
sql("SELECT paimon_sink.checkpoint('s_u')");
sql("INSERT INTO app.s_u VALUES (1, 'again')");
my ($ret, $err) = try_sql("SELECT * FROM paimon_sink.checkpoint('s_u')");
isnt($ret, 0, 'a commit that collides with a committed row fails');
like($err, qr/ERROR:  23505: duplicate key value violates unique constraint "target_u_key"/m,
	'the client sees the unique violation with its SQLSTATE');
like($err, qr/^SCHEMA NAME:  app$/m, 'and the schema name');
like($err, qr/^TABLE NAME:  target_u$/m, 'and the table name');
like($err, qr/^CONSTRAINT NAME:  target_u_key$/m, 'and the constraint name');
like($err, qr/^DETAIL:  Key \(id\)=\(1\) already exists\.$/m, 'and its own detail');
like($err, qr/committing checkpoint \d+ of commit user "[^"]+" of sink "s_u"/,
	'its context names the checkpoint being committed');
is(sql("SELECT count(*) FROM app.target_u"), '1', 'nothing of the checkpoint was applied');

# --- a NOT NULL violation: the column's name arrives too
sql("INSERT INTO app.s_n VALUES (1, NULL)");
sql("ALTER TABLE app.target_n ALTER COLUMN note SET NOT NULL");
($ret, $err) = try_sql("SELECT * FROM paimon_sink.checkpoint('s_n')");
isnt($ret, 0, 'a commit of a NULL into a NOT NULL column fails');
like($err, qr/ERROR:  23502: /m, 'with the not-null violation\'s SQLSTATE');
like($err, qr/^SCHEMA NAME:  app$/m, 'and the schema name');
like($err, qr/^TABLE NAME:  target_n$/m, 'and the table name');
like($err, qr/^COLUMN NAME:  note$/m, 'and the column name');

# --- a detail of 3 kB arrives whole
sql("INSERT INTO app.s_t VALUES (1, 'long')");
($ret, $err) = try_sql("SELECT * FROM paimon_sink.checkpoint('s_t')");
isnt($ret, 0, 'a commit refused by a trigger fails');
like($err, qr/ERROR:  22023: row 1 refused$/m, 'with the trigger\'s SQLSTATE and message');
like($err, qr/^DETAIL:  d{3000}<end>$/m, 'and its 3 kB detail whole');

# --- a detail larger than the request slot arrives cut, and says so
sql("INSERT INTO app.s_t2 VALUES (2, 'too long')");
($ret, $err) = try_sql("SELECT * FROM paimon_sink.checkpoint('s_t2')");
isnt($ret, 0, 'a commit refused with a 20 kB detail fails');
like($err, qr/ERROR:  22023: row 2 refused$/m, 'with its SQLSTATE and message');
like($err, qr/^DETAIL:  e{4000,}\.\.\. \(cut: the paimon_sink committer's error was longer than \d+ bytes\)$/m,
	'and its detail cut with a marker');
unlike($err, qr/<end>/, 'the cut part is left out');

$node->stop;
done_testing();
