# Recovery finishes only prepared transactions that are provably its own:
# our gid prefix and form, this database, the role the committer prepares
# as, and a checkpoint that is prepared (or committed) for an existing sink.
# Foreign ones carrying our prefix (another role's, one named as a sink's
# next checkpoint was named before gids had a random suffix, one from
# another database, a malformed one, a superuser's naming no checkpoint)
# are never committed or rolled back by the committer: in_doubt lists them
# with the reason and the committer logs each once.  None of them blocks a
# commit.  A commit whose very gid is taken (read from commit_progress while
# it is paused) fails with 42710 naming the owner, its checkpoint stays
# prepared, and the next attempt commits under a new name.  One left in
# doubt by a crash of ours is committed once.  Nothing of ours stays in
# doubt.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(back_after_crash writers_ready start_node try_sql);

my $node = start_node('foreign_prepared', "log_min_messages = log\nrestart_after_crash = on");

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE ROLE other_role LOGIN;
	CREATE TABLE mine (what text);
	ALTER TABLE mine OWNER TO other_role;
	CREATE TABLE t (id int PRIMARY KEY, note text);
	SELECT sink_name FROM paimon_sink.create_sink('f', 't');
	CREATE DATABASE elsewhere;
});
$node->safe_psql('elsewhere', 'CREATE TABLE marker (what text)');
ok(writers_ready($node, 'postgres'), 'writers serve');
my $db = sql("SELECT oid FROM pg_database WHERE datname = 'postgres'");
my $sink = sql("SELECT sink_id FROM paimon_sink.sinks WHERE sink_name = 'f'");
my $own = sql("SELECT default_commit_user FROM paimon_sink.sinks WHERE sink_name = 'f'");
my $next = sql("SELECT last_prepared_checkpoint + 1 FROM paimon_sink.sinks WHERE sink_name = 'f'");

# --- foreign transactions that carry our prefix
my %foreign = (
	next_checkpoint => "paimon_sink:$db:$sink:$next:$own",
	another_role => "paimon_sink:$db:$sink:5:someone",
	malformed => 'paimon_sink:garbage',
	no_sink => "paimon_sink:$db:999:1:job",
	no_checkpoint => "paimon_sink:$db:$sink:77:job-x",
	elsewhere => "paimon_sink:$db:$sink:1:job-2");
for my $key (qw(next_checkpoint another_role malformed))
{
	my ($ret, $out, $err) = try_sql($node, qq{
		BEGIN;
		INSERT INTO mine VALUES ('$key');
		PREPARE TRANSACTION '$foreign{$key}';
	}, 'other_role');
	is($ret, 0, "another role prepares $foreign{$key}") or diag($err);
}
# a superuser's, in this database: owned by the committer's role, but naming
# no sink, and no prepared checkpoint
for my $key (qw(no_sink no_checkpoint))
{
	sql(qq{
		BEGIN;
		INSERT INTO mine VALUES ('$key');
		PREPARE TRANSACTION '$foreign{$key}';
	});
}
# and one in another database, named exactly like a job's next checkpoint here
$node->safe_psql('elsewhere', qq{
	BEGIN;
	INSERT INTO marker VALUES ('elsewhere');
	PREPARE TRANSACTION '$foreign{elsewhere}';
});

# --- one of ours, left in doubt by a crash
my $crash_offset = -s $node->logfile;
sql(q{
	SET paimon_sink.commit_user = 'job-1';
	INSERT INTO f SELECT g, 'in doubt' FROM generate_series(1, 25) g;
	SELECT count(*) FROM paimon_sink.prepare_commit('f', 'job-1', 1);
	SELECT paimon_sink.inject_fault('committer_after_prepare', 'panic');
});
my ($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.commit('f', 'job-1', 1)");
isnt($ret, 0, 'the cluster crashes between PREPARE and COMMIT PREPARED of one of ours');
ok(back_after_crash($node, 'postgres', $crash_offset), 'back after the crash');
ok($node->poll_query_until('postgres', "SELECT count(*) = 0 FROM paimon_sink.in_doubt WHERE ours"),
	'the committer committed ours');
is(sql("SELECT count(*) FROM t WHERE note = 'in doubt'"), '25', 'its rows are there once');
is(sql("SELECT newly_committed FROM paimon_sink.commit('f', 'job-1', 1)"), 'f',
	'a retry of its commit skips it');
is(sql('SELECT count(*) FROM mine'), '0', 'nothing foreign was committed');
is(sql(q{SELECT string_agg(gid, ',' ORDER BY gid COLLATE "C") FROM pg_prepared_xacts WHERE database = 'postgres'}),
	join(',', sort grep { $_ ne $foreign{elsewhere} } values %foreign),
	'every foreign transaction of this database is still prepared');
is($node->safe_psql('elsewhere', q{SELECT count(*) FROM pg_prepared_xacts WHERE database = 'elsewhere'}), '1',
	'and the one of another database too');

# --- in_doubt tells them apart, with the reason
my $committer_role = sql('SELECT current_user');
my %reason = (
	no_checkpoint => "f It names checkpoint 77 of commit user \"job-x\", which is neither prepared nor committed.",
	another_role => "f It was prepared by role \"other_role\"; the committer prepares as role \"$committer_role\".",
	next_checkpoint => "f It was prepared by role \"other_role\"; the committer prepares as role \"$committer_role\".",
	no_sink => "- It names sink 999, which does not exist.",
	malformed => "- It is not of the form paimon_sink:<database>:<sink>:<checkpoint>:<commit user>~<random suffix> (a loader's: <commit user>/<part>~<random suffix>).");
is(sql(q{SELECT string_agg(gid || ' ' || ours || ' ' || coalesce(sink_name, '-') || ' ' || foreign_reason, E'\n'
	ORDER BY gid COLLATE "C") FROM paimon_sink.in_doubt}),
	join("\n", map { "$foreign{$_} false $reason{$_}" } sort { $foreign{$a} cmp $foreign{$b} } keys %reason),
	'in_doubt lists each foreign transaction with why it is not ours');

# --- none of them blocks a commit: the look-alike of the next checkpoint's gid
sql("INSERT INTO f VALUES (100, 'past the look-alike'), (101, 'past the look-alike')");
is(sql("SELECT row_count FROM paimon_sink.checkpoint('f')"), '2',
	'a transaction named as the next checkpoint was named before does not block it');
is(sql("SELECT count(*) || ' ' || count(DISTINCT id) FROM t WHERE note = 'past the look-alike'"), '2 2',
	'its rows are there once');
like(sql("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:$db:$sink:$next:%' ORDER BY gid LIMIT 1"),
	qr/^\Q$foreign{next_checkpoint}\E$/, 'and the look-alike is still the other role\'s, prepared');

# take_gid(COMMIT_SQL, TAKER): start COMMIT_SQL paused before its PREPARE,
# read the gid it will prepare under from commit_progress, let TAKER (a
# code ref) prepare a transaction under that gid, release the commit;
# returns (the gid, the commit's stderr).
sub take_gid
{
	my ($commit_sql, $taker) = @_;
	sql("SELECT paimon_sink.inject_fault('committer_before_prepare', 'pause')");
	my ($in, $out, $err) = ('', '', '');
	my $run = IPC::Run::start(
		[ 'psql', '-XAt', '-v', 'VERBOSITY=verbose', '-d', $node->connstr('postgres'), '-c', $commit_sql ],
		'<', \$in, '>', \$out, '2>', \$err);
	$node->poll_query_until('postgres',
		"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'committer_before_prepare'")
	  or die 'the commit did not pause';
	my $gid = sql('SELECT gid FROM paimon_sink.commit_progress');
	my (undef, $seen) = try_sql($node, "SELECT coalesce(gid, 'hidden') FROM paimon_sink.commit_progress", 'other_role');
	is($seen, 'hidden', 'a role that is not the sink owner\'s member does not see the gid');
	$taker->($gid);
	sql("SELECT paimon_sink.release_fault('committer_before_prepare'); SELECT paimon_sink.clear_faults()");
	$run->finish;
	return ($gid, $err);
}

# --- a commit whose very gid another role takes fails clearly; the checkpoint stays
my $checkpoint = sql("SELECT last_prepared_checkpoint + 1 FROM paimon_sink.sinks WHERE sink_name = 'f'");
sql("INSERT INTO f VALUES (200, 'blocked once'), (201, 'blocked once')");
my ($taken, $taken_err) = take_gid("SELECT row_count FROM paimon_sink.checkpoint('f')", sub {
	my $gid = shift;
	try_sql($node, "BEGIN; INSERT INTO mine VALUES ('took it'); PREPARE TRANSACTION '$gid'", 'other_role');
});
like($taken, qr/^paimon_sink:$db:$sink:$checkpoint:\Q$own\E~[0-9a-f]{16}$/,
	'commit_progress shows the gid the commit prepares under, with its random suffix');
like($taken_err, qr/ERROR:  42710: transaction identifier "\Q$taken\E" is in use by a prepared transaction that is not paimon_sink's/,
	'the commit fails with 42710 when its gid is taken');
like($taken_err, qr/DETAIL:  Role "other_role" prepared a transaction of that name in database "postgres"\. Checkpoint $checkpoint of commit user "\Q$own\E" of sink "f" commits under that name, so nothing of it was applied: it stays prepared\./,
	'its detail names the owner and the checkpoint');
like($taken_err, qr/HINT:  Have its owner or a superuser end it, connected to database "postgres": ROLLBACK PREPARED '\Q$taken\E'; then commit again\./,
	'its hint says what to do');
like($taken_err, qr/CONTEXT:  committing checkpoint $checkpoint of commit user "\Q$own\E" of sink "f"/,
	'and its context names the checkpoint');
is(sql("SELECT count(*) FROM t WHERE note = 'blocked once'"), '0', 'nothing of the checkpoint was applied');
is(sql("SELECT checkpoint_id FROM paimon_sink.pending_checkpoints WHERE sink_name = 'f'"), $checkpoint,
	'it stays prepared');
is(sql("SELECT row_count FROM paimon_sink.checkpoint('f')"), '2',
	'the next attempt commits it under another name');
is(sql("SELECT count(*) || ' ' || count(DISTINCT id) FROM t WHERE note = 'blocked once'"), '2 2', 'once');
is(sql('SELECT count(*) FROM mine'), '0', 'and the other role\'s transaction stays its own');
is(sql("SELECT ours || ' ' || owner FROM paimon_sink.in_doubt WHERE gid = '$taken'"), 'false other_role',
	'in_doubt lists it as foreign');

# the same when the gid is taken in another database, even by a superuser
sql(q{
	SET paimon_sink.commit_user = 'job-2';
	INSERT INTO f VALUES (300, 'job-2');
	SELECT count(*) FROM paimon_sink.prepare_commit('f', 'job-2', 1);
});
my ($taken_elsewhere, $elsewhere_err) = take_gid("SELECT row_count FROM paimon_sink.commit('f', 'job-2', 1)", sub {
	my $gid = shift;
	$node->safe_psql('elsewhere', "BEGIN; INSERT INTO marker VALUES ('took it'); PREPARE TRANSACTION '$gid'");
});
like($elsewhere_err, qr/ERROR:  42710: .*DETAIL:  Role "[^"]+" prepared a transaction of that name in database "elsewhere"/s,
	'a gid taken in another database fails the commit too, naming that database');
is(sql("SELECT count(*) FROM t WHERE note = 'job-2'"), '0', 'nothing applied');
is(sql("SELECT row_count FROM paimon_sink.commit('f', 'job-2', 1)"), '1', 'the next attempt commits it');
is($node->safe_psql('elsewhere', 'SELECT count(*) FROM marker'), '0',
	'and the other database\'s transactions are not committed');
$foreign{taken} = $taken;

# --- each foreign transaction is logged once by the committer (the one
# started after the crash, which has finished in-doubt transactions again
# before each request that followed a failed one)
my $committer = sql(q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'paimon_sink committer'});
my $log = slurp_file($node->logfile);
for my $key (sort grep { $_ ne 'elsewhere' } keys %foreign)
{
	my $count = () = $log =~ /\[$committer\] LOG:  paimon_sink committer leaves prepared transaction "\Q$foreign{$key}\E" alone: it is not its own/g;
	is($count, 1, "the committer logged $key once");
}

# --- drop_sink is not blocked by a foreign transaction named like its own
sql(q{CREATE TABLE g_t (id int); SELECT sink_name FROM paimon_sink.create_sink('g', 'g_t')});
my $g = sql("SELECT sink_id FROM paimon_sink.sinks WHERE sink_name = 'g'");
try_sql($node, "BEGIN; INSERT INTO mine VALUES ('g'); PREPARE TRANSACTION 'paimon_sink:$db:$g:1:x'", 'other_role');
($ret, $out, $err) = try_sql($node, "SELECT paimon_sink.drop_sink('g')");
is($ret, 0, 'drop_sink is not refused for a transaction that is not ours') or diag($err);

# --- nothing of ours is left
is(sql('SELECT count(*) FROM paimon_sink.in_doubt WHERE ours'), '0', 'nothing of ours is in doubt');
is(sql("SELECT count(*) FROM paimon_sink.pending_checkpoints"), '0', 'nothing is pending');
$node->safe_psql('elsewhere', "ROLLBACK PREPARED '$taken_elsewhere'");
$node->safe_psql('elsewhere', "ROLLBACK PREPARED '$foreign{elsewhere}'");

# --- DROP EXTENSION is refused only for ours
($ret, $out, $err) = try_sql($node, "SET lock_timeout = '10s'; DROP EXTENSION paimon_sink CASCADE");
is($ret, 0, 'DROP EXTENSION is not refused for transactions that are not ours') or diag($err);
is(sql('SELECT count(*) FROM pg_prepared_xacts'), '7', 'and leaves them as they are');
for my $gid (sql('SELECT gid FROM pg_prepared_xacts') =~ /(\S+)/g)
{
	sql("ROLLBACK PREPARED '$gid'");
}

done_testing();
