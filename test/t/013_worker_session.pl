# The workers' sessions are their own: nothing a database owner (not a
# superuser) gives its database with ALTER DATABASE ... SET, nothing a sink
# owner's trigger leaves behind, and nothing a writer opens changes what
# they do.
#
#  - role, session_authorization: the workers still run, and prepare, as
#    the bootstrap superuser, so recovery still knows their transactions;
#  - synchronous_commit = off: a prepare the job was told of survives a
#    crash right after it;
#  - default_transaction_read_only, default_transaction_isolation,
#    statement_timeout, lock_timeout: commits go on;
#  - exit_on_error: a failed commit does not end the committer;
#  - session_replication_role = replica (PostgreSQL 15 lets a superuser
#    GRANT SET ON PARAMETER to the owner): the load still fires the
#    target's triggers, so its foreign keys hold;
#  - a session-level advisory lock taken by the target's trigger is not
#    left held by the committer;
#  - a writer with more streams open than its descriptor cache holds
#    (max_files_per_process) keeps writing (fd.c reopens a file by the name
#    it was opened with).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(writers_ready start_node);

my $node = start_node('worker_session', q{
restart_after_crash = on
max_files_per_process = 64
wal_writer_delay = '10s'
});
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');

# The test's own sessions in the owner's database set back what it gave it.
my $own_settings = "-c role=none -c session_authorization=$superuser -c default_transaction_read_only=off "
  . '-c statement_timeout=0 -c lock_timeout=0 -c default_transaction_isolation=read\\ committed '
  . '-c session_replication_role=origin';
sub sql
{
	my ($query) = @_;
	local $ENV{PGOPTIONS} = $own_settings;
	return $node->safe_psql('owned', $query);
}

sub owned_writers_ready
{
	local $ENV{PGOPTIONS} = $own_settings;
	return writers_ready($node, 'owned');
}

$node->safe_psql('postgres', q{
	CREATE ROLE dbo LOGIN;
	CREATE DATABASE owned OWNER dbo;
	GRANT SET ON PARAMETER session_replication_role TO dbo;
});
sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE t (id int PRIMARY KEY, note text);
	CREATE FUNCTION locks() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog AS $$
	BEGIN
		PERFORM pg_advisory_lock(4242);
		RETURN NEW;
	END $$;
	CREATE TRIGGER locks BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION locks();
	SELECT sink_name FROM paimon_sink.create_sink('s', 't');
	CREATE TABLE many (id int);
	SELECT sink_name FROM paimon_sink.create_sink('many_sink', 'many');
	CREATE TABLE parent (id int PRIMARY KEY);
	CREATE TABLE child (id int PRIMARY KEY, parent_id int NOT NULL REFERENCES parent);
	SELECT sink_name FROM paimon_sink.create_sink('child_sink', 'child');
});
ok(owned_writers_ready(), 'writers serve');

# --- what the database's owner gives its database
$node->safe_psql('owned', q{
	ALTER DATABASE owned SET role = 'dbo';
	ALTER DATABASE owned SET session_authorization = 'dbo';
	ALTER DATABASE owned SET synchronous_commit = off;
	ALTER DATABASE owned SET default_transaction_read_only = on;
	ALTER DATABASE owned SET default_transaction_isolation = 'serializable';
	ALTER DATABASE owned SET statement_timeout = '1ms';
	ALTER DATABASE owned SET lock_timeout = '1ms';
	ALTER DATABASE owned SET exit_on_error = on;
	ALTER DATABASE owned SET session_replication_role = replica;
}, extra_params => [ '-U', 'dbo' ]);
{
	# only the role is looked at: a 1 ms statement_timeout with exit_on_error
	# would end this session too on a busy machine
	local $ENV{PGOPTIONS} = '-c statement_timeout=0 -c lock_timeout=0';
	is($node->safe_psql('owned', 'SELECT current_user', extra_params => [ '-U', $superuser ]), 'dbo',
		'a session of the database now runs as its owner, even a superuser\'s');
}
sql(q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity
	WHERE datname = 'owned' AND backend_type IN ('paimon_sink committer', 'paimon_sink writer')});
ok(owned_writers_ready(), 'the workers start again with those settings');

# the committer prepares as its own role: see the owner while it waits
sql(q{
	INSERT INTO s VALUES (10, 'owner seen');
	SELECT paimon_sink.inject_fault('committer_after_prepare', 'pause');
});
my ($in, $ckpt_out, $ckpt_err) = ('', '', '');
my $ckpt;
{
	local $ENV{PGOPTIONS} = $own_settings;
	$ckpt = IPC::Run::start(
		[ 'psql', '-XAt', '-d', $node->connstr('owned'), '-c',
		  "SELECT row_count FROM paimon_sink.checkpoint('s')" ],
		'<', \$in, '>', \$ckpt_out, '2>', \$ckpt_err);
}
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_prepared_xacts WHERE database = 'owned'"), 'the commit is prepared');
is($node->safe_psql('postgres', "SELECT owner FROM pg_prepared_xacts WHERE database = 'owned'"), $superuser,
	'by the bootstrap superuser, not by the role the database names');
sql(q{SELECT paimon_sink.release_fault('committer_after_prepare'); SELECT paimon_sink.clear_faults()});
$ckpt->finish;
is($ckpt_out, "1\n", 'and it commits');

my ($ret, $out, $err);

# --- commits go on, and an in-doubt one is still recognised as ours
sql("INSERT INTO s VALUES (1, 'first')");
is(sql("SELECT row_count FROM paimon_sink.checkpoint('s')"), '1',
	'a checkpoint commits under read-only, serializable, 1 ms timeouts');
# --- the load fires the target's triggers: a foreign key still holds
sql("INSERT INTO child_sink VALUES (1, 42)");
{
	local $ENV{PGOPTIONS} = $own_settings;
	($ret, $out, $err) = $node->psql('owned', "SELECT * FROM paimon_sink.checkpoint('child_sink')");
}
like($err, qr/violates foreign key constraint/,
	'under session_replication_role = replica given to the database, a row without its parent fails the commit');
is(sql('SELECT count(*) FROM child'), '0', 'and is not loaded');
sql(q{
	INSERT INTO parent VALUES (42);
	SELECT paimon_sink.drop_sink('child_sink', force => true);
});
# --- no advisory lock of the trigger stays with the committer
is(sql(q{SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
	WHERE l.locktype = 'advisory' AND a.backend_type = 'paimon_sink committer'}), '0',
	'the trigger\'s session-level advisory lock was released after the load');
{
	local $ENV{PGOPTIONS} = $own_settings;
	($ret, $out, $err) = $node->psql('owned', 'SELECT pg_try_advisory_lock(4242)');
}
is($out, 't', 'another session can take it');

sql(q{
	INSERT INTO s VALUES (2, 'in doubt');
	SELECT paimon_sink.inject_fault('committer_after_prepare', 'fatal');
});
{
	local $ENV{PGOPTIONS} = $own_settings;
	$node->psql('owned', "SELECT * FROM paimon_sink.checkpoint('s')");
}
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_prepared_xacts WHERE database = 'owned'"),
	'the restarted committer commits its in-doubt transaction: it was prepared as its own role');
is(sql("SELECT count(*) FROM t WHERE note = 'in doubt'"), '1', 'once');
sql('SELECT paimon_sink.clear_faults()');

# --- exit_on_error = on does not make a failed commit end the committer
my $committer = sql(q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'paimon_sink committer'});
sql("INSERT INTO s VALUES (1, 'a duplicate key')");
{
	local $ENV{PGOPTIONS} = $own_settings;
	($ret, $out, $err) = $node->psql('owned', "SELECT * FROM paimon_sink.checkpoint('s')");
}
like($err, qr/duplicate key value violates unique constraint/, 'a commit fails on a duplicate key');
is(sql(q{SELECT pid FROM pg_stat_activity WHERE backend_type = 'paimon_sink committer'}), $committer,
	'and the committer of every sink of the database goes on');
sql(q{SELECT paimon_sink.drop_sink('s', true); SELECT sink_name FROM paimon_sink.create_sink('s', 't')});

# --- synchronous_commit = off does not make a prepare the job was told of lose
sql(q{
	SET paimon_sink.commit_user = 'job';
	INSERT INTO s VALUES (3, 'prepared, then a crash');
});
is(sql(q{SELECT row_count FROM paimon_sink.prepare_commit('s', 'job', 1)}), '1',
	'the job is told checkpoint 1 holds its row');
$node->stop('immediate');
$node->start;
ok(owned_writers_ready(), 'back after an immediate stop right after');
is(sql(q{SELECT row_count FROM paimon_sink.commit('s', 'job', 1)}), '1',
	'checkpoint 1 still holds the row, and commits it');
is(sql("SELECT count(*) FROM t WHERE note = 'prepared, then a crash'"), '1', 'once');

# --- more streams than the writer's descriptor cache holds
my $script = '';
for my $round (0, 1)
{
	for my $w (1 .. 150)
	{
		my $id = $round * 1000 + $w;
		$script .= "SET paimon_sink.writer_id = $w; INSERT INTO many_sink VALUES ($id);\n";
	}
}
my $pids = sql(q{SELECT string_agg(pid::text, ',' ORDER BY writer) FROM paimon_sink.writers});
{
	local $ENV{PGOPTIONS} = $own_settings;
	($ret, $out, $err) = $node->psql('owned', $script);
}
is($ret, 0, '150 streams of one sink, all in one writer, written twice: each write succeeds') or diag($err);
is(sql(q{SELECT string_agg(pid::text, ',' ORDER BY writer) FROM paimon_sink.writers}), $pids,
	'no writer stopped');
cmp_ok(sql(q{SELECT max(files_open) FROM paimon_sink.writers}), '>', 64,
	'one writer holds more files than max_files_per_process');
is(sql(q{SELECT count(*) FROM paimon_sink.prepare_commit('many_sink', NULL, 1)}), '150',
	'a barrier seals every one of them');
is(sql(q{SELECT row_count FROM paimon_sink.commit('many_sink', NULL, 1)}), '300',
	'and the commit reads them all');
is(sql(q{SELECT count(*) || ' ' || count(DISTINCT id) FROM many}), '300 300', 'every row once');

done_testing();
