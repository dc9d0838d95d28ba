# Every link of the documentation resolves: README.md, HOUSE.md and
# docs/*.md link to each other and into the tree, and their #anchors name
# headings, so a section moved to another page must take its links along.
# A relative link must name a file or folder of the repository; a link with
# an #anchor must name a heading of that page, by GitHub's rule (the heading
# in lower case, everything but letters, digits, spaces, '-' and '_' dropped,
# spaces made '-', a repeated one given -1, -2, ...).  Links inside code
# (fenced blocks, `spans`) are text, not links; http(s) and mailto links are
# left to their sites.  Needs no server.
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Spec;
use Test::More;
use PaimonSinkTest qw(source_dir);

my $root = File::Spec->rel2abs(File::Spec->catdir(source_dir(), '..'));
my @pages = grep { -f $_ } map { File::Spec->catfile($root, $_) } ('README.md', 'HOUSE.md');
push @pages, sort glob(File::Spec->catfile($root, 'docs', '*.md'));
ok(scalar(@pages) >= 3, 'the documentation has pages: ' . join(', ', map { s/^\Q$root\E\///r } @pages));

# The page's text with code (fenced blocks and `spans`) blanked out.
sub prose
{
	my ($file) = @_;
	open(my $fh, '<:encoding(UTF-8)', $file) or die "cannot read $file: $!";
	my ($fenced, @lines) = (0);
	while (my $line = <$fh>)
	{
		if ($line =~ /^\s*```/) { $fenced = !$fenced; push @lines, "\n"; next; }
		push @lines, $fenced ? "\n" : $line;
	}
	close $fh;
	my $text = join('', @lines);
	$text =~ s/(`+)(?:(?!\1).)+?\1//gs;
	return $text;
}

# The anchors GitHub gives the page's headings.
my %anchors_of;
sub anchors
{
	my ($file) = @_;
	return $anchors_of{$file} if $anchors_of{$file};
	open(my $fh, '<:encoding(UTF-8)', $file) or die "cannot read $file: $!";
	my ($fenced, %seen, %anchors) = (0);
	while (my $line = <$fh>)
	{
		$fenced = !$fenced if $line =~ /^\s*```/;
		next if $fenced || $line !~ /^#{1,6}\s+(.*?)\s*#*\s*$/;
		my $slug = lc $1;
		$slug =~ s/\[([^\]]*)\]\([^)]*\)/$1/g;    # a link's text
		$slug =~ s/[^\p{L}\p{N} _-]//g;
		$slug =~ s/ /-/g;
		my $n = $seen{$slug}++;
		$anchors{ $n ? "$slug-$n" : $slug } = 1;
	}
	close $fh;
	return $anchors_of{$file} = \%anchors;
}

my ($links, @broken) = (0);
for my $page (@pages)
{
	my $text = prose($page);
	my $name = $page =~ s/^\Q$root\E\///r;
	while ($text =~ /!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)
	{
		my $target = $1;
		next if $target =~ /^(?:https?|mailto):/;
		$links++;
		my ($path, $anchor) = $target =~ /^([^#]*)(?:#(.*))?$/;
		my $file = $path eq '' ? $page : File::Spec->catfile(dirname($page), $path);
		if (!-e $file)
		{
			push @broken, "$name: ($target): no file $path";
			next;
		}
		next unless defined $anchor;
		if (-d $file || $file !~ /\.md$/)
		{
			push @broken, "$name: ($target): an anchor into what is not a page";
			next;
		}
		push @broken, "$name: ($target): no heading #$anchor in $path" . ($path eq '' ? "(this page)" : '')
		  unless anchors($file)->{$anchor};
	}
}
ok($links > 20, "the pages hold links ($links): the link pattern finds them");
is(join("\n", @broken), '', 'every link names a file of the repository and a heading of its page');
done_testing();
