# Recovery finishes only prepared transactions that are provably its own:
# our gid prefix and form, this database, the role the committer prepares
# as, and a checkpoint that is prepared (or committed) for an existing sink.
# Foreign ones carrying our prefix (another role's, one named exactly like
# a sink's next checkpoint, one from another database, a malformed one, a
# superuser's naming no checkpoint) are never committed or rolled back by
# the committer: in_doubt lists them with the reason and the committer logs
# each once.  A commit whose gid is taken fails with 42710 naming the owner,
# and its checkpoint stays prepared; one left in doubt by a crash of ours is
# committed once.  Nothing of ours stays in doubt.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = PostgreSQL::Test::Cluster->new('foreign_prepared');
$node->init;
$node->append_conf('postgresql.conf', "log_min_messages = log\nrestart_after_crash = on");
$node->start;

sub sql { return $node->safe_psql('postgres', shift); }

# (exit code, stdout, stderr) of a statement as a role, with SQLSTATEs shown
sub try_sql
{
	my ($sql, $role, $db) = @_;
	my ($out, $err) = ('', '');
	my @role = $role ? ('-U', $role) : ();
	my $ret = $node->psql($db // 'postgres', $sql, stdout => \$out, stderr => \$err,
		extra_params => [ @role, '-v', 'VERBOSITY=verbose' ]);
	return ($ret, $out, $err);
}

sub writers_ready
{
	return $node->poll_query_until('postgres',
		"SELECT count(*) = 2 FROM paimon_sink.writers WHERE ready");
}

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
ok(writers_ready(), 'writers serve');
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
	my ($ret, $out, $err) = try_sql(qq{
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
sql(q{
	SET paimon_sink.commit_user = 'job-1';
	INSERT INTO f SELECT g, 'in doubt' FROM generate_series(1, 25) g;
	SELECT count(*) FROM paimon_sink.prepare_commit('f', 'job-1', 1);
	SELECT paimon_sink.inject_fault('committer_after_prepare', 'panic');
});
my ($ret, $out, $err) = try_sql("SELECT * FROM paimon_sink.commit('f', 'job-1', 1)");
isnt($ret, 0, 'the cluster crashes between PREPARE and COMMIT PREPARED of one of ours');
ok(writers_ready(), 'back after the crash');
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
	malformed => "- It is not of the form paimon_sink:<database>:<sink>:<checkpoint>:<commit user>.");
is(sql(q{SELECT string_agg(gid || ' ' || ours || ' ' || coalesce(sink_name, '-') || ' ' || foreign_reason, E'\n'
	ORDER BY gid COLLATE "C") FROM paimon_sink.in_doubt}),
	join("\n", map { "$foreign{$_} false $reason{$_}" } sort { $foreign{$a} cmp $foreign{$b} } keys %reason),
	'in_doubt lists each foreign transaction with why it is not ours');

# --- a commit whose gid another role took fails clearly; the checkpoint stays
sql("INSERT INTO f VALUES (100, 'blocked'), (101, 'blocked')");
for my $attempt (1, 2)
{
	($ret, $out, $err) = try_sql("SELECT * FROM paimon_sink.checkpoint('f')");
	like($err, qr/ERROR:  42710: transaction identifier "\Q$foreign{next_checkpoint}\E" is in use by a prepared transaction that is not paimon_sink's/,
		"checkpoint() fails with 42710 while the name is taken (attempt $attempt)");
	like($err, qr/DETAIL:  Role "other_role" prepared a transaction of that name in database "postgres"\. Checkpoint $next of commit user "\Q$own\E" of sink "f" commits under that name, so nothing of it was applied: it stays prepared\./,
		'its detail names the owner and the checkpoint');
	like($err, qr/HINT:  Have its owner or a superuser end it, connected to database "postgres": ROLLBACK PREPARED '\Q$foreign{next_checkpoint}\E'; then commit again\./,
		'its hint says what to do');
}
is(sql("SELECT count(*) FROM t WHERE note = 'blocked'"), '0', 'nothing of the checkpoint was applied');
is(sql("SELECT checkpoint_id FROM paimon_sink.pending_checkpoints WHERE sink_name = 'f'"), $next,
	'it stays prepared');
is(sql('SELECT count(*) FROM mine'), '0', 'and the other role\'s transaction stays its own');

# the same when the name is taken in another database, even by a superuser
sql(q{
	SET paimon_sink.commit_user = 'job-2';
	INSERT INTO f VALUES (200, 'job-2');
	SELECT count(*) FROM paimon_sink.prepare_commit('f', 'job-2', 1);
});
($ret, $out, $err) = try_sql("SELECT * FROM paimon_sink.commit('f', 'job-2', 1)");
like($err, qr/ERROR:  42710: .*DETAIL:  Role "[^"]+" prepared a transaction of that name in database "elsewhere"/s,
	'a name taken in another database fails the commit too, naming that database');
is(sql("SELECT count(*) FROM t WHERE note = 'job-2'"), '0', 'nothing applied');
is($node->safe_psql('elsewhere', 'SELECT count(*) FROM marker'), '0',
	'and the other database\'s transaction is not committed');

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
try_sql("BEGIN; INSERT INTO mine VALUES ('g'); PREPARE TRANSACTION 'paimon_sink:$db:$g:1:x'", 'other_role');
($ret, $out, $err) = try_sql("SELECT paimon_sink.drop_sink('g')");
is($ret, 0, 'drop_sink is not refused for a transaction that is not ours') or diag($err);

# --- once the owner ends its transaction, the checkpoint commits, once
try_sql("ROLLBACK PREPARED '$foreign{next_checkpoint}'", 'other_role');
is(sql("SELECT row_count FROM paimon_sink.checkpoint('f')"), '2', 'the pending checkpoint commits');
is(sql("SELECT count(*) || ' ' || count(DISTINCT id) FROM t WHERE note = 'blocked'"), '2 2',
	'its rows are there once');
$node->safe_psql('elsewhere', "ROLLBACK PREPARED '$foreign{elsewhere}'");
is(sql("SELECT row_count FROM paimon_sink.commit('f', 'job-2', 1)"), '1',
	'and the job\'s once its name is free');
is(sql('SELECT count(*) FROM paimon_sink.in_doubt WHERE ours'), '0', 'nothing of ours is in doubt');
is(sql("SELECT count(*) FROM paimon_sink.pending_checkpoints"), '0', 'nothing is pending');

# --- DROP EXTENSION is refused only for ours
($ret, $out, $err) = try_sql("SET lock_timeout = '10s'; DROP EXTENSION paimon_sink CASCADE");
is($ret, 0, 'DROP EXTENSION is not refused for transactions that are not ours') or diag($err);
is(sql('SELECT count(*) FROM pg_prepared_xacts'), '5', 'and leaves them as they are');
for my $gid (sql('SELECT gid FROM pg_prepared_xacts') =~ /(\S+)/g)
{
	sql("ROLLBACK PREPARED '$gid'");
}

done_testing();
