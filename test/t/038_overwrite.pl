# Overwrite sinks (issue 18, item 3; ../shared/cases/overwrite.md): a job
# (commit user) replaces the target once, in its first commit, exactly once
# across retries, restores and a crash after the PREPARE.
# 1. The target holds 500 rows; a job writes ids 1..100 as checkpoint 1 and
#    commits: 100 rows.  Its checkpoint 2 (101..150) is prepared, the commit
#    lost; a restore (restart_job with restored checkpoint 2) re-commits it:
#    150, not 50.  Another restore changes nothing.  A new job (a new commit
#    user) overwrites again, its commit(2) sweeping a lost commit(1): the
#    replacement happens once, at checkpoint 1.
# 2. The target holds 500 rows; a job writes nothing and ends its input: 0
#    rows, the empty checkpoint a snapshot of kind OVERWRITE, so a replay of
#    end_input after a restore changes nothing (rows written meanwhile stay).
#    Once more with a crash right after the empty commit's PREPARE: recovery
#    commits it (an empty checkpoint has no committable; it is ours all the
#    same) and the target is empty once.
# 3. A partitioned target with dynamic_partition_overwrite: only the leaf
#    partitions that receive rows are replaced, each once per job; a row
#    moved aside by on_error 'reject' does not make its partition replaced
#    (its partition is emptied before the load, so the emptying is undone);
#    a commit without rows changes nothing.  (A row rewriting a key its
#    partition held is no refused row: test 061.)
# And a crash after the PREPARE of a job's first commit with rows: committed
# once, and the job's next checkpoint appends.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(back_after_crash start_node try_sql writers_ready);

my $node = start_node('overwrite', 'restart_after_crash = on');
my $end = '9223372036854775807';

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE t (id int, v text);
	INSERT INTO t SELECT g, 'old' FROM generate_series(1001, 1500) g;
	SELECT sink_name FROM paimon_sink.create_sink('t_sink', 't', mode => 'overwrite');
});
ok(writers_ready($node, 'postgres'), 'writers serve');

# the fence epoch restart_job() handed each job ("sink job"), which its
# writes and calls name from then on
my %epoch;

# fence(sink, job): the fence_epoch argument of the job's calls, NULL before a restart
sub fence
{
	my ($sink, $job) = @_;
	return $epoch{"$sink $job"} // 'NULL';
}

# write(job, from, to): the job's rows from .. to
sub write_rows
{
	my ($job, $from, $to) = @_;
	my ($ret, $out, $err) = try_sql($node,
		"SET paimon_sink.commit_user = '$job';
		 INSERT INTO t_sink SELECT g, '$job' FROM generate_series($from, $to) g;");
	is($ret, 0, "$job writes $from..$to") or diag($err);
}

sub prepare
{
	my ($sink, $job, $n) = @_;
	sql("SELECT count(*) FROM paimon_sink.prepare_commit('$sink', '$job', $n,
		fence_epoch => " . fence($sink, $job) . ')');
}

sub commit
{
	my ($sink, $job, $n) = @_;
	sql("SELECT count(*) FROM paimon_sink.commit('$sink', '$job', $n, " . fence($sink, $job) . ')');
}

sub contents
{
	return sql("SELECT string_agg(v || ':' || n, ',' ORDER BY v)
		FROM (SELECT v, count(*) AS n FROM t GROUP BY v) c");
}

sub kinds
{
	my ($sink, $job) = @_;
	return sql("SELECT string_agg(commit_identifier || ':' || commit_kind || ':' || row_count, ','
		ORDER BY snapshot_id) FROM paimon_sink.snapshots WHERE sink_name = '$sink'
		AND commit_user = '$job'");
}

# restore(sink, job, [n]): restart_job from checkpoint n (the last committed when undef),
# keeping the fence epoch it hands out; returns how many checkpoints it re-committed
sub restore
{
	my ($sink, $job, $n) = @_;
	my ($recommitted, $epoch) = split(/\|/,
		sql("SELECT recommitted_checkpoints, fence_epoch FROM paimon_sink.restart_job('$sink', '$job', 30000"
			  . (defined $n ? ", $n" : '') . ')'));
	$epoch{"$sink $job"} = $epoch;
	return $recommitted;
}

sub end_input
{
	my ($sink, $job) = @_;
	return sql("SELECT count(*) FROM paimon_sink.end_input('$sink', '$job', " . fence($sink, $job) . ')');
}

sub user_state
{
	my ($job, $column) = @_;
	return sql("SELECT $column FROM paimon_sink.commit_user_state WHERE commit_user = '$job'");
}

# crash_after_prepare(SQL, WHAT): SQL's commit crashes the server right after
# its PREPARE TRANSACTION; the server comes back and recovery commits it
sub crash_after_prepare
{
	my ($statement, $what) = @_;
	my $offset = -s $node->logfile;
	sql("SELECT paimon_sink.inject_fault('committer_after_prepare', 'panic')");
	$node->psql('postgres', $statement);
	ok(back_after_crash($node, 'postgres', $offset),
		'back after a crash between PREPARE and COMMIT PREPARED');
	ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_prepared_xacts'), $what);
}

# --- 1: once per job, not per checkpoint; across a restore
write_rows('job-a', 1, 100);
prepare('t_sink', 'job-a', 1);
is(contents(), 'old:500', 'a prepared checkpoint changes nothing yet');
commit('t_sink', 'job-a', 1);
is(contents(), 'job-a:100', "the job's first commit replaces the target: 100 rows");
write_rows('job-a', 101, 150);
prepare('t_sink', 'job-a', 2);
# commit(2) is lost: the job fails and is restored from checkpoint 2
is(restore('t_sink', 'job-a', 2),
	'1', 'the restore re-commits checkpoint 2');
is(contents(), 'job-a:150', 'the second checkpoint appends: 150 rows, not 50');
commit('t_sink', 'job-a', 2);
restore('t_sink', 'job-a', 2);
is(contents(), 'job-a:150', 'a retried commit and another restore change nothing');
is(kinds('t_sink', 'job-a'), '1:OVERWRITE:100,2:APPEND:50',
	'one OVERWRITE snapshot, then APPEND');
is(user_state('job-a', 'overwrite_checkpoint'),
	'1', "the commit user's state records the checkpoint that replaced the target");

# a new job overwrites again; its commit(2) commits a lost commit(1) first
write_rows('job-b', 201, 210);
prepare('t_sink', 'job-b', 1);
write_rows('job-b', 211, 230);
prepare('t_sink', 'job-b', 2);
commit('t_sink', 'job-b', 2);
is(contents(), 'job-b:30', 'a new commit user is a new job: it replaces the target once');
is(kinds('t_sink', 'job-b'), '1:OVERWRITE:10,2:APPEND:20',
	'commit(2) after a lost commit(1) replaces at checkpoint 1 only');

# --- 2: an empty job empties the target; a replay changes nothing
sql("INSERT INTO t SELECT g, 'old' FROM generate_series(1001, 1500) g");
is(contents(), 'job-b:30,old:500', 'the target holds 500 more rows');
is(end_input('t_sink', 'job-e'), '1',
	'an empty job ends its input');
is(contents(), '', 'an empty job empties the target');
is(kinds('t_sink', 'job-e'), "$end:OVERWRITE:0", 'its empty checkpoint is a snapshot');
sql("INSERT INTO t VALUES (7, 'later')");
restore('t_sink', 'job-e');
end_input('t_sink', 'job-e');
is(contents(), 'later:1', 'a restore and a replay of end_input change nothing');

# the same, with a crash right after the empty commit's PREPARE
sql("INSERT INTO t SELECT g, 'old' FROM generate_series(1001, 1500) g");
crash_after_prepare("SELECT * FROM paimon_sink.end_input('t_sink', 'job-f')",
	"the empty commit's prepared transaction is ours: recovery commits it");
is(contents(), '', 'the target is empty');
is(kinds('t_sink', 'job-f'), "$end:OVERWRITE:0", 'one snapshot');
sql("INSERT INTO t VALUES (8, 'later')");
end_input('t_sink', 'job-f');
is(contents(), 'later:1', 'the retried end_input finds it committed: nothing emptied again');

# --- a crash after the PREPARE of a first commit with rows
write_rows('job-c', 1, 40);
prepare('t_sink', 'job-c', 1);
crash_after_prepare("SELECT * FROM paimon_sink.commit('t_sink', 'job-c', 1)",
	"the first commit's prepared transaction is committed by recovery");
is(contents(), 'job-c:40', 'committed once: the target replaced, 40 rows');
commit('t_sink', 'job-c', 1);
write_rows('job-c', 41, 45);
prepare('t_sink', 'job-c', 2);
commit('t_sink', 'job-c', 2);
is(contents(), 'job-c:45', 'the next checkpoint appends');

# --- 3: dynamic-partition overwrite
sql(q{
	CREATE TABLE p (id int, part int, v text, PRIMARY KEY (id, part)) PARTITION BY LIST (part);
	CREATE FUNCTION refuse_bad() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF NEW.v = 'bad' THEN
			RAISE EXCEPTION 'bad row';
		END IF;
		RETURN NEW;
	END $$;
	CREATE TRIGGER refuse_bad BEFORE INSERT ON p FOR EACH ROW EXECUTE FUNCTION refuse_bad();
	CREATE TABLE p1 PARTITION OF p FOR VALUES IN (1);
	CREATE TABLE p2 PARTITION OF p FOR VALUES IN (2);
	CREATE TABLE p3 PARTITION OF p FOR VALUES IN (3);
	INSERT INTO p SELECT g, k, 'old' FROM generate_series(1, 100) g, generate_series(1, 3) k;
	SELECT sink_name FROM paimon_sink.create_sink('p_sink', 'p', mode => 'overwrite',
		dynamic_partition_overwrite => true, on_error => 'reject');
});
sub parts
{
	return sql("SELECT string_agg(part || ':' || v || ':' || n, ',' ORDER BY part, v)
		FROM (SELECT tableoid::regclass::text AS part, v, count(*) AS n FROM p GROUP BY 1, 2) c");
}
sub write_p
{
	my ($job, $values) = @_;
	my ($ret, $out, $err) = try_sql($node,
		"SET paimon_sink.commit_user = '$job'; INSERT INTO p_sink VALUES $values;");
	is($ret, 0, "$job writes into p") or diag($err);
}
write_p('dyn', join(',', map { "($_, 1, 'new')" } 1001 .. 1010));
prepare('p_sink', 'dyn', 1);
commit('p_sink', 'dyn', 1);
is(parts(), "p1:new:10,p2:old:100,p3:old:100", 'only the partition receiving rows is replaced');
# checkpoint 2: p1 again (appended), p2 first (replaced), and p3 only a row its trigger refuses
write_p('dyn', join(',', (map { "($_, 1, 'new')" } 1011 .. 1015), (map { "($_, 2, 'new')" } 2001 .. 2003),
	"(1, 3, 'bad')"));
prepare('p_sink', 'dyn', 2);
commit('p_sink', 'dyn', 2);
is(parts(), "p1:new:15,p2:new:3,p3:old:100",
	'a partition replaced once per job; one whose only row was rejected is left alone');
is(sql("SELECT count(*) FROM paimon_sink.rejects WHERE sink_name = 'p_sink'"), '1',
	'the refused row was moved aside');
restore('p_sink', 'dyn', 2);
end_input('p_sink', 'dyn');
is(parts(), "p1:new:15,p2:new:3,p3:old:100", 'a restore and an empty end_input change nothing');
is(kinds('p_sink', 'dyn'), '1:OVERWRITE:10,2:OVERWRITE:8',
	'commits that replaced partitions are OVERWRITE snapshots; the empty one makes none');
is(user_state('dyn', 'overwritten_partitions'),
	'{p1,p2}', "the commit user's state lists the partitions replaced");
# a new job with no rows changes nothing either
end_input('p_sink', 'dyn-empty');
is(parts(), "p1:new:15,p2:new:3,p3:old:100", 'an empty dynamic-partition job changes nothing');

$node->stop;
done_testing();
