# sink_stats' open_files, open_rows, open_bytes and oldest_open_at: the
# rows the writers hold in open staged files, written and not yet sealed
# into a checkpoint, per sink and commit user.  Two commit users stage
# rows: each is counted apart, its bytes between what the writers view
# says they wrote (payloads) and the size of the open files on disk
# (payloads, batch headers and file headers).  A checkpoint barrier moves
# one commit user's rows out of "open" into its pending checkpoint's
# staged_rows and leaves the other's; a transaction that streamed its rows
# and rolled back is counted until the next barrier leaves it out; one
# still running at a barrier stays open, with its first staging's time,
# until a barrier after its commit takes it; a crash
# restart (an immediate-mode stop) counts the open rows again from the
# files the writers adopt, aged from the adoption.  Last, a table too
# small for both commit users (paimon_sink.max_open_stats = 1): a warning
# in the log, and NULL (unknown), not a short count, until it fits again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use File::Find;
use PaimonSinkTest qw(sink_setup writers_ready);

my $node = PostgreSQL::Test::Cluster->new('open_staged');
$node->init;
$node->append_conf('postgresql.conf', "restart_after_crash = on\n");
$node->start;

sub sql { return $node->safe_psql('postgres', $_[0]); }

ok(sink_setup($node), 'writers serve');

# the open columns of a commit user of sink s, as one line
sub open_of
{
	my ($user) = @_;
	return sql("SELECT concat_ws(' ', coalesce(open_files::text, 'NULL'), "
		  . "coalesce(open_rows::text, 'NULL'), coalesce(open_bytes::text, 'NULL'), "
		  . "coalesce(staged_rows::text, 'NULL')) "
		  . "FROM paimon_sink.sink_stats WHERE sink_name = 's' AND commit_user = '$user'");
}

# a committed INSERT of N rows into s as commit user USER
sub stage
{
	my ($user, $first, $n) = @_;
	sql("SET paimon_sink.commit_user = '$user'; "
		  . "INSERT INTO s SELECT g, repeat('x', 20) FROM generate_series($first, $first + $n - 1) g");
	return;
}

# the bytes of the staged files of sink s that no committable records: its open files
sub open_file_bytes
{
	my $sink_dir = sql("SELECT 'pg_paimon_sink/' || d.oid || '/' || s.sink_id "
		  . "FROM pg_database d, paimon_sink.sink_definition s "
		  . "WHERE d.datname = current_database() AND s.sink_name = 's'");
	my %recorded = map { $_ => 1 } split /\n/, sql('SELECT file_name FROM paimon_sink.committable');
	my $bytes = 0;
	opendir(my $dh, $node->data_dir . "/$sink_dir") or die "$sink_dir: $!";
	for my $f (readdir $dh)
	{
		next unless $f =~ /\.stage$/ && !$recorded{$f};
		$bytes += -s $node->data_dir . "/$sink_dir/$f";
	}
	closedir $dh;
	return $bytes;
}

sub payload_bytes { return sql('SELECT sum(bytes_staged) FROM paimon_sink.writers'); }

# the commit users' rows exist before they stage anything: 0 open
sql("SELECT count(*) FROM paimon_sink.prepare_commit('s', 'a', 1)");
sql("SELECT count(*) FROM paimon_sink.prepare_commit('s', 'b', 1)");
is(open_of('a') . ' / ' . open_of('b'), '0 0 0 0 / 0 0 0 0', 'nothing open, nothing pending');

my $payload_before = payload_bytes();
my $t0 = sql('SELECT now()');
stage('a', 1, 10);
stage('b', 1001, 20);
stage('b', 2001, 5);
my ($files_a, $rows_a, $bytes_a) = split / /, open_of('a');
my ($files_b, $rows_b, $bytes_b) = split / /, open_of('b');
is("$rows_a $rows_b", '10 25', 'each commit user\'s committed rows are open, apart');
cmp_ok($files_a, '>=', 1, 'a has an open file');
cmp_ok($files_b, '>=', 1, 'b has an open file');
my $payload = payload_bytes() - $payload_before;
cmp_ok($bytes_a + $bytes_b, '>', $payload,
	'open bytes exceed the payloads the writers view counts (batch headers)');
cmp_ok($bytes_a + $bytes_b, '<', open_file_bytes(),
	'and stay under the open files\' size on disk (file headers)');
is(sql("SELECT oldest_open_at BETWEEN '$t0' AND now() AND oldest_open_seconds >= 0 "
	  . "FROM paimon_sink.sink_stats WHERE sink_name = 's' AND commit_user = 'a'"),
	't', 'the oldest open row\'s time and age');

# a transaction that streams its rows (over a 64 kB hand-off buffer) and rolls back
sql(q{SET paimon_sink.commit_user = 'a'; SET paimon_sink.handoff_buffer_size = '64kB';
	BEGIN; INSERT INTO s SELECT g, repeat('y', 100) FROM generate_series(1, 3000) g; ROLLBACK});
# the writers read the hand-off queues to their end (the session detached)
ok($node->poll_query_until('postgres', 'SELECT sum(queues_in_use) = 0 FROM paimon_sink.writers'),
	'the writers read the rolled back transaction\'s hand-off to its end');
my (undef, $rows_streamed) = split / /, open_of('a');
cmp_ok($rows_streamed, '>', 10, 'the rolled back transaction\'s streamed rows are staged, open');

# a barrier of a's checkpoint 2: a's committed rows into it, the rolled back ones left out
is(sql("SELECT sum(row_count) FROM paimon_sink.prepare_commit('s', 'a', 2)"), '10',
	'checkpoint 2 of a takes its 10 committed rows');
is(open_of('a'), '0 0 0 10', 'a: nothing open; its 10 rows are the pending checkpoint\'s');
is(open_of('b'), "$files_b 25 $bytes_b 0", 'b: untouched by a\'s barrier');

# a transaction still running at a barrier: its streamed rows stay open (the
# barrier keeps its own file), with their first staging's time; committed,
# the next barrier takes them
my $running = $node->background_psql('postgres');
$running->query_safe(
	q{SET paimon_sink.commit_user = 'a'; SET paimon_sink.handoff_buffer_size = '64kB'; BEGIN});
$running->query_safe(
	q{INSERT INTO s SELECT g, repeat('z', 100) FROM generate_series(100001, 103000) g});
ok($node->poll_query_until('postgres',
		"SELECT open_rows > 0 FROM paimon_sink.sink_stats WHERE sink_name = 's' AND commit_user = 'a'"),
	'the running transaction\'s streamed rows are open');
my ($rows_running) = (split / /, open_of('a'))[1];
my $since = sql("SELECT oldest_open_at FROM paimon_sink.sink_stats WHERE sink_name = 's' AND commit_user = 'a'");
is(sql("SELECT count(*) FROM paimon_sink.prepare_commit('s', 'a', 3) WHERE row_count > 0"), '0',
	'checkpoint 3 of a takes none of the running transaction\'s rows');
my ($files_kept, $rows_kept, undef, $staged_kept) = split / /, open_of('a');
cmp_ok($rows_kept, '>=', $rows_running, 'they are still open after the barrier');
is("$files_kept $staged_kept", '1 10', 'in the file the barrier kept; nothing more pending');
is(sql("SELECT oldest_open_at FROM paimon_sink.sink_stats WHERE sink_name = 's' AND commit_user = 'a'"),
	$since, 'with their first staging\'s time');
$running->query_safe('COMMIT');
$running->quit;
like(open_of('a'), qr/^[12] 3000 \d+ 10$/, 'committed: all 3000 rows open (its own file, and the shared one for the rest handed off at commit)');
is(sql("SELECT sum(row_count) FROM paimon_sink.prepare_commit('s', 'a', 4)"), '3000',
	'checkpoint 4 of a takes them');
is(open_of('a'), '0 0 0 3010', 'a: nothing open, 3010 pending');

# a crash restart: the writers adopt b's open files and count them again
stage('b', 3001, 7);
my $before_crash = open_of('b');
like($before_crash, qr/^\d+ 32 \d+ 0$/, 'b: 32 rows open before the crash');
my $t1 = sql('SELECT clock_timestamp()');
$node->stop('immediate');
$node->start;
ok(writers_ready($node, 'postgres'), 'writers serve after the crash');
is(open_of('b'), $before_crash, 'b: the same files, rows and bytes open after the crash');
is(open_of('a'), '0 0 0 3010', 'a: still nothing open, its checkpoints pending');
is(sql("SELECT oldest_open_at > '$t1'::timestamptz "
	  . "FROM paimon_sink.sink_stats WHERE sink_name = 's' AND commit_user = 'b'"),
	't', 'b\'s adopted rows are aged from their adoption');

# their checkpoint: open to pending
is(sql("SELECT sum(row_count) FROM paimon_sink.prepare_commit('s', 'b', 2)"), '32',
	'checkpoint 2 of b takes the 32 adopted rows');
is(open_of('b'), '0 0 0 32', 'b: nothing open, 32 pending');
is(sql("SELECT count(*) FROM paimon_sink.sink_stats WHERE oldest_open_at IS NOT NULL "
	  . "OR oldest_open_seconds IS NOT NULL"), '0', 'no oldest open row when none is open');

# a table of one entry: the second commit user does not fit
$node->append_conf('postgresql.conf', "paimon_sink.max_open_stats = 1\n");
$node->restart;
ok(writers_ready($node, 'postgres'), 'writers serve with max_open_stats = 1');
my $offset = -s $node->logfile;
stage('a', 5001, 3);
is(open_of('a'), '1 3 ' . (split / /, open_of('a'))[2] . ' 3010', 'one commit user fits');
stage('b', 6001, 4);
ok($node->wait_for_log(qr/WARNING:.*cannot count the rows of commit user "b" of sink \d+ in its open staged files/, $offset),
	'the writer warns that b does not fit');
is(open_of('a') . ' / ' . open_of('b'), 'NULL NULL NULL 3010 / NULL NULL NULL 32',
	'every count of the database unknown (NULL), not short');
sql("SELECT count(*) FROM paimon_sink.prepare_commit('s', 'a', 5)");
sql("SELECT count(*) FROM paimon_sink.prepare_commit('s', 'b', 3)");
is(open_of('a') . ' / ' . open_of('b'), '0 0 0 3013 / 0 0 0 36',
	'known again once both are sealed');

$node->stop;
done_testing();
