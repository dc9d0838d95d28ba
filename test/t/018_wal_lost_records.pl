# Staged-file changes whose WAL record a crash lost.  The writer and the
# committer change a staged file right after XLogInsert, without a flush:
# a crash (an immediate stop, or kill -9 of one backend) loses the record
# but not the change.  The primary's folder then differs from what every
# node that replays its WAL has, and what the primary writes later takes
# its own folder for granted:
#   A. a REMOVE lost: the standby (and any archive restore) keeps a file
#      of a committed checkpoint; once its committable expires, a promoted
#      standby adopts it and loads its rows a second time;
#   B. a CREATE lost: the primary adopts the file and records it in a
#      checkpoint; a standby promoted before that checkpoint is committed
#      cannot commit it ("staged files ... are missing").
# Both now hold: a removal waits for its record's flush, and an adopting
# writer logs each file's end and removes a file with no row that can
# commit.  And C: a file missing from a standby's copy (deleted from its
# base backup) is named by a warning at the end of redo, and the checkpoint
# that records it goes on with discard_missing_files() on the promoted node.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(writers_ready);

# the names and sizes of a node's staged files, one a line
sub folder
{
	my ($node) = @_;
	my $root = $node->data_dir . '/pg_paimon_sink';
	my @lines;
	foreach my $path (sort glob("$root/*/*/*.stage"))
	{
		(my $name = $path) =~ s{^\Q$root\E/}{};
		push @lines, $name . ' ' . (-s $path);
	}
	return join("\n", @lines);
}

# a commit flushes the WAL; then the standby replays up to it
sub flush_and_catch_up
{
	my ($primary, $standby) = @_;
	$primary->safe_psql('postgres', 'SELECT pg_catalog.txid_current()');
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('flush'));
}

sub counts
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		'SELECT (SELECT count(*) FROM target) || \' \' || (SELECT count(*) FROM ledger)');
}

# wal_writer_delay keeps a record that no commit flushed in the WAL
# buffers for a while, as an idle server does; the snapshot settings make
# the committer expire a checkpoint's committables after the next commit.
sub new_pair
{
	my ($name) = @_;
	my $primary = PostgreSQL::Test::Cluster->new("${name}_primary");
	$primary->init(allows_streaming => 1);
	$primary->append_conf('postgresql.conf', q{
wal_writer_delay = 10s
autovacuum = off
restart_after_crash = on
paimon_sink.snapshots_retained = 1
paimon_sink.snapshot_retention = 0
});
	$primary->start;
	$primary->safe_psql('postgres', q{
		CREATE EXTENSION paimon_sink;
		CREATE TABLE target (id int, note text);
		CREATE TABLE ledger (id int);
		SELECT sink_name FROM paimon_sink.create_sink('s', 'target');
	});
	$primary->backup('base');
	my $standby = PostgreSQL::Test::Cluster->new("${name}_standby");
	$standby->init_from_backup($primary, 'base', has_streaming => 1);
	$standby->start;
	ok(writers_ready($primary, 'postgres'), "$name: writers serve");
	return ($primary, $standby);
}

sub write_rows
{
	my ($node, $from, $to, $user) = @_;
	my $set = defined $user ? "SET paimon_sink.commit_user = '$user';" : '';
	$node->safe_psql('postgres', qq{$set BEGIN;
		INSERT INTO s SELECT g, 'r' FROM generate_series($from, $to) g;
		INSERT INTO ledger SELECT generate_series($from, $to); COMMIT;});
}

# ---- A: a REMOVE lost in a crash right after a commit
{
	my ($primary, $standby) = new_pair('remove');
	write_rows($primary, 1, 100);
	# a checkpoint after the file's CREATE and APPEND: crash recovery does not bring it back
	$primary->safe_psql('postgres', 'CHECKPOINT');
	$primary->safe_psql('postgres', q{SELECT row_count FROM paimon_sink.checkpoint('s')});
	$primary->stop('immediate');
	$primary->start;
	ok(writers_ready($primary, 'postgres'), 'remove: writers serve after the crash');
	flush_and_catch_up($primary, $standby);
	is(folder($standby), folder($primary),
		'remove: the standby has the staged files the primary has');

	# two more commits expire the first checkpoint's committables
	foreach my $i (2, 3)
	{
		write_rows($primary, 1000 * $i, 1000 * $i + 9);
		$primary->safe_psql('postgres', q{SELECT row_count FROM paimon_sink.checkpoint('s')});
	}
	# the committer expires off the commit path, within a second
	ok($primary->poll_query_until('postgres',
		'SELECT count(*) = 1 FROM paimon_sink.snapshot_log'),
		'remove: the first checkpoint expired with its committables');
	flush_and_catch_up($primary, $standby);
	$primary->stop('fast');
	$standby->promote;
	ok(writers_ready($standby, 'postgres'), 'remove: writers serve on the promoted standby');
	$standby->safe_psql('postgres', q{SELECT row_count FROM paimon_sink.checkpoint('s')});
	is(counts($standby), '120 120', 'remove: the promoted standby loads each row once');
	$standby->stop('fast');
}

# ---- B: a CREATE (and APPEND) lost when a session dies before its commit record
{
	my ($primary, $standby) = new_pair('create');
	write_rows($primary, 1, 100, 'job');
	$primary->safe_psql('postgres', q{SELECT count(*) FROM paimon_sink.prepare_commit('s', 'job', 1)});
	$primary->safe_psql('postgres', q{SELECT count(*) FROM paimon_sink.commit('s', 'job', 1)});
	# the session dies after its hand-off: the writer's new file is on disk, its records are not
	$primary->safe_psql('postgres',
		q{SELECT paimon_sink.inject_fault('backend_after_handoff', 'kill')});
	my ($ret, $out, $err) = $primary->psql('postgres', q{SET paimon_sink.commit_user = 'job';
		BEGIN; INSERT INTO s SELECT g, 'lost' FROM generate_series(5000, 5009) g; COMMIT;});
	isnt($ret, 0, 'create: the session died before its commit');
	ok($primary->poll_query_until('postgres', 'SELECT true', 't'), 'create: the primary is back');
	ok(writers_ready($primary, 'postgres'), 'create: writers serve after the crash-restart');
	write_rows($primary, 200, 209, 'job');
	$primary->safe_psql('postgres', q{SELECT count(*) FROM paimon_sink.prepare_commit('s', 'job', 2)});
	flush_and_catch_up($primary, $standby);
	is(folder($standby), folder($primary),
		'create: the standby has the staged files the primary has');

	# fail over between the job's prepare_commit(2) and commit(2)
	$primary->stop('immediate');
	$standby->promote;
	ok(writers_ready($standby, 'postgres'), 'create: writers serve on the promoted standby');
	($ret, $out, $err) = $standby->psql('postgres',
		q{SELECT count(*) FROM paimon_sink.commit('s', 'job', 2)});
	is($ret, 0, 'create: the promoted standby commits the prepared checkpoint')
	  or diag($err);
	is(counts($standby), '110 110', 'create: the promoted standby has every committed row');
	$standby->stop('fast');
}

# ---- C: a staged file missing from a standby's copy (deleted from the backup):
# redo skips the file's records and says so at the end of recovery, and the
# checkpoint that records it has a way forward on the promoted node
{
	my ($primary, $standby) = new_pair('missing');
	$standby->stop('fast');
	write_rows($primary, 1, 10, 'job');
	$primary->backup('with_file');
	my $copy = $primary->backup_dir . '/with_file/pg_paimon_sink';
	my @copied = glob("$copy/*/*/*.stage");
	is(scalar(@copied), 1, 'missing: the backup holds the staged file');
	unlink @copied;
	my $replica = PostgreSQL::Test::Cluster->new('missing_replica');
	$replica->init_from_backup($primary, 'with_file', has_streaming => 1);
	$replica->start;
	# more rows into the same open file, then the checkpoint records it
	write_rows($primary, 11, 20, 'job');
	$primary->safe_psql('postgres', q{SELECT count(*) FROM paimon_sink.prepare_commit('s', 'job', 1)});
	flush_and_catch_up($primary, $replica);
	$primary->stop('immediate');
	$replica->promote;
	ok($replica->log_contains(
			qr/WARNING:  paimon_sink redo skipped the records of missing staged file/),
		'missing: the end of redo names the file whose records it skipped');
	ok(writers_ready($replica, 'postgres'), 'missing: writers serve on the promoted node');
	my ($ret, $out, $err) = $replica->psql('postgres',
		q{SELECT count(*) FROM paimon_sink.commit('s', 'job', 1)});
	like($err, qr/staged files of checkpoint 1 of commit user "job" are missing/,
		'missing: the checkpoint that records it fails, naming it');
	is($replica->safe_psql('postgres',
			q{SELECT sum(row_count) FROM paimon_sink.discard_missing_files('s', 'job')}),
		'20', 'missing: discard_missing_files() goes on without its 20 rows');
	$replica->safe_psql('postgres', q{SELECT count(*) FROM paimon_sink.commit('s', 'job', 1)});
	write_rows($replica, 30, 34, 'job');
	$replica->safe_psql('postgres', q{SELECT count(*) FROM paimon_sink.prepare_commit('s', 'job', 2);
		SELECT count(*) FROM paimon_sink.commit('s', 'job', 2)});
	is($replica->safe_psql('postgres', 'SELECT count(*) FROM target'),
		'5', 'missing: later checkpoints commit on the promoted node');
	$replica->stop('fast');
}

done_testing();
