# Dynamic-partition overwrite rebuilds a partition with the keys it held
# (issue "6 — The target changes while rows wait", item 3): the partitions
# a checkpoint's rows go to are found from the staged rows and emptied
# before the load, in the commit's one prepared transaction, so a daily
# rebuild that rewrites a partition's primary keys commits (it failed with
# 23505 when the load came first).  After each step the target equals a
# ledger: a plain table holding what the target should hold, each
# partition's rows replaced as the job's are.
# 1. A job rebuilds one day with the same keys and a few more: committed
#    once, one OVERWRITE snapshot; the other days stay.
# 2. The next day's job (a new commit user) rebuilds that day again with
#    the same keys, and a day split into hash sub-partitions, in one
#    checkpoint: every leaf receiving rows is replaced once; its next
#    checkpoint appends to what it replaced (once per job).
# 3. A crash (immediate stop) between the DELETE and the PREPARE, and one
#    between the PREPARE and COMMIT PREPARED: after the restart the target
#    equals the ledger, and the retried commit and a restore change
#    nothing twice.
# 4. A rebuild with a row no partition takes fails naming it, nothing
#    applied; reject_failing_rows() moves the row aside and the rebuild
#    commits once.  A key twice in one checkpoint still fails, nothing
#    applied.
# 5. NULL partition values: a row with a NULL key replaces the partition
#    for NULL (and the default partition its rows go to), no other; an
#    empty job changes nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(background_sql fault_paused nothing_in_doubt start_node try_sql writers_ready);

my $node = start_node('partition_rebuild', 'restart_after_crash = on');

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE rebuild (day date, id int, v text, PRIMARY KEY (day, id)) PARTITION BY RANGE (day);
	CREATE TABLE d1 PARTITION OF rebuild FOR VALUES FROM ('2026-12-01') TO ('2026-12-02');
	CREATE TABLE d2 PARTITION OF rebuild FOR VALUES FROM ('2026-12-02') TO ('2026-12-03');
	CREATE TABLE d3 PARTITION OF rebuild FOR VALUES FROM ('2026-12-03') TO ('2026-12-04')
		PARTITION BY HASH (id);
	CREATE TABLE d3a PARTITION OF d3 FOR VALUES WITH (MODULUS 2, REMAINDER 0);
	CREATE TABLE d3b PARTITION OF d3 FOR VALUES WITH (MODULUS 2, REMAINDER 1);
	INSERT INTO rebuild SELECT '2026-12-01'::date + k, g, 'v0'
		FROM generate_series(0, 2) k, generate_series(1, 50) g;
	CREATE TABLE ledger (day date, id int, v text);
	INSERT INTO ledger SELECT * FROM rebuild;
	SELECT sink_name FROM paimon_sink.create_sink('rebuild_sink', 'rebuild', mode => 'overwrite',
		dynamic_partition_overwrite => true);
});
ok(writers_ready($node, 'postgres'), 'writers serve');

# write_day(job, day, from, to, v): the job's rows of one day, ids from .. to, into the
# sink; the ledger's rows of that day replaced by them unless append is set
sub write_day
{
	my ($job, $day, $from, $to, $v, $append) = @_;
	my ($ret, $out, $err) = try_sql($node,
		"SET paimon_sink.commit_user = '$job';
		 INSERT INTO rebuild_sink SELECT '$day', g, '$v' FROM generate_series($from, $to) g;");
	is($ret, 0, "$job writes $day $from..$to") or diag($err);
	return;
}

# ledger_day(day, from, to, v, append): what the target should now hold for that day
sub ledger_day
{
	my ($day, $from, $to, $v, $append) = @_;
	sql("DELETE FROM ledger WHERE day = '$day'") unless $append;
	sql("INSERT INTO ledger SELECT '$day', g, '$v' FROM generate_series($from, $to) g");
	return;
}

# equals_ledger(): "missing M, extra E" between the target and the ledger (rows as multisets)
sub equals_ledger
{
	return sql(q{
		SELECT 'missing ' || (SELECT count(*) FROM (SELECT * FROM ledger EXCEPT ALL SELECT * FROM rebuild) m)
			|| ', extra ' || (SELECT count(*) FROM (SELECT * FROM rebuild EXCEPT ALL SELECT * FROM ledger) e)});
}

sub days
{
	return sql("SELECT string_agg(day || ':' || v || ':' || n, ',' ORDER BY day, v)
		FROM (SELECT day, v, count(*) AS n FROM rebuild GROUP BY 1, 2) c");
}

sub kinds
{
	my ($job) = @_;
	return sql("SELECT string_agg(commit_identifier || ':' || commit_kind || ':' || row_count, ','
		ORDER BY snapshot_id) FROM paimon_sink.snapshots WHERE commit_user = '$job'");
}

# call(sql): runs a call of the job, returns (psql's exit code, its stderr)
sub call
{
	my ($statement) = @_;
	my ($ret, $out, $err) = try_sql($node, $statement);
	return ($ret, $err);
}

my $exact = 'missing 0, extra 0';

# --- 1: a day rebuilt with the same keys
write_day('day-1', '2026-12-02', 1, 60, 'v1');
ledger_day('2026-12-02', 1, 60, 'v1');
sql("SELECT count(*) FROM paimon_sink.prepare_commit('rebuild_sink', 'day-1', 1)");
my ($ret, $err) = call("SELECT count(*) FROM paimon_sink.commit('rebuild_sink', 'day-1', 1)");
is($ret, 0, 'the rebuild with the same keys commits') or diag($err);
is(equals_ledger(), $exact, 'the target equals the ledger');
is(days(), '2026-12-01:v0:50,2026-12-02:v1:60,2026-12-03:v0:50', 'only the rebuilt day is replaced');
is(kinds('day-1'), '1:OVERWRITE:60', 'committed once, as one OVERWRITE snapshot');
($ret, $err) = call("SELECT count(*) FROM paimon_sink.commit('rebuild_sink', 'day-1', 1)");
is($ret, 0, 'the commit retried') or diag($err);
is(equals_ledger(), $exact, 'a retried commit changes nothing');

# --- 2: the next day's rebuild, the same keys again, one checkpoint into many leaves
write_day('day-2', '2026-12-02', 1, 60, 'v2');
write_day('day-2', '2026-12-03', 1, 50, 'v2');
ledger_day('2026-12-02', 1, 60, 'v2');
ledger_day('2026-12-03', 1, 50, 'v2');
sql("SELECT count(*) FROM paimon_sink.prepare_commit('rebuild_sink', 'day-2', 1)");
($ret, $err) = call("SELECT count(*) FROM paimon_sink.commit('rebuild_sink', 'day-2', 1)");
is($ret, 0, "the next day's rebuild with the same keys commits too") or diag($err);
is(equals_ledger(), $exact, 'the target equals the ledger');
is(sql("SELECT string_agg(DISTINCT v, ',') FROM rebuild WHERE day >= '2026-12-02'"), 'v2',
	'both days, and both hash leaves of the sub-partitioned one, replaced');
is(sql("SELECT overwritten_partitions FROM paimon_sink.commit_user_state WHERE commit_user = 'day-2'"),
	'{d2,d3a,d3b}', "the commit user's state lists the leaves replaced");
# its next checkpoint appends to the leaves it replaced
write_day('day-2', '2026-12-03', 51, 55, 'v2b');
ledger_day('2026-12-03', 51, 55, 'v2b', 1);
sql("SELECT count(*) FROM paimon_sink.prepare_commit('rebuild_sink', 'day-2', 2)");
($ret, $err) = call("SELECT count(*) FROM paimon_sink.commit('rebuild_sink', 'day-2', 2)");
is($ret, 0, 'the next checkpoint commits') or diag($err);
is(equals_ledger(), $exact, 'it appends: the target equals the ledger');
is(kinds('day-2'), '1:OVERWRITE:110,2:APPEND:5', 'one OVERWRITE snapshot, then APPEND');

# --- 3: a crash between the DELETE and COMMIT PREPARED
my $job = 3;
for my $point ('committer_before_prepare', 'committer_after_prepare')
{
	my $name = "day-$job";
	$job++;
	write_day($name, '2026-12-01', 1, 50, $name);
	sql("SELECT count(*) FROM paimon_sink.prepare_commit('rebuild_sink', '$name', 1)");
	sql("SELECT paimon_sink.inject_fault('$point', 'pause', 1)");
	my $run = background_sql($node, "SELECT count(*) FROM paimon_sink.commit('rebuild_sink', '$name', 1)");
	ok(fault_paused($node, $point), "$point: the commit deleted and loaded, paused there");
	$node->stop('immediate');
	$run->{harness}->finish;
	$node->start;
	ok(writers_ready($node, 'postgres'), "$point: the restarted server's writers serve");
	ok(nothing_in_doubt($node), "$point: nothing of ours is left in doubt");
	my $committed = $point eq 'committer_after_prepare';
	is(sql("SELECT count(*) FROM rebuild WHERE v = '$name'"), $committed ? '50' : '0',
		"$point: the rebuild is " . ($committed ? 'committed by recovery' : 'not applied at all'));
	($ret, $err) = call("SELECT count(*) FROM paimon_sink.commit('rebuild_sink', '$name', 1)");
	is($ret, 0, "$point: the commit retried") or diag($err);
	ledger_day('2026-12-01', 1, 50, $name);
	is(equals_ledger(), $exact, "$point: the target equals the ledger");
	is(kinds($name), '1:OVERWRITE:50', "$point: committed once");
	sql("SELECT recommitted_checkpoints FROM paimon_sink.restart_job('rebuild_sink', '$name', 30000, 1)");
	is(equals_ledger(), $exact, "$point: a restore of the job changes nothing");
}

# --- 4: a row no partition takes, in a rebuild with the same keys: the commit fails on
# it naming it (23514), nothing applied; reject_failing_rows() moves it aside, steps
# over it when routing, and the rebuild commits once
write_day('day-9', '2026-12-01', 1, 50, 'v9');
write_day('day-9', '2027-01-01', 1, 1, 'v9');
sql("SELECT count(*) FROM paimon_sink.prepare_commit('rebuild_sink', 'day-9', 1)");
($ret, $err) = call("SELECT count(*) FROM paimon_sink.commit('rebuild_sink', 'day-9', 1)");
like($err, qr/no partition of relation "rebuild" found for row/, 'a row no partition takes fails the commit');
is(equals_ledger(), $exact, 'nothing of it applied: the target equals the ledger');
is(sql("SELECT row_count FROM paimon_sink.reject_failing_rows('rebuild_sink', 1, 'day-9')"), '50',
	'reject_failing_rows() commits the rest');
ledger_day('2026-12-01', 1, 50, 'v9');
is(equals_ledger(), $exact, 'the day is rebuilt with the same keys: the target equals the ledger');
is(sql("SELECT count(*) FROM paimon_sink.rejects WHERE commit_user = 'day-9'"), '1',
	'the row no partition takes is in the rejects table');
# a duplicate key inside the checkpoint itself still fails the commit, nothing applied
write_day('day-10', '2026-12-01', 1, 50, 'v10');
write_day('day-10', '2026-12-01', 50, 50, 'v10');
sql("SELECT count(*) FROM paimon_sink.prepare_commit('rebuild_sink', 'day-10', 1)");
($ret, $err) = call("SELECT count(*) FROM paimon_sink.commit('rebuild_sink', 'day-10', 1)");
like($err, qr/23505|duplicate key/, 'a key twice in the checkpoint fails the commit');
is(equals_ledger(), $exact, 'nothing of it applied: the partition keeps its rows');
is(sql("SELECT count(*) FROM pg_prepared_xacts"), '0', 'nothing in doubt');

# --- 5: NULL partition values
sql(q{
	CREATE TABLE tagged (tag text, id int, v text) PARTITION BY LIST (tag);
	CREATE TABLE tag_a PARTITION OF tagged FOR VALUES IN ('a');
	CREATE TABLE tag_null PARTITION OF tagged FOR VALUES IN (NULL);
	CREATE TABLE tag_other PARTITION OF tagged DEFAULT;
	INSERT INTO tagged SELECT t, g, 'old' FROM unnest(ARRAY['a', NULL, 'b']) t, generate_series(1, 10) g;
	SELECT sink_name FROM paimon_sink.create_sink('tagged_sink', 'tagged', mode => 'overwrite',
		dynamic_partition_overwrite => true);
});
sub tags
{
	return sql("SELECT string_agg(part || ':' || v || ':' || n, ',' ORDER BY part, v)
		FROM (SELECT tableoid::regclass::text AS part, v, count(*) AS n FROM tagged GROUP BY 1, 2) c");
}
($ret, $err) = call("SET paimon_sink.commit_user = 'tags';
	INSERT INTO tagged_sink SELECT NULL, g, 'new' FROM generate_series(1, 10) g;
	INSERT INTO tagged_sink VALUES ('c', 1, 'new');");
is($ret, 0, 'rows with a NULL key and one for the default partition written') or diag($err);
sql("SELECT count(*) FROM paimon_sink.prepare_commit('tagged_sink', 'tags', 1)");
sql("SELECT count(*) FROM paimon_sink.commit('tagged_sink', 'tags', 1)");
is(tags(), 'tag_a:old:10,tag_null:new:10,tag_other:new:1',
	"the partition for NULL and the default partition are replaced, no other");
sql("SELECT count(*) FROM paimon_sink.end_input('tagged_sink', 'tags-empty')");
is(tags(), 'tag_a:old:10,tag_null:new:10,tag_other:new:1', 'an empty job changes nothing');

$node->stop;
done_testing();
