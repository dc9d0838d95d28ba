# The SQL reference (docs/sql-reference.md) against the catalog of a fresh
# CREATE EXTENSION: every function of schema paimon_sink has a row in its
# function table, with its arguments as the catalog has them (names, types in
# format_type's spelling, which have defaults and what the defaults are,
# compared by value), and its result where the row spells it (a
# `TABLE(...)`/`(...)` column list, or a type); every view has a row in the
# view table with its columns in order.  And the other way: the page names no
# function, view or table of the schema that does not exist (`name(...)`,
# `paimon_sink.name`), no column of theirs that does not exist
# (`relation.column`), and no paimon_sink.* setting the library does not
# define.  A function added without its row fails here, naming it.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use PaimonSinkTest qw(doc_table source_dir start_node);

my $page = 'docs/sql-reference.md';
my $node = start_node('sql_reference');
$node->safe_psql('postgres', 'CREATE EXTENSION paimon_sink');

sub rows_of
{
	my ($sql) = @_;
	return map { [ split /\t/, $_, -1 ] } grep { $_ ne '' } split /\n/,
	  $node->safe_psql('postgres', $sql, extra_params => [ '-F', "\t" ]);
}

# Split an argument or column list at its top-level commas (not inside
# quotes, brackets or parentheses).
sub split_list
{
	my ($list) = @_;
	my ($depth, $quote, $cur, @parts) = (0, 0, '');
	for my $ch (split //, $list)
	{
		if ($quote) { $quote = 0 if $ch eq "'"; }
		elsif ($ch eq "'") { $quote = 1; }
		elsif ($ch =~ /[(\[]/) { $depth++; }
		elsif ($ch =~ /[)\]]/) { $depth--; }
		elsif ($ch eq ',' && $depth == 0) { push @parts, $cur; $cur = ''; next; }
		$cur .= $ch;
	}
	push @parts, $cur if $cur =~ /\S/;
	return map { s/^\s+|\s+$//gr } @parts;
}

# Types as format_type spells them.
sub type_name
{
	my ($type) = @_;
	$type = lc($type =~ s/^\s+|\s+$//gr);
	$type =~ s/\s+/ /g;
	my %alias = (
		'timestamptz' => 'timestamp with time zone',
		'int' => 'integer',
		'int4' => 'integer',
		'int8' => 'bigint',
		'bool' => 'boolean');
	return $alias{$type} // $type;
}

# One argument "[mode] [name] type [= default | DEFAULT default]" as
# [mode, name, type, default]; named says whether it has a name.
sub parse_arg
{
	my ($arg, $named) = @_;
	my ($mode, $rest) = $arg =~ /^(?:(IN|OUT|INOUT|VARIADIC)\s+)?(.*)$/s;
	my ($decl, $default) = $rest =~ /^(.*?)(?:\s+(?:DEFAULT|=)\s+(.*))?$/s;
	my ($name, $type) = $named ? $decl =~ /^(\S+)\s+(.*)$/s : ('', $decl);
	return [ $mode // 'IN', $name // '', type_name($type // ''), $default ];
}

# An argument list as text to compare: name and type, "= …" where there is
# a default (the defaults are compared by value apart).
sub args_text
{
	return join(', ', map { join(' ', grep { $_ ne '' } $_->[1], $_->[2]) . (defined $_->[3] ? ' = …' : '') } @_);
}

# --- the catalog
my %func;    # name => { args => [[mode, name, type, default]], result => text, out => [[name, type]] }
for my $row (rows_of(
		q{SELECT p.proname, pg_get_function_arguments(p.oid), pg_get_function_result(p.oid),
			coalesce(array_to_string(p.proargnames, ','), '')
		  FROM pg_catalog.pg_proc p
		  WHERE p.pronamespace OPERATOR(pg_catalog.=) 'paimon_sink'::pg_catalog.regnamespace
		  ORDER BY 1}))
{
	my ($name, $args, $result, $names) = @$row;
	die "overloaded function $name: the page's rows are by name" if $func{$name};
	my @names = split /,/, $names, -1;
	my @all = map { parse_arg($_->[0], ($names[ $_->[1] ] // '') ne '') }
	  map { [ (split_list($args))[$_], $_ ] } 0 .. scalar(split_list($args)) - 1;
	my @out = map { [ $_->[1], $_->[2] ] } grep { $_->[0] eq 'OUT' } @all;
	if ($result =~ /^TABLE\((.*)\)$/s)
	{
		@out = map { my $a = parse_arg($_, 1); [ $a->[1], $a->[2] ] } split_list($1);
	}
	$func{$name} = {
		args => [ grep { $_->[0] ne 'OUT' } @all ],
		result => type_name($result =~ s/^SETOF //r),
		out => \@out };
}
my %relation;    # name => { kind => r|v, columns => [...] }
for my $row (rows_of(
		q{SELECT c.relname, c.relkind, pg_catalog.string_agg(a.attname::text, ',' ORDER BY a.attnum)
		  FROM pg_catalog.pg_class c
		  JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) c.oid
		   AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped
		  WHERE c.relnamespace OPERATOR(pg_catalog.=) 'paimon_sink'::pg_catalog.regnamespace
		    AND c.relkind IN ('r', 'v')
		  GROUP BY 1, 2}))
{
	$relation{ $row->[0] } = { kind => $row->[1], columns => [ split /,/, $row->[2] ] };
}
my %setting = map { $_->[0] => 1 }
  rows_of(q{SELECT name FROM pg_catalog.pg_settings WHERE name LIKE 'paimon\_sink.%'});
my @views = sort grep { $relation{$_}{kind} eq 'v' } keys %relation;
ok(keys %func >= 30 && @views >= 10 && keys %setting >= 10,
	sprintf('the catalog has %d functions, %d views and %d settings of paimon_sink',
		scalar(keys %func), scalar(@views), scalar(keys %setting)));

# --- the function table
my ($fheader, @frows) = doc_table($page, 'functions: read by test/t/060_sql_reference.pl');
is($fheader->[0], 'function', "$page: the function table follows its marker");
my (%documented, @problems);
my ($checked_defaults, $checked_results) = (0, 0);
for my $row (@frows)
{
	my ($what, $returns) = @$row;
	my $head = (split / — /, $what, 2)[0];
	my @sigs = $head =~ /`(\w+\((?:[^`]*)\))`/g;
	push @problems, "a row names no function: $what" unless @sigs;
	for my $sig (@sigs)
	{
		my ($name, $list) = $sig =~ /^(\w+)\((.*)\)$/s;
		push @problems, "$name: documented twice" if $documented{$name}++;
		my $f = $func{$name};
		if (!$f)
		{
			push @problems, "$name($list): documented, but there is no such function";
			next;
		}
		my @doc = map { parse_arg($_, /\S\s+\S/ && !/^\S+\s*=/) } split_list($list);
		my ($want, $got) = (args_text(@{ $f->{args} }), args_text(@doc));
		if ($want ne $got)
		{
			push @problems, "$name: the page has ($got), the catalog ($want)";
			next;
		}
		for my $i (0 .. $#doc)
		{
			next unless defined $doc[$i][3];
			my $same = $node->safe_psql('postgres',
				"SELECT ($doc[$i][3])::$doc[$i][2] IS NOT DISTINCT FROM ($f->{args}[$i][3])");
			$checked_defaults++;
			push @problems, "$name: the default of $doc[$i][1] is $doc[$i][3] on the page, $f->{args}[$i][3] in the catalog"
			  unless $same eq 't';
		}
		# the result, where the row spells it at its start
		if ($returns =~ /^(?:one row )?`(?:TABLE)?\((.*?)\)`/s)
		{
			my $doc_cols = join(', ', map { my $a = parse_arg($_, 1); "$a->[1] $a->[2]" } split_list($1));
			my $cat_cols = join(', ', map { "$_->[0] $_->[1]" } @{ $f->{out} });
			$checked_results++;
			push @problems, "$name: returns ($doc_cols) on the page, ($cat_cols) in the catalog"
			  unless $doc_cols eq $cat_cols;
		}
		elsif ($returns =~ /^`([a-z_ ]+)`/)
		{
			$checked_results++;
			push @problems, "$name: returns $1 on the page, $f->{result} in the catalog"
			  unless type_name($1) eq $f->{result};
		}
	}
}
push @problems, map { "$_: a function of schema paimon_sink the page does not document" }
  grep { !$documented{$_} } sort keys %func;

# --- the view table
my ($vheader, @vrows) = doc_table($page, 'views: read by test/t/060_sql_reference.pl');
is($vheader->[0], 'view', "$page: the view table follows its marker");
my %view_row;
for my $row (@vrows)
{
	my ($view) = $row->[0] =~ /^`(\w+)`$/;
	my @cols = $row->[-1] =~ /`(\w+)`/g;
	if (!$view || !$relation{$view} || $relation{$view}{kind} ne 'v')
	{
		push @problems, "view $row->[0]: documented, but there is no such view";
		next;
	}
	$view_row{$view} = 1;
	my ($doc, $cat) = (join(', ', @cols), join(', ', @{ $relation{$view}{columns} }));
	push @problems, "view $view: the page has columns ($doc), the catalog ($cat)" unless $doc eq $cat;
}
push @problems, map { "view $_: a view of schema paimon_sink the page does not document" }
  grep { !$view_row{$_} } @views;

# --- every name the page's code spans give
open(my $fh, '<:encoding(UTF-8)', File::Spec->catfile(source_dir(), '..', $page)) or die "cannot read $page: $!";
my $text = do { local $/; <$fh> };
close $fh;
for my $span ($text =~ /`([^`\n]+)`/g)
{
	if ($span =~ /^([a-z_][a-z0-9_]*)\(/ && !$func{$1})
	{
		push @problems, "`$span`: names $1(), which schema paimon_sink does not have";
	}
	elsif ($span =~ /^paimon_sink\.(\w+)$/ && !$func{$1} && !$relation{$1} && !$setting{$span})
	{
		push @problems, "`$span`: no function, relation or setting of that name";
	}
	elsif ($span =~ /^(\w+)\.(\w+)$/ && $relation{$1} && !grep { $_ eq $2 } @{ $relation{$1}{columns} })
	{
		push @problems, "`$span`: $1 has no column $2";
	}
}

note("compared: " . scalar(keys %documented) . " functions' arguments, $checked_defaults defaults, $checked_results results, "
	  . scalar(keys %view_row) . " views' columns");
is(join("\n", @problems), '', "$page documents every function and view column of the catalog, and nothing else");
done_testing();
