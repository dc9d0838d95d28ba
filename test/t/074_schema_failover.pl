# The target changes while rows wait, and the primary fails over (issue "6 —
# The target changes while rows wait", item 1, with a failover in between;
# 064_schema_follow.pl has the crash).  On a primary with a streaming
# standby (the staged files reach it through the extension's WAL records),
# an append sink, an upsert sink, a sink group's member and an overwrite
# sink each have a checkpoint committed, one prepared and more rows staged
# when their target changes: a column renamed, three types widened, a
# column dropped and one added with a default (PaimonSinkTest's
# schema_follow).  A narrowing ALTER COLUMN TYPE is refused (42804).  More
# rows are staged after the change and a third checkpoint prepared; the
# group's commit of its second checkpoint is paused between its PREPARE
# TRANSACTION and its COMMIT PREPARED; the standby replays all of it; the
# primary dies (immediate stop) and the standby is promoted.  The promoted
# node finishes the group's in-doubt transaction once, a retry of each
# committed checkpoint commits nothing, every other checkpoint commits
# once (one snapshot each), and each target equals a ledger written on the
# primary in the same order (the dropped column's values skipped with a
# WARNING, the renamed and widened ones loaded, the added column holding
# its default); the refused change left the tables and the sinks as they
# were; nothing in doubt, pending or staged; new rows go on.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(background_sql fault_paused finish_background nothing_in_doubt query_or_error
  same_staged_files schema_commit schema_diff schema_follow schema_layout schema_prepare
  schema_refused schema_setup schema_write staged_files_left writers_ready);

my $exact = 'missing 0, extra 0';

my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
$primary->start;
my @cases = schema_setup($primary);
ok(writers_ready($primary, 'postgres'), 'writers serve on the primary');

# the standby, from a backup taken before anything is staged: every staged
# file reaches it through the WAL
$primary->backup('bk');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bk', has_streaming => 1);
$standby->start;
ok($primary->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_replication WHERE state = 'streaming'"),
	'the standby streams');

# members(case, answer): what commit() answers for the case, once per member
sub members
{
	my ($case, $answer) = @_;
	return join(',', ($answer) x ($case->{call} eq 'grp' ? 2 : 1));
}

# --- before the change: checkpoint 1 committed, 2 prepared, more rows staged
for my $case (@cases)
{
	schema_write($primary, $case, 1, 20, 'a');
	schema_prepare($primary, $case, 1);
	is(schema_commit($primary, $case, 1), members($case, '1:true'),
		"$case->{call}: checkpoint 1 committed on the primary");
	schema_write($primary, $case, $case->{upsert} ? 15 : 21, 30, 'b');
	schema_prepare($primary, $case, 2);
	schema_write($primary, $case, $case->{upsert} ? 25 : 31, 40, 'c');
}

# --- the change, followed; a narrowing one refused; rows staged after it, checkpoint 3
# prepared (rows staged before and after the change), more rows staged
my %layout;
for my $case (@cases)
{
	my $t = $case->{target};
	schema_follow($primary, $case);
	schema_refused($primary, $t, "ALTER TABLE $t ALTER COLUMN s TYPE varchar(3)", '42804',
		"$t: a narrower varchar");
	$layout{$t} = schema_layout($primary, $t);
	schema_write($primary, $case, $case->{upsert} ? 35 : 41, 50, 'd');
	schema_prepare($primary, $case, 3);
	schema_write($primary, $case, $case->{upsert} ? 45 : 51, 60, 'e');
}
same_staged_files($primary, $standby, 'before the failover');

# --- the group's commit of checkpoint 2 paused between PREPARE and COMMIT PREPARED
$primary->safe_psql('postgres', "SELECT paimon_sink.inject_fault('committer_after_prepare', 'pause')");
my $in_flight = background_sql($primary, "SELECT count(*) FROM paimon_sink.commit('grp', 'g-job', 2)");
ok(fault_paused($primary, 'committer_after_prepare'),
	"the group's commit of checkpoint 2 is paused after its PREPARE");
is($primary->safe_psql('postgres', "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'paimon\\_sink:%'"),
	'1', 'its transaction is prepared on the primary');

# what the primary's ledgers hold, to compare the promoted node's with
my $fingerprint = join(' ', map {
	$primary->safe_psql('postgres', "SELECT count(*) || ':' || md5(string_agg(l::text, ',' ORDER BY l::text))
		FROM ledger_$_->{target} l")
} @cases);

# the standby replays everything, the prepared transaction too (a hot standby's
# pg_prepared_xacts lists none: they are set up at the end of recovery); the primary dies
$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
is($standby->safe_psql('postgres', q{SELECT count(*) || ' ' || (SELECT count(*) FROM g2) FROM g1}),
	'20 20', "the standby shows none of the group's checkpoint 2 while it is in doubt");
$primary->stop('immediate');
finish_background($in_flight);

# --- the standby takes over
$standby->promote;
ok(writers_ready($standby, 'postgres'), 'writers serve on the promoted node');
ok(nothing_in_doubt($standby), 'the promoted node finished the in-doubt transaction');
# (its log line may follow the COMMIT PREPARED by a moment: waited for, not read at once)
ok(eval { $standby->wait_for_log(qr/committed in-doubt transaction "paimon_sink:\d+:\d+:2:g-job~/); 1 },
	"its committer committed the group's in-doubt checkpoint 2") or diag($@);
is(join(' ', map {
	query_or_error($standby, "SELECT count(*) || ':' || md5(string_agg(l::text, ',' ORDER BY l::text))
		FROM ledger_$_->{target} l")
} @cases), $fingerprint, "the promoted node's ledgers are the primary's");

for my $case (@cases)
{
	my $t = $case->{target};
	is(schema_layout($standby, $t), $layout{$t},
		"$t: the table and the sink are as the primary left them (the refused change not made)");
	is(schema_commit($standby, $case, 1), members($case, '1:false'),
		"$case->{call}: a retry of checkpoint 1 commits nothing");
	is(schema_commit($standby, $case, 2), members($case, $case->{call} eq 'grp' ? '2:false' : '2:true'),
		"$case->{call}: checkpoint 2 commits once ("
		  . ($case->{call} eq 'grp' ? 'finished by the promotion' : 'by this call') . ')');
	schema_prepare($standby, $case, 4);
	is(schema_commit($standby, $case, 4),
		join(',', members($case, '3:true'), members($case, '4:true')),
		"$case->{call}: checkpoints 3 and 4 commit once");
	is(schema_diff($standby, $case), $exact, "$t: the target equals the ledger after the failover");
	is(query_or_error($standby, "SELECT count(*) FROM $t WHERE added IS DISTINCT FROM 'dflt'"), '0',
		"$t: the added column holds its default");
}
is(query_or_error($standby, q{SELECT count(*) || ' ' || count(DISTINCT id) FROM g2}), '60 60',
	"the group's other member committed with it, each row once");
is(query_or_error($standby,
		"SELECT string_agg(sink_name || ' ' || ids, '; ' ORDER BY sink_name) FROM
			(SELECT sink_name, string_agg(commit_identifier::text, ',' ORDER BY snapshot_id) AS ids
			 FROM paimon_sink.snapshots GROUP BY sink_name) s"),
	join('; ', map { "$_ 1,2,3,4" } qw(ap_sink g1_sink g2_sink ow_sink up_sink)),
	'one snapshot per checkpoint and sink');
my $log = slurp_file($standby->logfile);
for my $sink (qw(ap_sink up_sink g1_sink ow_sink))
{
	like($log, qr/WARNING:  column "gone" of sink "$sink" was dropped from its target: its values in \d+ staged rows were not loaded/,
		"$sink: the promoted node's load warns of the dropped column");
}
is(query_or_error($standby, 'SELECT count(*) FROM paimon_sink.in_doubt') . ' '
	  . query_or_error($standby, 'SELECT count(*) FROM paimon_sink.pending_checkpoints') . ' '
	  . staged_files_left($standby),
	'0 0 0', 'nothing in doubt, nothing pending, no staged file left');

# --- the promoted node goes on: rows written through the unchanged foreign tables
for my $case (@cases)
{
	schema_write($standby, $case, $case->{upsert} ? 55 : 61, 70, 'f');
	schema_prepare($standby, $case, 5);
	is(schema_commit($standby, $case, 5), members($case, '5:true'), "$case->{call}: checkpoint 5 commits");
	is(schema_diff($standby, $case), $exact, "$case->{target}: new rows load once");
}

$standby->stop;
done_testing();
