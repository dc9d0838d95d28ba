# A checkpoint always answers (issue 17, items 5 and 7): prepare_commit and
# commit return a row for every checkpoint id they handle, empty ones with
# rows = 0; preparing a commit user or writer id with nothing staged while
# other streams of the sink hold staged rows warns, naming them, and after
# the right call every row is there once; end_input() retried answers as
# commit() does; a prepare of a committed id hints at recover() and a new
# commit user; a commit that PREPARE refuses (a target trigger that calls
# NOTIFY) or that its load refuses names sink, checkpoint, commit user and
# target in its context.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(start_node try_sql writers_ready);

my $node = start_node('answers');

sub sql { return $node->safe_psql('postgres', shift); }

# as(USER, WRITER, SQL): SQL in a session writing as commit user USER (the
# sink's own when undef) and writer id WRITER; returns (exit code, stdout, stderr)
sub as
{
	my ($user, $writer, $sql) = @_;
	my $set = defined $user ? "SET paimon_sink.commit_user = '$user';\n" : '';
	$set .= "SET paimon_sink.writer_id = $writer;\n" if defined $writer;
	return try_sql($node, "$set$sql");
}

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE t (id int PRIMARY KEY, note text);
	SELECT sink_name FROM paimon_sink.create_sink('s', 't', buckets => 4, bucket_key => '{id}');
});
ok(writers_ready($node, 'postgres'), 'writers serve');
my $own = sql("SELECT default_commit_user FROM paimon_sink.sink_definition WHERE sink_name = 's'");

# --- empty checkpoints answer with rows = 0
my ($ret, $out, $err) = as('job-e', undef,
	"SELECT checkpoint_id, coalesce(file_name, '-'), coalesce(writer_id::text, '-'), row_count, byte_count
	 FROM paimon_sink.prepare_commit('s', 'job-e', 1)");
is($out, '1|-|-|0|0', 'an empty prepare_commit answers with one row of 0 rows') or diag($err);
unlike($err, qr/WARNING/, 'and no warning while nothing else is staged');
($ret, $out, $err) = as('job-e', undef,
	"SELECT coalesce(snapshot_id::text, '-'), checkpoint_id, row_count, file_count, newly_committed
	 FROM paimon_sink.commit('s', 'job-e', 1)");
is($out, '-|1|0|0|t', 'its commit answers with a row of 0 rows, newly committed, no snapshot')
  or diag($err);
($ret, $out, $err) = as('job-e', undef, "INSERT INTO s VALUES (1, 'e1'), (2, 'e2');
	SELECT checkpoint_id, sum(row_count) FROM paimon_sink.prepare_commit('s', 'job-e', 2) GROUP BY 1;
	SELECT checkpoint_id, row_count, newly_committed FROM paimon_sink.commit('s', 'job-e', 2);
	SELECT checkpoint_id, row_count, writer_id FROM paimon_sink.prepare_commit('s', 'job-e', 3, 7);
	INSERT INTO s VALUES (3, 'e3');
	SELECT checkpoint_id, sum(row_count) FROM paimon_sink.prepare_commit('s', 'job-e', 4) GROUP BY 1;
	SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('s', 'job-e', 5);
	SELECT checkpoint_id, row_count, newly_committed, snapshot_id IS NULL
	  FROM paimon_sink.commit('s', 'job-e', 5);");
is($out, "2|2\n2|2|t\n3|0|7\n4|1\n5|0\n4|1|t|f\n5|0|t|t",
	'a commit up to 5 answers with the snapshot of 4 and a row of 0 rows for the empty 5') or diag($err);
($ret, $out, $err) = as('job-e', undef,
	"SELECT checkpoint_id, row_count, newly_committed FROM paimon_sink.commit('s', 'job-e', 5)");
is($out, '5|0|f', 'a retry of that commit answers again for 5: 0 rows, not newly committed')
  or diag($err);
($ret, $out, $err) = as('job-e', undef,
	"SELECT checkpoint_id, row_count FROM paimon_sink.commit('s', 'job-e', 9)");
is($out, '', 'a commit up to a checkpoint never prepared has no row of its own') or diag($err);

# --- stranded rows: staged under commit user job-u (writer id 0) and the
# sink's own commit user, a prepare of another commit user or writer id warns
($ret, $out, $err) = as('job-u', 0,
	'INSERT INTO s SELECT g, \'u\' FROM generate_series(101, 105) g');
is($ret, 0, 'job-u stages 5 rows as writer id 0') or diag($err);
($ret, $out, $err) = as(undef, undef,
	'INSERT INTO s SELECT g, \'own\' FROM generate_series(201, 203) g');
is($ret, 0, 'a SQL session stages 3 rows with the sink\'s own commit user') or diag($err);

($ret, $out, $err) = as('job-v', undef,
	"SELECT checkpoint_id, row_count FROM paimon_sink.prepare_commit('s', 'job-v', 1)");
is($out, '1|0', 'a prepare of commit user job-v answers with 0 rows') or diag($err);
like($err,
	qr/WARNING:  01000: checkpoint 1 of commit user "job-v" of sink "s" prepared no rows, but 8 rows of other streams of the sink are staged/,
	'and warns that 8 rows of other streams are staged');
like($err, qr/DETAIL:  .*commit user "job-u" writer id 0: 5 rows/, 'naming job-u, writer id 0, 5 rows');
like($err, qr/DETAIL:  .*commit user "\Q$own\E" writer id 0: 3 rows/,
	'and the sink\'s own commit user with its 3 rows');
like($err, qr/HINT:  .*paimon_sink\.commit_user.*paimon_sink\.writer_id/,
	'the hint says how the rows are addressed');

($ret, $out, $err) = as('job-u', 7,
	"SELECT checkpoint_id, row_count, writer_id FROM paimon_sink.prepare_commit('s', 'job-u', 1, 7)");
is($out, '1|0|7', 'a prepare of job-u\'s writer id 7 answers with 0 rows') or diag($err);
like($err, qr/WARNING:  01000: checkpoint 1 of commit user "job-u" writer id 7 of sink "s" prepared no rows/,
	'and warns');
like($err, qr/DETAIL:  .*commit user "job-u" writer id 0: 5 rows/, 'naming job-u\'s writer id 0');

# the right calls: everything exactly once
($ret, $out, $err) = as('job-u', 0,
	"SELECT sum(row_count) FROM paimon_sink.prepare_commit('s', 'job-u', 1, 0);
	 SELECT checkpoint_id, row_count FROM paimon_sink.commit('s', 'job-u', 1);");
is($out, "5\n1|5", 'prepared as writer id 0, job-u\'s checkpoint 1 commits its 5 rows') or diag($err);
unlike($err, qr/WARNING/, 'without a warning');
($ret, $out, $err) = as(undef, undef, "SELECT row_count FROM paimon_sink.checkpoint('s')");
is($out, '3', 'checkpoint() commits the sink\'s own 3 rows') or diag($err);
($ret, $out, $err) = as('job-v', undef,
	"SELECT checkpoint_id, row_count FROM paimon_sink.commit('s', 'job-v', 1)");
is($out, '1|0', 'job-v\'s empty checkpoint commits with 0 rows') or diag($err);
is(sql("SELECT count(*), count(DISTINCT id) FROM t WHERE id BETWEEN 101 AND 205"), '8|8',
	'the 8 stranded rows are in the target once each');

# --- end_input() retried after a lost reply answers as commit() does
($ret, $out, $err) = as('job-w', undef,
	"INSERT INTO s SELECT g, 'w' FROM generate_series(301, 304) g;
	 SELECT snapshot_id, checkpoint_id, row_count, newly_committed FROM paimon_sink.end_input('s', 'job-w');");
my ($snapshot) = split /\|/, $out;
like($out, qr/^\d+\|9223372036854775807\|4\|t$/, 'end_input() commits the 4 rows') or diag($err);
($ret, $out, $err) = as('job-w', undef,
	"SELECT snapshot_id, checkpoint_id, row_count, newly_committed FROM paimon_sink.end_input('s', 'job-w')");
is($ret, 0, 'end_input() retried succeeds') or diag($err);
is($out, "$snapshot|9223372036854775807|4|f", 'and answers with the same snapshot, not newly committed');
($ret, $out, $err) = as('job-w', undef,
	"SELECT * FROM paimon_sink.prepare_commit('s', 'job-w', 1)");
like($err, qr/ERROR:  55000: commit user "job-w" has ended its input/,
	'a prepare after the end of input is still an error');
($ret, $out, $err) = as('job-x', undef,
	"SELECT checkpoint_id, row_count, newly_committed FROM paimon_sink.end_input('s', 'job-x');
	 SELECT checkpoint_id, row_count, newly_committed FROM paimon_sink.end_input('s', 'job-x');");
is($out, "9223372036854775807|0|t\n9223372036854775807|0|f",
	'an empty end_input() answers with 0 rows, and its retry too') or diag($err);
is(sql("SELECT count(*) FROM t WHERE id BETWEEN 301 AND 304"), '4', 'end_input\'s rows once');

# --- a prepare of a committed checkpoint id: the hint a restarted job can follow
($ret, $out, $err) = as('job-u', undef, "SELECT * FROM paimon_sink.prepare_commit('s', 'job-u', 1)");
like($err, qr/ERROR:  22023: checkpoint id 1 is not above the last committed checkpoint 1/,
	'a prepare of a committed id is refused');
like($err, qr/HINT:  .*paimon_sink\.recover\(\).*new commit user/,
	'its hint names recover() and a new commit user');
like($err, qr/HINT:  .*checkpoint 2 or later/, 'and the next checkpoint id');

# --- a commit that PREPARE refuses: a target trigger that calls NOTIFY
sql(q{
	CREATE SCHEMA app;
	CREATE TABLE app.noisy (id int PRIMARY KEY);
	CREATE FUNCTION app.tell() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN PERFORM pg_catalog.pg_notify('noisy', NEW.id::text); RETURN NEW; END $$;
	CREATE TRIGGER tell AFTER INSERT ON app.noisy FOR EACH ROW EXECUTE FUNCTION app.tell();
	SELECT sink_name FROM paimon_sink.create_sink('noisy_sink', 'app.noisy');
});
($ret, $out, $err) = as('job-n', undef,
	"INSERT INTO app.noisy_sink VALUES (1), (2);
	 SELECT * FROM paimon_sink.prepare_commit('noisy_sink', 'job-n', 1);
	 SELECT * FROM paimon_sink.commit('noisy_sink', 'job-n', 1);");
like($err, qr/ERROR:  0A000: cannot PREPARE a transaction that has executed LISTEN, UNLISTEN, or NOTIFY/,
	'a commit whose load calls NOTIFY is refused at PREPARE');
like($err,
	qr/CONTEXT:  committing checkpoint 1 of commit user "job-n" of sink "noisy_sink" into table app\.noisy/,
	'its context names the checkpoint, commit user, sink and target');
is(sql('SELECT count(*) FROM app.noisy'), '0', 'nothing of it was applied');
sql('DROP TRIGGER tell ON app.noisy');
($ret, $out, $err) = as('job-n', undef,
	"SELECT checkpoint_id, row_count FROM paimon_sink.commit('noisy_sink', 'job-n', 1)");
is($out, '1|2', 'once the trigger is gone, the retry commits it') or diag($err);

# --- a commit that its load refuses names the target too
($ret, $out, $err) = as('job-n', undef,
	"INSERT INTO app.noisy_sink VALUES (2);
	 SELECT * FROM paimon_sink.prepare_commit('noisy_sink', 'job-n', 2);
	 SELECT * FROM paimon_sink.commit('noisy_sink', 'job-n', 2);");
like($err, qr/ERROR:  23505: /, 'a duplicate key fails the commit');
like($err,
	qr/CONTEXT:  .*committing checkpoint 2 of commit user "job-n" of sink "noisy_sink" into table app\.noisy/s,
	'its context names the target too');
is(sql('SELECT count(*) FROM app.noisy'), '2', 'nothing of it was applied');

# --- a session that wrote for a commit user is refused at its next write
# once another session ended the commit user's input or restored it: the
# session keeps the commit user's state it read, and reads it again after
# the invalidation that the change sends when it commits
my $writer = $node->background_psql('postgres', on_error_stop => 0);
$writer->query_safe("SET paimon_sink.commit_user = 'job-y'; INSERT INTO s VALUES (401, 'y')");
$writer->query_safe("INSERT INTO s VALUES (402, 'y')");
is(sql("SELECT row_count FROM paimon_sink.end_input('s', 'job-y')"), '2',
	'another session ends job-y\'s input with its 2 rows');
$writer->query("INSERT INTO s VALUES (403, 'y')");
like($writer->{stderr}, qr/commit user "job-y" of sink "s" has ended its input/,
	'the writing session\'s next write is refused');
$writer->{stderr} = '';
$writer->query_safe("SET paimon_sink.commit_user = 'job-z'; INSERT INTO s VALUES (501, 'z')");
sql("SELECT count(*) FROM paimon_sink.prepare_commit('s', 'job-z', 1);
	 SELECT count(*) FROM paimon_sink.commit('s', 'job-z', 1);
	 SELECT count(*) FROM paimon_sink.recover('s', 'job-z', 1, 'restore')");
$writer->query("INSERT INTO s VALUES (502, 'z')");
like($writer->{stderr}, qr/commit user "job-z" of sink "s" was recovered after this session began writing/,
	'after a restore in another session, the old session\'s next write is refused');
$writer->quit;
is(sql("SELECT string_agg(id::text, ',' ORDER BY id) FROM t WHERE id BETWEEN 401 AND 502"),
	'401,402,501', 'only the rows written before the end and the restore are committed');

# --- the functions' comments say so
is(sql(q{SELECT obj_description('paimon_sink.prepare_commit(text, text, bigint, integer, jsonb, bigint, bigint)'::regprocedure, 'pg_proc') LIKE '%one row of 0 rows%dropped as a replay%'}),
	't', 'prepare_commit\'s comment tells of empty checkpoints and dropped replays');
is(sql(q{SELECT obj_description('paimon_sink.commit(text, text, bigint, bigint)'::regprocedure, 'pg_proc') LIKE '%without a snapshot (empty) answers too%'}),
	't', 'commit\'s comment tells of empty checkpoints');
is(sql(q{SELECT obj_description('paimon_sink.end_input(text, text, bigint)'::regprocedure, 'pg_proc') LIKE '%a retry after a lost reply answers%'}),
	't', 'end_input\'s comment tells of retries');

$node->stop;
done_testing();
