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
use PostgreSQL::Test::Cluster;

our @EXPORT_OK = qw(source_dir readme_table sql_statements sql_problems sql_names writers_ready
  start_node try_sql staged_files);

# writers_ready(NODE, DATABASE): waits (poll_query_until's bound) until
# the database's two writers serve; true when they do.  Schema-qualified,
# so that it means the same under any search_path a test plants.
sub writers_ready
{
	my ($node, $database) = @_;
	return $node->poll_query_until($database,
		"SELECT pg_catalog.count(*) OPERATOR(pg_catalog.=) 2 FROM paimon_sink.writers WHERE ready");
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

# try_sql(NODE, SQL, [ROLE], [DATABASE]): runs SQL with psql as ROLE (the
# bootstrap superuser when undef) in DATABASE (postgres), stopping at the
# first error, with VERBOSITY verbose so that errors show their SQLSTATE and
# fields; returns (exit code, stdout, stderr).
sub try_sql
{
	my ($node, $sql, $role, $database) = @_;
	my ($out, $err) = ('', '');
	my @role = $role ? ('-U', $role) : ();
	my $ret = $node->psql($database // 'postgres', $sql,
		stdout => \$out, stderr => \$err, on_error_stop => 1,
		extra_params => [ @role, '-v', 'VERBOSITY=verbose' ]);
	return ($ret, $out, $err);
}

# staged_files(NODE): how many staged files the node's data folder holds.
sub staged_files
{
	my ($node) = @_;
	my @files = glob($node->data_dir . '/pg_paimon_sink/*/*/*.stage');
	return scalar(@files);
}

# The repository's src/ folder, found from this file's place (test/perl).
sub source_dir
{
	return File::Spec->catdir(dirname(__FILE__), '..', '..', 'src');
}

# The table of README.md that follows the line containing marker: a list of
# rows, each a list of cells (the header row first, the separator left out).
sub readme_table
{
	my ($marker) = @_;
	my $readme = File::Spec->catfile(source_dir(), '..', 'README.md');
	open(my $fh, '<', $readme) or die "cannot read $readme: $!";
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
	die "no table after \"$marker\" in $readme" unless @rows;
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

# The SQL statements (and statement fragments) of every src/*.c: each run of
# adjacent string literals (string macros expanded) that starts with an SQL
# keyword in capitals, as the code writes them and no message does.  Returns
# a list of [file, line, text].
sub sql_statements
{
	my @found;
	for my $file (sort glob(File::Spec->catfile(source_dir(), '*.c')))
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
	while ($plain =~ /\b(?:FROM|JOIN|INTO|UPDATE|USING|TABLE)\s+(?!\(|X\b|SET\b|pg_catalog\.|paimon_sink\.|LATERAL\b)(\w+)/g)
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
