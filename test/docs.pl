#!/usr/bin/env perl
# test/docs.pl: every relative link of the documents resolves: README.md,
# doc/*.md, test/bench/README.md and test/README.md.  A link to a file needs the file; a link
# with #anchor needs a heading whose GitHub anchor it is.  Prints TAP: one
# line per link.
use strict;
use warnings;
use File::Basename qw(dirname);
use File::Spec;

my $top = File::Spec->rel2abs(dirname(__FILE__) . '/..');
my @docs = ('README.md', (map { "doc/" . (split m{/}, $_)[-1] } glob("$top/doc/*.md")), 'test/bench/README.md', 'test/README.md');

# The anchors of a Markdown file's headings, as GitHub makes them.
my %anchors;
sub anchors_of
{
	my ($path) = @_;
	return $anchors{$path} if $anchors{$path};
	my %seen;
	open my $fh, '<', $path or die "$path: $!";
	my $fence = 0;
	while (my $line = <$fh>)
	{
		$fence = !$fence if $line =~ /^```/;
		next if $fence;
		next unless $line =~ /^#+\s+(.*?)\s*$/;
		my $slug = lc $1;
		$slug =~ s/[^\w\- ]//g;
		$slug =~ s/ /-/g;
		my $n = $seen{$slug}++;
		$anchors{$path}{ $n ? "$slug-$n" : $slug } = 1;
	}
	close $fh;
	return $anchors{$path};
}

my $n = 0;
my $failed = 0;
for my $doc (@docs)
{
	my $path = "$top/$doc";
	open my $fh, '<', $path or die "$path: $!";
	my $text = do { local $/; <$fh> };
	close $fh;
	$text =~ s/^```.*?^```//msg;    # links inside code blocks are code
	while ($text =~ /\]\(([^)\s]+)\)/g)
	{
		my $link = $1;
		next if $link =~ m{^[a-z]+://} || $link =~ /^mailto:/;
		my ($file, $anchor) = $link =~ /^([^#]*)(?:#(.*))?$/;
		my $target = $file eq '' ? $path : File::Spec->rel2abs($file, dirname($path));
		my $ok = -e $target;
		$ok &&= exists anchors_of($target)->{$anchor} if $ok && defined $anchor && -f $target;
		$n++;
		print(($ok ? 'ok' : 'not ok') . " $n - $doc: $link\n");
		$failed++ unless $ok;
	}
}
print "1..$n\n";
exit($failed ? 1 : 0);
