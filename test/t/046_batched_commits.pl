# Periodic checkpoints of many sinks committed together (issue 32, item 5):
# the sinks of a database due together share one barrier round and one
# prepared transaction, each with its own snapshot.  24 sinks (four of
# them upsert sinks) with a checkpoint interval of 1 s are written in
# rounds, each round one transaction that writes a row into every sink and
# the same ids into a ledger.  Their snapshots come in far fewer
# transactions than snapshots (snapshot_log.committed_at is the
# transaction's start, one per transaction); each target holds its
# ledger's rows exactly once.  A sink whose target refuses a row (a unique
# violation) fails on its own while the others commit in their batch, and
# commits once the row is out of the way.  A crash after a batch's PREPARE
# (recovery commits every member), a crash between two members' loads and
# an error there (every member commits on its own) leave every target
# exact: nothing missing, duplicated or phantom.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use PaimonSinkTest qw(back_after_crash start_node try_sql writers_ready);

my $sinks = 24;
my $node = start_node('batched', "restart_after_crash = on\nlog_min_messages = log");

sub sql { return $node->safe_psql('postgres', shift); }

# Sinks b01..b24 into t01..t24, created in one transaction (so that the
# committer schedules them at once: one deadline); b01..b04 are upsert
# sinks; t05 refuses a duplicate id (the failing member below).
sql('CREATE EXTENSION paimon_sink');
my $create = "BEGIN;\nCREATE TABLE ledger (sink int, id bigint, PRIMARY KEY (sink, id));\n";
for my $i (1 .. $sinks)
{
	my $n = sprintf('%02d', $i);
	my $upsert = $i <= 4;
	$create .= "CREATE TABLE t$n (id bigint" . ($upsert ? ' PRIMARY KEY' : '') . ", round int);\n";
	$create .= "CREATE UNIQUE INDEX ON t$n (id);\n" if $i == 5;
	$create .= "SELECT sink_name FROM paimon_sink.create_sink('b$n', 't$n', "
	  . "checkpoint_interval => '1s'" . ($upsert ? ", mode => 'upsert'" : '') . ");\n";
}
sql($create . 'COMMIT;');
# write_round(r): one transaction writes id 1000 r + sink number into each sink and the ledger
sql(qq{CREATE FUNCTION write_round(r int) RETURNS void LANGUAGE plpgsql AS \$\$
	BEGIN
		FOR i IN 1 .. $sinks LOOP
			EXECUTE format('INSERT INTO %I (id, round) VALUES (\$1, \$2)', 'b' || lpad(i::text, 2, '0'))
				USING 1000 * r + i, r;
			INSERT INTO ledger VALUES (i, 1000 * r + i);
		END LOOP;
	END \$\$});
ok(writers_ready($node, 'postgres'), 'writers serve');

my $round = 0;

# write_rounds(n, [pause]): n rounds, one transaction each, pause seconds apart
sub write_rounds
{
	my ($n, $pause) = @_;
	for (1 .. $n)
	{
		$round++;
		sql("SELECT write_round($round)");
		usleep($pause * 1_000_000) if $pause;
	}
	return;
}

# The ledger's rows of every sink against its target: missing, duplicated, phantom.
my $diff_sql = join(' UNION ALL ', map {
		my $n = sprintf('%02d', $_);
		"SELECT $_ AS sink, (SELECT count(*) FROM (SELECT id FROM ledger WHERE sink = $_ "
		  . "EXCEPT ALL SELECT id FROM t$n) m) AS missing, "
		  . "(SELECT count(*) - count(DISTINCT id) FROM t$n) AS duplicated, "
		  . "(SELECT count(*) FROM (SELECT id FROM t$n EXCEPT SELECT id FROM ledger "
		  . "WHERE sink = $_) p) AS phantom"
	} 1 .. $sinks);

sub exact
{
	return sql("SELECT 'missing ' || sum(missing) || ', duplicated ' || sum(duplicated) "
		  . "|| ', phantom ' || sum(phantom) FROM ($diff_sql) d");
}

# all_arrived(): waits (up to poll_query_until's bound) until no sink misses a ledger row
sub all_arrived
{
	return $node->poll_query_until('postgres',
		"SELECT coalesce(sum(missing), 0) = 0 FROM ($diff_sql) d");
}

# snapshots_and_transactions(where): the count of the batched sinks'
# snapshots (those the condition where, "AND ...", picks) and of their
# distinct transactions
sub snapshots_and_transactions
{
	my ($where) = @_;
	return split / /, sql("SELECT count(*) || ' ' || count(DISTINCT committed_at) "
		  . "FROM paimon_sink.snapshots WHERE sink_name LIKE 'b%' $where");
}

# --- many sinks committed in shared transactions, each with its own snapshot
write_rounds(8, 0.3);
ok(all_arrived(), 'every row arrives on its own');
is(exact(), 'missing 0, duplicated 0, phantom 0', 'every target holds its ledger exactly once');
my ($snaps, $xacts) = snapshots_and_transactions('');
cmp_ok($snaps, '>=', $sinks, "each sink made its own snapshots ($snaps)");
cmp_ok($xacts * 4, '<=', $snaps,
	"the snapshots were committed in shared transactions ($snaps snapshots in $xacts transactions)");
is(sql("SELECT count(*) FROM (SELECT committed_at FROM paimon_sink.snapshots
	WHERE sink_name IN ('b01', 'b02', 'b03', 'b04') INTERSECT
	SELECT committed_at FROM paimon_sink.snapshots WHERE sink_name > 'b04') s") > 0 ? 'yes' : 'no',
	'yes', 'upsert sinks share their transactions with append sinks');
is(sql("SELECT count(*) FROM paimon_sink.snapshots GROUP BY sink_name, commit_user,
	commit_identifier HAVING count(*) > 1"), '', 'no checkpoint has two snapshots');

# --- a member whose target refuses a row fails alone; the others commit in their batches
sql("INSERT INTO t05 VALUES (" . (1000 * ($round + 1) + 5) . ", 0)");
my $offset = -s $node->logfile;
write_rounds(3);
ok( $node->poll_query_until('postgres', "SELECT coalesce(sum(missing), 0) = 0 FROM ($diff_sql) d "
		  . "WHERE sink <> 5"),
	'the other sinks commit while b05 fails');
ok($node->wait_for_log(qr/request failed with SQLSTATE 23505/, $offset),
	'b05\'s failure is logged, as its own commit\'s');
is(sql("SELECT count(*) FROM t05 WHERE round > " . ($round - 3)), '0',
	'nothing of b05\'s failing checkpoint is in its target');
($snaps, $xacts) = snapshots_and_transactions(
	"AND committed_at > (SELECT max(committed_at) FROM paimon_sink.snapshots WHERE sink_name = 'b05')");
cmp_ok($xacts * 4, '<=', $snaps,
	"meanwhile the others still commit together ($snaps snapshots in $xacts transactions)");
sql("DELETE FROM t05 WHERE round = 0");
ok(all_arrived(), 'once the row is out of the way, b05 commits its rows on its own retry');
is(exact(), 'missing 0, duplicated 0, phantom 0', 'every target holds its ledger exactly once');

# crash_round(point, action, what): arms the fault point, writes a round,
# and waits until the server is back; every row then arrives exactly once
sub crash_round
{
	my ($point, $what) = @_;
	my $at = -s $node->logfile;
	sql("SELECT paimon_sink.inject_fault('$point', 'kill')");
	# the crash may end this round's own transaction (its ledger rows go with
	# its sink rows), so its failure is no failure of the test
	$round++;
	$node->psql('postgres', "SELECT write_round($round)");
	ok(back_after_crash($node, 'postgres', $at), "back after a kill $what");
	write_rounds(1);
	ok(all_arrived(), "every row arrives after a kill $what");
	is(exact(), 'missing 0, duplicated 0, phantom 0', "and exactly once after a kill $what");
	return $at;
}

# --- killed after the batch's PREPARE: recovery commits the batch, every member once
$offset = crash_round('committer_batch_after_prepare', 'after a batch\'s PREPARE');
like(slurp_file($node->logfile, $offset), qr/committed in-doubt transaction/,
	'recovery committed the prepared batch');

# --- killed between two members' loads: nothing of the batch is committed, then all of it
crash_round('committer_between_batch_members', 'between two members\' loads');
is(sql('SELECT count(*) FROM paimon_sink.in_doubt'), '0', 'nothing is left in doubt');

# --- an error between two members' loads: every member commits on its own
$offset = -s $node->logfile;
sql("SELECT paimon_sink.inject_fault('committer_between_batch_members', 'error')");
write_rounds(1);
ok($node->wait_for_log(qr/batch of \d+ periodic checkpoints failed/, $offset),
	'the failed batch is logged');
ok(all_arrived(), 'every row arrives after a batch failed');
is(exact(), 'missing 0, duplicated 0, phantom 0', 'and exactly once');

$node->stop;
done_testing();
