# The counters of sink_stats survive what PostgreSQL's own cumulative
# statistics do not: a crash (an immediate-mode stop, and a PANIC of the
# committer between PREPARE and COMMIT PREPARED) and a clean restart; they
# count a commit once, in its own transaction: a commit that crashes
# before its PREPARE counts nothing, one that crashes after it counts once
# (recovery commits it), and each count equals the snapshots, rows and
# bytes the catalog holds for the commit user.  A reset survives a crash
# too.  commit_stats (unlogged, since the server started) is the contrast:
# it starts again after the crash.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest
  qw(sink_setup back_after_crash writers_ready nothing_in_doubt background_sql finish_background);

my $node = PostgreSQL::Test::Cluster->new('sink_stats');
$node->init;
$node->append_conf('postgresql.conf', "restart_after_crash = on\n");
$node->start;

sub sql { return $node->safe_psql('postgres', $_[0]); }

ok(sink_setup($node), 'writers serve');
sql(q{
	CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		IF NEW.note = 'refused' THEN RAISE EXCEPTION 'refused row %', NEW.id; END IF;
		RETURN NEW;
	END $$;
	CREATE TRIGGER refuse BEFORE INSERT ON target FOR EACH ROW EXECUTE FUNCTION refuse();
});

# the counters of the job's commit user, as one line
my $columns = 'commits, rows_committed, bytes_committed, failures, skipped_as_committed, stats_reset';
sub stats
{
	return sql("SELECT concat_ws(' ', $columns) FROM paimon_sink.sink_stats "
		  . "WHERE sink_name = 's' AND commit_user = 'job'");
}

# what the catalog holds for the job: its snapshots, their rows and bytes
sub from_log
{
	return sql("SELECT concat_ws(' ', count(*), sum(row_count), sum(byte_count)) "
		  . "FROM paimon_sink.snapshot_log WHERE commit_user = 'job'");
}

# checkpoint N of the job with ROWS rows noted NOTE, prepared
sub prepare
{
	my ($n, $rows, $note) = @_;
	sql("SET paimon_sink.commit_user = 'job'; "
		  . "INSERT INTO s SELECT g, '$note' FROM generate_series($n * 1000, $n * 1000 + $rows - 1) g");
	sql("SELECT count(*) FROM paimon_sink.prepare_commit('s', 'job', $n)");
	return;
}

# three commits, one skipped commit, one failure
prepare(1, 10, 'one');
prepare(2, 20, 'two');
sql("SELECT count(*) FROM paimon_sink.commit('s', 'job', 2)");
prepare(3, 5, 'three');
sql("SELECT count(*) FROM paimon_sink.commit('s', 'job', 3)");
is(sql("SELECT string_agg(newly_committed::text, ',') FROM paimon_sink.commit('s', 'job', 3)"),
	'false', 'a commit of a committed checkpoint is skipped');
prepare(4, 3, 'refused');
my ($ret) = $node->psql('postgres', "SELECT count(*) FROM paimon_sink.commit('s', 'job', 4)");
isnt($ret, 0, 'a commit the target refuses fails');
my $before = stats();
like($before, qr/^3 35 \d+ 1 1 /, 'three commits of 35 rows, one failure, one skip');
is(join(' ', (split / /, $before)[0 .. 2]), from_log(),
	'commits, rows and bytes are the snapshot log\'s');
ok( $node->poll_query_until('postgres',
		"SELECT commits = 3 FROM paimon_sink.commit_stats WHERE sink_name = 's'"),
	'commit_stats counted them too, a second later (the contrast below)');

# a crash (immediate-mode stop): nothing lost
$node->stop('immediate');
$node->start;
ok(writers_ready($node, 'postgres'), 'writers serve after the crash');
is(stats(), $before, 'the counters survive an immediate-mode stop');
is(sql("SELECT coalesce((SELECT commits FROM paimon_sink.commit_stats WHERE sink_name = 's'), 0)"),
	'0', 'commit_stats (unlogged) started again');

# a clean restart: nothing lost
$node->restart;
ok(writers_ready($node, 'postgres'), 'writers serve after the restart');
is(stats(), $before, 'the counters survive a clean restart');

# a commit that crashes before its PREPARE counts nothing; the retry counts once
sql('DROP TRIGGER refuse ON target');
my $offset = -s $node->logfile;
sql("SELECT paimon_sink.inject_fault('committer_before_prepare', 'panic')");
$node->psql('postgres', "SELECT count(*) FROM paimon_sink.commit('s', 'job', 4)");
ok(back_after_crash($node, 'postgres', $offset), 'back after a PANIC before PREPARE');
like(stats(), qr/^3 35 \d+ 1 1 /, 'the commit rolled back by the crash is not counted');
sql("SELECT count(*) FROM paimon_sink.commit('s', 'job', 4)");
like(stats(), qr/^4 38 \d+ 1 1 /, 'its retry counts once');

# a commit that crashes after its PREPARE: recovery commits it, counted once
prepare(5, 7, 'five');
$offset = -s $node->logfile;
sql("SELECT paimon_sink.inject_fault('committer_after_prepare', 'panic')");
$node->psql('postgres', "SELECT count(*) FROM paimon_sink.commit('s', 'job', 5)");
ok(back_after_crash($node, 'postgres', $offset), 'back after a PANIC between PREPARE and COMMIT PREPARED');
ok(nothing_in_doubt($node), 'recovery committed the transaction in doubt');
is(sql("SELECT string_agg(newly_committed::text, ',') FROM paimon_sink.commit('s', 'job', 5)"),
	'false', 'the checkpoint is committed, once');
my $after = stats();
like($after, qr/^5 45 \d+ 1 2 /, 'the commit recovery finished counts once, the retry as skipped');
is(join(' ', (split / /, $after)[0 .. 2]), from_log(),
	'commits, rows and bytes are still the snapshot log\'s');

# a reset survives a crash; so do the counts after it
sql("SELECT paimon_sink.reset_sink_stats('s')");
prepare(6, 4, 'six');
sql("SELECT count(*) FROM paimon_sink.commit('s', 'job', 6)");
my $reset = stats();
like($reset, qr/^1 4 \d+ 0 0 /, 'counted from zero after the reset');
$node->stop('immediate');
$node->start;
ok(writers_ready($node, 'postgres'), 'writers serve after the second crash');
is(stats(), $reset, 'the reset and the counts after it survive a crash');

# last_commit_time is when the commit recorded its snapshot, not when it
# began: a commit that waited 4 s for the target's lock is fresh at its end
prepare(7, 3, 'seven');
my $locker = background_sql($node, 'BEGIN; LOCK TABLE target IN EXCLUSIVE MODE; SELECT pg_sleep(4); COMMIT;');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_locks WHERE relation = 'target'::regclass AND mode = 'ExclusiveLock' AND granted"),
	'the target is locked');
sql("SELECT count(*) FROM paimon_sink.commit('s', 'job', 7)");
finish_background($locker);
my $since = sql("SELECT round(seconds_since_last_commit::numeric, 1) FROM paimon_sink.sink_stats "
	  . "WHERE sink_name = 's' AND commit_user = 'job'");
my $waited = sql("SELECT round(load_ms::numeric / 1000, 1) FROM paimon_sink.snapshot_log "
	  . "WHERE commit_user = 'job' AND commit_identifier = 7");
cmp_ok($waited, '>=', 2, "the commit waited for the lock (${waited} s)");
cmp_ok($since, '<', $waited - 1,
	"seconds_since_last_commit right after it (${since}) does not count the wait (${waited} s)");

$node->stop;
done_testing();
