# The privilege model: who may create a sink, write to one, prepare,
# commit, recover, maintain (orphans, snapshots, missing files) and drop it,
# see the views and inject faults.
# The matrix (role kind x operation -> yes or SQLSTATE) is the table of
# docs/security.md, read from there: every cell is run against a server here.
# Then the refusals that are the extension's own say what to grant; CREATE
# and ALTER EXTENSION refuse a schema paimon_sink that another role could
# plant objects in; staged files have PostgreSQL's modes; and a file name
# from the catalog never becomes a path unless it is a staged file's.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(doc_table writers_ready start_node);

my $node = start_node('privileges');
my $superuser = $node->safe_psql('postgres', 'SELECT current_user');

sub sql { return $node->safe_psql('postgres', shift); }

# Run a script as a role: 'yes' when every statement succeeds, or the
# SQLSTATE of the first that fails; and the whole of stderr.
sub outcome
{
	my ($role, $script) = @_;
	my ($out, $err) = ('', '');
	$node->psql('postgres', $script, stdout => \$out, stderr => \$err, on_error_stop => 1,
		extra_params => [ '-U', $role, '-v', 'VERBOSITY=verbose' ]);
	return (($err =~ /ERROR:  ([0-9A-Z]{5}):/) ? $1 : 'yes', $err);
}

# --- the roles of the table's columns
my %role = (
	'superuser' => $superuser,
	'sink owner' => 'sink_owner',
	'member of the owner' => 'owner_member',
	'writer' => 'sink_writer',
	'other role' => 'other_role');
my %tag = (
	'superuser' => 'su',
	'sink owner' => 'owner',
	'member of the owner' => 'member',
	'writer' => 'writer',
	'other role' => 'other');
sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE ROLE sink_owner LOGIN;
	CREATE ROLE owner_member LOGIN IN ROLE sink_owner;
	CREATE ROLE sink_writer LOGIN;
	CREATE ROLE other_role LOGIN;
	GRANT EXECUTE ON FUNCTION paimon_sink.create_sink(text, regclass, text, integer, text[], interval, text, boolean, text, boolean, boolean, boolean)
		TO sink_owner;
	GRANT CREATE ON SCHEMA public TO sink_owner;
	CREATE TABLE ct (id int, v text);
	ALTER TABLE ct OWNER TO sink_owner;
});
ok(writers_ready($node, 'postgres'), 'writers serve');

# One sink per column, owned by the sink owner, that the writer may write to.
for my $kind (keys %tag)
{
	my $t = $tag{$kind};
	my ($result, $err) = outcome('sink_owner', qq{
		CREATE TABLE t_$t (id int, v text);
		SELECT sink_name FROM paimon_sink.create_sink('s_$t', 't_$t');
		GRANT INSERT ON s_$t TO sink_writer;
	});
	$result eq 'yes' or BAIL_OUT("the sink owner cannot create the sink of column $kind: $err");
}

# What each row of the table runs (%S: the column's sink, %T: its tag).
my %script = (
	'`create_sink`' => ["SELECT sink_name FROM paimon_sink.create_sink('c_%T', 'ct')"],
	'`INSERT` into the sink\'s foreign table' => ["INSERT INTO %S VALUES (1, 'inserted')"],
	'`COPY` into the sink\'s foreign table' => ["COPY %S FROM STDIN;\n2\tcopied\n\\.\n"],
	'`prepare_commit`' => ["SELECT count(*) FROM paimon_sink.prepare_commit('%S', 'job', 1)"],
	'`commit`' => ["SELECT count(*) FROM paimon_sink.commit('%S', 'job', 1)"],
	'`checkpoint`' => ["SELECT count(*) FROM paimon_sink.checkpoint('%S')"],
	'`recover`' => ["SELECT * FROM paimon_sink.recover('%S', 'job', 1)"],
	'`restart_job`' => ["SELECT checkpoint_id FROM paimon_sink.restart_job('%S', 'job-restart')"],
	'`end_input`' => ["SELECT count(*) FROM paimon_sink.end_input('%S', 'bounded')"],
	'`last_committed_checkpoint`' => ["SELECT paimon_sink.last_committed_checkpoint('%S', 'job')"],
	'`last_commit`' => ["SELECT count(*) FROM paimon_sink.last_commit('%S', 'job')"],
	'`remove_orphan_files`' => ["SELECT count(*) FROM paimon_sink.remove_orphan_files('%S', '1 day', true)"],
	'`expire_snapshots`' => ["SELECT paimon_sink.expire_snapshots('%S')"],
	'`discard_missing_files`' => ["SELECT count(*) FROM paimon_sink.discard_missing_files('%S', 'job')"],
	'`reject_failing_rows`' => ["SELECT count(*) FROM paimon_sink.reject_failing_rows('%S', 1, 'job')"],
	'`create_sink_group`, `drop_sink_group`' => [
		"SELECT paimon_sink.create_sink_group('g_%T', ARRAY['%S']);
		 SELECT paimon_sink.drop_sink_group('g_%T')" ],
	'the table `rejected_row`' => ['SELECT count(*) FROM paimon_sink.rejected_row'],
	'`restore_foreign_table`' => ["SELECT paimon_sink.restore_foreign_table('%S', 'postgres')"],
	'`reset_sink_stats` (also a member of `pg_monitor`)' => ["SELECT paimon_sink.reset_sink_stats('%S')"],
	'`alter_sink`' => ["SELECT count(*) FROM paimon_sink.alter_sink('%S')"],
	'`drop_sink`' => ["SELECT paimon_sink.drop_sink('%S', true)"],
	'the views (`sinks`, `snapshots`, `pending_checkpoints`, `in_doubt`, `writers`, `commit_stats`, `commit_progress`, `checkpoint_schedule`, `faults`, `rejects`, `sink_groups`, `sink_stats`)'
	  => [ map { "SELECT count(*) FROM paimon_sink.$_" }
		  qw(sinks snapshots pending_checkpoints in_doubt writers commit_stats commit_progress checkpoint_schedule faults rejects sink_groups sink_stats) ],
	'`start_workers`' => ['SELECT paimon_sink.start_workers()'],
	'`inject_fault`, `release_fault`, `clear_faults`' => [
		"SELECT paimon_sink.inject_fault('writer_after_ack', 'error', 1)",
		"SELECT paimon_sink.release_fault('writer_after_ack')",
		'SELECT paimon_sink.clear_faults()' ]);

my ($header, @rows) = doc_table('docs/security.md', 'privilege matrix:');
my @columns = @{$header}[ 1 .. $#$header ];
is(join(',', sort @columns), join(',', sort keys %role), 'the privilege matrix of docs/security.md has a column per role kind');
is(join("\n", sort map { $_->[0] } @rows), join("\n", sort keys %script),
	'and a row per operation this test runs');

# Rows in the page's order (drop_sink after everything that needs the sink).
for my $row (@rows)
{
	my ($operation, @cells) = @$row;
	for my $c (0 .. $#columns)
	{
		my $kind = $columns[$c];
		my @outcomes;
		for my $statement (@{ $script{$operation} })
		{
			(my $sql = $statement) =~ s/%S/s_$tag{$kind}/g;
			$sql =~ s/%T/$tag{$kind}/g;
			my ($result) = outcome($role{$kind}, $sql);
			push @outcomes, $result;
		}
		my %distinct = map { $_ => 1 } @outcomes;
		is(join('/', sort keys %distinct), $cells[$c], "$operation, as $kind: $cells[$c]");
	}
}
sql('SELECT paimon_sink.clear_faults()');

# --- the extension's own refusals name what to grant
sql(q{CREATE TABLE s2_t (id int, v text); ALTER TABLE s2_t OWNER TO sink_owner});
outcome('sink_owner', "SELECT sink_name FROM paimon_sink.create_sink('s2', 's2_t')");
my ($result, $err) = outcome('sink_writer', "SELECT * FROM paimon_sink.checkpoint('s2')");
like($err, qr/ERROR:  42501: permission denied to checkpoint sink "s2"\nDETAIL:  Only the owner of the sink, role "sink_owner", or a member of it may checkpoint it\.\nHINT:  Run it as role "sink_owner", or have that role granted to this one: GRANT sink_owner TO sink_writer;/,
	'a non-owner is told whose sink it is and what to grant');
sql(q{
	CREATE TABLE not_granted (id int PRIMARY KEY, v text);
	GRANT SELECT, INSERT ON not_granted TO sink_owner;
	CREATE SCHEMA closed;
	CREATE TABLE closed.t (id int);
	GRANT USAGE ON SCHEMA closed TO sink_owner;
	GRANT INSERT ON closed.t TO sink_owner;
});
($result, $err) = outcome('sink_owner', "SELECT * FROM paimon_sink.create_sink('u', 'not_granted', mode => 'upsert')");
like($err, qr/ERROR:  42501: permission denied for table not_granted\n.*HINT:  GRANT UPDATE, DELETE ON TABLE public\.not_granted TO sink_owner;/s,
	'an upsert sink needs every right it uses, and the hint names the missing ones');
sql('REVOKE INSERT ON not_granted FROM sink_owner');
($result, $err) = outcome('sink_owner', "SELECT * FROM paimon_sink.create_sink('a', 'not_granted')");
like($err, qr/HINT:  GRANT INSERT ON TABLE public\.not_granted TO sink_owner;/, 'an append sink needs INSERT');
($result, $err) = outcome('sink_owner', "SELECT * FROM paimon_sink.create_sink('c', 'closed.t')");
like($err, qr/ERROR:  42501: permission denied for schema closed\n.*HINT:  GRANT CREATE ON SCHEMA closed TO sink_owner;/s,
	'the foreign table is created in the target\'s schema: CREATE on it is needed');
sql('REVOKE USAGE ON FOREIGN SERVER paimon_sink FROM PUBLIC');
($result, $err) = outcome('sink_owner', "SELECT * FROM paimon_sink.create_sink('s3', 'ct')");
like($err, qr/ERROR:  42501: permission denied for foreign server paimon_sink\n.*HINT:  GRANT USAGE ON FOREIGN SERVER paimon_sink TO sink_owner;/s,
	'and USAGE on the server paimon_sink');
sql('GRANT USAGE ON FOREIGN SERVER paimon_sink TO PUBLIC');
($result, $err) = outcome('other_role', "SELECT * FROM paimon_sink.create_sink('s4', 'ct')");
like($err, qr/ERROR:  42501: permission denied for function create_sink/,
	'without the grant, PostgreSQL refuses create_sink (docs/security.md shows the GRANT)');

# --- a failed commit's message is its owner's to read
my ($r) = outcome('sink_owner', q{
	CREATE TABLE sec_t (id int, v text);
	CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog AS $$
	BEGIN
		RAISE EXCEPTION 'card % is refused', NEW.v;
	END $$;
	CREATE TRIGGER refuse BEFORE INSERT ON sec_t FOR EACH ROW EXECUTE FUNCTION refuse();
	SELECT sink_name FROM paimon_sink.create_sink('sec', 'sec_t');
	INSERT INTO sec VALUES (1, '4111-secret');
});
is($r, 'yes', 'a sink whose trigger refuses its rows');
($result, $err) = outcome('sink_owner', "SELECT * FROM paimon_sink.checkpoint('sec')");
is($result, 'P0001', 'fails its commit');
ok($node->poll_query_until('postgres',
	"SELECT failures = 1 FROM paimon_sink.commit_stats WHERE sink_name = 'sec'"),
	'the committer counts the failure (within a second)');
my ($stats_out, $stats_err) = ('', '');
$node->psql('postgres', "SELECT coalesce(last_failure, 'hidden') || ' ' || failures_by_sqlstate FROM paimon_sink.commit_stats WHERE sink_name = 'sec'",
	stdout => \$stats_out, extra_params => [ '-U', 'other_role' ]);
is($stats_out, 'hidden {"P0001": 1}', 'another role sees that it failed, and how, but not the message');
$node->psql('postgres', "SELECT last_failure FROM paimon_sink.commit_stats WHERE sink_name = 'sec'",
	stdout => \$stats_out, extra_params => [ '-U', 'owner_member' ]);
like($stats_out, qr/card 4111-secret is refused/, 'a member of the owner sees the message');
($result, $err) = outcome('other_role', 'SELECT * FROM paimon_sink.commit_failures');
is($result, '42501', 'and the table of messages is not everyone\'s');

# --- a schema paimon_sink that another role could plant objects in
$node->safe_psql('postgres', 'CREATE DATABASE squat OWNER other_role');
$node->safe_psql('squat', 'CREATE SCHEMA paimon_sink', extra_params => [ '-U', 'other_role' ]);
my ($ret, $out, $stderr) = $node->psql('squat', 'CREATE EXTENSION paimon_sink');
like($stderr, qr/CREATE EXTENSION paimon_sink refuses schema "paimon_sink": it is owned by role "other_role", which is not a superuser/,
	'CREATE EXTENSION refuses a schema paimon_sink a non-superuser owns');
$node->safe_psql('squat', "ALTER SCHEMA paimon_sink OWNER TO $superuser; GRANT CREATE ON SCHEMA paimon_sink TO other_role");
($ret, $out, $stderr) = $node->psql('squat', 'CREATE EXTENSION paimon_sink');
like($stderr, qr/refuses schema "paimon_sink": role "other_role" may create objects in it.*HINT:  REVOKE CREATE ON SCHEMA paimon_sink FROM other_role/s,
	'or one a non-superuser may create objects in');
$node->safe_psql('squat', 'REVOKE CREATE ON SCHEMA paimon_sink FROM other_role');
$node->safe_psql('squat', "ALTER SCHEMA paimon_sink OWNER TO other_role");
$node->safe_psql('squat', q{CREATE FUNCTION paimon_sink.obj_description(regprocedure, name) RETURNS text
	LANGUAGE sql AS $$ SELECT 'planted' $$}, extra_params => [ '-U', 'other_role' ]);
$node->safe_psql('squat', "ALTER SCHEMA paimon_sink OWNER TO $superuser");
($ret, $out, $stderr) = $node->psql('squat', 'CREATE EXTENSION paimon_sink');
like($stderr, qr/refuses schema "paimon_sink": its function "obj_description" is owned by role "other_role", which is not a superuser/,
	'or one holding an object of such a role, even when a superuser owns the schema');
$node->safe_psql('squat', 'DROP SCHEMA paimon_sink CASCADE; CREATE EXTENSION paimon_sink');
$node->safe_psql('squat', 'GRANT CREATE ON SCHEMA paimon_sink TO other_role');
($ret, $out, $stderr) = $node->psql('squat', 'ALTER EXTENSION paimon_sink UPDATE');
like($stderr, qr/ALTER EXTENSION paimon_sink UPDATE refuses schema "paimon_sink": role "other_role" may create objects in it/,
	'ALTER EXTENSION ... UPDATE refuses it too');
$node->safe_psql('squat', 'REVOKE CREATE ON SCHEMA paimon_sink FROM other_role; DROP EXTENSION paimon_sink');

# --- staged files: PostgreSQL's modes, and names from the catalog
sql(q{CREATE TABLE files (id int, v text); SELECT sink_name FROM paimon_sink.create_sink('files_sink', 'files');
	INSERT INTO files_sink VALUES (1, 'staged')});
my @paths = (glob($node->data_dir . '/pg_paimon_sink'), glob($node->data_dir . '/pg_paimon_sink/*'),
	glob($node->data_dir . '/pg_paimon_sink/*/*'), glob($node->data_dir . '/pg_paimon_sink/*/*/*'));
cmp_ok(scalar(@paths), '>=', 4, 'the staged-file folders and a staged file exist');
my @loose = grep { ((stat $_)[2] & 07077) != 0 } @paths;
is(join(' ', map { sprintf('%s %o', $_, (stat $_)[2] & 07777) } @loose), '',
	'each is readable and writable by the server\'s OS user only');

my $sink_id = sql("SELECT sink_id FROM paimon_sink.sinks WHERE sink_name = 'files_sink'");
my $victim = $node->data_dir . '/victim_file';
open(my $fh, '>', $victim) or die "cannot create $victim: $!";
print $fh "not a staged file\n";
close $fh;
sql(qq{
	INSERT INTO paimon_sink.commit_user_state (sink_id, commit_user, last_prepared_checkpoint)
		VALUES ($sink_id, 'restored', 1);
	INSERT INTO paimon_sink.committable (file_name, sink_id, commit_user, checkpoint_id, writer_id, bucket,
		row_count, byte_count) VALUES ('../../../victim_file', $sink_id, 'restored', 1, 0, 0, 1, 1);
	INSERT INTO paimon_sink.committable (file_name, sink_id, commit_user, checkpoint_id, writer_id, bucket,
		row_count, byte_count, snapshot_id) VALUES ('../../../PG_VERSION', $sink_id, 'restored', 0, 0, 0, 1, 1, 1);
});
($result, $err) = outcome($superuser, "SELECT * FROM paimon_sink.commit('files_sink', 'restored', 1)");
like($err, qr/ERROR:  XX001: "\.\.\/\.\.\/\.\.\/victim_file" is not the name of a staged file of sink $sink_id/,
	'a commit refuses a catalog file name that is not a staged file\'s (XX001)');
sql(q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'paimon_sink committer'});
ok(writers_ready($node, 'postgres'), 'a new committer removes the files of committed checkpoints at start');
ok($node->poll_query_until('postgres',
	q{SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'paimon_sink committer' AND state = 'idle'}),
	'and goes idle');
ok(-f $victim && -f $node->data_dir . '/PG_VERSION', 'neither name became a path: both files are there');
($result, $err) = outcome($superuser, "SELECT * FROM paimon_sink.recover('files_sink', 'restored', 0)");
is($result, 'yes', 'recover() discards the bad committable without touching a file') or diag($err);
ok(-f $victim, 'the file is still there');
is(sql("SELECT row_count FROM paimon_sink.checkpoint('files_sink')"), '1', 'the sink goes on');

done_testing();
