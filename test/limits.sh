#!/usr/bin/env bash
# test/limits.sh: the size limits of the sources (doc/ holds the design):
#
#   - no src/*.c over 1,000 lines;
#   - no C function of src/*.c over 100 lines;
#   - no SQL function or procedure of src/sql/api/ and src/sql/router/ over
#     100 lines;
#   - no opening comment of src/*.[ch], src/sql/api/*.sql and
#     src/sql/router/*.sql over 50 lines.
#
#   bash test/limits.sh            each limit exceeded is a failure
#   SHID_LIMITS_ENFORCE=0 bash test/limits.sh    advisory: each is a note
#
# A C function runs from the line of its name to its closing brace (the
# PostgreSQL layout: return type, then name at column 0, braces at column
# 0).  A SQL routine runs from its CREATE line to the ";" that ends the
# statement.  An opening comment runs from line 1 to the last comment line
# before the first line of code.
#
# Prints TAP, read by test/run.sh's count like test/docs.pl and
# test/callgraph.sh.  Enforced (the default): one line per check ("ok N" or
# "not ok N"), exit 1 if any failed.  Advisory: one "# limit exceeded: ..."
# note per check that failed, and a single "ok" line saying how many there
# are.
set -euo pipefail

cd "$(dirname "$0")/.."
exec perl - "${SHID_LIMITS_ENFORCE:-1}" <<'PERL'
use strict;
use warnings;

my $enforce = $ARGV[0] eq '1';
use constant { FILE_MAX => 1000, FUNC_MAX => 100, ROUTINE_MAX => 100, HEAD_MAX => 50 };

my @checks;    # [ passed, text ]
sub check { push @checks, [ $_[0] ? 1 : 0, $_[1] ] }

sub lines_of
{
	my ($path) = @_;
	open my $fh, '<', $path or die "$path: $!";
	my @l = <$fh>;
	return @l;
}

# The opening comment: C block comments and SQL "--" lines from line 1,
# blank lines between them included.
sub opening_comment
{
	my @l = @_;
	my ($last, $in_block) = (0, 0);
	for my $i (0 .. $#l)
	{
		my $s = $l[$i];
		if ($in_block)
		{
			$last = $i + 1;
			$in_block = 0 if $s =~ m{\*/};
			next;
		}
		next if $s =~ /^\s*$/;
		if ($s =~ m{^\s*/\*})
		{
			$last = $i + 1;
			$in_block = 1 unless $s =~ m{\*/};
			next;
		}
		if ($s =~ /^\s*--/)
		{
			$last = $i + 1;
			next;
		}
		last;
	}
	return $last;
}

# C functions: [name, first line, lines].
sub c_functions
{
	my @l = @_;
	my @f;
	for my $i (0 .. $#l)
	{
		next unless $l[$i] =~ /^\{/;
		# The declaration above the brace, back to a blank line, a line
		# ending a statement or a comment.
		my $j = $i - 1;
		my @decl;
		while ($j >= 0 && $l[$j] !~ /^\s*$/ && $l[$j] !~ /[;}]\s*$/ && $l[$j] !~ m{\*/\s*$} && $l[$j] !~ /^#/)
		{
			unshift @decl, $l[$j];
			$j--;
		}
		my $decl = join '', @decl;
		next if $decl =~ /=/ || $decl !~ /\(/;
		next unless $decl =~ /(\w+)\s*\(/;
		my $name = $1;
		my $from = $j + 2;    # 1-based line of the declaration's first line
		for my $k ($j + 1 .. $#decl + $j + 1)
		{
			if ($l[$k] =~ /^\**\s*\Q$name\E\s*\(/ || $l[$k] =~ /\b\Q$name\E\s*\(/)
			{
				$from = $k + 1;
				last;
			}
		}
		my $end = $i;
		$end++ while $end <= $#l && $l[$end] !~ /^\}/;
		push @f, [ $name, $from, $end + 1 - $from + 1 ];
	}
	return @f;
}

# SQL functions and procedures: [name, first line, lines].  The statement
# ends at the first ";" outside quotes, dollar quotes and comments.
sub sql_routines
{
	my @l = @_;
	my @r;
	my $i = 0;
	while ($i <= $#l)
	{
		unless ($l[$i] =~ /^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:FUNCTION|PROCEDURE)\s+([\w.]+)/i)
		{
			$i++;
			next;
		}
		my $name = $1;
		my ($j, $quote, $done) = ($i, undef, 0);
		for (; $j <= $#l && !$done; $j++)
		{
			my $s = $l[$j];
			while (length $s && !$done)
			{
				if (defined $quote)
				{
					my $q = index($s, $quote);
					last if $q < 0;
					$s = substr($s, $q + length $quote);
					$quote = undef;
				}
				elsif ($s =~ /^(.*?)(--|'|\$\w*\$|;)(.*)$/s)
				{
					my ($tok, $rest) = ($2, $3);
					if ($tok eq '--') { last }
					elsif ($tok eq ';') { $done = 1 }
					else { $quote = $tok; $s = $rest }
				}
				else { last }
			}
		}
		push @r, [ $name, $i + 1, $j - $i ];
		$i = $j;
	}
	return @r;
}

my @c = sort glob('src/*.c');
my @h = sort glob('src/*.h');
my @sql = sort(glob('src/sql/api/*.sql'), glob('src/sql/router/*.sql'));

for my $path (@c)
{
	my @l = lines_of($path);
	check(@l <= FILE_MAX, sprintf('%s has %d lines (at most %d)', $path, scalar @l, FILE_MAX));
}
for my $path (@c)
{
	for my $f (c_functions(lines_of($path)))
	{
		my ($name, $from, $n) = @$f;
		check($n <= FUNC_MAX, sprintf('%s:%d: C function %s has %d lines (at most %d)', $path, $from, $name, $n, FUNC_MAX));
	}
}
for my $path (@sql)
{
	for my $r (sql_routines(lines_of($path)))
	{
		my ($name, $from, $n) = @$r;
		check($n <= ROUTINE_MAX, sprintf('%s:%d: SQL routine %s has %d lines (at most %d)', $path, $from, $name, $n, ROUTINE_MAX));
	}
}
for my $path (@c, @h, @sql)
{
	my $n = opening_comment(lines_of($path));
	check($n <= HEAD_MAX, sprintf('%s opens with a comment of %d lines (at most %d)', $path, $n, HEAD_MAX));
}

my @failed = grep { !$_->[0] } @checks;
if ($enforce)
{
	my $n = 0;
	for my $c (@checks)
	{
		$n++;
		print(($c->[0] ? 'ok' : 'not ok'), " $n - $c->[1]\n");
	}
	print "1..$n\n";
	exit(@failed ? 1 : 0);
}
print "# limit exceeded: $_->[1]\n" for @failed;
printf "ok 1 - limits advisory (SHID_LIMITS_ENFORCE=0): %d of %d checks within the limits, %d exceeded\n",
  scalar(@checks) - scalar(@failed), scalar @checks, scalar @failed;
print "1..1\n";
exit 0;
PERL
