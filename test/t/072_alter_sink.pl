# New columns reach the writers (issue "6 — The target changes while rows
# wait", item 2): alter_sink() adds the columns added to a sink's target
# since at the end of its foreign table, and rows staged before (an older
# layout: fewer fields) commit beside rows staged after.  An append sink, an
# upsert sink, a partial_update upsert sink, a sink group's member and an
# overwrite sink each have a checkpoint prepared and more rows staged in the
# old layout when their target gains a column; alter_sink() runs, more rows
# are written with the new column into the same checkpoints and later ones,
# and an immediate stop comes in between.  After the commits each target
# equals a ledger: a row of the old layout has the column's default when it
# inserts; an upsert of the old layout leaves the target's value of it, one
# of the new layout sets it (the newest version of each key across the
# checkpoint decides, as before).  Also: a session that stays connected
# across alter_sink() writes the new column at its next transaction; a
# transaction open during alter_sink() finishes in the old layout
# (alter_sink() waits for it); the commit users' high-water marks go on
# and a retry of an old checkpoint is skipped; the user's own ALTER FOREIGN
# TABLE stays refused; a second alter_sink() adds nothing; lock_timeout ends
# its wait (55P03); an old-layout retraction still deletes the target's row.
# Then, checkpoints of both layouts through the other readers of staged
# rows: the redo row by row of a load with a refused row (old-layout rows
# get the default there too), a dynamic-partition overwrite's routing, and
# loader workers loading shares of a large checkpoint.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest
  qw(background_verbose finish_within nothing_in_doubt query_or_error start_node try_sql writers_ready);

my $node = start_node('alter_sink', 'restart_after_crash = on');

sub sql { return $node->safe_psql('postgres', shift); }

# the targets, their sinks, the commit user each is written and committed as, and what
# prepare_commit() and commit() name (the group for its member)
my @cases = (
	{ target => 'ap', sink => 'ap_sink', job => 'ap-job', call => 'ap_sink', upsert => 0 },
	{ target => 'up', sink => 'up_sink', job => 'up-job', call => 'up_sink', upsert => 1 },
	{ target => 'pu', sink => 'pu_sink', job => 'pu-job', call => 'pu_sink', upsert => 1,
	  partial => 1 },
	{ target => 'g1', sink => 'g1_sink', job => 'g-job', call => 'grp', upsert => 0 },
	{ target => 'ow', sink => 'ow_sink', job => 'ow-job', call => 'ow_sink', upsert => 0 });

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE ap (id int PRIMARY KEY, v text);
	CREATE TABLE up (id int PRIMARY KEY, v text);
	CREATE TABLE pu (id int PRIMARY KEY, v text);
	CREATE TABLE g1 (id int PRIMARY KEY, v text);
	CREATE TABLE g2 (id int PRIMARY KEY, w int);
	CREATE TABLE ow (id int PRIMARY KEY, v text);
	INSERT INTO ow SELECT g, 'before' FROM generate_series(100, 102) g;
	-- keys the upsert sinks' targets hold before their first commit
	INSERT INTO up SELECT g, 'pre' FROM generate_series(1, 5) g;
	INSERT INTO up VALUES (60, 'retracted');
	INSERT INTO pu SELECT g, 'pre' FROM generate_series(1, 5) g;
	SELECT sink_name FROM paimon_sink.create_sink('ap_sink', 'ap');
	SELECT sink_name FROM paimon_sink.create_sink('up_sink', 'up', mode => 'upsert', buckets => 2);
	SELECT sink_name FROM paimon_sink.create_sink('pu_sink', 'pu', mode => 'upsert',
		partial_update => true);
	SELECT sink_name FROM paimon_sink.create_sink('g1_sink', 'g1');
	SELECT sink_name FROM paimon_sink.create_sink('g2_sink', 'g2');
	SELECT paimon_sink.create_sink_group('grp', ARRAY['g1_sink', 'g2_sink']);
	SELECT sink_name FROM paimon_sink.create_sink('ow_sink', 'ow', mode => 'overwrite');
});
for my $case (@cases)
{
	my $t = $case->{target};
	sql("CREATE TABLE ledger_$t (id int PRIMARY KEY, v text, c text)");
	sql("INSERT INTO ledger_$t SELECT id, v, 'dflt' FROM $t") if $case->{upsert};
}
ok(writers_ready($node, 'postgres'), 'writers serve');

# write_rows(case, from, to, tag, with_c): rows from .. to through the case's sink as its
# commit user (with_c: the new column c too, 'c-' || id), and the same into its ledger: a
# row without c inserts the default, an upsert without c keeps the ledger's c; the group's
# other member gets a row per id in the same transaction
sub write_rows
{
	my ($case, $from, $to, $tag, $with_c) = @_;
	my $t = $case->{target};
	my $other = $case->{call} eq 'grp'
	  ? "INSERT INTO g2_sink SELECT g, g FROM generate_series($from, $to) g;" : '';
	my $insert = $with_c
	  ? "INSERT INTO $case->{sink} (id, v, c)
		SELECT g, '$tag', 'c-' || g FROM generate_series($from, $to) g;"
	  : "INSERT INTO $case->{sink} (id, v) SELECT g, '$tag' FROM generate_series($from, $to) g;";
	my ($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = '$case->{job}';
		BEGIN; $insert $other COMMIT;");
	is($ret, 0, "$case->{sink}: rows $from..$to ($tag) written") or diag($err);
	my $c = $with_c ? "'c-' || g" : "'dflt'";
	my $update = $with_c ? 'v = excluded.v, c = excluded.c' : 'v = excluded.v';
	sql("INSERT INTO ledger_$t SELECT g, '$tag', $c FROM generate_series($from, $to) g
		ON CONFLICT (id) DO UPDATE SET $update");
	return;
}

# prepare(case, n): checkpoint n of the case's commit user prepared
sub prepare
{
	my ($case, $n) = @_;
	my ($ret, $out, $err) = try_sql($node,
		"SELECT count(*) FROM paimon_sink.prepare_commit('$case->{call}', '$case->{job}', $n)");
	is($ret, 0, "$case->{call}: checkpoint $n prepared") or diag($err);
	return;
}

# commit(case, n): checkpoints up to n of the case's commit user committed
sub commit
{
	my ($case, $n) = @_;
	my ($ret, $out, $err) = try_sql($node,
		"SELECT count(*) FROM paimon_sink.commit('$case->{call}', '$case->{job}', $n)");
	is($ret, 0, "$case->{call}: checkpoints up to $n commit") or diag($err);
	return;
}

# differs(case): "missing M, extra E" between the target and its ledger
sub differs
{
	my ($case) = @_;
	my $t = $case->{target};
	my $rows = "SELECT id, v, c FROM $t";
	return query_or_error($node,
		"SELECT 'missing ' || (SELECT count(*) FROM (SELECT * FROM ledger_$t EXCEPT ALL $rows) m)
		|| ', extra ' || (SELECT count(*) FROM ($rows EXCEPT ALL SELECT * FROM ledger_$t) e)");
}

# a psql session that stays connected: session_run sends it statements and returns
# their output once they ran
sub session_start
{
	my $s = { in => '', out => '', err => '' };
	$s->{harness} = IPC::Run::start(
		[ $node->installed_command('psql'), '-XAtq', '-d', $node->connstr('postgres') ],
		'<', \$s->{in}, '>', \$s->{out}, '2>', \$s->{err}, IPC::Run::timeout(180));
	return $s;
}

sub session_run
{
	my ($s, $statements) = @_;
	$s->{out} = '';
	$s->{err} = '';
	$s->{in} .= "$statements\n\\echo session-done\n";
	$s->{harness}->pump until $s->{out} =~ /session-done\n\z/;
	$s->{out} =~ s/session-done\n\z//;
	return $s->{out} . $s->{err};
}

my $exact = 'missing 0, extra 0';
my ($ret, $out, $err);

# --- a session connected from the start, writing through ap_sink as ap-job
my $session = session_start();
is(session_run($session, "SET paimon_sink.commit_user = 'ap-job';
	INSERT INTO ap_sink (id, v) VALUES (1000, 'session-old');"), '',
	'a session writes a row in the old layout');
sql("INSERT INTO ledger_ap VALUES (1000, 'session-old', 'dflt')");

# --- rows staged, a checkpoint prepared and more rows staged before the change
for my $case (@cases)
{
	write_rows($case, 1, 20, 'a', 0);
	prepare($case, 1);
	write_rows($case, $case->{upsert} ? 15 : 21, 30, 'b', 0);
}

# a retraction (-U of the whole row) of the target's row of key 60, in the old layout: it
# deletes the row, whose column c (added since) it does not carry and does not compare
($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'up-job';
	INSERT INTO up_sink (id, v, _row_kind) VALUES (60, 'retracted', '-U');");
is($ret, 0, 'up_sink: a retraction of key 60 written') or diag($err);
sql('DELETE FROM ledger_up WHERE id = 60');

# --- the targets gain a column; alter_sink() is what makes it writable
for my $case (@cases)
{
	my $t = $case->{target};
	my ($ret, $out, $err) = try_sql($node, "ALTER TABLE $t ADD COLUMN c text DEFAULT 'dflt'");
	is($ret, 0, "$t: column c added") or diag($err);
}
# the target's own writes of c, which an old-layout upsert of the key must keep
for my $t ('up', 'pu')
{
	sql("UPDATE $t SET c = 'direct-' || id WHERE id <= 5");
	sql("UPDATE ledger_$t SET c = 'direct-' || id WHERE id <= 5");
}
($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'up-job';
	INSERT INTO up_sink (id, v, c) VALUES (1, 'x', 'y')");
like($err, qr/column "c" of relation "up_sink" does not exist/,
	'before alter_sink() the sink has no column c');
($ret, $out, $err) = try_sql($node, 'ALTER FOREIGN TABLE ap_sink ADD COLUMN c text');
like($err, qr/ERROR:  0A000: cannot add a column to foreign table/,
	"the user's own ALTER FOREIGN TABLE stays refused");

# a transaction open in the connected session: alter_sink() waits for it to end, and its rows
# keep the old layout
is(session_run($session, "BEGIN; INSERT INTO ap_sink (id, v) VALUES (1001, 'open-old');"), '',
	'the session opens a transaction writing through ap_sink');
($ret, $out, $err) = try_sql($node, "SET lock_timeout = '200ms';
	SELECT * FROM paimon_sink.alter_sink('ap_sink')");
like($err, qr/ERROR:  55P03: /, 'alter_sink() under lock_timeout gives up with 55P03');
is(query_or_error($node, "SELECT count(*) FROM pg_attribute WHERE attrelid = 'ap_sink'::regclass
	AND attnum > 0"), '2', 'and changes nothing');
my $altering = background_verbose($node,
	"SELECT column_name || ' ' || data_type FROM paimon_sink.alter_sink('ap_sink')");
ok($node->poll_query_until('postgres',
	"SELECT count(*) > 0 FROM pg_locks WHERE relation = 'ap_sink'::regclass AND NOT granted"),
	'alter_sink() waits for the open transaction');
is(session_run($session, "INSERT INTO ap_sink (id, v) VALUES (1002, 'open-old'); COMMIT;"), '',
	'the open transaction writes more and commits, in the old layout');
sql("INSERT INTO ledger_ap VALUES (1001, 'open-old', 'dflt'), (1002, 'open-old', 'dflt')");
ok(defined finish_within($altering, 60), 'alter_sink() ends once the transaction committed');
is($altering->{out} . $altering->{err}, "c text\n", 'and adds column c to ap_sink');
is(session_run($session, "INSERT INTO ap_sink (id, v, c) VALUES (1003, 'session-new', 'c-1003');"),
	'', 'the session writes the new column at its next transaction, without reconnecting');
sql("INSERT INTO ledger_ap VALUES (1003, 'session-new', 'c-1003')");

for my $case (@cases[ 1 .. $#cases ])
{
	is(query_or_error($node,
		"SELECT string_agg(column_name || ' ' || data_type, ',')
		FROM paimon_sink.alter_sink('$case->{sink}')"),
		'c text', "$case->{sink}: alter_sink() adds column c");
}
is(query_or_error($node, "SELECT count(*) FROM paimon_sink.alter_sink('ap_sink')"), '0',
	'a second alter_sink() adds nothing');
is(query_or_error($node, "SELECT column_names::text, target_attnums::text
	FROM paimon_sink.sink_definition WHERE sink_name = 'up_sink'"),
	'{id,v,_row_kind,c}|{1,2,0,3}', 'the layout recorded grows at its end');

# --- rows of the new layout into the checkpoints that hold rows of the old one
for my $case (@cases)
{
	write_rows($case, $case->{upsert} ? 25 : 31, 40, 'c', 1);
}

# --- a crash between the staging and the commit
$node->stop('immediate');
$node->start;
ok(writers_ready($node, 'postgres'), 'the restarted server serves');

for my $case (@cases)
{
	prepare($case, 2);
	commit($case, 2);
	is(differs($case), $exact, "$case->{target}: the target equals the ledger");
}
is(query_or_error($node, "SELECT string_agg(id || ':' || v || ':' || c, ',' ORDER BY id)
	FROM up WHERE id IN (1, 6, 20, 24, 25, 40)"),
	'1:a:direct-1,6:a:dflt,20:b:dflt,24:b:dflt,25:c:c-25,40:c:c-40',
	'up: an old-layout upsert keeps the target\'s c or inserts its default; a new one sets it');
is(sql('SELECT count(*) FROM g2'), '40', "the group's other member committed with it");

# --- later checkpoints: rows of the new layout only; the high-water marks go on
for my $case (@cases)
{
	write_rows($case, $case->{upsert} ? 35 : 41, 50, 'd', 1);
	prepare($case, 3);
	commit($case, 3);
	is(differs($case), $exact, "$case->{target}: later rows load too");
	is(query_or_error($node,
		"SELECT paimon_sink.last_committed_checkpoint('$case->{sink}', '$case->{job}')"),
		'3', "$case->{sink}: its commit user's high-water mark is 3");
	is(query_or_error($node, "SELECT bool_or(newly_committed)
		FROM paimon_sink.commit('$case->{call}', '$case->{job}', 1)"),
		'f', "$case->{call}: a retry of checkpoint 1 is skipped as committed");
}

# --- an old-layout row of a partial_update sink: the columns it lacks keep the target's
is(query_or_error($node, "SELECT string_agg(id || ':' || v || ':' || c, ',' ORDER BY id)
	FROM pu WHERE id IN (1, 6)"), '1:a:direct-1,6:a:dflt',
	'pu: partial_update keeps the target\'s c, or inserts the default');

# --- a row the target refuses, in a checkpoint of two layouts: the redo row by row gives the
# old-layout rows the default of the column added since too; reject_failing_rows() commits them
sql("ALTER TABLE ap ADD COLUMN e int DEFAULT 7");
($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'ap-job';
	INSERT INTO ap_sink (id, v, c) SELECT g, 'e', 'c-' || g FROM generate_series(51, 55) g;
	INSERT INTO ap_sink (id, v, c) VALUES (1, 'dup', 'dup');");
is($ret, 0, 'ap_sink: rows 51..55 and a duplicate key written before e reaches the sink')
  or diag($err);
is(query_or_error($node, "SELECT string_agg(column_name, ',') FROM paimon_sink.alter_sink('ap_sink')"),
	'e', 'alter_sink() adds e');
($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'ap-job';
	INSERT INTO ap_sink (id, v, c, e) SELECT g, 'e', 'c-' || g, 8 FROM generate_series(56, 58) g;");
is($ret, 0, 'ap_sink: rows 56..58 written with e') or diag($err);
prepare($cases[0], 4);
($ret, $out, $err) = try_sql($node, "SELECT count(*) FROM paimon_sink.commit('ap_sink', 'ap-job', 4)");
like($err, qr/23505: .*the row with key \(id\)=\(1\)/s, 'the commit fails naming the refused row');
is(query_or_error($node, "SELECT row_count FROM paimon_sink.reject_failing_rows('ap_sink', 4, 'ap-job')"),
	'8', 'reject_failing_rows() commits the other rows');
is(query_or_error($node, "SELECT string_agg(id || ':' || e, ',' ORDER BY id) FROM ap
	WHERE id BETWEEN 51 AND 58"), '51:7,52:7,53:7,54:7,55:7,56:8,57:8,58:8',
	'the old-layout rows took the default of e, the new ones their value');
sql("INSERT INTO ledger_ap SELECT g, 'e', 'c-' || g FROM generate_series(51, 58) g");
is(differs($cases[0]), $exact, 'ap: the target equals the ledger');

# --- a dynamic-partition overwrite routes a checkpoint of both layouts to its partitions
sql(q{
	CREATE TABLE dp (day int, id int, v text, PRIMARY KEY (day, id)) PARTITION BY LIST (day);
	CREATE TABLE dp1 PARTITION OF dp FOR VALUES IN (1);
	CREATE TABLE dp2 PARTITION OF dp FOR VALUES IN (2);
	INSERT INTO dp SELECT d, g, 'old' FROM generate_series(1, 2) d, generate_series(1, 3) g;
	SELECT sink_name FROM paimon_sink.create_sink('dp_sink', 'dp', mode => 'overwrite',
		dynamic_partition_overwrite => true);
});
($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'dp-job';
	INSERT INTO dp_sink SELECT 1, g, 'new' FROM generate_series(2, 5) g;");
is($ret, 0, 'dp_sink: a rebuild of day 1 written in the old layout') or diag($err);
sql("ALTER TABLE dp ADD COLUMN c text DEFAULT 'dflt'");
is(query_or_error($node, "SELECT string_agg(column_name, ',') FROM paimon_sink.alter_sink('dp_sink')"),
	'c', 'alter_sink() adds c to dp_sink');
($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = 'dp-job';
	INSERT INTO dp_sink (day, id, v, c) VALUES (1, 6, 'new', 'c-6');");
is($ret, 0, 'dp_sink: and the rest of it in the new layout') or diag($err);
my $dp = { call => 'dp_sink', job => 'dp-job' };
prepare($dp, 1);
commit($dp, 1);
is(query_or_error($node, "SELECT string_agg(day || ':' || id || ':' || v || ':' || c, ','
	ORDER BY day, id) FROM dp"),
	'1:2:new:dflt,1:3:new:dflt,1:4:new:dflt,1:5:new:dflt,1:6:new:c-6,2:1:old:dflt,2:2:old:dflt,2:3:old:dflt',
	'day 1 replaced by rows of both layouts, day 2 as it was');

# --- loader workers load a large checkpoint of both layouts, in shares
sql(q{
	CREATE TABLE lp (id int PRIMARY KEY, v text);
	SELECT sink_name FROM paimon_sink.create_sink('lp_sink', 'lp', buckets => 2);
	INSERT INTO lp_sink SELECT g, 'old' FROM generate_series(1, 500) g;
	ALTER TABLE lp ADD COLUMN c text DEFAULT 'dflt';
	SELECT count(*) FROM paimon_sink.alter_sink('lp_sink');
	INSERT INTO lp_sink (id, v, c) SELECT g, 'new', 'c-' || g FROM generate_series(501, 1000) g;
	ALTER SYSTEM SET paimon_sink.parallel_load_rows = 100;
	ALTER SYSTEM SET paimon_sink.nonatomic_parallel_load = on;
	SELECT pg_reload_conf();
});
my $log_offset = -s $node->logfile;
is(query_or_error($node, "SELECT row_count FROM paimon_sink.checkpoint('lp_sink')"), '1000',
	'lp_sink: a checkpoint of 1000 rows of both layouts commits');
like(slurp_file($node->logfile, $log_offset),
	qr/committed snapshot \d+ of sink "lp_sink": .* [1-9]\d* loaders/,
	'loaded by loader workers');
is(query_or_error($node, "SELECT count(*) FILTER (WHERE v = 'old' AND c = 'dflt') || ' '
	|| count(*) FILTER (WHERE v = 'new' AND c = 'c-' || id) FROM lp"), '500 500',
	'each row once, the old ones with the default');
sql(q{
	ALTER SYSTEM RESET paimon_sink.parallel_load_rows;
	ALTER SYSTEM RESET paimon_sink.nonatomic_parallel_load;
	SELECT pg_reload_conf();
});

$session->{in} .= "\\q\n";
$session->{harness}->finish;
ok(nothing_in_doubt($node), 'nothing in doubt');

done_testing();
