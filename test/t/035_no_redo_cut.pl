# A crash that leaves nothing to replay.  A writer writes a batch before it
# logs it, so a crash can leave a batch on disk that no WAL record
# describes, tagged with the xid of a transaction that never wrote a
# record; recovery hands that xid out again.  The end of redo cuts such
# batches (rm_cleanup), but when recovery finds no record after the
# checkpoint ("redo is not required": a CHECKPOINT, then only a hand-off
# before the crash) PostgreSQL runs no redo and no rm_cleanup.  The batch
# stayed, and once a new transaction that got its xid committed, its rows
# counted as committed (phantoms).  The first writer to adopt files now
# cuts it, against the next xid of the checkpoint recovery started from
# (which the postmaster reads before each start of the startup process).
# Checked after a crash restart inside one postmaster (a PANIC, with
# restart_after_crash), after an immediate stop, and with a streaming
# standby, whose staged files must match the primary's and which, promoted,
# must hold every committed row exactly once.
#
# What recovery finds differs by major and by cluster, and each case is
# named in the output:
# - From PostgreSQL 17 an online checkpoint logs a redo record
#   (XLOG_CHECKPOINT_REDO) at its redo point, so a crash after CHECKPOINT
#   always runs redo, and the end of redo cuts the batch: the one-node
#   parts check that path on 17+, the "redo is not required" path before.
# - Only a shutdown checkpoint (here the end-of-recovery one) leaves
#   nothing to replay on every major, unless something is logged and
#   flushed after it.  With data checksums on (initdb's default from 18),
#   reading the catalog sets hint bits, which are logged as full-page
#   images (FPI_FOR_HINT), some under the dead transaction's own xid; their
#   flush makes redo run, and replaying them moves the next xid past the
#   dead one, which then is never handed out again.  The standby part runs
#   twice: checksums off (the no-redo path, on every major) and on (either
#   path, whichever the flushes give); both must end exact.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use IPC::Run;
use PaimonSinkTest qw(start_node writers_ready try_sql stop_load same_staged_files);

# the ids of every row a transaction committed, per node name
my %committed;

sub sql { my ($node, $query) = @_; return $node->safe_psql('postgres', $query); }

sub setup
{
	my ($node) = @_;
	sql($node, q{
		CREATE EXTENSION paimon_sink;
		CREATE TABLE target (id int, note text);
		CREATE TABLE reused (xid xid8);
		SELECT sink_name FROM paimon_sink.create_sink('s', 'target');
	});
	return;
}

sub committed_insert
{
	my ($node, $first, $last, $note) = @_;
	sql($node, "INSERT INTO s SELECT g, '$note' FROM generate_series($first, $last) g");
	$committed{ $node->name }{$_} = 1 for $first .. $last;
	return;
}

# every committed row once (count, distinct ids, their sum), none of a dead
# transaction; after checkpoint() of the sink on node
sub check_exact
{
	my ($node, $label, $ids_of) = @_;
	my ($ret, $out, $err) = try_sql($node, "SELECT count(*) FROM paimon_sink.checkpoint('s')");
	is($ret, 0, "$label: checkpoint() works") or diag($err);
	my @ids = keys %{ $committed{ $ids_of // $node->name } };
	my $sum = 0;
	$sum += $_ for @ids;
	is( sql($node,
			"SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || coalesce(sum(id), 0) FROM target"),
		scalar(@ids) . ' ' . scalar(@ids) . " $sum",
		"$label: every committed row exactly once");
	is(sql($node, "SELECT count(*) FROM target WHERE note LIKE 'dead%'"),
		'0', "$label: no row of the transaction that did not commit");
	return;
}

# psql running script (its name is name) on node in the background,
# statement by statement (background_sql's -c would run it as one
# transaction); returns what stop_load takes.
sub background_script
{
	my ($node, $name, $script) = @_;
	my $file = "$PostgreSQL::Test::Utils::tmp_check/$name.sql";
	PostgreSQL::Test::Utils::append_to_file($file, $script);
	my $run = { out => '', err => '' };
	$run->{harness} = IPC::Run::start(
		[ $node->installed_command('psql'), '-XAt', '-d', $node->connstr('postgres'), '-f', $file ],
		'<', \undef, '>', \$run->{out}, '2>', \$run->{err}, IPC::Run::timeout(150));
	return $run;
}

# wal_quiet(NODE): waits (at most 60 s) until NODE logged nothing for 1.5
# s, longer than the committer's delay for its statistics; true when so.
sub wal_quiet
{
	my ($node) = @_;
	for (1 .. 40)
	{
		my $before = sql($node, 'SELECT pg_catalog.pg_current_wal_insert_lsn()');
		usleep(1_500_000);
		return 1 if sql($node, 'SELECT pg_catalog.pg_current_wal_insert_lsn()') eq $before;
	}
	return 0;
}

# One session (so one bucket, one writer, one open file): committed rows,
# a CHECKPOINT, then a transaction whose batch its writer writes and, at
# the fault point writer_before_wal (armed with action), does not log;
# crash runs the script and makes the crash.  Returns the dead
# transaction's xid.
sub crash_after_unlogged_batch
{
	my ($node, $label, $first, $last, $action, $crash) = @_;
	# The committer writes the statistics of the commits before (a
	# transaction of its own, with a commit record) up to a second after
	# them (maintenance.c): logged after the CHECKPOINT, that record would
	# make recovery replay.  On a busy machine it came after it.
	# Reading a catalog page with dead rows prunes it (a PRUNE record with
	# a full-page image), and the backends that read the catalogs after
	# the CHECKPOINT (the script's, the test's polls) did so: the VACUUM
	# before it leaves nothing to prune.
	ok(wal_quiet($node), "$label: nothing is being logged before the CHECKPOINT");
	my $out = $crash->(
		"INSERT INTO s SELECT g, '$label: before the crash' FROM generate_series($first - 100, $first - 1) g;\n"
		  . "VACUUM;\nCHECKPOINT;\n"
		  . "SELECT paimon_sink.inject_fault('writer_before_wal', '$action');\n"
		  . "BEGIN;\nSELECT pg_catalog.txid_current();\n"
		  . "INSERT INTO s SELECT g, 'dead: $label' FROM generate_series($first, $last) g;\nCOMMIT;\n");
	$committed{ $node->name }{$_} = 1 for $first - 100 .. $first - 1;
	my ($xid) = $out =~ /^(\d+)$/m;
	$xid //= '';
	like($xid, qr/^\d+$/, "$label: the dead transaction had xid $xid");
	return $xid;
}

# replayed(NODE, LOG): the records recovery replayed, as pg_waldump shows
# them from the redo start LOG names (what was logged after the CHECKPOINT:
# the diagnosis when none was expected).
sub replayed
{
	my ($node, $log) = @_;
	my ($start) = $log =~ /redo starts at ([0-9A-F]+\/[0-9A-F]+)/;
	my ($end) = $log =~ /redo done at ([0-9A-F]+\/[0-9A-F]+)/;
	return 'no redo start in the log' unless defined $start;
	my ($out, $err) = ('', '');
	IPC::Run::run(
		[ $node->installed_command('pg_waldump'), '-p', $node->data_dir . '/pg_wal', '-s', $start,
		  (defined $end ? ('-e', $end) : ()) ],
		'>', \$out, '2>', \$err);
	my @lines = split /\n/, $out . $err;
	splice(@lines, 40) if @lines > 40;
	return "records replayed from $start:\n" . join("\n", @lines);
}

# After the restart: recovery had nothing to replay (so no end of redo), or
# replayed what it had to, as expect says ('no redo', 'redo', or 'either'),
# and the batch was cut against the next xid recovery ended with (by the
# first writer to adopt files, or by the end of redo).  Returns whether
# redo ran.
sub check_recovery
{
	my ($node, $label, $offset, $xid, $expect) = @_;
	ok(writers_ready($node, 'postgres'), "$label: the server and its writers are back");
	my $log = slurp_file($node->logfile, $offset);
	my $redo = $log =~ /redo starts at/ ? 1 : 0;
	if ($expect eq 'no redo')
	{
		like($log, qr/redo is not required/, "$label: recovery found nothing to replay")
		  or diag(replayed($node, $log));
		unlike($log, qr/redo starts at/, "$label: no redo ran");
	}
	elsif ($expect eq 'redo')
	{
		like($log, qr/redo starts at/,
			"$label: recovery replayed from the checkpoint's redo record (PostgreSQL 17+)");
	}
	else
	{
		note("$label: " . ($redo ? 'redo ran (WAL was flushed after the checkpoint)' : 'no redo ran'));
	}
	my ($next_xid) = $log
	  =~ /paimon_sink cuts staged file .* never logged\n.*transaction id $xid; the next transaction id after recovery is (\d+)\./;
	if ($expect eq 'either' && $redo && !(defined $next_xid && $next_xid <= $xid))
	{
		# redo replayed a record of the dead transaction (a hint bit's
		# full-page image): the next xid is past it, and its batch is no
		# transaction's that may ever commit
		like($log, qr/paimon_sink (cuts|writer removed) staged file/,
			"$label: the unlogged batch was cut or its file removed, its xid behind the next");
		return 0;
	}
	ok(defined $next_xid && $next_xid <= $xid,
		"$label: the unlogged batch was cut against the next xid recovery ended with");
	return 1;
}

# Commits transactions (each a row of the sink) until one gets xid; tests
# that it did, and returns how many committed.  When recovery moved the next
# xid past it (reusable false), says so and commits one.
sub reuse_xid
{
	my ($node, $label, $xid, $first, $reusable) = @_;
	# (no TRUNCATE first: it would take the next xid itself)
	my $before = sql($node, 'SELECT count(*) FROM reused');
	sql($node, qq{
		DO \$\$
		DECLARE
			x xid8;
		BEGIN
			FOR i IN 0..999 LOOP
				x := pg_catalog.pg_current_xact_id();
				INSERT INTO public.reused VALUES (x);
				INSERT INTO public.s VALUES ($first + i, 'committed with a reused xid');
				COMMIT;
				EXIT WHEN x >= '$xid'::xid8;
			END LOOP;
		END
		\$\$});
	my $n = sql($node, 'SELECT count(*) FROM reused') - $before;
	note("$label: $n transactions committed, the last with xid "
		  . sql($node, 'SELECT max(xid::text::bigint) FROM reused'));
	$committed{ $node->name }{ $first + $_ } = 1 for 0 .. $n - 1;
	if (defined $reusable && !$reusable)
	{
		note("$label: xid $xid is behind the next xid after recovery: it is not handed out again");
		return $n;
	}
	is(sql($node, "SELECT count(*) FROM reused WHERE xid = '$xid'"),
		'1', "$label: a committed transaction got the dead transaction's xid $xid again");
	return $n;
}

# --- one node: a crash restart inside one postmaster, then an immediate
# stop.  wal_level minimal: an online checkpoint then logs no snapshot of
# running transactions at its redo point (which recovery would replay),
# nor does the background writer later.
# From 17 an online checkpoint logs a redo record, which a crash after it
# replays: the end of redo cuts the batch.  Before 17 nothing is replayed.
my $online_checkpoint_redo;

my $node = start_node('noredo',
	"restart_after_crash = on\nautovacuum = off\nwal_level = minimal\nmax_wal_senders = 0");
setup($node);
ok(writers_ready($node, 'postgres'), 'writers serve');
$online_checkpoint_redo = sql($node, 'SHOW server_version_num') >= 170000;
note( $online_checkpoint_redo
	? 'PostgreSQL 17+: a CHECKPOINT logs a redo record; the one-node parts check the cut at the end of redo'
	: 'before PostgreSQL 17: a CHECKPOINT leaves nothing to replay; the one-node parts check the cut without redo');
my $after_checkpoint = $online_checkpoint_redo ? 'redo' : 'no redo';

my $offset = -s $node->logfile;
my $xid = crash_after_unlogged_batch(
	$node, 'panic', 1101, 1200, 'panic',
	sub {
		my ($ret, $out, $err) = try_sql($node, $_[0]);
		isnt($ret, 0, 'panic: the transaction fails with the crash');
		return $out;
	});
check_recovery($node, 'panic', $offset, $xid, $after_checkpoint);
reuse_xid($node, 'panic', $xid, 10001);
committed_insert($node, 2001, 2010, 'after the reuse');
check_exact($node, 'panic');

$offset = -s $node->logfile;
$xid = crash_after_unlogged_batch(
	$node, 'immediate', 3101, 3200, 'pause',
	sub {
		my $run = background_script($node, 'immediate', $_[0]);
		ok( $node->poll_query_until('postgres',
				"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'writer_before_wal'"
			),
			'immediate: the writer wrote the batch and waits before logging it');
		$node->stop('immediate');
		my $out = stop_load($run);
		$node->start;
		return $out;
	});
check_recovery($node, 'immediate', $offset, $xid, $after_checkpoint);
reuse_xid($node, 'immediate', $xid, 20001);
committed_insert($node, 4001, 4010, 'after the reuse');
check_exact($node, 'immediate');
$node->stop;

# --- a primary and its streaming standby.  At wal_level replica an online
# checkpoint logs the running transactions at its redo point, which recovery
# replays; only a shutdown checkpoint (an end-of-recovery one here) leaves
# nothing.  What is logged after it must stay unflushed: no staged file to
# adopt (their ends would be logged), no dead catalog row to prune, no hint
# bits logged nor buffers written (a write flushes the WAL up to its page),
# and wal_writer_delay keeps a new file's record in the WAL buffers, as an
# idle server does.
# checksums: data checksums on or off (initdb's default: off before 18, on
# from 18).  Off, nothing is logged after the end-of-recovery checkpoint
# and recovery must find nothing to replay; on, hint bits set by reading
# the catalog are logged as full-page images, and whether redo runs depends
# on their flush: either path must end exact.
sub standby_case
{
	my ($checksums) = @_;
	my $case = $checksums ? 'checksums' : 'no_checksums';
	my $label = "standby, data checksums " . ($checksums ? 'on' : 'off');
	my $primary = PostgreSQL::Test::Cluster->new("noredo_primary_$case");
	my @initdb =
	    $checksums ? ('--data-checksums')
	  : $primary->pg_version >= 18 ? ('--no-data-checksums')
	  :                              ();
	$primary->init(allows_streaming => 1, extra => \@initdb);
	$primary->append_conf('postgresql.conf',
		"restart_after_crash = on\nautovacuum = off\nwal_writer_delay = 10s\n"
		  . "wal_log_hints = off\nbgwriter_lru_maxpages = 0");
	$primary->start;
	is(sql($primary, 'SHOW data_checksums'), $checksums ? 'on' : 'off', "$label: the cluster's checksums");
	setup($primary);
	ok(writers_ready($primary, 'postgres'), "$label: primary: writers serve");
	$primary->backup('base');
	my $standby = PostgreSQL::Test::Cluster->new("noredo_standby_$case");
	$standby->init_from_backup($primary, 'base', has_streaming => 1);
	$standby->start;
	committed_insert($primary, 5001, 5100, 'standby: before the crashes');
	check_exact($primary, "$label: primary before the crashes");
	# nothing left for a scan after the restart to prune (a logged change)
	sql($primary, 'VACUUM');
	$primary->stop('immediate');
	$primary->start;
	ok(writers_ready($primary, 'postgres'), "$label: the primary is back after a first crash");

	# the writer pauses twice: with the new file's header written, then with
	# the batch written, neither logged
	my $offset = -s $primary->logfile;
	sql($primary, "SELECT paimon_sink.inject_fault('writer_before_wal', 'pause', 2)");
	my $run = background_script($primary, "standby_$case",
		"BEGIN;\nSELECT pg_catalog.txid_current();\n"
		  . "INSERT INTO s SELECT g, 'dead: standby' FROM generate_series(5101, 5200) g;\nCOMMIT;\n");
	my $paused = "SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'writer_before_wal'";
	ok($primary->poll_query_until('postgres', $paused), "$label: the writer made a file, unlogged");
	sql($primary, "SELECT paimon_sink.release_fault('writer_before_wal')");
	ok( $primary->poll_query_until('postgres',
			"SELECT hits = 2 AND paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'writer_before_wal'"),
		"$label: the writer wrote the batch and waits before logging it");
	$primary->stop('immediate');
	my ($xid) = stop_load($run) =~ /^(\d+)$/m;
	$xid //= '';
	like($xid, qr/^\d+$/, "$label: the dead transaction had xid $xid");
	$primary->start;
	my $reusable =
	  check_recovery($primary, $label, $offset, $xid, $checksums ? 'either' : 'no redo');
	reuse_xid($primary, $label, $xid, 30001, $reusable);
	committed_insert($primary, 6001, 6010, 'after the reuse');
	same_staged_files($primary, $standby, $label);
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	$primary->stop('immediate');
	$standby->promote;
	ok(writers_ready($standby, 'postgres'), "$label: promoted standby: writers serve");
	check_exact($standby, "$label: promoted standby", $primary->name);
	$standby->stop;
	return;
}

standby_case(0);
standby_case(1);

done_testing();
