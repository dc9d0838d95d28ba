# A job that keeps its source offsets in the checkpoint's properties
# (issue 18, item 1): no store of its own.  Two subtasks read records
# 1..240 (subtask 0 the odd ones, subtask 1 the even ones), ten per
# checkpoint each, and give their position at every prepare_commit
# ({"pos-<subtask>": n}).  The commit of checkpoint 2 is lost and commit(3)
# sweeps it: each snapshot keeps its own properties.  At checkpoint 5 both
# subtasks prepared, subtask 0 wrote on, and the server crashes before the
# commit.  The restarted job makes one call, restart_job(), as soon as the
# server takes connections: it waits for the workers, restores to the last
# committed checkpoint, and returns checkpoint 4 with the positions to
# resume from and the attempt's fence epoch (setting no session setting).
# The job's subtasks name the epoch (paimon_sink.fence_epoch on their
# direct connections, fence_epoch in their calls), resume there, and the
# target ends with every record once; a session of a failed attempt, which
# names the epoch it wrote under, can neither write nor prepare positions
# after a restart.  In a
# database the worker budget cannot serve, restart_job() is refused at once
# with 53400, restoring nothing.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use PaimonSinkTest qw(start_node try_sql writers_ready);

my $node = start_node('restart_job');
my $job = 'job-33';
my $per = 10;      # records per subtask per checkpoint
my $records = 240; # 12 checkpoints
my $epoch;         # the fence epoch of the job's attempt, once restart_job() handed one out

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE events (id int PRIMARY KEY, v text);
	SELECT sink_name FROM paimon_sink.create_sink('events_sink', 'events', buckets => 2,
		bucket_key => '{id}');
});
ok(writers_ready($node, 'postgres'), 'writers serve');

# record(s, k): the id of subtask s's record at position k (0-based)
sub record { my ($s, $k) = @_; return 2 * $k + 1 + $s; }

# the fence_epoch argument of a call: the attempt's epoch, NULL before any restart
sub epoch_arg { return defined $epoch ? $epoch : 'NULL'; }

# write(s, from, to): subtask s writes its records at positions from .. to - 1,
# its session naming the attempt's fence epoch once there is one
sub write_records
{
	my ($s, $from, $to) = @_;
	return if $from >= $to;
	my $ids = join(',', map { '(' . record($s, $_) . ", 'r')" } $from .. $to - 1);
	my $fence = defined $epoch ? "SET paimon_sink.fence_epoch = '$epoch';" : '';
	my ($ret, $out, $err) = try_sql($node,
		"SET paimon_sink.commit_user = '$job'; SET paimon_sink.writer_id = $s; $fence
		 INSERT INTO events_sink VALUES $ids;");
	is($ret, 0, "subtask $s writes positions $from to " . ($to - 1)) or diag($err);
}

# prepare(s, n, pos): subtask s prepares checkpoint n at source position pos
sub prepare
{
	my ($s, $n, $pos) = @_;
	my ($ret, $out, $err) = try_sql($node,
		"SELECT count(*) FROM paimon_sink.prepare_commit('events_sink', '$job', $n, $s,
		   '{\"pos-$s\": $pos}', fence_epoch => " . epoch_arg() . ')');
	is($ret, 0, "subtask $s prepares checkpoint $n at position $pos") or diag($err);
}

# one checkpoint n of the job from positions @$pos; commit unless told not to
sub checkpoint
{
	my ($n, $pos, $commit) = @_;
	my $total = $records / 2;
	for my $s (0, 1)
	{
		my $to = $pos->[$s] + $per > $total ? $total : $pos->[$s] + $per;
		write_records($s, $pos->[$s], $to);
		$pos->[$s] = $to;
		prepare($s, $n, $to);
	}
	is(sql("SELECT count(*) FROM paimon_sink.commit('events_sink', '$job', $n, " . epoch_arg() . ')') > 0,
		1, "checkpoint $n commits") if $commit;
}

my @pos = (0, 0);
checkpoint(1, \@pos, 1);
checkpoint(2, \@pos, 0); # its commit is lost
checkpoint(3, \@pos, 1); # commit(3) sweeps 2 and 3
is(sql(q{SELECT string_agg(commit_identifier || '=' || properties::text, ' ' ORDER BY snapshot_id)
	FROM paimon_sink.snapshots WHERE sink_name = 'events_sink'}),
	'1={"pos-0": 10, "pos-1": 10} 2={"pos-0": 20, "pos-1": 20} 3={"pos-0": 30, "pos-1": 30}',
	'the lost commit of 2, swept by commit(3): each snapshot has its own properties');
checkpoint(4, \@pos, 1);
checkpoint(5, \@pos, 0); # prepared by both, never committed
write_records(0, $pos[0], $pos[0] + 3); # subtask 0 read on: staged, not prepared
is(sql(q{SELECT count(*) FROM paimon_sink.pending_checkpoints}), 1, 'checkpoint 5 is pending');
$node->stop('immediate');

# ---- the restart, in a database the worker budget cannot serve: refused at
# once (53400, the budget in the detail) instead of waiting out its timeout,
# and nothing restored
$node->append_conf('postgresql.conf', "max_worker_processes = 2\n");
$node->start;
my $start = time;
my ($ret, $out, $err) = try_sql($node,
	"SELECT * FROM paimon_sink.restart_job('events_sink', '$job', 15000)");
my $waited = time - $start;
like($err, qr/ERROR:  53400: database "postgres" cannot get its paimon_sink workers\nDETAIL:  Databases the worker budget serves: \(max_worker_processes = 2,/,
	'restart_job() is refused with 53400 when the worker budget cannot serve the database');
ok($waited < 10, sprintf('at once, not after its 15 s timeout (%.1f s)', $waited));
is(sql(q{SELECT fence_epoch FROM paimon_sink.commit_user_state WHERE commit_user = 'job-33'}),
	'0', 'nothing was restored: the fence epoch is the same');
$node->stop('immediate');
$node->append_conf('postgresql.conf', "max_worker_processes = 32\n");

# ---- the restart while the writers do not serve yet: they are adopting
# their staged files and wait on a lock (as after a crash-restart with a
# long recovery of the catalog); restart_job() gives up after its timeout
# with 57014, restoring nothing, and succeeds once they serve
$node->start;
ok(writers_ready($node, 'postgres'), 'the writers serve after the restart');
my $locker = $node->background_psql('postgres');
$locker->query_safe('BEGIN; LOCK TABLE paimon_sink.bucket_sequence IN ACCESS EXCLUSIVE MODE');
$locker->query_safe(q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	WHERE backend_type = 'paimon_sink writer' AND datname = 'postgres'});
ok( $node->poll_query_until('postgres', q{
		SELECT count(*) > 0 FROM pg_stat_activity
		WHERE backend_type = 'paimon_sink writer' AND wait_event_type = 'Lock'}),
	'the new writers wait on the lock while adopting their files');
$start = time;
($ret, $out, $err) = try_sql($node,
	"SELECT * FROM paimon_sink.restart_job('events_sink', '$job', 1500)");
$waited = time - $start;
like($err, qr/ERROR:  57014: /, 'restart_job() gives up with 57014 when the workers do not serve in time')
  or diag($err);
ok($waited >= 1.4 && $waited < 10, sprintf('after its 1.5 s timeout (%.1f s)', $waited));
is(sql(q{SELECT fence_epoch FROM paimon_sink.commit_user_state WHERE commit_user = 'job-33'}),
	'0', 'nothing was restored: the fence epoch is the same');
$locker->query_safe('COMMIT');
$locker->quit;

# ---- the real restart: one call (the workers come back meanwhile)
($ret, $out, $err) = try_sql($node,
	"SELECT checkpoint_id, properties->>'pos-0', properties->>'pos-1', discarded_checkpoints,
	        fence_epoch
	   FROM paimon_sink.restart_job('events_sink', '$job', 60000);
	 SELECT current_setting('paimon_sink.commit_user') || '/' || current_setting('paimon_sink.fence_epoch');
	 SELECT epoch_required FROM paimon_sink.commit_user_state WHERE commit_user = '$job';");
is($ret, 0, 'restart_job() succeeds once the workers serve') or diag($err);
is($out, "4|40|40|1|1\n/\nt",
	'it returns checkpoint 4 with its positions and fence epoch 1, discards 5, sets no session '
	  . 'setting and makes the commit user a job\'s');
my @restored = split(/\|/, (split(/\n/, $out))[0]);
$epoch = $restored[4];
# a subtask's session that joins the commit user without naming the epoch, as
# restart_job() used to join it, writes nothing
($ret, $out, $err) = try_sql($node,
	"SET paimon_sink.commit_user = '$job'; SET paimon_sink.writer_id = 1;
	 INSERT INTO events_sink VALUES (100000, 'no epoch');");
like($err, qr/ERROR:  55000: a write for commit user "$job" of sink "events_sink" names no fence epoch/,
	'a write of the job that names no fence epoch is refused');
is(sql(q{SELECT count(*) FROM events}), 80, 'the target holds the 80 records of checkpoints 1-4');
is(sql(q{SELECT count(*) FROM paimon_sink.checkpoint_properties}), 0,
	'the properties of the discarded checkpoint are gone');

# the job resumes from the returned positions
@pos = @restored[1, 2];
my $n = 5; # checkpoint ids continue from the restored one
while ($pos[0] < $records / 2 || $pos[1] < $records / 2)
{
	checkpoint($n++, \@pos, 1);
}
is(sql(q{SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || min(id) || ' ' || max(id)
	FROM events}), "$records $records 1 $records", 'every record is in the target once');
is(sql("SELECT checkpoint_id || ' ' || properties::text FROM paimon_sink.last_commit('events_sink', '$job')"),
	($n - 1) . ' {"pos-0": 120, "pos-1": 120}', 'the last commit holds the final positions');

# ---- a session of the failed attempt, still running, cannot write or
# prepare its positions after a restart: they would replace the restored
# subtask's.  It names the epoch of its attempt, as its session did.
my $zombie = $node->background_psql('postgres', on_error_stop => 0);
$zombie->query_safe("SET paimon_sink.commit_user = '$job'; SET paimon_sink.writer_id = 0;
	SET paimon_sink.fence_epoch = '$epoch'");
$zombie->query_safe("INSERT INTO events_sink VALUES (100001, 'zombie')");
my $old_epoch = $epoch;
($ret, $out, $err) = try_sql($node,
	"SELECT checkpoint_id, fence_epoch FROM paimon_sink.restart_job('events_sink', '$job')");
is($ret, 0, 'the job restarts once more while a session of the failed attempt runs') or diag($err);
my $from;
($from, $epoch) = split(/\|/, $out);
is($from, $n - 1, 'from its last committed checkpoint');
ok($epoch > $old_epoch, "with a new fence epoch ($old_epoch -> $epoch)");
$zombie->query("INSERT INTO events_sink VALUES (100002, 'zombie')");
like($zombie->{stderr}, qr/fence epoch $old_epoch of commit user "$job" of sink "events_sink" is stale/,
	'its next write is refused');
$zombie->{stderr} = '';
$zombie->query("SELECT count(*) FROM paimon_sink.prepare_commit('events_sink', '$job', $n, 0,
	'{\"pos-0\": 7}')");
like($zombie->{stderr}, qr/fence epoch $old_epoch of commit user "$job" of sink "events_sink" is stale/,
	'its prepare with properties is refused');
$zombie->quit;
prepare($_, $n, $records / 2) for (0, 1);
is(sql("SELECT count(*) FROM paimon_sink.commit('events_sink', '$job', $n, $epoch)"), 1,
	'the restored job commits its next checkpoint');
is(sql("SELECT properties::text FROM paimon_sink.last_commit('events_sink', '$job')"),
	'{"pos-0": 120, "pos-1": 120}', 'with its own positions');
is(sql(q{SELECT count(*) FROM events}), $records, 'and the fenced rows are not in the target');
is(sql(q{SELECT count(*) FROM pg_prepared_xacts}), 0, 'no prepared transaction is left');

done_testing();
