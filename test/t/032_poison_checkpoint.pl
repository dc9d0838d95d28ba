# Poison checkpoints (issue 17, item 4; ../shared/cases/poison-checkpoint.md):
# a row the target refuses only at commit must not block a sink for ever.
# A key too large for its btree index is refused when it is written (54000,
# as PostgreSQL says it); one that reaches a checkpoint (the index made
# after staging) fails the commit naming the index, the row's key and the
# checkpoint.  With on_error 'stop' (the default) every refusal (a trigger's
# RAISE, a CHECK constraint added after staging, a foreign key) stops the
# sink with such an error, nothing applied, until the operator's
# reject_failing_rows() commits the checkpoint once with exactly the refused
# rows moved aside into the rejects table; with on_error 'reject' they go
# there at the commit itself, in the checkpoint's prepared transaction (and
# in each loader's share), so a crash between PREPARE and COMMIT PREPARED
# commits rows and rejects together, once.  The rest reads back exactly,
# checkpoint 2's 100 rows of 1 MB each included.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(back_after_crash start_node try_sql writers_ready);

my $node = start_node("poison", "paimon_sink.parallel_load_rows = 0\nrestart_after_crash = on\n");

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE parent (id int PRIMARY KEY);
	INSERT INTO parent SELECT generate_series(1, 10);
	CREATE TABLE acc (k text PRIMARY KEY, v text, p int REFERENCES parent);
	SELECT sink_name FROM paimon_sink.create_sink('ps', 'acc', mode => 'upsert');
});
ok(writers_ready($node, 'postgres'), 'writers serve');
is(sql("SELECT on_error FROM paimon_sink.sinks WHERE sink_name = 'ps'"), 'stop',
	'on_error is stop by default');
my ($ret, $out, $err) = try_sql($node,
	"SELECT paimon_sink.create_sink('bad', 'parent', on_error => 'skip')");
like($err, qr/22023: invalid on_error "skip"/, 'an unknown on_error is refused');

# --- scenario steps 1-3: a 10,000-character key, then 100 rows of 1 MB each
my $long_key = q{(SELECT string_agg(chr(33 + (random() * 90)::int), '') FROM generate_series(1, 10000))};
($ret, $out, $err) = try_sql($node, "INSERT INTO ps VALUES ($long_key, 'long', 1)");
like($err, qr/54000: index row requires 10016 bytes, maximum size is 8191/,
	'a key too large for its index is refused when it is written, as PostgreSQL says it');
like($err, qr/Refused when written into sink "ps": .* in index "acc_pkey"/, 'the detail names the sink and the index');
($ret, $out, $err) = try_sql($node, "INSERT INTO ps VALUES (substr($long_key, 1, 5000), 'long', 1)");
like($err, qr/54000: index row size \d+ exceeds btree version 4 maximum 2704 for index "acc_pkey"/,
	"one of 5,000 characters, more than a btree page's third, as nbtree says it");
sql("INSERT INTO ps SELECT 'k' || i, 'v' || i, 1 + i % 10 FROM generate_series(1, 99) i");
is(sql("SELECT row_count FROM paimon_sink.checkpoint('ps')"), '99', 'checkpoint 1 commits its 99 rows');
sql("INSERT INTO ps SELECT 'big' || i, repeat(md5(i::text), 32768), 1 FROM generate_series(1, 100) i");
is(sql("SELECT checkpoint_id || ' ' || row_count FROM paimon_sink.checkpoint('ps')"), '2 100',
	'checkpoint 2 commits its 100 rows of 1 MB');
is(sql("SELECT count(*) || ' ' || sum(length(v)) || ' ' || bool_and(v = repeat(md5(substr(k, 4)), 32768))
	FROM acc WHERE k LIKE 'big%'"), '100 104857600 true', 'the 100 rows of 1 MB read back exactly');
is(sql("SELECT count(*) FROM acc WHERE k LIKE 'k%'"), '99', "checkpoint 1's rows are there");

# --- stop: each refusal names the row's key, the constraint or index, the checkpoint
sub stopped
{
	my ($sink, $name, $state, $key, $constraint, $checkpoint) = @_;
	my ($r, $o, $e) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('$sink')");
	isnt($r, 0, "$name: the commit fails");
	like($e, qr/ERROR:  $state:/, "$name: with the target's SQLSTATE $state") or diag($e);
	like($e, qr/\Q$key\E of checkpoint $checkpoint of commit user "[^"]+" of sink "$sink" is refused by \Q$constraint\E/,
		"$name: the error names the row's key, the constraint or index and the checkpoint") or diag($e);
	like($e, qr/paimon_sink\.reject_failing_rows\('$sink', $checkpoint, '[^']+'\)/,
		"$name: its hint names the way on");
	return $e;
}

# a trigger on the target that refuses a row (RAISE)
sql(q{
	CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF NEW.v = 'refused by trigger' THEN RAISE EXCEPTION 'no, not %', NEW.k; END IF;
		RETURN NEW;
	END $$;
	CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON acc FOR EACH ROW EXECUTE FUNCTION public.refuse();
});
sql("INSERT INTO ps SELECT 'c3-' || i, 'fine', 1 FROM generate_series(1, 250) i;
	 INSERT INTO ps VALUES ('c3-bad', 'refused by trigger', 1)");
my $e = stopped('ps', 'a trigger RAISE', 'P0001', 'the row with key (k)=(c3-bad)', 'the target', 3);
like($e, qr/PL\/pgSQL function public\.refuse\(\)/, "the trigger's own context stays");
is(sql("SELECT count(*) FROM acc WHERE k LIKE 'c3-%'"), '0', 'nothing of checkpoint 3 is applied');
is(sql("SELECT count(*) FROM pg_prepared_xacts"), '0', 'nothing is left in doubt');
sql("INSERT INTO ps VALUES ('c4-1', 'fine', 1)");
stopped('ps', 'the next checkpoint', 'P0001', 'the row with key (k)=(c3-bad)', 'the target', 3);
is(sql("SELECT count(*) FROM acc WHERE k LIKE 'c4-%'"), '0', 'the sink is blocked behind checkpoint 3');

# the operator moves checkpoint 3's refused rows aside, once
is(sql("SELECT checkpoint_id || ' ' || row_count || ' ' || newly_committed
	FROM paimon_sink.reject_failing_rows('ps', 3)"), '3 250 true',
	'reject_failing_rows commits checkpoint 3 without its refused row');
is(sql("SELECT count(*) FROM acc WHERE k LIKE 'c3-%'"), '250', "checkpoint 3's other rows are there");
is(sql("SELECT string_agg(checkpoint_id || ' ' || reason || ' ' || row_kind || ' ' || sqlstate || ' '
	|| message || ' ' || (row_data->>'k') || ' ' || (row_data->>'v'), ',') FROM paimon_sink.rejects"),
	"3 reject_failing_rows +U P0001 no, not c3-bad c3-bad refused by trigger",
	'the rejects table holds exactly the refused row, with SQLSTATE, message and the row');
is(sql("SELECT row_count || ' ' || newly_committed FROM paimon_sink.reject_failing_rows('ps', 3)"),
	'250 false', 'a retry finds checkpoint 3 committed');
is(sql("SELECT count(*) FROM paimon_sink.rejects"), '1', 'and moves nothing twice');
is(sql("SELECT checkpoint_id || ' ' || row_count FROM paimon_sink.checkpoint('ps')"), '4 1',
	'the sink goes on: checkpoint 4 commits');

# a CHECK constraint added after the rows were staged
sql("INSERT INTO ps VALUES ('c5-1', 'fine', 1), ('c5-2', 'forbidden', 1), ('c5-3', 'fine', 1)");
sql("ALTER TABLE acc ADD CONSTRAINT v_allowed CHECK (v <> 'forbidden')");
stopped('ps', 'a CHECK added after staging', '23514', 'the row with key (k)=(c5-2)',
	'constraint or index "v_allowed"', 5);
is(sql("SELECT row_count FROM paimon_sink.reject_failing_rows('ps', 5)"), '2',
	'checkpoint 5 commits without it');

# a foreign key the row violates
sql("INSERT INTO ps VALUES ('c6-1', 'fine', 2), ('c6-2', 'fine', 99)");
stopped('ps', 'a foreign key', '23503', 'the row with key (k)=(c6-2)', 'constraint or index "acc_p_fkey"', 6);
is(sql("SELECT row_count FROM paimon_sink.reject_failing_rows('ps', 6)"), '1',
	'checkpoint 6 commits without it');
is(sql("SELECT string_agg(checkpoint_id || ' ' || sqlstate || ' ' || coalesce(constraint_name, '-') || ' '
	|| (row_data->>'k'), ',' ORDER BY reject_id) FROM paimon_sink.rejects"),
	'3 P0001 - c3-bad,5 23514 v_allowed c5-2,6 23503 acc_p_fkey c6-2', 'the rejects table: exactly the refused rows');
is(sql("SELECT count(*) FROM acc"), 99 + 100 + 250 + 1 + 2 + 1, 'every other row is there once');

# --- a key that reaches the checkpoint: its index made after staging
sql(q{
	CREATE TABLE logt (id int PRIMARY KEY, k text);
	SELECT sink_name FROM paimon_sink.create_sink('ls', 'logt');
});
sql("INSERT INTO ls SELECT i, 'short' || i FROM generate_series(1, 10) i");
sql("INSERT INTO ls VALUES (11, $long_key)");
sql("CREATE INDEX logt_k ON logt (k)");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('ls')");
like($err, qr/54000: index row requires 10016 bytes, maximum size is 8191/,
	'a long key staged before its index was made fails the commit naming the index');
like($err, qr/the row with key \(id\)=\(11\) of checkpoint 1 of commit user "[^"]+" of sink "ls" is refused by constraint or index "logt_k"/,
	'naming the row by the primary key and the checkpoint');
is(sql("SELECT count(*) FROM logt"), '0', 'nothing of it is applied');
is(sql("SELECT row_count FROM paimon_sink.reject_failing_rows('ls', 1)"), '10',
	'reject_failing_rows commits the other 10 rows');
is(sql("SELECT sqlstate || ' ' || constraint_name || ' ' || (row_data->>'id') || ' ' || length(row_data->>'k')
	FROM paimon_sink.rejects WHERE sink_name = 'ls'"), '54000 logt_k 11 10000',
	'the rejected row is kept whole');

# --- on_error 'reject': the commit itself moves the refused rows aside
sql(q{
	CREATE TABLE ev (id int PRIMARY KEY, p int REFERENCES parent, v text);
	CREATE FUNCTION refuse_ev() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF NEW.v = 'refused by trigger' THEN RAISE EXCEPTION 'no, not %', NEW.id; END IF;
		RETURN NEW;
	END $$;
	CREATE TRIGGER refuse BEFORE INSERT ON ev FOR EACH ROW EXECUTE FUNCTION public.refuse_ev();
	SELECT sink_name FROM paimon_sink.create_sink('rs', 'ev', on_error => 'reject');
});
sql("INSERT INTO rs SELECT i, 1 + i % 10, 'fine' FROM generate_series(1, 1000) i;
	 INSERT INTO rs VALUES (1001, 1, 'refused by trigger'), (1002, 77, 'fine'), (1003, 1, 'forbidden')");
sql("ALTER TABLE ev ADD CONSTRAINT v_allowed CHECK (v <> 'forbidden')");
is(sql("SELECT checkpoint_id || ' ' || row_count FROM paimon_sink.checkpoint('rs')"), '1 1000',
	'checkpoint 1 commits its 1000 good rows');
is(sql("SELECT count(*) || ' ' || min(id) || ' ' || max(id) FROM ev"), '1000 1 1000', 'exactly those');
is(sql("SELECT string_agg(reason || ' ' || coalesce(row_kind, '-') || ' ' || sqlstate || ' '
	|| (row_data->>'id'), ',' ORDER BY (row_data->>'id')::int) FROM paimon_sink.rejects WHERE sink_name = 'rs'"),
	'on_error - P0001 1001,on_error - 23503 1002,on_error - 23514 1003',
	'the rejects table: exactly the three refused rows');

# a crash between PREPARE and COMMIT PREPARED commits rows and rejects together, once
sql("INSERT INTO rs SELECT i, 1, 'fine' FROM generate_series(2001, 2010) i;
	 INSERT INTO rs VALUES (2011, 55, 'fine')");
my $offset = -s $node->logfile;
sql("SELECT paimon_sink.inject_fault('committer_after_prepare', 'panic')");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.checkpoint('rs')");
isnt($ret, 0, 'the cluster crashes between PREPARE and COMMIT PREPARED');
ok(back_after_crash($node, 'postgres', $offset), 'back after the crash');
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM pg_prepared_xacts"),
	'recovery commits the transaction in doubt');
is(sql("SELECT count(*) FROM ev WHERE id > 2000"), '10', "checkpoint 2's good rows are there once");
is(sql("SELECT count(*) FROM paimon_sink.rejects WHERE sink_name = 'rs' AND checkpoint_id = 2
	AND row_data->>'id' = '2011'"), '1', 'and its refused row once');
is(sql("SELECT row_count || ' ' || newly_committed FROM paimon_sink.commit('rs', NULL, 2)"), '10 false',
	'a retry finds it committed');
is(sql("SELECT count(*) FROM paimon_sink.rejects WHERE sink_name = 'rs'"), '4', 'nothing doubled');

# a loader: the refused rows commit in the checkpoint's transaction it prepares
sql("ALTER SYSTEM SET paimon_sink.parallel_load_rows = 100; SELECT pg_reload_conf()");
sql("INSERT INTO rs SELECT i, CASE WHEN i IN (3050, 3950) THEN 55 ELSE 1 END, 'fine'
	FROM generate_series(3001, 4000) i");
is(sql("SELECT checkpoint_id || ' ' || row_count FROM paimon_sink.checkpoint('rs')"), '3 998',
	'a checkpoint a loader loads commits its good rows');
is(sql("SELECT string_agg(row_data->>'id', ',' ORDER BY (row_data->>'id')::int) FROM paimon_sink.rejects
	WHERE sink_name = 'rs' AND checkpoint_id = 3"), '3050,3950', 'and its refused rows, each once');
ok($node->log_contains('paimon_sink committed snapshot \d+ of sink "rs": .* identifier 3, 998 rows, \d+ files, 1 loaders'),
	'by the loader');

# split over the loaders (nonatomic): each share's refused rows commit in the share's transaction
sql("ALTER SYSTEM SET paimon_sink.nonatomic_parallel_load = on; SELECT pg_reload_conf()");
sql("INSERT INTO rs SELECT i, CASE WHEN i IN (4050, 4950) THEN 55 ELSE 1 END, 'fine'
	FROM generate_series(4001, 5000) i");
is(sql("SELECT checkpoint_id || ' ' || row_count FROM paimon_sink.checkpoint('rs')"), '4 998',
	'a checkpoint split over the loaders commits its good rows');
is(sql("SELECT string_agg(row_data->>'id', ',' ORDER BY (row_data->>'id')::int) FROM paimon_sink.rejects
	WHERE sink_name = 'rs' AND checkpoint_id = 4"), '4050,4950', 'and its refused rows, each once');
ok($node->log_contains('paimon_sink committed snapshot \d+ of sink "rs": .* identifier 4, 998 rows, \d+ files, 2 loaders'),
	'by the two loaders');
sql("ALTER SYSTEM RESET paimon_sink.nonatomic_parallel_load; SELECT pg_reload_conf()");

# --- who reads the rejects: the sink owner's members, through the view
sql("CREATE ROLE eve LOGIN");
($ret, $out, $err) = try_sql($node, "SELECT count(*) FROM paimon_sink.rejected_row", 'eve');
like($err, qr/42501/, 'the rejects table is not readable by others');
($ret, $out, $err) = try_sql($node, "SELECT count(*) FROM paimon_sink.rejects", 'eve');
is($out, '0', "the view shows others no sink's rows");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.reject_failing_rows('ps', 7)", 'eve');
like($err, qr/42501/, "reject_failing_rows is the sink owner's");

$node->stop;
done_testing();
