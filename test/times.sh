#!/usr/bin/env bash
# test/times.sh: the time of each TAP file, read from the logs of runs of
# the TAP suite (prove --timer, as test/run.sh runs it), slowest first.
#
#   bash test/times.sh LOG...          every file
#   N=10 bash test/times.sh LOG...     the N slowest (test/README.md's table)
#   bash test/times.sh LOGDIR          the pgNN-tap.log files of a run of
#                                      test/run.sh, one column each
#
# One column per log, in seconds; a file that failed reads "failed", one
# skipped "skip", one not run "-".  Rows are ordered by their slowest
# column.  The last row sums each column (the time of a serial run; a
# parallel run's wall time is less).  Prints a Markdown table.
set -euo pipefail

if [ $# -eq 0 ]; then
    echo "usage: bash test/times.sh LOG... | LOGDIR" >&2
    exit 2
fi
logs=()
for a in "$@"; do
    if [ -d "$a" ]; then
        for l in "$a"/pg*-tap.log; do
            [ -f "$l" ] && logs+=("$l")
        done
    else
        logs+=("$a")
    fi
done
[ ${#logs[@]} -gt 0 ] || { echo "test/times.sh: no TAP log in $*" >&2; exit 1; }

perl - "${N:-0}" "${logs[@]}" <<'PERL'
use strict;
use warnings;
use File::Basename qw(basename);

my ($top, @logs) = @ARGV;
my (%t, @cols);
for my $log (@logs)
{
	my $col = basename($log, '.log');
	push @cols, $col;
	open my $fh, '<', $log or die "$log: $!";
	my $file;
	while (<$fh>)
	{
		# "[hh:mm:ss] test/t/NNN_name.pl ..... " opens a file's output
		# (TAP::Formatter::File prints it whole when the file ends).
		if (m{^(?:\[[\d:]+\]\s+)?(test/t/\S+\.pl)\s+\.+\s*(.*)$})
		{
			$file = $1;
			my $rest = $2;
			$t{$file}{$col} = 'skip' if $rest =~ /^skipped/;
			$t{$file}{$col} = sprintf('%.1f', $1 / 1000) if $rest =~ /^ok\s+(\d+) ms/;
			next;
		}
		next unless defined $file;
		if (/^ok\s+(\d+) ms/)
		{
			$t{$file}{$col} = sprintf('%.1f', $1 / 1000);
			undef $file;
		}
		elsif (/^(Dubious|Failed \d+\/\d+ subtests|Parse errors|No subtests run)/)
		{
			$t{$file}{$col} = 'failed';
		}
	}
}
my $max = sub {
	my ($f) = @_;
	my $m = -1;
	for my $c (@cols)
	{
		my $v = $t{$f}{$c} // '';
		$m = $v if $v =~ /^[\d.]+$/ && $v > $m;
	}
	return $m;
};
my @files = sort { $max->($b) <=> $max->($a) || $a cmp $b } keys %t;
@files = @files[ 0 .. $top - 1 ] if $top > 0 && @files > $top;
print '| file | ', join(' | ', map { "$_ (s)" } @cols), " |\n";
print '|---|', join('|', map { '---:' } @cols), "|\n";
for my $f (@files)
{
	print "| $f | ", join(' | ', map { $t{$f}{$_} // '-' } @cols), " |\n";
}
my %sum;
for my $c (@cols)
{
	$sum{$c} = 0;
	for my $f (keys %t)
	{
		my $v = $t{$f}{$c} // '';
		$sum{$c} += $v if $v =~ /^[\d.]+$/;
	}
}
print '| all ', scalar(keys %t), ' files, summed | ', join(' | ', map { sprintf('%.0f', $sum{$_}) } @cols), " |\n";
PERL
