# Loading ahead (issue 32, item 2) at its edges: attacks on the loader
# that loads a streamed transaction's rows while it runs and on the
# committer's side of it.  Each case checks the target against a ledger
# written in the same transactions (missing = duplicated = phantom = 0),
# that every call returns within a bounded wait, and that no loader or
# prepared transaction is left behind: several streamed transactions at
# once (into one sink, into two sinks of one target, more than there are
# loaders); PREPARE TRANSACTION of a streamed transaction; savepoints;
# direct inserts into the target by the transaction and by another
# session; a session waiting for a strong lock on the target, or for a
# key the loader holds, while the streamed transaction then waits for that
# session (a wait the loader must see through another backend); TRUNCATE,
# ALTER TABLE and drop_sink() while the loader waits; recover(); the job
# protocol's prepare_commit() and commit(); end_input(); periodic
# checkpoints; the committer, the loader (at each moment) and the writers
# terminated; load_ahead_max_wait; load_ahead switched off while a loader
# waits; nonatomic_parallel_load; a checkpoint given to a loader still
# reading (a slow target).  Every case is bounded by a timeout.  Four
# failed when the file was written, and hold the fixes: the user's
# transaction chosen as the deadlock victim against its own loader (7b), a
# wait cycle through another session that nothing broke (9), the loader of
# a dropped sink and a loader waiting when load_ahead is switched off both
# held until load_ahead_max_wait (10, 16).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use PaimonSinkTest qw(background_sql fault_paused finish_background ledger_diff ledger_setup
  load_ahead_counts nothing_in_doubt query_or_error scenario_sql stage_scenario waiting_loaders writers_ready);

my $exact = 'missing 0, duplicated 0, phantom 0';
my $rows = 20000;    # streamed: far past handoff_buffer_size

my $node = PostgreSQL::Test::Cluster->new('edges');
$node->init;
$node->append_conf('postgresql.conf',
	"paimon_sink.handoff_buffer_size = '64kB'\n"
	  . "max_connections = 40\nshared_buffers = 16MB\n"
	  . "deadlock_timeout = '200ms'\n"
	  . "log_min_messages = log\n");
$node->start;
ledger_setup($node);
ok(writers_ready($node, 'postgres'), 'writers serve');

# sql(SQL): query_or_error on $node.
sub sql { return query_or_error($node, $_[0]); }

sub loaders
{
	return $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'paimon_sink loader'");
}

sub loader_pid
{
	return $node->safe_psql('postgres',
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'paimon_sink loader' LIMIT 1");
}

# loading_loaders(N): waits until N loaders load a running transaction ahead.
sub loading_loaders
{
	my ($n) = @_;
	$n //= 1;
	return $node->poll_query_until('postgres',
		"SELECT count(*) >= $n FROM pg_stat_activity WHERE backend_type = 'paimon_sink loader'
			AND query = 'loading a streamed transaction ahead'");
}

# no_loader_left: waits (at most 10 s) until no loader runs.
sub no_loader_left
{
	for (1 .. 100)
	{
		return 1 if loaders() eq '0';
		select(undef, undef, undef, 0.1);
	}
	return 0;
}

# clean(LABEL): nothing prepared, no loader left.
sub clean
{
	my ($label) = @_;
	ok(no_loader_left(), "$label: no loader is left");
	is(sql('SELECT count(*) FROM pg_prepared_xacts'), '0', "$label: nothing is left prepared");
	return;
}

# timed(SQL): [output, seconds].
sub timed
{
	my ($query) = @_;
	my $t0 = time;
	my $out = sql($query);
	return ($out, time - $t0);
}

sub ckpt_rows
{
	my ($sink) = @_;
	$sink //= 's';
	return sql("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('$sink')");
}

# keyed(NAME): a target NAME_t with a primary key and its append sink NAME.
sub keyed
{
	my ($name) = @_;
	$node->safe_psql('postgres', qq{CREATE TABLE ${name}_t (id bigint PRIMARY KEY, note text);
		SELECT sink_name FROM paimon_sink.create_sink('$name', '${name}_t');});
	return;
}

my $scen = 100;

# --- 1. two streamed transactions into one sink at once: both commit, one checkpoint.
# One of them is loaded ahead, the other not: a checkpoint is one transaction, which can
# finish one loader's work only (a second loader's would be rolled back and done again)
{
	my ($a, $b) = ($scen + 1, $scen + 2);
	$scen += 10;
	my $before = load_ahead_counts($node);
	my $r1 = background_sql($node, 'BEGIN; ' . scenario_sql($a, $rows) . ' SELECT pg_sleep(2); COMMIT;');
	my $r2 = background_sql($node, 'BEGIN; ' . scenario_sql($b, $rows) . ' SELECT pg_sleep(2); COMMIT;');
	ok(loading_loaders(1), 'two at once: a loader loads ahead');
	is(loaders(), '1', 'two at once: one loader only, for one of the two');
	finish_background($r1);
	finish_background($r2);
	ok(waiting_loaders($node, 1), 'two at once: it waits for its checkpoint');
	is(ckpt_rows(), 2 * $rows, 'two at once: one checkpoint commits both');
	my $after = load_ahead_counts($node);
	is($after->{taken} - $before->{taken}, 1, 'two at once: the checkpoint was given to the loader');
	is($after->{stopped} - $before->{stopped}, 0, 'two at once: no loader\'s work was thrown away');
	is((ledger_diff($node, [ $a, $b ]))[0], $exact, 'two at once: the target equals the ledger');
	clean('two at once');
}

# --- 2. two at once, one commits, one aborts; checkpoints in between
{
	my ($a, $b, $c) = ($scen + 1, $scen + 2, $scen + 3);
	$scen += 10;
	my $r1 = background_sql($node, 'BEGIN; ' . scenario_sql($a, $rows) . ' SELECT pg_sleep(4); COMMIT;');
	my $r2 = background_sql($node, 'BEGIN; ' . scenario_sql($b, $rows) . ' SELECT pg_sleep(3); ROLLBACK;');
	ok(loading_loaders(1), 'commit+abort: a loader loads one of them ahead');
	is(ckpt_rows(), '0', 'commit+abort: an empty checkpoint meanwhile');
	is(loaders(), '1', 'commit+abort: the empty checkpoint stopped no loader');
	stage_scenario($node, $c, 100);
	is(ckpt_rows(), '100', 'commit+abort: a checkpoint of another session\'s rows meanwhile');
	finish_background($r1);
	finish_background($r2);
	is(ckpt_rows(), $rows, 'commit+abort: the next checkpoint commits the committed one');
	is((ledger_diff($node, [ $a, $b, $c ]))[0], $exact, 'commit+abort: the target equals the ledger');
	clean('commit+abort');
}

# --- 3. three at once, more than the two loaders; the third is not loaded ahead
{
	my @s = ($scen + 1, $scen + 2, $scen + 3);
	$scen += 10;
	my @r = map { background_sql($node, 'BEGIN; ' . scenario_sql($_, $rows) . ' SELECT pg_sleep(2); COMMIT;') } @s;
	finish_background($_) for @r;
	is(ckpt_rows(), 3 * $rows, 'three at once: one checkpoint commits all three');
	is((ledger_diff($node, \@s))[0], $exact, 'three at once: the target equals the ledger');
	clean('three at once');
}

# --- 4. two sinks into one target: a transaction into each, and one into both
$node->safe_psql('postgres', "SELECT sink_name FROM paimon_sink.create_sink('s2', 'target')");
{
	my ($a, $b, $c, $d) = ($scen + 1, $scen + 2, $scen + 3, $scen + 4);
	$scen += 10;
	my $r1 = background_sql($node, 'BEGIN; ' . scenario_sql($a, $rows) . ' SELECT pg_sleep(2); COMMIT;');
	my $r2 = background_sql($node, 'BEGIN; ' . scenario_sql($b, $rows, 's2') . ' SELECT pg_sleep(2); COMMIT;');
	finish_background($r1);
	finish_background($r2);
	ok(waiting_loaders($node, 2), 'two sinks: a loader per sink waits');
	is(ckpt_rows('s2'), $rows, 'two sinks: s2\'s checkpoint');
	is(ckpt_rows('s'), $rows, 'two sinks: s\'s checkpoint');
	stage_scenario($node, $c, $rows, 's');    # warm: nothing
	$node->safe_psql('postgres', 'BEGIN; ' . scenario_sql($d, $rows, 's2') . ' COMMIT;');
	is(ckpt_rows('s') + ckpt_rows('s2'), 2 * $rows, 'two sinks: one after another');
	is((ledger_diff($node, [ $a, $b, $c, $d ]))[0], $exact, 'two sinks: the target equals the ledger');
	my ($e, $f) = ($scen + 1, $scen + 2);
	$scen += 10;
	$node->safe_psql('postgres', 'BEGIN; ' . scenario_sql($e, $rows, 's') . scenario_sql($f, $rows, 's2') . ' COMMIT;');
	ok(waiting_loaders($node, 2), 'one transaction into both sinks: two loaders wait');
	is(ckpt_rows('s'), $rows, 'into both: s\'s checkpoint');
	is(ckpt_rows('s2'), $rows, 'into both: s2\'s checkpoint');
	is((ledger_diff($node, [ $e, $f ]))[0], $exact, 'into both: the target equals the ledger');
	clean('two sinks');
}
$node->safe_psql('postgres', "SELECT paimon_sink.drop_sink('s2', force => true)");

# --- 5. PREPARE TRANSACTION of a streamed transaction: refused, nothing loaded
{
	my $a = ++$scen;
	$scen += 9;
	my $out = sql("BEGIN; " . scenario_sql($a, $rows) . " PREPARE TRANSACTION 'ahead_2pc';");
	like($out, qr/cannot prepare a transaction that wrote to a sink/, '2PC: PREPARE TRANSACTION is refused');
	is(sql("SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'ahead_2pc'"), '0', '2PC: nothing prepared');
	ok(no_loader_left(), '2PC: the loader rolled back');
	is(ckpt_rows(), '0', '2PC: the checkpoint has no row');
	is((ledger_diff($node, [$a]))[0], $exact, '2PC: the target equals the ledger (both empty)');
	is(sql("SELECT count(*) FROM target WHERE scen = $a"), '0', '2PC: nothing in the target');
	clean('2PC');
}

# --- 6. savepoints: rows rolled back to a savepoint, rows in a released one
{
	my ($a, $b, $c, $d) = ($scen + 1, $scen + 2, $scen + 3, $scen + 4);
	$scen += 10;
	my $before = load_ahead_counts($node);
	my $out = sql('BEGIN; ' . scenario_sql($a, $rows) . ' SAVEPOINT p; ' . scenario_sql($b, $rows)
		  . ' ROLLBACK TO SAVEPOINT p; SAVEPOINT q; ' . scenario_sql($c, $rows)
		  . ' RELEASE SAVEPOINT q; ' . scenario_sql($d, $rows) . ' COMMIT;');
	unlike($out, qr/ERROR/, 'savepoints: the transaction commits');
	is(ckpt_rows(), 3 * $rows, 'savepoints: the checkpoint commits the rows kept');
	is((ledger_diff($node, [ $a, $b, $c, $d ]))[0], $exact, 'savepoints: the target equals the ledger');
	is(sql("SELECT count(*) FROM target WHERE scen = $b"), '0', 'savepoints: none of the rolled back');
	note('savepoints: checkpoints given to loaders: ' . (load_ahead_counts($node)->{taken} - $before->{taken}));
	clean('savepoints');
}

# --- 7. the streamed transaction inserting directly into its target
keyed('k');
{
	my ($out) = sql(qq{BEGIN;
		INSERT INTO k SELECT g, 'sink' FROM generate_series(1, $rows) g;
		INSERT INTO k_t VALUES (900001, 'direct');
		COMMIT;});
	unlike($out, qr/ERROR/, 'direct other key: the transaction commits');
	is(ckpt_rows('k'), $rows, 'direct other key: the checkpoint commits the streamed rows');
	is(sql('SELECT count(*) || \' \' || count(DISTINCT id) FROM k_t'), ($rows + 1) . ' ' . ($rows + 1),
		'direct other key: each row once');
	$node->safe_psql('postgres', 'TRUNCATE k_t');

	# the same key, inserted directly first: the checkpoint fails on it, as without loading ahead
	($out) = sql(qq{BEGIN;
		INSERT INTO k_t VALUES (7, 'direct');
		INSERT INTO k SELECT g, 'sink' FROM generate_series(1, $rows) g;
		COMMIT;});
	unlike($out, qr/ERROR/, 'direct same key: the transaction commits');
	my ($ck, $secs) = timed("SELECT sum(row_count) FROM paimon_sink.checkpoint('k')");
	like($ck, qr/23505|duplicate key/, 'direct same key: the checkpoint fails on the duplicate');
	cmp_ok($secs, '<', 30, 'direct same key: within a bounded wait');
	is(sql('SELECT count(*) FROM k_t'), '1', 'direct same key: nothing of the checkpoint applied');
	$node->safe_psql('postgres', "DELETE FROM k_t WHERE id = 7");
	is(ckpt_rows('k'), $rows, 'direct same key: the retry commits every streamed row');
	is(sql('SELECT count(*) || \' \' || count(DISTINCT id) FROM k_t'), "$rows $rows",
		'direct same key: each row once');
	clean('direct inserts');
	$node->safe_psql('postgres', 'TRUNCATE k_t');

	# a plain session inserting a key the loader holds waits for the checkpoint
	$node->safe_psql('postgres', "BEGIN; INSERT INTO k SELECT g, 'sink' FROM generate_series(1, $rows) g; COMMIT;");
	ok(waiting_loaders($node, 1), 'session on a held key: the loader waits');
	my $s = background_sql($node, "SET statement_timeout = '60s'; INSERT INTO k_t VALUES (5, 'session');");
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE 'SET statement_timeout%' AND wait_event_type = 'Lock'"),
		'session on a held key: the session waits for the loader');
	($ck, $secs) = timed("SELECT sum(row_count) FROM paimon_sink.checkpoint('k')");
	is($ck, $rows, 'session on a held key: the checkpoint commits');
	cmp_ok($secs, '<', 20, 'session on a held key: promptly');
	like(finish_background($s), qr/duplicate key/, 'session on a held key: the session then fails on the duplicate');
	is(sql('SELECT count(*) || \' \' || count(DISTINCT id) FROM k_t'), "$rows $rows",
		'session on a held key: each row once');
	clean('session on a held key');
	$node->safe_psql('postgres', 'TRUNCATE k_t');
}

# --- 7b. the loader blocked on a key the transaction inserted directly, and the
# transaction then inserting (and deleting again) a key the loader already loaded: a real
# lock cycle, which the deadlock detector broke by failing the USER's transaction when its
# check ran first (the loader's own check ran when there was no cycle yet).  Without
# loading ahead this transaction commits and its checkpoint commits every row.  The
# loader's COPY now waits for a lock at most half of deadlock_timeout: it gives way.
{
	my $out = sql(qq{BEGIN;
		INSERT INTO k_t VALUES (7, 'direct');
		INSERT INTO k SELECT g, 'sink' FROM generate_series(1, $rows) g;
		SELECT pg_sleep(3);
		DELETE FROM k_t WHERE id = 7;
		INSERT INTO k_t VALUES (3, 'direct');
		DELETE FROM k_t WHERE id = 3;
		COMMIT;});
	unlike($out, qr/deadlock detected/, 'loader blocked on the transaction: the transaction is not the deadlock victim');
	note("loader blocked on the transaction: the transaction said: $out");
	my $ck = sql("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('k')");
	is($ck, ($out =~ /ERROR/ ? '0' : $rows), 'loader blocked on the transaction: the checkpoint commits what it committed');
	is(sql('SELECT count(*) - count(DISTINCT id) FROM k_t'), '0', 'loader blocked on the transaction: no key twice');
	clean('loader blocked on the transaction');
	$node->safe_psql('postgres', 'TRUNCATE k_t');
}

# --- 8. a session queued for a strong lock on the target behind the loader, then the
# streamed transaction reads the target: it holds a lock on the target already (its
# writes into the sink took it), so it is not queued behind the session
{
	$node->safe_psql('postgres', 'TRUNCATE k_t');
	my $t0 = time;
	my $x = background_sql($node, qq{SET statement_timeout = '20s'; BEGIN;
		INSERT INTO k SELECT g, 'sink' FROM generate_series(1, $rows) g;
		SELECT pg_sleep(3);
		SELECT 'read ' || count(*) FROM k_t;
		COMMIT;});
	ok(loading_loaders(1), 'lock queue: a loader loads the transaction ahead');
	my $s = background_sql($node, q{SET lock_timeout = '40s'; BEGIN; LOCK TABLE k_t IN ACCESS EXCLUSIVE MODE; SELECT 'locked'; COMMIT;});
	my $out = finish_background($x);
	my $secs = time - $t0;
	like($out, qr/read 0.*COMMIT|COMMIT/s,
		'lock queue: the transaction reading its target behind a queued LOCK TABLE commits');
	note("lock queue: the transaction ended after $secs s: $out");
	cmp_ok($secs, '<', 15, 'lock queue: within a bounded wait, not its statement_timeout');
	my $sout = finish_background($s);
	note("lock queue: the LOCK TABLE session: $sout");
	ckpt_rows('k');
	clean('lock queue');
	$node->safe_psql('postgres', 'TRUNCATE k_t');
}

# --- 9. the streamed transaction waits for a session that waits for the loader.  The
# session holds a row the transaction then updates, and inserts a key the loader loaded
# from the transaction's rows: the session waits for the loader's transaction, the
# transaction for the session, the loader (on its latch, unseen by the deadlock detector)
# for the transaction.  Looking only at the transaction's direct blockers, nothing broke
# the cycle: the transaction waited until its statement_timeout (for ever without one).
# The loader now gives way to anyone who waits for it, and rolls back.
{
	$node->safe_psql('postgres', 'CREATE TABLE r (id int PRIMARY KEY, v int); INSERT INTO r VALUES (1, 0);');
	my $t0 = time;
	my $x = background_sql($node, qq{SET statement_timeout = '20s'; BEGIN;
		INSERT INTO k SELECT g, 'sink' FROM generate_series(1, $rows) g;
		SELECT pg_sleep(4);
		UPDATE r SET v = v + 1 WHERE id = 1;
		COMMIT;});
	ok(loading_loaders(1), 'row lock: a loader loads the transaction ahead');
	sleep(2);
	my $s = background_sql($node, q{SET statement_timeout = '40s'; BEGIN; UPDATE r SET v = v + 10 WHERE id = 1;
		INSERT INTO k_t VALUES (5, 'session'); COMMIT;});
	my $out = finish_background($x);
	my $secs = time - $t0;
	like($out, qr/COMMIT/, 'row lock: the transaction commits');
	note("row lock: the transaction ended after $secs s: $out");
	cmp_ok($secs, '<', 15, 'row lock: within a bounded wait, not its statement_timeout');
	my $sout = finish_background($s);
	note("row lock: the session: $sout");
	my $ck = sql("SELECT sum(row_count) FROM paimon_sink.checkpoint('k')");
	note("row lock: the checkpoint: $ck");
	is(sql('SELECT count(*) - count(DISTINCT id) FROM k_t'), '0', 'row lock: no key twice');
	clean('row lock');
	# whatever is left of k: start afresh
	sql("SELECT paimon_sink.drop_sink('k', force => true)");
	$node->safe_psql('postgres', 'DROP TABLE k_t');
	keyed('k');
}

# --- 9b. a checkpoint while the loader is still reading (a slow target): given to it
# as it reads, the committer waits for it
{
	# one stream (no bucket key), so that its chunk of 64kB fills and is streamed
	$node->safe_psql('postgres', "SELECT sink_name FROM paimon_sink.create_sink('u', 'target')");
	$node->safe_psql('postgres', 'INSERT INTO slow_load VALUES (true)');
	my $a = ++$scen;
	my $n = 1500;    # streamed (two chunks of 64kB are buffered first), 10 ms a row in the trigger
	my $before = load_ahead_counts($node);
	stage_scenario($node, $a, $n, 'u');
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'paimon_sink loader'
				AND query <> 'waiting for its paimon_sink checkpoint'"),
		'slow target: the loader still reads when the transaction committed');
	my ($ck, $secs) = timed("SELECT sum(row_count) FROM paimon_sink.checkpoint('u')");
	is($ck, $n, 'slow target: the checkpoint commits the rows');
	note("slow target: checkpoint() took $secs s");
	is(load_ahead_counts($node)->{taken} - $before->{taken}, 1, 'slow target: the checkpoint was given to the reading loader');
	is((ledger_diff($node, [$a]))[0], $exact, 'slow target: the target equals the ledger');
	$node->safe_psql('postgres', 'DELETE FROM slow_load');
	sql("SELECT paimon_sink.drop_sink('u', force => true)");
	clean('slow target');
}

# --- 9c. the writers terminated while the transaction streams (between two statements)
{
	my ($a, $b) = ($scen + 1, $scen + 2);
	$scen += 10;
	my $x = background_sql($node, 'BEGIN; ' . scenario_sql($a, $rows) . ' SELECT pg_sleep(3); ' . scenario_sql($b, $rows) . ' COMMIT;');
	ok(loading_loaders(1), 'writers terminated while streaming: a loader loads ahead');
	sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'paimon_sink writer'");
	my $out = finish_background($x);
	note("writers terminated while streaming: the transaction said: $out");
	ok(writers_ready($node, 'postgres'), 'writers terminated while streaming: they serve again');
	my ($ck, $secs) = timed("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')");
	note("writers terminated while streaming: the checkpoint: $ck");
	is((ledger_diff($node, [ $a, $b ]))[0], $exact, 'writers terminated while streaming: the target equals the ledger');
	clean('writers terminated while streaming');
}

# --- 9d. the committer terminated while the loader loads a running transaction, and
# while it loads the rest of the checkpoint given to it
{
	my $a = ++$scen;
	my $x = background_sql($node, 'BEGIN; ' . scenario_sql($a, $rows) . ' SELECT pg_sleep(3); COMMIT;');
	ok(loading_loaders(1), 'committer terminated while loading: a loader loads ahead');
	sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'paimon_sink committer'");
	my $xout = finish_background($x);
	note("committer terminated while loading: the transaction said: $xout");
	ok(writers_ready($node, 'postgres'), 'committer terminated while loading: workers serve again');
	ok(no_loader_left(), 'committer terminated while loading: the loader rolled back');
	is(ckpt_rows(), sql("SELECT count(*) FROM ledger WHERE scen = $a"),
		'committer terminated while loading: the checkpoint commits what the transaction committed');
	# seen: the transaction fails with "lost the sink writer while handing off rows" (the
	# committer's restart takes the writers' queues with it); not loading ahead's promise
	note('committer terminated while loading: the streamed transaction '
		  . ($xout =~ /COMMIT/ ? 'committed' : 'failed'));
	is((ledger_diff($node, [$a]))[0], $exact, 'committer terminated while loading: the target equals the ledger');

	for my $point ('loader_ahead_assigned', 'loader_after_prepare')
	{
		my $b = ++$scen;
		stage_scenario($node, $b, $rows);
		ok(waiting_loaders($node, 1), "committer terminated at $point: the loader waits");
		sql("SELECT paimon_sink.inject_fault('$point', 'pause', 1)");
		my $run = background_sql($node, "SELECT sum(row_count) FROM paimon_sink.checkpoint('s')");
		ok(fault_paused($node, $point), "committer terminated at $point: paused there");
		sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'paimon_sink committer'");
		sql('SELECT paimon_sink.clear_faults()');
		note("committer terminated at $point: the checkpoint said: " . finish_background($run));
		ok(writers_ready($node, 'postgres'), "committer terminated at $point: workers serve again");
		my ($ck, $secs) = timed("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')");
		cmp_ok($secs, '<', 30, "committer terminated at $point: the retry within a bounded wait");
		ok(nothing_in_doubt($node), "committer terminated at $point: nothing in doubt");
		is((ledger_diff($node, [$b]))[0], $exact, "committer terminated at $point: the target equals the ledger");
		clean("committer terminated at $point");
	}
}

# --- 10. TRUNCATE, ALTER TABLE of the target and drop_sink() while the loader waits
for my $ddl ('TRUNCATE k_t', 'ALTER TABLE k_t ADD COLUMN extra int')
{
	$node->safe_psql('postgres', "BEGIN; INSERT INTO k SELECT g, 'sink' FROM generate_series(1, $rows) g; COMMIT;");
	ok(waiting_loaders($node, 1), "$ddl: the loader waits");
	my $d = background_sql($node, "SET lock_timeout = '100s'; $ddl;");
	ok( $node->poll_query_until('postgres',
			"SELECT count(*) = 1 FROM pg_stat_activity WHERE query LIKE 'SET lock_timeout%' AND wait_event_type = 'Lock'"),
		"$ddl: it waits for the loader");
	my ($ck, $secs) = timed("SELECT sum(row_count) FROM paimon_sink.checkpoint('k')");
	is($ck, $rows, "$ddl: the checkpoint commits the rows loaded ahead");
	cmp_ok($secs, '<', 20, "$ddl: the checkpoint is not held up by the DDL queued behind the loader");
	my $t0 = time;
	my $dout = finish_background($d);
	unlike($dout, qr/ERROR/, "$ddl: then runs");
	note("$ddl: after $secs s + " . (time - $t0) . " s");
	clean($ddl);
	$node->safe_psql('postgres', 'TRUNCATE k_t');
}
{
	$node->safe_psql('postgres', "BEGIN; INSERT INTO k SELECT g, 'sink' FROM generate_series(1, $rows) g; COMMIT;");
	ok(waiting_loaders($node, 1), 'drop_sink: the loader waits');
	my ($out, $secs) = timed("SELECT paimon_sink.drop_sink('k', force => true)");
	unlike($out, qr/ERROR/, 'drop_sink: the sink is dropped');
	cmp_ok($secs, '<', 20, 'drop_sink: within a bounded wait');
	# the loader of a dropped sink held its transaction and RowExclusiveLock on the target
	# until load_ahead_max_wait; it now lets go once the sink's staged files are removed
	ok(no_loader_left(), 'drop_sink: the loader of the dropped sink is gone (not held for load_ahead_max_wait)');
	is(sql('SELECT count(*) FROM k_t'), '0', 'drop_sink: nothing of it in the target');
	($out, $secs) = timed("TRUNCATE k_t");
	cmp_ok($secs, '<', 10, 'drop_sink: the target is free again');
	clean('drop_sink');
	$node->safe_psql('postgres', 'DROP TABLE k_t');
}

# --- 11. a job's commit user: prepare_commit + commit; recover() while a loader waits; end_input()
{
	my $a = ++$scen;
	$scen += 9;
	my $before = load_ahead_counts($node);
	$node->safe_psql('postgres', "SET paimon_sink.commit_user = 'job-a'; BEGIN; " . scenario_sql($a, $rows) . ' COMMIT;');
	ok(waiting_loaders($node, 1), 'job protocol: the loader waits');
	is(sql("SELECT sum(row_count) FROM paimon_sink.prepare_commit('s', 'job-a', 1)"), $rows,
		'job protocol: prepare_commit(1)');
	ok(waiting_loaders($node, 1), 'job protocol: prepare_commit stops no loader');
	is(sql("SELECT sum(row_count) FROM paimon_sink.commit('s', 'job-a', 1)"), $rows, 'job protocol: commit(1)');
	is(load_ahead_counts($node)->{taken} - $before->{taken}, 1, 'job protocol: the commit was given to the loader');
	is((ledger_diff($node, [$a]))[0], $exact, 'job protocol: the target equals the ledger');

	# recover() while a loader holds the transaction's rows: they are fenced, never committed
	my $b = ++$scen;
	$node->safe_psql('postgres', "SET paimon_sink.commit_user = 'job-a'; BEGIN; " . scenario_sql($b, $rows) . ' COMMIT;');
	ok(waiting_loaders($node, 1), 'recover: the loader waits');
	like(sql("SELECT * FROM paimon_sink.recover('s', 'job-a', 1)"), qr/^1\|/, 'recover: restored to 1');
	is(sql("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.prepare_commit('s', 'job-a', 2)"), '0',
		'recover: the next checkpoint has none of the fenced rows');
	is(sql("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.commit('s', 'job-a', 2)"), '0',
		'recover: its commit applies none');
	is(sql("SELECT count(*) FROM target WHERE scen = $b"), '0', 'recover: nothing of the fenced rows in the target');
	$node->safe_psql('postgres', "DELETE FROM ledger WHERE scen = $b");    # the source replays them:
	$node->safe_psql('postgres', "SET paimon_sink.commit_user = 'job-a'; BEGIN; " . scenario_sql($b, $rows) . ' COMMIT;');
	is(sql("SELECT sum(row_count) FROM paimon_sink.prepare_commit('s', 'job-a', 3)"), $rows, 'recover: the replay');
	is(sql("SELECT sum(row_count) FROM paimon_sink.commit('s', 'job-a', 3)"), $rows, 'recover: committed once');
	is((ledger_diff($node, [ $a, $b ]))[0], $exact, 'recover: the target equals the ledger');

	# end_input()
	my $c = ++$scen;
	$node->safe_psql('postgres', "SET paimon_sink.commit_user = 'job-a'; BEGIN; " . scenario_sql($c, $rows) . ' COMMIT;');
	ok(waiting_loaders($node, 1), 'end_input: the loader waits');
	is(sql("SELECT sum(row_count) FROM paimon_sink.end_input('s', 'job-a')"), $rows, 'end_input commits');
	is((ledger_diff($node, [$c]))[0], $exact, 'end_input: the target equals the ledger');
	clean('job protocol');
}

# --- 12. periodic checkpoints spanning a long streamed transaction
{
	$node->safe_psql('postgres', "SELECT sink_name FROM paimon_sink.create_sink('p', 'target', checkpoint_interval => '500ms')");
	my ($a, $b) = ($scen + 1, $scen + 2);
	$scen += 10;
	my $x = background_sql($node, 'BEGIN; ' . scenario_sql($a, $rows, 'p') . ' SELECT pg_sleep(2); '
		  . scenario_sql($a + 5, $rows, 'p') . ' SELECT pg_sleep(2); COMMIT;');
	for my $i (1 .. 5)
	{
		$node->safe_psql('postgres', 'BEGIN; ' . scenario_sql($b, 10, 'p') =~ s/\+ g/+ g + $i * 100/gr . ' COMMIT;');
		select(undef, undef, undef, 0.5);
	}
	finish_background($x);
	ok( $node->poll_query_until('postgres',
			"SELECT (SELECT count(*) FROM target WHERE scen IN ($a, $a + 5, $b)) = (SELECT count(*) FROM ledger WHERE scen IN ($a, $a + 5, $b))"),
		'periodic: the periodic checkpoints commit everything');
	is((ledger_diff($node, [ $a, $a + 5, $b ]))[0], $exact, 'periodic: the target equals the ledger');
	sql("SELECT paimon_sink.drop_sink('p', force => true)");
	clean('periodic');
}

# --- 13. the committer terminated while the loader waits
{
	my $a = ++$scen;
	$scen += 9;
	stage_scenario($node, $a, $rows);
	ok(waiting_loaders($node, 1), 'committer terminated: the loader waits');
	sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'paimon_sink committer'");
	ok(no_loader_left(), 'committer terminated: the loader rolls back');
	ok(writers_ready($node, 'postgres'), 'committer terminated: workers serve again');
	is(ckpt_rows(), $rows, 'committer terminated: the checkpoint commits the rows');
	is((ledger_diff($node, [$a]))[0], $exact, 'committer terminated: the target equals the ledger');
	clean('committer terminated');
}

# --- 14. the loader terminated at each moment
for my $moment (
	[ 'loader_ahead_loading', 'stage' ],
	[ 'loader_ahead_waiting', 'stage' ],
	[ 'loader_ahead_assigned', 'checkpoint' ],
	[ 'loader_before_prepare', 'checkpoint' ],
	[ 'loader_after_prepare', 'checkpoint' ])
{
	my ($point, $when) = @$moment;
	my $a = ++$scen;
	sql("SELECT paimon_sink.inject_fault('$point', 'pause', 1)");
	my ($run, $x);
	if ($when eq 'stage')
	{
		$x = background_sql($node, 'BEGIN; ' . scenario_sql($a, $rows) . ' COMMIT;');
	}
	else
	{
		stage_scenario($node, $a, $rows);
		ok(waiting_loaders($node, 1), "loader terminated at $point: it loaded ahead");
		$run = background_sql($node, "SELECT sum(row_count) FROM paimon_sink.checkpoint('s')");
	}
	ok(fault_paused($node, $point), "loader terminated at $point: paused there");
	my $pid = sql("SELECT paused_pid FROM paimon_sink.faults WHERE point = '$point'");
	sql("SELECT pg_terminate_backend($pid)");
	sql('SELECT paimon_sink.clear_faults()');
	finish_background($x) if $x;
	my $first = $run ? finish_background($run) : '';
	note("loader terminated at $point: the checkpoint said: $first") if $run;
	my $t0 = time;
	my $ck = ckpt_rows();
	cmp_ok(time - $t0, '<', 30, "loader terminated at $point: the next checkpoint within a bounded wait");
	ok(nothing_in_doubt($node), "loader terminated at $point: nothing in doubt");
	is((ledger_diff($node, [$a]))[0], $exact, "loader terminated at $point: the target equals the ledger");
	clean("loader terminated at $point");
}

# --- 15. the writers terminated while the loader waits
{
	my $a = ++$scen;
	stage_scenario($node, $a, $rows);
	ok(waiting_loaders($node, 1), 'writers terminated: the loader waits');
	sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'paimon_sink writer'");
	ok(writers_ready($node, 'postgres'), 'writers terminated: they serve again');
	my ($ck, $secs) = timed("SELECT coalesce(sum(row_count), 0) FROM paimon_sink.checkpoint('s')");
	is($ck, $rows, 'writers terminated: the checkpoint commits the rows');
	is((ledger_diff($node, [$a]))[0], $exact, 'writers terminated: the target equals the ledger');
	clean('writers terminated');
}

# --- 16. load_ahead_max_wait reached; load_ahead switched off while a loader waits
{
	$node->safe_psql('postgres', "ALTER SYSTEM SET paimon_sink.load_ahead_max_wait = '2s'; SELECT pg_reload_conf();");
	sleep(1);
	my $a = ++$scen;
	my $before = load_ahead_counts($node);
	stage_scenario($node, $a, $rows);
	ok(waiting_loaders($node, 1), 'max wait: the loader waits');
	ok(no_loader_left(), 'max wait: it gives up after load_ahead_max_wait');
	is(ckpt_rows(), $rows, 'max wait: the checkpoint loads the rows the usual way');
	is(load_ahead_counts($node)->{taken}, $before->{taken}, 'max wait: no checkpoint was given to it');
	is((ledger_diff($node, [$a]))[0], $exact, 'max wait: the target equals the ledger');
	$node->safe_psql('postgres', "ALTER SYSTEM RESET paimon_sink.load_ahead_max_wait; SELECT pg_reload_conf();");
	sleep(1);

	my $b = ++$scen;
	stage_scenario($node, $b, $rows);
	ok(waiting_loaders($node, 1), 'switched off: the loader waits');
	$node->safe_psql('postgres', 'ALTER SYSTEM SET paimon_sink.load_ahead = off; SELECT pg_reload_conf();');
	# the loader already waiting kept its transaction, locks and xmin until its checkpoint
	# or load_ahead_max_wait; the docs say off holds nothing
	ok(no_loader_left(), 'switched off: the waiting loader lets go (off holds nothing between checkpoints)');
	is(ckpt_rows(), $rows, 'switched off: the checkpoint commits');
	is((ledger_diff($node, [$b]))[0], $exact, 'switched off: the target equals the ledger');
	$node->safe_psql('postgres', 'ALTER SYSTEM RESET paimon_sink.load_ahead; SELECT pg_reload_conf();');
	sleep(1);
	clean('max wait / off');
}

# --- 17. nonatomic_parallel_load on at the same time
{
	$node->safe_psql('postgres', "ALTER SYSTEM SET paimon_sink.nonatomic_parallel_load = on;
		ALTER SYSTEM SET paimon_sink.parallel_load_rows = 1000; SELECT pg_reload_conf();");
	sleep(1);
	my ($a, $b, $c) = ($scen + 1, $scen + 2, $scen + 3);
	$scen += 10;
	my $before = load_ahead_counts($node);
	stage_scenario($node, $a, $rows);
	stage_scenario($node, $b, 100);
	ok(waiting_loaders($node, 1), 'nonatomic: the loader waits');
	is(ckpt_rows(), $rows + 100, 'nonatomic: the checkpoint commits both');
	is(load_ahead_counts($node)->{taken} - $before->{taken}, 1, 'nonatomic: given to the loader, whole');
	# a large checkpoint split over loaders while another streamed transaction is loaded ahead
	my $x = background_sql($node, 'BEGIN; ' . scenario_sql($c, $rows) . ' SELECT pg_sleep(3); COMMIT;');
	ok(loading_loaders(1), 'nonatomic: a loader loads ahead');
	stage_scenario($node, $c + 1, 5000);
	is(ckpt_rows(), 5000, 'nonatomic: a split checkpoint meanwhile');
	finish_background($x);
	is(ckpt_rows(), $rows, 'nonatomic: then the streamed transaction');
	is((ledger_diff($node, [ $a, $b, $c, $c + 1 ]))[0], $exact, 'nonatomic: the target equals the ledger');
	$node->safe_psql('postgres', "ALTER SYSTEM RESET paimon_sink.nonatomic_parallel_load;
		ALTER SYSTEM RESET paimon_sink.parallel_load_rows; SELECT pg_reload_conf();");
	clean('nonatomic');
}

# --- the whole target against the whole ledger, and the server log
is((ledger_diff($node))[0], $exact, 'the whole target equals the whole ledger');
my $log = slurp_file($node->logfile);
my @bad = grep { /PANIC|TRAP|terminated by signal|server process .* was terminated/ } split /\n/, $log;
is(scalar(@bad), 0, 'no PANIC, assertion or crashed worker in the server log') or diag(join("\n", @bad));
my @errors = grep { /ERROR/ } split /\n/, $log;
note('server log ERROR lines: ' . scalar(@errors));
note($_) for @errors[ 0 .. ($#errors < 60 ? $#errors : 60) ];

$node->stop;
done_testing();
