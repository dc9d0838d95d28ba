# Sink groups (issue 18, item 4): one commit user's checkpoint N across
# several sinks, committed in ONE prepared transaction.  A job replicating
# a shop writes orders (parents) and order lines (children, with a foreign
# key to orders) through two sinks grouped as "shop", each checkpoint
# holding new orders and their lines, and an order's total equal to the sum
# of its lines.  Committed sink by sink, the lines' sink cannot commit first
# (the foreign key refuses it), and a reader between the two commits sees
# the orders without their lines.  The group commits both or neither: an
# error and a kill of the committer between the two members' loads leave
# nothing of the checkpoint visible, and the next commit() commits both
# once; a reader while the committer is paused there sees neither; a crash
# after PREPARE is committed by recovery, both members once.  The group's
# properties (the job's source position) come back from last_commit() and
# restart_job(); recover() and restart_job() restore both members together;
# end_input() ends both.  Two upsert sinks in a group keep a transfer's
# cross-table total through a kill between their applies.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(back_after_crash background_sql start_node try_sql writers_ready);

my $node = start_node('sink_groups', "restart_after_crash = on");
my $job = 'cdc-39';
my $epoch; # the fence epoch restart_job() hands the job's attempt, named from then on

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE orders (id int PRIMARY KEY, total int NOT NULL);
	CREATE TABLE order_lines (id int PRIMARY KEY, order_id int NOT NULL REFERENCES orders,
		amount int NOT NULL);
	SELECT sink_name FROM paimon_sink.create_sink('orders_sink', 'orders');
	SELECT sink_name FROM paimon_sink.create_sink('lines_sink', 'order_lines', buckets => 2,
		bucket_key => '{id}');
	SELECT paimon_sink.create_sink_group('shop', ARRAY['orders_sink', 'lines_sink']);
});
ok(writers_ready($node, 'postgres'), 'writers serve');
is(sql("SELECT group_name || ' ' || sinks::text FROM paimon_sink.sink_groups"),
	'shop {orders_sink,lines_sink}', 'the group is listed with its members in order');

# fence(): the fence_epoch argument of the job's calls, NULL before its restart
sub fence { return defined $epoch ? $epoch : 'NULL'; }

# write(n): checkpoint n's rows in one transaction of the job: orders
# 10n+1 .. 10n+3, each with two lines of amounts 1 and 2 (total 3); the
# session names the commit user until restart_job(), then the transaction
# names the job's identity on the group (write_as())
sub write_checkpoint
{
	my ($n) = @_;
	my @orders = map { 10 * $n + $_ } 1 .. 3;
	my $orders = join(',', map { "($_, 3)" } @orders);
	my $lines = join(',', map { "(2 * $_, $_, 1), (2 * $_ + 1, $_, 2)" } @orders);
	my ($set, $as) = defined $epoch
	  ? ('', "SELECT paimon_sink.write_as('shop', '$job', 0, $epoch);")
	  : ("SET paimon_sink.commit_user = '$job';", '');
	my ($ret, $out, $err) = try_sql($node, "$set
		BEGIN;
		$as
		INSERT INTO orders_sink VALUES $orders;
		INSERT INTO lines_sink VALUES $lines;
		COMMIT;");
	is($ret, 0, "the job writes checkpoint $n") or diag($err);
}

# prepare(n): the job's barrier for checkpoint n on the group, at source position 100n
sub prepare
{
	my ($n) = @_;
	my ($ret, $out, $err) = try_sql($node,
		"SELECT count(*) FROM paimon_sink.prepare_commit('shop', '$job', $n, 0,
		   '{\"lsn\": " . (100 * $n) . "}', fence_epoch => " . fence() . ')');
	is($ret, 0, "checkpoint $n is prepared on the group") or diag($err);
}

# state(): orders, lines, and whether every total matches its lines
sub state
{
	return sql(q{SELECT (SELECT count(*) FROM orders) || ' ' || (SELECT count(*) FROM order_lines)
		|| ' ' || ((SELECT coalesce(sum(total), 0) FROM orders)
		= (SELECT coalesce(sum(amount), 0) FROM order_lines))});
}

# crash_commit(point, action, group, commit user, n, what): commit(n) of
# the group with the fault point armed to crash the committer or the
# cluster; the server is back (crash-restarted) when it returns
sub crash_commit
{
	my ($point, $action, $group, $user, $n, $what) = @_;
	my $offset = -s $node->logfile;
	sql("SELECT paimon_sink.inject_fault('$point', '$action')");
	my ($ret) = try_sql($node, "SELECT * FROM paimon_sink.commit('$group', '$user', $n)");
	isnt($ret, 0, $what);
	ok(back_after_crash($node, 'postgres', $offset), "back after the crash-restart ($what)");
}

# --- checkpoint 1: both members commit in one call, one snapshot each
write_checkpoint(1);
prepare(1);
is(sql("SELECT count(*) FROM paimon_sink.prepare_commit('shop', '$job', 1, 0,
	'{\"lsn\": 100}')"), '3', 'a retry answers with the members\' committables (1 + 2 buckets)');
is(sql("SELECT string_agg(row_count || ' ' || newly_committed, ',')
	FROM paimon_sink.commit('shop', '$job', 1)"), '3 true,6 true',
	'commit() of the group returns a snapshot per member, in the group\'s order');
is(state(), '3 6 true', 'orders and lines of checkpoint 1 are visible together');
is(sql("SELECT checkpoint_id || ' ' || properties::text FROM paimon_sink.last_commit('shop', '$job')"),
	'1 {"lsn": 100}', 'last_commit() of the group returns its properties');
is(sql("SELECT paimon_sink.last_committed_checkpoint('shop', '$job')"), '1',
	'last_committed_checkpoint() takes the group');
is(sql("SELECT string_agg(s.sink_name || ':' || s.commit_identifier, ',' ORDER BY s.sink_name)
	FROM paimon_sink.snapshots s WHERE s.commit_user = '$job'"), 'lines_sink:1,orders_sink:1',
	'each member made its own snapshot of checkpoint 1');

# --- committed sink by sink, the lines could not go first: the group is what makes it work
write_checkpoint(2);
prepare(2);
my ($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.commit('lines_sink', '$job', 2)");
like($err, qr/23503/, 'the lines\' sink alone cannot commit before its orders (foreign key)');

# --- an error between the members' loads: neither member is committed
sql("SELECT paimon_sink.inject_fault('committer_between_group_members', 'error')");
($ret, $out, $err) = try_sql($node, "SELECT * FROM paimon_sink.commit('shop', '$job', 2)");
like($err, qr/fault injected at committer_between_group_members/,
	'the group\'s commit fails between its members\' loads');
is(state(), '3 6 true', 'nothing of checkpoint 2 is visible in either table');
is(sql("SELECT paimon_sink.last_committed_checkpoint('orders_sink', '$job') || ' ' ||
	paimon_sink.last_committed_checkpoint('lines_sink', '$job')"), '1 1', 'neither mark moved');

# --- killed between the members' loads: the cluster restarts, nothing of either member is there
crash_commit('committer_between_group_members', 'kill', 'shop', $job, 2,
	'the committer is killed between the members\' loads');
is(state(), '3 6 true', 'after the restart nothing of checkpoint 2 is visible');
is(sql("SELECT count(*) FROM paimon_sink.in_doubt"), '0', 'and nothing is in doubt');
is(sql("SELECT string_agg(row_count || ' ' || newly_committed, ',')
	FROM paimon_sink.commit('shop', '$job', 2)"), '3 true,6 true',
	'the next commit() commits both members');
is(state(), '6 12 true', 'checkpoint 2 is visible once, in both tables');
is(sql("SELECT string_agg(row_count || ' ' || newly_committed, ',')
	FROM paimon_sink.commit('shop', '$job', 2)"), '3 false,6 false',
	'a retry finds both committed');

# --- paused between the members' loads: a reader sees neither member's rows
write_checkpoint(3);
prepare(3);
sql("SELECT paimon_sink.inject_fault('committer_between_group_members', 'pause')");
my $commit = background_sql($node, "SELECT count(*) FROM paimon_sink.commit('shop', '$job', 3)");
ok($node->poll_query_until('postgres',
	"SELECT paused_pid IS NOT NULL FROM paimon_sink.faults WHERE point = 'committer_between_group_members'"),
	'the committer pauses with the orders loaded and the lines not yet');
is(state(), '6 12 true', 'a reader meanwhile sees neither the orders nor the lines of checkpoint 3');
sql("SELECT paimon_sink.release_fault('committer_between_group_members')");
$commit->{harness}->finish;
is($commit->{out}, "2\n", 'the paused commit completes, a snapshot per member');
is(state(), '9 18 true', 'once released, both are visible');

# --- a crash after PREPARE: recovery commits the group's transaction, both members once
write_checkpoint(4);
prepare(4);
crash_commit('committer_after_prepare', 'panic', 'shop', $job, 4,
	'the cluster crashes between PREPARE and COMMIT PREPARED');
ok($node->poll_query_until('postgres',
	"SELECT count(*) = 0 FROM pg_prepared_xacts WHERE gid LIKE 'paimon_sink:%'"),
	'recovery committed the group\'s prepared transaction');
is(state(), '12 24 true', 'both members of checkpoint 4 are visible once');
is(sql("SELECT string_agg(row_count || ' ' || newly_committed, ',')
	FROM paimon_sink.commit('shop', '$job', 4)"), '3 false,6 false',
	'a retry of commit(4) finds both committed');
is(sql("SELECT properties::text FROM paimon_sink.last_commit('shop', '$job')"), '{"lsn": 400}',
	'with checkpoint 4\'s properties');

# --- recover(): both members restored together, what came after discarded on both
write_checkpoint(5);
prepare(5);
write_checkpoint(6);
prepare(6);
is(sql("SELECT last_committed_checkpoint || ' ' || recommitted_checkpoints || ' ' ||
	discarded_checkpoints FROM paimon_sink.recover('shop', '$job', 5)"), '5 1 2',
	'recover(5) commits checkpoint 5 on both members and discards 6 on both');
is(state(), '15 30 true', 'checkpoint 5 is visible on both, 6 on neither');

# --- restart_job(): the job's restart on the group returns its properties and fences it
write_checkpoint(6);
my $restart;
($restart, $epoch) = split(/\|/, sql("SELECT checkpoint_id || ' ' || properties::text || ' ' ||
	(discarded_files > 0), fence_epoch FROM paimon_sink.restart_job('shop', '$job')"));
is($restart, '5 {"lsn": 500} true',
	'restart_job() on the group returns checkpoint 5 with its properties and discards the rest');
is(sql("SELECT string_agg(s.sink_name || ':' || u.fence_epoch || ':' || u.epoch_required, ','
	ORDER BY s.sink_name) FROM paimon_sink.commit_user_state u JOIN paimon_sink.sinks s USING (sink_id)
	WHERE u.commit_user = '$job'"), "lines_sink:$epoch:true,orders_sink:$epoch:true",
	'both members are the job\'s, fenced at the one epoch it returned');
write_checkpoint(6);
prepare(6);
is(sql("SELECT count(*) FROM paimon_sink.commit('shop', '$job', 6, $epoch)"), '2', 'checkpoint 6 commits');
is(state(), '18 36 true', 'once, on both');

# --- end_input(): both members end in one commit
write_checkpoint(7);
is(sql("SELECT string_agg(row_count::text, ',') FROM paimon_sink.end_input('shop', '$job', $epoch)"),
	'3,6', 'end_input() of the group commits both members');
is(state(), '21 42 true', 'the last rows are visible on both');
($ret, $out, $err) = try_sql($node,
	"SELECT * FROM paimon_sink.prepare_commit('shop', '$job', 8, fence_epoch => $epoch)");
like($err, qr/55000: commit user "$job" has ended its input/,
	'a prepare after the group\'s end of input is refused');

# --- upsert members: a transfer between two tables keeps the cross-table total at every checkpoint
sql(q{
	CREATE TABLE checking (id int PRIMARY KEY, balance int NOT NULL);
	CREATE TABLE savings (id int PRIMARY KEY, balance int NOT NULL);
	INSERT INTO checking SELECT g, 100 FROM generate_series(1, 4) g;
	INSERT INTO savings SELECT g, 0 FROM generate_series(1, 4) g;
	SELECT sink_name FROM paimon_sink.create_sink('checking_sink', 'checking', mode => 'upsert');
	SELECT sink_name FROM paimon_sink.create_sink('savings_sink', 'savings', mode => 'upsert',
		buckets => 2);
	SELECT paimon_sink.create_sink_group('bank', ARRAY['checking_sink', 'savings_sink']);
});
my $bank = 'bank-39';

# transfer(n): each account moves 10 more from checking to savings, as
# updates (+U) of both tables in one transaction; account 4 is closed
# (deleted from both) at checkpoint 3
sub transfer
{
	my ($n) = @_;
	my $old = 100 - 10 * ($n - 1);
	my @rows = map { "($_, " . ($old - 10) . ", '+U')" } 1 .. ($n >= 3 ? 3 : 4);
	my @saved = map { "($_, " . (10 * $n) . ", '+U')" } 1 .. ($n >= 3 ? 3 : 4);
	my $close = $n == 3 ? "INSERT INTO checking_sink (id, _row_kind) VALUES (4, '-D');
		INSERT INTO savings_sink (id, _row_kind) VALUES (4, '-D');" : '';
	my ($ret, $out, $err) = try_sql($node, "SET paimon_sink.commit_user = '$bank';
		BEGIN;
		INSERT INTO checking_sink VALUES " . join(',', @rows) . ";
		INSERT INTO savings_sink VALUES " . join(',', @saved) . ";
		$close
		COMMIT;
		SELECT count(*) FROM paimon_sink.prepare_commit('bank', '$bank', $n, 0,
		  '{\"offset\": $n}');");
	is($ret, 0, "the bank job writes and prepares transfer $n") or diag($err);
}

# totals(): accounts in each table, and whether every account's two balances add up to 100
sub totals
{
	return sql(q{SELECT (SELECT count(*) FROM checking) || ' ' || (SELECT count(*) FROM savings)
		|| ' ' || bool_and(c.balance + s.balance = 100)
		FROM checking c JOIN savings s USING (id)});
}

# account_1(): account 1's balances in checking and savings
sub account_1
{
	return sql('SELECT (SELECT balance FROM checking WHERE id = 1) || \' \' ||
		(SELECT balance FROM savings WHERE id = 1)');
}

is(totals(), '4 4 true', 'before any transfer');
transfer(1);
is(sql("SELECT count(*) FROM paimon_sink.commit('bank', '$bank', 1)"), '2',
	'the first transfer commits on both upsert members');
is(totals(), '4 4 true', 'every balance adds up');
is(account_1(),
	'90 10', 'the update of each table is applied');
transfer(2);
crash_commit('committer_between_group_members', 'kill', 'bank', $bank, 2,
	'the committer is killed between the upsert members\' applies');
is(account_1(),
	'90 10', 'neither table has transfer 2');
transfer(3);
is(sql("SELECT count(*) FROM paimon_sink.commit('bank', '$bank', 3)"), '4',
	'commit(3) commits transfers 2 and 3 on both members, a snapshot each');
is(totals(), '3 3 true', 'every balance adds up, the closed account gone from both');
is(account_1(),
	'70 30', 'each transfer applied once');
is(sql("SELECT checkpoint_id || ' ' || properties::text FROM paimon_sink.last_commit('bank', '$bank')"),
	'3 {"offset": 3}', 'the group\'s properties are transfer 3\'s');

$node->stop;
done_testing();
