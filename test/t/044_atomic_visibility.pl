# Every checkpoint becomes visible at one instant, at every size, with the
# default settings (issue 32, the first "Must show").  One node with
# wal_level = logical and a test_decoding slot made before the first
# checkpoint; a reader (one psql session polling every target, and the
# sinks' snapshots, in one statement at a time) runs while these
# checkpoints commit one after another:
#   1. an append sink, 1 row; 2. the same sink, 10,000 rows; 3. the same
#   sink, 1,000,000 rows (at least paimon_sink.parallel_load_rows, whose
#   default the test keeps: no paimon_sink setting is changed);
#   4. an upsert sink, 3,000 changes, 1,000 of them updating keys already
#   in the target; 5. a sink group of two append sinks, committed together.
# Each target has a column ckpt naming the checkpoint that wrote the row.
#
# Checks:
#  - the reader: every state it saw is a state after whole checkpoints:
#    the append target's count is 0, 1, 10,001 or 1,010,001; the upsert
#    target's rows per ckpt are those before or after checkpoint 4; the
#    group's two targets hold (0, 0) or both members' rows; and an append
#    target's count always equals the row_count summed over its sink's
#    snapshots (the catalog and the target show a checkpoint together).
#  - the slot, consumed after each checkpoint (inside the server, one
#    aggregate: rows per decoded transaction, relation and checkpoint, so
#    that the 1,000,000 change lines never reach Perl): each checkpoint's
#    rows of each target arrive in exactly one decoded transaction, which
#    holds all of them; the group's two targets' rows in one and the same.
#
# What "one transaction" means for the extension's own catalog rows
# (paimon_sink.*): the decoded transaction that holds a checkpoint's target
# rows must also hold that checkpoint's snapshot row (the insert into
# paimon_sink.snapshot_log, the record that the checkpoint committed; one
# per member of a group), so that a consumer that sees the rows sees the
# snapshot with them, and no consumer sees a snapshot without its rows.
# The barrier's rows (prepare_commit's committables, written before the
# commit starts) and the committer's housekeeping after it (the committed
# files' committables, expiry) are transactions of their own by design:
# they make nothing visible in a target.  The test prints, for each
# checkpoint, the decoded transactions that carry catalog rows in its
# window, their relations, and how many carry the target's rows too.
use strict;
use warnings;
use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use PaimonSinkTest qw(writers_ready);

my $node = PostgreSQL::Test::Cluster->new('atomic');
$node->init;
# The committer, 2 writers and 2 loaders of one database, the launchers,
# and room for parallel query: the loaders always get their slots.  The
# committer's prepared transaction, one per loader and a spare.
$node->append_conf('postgresql.conf', qq{
wal_level = logical
max_replication_slots = 4
max_wal_senders = 4
max_prepared_transactions = 10
max_worker_processes = 32
});
$node->start;

sub sql { return $node->safe_psql('postgres', $_[0]); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE appended (ckpt int, id bigint);
	CREATE TABLE upserted (ckpt int, id int PRIMARY KEY, v int);
	INSERT INTO upserted SELECT 0, g, g FROM generate_series(1, 2000) g;
	CREATE TABLE ga (ckpt int, id int);
	CREATE TABLE gb (ckpt int, id int);
	SELECT sink_name FROM paimon_sink.create_sink('appended_sink', 'appended');
	SELECT sink_name FROM paimon_sink.create_sink('upserted_sink', 'upserted', mode => 'upsert');
	SELECT sink_name FROM paimon_sink.create_sink('ga_sink', 'ga');
	SELECT sink_name FROM paimon_sink.create_sink('gb_sink', 'gb');
	SELECT paimon_sink.create_sink_group('pair', ARRAY['ga_sink', 'gb_sink']);
	-- the reader's phase and its stop, unlogged: not decoded
	CREATE UNLOGGED TABLE phase (step text);
	INSERT INTO phase VALUES ('start');
	CREATE UNLOGGED TABLE reader_stop (stop boolean);
});
ok(writers_ready($node, 'postgres'), 'writers serve');
is( sql("SELECT coalesce(string_agg(name || ' = ' || setting, ', '), 'none') FROM pg_settings
		 WHERE name LIKE 'paimon\\_sink.%' AND setting IS DISTINCT FROM boot_val"),
	'none', 'every paimon_sink setting has its default');
my %sink_id = map { split /\|/ } split /\n/, sql('SELECT sink_name, sink_id FROM paimon_sink.sinks');

is(sql("SELECT lsn IS NOT NULL FROM pg_create_logical_replication_slot('atomic', 'test_decoding')"),
	't', 'a test_decoding slot before the first checkpoint');

# --- the reader: one statement (one snapshot) per poll, a line per poll
my $poll = q{
	SELECT pg_catalog.format('phase=%s appended=%s/%s upserted=%s pair=%s/%s,%s/%s',
		(SELECT step FROM public.phase),
		(SELECT count(*) FROM public.appended),
		(SELECT coalesce(sum(row_count), 0) FROM paimon_sink.snapshots WHERE sink_name = 'appended_sink'),
		(SELECT coalesce(string_agg(ckpt || ':' || n, ',' ORDER BY ckpt), 'none')
		   FROM (SELECT ckpt, count(*) AS n FROM public.upserted GROUP BY ckpt) u),
		(SELECT count(*) FROM public.ga),
		(SELECT coalesce(sum(row_count), 0) FROM paimon_sink.snapshots WHERE sink_name = 'ga_sink'),
		(SELECT count(*) FROM public.gb),
		(SELECT coalesce(sum(row_count), 0) FROM paimon_sink.snapshots WHERE sink_name = 'gb_sink'))};
# A DO block in READ COMMITTED takes a new snapshot for each statement.
my $reader_sql = qq{DO \$\$
DECLARE
	polls bigint := 0;
	state text;
	started timestamptz := clock_timestamp();
BEGIN
	LOOP
		polls := polls + 1;
		$poll INTO state;
		RAISE NOTICE 'poll %: %', polls, state;
		EXIT WHEN EXISTS (SELECT FROM public.reader_stop)
		  OR clock_timestamp() > started + interval '10 minutes';
		PERFORM pg_catalog.pg_sleep(0.01);
	END LOOP;
END \$\$};
my %reader = (out => '', err => '');
$reader{harness} = IPC::Run::start(
	[ $node->installed_command('psql'), '-XAt', '-d', $node->connstr('postgres'),
	  '-c', 'SET max_parallel_workers_per_gather = 0', '-c', $reader_sql ],
	'<', \undef, '>', \$reader{out}, '2>', \$reader{err}, IPC::Run::timeout(900));

# reader_saw(PATTERN): pumps the reader until a poll line matches PATTERN
# (a regex on the text after "poll N: "), 120 s at most; the first such
# line's state, undef when none came.
sub reader_saw
{
	my ($pattern) = @_;
	my $deadline = time + 120;
	while (time < $deadline)
	{
		eval { $reader{harness}->pump_nb; };
		return $1 if $reader{err} =~ /NOTICE:  poll \d+: ($pattern)$/m;
		last unless $reader{harness}->pumpable;
		usleep(20_000);
	}
	return undef;
}

ok(defined reader_saw('phase=start .*'), 'the reader polls');

# decoded(): consumes the slot; returns {xid => {relation => {key => rows}}}
# and the xids in the order of their first change.  key: a target's ckpt
# (its first column, so that cheap string functions find it: a regular
# expression on each of 1,000,000 lines takes seconds), a snapshot_log
# row's "sink id/commit identifier", else empty.
sub decoded
{
	my $out = sql(q{
		SELECT xid, rel, key, count(*) FROM (
			SELECT xid, lsn, rtrim(split_part(data, ' ', 2), ':') AS rel,
				CASE WHEN data LIKE 'table public.%: %: ckpt[integer]:%'
					THEN split_part(split_part(data, ' ', 4), ':', 2)
				WHEN data LIKE 'table paimon\_sink.snapshot\_log:%'
					THEN substring(data FROM 'sink_id\[integer\]:(\d+)') || '/'
						|| substring(data FROM 'commit_identifier\[bigint\]:(\d+)')
				ELSE '' END AS key
			FROM pg_logical_slot_get_changes('atomic', NULL, NULL,
				'include-xids', '1', 'skip-empty-xacts', '1')
			WHERE data LIKE 'table %') c
		GROUP BY xid, rel, key ORDER BY min(lsn), rel, key});
	my (%by, @order);
	for my $line (split /\n/, $out)
	{
		my ($xid, $rel, $key, $n) = split /\|/, $line, -1;
		push @order, $xid unless exists $by{$xid};
		$by{$xid}{$rel}{$key} = $n;
	}
	return (\%by, \@order);
}

# rows_in(DECODED, XID, RELATION, KEY): the changes of RELATION with KEY in
# transaction XID of decoded()'s answer, undef when none (creating nothing).
sub rows_in
{
	my ($by, $xid, $rel, $key) = @_;
	return undef unless exists $by->{$xid} && exists $by->{$xid}{$rel};
	return $by->{$xid}{$rel}{$key};
}

# step(LABEL, TAG, WRITE, COMMIT, AFTER, [TARGET, ROWS, SINK], ...): the
# reader's phase says stage:LABEL while WRITE stages the rows (ckpt = TAG)
# and commit:LABEL while COMMIT commits them (it returns "sink|checkpoint
# id" rows), then done:LABEL, whose first poll must show AFTER (the state
# with the whole checkpoint: checkpoint() returns once it is visible); once
# nothing is in doubt, consumes the slot and checks the decoded
# transactions: each TARGET's ROWS changes of ckpt TAG in exactly one,
# holding all of them, which holds the snapshot row of SINK too; the
# window's transactions with target or catalog rows are printed.
sub step
{
	my ($label, $tag, $write, $commit, $after, @targets) = @_;
	sql("UPDATE phase SET step = 'stage:$label'");
	my $t0 = time;
	sql($write);
	my $t1 = time;
	sql("UPDATE phase SET step = 'commit:$label'");
	my %checkpoint = map { split /\|/ } split /\n/, sql($commit);
	my $t2 = time;
	sql("UPDATE phase SET step = 'done:$label'");
	note(sprintf('%s: staged in %.2f s, committed in %.2f s', $label, $t1 - $t0, $t2 - $t1));
	ok($node->poll_query_until('postgres', 'SELECT count(*) = 0 FROM pg_prepared_xacts'),
		"$label: nothing is left prepared");
	my $done = reader_saw('phase=done:' . quotemeta($label) . ' .*');
	ok(defined $done && index("$done ", $after) >= 0,
		"$label: the reader's first poll after checkpoint() returned shows all of it ($after)")
	  or diag("$label: the reader's first poll after checkpoint() returned: " . ($done // 'none within 120 s'));

	my $t3 = time;
	my ($by, $order) = decoded();
	note(sprintf('%s: slot consumed in %.2f s', $label, time - $t3));
	my %holder;    # target => the xid of its rows
	my %target_xids;    # every xid holding target rows of the checkpoint
	for my $target (@targets)
	{
		my ($rel, $rows, $sink) = @$target;
		my @xids = grep { defined rows_in($by, $_, "public.$rel", $tag) } @$order;
		$target_xids{$_} = 1 for @xids;
		my $spread = join(', ', map { "xid $_: " . rows_in($by, $_, "public.$rel", $tag) } @xids) || 'none';
		is(scalar(@xids), 1,
			"$label: $rel\'s rows of the checkpoint arrive in exactly one decoded transaction")
		  or diag("$label: $rel\'s $rows rows arrived as $spread");
		next unless @xids;
		$holder{$rel} = $xids[0];
		is(rows_in($by, $xids[0], "public.$rel", $tag), $rows,
			"$label: that transaction holds all $rows of $rel\'s rows");
		my $snapshot = "$sink_id{$sink}/" . ($checkpoint{$sink} // '?');
		my @snap_xids = grep { defined rows_in($by, $_, 'paimon_sink.snapshot_log', $snapshot) } @$order;
		ok(defined rows_in($by, $xids[0], 'paimon_sink.snapshot_log', $snapshot),
			"$label: the transaction of $rel\'s rows holds $sink\'s snapshot row too")
		  or diag("$label: $rel\'s rows in $spread; $sink\'s snapshot row (sink id/checkpoint $snapshot) in "
			  . (@snap_xids ? join(', ', map { "xid $_" } @snap_xids) : 'no transaction'));
	}
	if (@targets > 1)
	{
		my %distinct = map { $_ => 1 } values %holder;
		is(scalar(keys %distinct), 1, "$label: the group's targets' rows arrive in one transaction")
		  or diag("$label: " . join(', ', map { "$_ in xid $holder{$_}" } sort keys %holder));
	}

	# the window's catalog transactions, and which of them hold target rows too
	my @catalog = grep { my $x = $_; grep { /^paimon_sink\./ } keys %{ $by->{$x} } } @$order;
	my %catalog = map { $_ => 1 } @catalog;
	my @lines;
	for my $xid (grep { $target_xids{$_} || $catalog{$_} } @$order)
	{
		my @what = map { "$_->[0] " . (rows_in($by, $xid, "public.$_->[0]", $tag) // 0) } @targets;
		for my $rel (sort grep { /^paimon_sink\./ } keys %{ $by->{$xid} })
		{
			my $n = 0;
			$n += $by->{$xid}{$rel}{$_} for keys %{ $by->{$xid}{$rel} };
			push @what, "$rel $n";
		}
		push @lines, "xid $xid: " . join(', ', @what);
	}
	diag(sprintf('%s: target rows in %d decoded transaction(s), catalog (paimon_sink.*) rows in %d, '
		  . 'both in %d; %s', $label, scalar(keys %target_xids), scalar(@catalog),
		scalar(grep { $target_xids{$_} } @catalog), join('; ', @lines)));
	return;
}

# 1, 2, 3: the append sink, 1, 10,000 and 1,000,000 rows
my $append_commit = "SELECT 'appended_sink', checkpoint_id FROM paimon_sink.checkpoint('appended_sink')";
my ($tag, $total) = (0, 0);
for my $rows (1, 10000, 1000000)
{
	$tag++;
	$total += $rows;
	step("append-$rows", $tag,
		"INSERT INTO appended_sink SELECT $tag, g FROM generate_series(1, $rows) g",
		$append_commit, "appended=$total/$total ", [ 'appended', $rows, 'appended_sink' ]);
}

# 4: the upsert sink, keys 1001 .. 4000: 1,000 updates of keys already there, 2,000 inserts
step('upsert-3000', 4,
	'INSERT INTO upserted_sink (ckpt, id, v) SELECT 4, g, -g FROM generate_series(1001, 4000) g',
	"SELECT 'upserted_sink', checkpoint_id FROM paimon_sink.checkpoint('upserted_sink')",
	'upserted=0:1000,4:3000 ',
	[ 'upserted', 3000, 'upserted_sink' ]);

# 5: the group's checkpoint 1 under the job's commit user, 2,000 + 3,000 rows
step('group-2000+3000', 5,
	"SET paimon_sink.commit_user = 'job-44';
	 BEGIN;
	 INSERT INTO ga_sink SELECT 5, g FROM generate_series(1, 2000) g;
	 INSERT INTO gb_sink SELECT 5, g FROM generate_series(1, 3000) g;
	 COMMIT;",
	"SELECT count(*) FROM paimon_sink.prepare_commit('pair', 'job-44', 1) \\g /dev/null
	 SELECT count(*) FROM paimon_sink.commit('pair', 'job-44', 1) \\g /dev/null
	 SELECT sink_name, commit_identifier FROM paimon_sink.snapshots WHERE commit_user = 'job-44'",
	'pair=2000/2000,3000/3000 ',
	[ 'ga', 2000, 'ga_sink' ], [ 'gb', 3000, 'gb_sink' ]);

# --- the reader stops; every state it saw
sql('INSERT INTO reader_stop VALUES (true)');
ok(eval { $reader{harness}->finish }, 'the reader ends when told, without an error')
  or diag("the reader's errors: " . join("\n", grep { !/NOTICE:  poll / } split /\n/, $reader{err}));
my @polls = $reader{err} =~ /NOTICE:  poll \d+: (.*)$/mg;
my %per_phase;
$per_phase{ (/^phase=(\S+)/)[0] }++ for @polls;
note('the reader\'s polls per phase: '
	  . join(', ', map { "$_ $per_phase{$_}" } sort keys %per_phase));
ok(($per_phase{'stage:append-1000000'} // 0) + ($per_phase{'commit:append-1000000'} // 0) > 0,
	'the reader polled while the 1,000,000 rows were staged and committed');

# the states after whole checkpoints, as written above
my %append_ok = map { $_ => 1 } (0, 1, 10001, 1010001);
my %upsert_ok = map { $_ => 1 } ('0:2000', '0:1000,4:3000');
my %pair_ok = map { $_ => 1 } ('0,0', '2000,3000');
my (%seen, @bad);
for my $state (@polls)
{
	my ($phase, $app, $app_snap, $u, $ga, $ga_snap, $gb, $gb_snap) =
	  $state =~ m{^phase=(\S+) appended=(\d+)/(\d+) upserted=(\S+) pair=(\d+)/(\d+),(\d+)/(\d+)$}
	  or do { push @bad, "unparsed: $state"; next };
	$seen{appended}{$app}++;
	$seen{upserted}{$u}++;
	$seen{pair}{"$ga,$gb"}++;
	push @bad, "$state: appended $app is no sum of whole checkpoints" unless $append_ok{$app};
	push @bad, "$state: appended $app rows, its snapshots $app_snap" unless $app == $app_snap;
	push @bad, "$state: upserted $u is no state after whole checkpoints" unless $upsert_ok{$u};
	push @bad, "$state: the group shows $ga,$gb" unless $pair_ok{"$ga,$gb"};
	push @bad, "$state: ga $ga rows, its snapshots $ga_snap; gb $gb, its snapshots $gb_snap"
	  unless $ga == $ga_snap && $gb == $gb_snap;
}
note("the reader saw, in " . scalar(@polls) . " polls: "
	  . join('; ', map { my $t = $_; "$t " . join(' ', map { "$_ ($seen{$t}{$_})" } sort keys %{ $seen{$t} }) }
		  sort keys %seen));
is(scalar(@bad), 0, 'every state the reader saw is a state after whole checkpoints')
  or diag(join("\n", @bad[0 .. ($#bad < 19 ? $#bad : 19)]));
is( sql('SELECT (SELECT count(*) FROM appended) || \' \' || (SELECT count(*) FROM upserted)
		|| \' \' || (SELECT count(*) FROM ga) || \' \' || (SELECT count(*) FROM gb)'),
	'1010001 4000 2000 3000', 'the targets hold every row once the checkpoints are done');

sql("SELECT pg_drop_replication_slot('atomic')");
$node->stop;
done_testing();
