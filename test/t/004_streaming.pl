# A transaction larger than paimon_sink.handoff_buffer_size streams its rows
# to the writers while it runs.  Checkpoints taken meanwhile leave it out
# without copying what it streamed; its rows appear once when it commits,
# never when it rolls back, in the order they were inserted.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(start_node);

my $node = start_node('streaming', "paimon_sink.handoff_buffer_size = '64kB'");

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE target (id bigserial PRIMARY KEY, n int, note text);
	SELECT sink_name FROM paimon_sink.create_sink('s', 'target');
});
$node->poll_query_until('postgres', "SELECT count(*) = 2 FROM paimon_sink.writers WHERE ready");

my $big = $node->background_psql('postgres');
$big->query_safe("BEGIN");
$big->query_safe("INSERT INTO s (n, note) SELECT g, 'big' FROM generate_series(1, 30000) g");
ok($node->poll_query_until('postgres', "SELECT sum(rows_staged) >= 20000 FROM paimon_sink.writers"),
	'the running transaction streamed its rows to the writers');

sql("INSERT INTO s (n, note) SELECT g, 'small' FROM generate_series(1, 10) g");
is(sql("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')"), '10',
	'a checkpoint takes what committed, not the running transaction');
$big->query_safe("INSERT INTO s (n, note) SELECT g, 'big' FROM generate_series(30001, 40000) g");
is(sql("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')"), '0',
	'a second checkpoint still leaves it out');
$big->query_safe("COMMIT");
is(sql("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')"), '40000',
	'the next checkpoint takes all of it once it committed');
is(sql("SELECT sum(rows_staged) FROM paimon_sink.writers"), '40010',
	'no row was written twice: checkpoints did not copy the running transaction forward');
is(sql("SELECT count(*) || ' ' || count(DISTINCT n) FROM target WHERE note = 'big'"), '40000 40000',
	'every streamed row once');
is(sql(q{SELECT count(*) FROM (SELECT n, lag(n) OVER (ORDER BY id) AS previous
		FROM target WHERE note = 'big') s WHERE n <= previous}), '0',
	'rows reach the target in the order they were inserted');

# a streaming transaction that rolls back leaves nothing, across a checkpoint
$big->query_safe("BEGIN");
$big->query_safe("INSERT INTO s (n, note) SELECT g, 'undone' FROM generate_series(1, 30000) g");
sql("SELECT * FROM paimon_sink.checkpoint('s')");
$big->query_safe("ROLLBACK");
sql("SELECT * FROM paimon_sink.checkpoint('s')");
sql("SELECT * FROM paimon_sink.checkpoint('s')");
is(sql("SELECT count(*) FROM target WHERE note = 'undone'"), '0', 'a rolled-back stream leaves nothing');

# inside a subtransaction rows are not streamed (a rollback to the savepoint
# takes them back); the rows outside it are
$big->query_safe("BEGIN");
$big->query_safe("INSERT INTO s (n, note) SELECT g, 'outer' FROM generate_series(1, 20000) g");
$big->query_safe("SAVEPOINT p");
$big->query_safe("INSERT INTO s (n, note) SELECT g, 'inner' FROM generate_series(1, 20000) g");
$big->query_safe("ROLLBACK TO p");
$big->query_safe("INSERT INTO s (n, note) SELECT g, 'outer' FROM generate_series(20001, 25000) g");
$big->query_safe("COMMIT");
sql("SELECT * FROM paimon_sink.checkpoint('s')");
is(sql("SELECT note || ' ' || count(*) || ' ' || count(DISTINCT n) FROM target "
		. "WHERE note IN ('outer', 'inner') GROUP BY note"), 'outer 25000 25000',
	'a savepoint rolled back within a streaming transaction takes back exactly its rows');

# rows spilled inside savepoints, then streamed with the rows after them, of
# several streams (buckets): streaming reads spilled chunks back, and later
# spills must still append (they once overwrote other streams' chunks)
sql(q{
	CREATE TABLE keyed (id bigint PRIMARY KEY, note text);
	SELECT sink_name FROM paimon_sink.create_sink('k', 'keyed', buckets => 4, bucket_key => '{id}');
});
$big->query_safe("BEGIN");
$big->query_safe("SAVEPOINT a");
$big->query_safe("INSERT INTO k SELECT g, 'a' FROM generate_series(1, 40000) g");
$big->query_safe("RELEASE SAVEPOINT a");
$big->query_safe("INSERT INTO k SELECT g, 'top' FROM generate_series(40001, 40600) g");
$big->query_safe("SAVEPOINT b");
$big->query_safe("INSERT INTO k SELECT g, 'b' FROM generate_series(40601, 80600) g");
$big->query_safe("RELEASE SAVEPOINT b");
$big->query_safe("COMMIT");
is(sql("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('k')"), '80600',
	'spilled and streamed rows of several streams commit');
is(sql("SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || min(id) || ' ' || max(id) FROM keyed"),
	'80600 80600 1 80600', 'each of them exactly once');
$big->quit;

is(sql("SELECT count(*) FROM paimon_sink.pending_checkpoints"), '0', 'nothing left pending');
$node->stop;
done_testing();
