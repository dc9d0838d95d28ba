# Faults found in alter_sink() (issue "6 — The target changes while rows
# wait", item 2), each a test that fails on the code it was found on:
# - a target column whose type has no binary send/receive (aclitem) is
#   added to the foreign table, which create_sink() refuses (0A000): every
#   later write fails 42883, and so does the commit of rows staged before;
# - the target's default is copied into the foreign table once: after the
#   target's ALTER COLUMN ... SET DEFAULT, a row written without the column
#   takes the old default, while a row of the older layout takes the new;
# - a REPEATABLE READ transaction whose snapshot is older than alter_sink()
#   cannot write into the sink: 55000 whose hint says to undo an ALTER
#   FOREIGN TABLE or re-create the sink, not a retryable 40001;
# - a GENERATED ALWAYS identity column takes the values a writer names
#   (PostgreSQL's INSERT refuses them with 428C9);
# - a savepoint rolled back over the only rows written into the sink still
#   counts as a write: alter_sink() is refused with 55000;
# - the rejects view shows an older-layout upsert row's missing column as
#   null, where the append sink shows the default the load gave it.
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
	ALTER TABLE bin ADD COLUMN acl aclitem;
});
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.alter_sink('bin_sink')");
like($err, qr/ERROR:  0A000: .*aclitem/,
	'alter_sink() refuses a column of a type without binary I/O, as create_sink() does');
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

# --- a GENERATED ALWAYS identity column
sql(q{
	CREATE TABLE ia (id int PRIMARY KEY, v text);
	SELECT sink_name FROM paimon_sink.create_sink('ia_sink', 'ia');
	ALTER TABLE ia ADD COLUMN n int GENERATED ALWAYS AS IDENTITY;
	SELECT count(*) FROM paimon_sink.alter_sink('ia_sink');
});
($ret, $out, $err) = try_sql($node, "INSERT INTO ia (id, v, n) VALUES (1, 'direct', 500)");
like($err, qr/428C9/, 'the target refuses a value for its GENERATED ALWAYS column');
($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'ia-job';
	INSERT INTO ia_sink (id, v, n) VALUES (2, 'sink', 500);");
like($err, qr/428C9/, 'so does the sink');

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
is(query_or_error($node, "SELECT coalesce(row_data ->> 'c', 'absent') FROM paimon_sink.rejects
	WHERE sink_name = 'rj_sink'"), 'dc',
	'the rejected older-layout row shows the default its insert took, not a NULL it never wrote');

done_testing();
