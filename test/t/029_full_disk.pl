# A full disk (and an I/O error) under the staged-file folder.  A writer
# that cannot write a staged file hands the error to the session whose
# rows it was staging, 53100 (disk_full) or 58030 (io_error), naming the
# folder, and goes on serving: the session's transaction is rolled back,
# the writer keeps its pid, every row told "committed" is in the target
# exactly once after space returns, and a checkpoint() while the disk is
# full commits what was staged.  The failed batch is in no WAL record, so a
# streaming standby holds exactly the primary's staged files, and a crash
# after a failure brings none of its rows back.  A failed fsync of a staged
# file crash-restarts the server (data_sync_retry is off), whose recovery
# rewrites the staged files from the WAL.
#
# Two variants: fault points that make the writes fail with ENOSPC or EIO
# (always), and a genuinely full file system, a small tmpfs that test/check
# mounts as root and passes in PS_FULL_FS (the TAP files run as postgres,
# who cannot mount): when it is not there, the output says so.
use strict;
use warnings;
use File::Path qw(make_path remove_tree);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use PaimonSinkTest qw(start_node try_sql writers_ready same_staged_files);

# rows(NODE): "count distinct-count min max" of the target's ids.
sub rows
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		"SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || coalesce(min(id), 0) || ' ' || "
		  . "coalesce(max(id), 0) FROM t");
}

# insert(NODE, FROM, TO): one transaction inserting ids FROM..TO (1 kB each).
sub insert
{
	my ($node, $from, $to) = @_;
	return try_sql($node,
		"INSERT INTO s SELECT i, repeat('x', 1000) FROM generate_series($from, $to) i");
}

sub writer_pids
{
	my ($node) = @_;
	return $node->safe_psql('postgres',
		'SELECT string_agg(pid::text, \',\' ORDER BY writer) FROM paimon_sink.writers');
}

# setup(NODE): the sink s into t, and the folder its files go to.
sub setup
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{
		CREATE EXTENSION paimon_sink;
		CREATE TABLE t (id int, payload text);
		SELECT sink_name FROM paimon_sink.create_sink('s', 't');
	});
	ok(writers_ready($node, 'postgres'), 'writers serve');
	my $folder = $node->safe_psql('postgres',
		"SELECT 'pg_paimon_sink/' || d.oid || '/' || s.sink_id FROM pg_database d, "
		  . "paimon_sink.sinks s WHERE d.datname = current_database() AND s.sink_name = 's'");
	return $folder;
}

# refused(NODE, FROM, TO, SQLSTATE, ERRNO TEXT, FOLDER, LABEL): the
# insert fails at once with SQLSTATE, naming the folder and the cause.
sub refused
{
	my ($node, $from, $to, $state, $cause, $folder, $label) = @_;
	my $start = time;
	my ($ret, $out, $err) = insert($node, $from, $to);
	my $took = time - $start;
	isnt($ret, 0, "$label: the insert fails");
	like($err, qr/ERROR:  $state: the sink writer could not stage the rows of this transaction/,
		"$label: $state to the client");
	like($err, qr/\Q$folder\E/, "$label: the error names the staged-file folder");
	like($err, qr/$cause/, "$label: the error says why");
	like($err, qr/This transaction is rolled back/, "$label: and that nothing was staged");
	cmp_ok($took, '<', 20, "$label: answered without a timeout (${took}s)");
	return $err;
}

# ---------------------------------------------------------------------------
# The fault-point variant, with a streaming standby.
my $node = start_node('full_fault', "wal_level = replica\nmax_wal_senders = 4\nrestart_after_crash = on\n");
my $folder = setup($node);
$node->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('full_fault_standby');
$standby->init_from_backup($node, 'b', has_streaming => 1);
$standby->start;

my ($ret, $out, $err) = insert($node, 1, 10);
is($ret, 0, 'rows 1..10 committed') or diag($err);
my $pids = writer_pids($node);

$node->safe_psql('postgres', "SELECT paimon_sink.inject_fault('staged_write', 'enospc', -1)");
refused($node, 11, 20, '53100', 'No space left on device', $folder, 'ENOSPC');
# a transaction that streams its rows while it runs learns of it at its next chunk
($ret, $out, $err) = try_sql($node,
	"SET paimon_sink.handoff_buffer_size = '64kB';
	 INSERT INTO s SELECT i, repeat('y', 1000) FROM generate_series(100001, 102000) i");
like($err, qr/ERROR:  53100: the sink writer could not stage/, 'ENOSPC: a streaming transaction gets 53100');
is(writer_pids($node), $pids, 'ENOSPC: no writer exited (same pids)');
same_staged_files($node, $standby, 'after the refused batches');

# a checkpoint while the disk is full commits what is staged
($ret, $out, $err) = try_sql($node,
	"SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')");
is($out, '10', 'a checkpoint while the disk is full commits the staged rows') or diag($err);
is(rows($node), '10 10 1 10', 'the target has rows 1..10');

$node->safe_psql('postgres', "SELECT paimon_sink.inject_fault('staged_write', 'eio', -1)");
refused($node, 21, 30, '58030', 'Input/output error', $folder, 'EIO');
is(writer_pids($node), $pids, 'EIO: no writer exited (same pids)');

# space returns: writes go on by themselves
$node->safe_psql('postgres', 'SELECT paimon_sink.clear_faults()');
($ret, $out, $err) = insert($node, 31, 40);
is($ret, 0, 'space back: rows 31..40 committed') or diag($err);

# a failure, then a crash: none of the refused rows comes back
$node->safe_psql('postgres', "SELECT paimon_sink.inject_fault('staged_write', 'enospc', 1)");
refused($node, 41, 50, '53100', 'No space left on device', $folder, 'ENOSPC before a crash');
same_staged_files($node, $standby, 'after the refusal before the crash');
$node->stop('immediate');
$node->start;
ok(writers_ready($node, 'postgres'), 'writers serve after the crash');
($ret, $out, $err) = insert($node, 51, 60);
is($ret, 0, 'rows 51..60 committed') or diag($err);
($ret, $out, $err) = try_sql($node,
	"SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')");
is($out, '20', 'the checkpoint after the crash commits rows 31..40 and 51..60') or diag($err);
is($node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE id BETWEEN 11 AND 30 OR id BETWEEN 41 AND 50 OR id > 100000'),
	'0', 'no refused row is in the target');
is(rows($node), '30 30 1 60', 'every committed row exactly once');

# a failed fsync of a staged file: PANIC (data_sync_retry = off), and
# crash recovery rewrites the staged files from their WAL records
($ret, $out, $err) = insert($node, 61, 70);
is($ret, 0, 'rows 61..70 committed') or diag($err);
$node->safe_psql('postgres', "SELECT paimon_sink.inject_fault('staged_fsync', 'eio', 1)");
insert($node, 71, 80);    # its commit may race the restart; counted below if committed
ok($node->wait_for_log(qr/PANIC:  could not fsync staged file .*Input\/output error/),
	'a failed fsync of a staged file PANICs');
ok($node->wait_for_log(qr/all server processes terminated; reinitializing/),
	'the server crash-restarts');
ok(writers_ready($node, 'postgres'), 'writers serve after the restart');
($ret, $out, $err) = try_sql($node, "SELECT count(*) FROM paimon_sink.checkpoint('s')");
is($ret, 0, 'the checkpoint after the PANIC commits') or diag($err);
my ($count, $distinct) = split ' ', rows($node);
is($count, $distinct, 'no row twice after the PANIC');
is($node->safe_psql('postgres', 'SELECT count(*) FROM t WHERE id BETWEEN 61 AND 70'), '10',
	'rows 61..70, committed before the failed fsync, are in the target');
$standby->stop;
$node->stop;

# ---------------------------------------------------------------------------
# The genuine variant: the staged-file folder on a full file system.
my $mount = $ENV{PS_FULL_FS};
my $why;
if (!defined $mount || $mount eq '')
{
	$why = $ENV{PS_FULL_FS_WHY}
	  || 'PS_FULL_FS is not set: test/check mounts a small tmpfs as root and passes it in; '
	  . 'this run (as postgres) cannot mount one';
}
elsif (!-d $mount || !-w $mount)
{
	$why = "PS_FULL_FS=$mount is not a directory this user may write";
}
if (defined $why)
{
	diag("the genuine full file system variant does not run: $why; the fault-point variant above ran");
	ok(1, "genuine full file system: not run ($why)");
	done_testing();
	exit 0;
}

my $full = PostgreSQL::Test::Cluster->new('full_fs');
$full->init;
my $area = "$mount/" . $full->name . ".$$";
remove_tree($area);
make_path("$area/pg_paimon_sink");
symlink("$area/pg_paimon_sink", $full->data_dir . '/pg_paimon_sink')
  or die "could not link the staged-file folder to $area: $!";
$full->start;
$folder = setup($full);
($ret, $out, $err) = insert($full, 1, 10);
is($ret, 0, 'full fs: rows 1..10 committed') or diag($err);
$pids = writer_pids($full);

# fill the file system
my $filler = "$area/filler";
open(my $fh, '>', $filler) or die "could not create $filler: $!";
my $block = 'z' x 65536;
my $filled = 0;
while (1)
{
	my $n = syswrite($fh, $block);
	last if !defined $n || $n < length($block);
	$filled += $n;
}
close($fh);
note("filled $filled bytes of $mount");
my $free = `df -Pk '$area' | tail -1`;
note("df: $free");

refused($full, 11, 20, '53100', 'No space left on device', $folder, 'full fs');
is(writer_pids($full), $pids, 'full fs: no writer exited (same pids)');
($ret, $out, $err) = try_sql($full,
	"SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')");
is($out, '10', 'full fs: a checkpoint while the disk is full commits the staged rows')
  or diag($err);
unlink($filler);
($ret, $out, $err) = insert($full, 21, 30);
is($ret, 0, 'full fs: space back, rows 21..30 committed') or diag($err);
($ret, $out, $err) = try_sql($full,
	"SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')");
is($out, '10', 'full fs: they commit') or diag($err);
is(rows($full), '20 20 1 30', 'full fs: every committed row exactly once');
is($full->safe_psql('postgres', 'SELECT count(*) FROM t WHERE id BETWEEN 11 AND 20'), '0',
	'full fs: no refused row');
is(writer_pids($full), $pids, 'full fs: the same writers served throughout');
$full->stop;
remove_tree($area);
done_testing();
