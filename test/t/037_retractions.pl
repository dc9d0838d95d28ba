# Retractions of an upsert sink against a model: random change streams over
# few keys and few values (so that retractions meet equal and unequal
# versions, NULLs included), several transactions per checkpoint and four
# buckets, each checkpoint's outcome compared with what a materializer
# reading the stream in order leaves: an upsert appends its version; a
# retraction that carries its row (a non-key column not NULL) removes the
# newest earlier version of the checkpoint equal to it, or else names the
# target's row; a key-only one (both non-key columns NULL) deletes the key.
# The latest version left wins; with none left, the target's row goes if it
# was deleted by key or named by a retraction (Flink's SinkUpsertMaterializer).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(start_node writers_ready);

my $node = start_node('retractions');

sub sql { return $node->safe_psql('postgres', shift); }

sql(q{
	CREATE EXTENSION paimon_sink;
	CREATE TABLE t (id int PRIMARY KEY, a text, b int);
	SELECT sink_name FROM paimon_sink.create_sink('s', 't', mode => 'upsert', buckets => 4);
});
ok(writers_ready($node, 'postgres'), 'writers serve');

srand(37);
my @values_a = ('x', 'y', undef);
my @values_b = (1, 2, undef);
my %target;    # id -> [a, b]: what the target holds after each checkpoint

# same(ROW, ROW): every non-key column IS NOT DISTINCT FROM
sub same
{
	my ($p, $q) = @_;
	for my $i (0, 1)
	{
		return 0 if defined($p->[$i]) != defined($q->[$i]);
		return 0 if defined($p->[$i]) && $p->[$i] ne $q->[$i];
	}
	return 1;
}

sub literal { my $v = shift; return defined $v ? "'$v'" : 'NULL'; }

my ($checkpoints, $wrong, $retracted_target, $kept_by_retraction) = (0, 0, 0, 0);
for my $checkpoint (1 .. 40)
{
	my %versions;    # id -> list of [a, b] left in this checkpoint, oldest first
	my %named;       # id -> rows retractions named on the target's
	my %deleted;     # id -> deleted by key in this checkpoint
	for my $transaction (1 .. 2)
	{
		my @rows;
		for (1 .. 8)
		{
			my $id = 1 + int(rand(8));
			my $r = rand();
			my $row = [ $values_a[ int(rand(3)) ], $values_b[ int(rand(3)) ] ];
			my $kind;
			if ($r < 0.4)
			{
				$kind = rand() < 0.5 ? '+I' : '+U';
				push @{ $versions{$id} }, $row;
			}
			else
			{
				$kind = rand() < 0.5 ? '-U' : '-D';
				if (!defined $row->[0] && !defined $row->[1])
				{
					# key-only: the key goes, whatever came before
					$versions{$id} = [];
					$named{$id} = [];
					$deleted{$id} = 1;
				}
				else
				{
					my $list = $versions{$id} //= [];
					my ($newest) = grep { same($list->[$_], $row) } reverse 0 .. $#$list;
					if (defined $newest) { splice @$list, $newest, 1; }
					else { push @{ $named{$id} }, $row; }
				}
			}
			push @rows, sprintf('(%d, %s, %s, %s)', $id, literal($row->[0]), literal($row->[1]),
				"'$kind'");
		}
		sql('INSERT INTO s VALUES ' . join(', ', @rows));
	}
	sql("SELECT paimon_sink.checkpoint('s')");
	$checkpoints++;
	for my $id (1 .. 8)
	{
		my $list = $versions{$id} // [];
		if (@$list) { $target{$id} = $list->[-1]; next; }
		if ($deleted{$id}) { delete $target{$id}; next; }
		next unless exists $target{$id};
		if (grep { same($_, $target{$id}) } @{ $named{$id} // [] })
		{
			delete $target{$id};
			$retracted_target++;
		}
		elsif (@{ $named{$id} // [] }) { $kept_by_retraction++; }
	}
	my $expected = join("\n",
		map { join('|', $_, map { $_ // '' } @{ $target{$_} }) } sort { $a <=> $b } keys %target);
	my $got = sql('SELECT id, a, b FROM t ORDER BY id');
	$wrong++ if $got ne $expected;
	is($got, $expected, "checkpoint $checkpoint: the target is the model's");
}
# the streams did meet both cases
cmp_ok($retracted_target, '>', 0, "retractions deleted the target's row ($retracted_target times)");
cmp_ok($kept_by_retraction, '>', 0,
	"retractions of another row kept the target's ($kept_by_retraction times)");
is($wrong, 0, "every checkpoint of $checkpoints matched the model");

$node->stop;
done_testing();
