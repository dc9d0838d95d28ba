# ALTER EXTENSION paimon_sink UPDATE from every released version.  For each
# release, a server running the released library (built from git by
# test/release-install; test/check passes them in PAIMON_SINK_RELEASES)
# writes, commits, prepares and crashes with a transaction in doubt; the same
# data directory is then started by this library, which must finish the
# transaction in doubt, keep everything else until the update, and after it
# commit every pending checkpoint and staged row exactly once.
use strict;
use warnings;
use File::Copy qw(move);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(released_versions);

my %releases = released_versions();

for my $version (sort keys %releases)
{
	upgrade_from($version, $releases{$version});
}
done_testing();

sub upgrade_from
{
	my ($version, $install_path) = @_;
	my $old = PostgreSQL::Test::Cluster->new("old_$version", install_path => $install_path);
	$old->init;
	$old->append_conf('postgresql.conf', "log_min_messages = log");
	$old->start;
	my $sql = sub { return $old->safe_psql('postgres', shift); };

	$sql->(q{
		CREATE EXTENSION paimon_sink;
		CREATE TABLE target (id int PRIMARY KEY, note text);
		CREATE TABLE keyed (id int PRIMARY KEY, v int);
		SELECT sink_name FROM paimon_sink.create_sink('a', 'target', buckets => 4, bucket_key => '{id}');
		SELECT sink_name FROM paimon_sink.create_sink('u', 'keyed', mode => 'upsert', buckets => 2);
	});
	is($sql->("SELECT extversion FROM pg_extension WHERE extname = 'paimon_sink'"), $version,
		"$version: the old server runs release $version");
	ok($old->poll_query_until('postgres', "SELECT count(*) = 2 FROM paimon_sink.writers WHERE ready"),
		"$version: its writers serve");

	my $write = sub {
		my ($sink, $commit_user, $values) = @_;
		my $set = $commit_user ? "SET paimon_sink.commit_user = '$commit_user';" : '';
		$sql->("$set INSERT INTO $sink $values");
	};
	# append sink: committed (job 1, 2), in doubt (job 3), prepared (job2 7),
	# staged only (job after 3; the sink's own commit user)
	$write->('a', 'job', "SELECT g, 'job 1' FROM generate_series(1, 100) g");
	$sql->("SELECT count(*) FROM paimon_sink.prepare_commit('a', 'job', 1)");
	$sql->("SELECT count(*) FROM paimon_sink.commit('a', 'job', 1)");
	$write->('a', 'job', "SELECT g, 'job 2' FROM generate_series(101, 200) g");
	$sql->("SELECT count(*) FROM paimon_sink.prepare_commit('a', 'job', 2)");
	$sql->("SELECT count(*) FROM paimon_sink.commit('a', 'job', 2)");
	$write->('a', 'job2', "SELECT g, 'job2 7' FROM generate_series(1001, 1050) g");
	$sql->("SELECT count(*) FROM paimon_sink.prepare_commit('a', 'job2', 7)");
	$write->('a', 'job', "SELECT g, 'job 3' FROM generate_series(201, 300) g");
	$sql->("SELECT count(*) FROM paimon_sink.prepare_commit('a', 'job', 3)");
	$write->('a', 'job', "SELECT g, 'job 4' FROM generate_series(301, 400) g");
	$write->('a', undef, "SELECT g, 'own' FROM generate_series(2001, 2030) g");

	# upsert sink: committed (1), prepared (2), staged only; later versions win
	$write->('u', 'ujob', "SELECT g, 1 FROM generate_series(1, 50) g");
	$sql->("SELECT count(*) FROM paimon_sink.prepare_commit('u', 'ujob', 1)");
	$sql->("SELECT count(*) FROM paimon_sink.commit('u', 'ujob', 1)");
	$write->('u', 'ujob', "SELECT g, 2 FROM generate_series(1, 25) g");
	$write->('u', 'ujob', "SELECT g, NULL, '-D' FROM generate_series(26, 30) g");
	$sql->("SELECT count(*) FROM paimon_sink.prepare_commit('u', 'ujob', 2)");
	$write->('u', 'ujob', "SELECT g, 3 FROM generate_series(1, 10) g");
	$write->('u', 'ujob', "VALUES (60, 3)");

	# job's checkpoint 3 in doubt: PREPARE TRANSACTION done, then a crash
	$sql->("SELECT paimon_sink.inject_fault('committer_after_prepare', 'pause')");
	my ($in, $out, $err) = ('', '', '');
	my $commit_run = IPC::Run::start(
		[ 'psql', '-XAt', '-d', $old->connstr('postgres'), '-c',
		  "SELECT count(*) FROM paimon_sink.commit('a', 'job', 3)" ],
		'<', \$in, '>', \$out, '2>', \$err);
	ok($old->poll_query_until('postgres',
		"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'committer_after_prepare'"),
		"$version: commit(3) paused between PREPARE and COMMIT PREPARED");
	is($sql->("SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'"), '1',
		"$version: one transaction in doubt");
	$old->stop('immediate');
	$commit_run->finish;

	# the same data directory, started by this library
	my $new = PostgreSQL::Test::Cluster->new("new_$version");
	rmdir $new->data_dir;
	move($old->data_dir, $new->data_dir) or die "could not move the data directory: $!";
	$new->append_conf('postgresql.conf', "port = " . $new->port);
	$new->start;
	$sql = sub { return $new->safe_psql('postgres', shift); };
	my $try = sub {
		my ($ret, $stdout, $stderr) = $new->psql('postgres', shift);
		return $stderr;
	};
	my $current = $sql->("SELECT default_version FROM pg_available_extensions WHERE name = 'paimon_sink'");

	ok($new->wait_for_log(qr/paimon_sink committer of database "postgres" waits for ALTER EXTENSION paimon_sink UPDATE/),
		"$version: the new library's committer waits for the update");
	like($try->("SELECT * FROM paimon_sink.checkpoint('a')"),
		qr/library is version \Q$current\E, but the extension in this database is version \Q$version\E.*HINT:  Run ALTER EXTENSION paimon_sink UPDATE/s,
		"$version: calls are refused with the command that fixes it");
	like($try->("INSERT INTO a VALUES (9999, 'refused')"), qr/Run ALTER EXTENSION paimon_sink UPDATE/,
		"$version: and so are writes");
	my $committer = $sql->("SELECT pid FROM pg_stat_activity WHERE backend_type = 'paimon_sink committer'");
	isnt($committer, '', "$version: a committer runs");
	sleep 2;
	is($sql->("SELECT pid FROM pg_stat_activity WHERE backend_type = 'paimon_sink committer'"), $committer,
		"$version: the committer waits without restarting");
	is($sql->("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'paimon_sink writer'"), '0',
		"$version: no writer runs on the old catalog");
	# COMMIT PREPARED reads none of the extension's tables; waiting would
	# hold back the cluster's xmin and lock what an update may change
	ok($new->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'"),
		"$version: the transaction in doubt is committed while the committer waits");
	is($sql->("SELECT count(*) FROM target"), '300',
		"$version: the committed rows and the in-doubt checkpoint's are visible");
	is($sql->("SELECT string_agg(checkpoint_id::text, ',' ORDER BY checkpoint_id) FROM paimon_sink.pending_checkpoints"),
		'2,7', "$version: the pending checkpoints are listed");
	like($try->("BEGIN; ALTER EXTENSION paimon_sink UPDATE; INSERT INTO a VALUES (9999, 'same transaction'); COMMIT"),
		qr/This transaction created or updated extension paimon_sink; its committer and writers start on it only after it commits/,
		"$version: a write in the updating transaction fails at once");
	is($sql->("SELECT extversion FROM pg_extension WHERE extname = 'paimon_sink'"), $version,
		"$version: and the update rolls back with it");

	$sql->("ALTER EXTENSION paimon_sink UPDATE");
	is($sql->("SELECT extversion || ' ' || paimon_sink.library_version() FROM pg_extension WHERE extname = 'paimon_sink'"),
		"$current $current", "$version: updated to $current");
	ok($new->wait_for_log(qr/paimon_sink committer of database "postgres" resumes/),
		"$version: the committer resumes");
	is($sql->("SELECT paimon_sink.last_committed_checkpoint('a', 'job')"), '3',
		"$version: it committed checkpoint 3");
	is($sql->("SELECT count(*) || ' ' || bool_or(newly_committed) FROM paimon_sink.commit('a', 'job', 3)"),
		'1 false', "$version: a retry of commit(3) skips it");
	is($sql->("SELECT sum(row_count) FROM paimon_sink.commit('a', 'job2', 7)"), '50',
		"$version: the checkpoint prepared by the old library commits");
	is($sql->("SELECT sum(row_count) FROM paimon_sink.prepare_commit('a', 'job', 4)"), '100',
		"$version: rows the old library staged are prepared");
	$sql->("SELECT count(*) FROM paimon_sink.commit('a', 'job', 4)");
	is($sql->("SELECT sum(row_count) FROM paimon_sink.checkpoint('a')"), '30',
		"$version: and so are the sink's own commit user's");
	$sql->("SET paimon_sink.commit_user = 'job'; INSERT INTO a SELECT g, 'job 5' FROM generate_series(401, 450) g");
	$sql->("SELECT count(*) FROM paimon_sink.prepare_commit('a', 'job', 5)");
	$sql->("SELECT count(*) FROM paimon_sink.commit('a', 'job', 5)");
	is($sql->("SELECT count(*) || ' ' || count(DISTINCT id) FROM target"), '530 530',
		"$version: every row once");
	is($sql->(q{SELECT string_agg(note || ':' || n, ' ' ORDER BY note) FROM
		(SELECT note, count(*) n FROM target GROUP BY note) s}),
		'job 1:100 job 2:100 job 3:100 job 4:100 job 5:50 job2 7:50 own:30',
		"$version: each checkpoint's rows");

	$sql->("SELECT count(*) FROM paimon_sink.commit('u', 'ujob', 2)");
	$sql->("SELECT count(*) FROM paimon_sink.prepare_commit('u', 'ujob', 3)");
	$sql->("SELECT count(*) FROM paimon_sink.commit('u', 'ujob', 3)");
	$sql->("SET paimon_sink.commit_user = 'ujob'; INSERT INTO u VALUES (1, 4)");
	$sql->("SELECT count(*) FROM paimon_sink.prepare_commit('u', 'ujob', 4)");
	$sql->("SELECT count(*) FROM paimon_sink.commit('u', 'ujob', 4)");
	is($sql->(q{SELECT string_agg(v || ':' || n, ' ' ORDER BY v) FROM
		(SELECT v, count(*) n FROM keyed GROUP BY v) s}), '1:20 2:15 3:10 4:1',
		"$version: the upsert sink keeps the latest version of each key");
	is($sql->("SELECT string_agg(id || '=' || v, ' ' ORDER BY id) FROM keyed WHERE id IN (1, 10, 11, 25, 26, 30, 31, 60)"),
		'1=4 10=3 11=2 25=2 31=1 60=3', "$version: deletes and newer versions across the upgrade");

	is($sql->("SELECT count(*) FROM paimon_sink.pending_checkpoints"), '0', "$version: nothing pending");
	is($sql->("SELECT count(*) FROM pg_prepared_xacts"), '0', "$version: nothing in doubt");
	is($sql->("SELECT count(*) FROM (SELECT sink_name, commit_user, commit_identifier FROM paimon_sink.snapshots
			GROUP BY 1, 2, 3 HAVING count(*) > 1) d"), '0', "$version: one snapshot per checkpoint");

	# discard_missing_files, new in 0.2, on the updated catalog
	$sql->("SET paimon_sink.commit_user = 'lost'; INSERT INTO a SELECT g, 'lost' FROM generate_series(5001, 5005) g");
	my $files = $sql->("SELECT string_agg(file_name, ' ' ORDER BY file_name) FROM paimon_sink.prepare_commit('a', 'lost', 1)");
	unlink glob($new->data_dir . "/pg_paimon_sink/*/*/$_") or die "cannot remove $_" for split / /, $files;
	is($sql->("SELECT string_agg(file_name, ' ' ORDER BY file_name) || ' ' || sum(row_count)
			FROM paimon_sink.discard_missing_files('a', 'lost')"),
		"$files 5", "$version: discard_missing_files() forgets the files deleted by hand");
	is($sql->("SELECT count(*) || ':' || sum(row_count) || ':' || bool_and(snapshot_id IS NULL)
			FROM paimon_sink.commit('a', 'lost', 1)") . ' '
		. $sql->("SELECT paimon_sink.last_committed_checkpoint('a', 'lost')") . ' '
		. $sql->("SELECT count(*) FROM target WHERE note = 'lost'"),
		'1:0:true 1 0', "$version: and the emptied checkpoint commits with no snapshot, answering with a row of 0 rows");
	$new->stop;
}
