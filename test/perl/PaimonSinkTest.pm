# PaimonSinkTest -- helpers shared by the TAP suite (test/t/*.pl).
#
# sql_statements() reads the SQL the extension's C code runs, from its
# string literals, so that the security tests list the functions,
# operators, types and relations it names from the code itself rather
# than from a list kept by hand; sql_problems() says where a statement
# leaves a name to the search_path.
package PaimonSinkTest;

use strict;
use warnings;
use Exporter 'import';
use File::Basename qw(dirname);
use File::Spec;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT_OK = qw(nothing_in_doubt source_dir doc_table sql_statements sql_problems sql_names writers_ready
  back_after_crash
  start_node try_sql staged_files staged_listing ledger_setup ledger_diff ledger_rows wait_rows
  start_load stop_load run_load start_checkpoints background_sql checkpoint_ok same_staged_files
  background_verbose finish_within holds_ledger_exactly exactly_once lose_page_cache sink_setup
  book_insert fault_paused staged_files_left windows_closed released_versions query_or_error
  scenario_sql stage_scenario scenario_rows finish_background load_ahead_counts waiting_loaders
  schema_setup schema_write schema_prepare schema_commit schema_follow schema_diff schema_layout schema_refused);

# writers_ready(NODE, DATABASE): waits (poll_query_until's bound) until
# the database's two writers serve; true when they do.  Schema-qualified,
# so that it means the same under any search_path a test plants.
sub writers_ready
{
	my ($node, $database) = @_;
	return $node->poll_query_until($database,
		"SELECT pg_catalog.count(*) OPERATOR(pg_catalog.=) 2 FROM paimon_sink.writers WHERE ready");
}

# back_after_crash(NODE, DATABASE, OFFSET): waits until the postmaster has
# reinitialized after a crash it logged past OFFSET (the server log's size
# before the fault was armed: -s $node->logfile), then until the database's
# two writers serve (writers_ready); true when they do.  writers_ready
# alone can answer from the writers of before the crash: a backend that
# PANICs ends its client's statement before the postmaster has heard of it.
sub back_after_crash
{
	my ($node, $database, $offset) = @_;
	$node->wait_for_log(qr/all server processes terminated; reinitializing/, $offset);
	return writers_ready($node, $database);
}

# start_node(NAME, [CONF]): a new node (PostgreSQL::Test::Cluster) with CONF
# appended to its postgresql.conf, initialised and started.
sub start_node
{
	my ($name, $conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', $conf) if defined $conf;
	$node->start;
	return $node;
}

# released_versions(): the released versions to upgrade from, as test/check
# built them for this run (PAIMON_SINK_RELEASES, "VERSION=INSTALL_PATH ..."),
# as a hash VERSION => INSTALL_PATH.  Tests that at least one was built; when
# none was because every release was made for other PostgreSQL majors
# (PAIMON_SINK_RELEASES_SKIPPED, "VERSION:MAJORS ..."; 0.1 predates the tree
# that builds on 17 and 18), skips the whole file saying so instead.
sub released_versions
{
	my %releases = map { split /=/, $_, 2 } split ' ', ($ENV{PAIMON_SINK_RELEASES} // '');
	my %skipped = map { split /:/, $_, 2 } split ' ', ($ENV{PAIMON_SINK_RELEASES_SKIPPED} // '');
	if (!%releases && %skipped)
	{
		plan skip_all => 'no release was made for this PostgreSQL major: '
		  . join(', ', map { "$_ is for PostgreSQL $skipped{$_}" } sort keys %skipped);
	}
	ok(%releases, 'released versions to upgrade from are built')
	  or diag('PAIMON_SINK_RELEASES is empty: test/check builds every version in test/releases '
		  . 'with test/release-install and passes them in it');
	return %releases;
}

# try_sql(NODE, SQL, [ROLE], [DATABASE]): runs SQL with psql as ROLE (the
# bootstrap superuser when undef) in DATABASE (postgres), stopping at the
# first error, with VERBOSITY verbose so that errors show their SQLSTATE and
# fields; returns (exit code, stdout, stderr).  The script goes to psql as a
# file (-f), not on its standard input: a script that crashes the server
# ends psql early, and a write to its closed input then failed the whole
# test with EPIPE when the machine was slow to feed it.
my $try_sql_scripts = 0;

sub try_sql
{
	my ($node, $sql, $role, $database) = @_;
	my ($out, $err) = ('', '');
	my @role = $role ? ('-U', $role) : ();
	my $file = sprintf('%s/try_sql_%d_%d.sql', $PostgreSQL::Test::Utils::tmp_check, $$,
		++$try_sql_scripts);
	PostgreSQL::Test::Utils::append_to_file($file, $sql);
	my $ret = $node->psql($database // 'postgres', '',
		stdout => \$out, stderr => \$err, on_error_stop => 1,
		extra_params => [ @role, '-v', 'VERBOSITY=verbose', '-f', $file ]);
	unlink $file;
	return ($ret, $out, $err);
}

# staged_files(NODE): how many staged files the node's data folder holds.
sub staged_files
{
	my ($node) = @_;
	my @files = glob($node->data_dir . '/pg_paimon_sink/*/*/*.stage');
	return scalar(@files);
}

# staged_files_left(NODE): how many staged files the node holds once its
# committers had the time to unlink what they committed.  A committer
# unlinks a committed checkpoint's files only after a WAL flush made their
# REMOVE records durable, at the latest once it has been idle for a moment,
# so a count right after a commit may still see them; this polls (10 s at
# most) until none is left and returns the last count.
sub staged_files_left
{
	my ($node) = @_;
	my $left = staged_files($node);
	for (my $i = 0; $left > 0 && $i < 100; $i++)
	{
		usleep(100_000);
		$left = staged_files($node);
	}
	return $left;
}

# staged_listing(NODE): the files of the node's staged-file folder, one
# "relative path size" string each, sorted: two nodes whose listings are
# equal hold the same staged files.
sub staged_listing
{
	my ($node) = @_;
	my $root = $node->data_dir . '/pg_paimon_sink';
	my @found;
	my @dirs = ($root);
	while (defined(my $dir = shift @dirs))
	{
		opendir(my $dh, $dir) or next;
		for my $entry (sort readdir $dh)
		{
			next if $entry eq '.' || $entry eq '..';
			my $path = "$dir/$entry";
			if (-d $path) { push @dirs, $path; next; }
			my @st = stat($path);
			next unless @st;
			push @found, substr($path, length($root) + 1) . ' ' . $st[7];
		}
		closedir $dh;
	}
	return sort @found;
}

# ledger_setup(NODE): the tables the load writes: target (no key, so that
# a row loaded twice shows), the sink s into it (4 buckets over id), the
# ledger (the same ids, written in the same transactions into a plain
# table) and the sequence that numbers transactions.  The target has a row
# trigger that sleeps 10 ms a row while slow_load holds a row, to hold a
# commit in its load.
sub ledger_setup
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{
		CREATE EXTENSION paimon_sink;
		CREATE TABLE target (id bigint, scen int, note text);
		CREATE TABLE ledger (id bigint PRIMARY KEY, scen int);
		CREATE SEQUENCE ids;
		CREATE TABLE slow_load (slow boolean);
		CREATE FUNCTION slow_row() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog AS $$
		BEGIN
			IF EXISTS (SELECT FROM public.slow_load) THEN
				PERFORM pg_catalog.pg_sleep(0.01);
			END IF;
			RETURN NEW;
		END $$;
		CREATE TRIGGER slow_row BEFORE INSERT ON target FOR EACH ROW EXECUTE FUNCTION slow_row();
		SELECT sink_name FROM paimon_sink.create_sink('s', 'target', buckets => 4, bucket_key => '{id}');
	});
	return;
}

# ledger_diff(NODE, SCENARIOS): compares the target with the ledger on NODE,
# for the rows of the scenario numbers in the list SCENARIOS (all rows when
# undef).  Returns ("missing M, duplicated D, phantom P", ledger rows):
# ledger ids not in the target, target rows beyond the first of an id,
# target ids not in the ledger.
sub ledger_diff
{
	my ($node, $scenarios) = @_;
	my $where = defined $scenarios ? 'WHERE scen IN (' . join(',', @$scenarios) . ')' : '';
	my $out = $node->safe_psql('postgres', qq{
		WITH t AS (SELECT id FROM target $where), l AS (SELECT id FROM ledger $where)
		SELECT 'missing ' || (SELECT count(*) FROM (SELECT id FROM l EXCEPT ALL SELECT id FROM t) m)
			|| ', duplicated ' || (SELECT coalesce(sum(n - 1), 0) FROM
				(SELECT count(*) AS n FROM t GROUP BY id HAVING count(*) > 1) d)
			|| ', phantom ' || (SELECT count(*) FROM (SELECT id FROM t EXCEPT SELECT id FROM l) p),
			(SELECT count(*) FROM l)});
	return split /\|/, $out;
}

# The pgbench script of the load: each transaction writes 10 rows into the
# sink and the same ids into the ledger; a scenario's ids start at its
# number times 10^9, numbered by the sequence ids.
sub _load_script
{
	my $file = "$PostgreSQL::Test::Utils::tmp_check/paimon_load.sql";
	PostgreSQL::Test::Utils::append_to_file($file, <<'SQL') unless -e $file;
\set base :scen * 1000000000
BEGIN;
SELECT :base + nextval('public.ids') * 100 AS b \gset
INSERT INTO public.s SELECT :b + g, :scen, 'load' FROM pg_catalog.generate_series(1, 10) g;
INSERT INTO public.ledger SELECT :b + g, :scen FROM pg_catalog.generate_series(1, 10) g;
COMMIT;
SQL
	return $file;
}

# The pgbench command of a load on NODE.
sub _pgbench_command
{
	my ($node, $scen, $clients, @limit) = @_;
	return [ $node->installed_command('pgbench'), '-n', '-c', $clients, '-D', "scen=$scen",
		'-f', _load_script(), @limit, $node->connstr('postgres') ];
}

# start_load(NODE, SCENARIO, [CLIENTS]): pgbench writing the load of
# scenario number SCENARIO in the background, with CLIENTS clients (3), 150
# transactions (1500 rows) a second at most, for at most 120 s; returns what
# stop_load takes.
sub start_load
{
	my ($node, $scen, $clients) = @_;
	my $run = { out => '', err => '' };
	$run->{harness} = IPC::Run::start(
		_pgbench_command($node, $scen, $clients // 3, '-R', '150', '-T', '120'),
		'<', \undef, '>', \$run->{out}, '2>', \$run->{err}, IPC::Run::timeout(150));
	return $run;
}

# stop_load(RUN): ends a background load (which ends by itself once its
# server is gone); returns pgbench's output.
sub stop_load
{
	my ($run) = @_;
	$run->{harness}->signal('TERM') if $run->{harness}->pumpable;
	eval { $run->{harness}->finish; };
	return $run->{out} . $run->{err};
}

# run_load(NODE, SCENARIO, TRANSACTIONS, [CLIENTS]): the load in the
# foreground, TRANSACTIONS transactions per client (3 clients); dies when
# pgbench fails.
sub run_load
{
	my ($node, $scen, $transactions, $clients) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run(_pgbench_command($node, $scen, $clients // 3, '-t', $transactions),
		'<', \undef, '>', \$out, '2>', \$err, IPC::Run::timeout(120))
	  or die "pgbench failed: $out$err";
	return;
}

# ledger_rows(NODE, SCENARIO): the rows of scenario SCENARIO in NODE's ledger.
sub ledger_rows
{
	my ($node, $scen) = @_;
	return $node->safe_psql('postgres', "SELECT count(*) FROM ledger WHERE scen = $scen");
}

# wait_rows(NODE, SCENARIO, N): waits (poll_query_until's bound) until
# NODE's ledger holds at least N rows of scenario SCENARIO; true when it does.
sub wait_rows
{
	my ($node, $scen, $n) = @_;
	return $node->poll_query_until('postgres',
		"SELECT count(*) >= $n FROM ledger WHERE scen = $scen");
}

# checkpoint_ok(NODE, LABEL): a test that checkpoint() of the sink s works on
# NODE (its error is shown when not); returns the rows it committed.
sub checkpoint_ok
{
	my ($node, $label) = @_;
	my ($out, $err) = ('', '');
	my $ret = $node->psql('postgres',
		"SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')",
		stdout => \$out, stderr => \$err);
	ok($ret == 0, "$label: checkpoint() works") or diag($err);
	return $out;
}

# background_sql(NODE, SQL): psql running SQL on NODE in the background (at
# most 150 s); returns what stop_load takes.
sub background_sql
{
	my ($node, $sql) = @_;
	my $run = { out => '', err => '' };
	$run->{harness} = IPC::Run::start(
		[ $node->installed_command('psql'), '-XAt', '-d', $node->connstr('postgres'), '-c', $sql ],
		'<', \undef, '>', \$run->{out}, '2>', \$run->{err}, IPC::Run::timeout(150));
	return $run;
}

# query_or_error(NODE, SQL): SQL's output on NODE without its last
# newline; its error instead (shown, and returned as "ERROR: ..."), so that
# a check whose query fails fails and the checks after it still run.
sub query_or_error
{
	my ($node, $query) = @_;
	my ($ret, $out, $err) = try_sql($node, $query);
	$out =~ s/\n\z//;
	return $out if $ret == 0;
	diag("query failed: $query\n$err");
	return "ERROR: $err";
}

# scenario_sql(SCEN, N, [SINK]): the statements that put N rows of scenario
# SCEN into the sink SINK (s) of ledger_setup's tables and into the ledger;
# ids SCEN * 10^6 + 1 ...
sub scenario_sql
{
	my ($scen, $n, $sink) = @_;
	$sink //= 's';
	my $base = $scen * 1000000;
	return qq{INSERT INTO $sink SELECT $base + g, $scen, repeat('n', 100) FROM generate_series(1, $n) g;
		INSERT INTO ledger SELECT $base + g, $scen FROM generate_series(1, $n) g;};
}

# stage_scenario(NODE, SCEN, N, [SINK]): scenario_sql in one transaction.
sub stage_scenario
{
	my ($node, $scen, $n, $sink) = @_;
	$node->safe_psql('postgres', 'BEGIN; ' . scenario_sql($scen, $n, $sink) . ' COMMIT;');
	return;
}

# scenario_rows(NODE, SCEN, [TABLE]): TABLE's (target's) rows of scenario
# SCEN on NODE.
sub scenario_rows
{
	my ($node, $scen, $table) = @_;
	$table //= 'target';
	return $node->safe_psql('postgres', "SELECT count(*) FROM $table WHERE scen = $scen");
}

# finish_background(RUN): waits for a background_sql psql to end (a
# timeout is shown); returns its output and errors.
sub finish_background
{
	my ($run) = @_;
	eval { $run->{harness}->finish; };
	diag("background psql: $@") if $@;
	return $run->{out} . $run->{err};
}

# load_ahead_counts(NODE): load_ahead_status() as a hash (started, taken,
# stopped, rows, bytes, seconds).
sub load_ahead_counts
{
	my ($node) = @_;
	my @v = split /\|/, $node->safe_psql('postgres',
		'SELECT loaders_started, checkpoints_taken, loaders_stopped, rows_loaded_ahead,
			bytes_loaded_ahead, seconds_loading_ahead FROM paimon_sink.load_ahead_status()');
	return { started => $v[0], taken => $v[1], stopped => $v[2], rows => $v[3],
		bytes => $v[4], seconds => $v[5] };
}

# waiting_loaders(NODE, [N]): waits (poll_query_until's bound) until N (1)
# loaders loaded a transaction ahead and wait for its checkpoint; true when
# they do.
sub waiting_loaders
{
	my ($node, $n) = @_;
	$n //= 1;
	return $node->poll_query_until('postgres',
		"SELECT count(*) = $n FROM pg_stat_activity WHERE backend_type = 'paimon_sink loader'
			AND query = 'waiting for its paimon_sink checkpoint'");
}

# background_verbose(NODE, SQL, SECONDS): psql running SQL on NODE in the
# background, its errors verbose (with their SQLSTATE), for at most SECONDS
# (default 150); finish_within takes it.
sub background_verbose
{
	my ($node, $sql, $secs) = @_;
	my $run = { out => '', err => '', started => time };
	$run->{harness} = IPC::Run::start(
		[ $node->installed_command('psql'), '-XAt', '-v', 'VERBOSITY=verbose',
		  '-d', $node->connstr('postgres'), '-c', $sql ],
		'<', \undef, '>', \$run->{out}, '2>', \$run->{err}, IPC::Run::timeout($secs // 150));
	return $run;
}

# finish_within(RUN, SECONDS): waits for a background_verbose psql to end;
# returns the seconds it took since it started, or undef when it had not
# ended within SECONDS of now (then it is killed).
sub finish_within
{
	my ($run, $secs) = @_;
	my $deadline = time + $secs;
	while ($run->{harness}->pumpable && time < $deadline)
	{
		eval { $run->{harness}->pump_nb; };
		usleep(50_000);
	}
	if ($run->{harness}->pumpable)
	{
		$run->{harness}->kill_kill;
		return undef;
	}
	eval { $run->{harness}->finish; };
	return time - $run->{started};
}

# holds_ledger_exactly(NODE, TARGET, LEDGER, LABEL): tests that TARGET on
# NODE holds every id of LEDGER (a plain table written in the same
# transactions) exactly once: as many rows as distinct ids as the ledger's
# rows, none missing, none phantom.
sub holds_ledger_exactly
{
	my ($node, $target, $ledger, $label) = @_;
	is( $node->safe_psql('postgres', qq{
			SELECT (SELECT count(*) FROM $target) || ' ' || (SELECT count(DISTINCT id) FROM $target)
				|| ' missing ' || (SELECT count(*) FROM (SELECT id FROM $ledger EXCEPT SELECT id FROM $target) m)
				|| ' phantom ' || (SELECT count(*) FROM (SELECT id FROM $target EXCEPT SELECT id FROM $ledger) p)}),
		$node->safe_psql('postgres', "SELECT count(*) || ' ' || count(*) FROM $ledger")
		  . ' missing 0 phantom 0',
		"$label: $target holds every committed row exactly once");
	return;
}

# start_checkpoints(NODE): checkpoint() of the sink s on NODE in the
# background, three times a second, for at most 120 s; returns what
# stop_load takes.
sub start_checkpoints
{
	my ($node) = @_;
	my $file = "$PostgreSQL::Test::Utils::tmp_check/paimon_checkpoint.sql";
	PostgreSQL::Test::Utils::append_to_file($file,
		"SELECT count(*) FROM paimon_sink.checkpoint('s');\n")
	  unless -e $file;
	my $run = { out => '', err => '' };
	$run->{harness} = IPC::Run::start(
		[ $node->installed_command('pgbench'), '-n', '-c', '1', '-f', $file, '-R', '3', '-T', '120',
		  $node->connstr('postgres') ],
		'<', \undef, '>', \$run->{out}, '2>', \$run->{err}, IPC::Run::timeout(150));
	return $run;
}

# same_staged_files(PRIMARY, STANDBY, LABEL): tests that once STANDBY has
# replayed all PRIMARY wrote, its staged folder holds the primary's files,
# names and sizes (retried for a few seconds).
sub same_staged_files
{
	my ($primary, $standby, $label) = @_;
	my ($p, $s);
	for (1 .. 10)
	{
		$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
		$p = join("\n", staged_listing($primary));
		$s = join("\n", staged_listing($standby));
		last if $p eq $s;
		usleep(250_000);
	}
	ok($p ne '', "$label: the primary has staged files");
	is($s, $p, "$label: the standby's staged folder holds the primary's files, names and sizes");
	return;
}

# sink_setup(NODE): the extension, a table target (id int, note text) and
# the sink s into it, in NODE's postgres database; true once the writers
# serve.
sub sink_setup
{
	my ($node) = @_;
	$node->safe_psql('postgres', q{
		CREATE EXTENSION paimon_sink;
		CREATE TABLE target (id int, note text);
		SELECT sink_name FROM paimon_sink.create_sink('s', 'target');
	});
	return writers_ready($node, 'postgres');
}

# book_insert(NODE, BOOK, FIRST, LAST, NOTE): one committed INSERT of the
# ids FIRST..LAST (with NOTE) into the sink s, booked in the hash BOOK.
sub book_insert
{
	my ($node, $book, $first, $last, $note) = @_;
	$node->safe_psql('postgres',
		"INSERT INTO s SELECT g, '$note' FROM generate_series($first, $last) g");
	$book->{$_} = 1 for $first .. $last;
	return;
}

# nothing_in_doubt(NODE): waits (poll_query_until's bound) until no
# prepared transaction whose gid starts with paimon_sink: is left; true
# when none is.
sub nothing_in_doubt
{
	my ($node) = @_;
	return $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'paimon\\_sink:%'");
}

# fault_paused(NODE, POINT): waits (poll_query_until's bound) until a
# process holds at the fault point POINT; true when one does.
sub fault_paused
{
	my ($node, $point) = @_;
	return $node->poll_query_until('postgres',
		"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = '$point'");
}

# windows_closed(NODE): waits (poll_query_until's bound) until no writer of
# the node holds a sync window open; true when none does.  A fault armed at
# writer_before_window_sync catches the next writer to close a window, so a
# test arms it only once the windows of earlier transactions have closed
# (paimon_sink.group_fsync_delay keeps each open that long); otherwise the
# writer that holds is the one an earlier transaction used, and the next
# transaction routed to it waits for a hand-off that never comes.
sub windows_closed
{
	my ($node) = @_;
	return $node->poll_query_until('postgres',
		"SELECT count(*) = 0 FROM pg_catalog.pg_stat_activity "
		  . "WHERE backend_type = 'paimon_sink writer' AND query LIKE 'sync window open%'");
}

# exactly_once(NODE, COMMITTED, LABEL): checkpoint() of the sink s on NODE
# commits what is staged, then the target holds every id of the hash
# COMMITTED (id => 1) exactly once and no other (count, distinct count and
# sum compared); two tests.
sub exactly_once
{
	my ($node, $committed, $label) = @_;
	my ($ret, $out, $err) = try_sql($node, "SELECT count(*) FROM paimon_sink.checkpoint('s')");
	ok($ret == 0, "$label: checkpoint() works") or diag($err);
	my @ids = keys %$committed;
	my $sum = 0;
	$sum += $_ for @ids;
	is( $node->safe_psql('postgres',
			"SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || coalesce(sum(id), 0) FROM target"),
		scalar(@ids) . ' ' . scalar(@ids) . " $sum",
		"$label: every committed row exactly once");
	return;
}

# lose_page_cache(NODE, SIZES): on the stopped NODE, what the page cache
# held since the PostgreSQL checkpoint at which staged_listing gave SIZES
# (relative path => size) is lost, as after a power cut: staged files made
# since are removed, longer ones cut back.  Returns how many it cut.
sub lose_page_cache
{
	my ($node, $sizes) = @_;
	my $root = $node->data_dir . '/pg_paimon_sink';
	my $cut = 0;
	for my $entry (staged_listing($node))
	{
		my ($relative, $size) = split / /, $entry;
		my $path = "$root/$relative";
		if (!defined $sizes->{$relative})
		{
			unlink $path;
			$cut++;
		}
		elsif ($sizes->{$relative} < $size)
		{
			truncate($path, $sizes->{$relative}) or die "truncate $path: $!";
			$cut++;
		}
	}
	return $cut;
}

# The schema-change scenario (064_schema_follow.pl, 074_schema_failover.pl):
# four targets of one shape, each with the sink that writes it and a ledger
# of what was sent.  Each case names its target, its sink, the commit user
# its rows are written and committed as, what prepare_commit() and commit()
# name (the group grp for its member g1_sink, whose other member g2_sink
# writes g2) and whether the sink upserts.  The overwrite sink's target
# holds three rows before it (ids 100..102, not in the ledger) that its
# job's first commit replaces.
my @schema_cases = (
	{ target => 'ap', sink => 'ap_sink', job => 'ap-job', call => 'ap_sink', upsert => 0 },
	{ target => 'up', sink => 'up_sink', job => 'up-job', call => 'up_sink', upsert => 1 },
	{ target => 'g1', sink => 'g1_sink', job => 'g-job', call => 'grp', upsert => 0 },
	{ target => 'ow', sink => 'ow_sink', job => 'ow-job', call => 'ow_sink', upsert => 0 });

# schema_setup(NODE): on NODE (postgres database) the extension, the four
# targets (id int PRIMARY KEY, n int2, f float4, s varchar(5), old text,
# gone text), g2, their sinks (ap_sink append, up_sink upsert with two
# buckets, g1_sink and g2_sink in the group grp, ow_sink overwrite) and a
# ledger per target (ledger_<target>: id, n bigint, f float8, s text,
# renamed text, the layout after schema_follow's changes); returns the
# cases (a list of hashes, see above).
sub schema_setup
{
	my ($node) = @_;
	my $shape = 'id int PRIMARY KEY, n int2, f float4, s varchar(5), old text, gone text';
	$node->safe_psql('postgres', qq{
		CREATE EXTENSION paimon_sink;
		CREATE TABLE ap ($shape);
		CREATE TABLE up ($shape);
		CREATE TABLE g1 ($shape);
		CREATE TABLE g2 (id int PRIMARY KEY, v int);
		CREATE TABLE ow ($shape);
		INSERT INTO ow SELECT g, g, g, 'old', 'old', 'old' FROM generate_series(100, 102) g;
		SELECT sink_name FROM paimon_sink.create_sink('ap_sink', 'ap');
		SELECT sink_name FROM paimon_sink.create_sink('up_sink', 'up', mode => 'upsert', buckets => 2);
		SELECT sink_name FROM paimon_sink.create_sink('g1_sink', 'g1');
		SELECT sink_name FROM paimon_sink.create_sink('g2_sink', 'g2');
		SELECT paimon_sink.create_sink_group('grp', ARRAY['g1_sink', 'g2_sink']);
		SELECT sink_name FROM paimon_sink.create_sink('ow_sink', 'ow', mode => 'overwrite');
	});
	$node->safe_psql('postgres',
		"CREATE TABLE ledger_$_->{target} (id int, n bigint, f float8, s text, renamed text)")
	  for @schema_cases;
	return @schema_cases;
}

# schema_write(NODE, CASE, FROM, TO, TAG): the rows FROM..TO through the
# case's sink on NODE as its commit user (old holding TAG, gone a value of
# its own), and the same into its ledger (an upsert sink's keys replaced);
# the group's other member gets a row per id in the same transaction.  A
# test that the write works.
sub schema_write
{
	my ($node, $case, $from, $to, $tag) = @_;
	my $other = $case->{call} eq 'grp'
	  ? "INSERT INTO g2_sink SELECT g, g FROM generate_series($from, $to) g;" : '';
	my ($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = '$case->{job}';
		BEGIN;
		INSERT INTO $case->{sink} (id, n, f, s, old, gone)
			SELECT g, g, g / 2.0, 's' || g, '$tag', 'gone-' || g FROM generate_series($from, $to) g;
		$other
		COMMIT;");
	is($ret, 0, "$case->{sink}: rows $from..$to ($tag) written") or diag($err);
	$node->safe_psql('postgres', "DELETE FROM ledger_$case->{target} WHERE id BETWEEN $from AND $to")
	  if $case->{upsert};
	$node->safe_psql('postgres', "INSERT INTO ledger_$case->{target}
		SELECT g, g, g / 2.0, 's' || g, '$tag' FROM generate_series($from, $to) g");
	return;
}

# schema_prepare(NODE, CASE, N): a test that checkpoint N of the case's
# commit user is prepared on NODE.
sub schema_prepare
{
	my ($node, $case, $n) = @_;
	my ($ret, $out, $err) = try_sql($node,
		"SELECT count(*) FROM paimon_sink.prepare_commit('$case->{call}', '$case->{job}', $n)");
	is($ret, 0, "$case->{call}: checkpoint $n prepared") or diag($err);
	return;
}

# schema_commit(NODE, CASE, N): a test that commit() of the checkpoints up
# to N of the case's commit user works on NODE; returns its rows as
# "checkpoint:newly_committed" in snapshot order, comma-separated (a
# group's members each give one).
sub schema_commit
{
	my ($node, $case, $n) = @_;
	my ($ret, $out, $err) = try_sql($node,
		"SELECT string_agg(checkpoint_id || ':' || newly_committed, ',' ORDER BY snapshot_id)
			FROM paimon_sink.commit('$case->{call}', '$case->{job}', $n)");
	is($ret, 0, "$case->{call}: checkpoints up to $n commit") or diag($err);
	$out =~ s/\n\z//;
	return $out;
}

# schema_follow(NODE, CASE): a test that on NODE the case's target has its
# column old renamed to renamed, n, f and s widened (bigint, float8,
# varchar(10)), gone dropped and added (text NOT NULL DEFAULT 'dflt') added.
sub schema_follow
{
	my ($node, $case) = @_;
	my $t = $case->{target};
	my ($ret, $out, $err) = try_sql($node, "ALTER TABLE $t RENAME COLUMN old TO renamed;
		ALTER TABLE $t ALTER COLUMN n TYPE bigint, ALTER COLUMN f TYPE float8,
			ALTER COLUMN s TYPE varchar(10);
		ALTER TABLE $t DROP COLUMN gone;
		ALTER TABLE $t ADD COLUMN added text NOT NULL DEFAULT 'dflt';");
	is($ret, 0, "$t: renamed, widened, dropped and added columns") or diag($err);
	return;
}

# schema_diff(NODE, CASE): "missing M, extra E" between the case's target
# on NODE (after schema_follow's changes) and its ledger, rows compared
# whole (EXCEPT ALL: a duplicated row is extra).
sub schema_diff
{
	my ($node, $case) = @_;
	my $t = $case->{target};
	my $rows = "SELECT id, n, f, s::text, renamed FROM $t";
	return query_or_error($node,
		"SELECT 'missing ' || (SELECT count(*) FROM (SELECT * FROM ledger_$t EXCEPT ALL $rows) m)
		|| ', extra ' || (SELECT count(*) FROM ($rows EXCEPT ALL SELECT * FROM ledger_$t) e)");
}

# schema_layout(NODE, TABLE): TABLE's columns and types on NODE, and the
# definitions of the sinks into it, as one string.
sub schema_layout
{
	my ($node, $table) = @_;
	return $node->safe_psql('postgres',
		"SELECT string_agg(attname || ' ' || format_type(atttypid, atttypmod), ', '
		ORDER BY attnum) FROM pg_attribute WHERE attrelid = '$table'::regclass AND attnum > 0
		AND NOT attisdropped")
	  . ' | '
	  . $node->safe_psql('postgres', "SELECT string_agg(d::text, ',' ORDER BY sink_id)
		FROM paimon_sink.sink_definition d WHERE target_table = '$table'::regclass");
}

# schema_refused(NODE, TABLE, STATEMENT, SQLSTATE, WHAT): three tests that
# STATEMENT (an ALTER TABLE reaching TABLE) is refused on NODE with
# SQLSTATE, that the error names a sink, and that TABLE and its sinks are
# as they were.
sub schema_refused
{
	my ($node, $table, $statement, $sqlstate, $what) = @_;
	my $before = schema_layout($node, $table);
	my ($ret, $out, $err) = try_sql($node, $statement);
	like($err, qr/ERROR:  $sqlstate: /, "$what is refused with $sqlstate");
	like($err, qr/[Ss]ink "\w+_sink"/, "$what: the error names the sink");
	is(schema_layout($node, $table), $before, "$what: the table and the sink are as they were");
	return;
}

# The repository's src/ folder, found from this file's place (test/perl).
sub source_dir
{
	return File::Spec->catdir(dirname(__FILE__), '..', '..', 'src');
}

# The table of a documentation page (page: a path from the repository's top,
# such as docs/security.md) that follows the line containing marker: a list
# of rows, each a list of cells (the header row first, the separator left
# out).
sub doc_table
{
	my ($page, $marker) = @_;
	my $path = File::Spec->catfile(source_dir(), "..", $page);
	open(my $fh, "<", $path) or die "cannot read $path: $!";
	my ($seen, @rows) = (0);
	while (my $line = <$fh>)
	{
		chomp $line;
		if (!$seen)
		{
			$seen = index($line, $marker) >= 0;
			next;
		}
		last unless $line =~ /^\|/;
		next if $line =~ /^\|[-| ]+\|$/;
		my @cells = map { s/^\s+|\s+$//gr } split /\|/, substr($line, 1, -1);
		push @rows, \@cells;
	}
	close $fh;
	die "no table after \"$marker\" in $path" unless @rows;
	return @rows;
}

# A C string literal's text, its escapes undone.
sub _unescape
{
	my ($text) = @_;
	$text =~ s/\\n/\n/g;
	$text =~ s/\\t/\t/g;
	$text =~ s/\\(["\\'])/$1/g;
	return $text;
}

my $literal = qr/"(?:[^"\\\n]|\\.)*"/;

# The SQL statements (and statement fragments) of every src/*.c and
# src/*/*.c: each run of adjacent string literals (string macros expanded)
# that starts with an SQL keyword in capitals, as the code writes them and
# no message does.  Returns a list of [file (its path under src/, such as
# metadata/metadata.c), line, text].
sub sql_statements
{
	my @found;
	for my $file (sort map { glob(File::Spec->catfile(source_dir(), @$_)) } ['*.c'], ['*', '*.c'])
	{
		open(my $fh, '<', $file) or die "cannot read $file: $!";
		my $src = do { local $/; <$fh> };
		close $fh;
		# comments out, keeping line numbers; character literals out
		$src =~ s{/\*(.*?)\*/}{my $c = $1; $c =~ tr/\n//cd; " $c "}gse;
		$src =~ s{//[^\n]*}{}g;
		$src =~ s/'(?:[^'\\\n]|\\.)'/0/g;
		my %macros;
		while ($src =~ /^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+((?:(?:\\\n[ \t]*)?$literal[ \t]*)+)$/mg)
		{
			my ($name, $body) = ($1, $2);
			$macros{$name} = join('', map { _unescape(substr($_, 1, -1)) } $body =~ /($literal)/g);
		}
		my $names = join('|', map { quotemeta } keys %macros) || 'NO_MACRO_HERE';
		my $piece = qr/$literal|\b(?:$names)\b/;
		while ($src =~ /((?:$piece)(?:\s*(?:$piece))*)/g)
		{
			my ($run, $at) = ($1, $-[1]);
			next if substr($src, 0, $at) =~ /#[ \t]*(?:include|define)[^\n]*\z/;
			my $text = join('',
				map { /^"/ ? _unescape(substr($_, 1, -1)) : $macros{$_} } $run =~ /($piece)/g);
			next unless $text =~ /^\s*(?:SELECT|INSERT|UPDATE|DELETE|WITH|MERGE|CREATE|COMMENT|DROP|WHEN)\b/;
			my $line = 1 + (substr($src, 0, $at) =~ tr/\n//);
			push @found, [ File::Spec->abs2rel($file, source_dir()), $line, $text ];
		}
	}
	return @found;
}

# Words that are SQL syntax, not functions, when a parenthesis follows.
my %syntax = map { $_ => 1 } qw(values in exists any all over coalesce greatest least nullif
  conflict using as options insert select from distinct filter within and or not on where
  returning set update x table group order by operator);

# A statement's text with what no name can hide in taken out: format
# directives become X, quoted literals become '', named arguments go.
sub _plain
{
	my ($text) = @_;
	$text =~ s/%%/%/g;
	$text =~ s/%[-0-9.]*(?:ll|l|z)?[sdulIL]/X/g;
	$text =~ s/'(?:[^']|'')*'/''/g;
	$text =~ s/\w+\s*=>//g;
	return $text;
}

# The function calls of a statement: a list of [schema or undef, name].
# Syntax that takes parentheses, a table's column list after INSERT INTO,
# an alias's after AS, and a common table expression are no calls.
sub _calls
{
	my ($plain) = @_;
	my %local = map { lc($_) => 1 } ($plain =~ /\b(\w+)\s+AS\s*\(/gi);
	my @calls;

	while ($plain =~ /(?<![\w.\$])(?:(\w+)\.)?([A-Za-z_]\w*)\s*\(/g)
	{
		my ($schema, $name) = ($1, $2);
		next if $syntax{ lc $name } || $local{ lc $name };
		next if substr($plain, 0, $-[0]) =~ /(?:\bINTO|\bAS)\s*\z/i;
		push @calls, [ $schema, $name ];
	}
	return @calls;
}

# Where a statement names something without its schema: a list of
# sentences (empty when every function, operator, type and relation is
# schema-qualified).  Aliases, common table expressions and the upsert
# commit's ephemeral relation (paimon_sink_changes) need none.
sub sql_problems
{
	my ($text) = @_;
	my $plain = _plain($text);
	my @problems;
	my %local = map { lc($_) => 1 } ($plain =~ /\b(\w+)\s+AS\s*\(/gi), 'paimon_sink_changes';

	for my $call (_calls($plain))
	{
		push @problems, "function $call->[1] without its schema" unless defined $call->[0];
	}
	(my $ops = $plain) =~ s/OPERATOR\(\w+\.[^)]+\)/ /g;
	# assignments (SET a = ..., a = ... in a SET list) are syntax
	$ops =~ s/(?:\bSET|,)\s*[\w.]+\s*=(?!=)/ /gi;
	while ($ops =~ /(?<![\w(*])(<>|!=|<=|>=|=|<|>|\|\||\+|-|\*|\/|~~\*?|!~~)(?![=>])/g)
	{
		my $op = $1;
		next if $op eq '*' && substr($ops, $-[1] - 1, 1) eq '(';
		push @problems, "operator $op without OPERATOR(schema.name)";
	}
	# syntax that looks an operator up by name
	while ($plain =~ /\b(LIKE|ILIKE|SIMILAR\s+TO|BETWEEN|IS\s+(?:NOT\s+)?DISTINCT\s+FROM|NATURAL|IN\s*\(|USING\s*\(|CASE\s+(?!WHEN)\S+\s+WHEN)/gi)
	{
		push @problems, "\"$1\" finds its operator by name (write OPERATOR(pg_catalog.op))";
	}
	while ($plain =~ /::\s*(?!pg_catalog\.)(\w+)/g)
	{
		push @problems, "cast to type $1 without its schema";
	}
	# (FOR [NO KEY] UPDATE SKIP LOCKED, NOWAIT: a locking clause, not a relation)
	while ($plain =~ /\b(?:FROM|JOIN|INTO|UPDATE|USING|TABLE)\s+(?!\(|X\b|SET\b|pg_catalog\.|paimon_sink\.|LATERAL\b|ROWS\s+FROM\b|SKIP\s+LOCKED\b|NOWAIT\b)(\w+)/g)
	{
		next if $local{ lc($1) };
		push @problems, "relation $1 without its schema";
	}
	return @problems;
}

# What the statements name, for planting look-alikes: functions,
# operators, types and relations, each a sorted list of names.
sub sql_names
{
	my (%functions, %operators, %types, %relations);
	for my $statement (sql_statements())
	{
		my $plain = _plain($statement->[2]);
		$functions{ lc $_->[1] } = 1 for _calls($plain);
		$operators{$1} = 1 while $plain =~ /OPERATOR\(\w+\.([^)]+)\)/g;
		$operators{$1} = 1 while $plain =~ /(?<![\w(*])(<>|<=|>=|=|<|>|\|\||\+|-|\/|~~)(?![=>])/g;
		$types{ lc $1 } = 1 while $plain =~ /::\s*(?:\w+\.)?(\w+)/g;
		$relations{ lc $1 } = 1
		  while $plain =~ /\b(?:FROM|JOIN|INTO|UPDATE|USING)\s+(?:paimon_sink|pg_catalog)\.(\w+)/g;
	}
	return (
		functions => [ sort keys %functions ],
		operators => [ sort keys %operators ],
		types => [ sort keys %types ],
		relations => [ sort keys %relations ]);
}

1;
