# Faults found in alter_sink() (issue "6 — The target changes while rows
# wait", item 2), each a test that fails on the code it was found on:
# - a target column whose type has no binary send/receive (aclitem) was
#   added to the foreign table, which create_sink() refuses (0A000): every
#   later write failed 42883, and so did the commit of rows staged before,
#   since a load's binary COPY needs binary input for every column of the
#   target.  The ALTER TABLE that adds such a column to a sink's target is
#   now refused (0A000), and alter_sink() applies create_sink()'s check;
# - the target's default was copied into the foreign table once: after the
#   target's ALTER COLUMN ... SET DEFAULT, a row written without the column
#   took the old default, while a row of the older layout took the new;
#   the columns create_sink() made kept theirs as well, whoever altered
#   the target;
# - a REPEATABLE READ transaction whose snapshot is older than alter_sink()
#   could not write into the sink: 55000 whose hint said to undo an ALTER
#   FOREIGN TABLE or re-create the sink, not a retryable 40001;
# - (not a fault: kept as the rule) a GENERATED ALWAYS identity column added
#   by alter_sink() takes the values a writer names, as the identity columns
#   create_sink() stages do and as COPY does (docs/sinks.md); one left out
#   takes the identity's next value;
# - a savepoint rolled back over the only rows written into the sink still
#   counted as a write: alter_sink() was refused with 55000;
# - the rejects view showed an older-layout upsert row's missing column as
#   null, a value the row never carried: it is now left out of row_data
#   (its insert would take the default, its update keep the target's value).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(query_or_error start_node try_sql writers_ready);

my $node = start_node('alter_sink_faults');

sub sql { return $node->safe_psql('postgres', shift); }

sql('CREATE EXTENSION paimon_sink');
ok(writers_ready($node, 'postgres'), 'writers serve');
my ($ret, $out, $err);

# commit_all(sink, job, n): checkpoint n of job prepared and committed; returns the error
sub commit_all
{
	my ($sink, $job, $n) = @_;
	my ($ret, $out, $err) = try_sql($node,
		"SELECT count(*) FROM paimon_sink.prepare_commit('$sink', '$job', $n);
		SELECT count(*) FROM paimon_sink.commit('$sink', '$job', $n);");
	return $ret == 0 ? '' : $err;
}

# --- a type without binary I/O
sql(q{
	CREATE TABLE bin (id int PRIMARY KEY, v text);
	SELECT sink_name FROM paimon_sink.create_sink('bin_sink', 'bin');
	SET paimon_sink.commit_user = 'bin-job';
	INSERT INTO bin_sink VALUES (1, 'old');
});
($ret, $out, $err) = try_sql($node, "ALTER TABLE bin ADD COLUMN acl aclitem");
like($err, qr/ERROR:  0A000: .*aclitem/,
	'a column of a type without binary I/O is refused on a sink\'s target, as create_sink() refuses it');
($ret, $out, $err) = try_sql($node, "ALTER TABLE bin ADD COLUMN w text;
	ALTER TABLE bin ALTER COLUMN w TYPE aclitem USING NULL");
like($err, qr/ERROR:  0A000: .*aclitem/, 'and so is a column the sink does not stage retyped to one');
is(query_or_error($node, "SELECT string_agg(column_name, ',') FROM paimon_sink.alter_sink('bin_sink')"),
	'w', 'alter_sink() adds only the column of a type it can stage');
($ret, $out, $err) = try_sql($node,
	"SET paimon_sink.commit_user = 'bin-job'; INSERT INTO bin_sink (id, v) VALUES (2, 'later');");
is($err, '', 'the sink stays writable');
is(commit_all('bin_sink', 'bin-job', 1), '', 'the rows staged commit');
is(query_or_error($node, 'SELECT count(*) FROM bin'), '2', 'both rows loaded');

# --- the target's default changed after alter_sink()
sql(q{
	CREATE TABLE df (id int PRIMARY KEY, v text);
	SELECT sink_name FROM paimon_sink.create_sink('df_sink', 'df');
	SET paimon_sink.commit_user = 'df-job';
	INSERT INTO df_sink VALUES (1, 'old layout');
	ALTER TABLE df ADD COLUMN c text DEFAULT 'd1';
	SELECT count(*) FROM paimon_sink.alter_sink('df_sink');
	ALTER TABLE df ALTER COLUMN c SET DEFAULT 'd2';
	INSERT INTO df_sink (id, v) VALUES (2, 'new layout');
	INSERT INTO df (id, v) VALUES (3, 'direct');
});
is(commit_all('df_sink', 'df-job', 1), '', 'df_sink commits');
is(query_or_error($node, "SELECT string_agg(id || ':' || c, ',' ORDER BY id) FROM df"),
	'1:d2,2:d2,3:d2',
	'a row that does not name c takes the target\'s default, whatever its layout');

# --- a default changed by the target's owner, who does not own the sink: a
# column create_sink() made follows it too, and so does DROP DEFAULT
sql(q{
	CREATE ROLE dg_owner;
	CREATE TABLE dg (id int PRIMARY KEY, v text DEFAULT 'v1', w text DEFAULT 'w1');
	ALTER TABLE dg OWNER TO dg_owner;
	SELECT sink_name FROM paimon_sink.create_sink('dg_sink', 'dg');
	SET ROLE dg_owner;
	ALTER TABLE dg ALTER COLUMN v SET DEFAULT 'v2', ALTER COLUMN w DROP DEFAULT;
	RESET ROLE;
	SET paimon_sink.commit_user = 'dg-job';
	INSERT INTO dg_sink (id) VALUES (1);
});
is(commit_all('dg_sink', 'dg-job', 1), '', 'dg_sink commits');
is(query_or_error($node, "SELECT v || ':' || coalesce(w, 'null') FROM dg"), 'v2:null',
	'a column create_sink() made takes the default the target\'s owner set, or none once dropped');

# --- a REPEATABLE READ snapshot older than alter_sink()
sql(q{
	CREATE TABLE rr (id int PRIMARY KEY, v text);
	SELECT sink_name FROM paimon_sink.create_sink('rr_sink', 'rr');
});
my ($in, $sout, $serr) = ('', '', '');
my $h = IPC::Run::start(
	[ $node->installed_command('psql'), '-XAtq', '-v', 'VERBOSITY=verbose',
	  '-d', $node->connstr('postgres') ],
	'<', \$in, '>', \$sout, '2>', \$serr, IPC::Run::timeout(60));
$in .= "SET paimon_sink.commit_user = 'rr-job'; BEGIN ISOLATION LEVEL REPEATABLE READ;
	SELECT 1 FROM paimon_sink.sink_definition LIMIT 1;\n\\echo ready\n";
$h->pump until $sout =~ /ready\n\z/;
sql(q{
	ALTER TABLE rr ADD COLUMN c text DEFAULT 'dc';
	SELECT count(*) FROM paimon_sink.alter_sink('rr_sink');
});
$sout = '';
$in .= "INSERT INTO rr_sink (id, v) VALUES (1, 'rr');\n\\echo done\n";
$h->pump until $sout =~ /done\n\z/;
$in .= "ROLLBACK;\n\\q\n";
$h->finish;
unlike($serr, qr/55000|ALTER FOREIGN TABLE/,
	'a REPEATABLE READ writer older than alter_sink() is not told to undo an ALTER FOREIGN TABLE')
  or diag($serr);
like($serr . 'ok', qr/40001|^ok$/, 'it writes, or fails with a serialization failure to retry');

# --- a GENERATED ALWAYS identity column: as create_sink() stages one
sql(q{
	CREATE TABLE ia (id int PRIMARY KEY, v text);
	SELECT sink_name FROM paimon_sink.create_sink('ia_sink', 'ia');
	ALTER TABLE ia ADD COLUMN n int GENERATED ALWAYS AS IDENTITY;
	SELECT count(*) FROM paimon_sink.alter_sink('ia_sink');
	CREATE TABLE ib (id int PRIMARY KEY, v text, n int GENERATED ALWAYS AS IDENTITY);
	SELECT sink_name FROM paimon_sink.create_sink('ib_sink', 'ib');
});
($ret, $out, $err) = try_sql($node, "INSERT INTO ia (id, v, n) VALUES (1, 'direct', 500)");
like($err, qr/428C9/, 'the target\'s INSERT refuses a value for its GENERATED ALWAYS column');
is(query_or_error($node,
	"SELECT string_agg(attname || '=' || pg_get_expr(adbin, adrelid), ',' ORDER BY attname)
	FROM pg_attrdef JOIN pg_attribute ON attrelid = adrelid AND attnum = adnum
	WHERE adrelid IN ('ia_sink'::regclass, 'ib_sink'::regclass) GROUP BY adrelid = 'ia_sink'::regclass
	ORDER BY 1 LIMIT 1") =~ /^n=nextval/ ? 'nextval' : 'other', 'nextval',
	'the added column draws on the identity\'s sequence, as create_sink() makes it');
for my $t ('ia', 'ib')
{
	($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = '$t-job';
		INSERT INTO ${t}_sink (id, v, n) VALUES (2, 'named', 500);
		INSERT INTO ${t}_sink (id, v) VALUES (3, 'left out');");
	is($err, '', "${t}_sink takes a named value, as COPY does, and a row without it");
	is(commit_all("${t}_sink", "$t-job", 1), '', "${t}_sink commits");
}
is(query_or_error($node, "SELECT string_agg(id || ':' || (n = 500) || ':' || (n IS NULL), ',' ORDER BY id) FROM ia"),
	query_or_error($node, "SELECT string_agg(id || ':' || (n = 500) || ':' || (n IS NULL), ',' ORDER BY id) FROM ib"),
	'a column alter_sink() added loads as create_sink()\'s: the named value, else the identity\'s');
is(query_or_error($node, "SELECT count(*) FROM ia WHERE id = 3 AND n IS NOT NULL AND n <> 500"), '1',
	'the row that left it out took the identity\'s next value');

# --- a savepoint rolled back over every row written
($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'df-job';
	BEGIN; SAVEPOINT s; INSERT INTO df_sink (id, v) VALUES (10, 'gone'); ROLLBACK TO s;
	ALTER TABLE df ADD COLUMN e int;
	SELECT count(*) FROM paimon_sink.alter_sink('df_sink'); COMMIT;");
is($err, '', 'alter_sink() after a savepoint took back every row written runs');

# --- the rejects view of an older-layout upsert row
sql(q{
	CREATE TABLE rj (id int PRIMARY KEY, v text);
	SELECT sink_name FROM paimon_sink.create_sink('rj_sink', 'rj', mode => 'upsert',
		on_error => 'reject');
	SET paimon_sink.commit_user = 'rj-job';
	INSERT INTO rj_sink (id, v) VALUES (1, 'ok'), (2, 'bad');
	ALTER TABLE rj ADD COLUMN c text DEFAULT 'dc', ADD CONSTRAINT rj_ck CHECK (v <> 'bad');
	SELECT count(*) FROM paimon_sink.alter_sink('rj_sink');
});
is(commit_all('rj_sink', 'rj-job', 1), '', 'rj_sink commits, moving row 2 aside');
# an upsert row's insert would take the default, its update keep the target's value
is(query_or_error($node, "SELECT (row_data ? 'c')::text || ':' || (row_data ->> 'v') FROM paimon_sink.rejects
	WHERE sink_name = 'rj_sink'"), 'false:bad',
	'the rejected older-layout row leaves out the column it never carried, not a NULL it never wrote');

done_testing();
