#!/usr/bin/env bash
# test/callgraph.sh: the file-level call graph of src/*.c, and a check that
# it has no cycle.
#
#   bash test/callgraph.sh                  build with the first pg_config of
#                                           test/pg_versions.sh, in a copy
#   bash test/callgraph.sh DIR              read the objects in DIR/src/*.o
#
# An edge a -> b says that a.o refers to a symbol that b.o defines: a call,
# a function pointer it registers (a callback), or a variable it reads.
# Read from the objects with nm (defined versus undefined global symbols),
# so it sees what the compiler kept, not what the text suggests.  Static
# functions and inlined header functions are not symbols and make no edge.
#
# Prints one line per file with the files it refers to, then one TAP line
# per file ("ok N - a.c is in no cycle"); exits non-zero if any file lies on
# a cycle, naming the cycle.  test/run.sh runs it once, like test/docs.pl.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)

if [ $# -ge 1 ]; then
    objdir=$1
else
    . "$src/test/pg_versions.sh"
    pg_config=$(shid_pg_configs | head -n1)
    objdir=$(mktemp -d /tmp/sharded_id_callgraph.XXXXXX)
    trap 'rm -rf "$objdir"' EXIT
    cp -a "$src/." "$objdir/"
    make -s -C "$objdir" clean PG_CONFIG="$pg_config" >/dev/null
    make -s -C "$objdir" PG_CONFIG="$pg_config" >/dev/null
fi

shopt -s nullglob
objs=("$objdir"/src/*.o)
if [ ${#objs[@]} -eq 0 ]; then
    echo "not ok 1 - no object files in $objdir/src"
    exit 1
fi

# "file kind symbol" for every global symbol: kind D (defined) or U (undefined).
for o in "${objs[@]}"; do
    f=$(basename "$o" .o).c
    nm -g "$o" | awk -v f="$f" '
        $1 == "U" { print f, "U", $2; next }
        NF == 3 && $2 != "U" && $2 != "w" && $2 != "v" { print f, "D", $3 }'
done | perl -e '
    use strict;
    use warnings;
    my (%def, %undef, %files);
    while (<STDIN>)
    {
        my ($f, $kind, $sym) = split;
        $files{$f} = 1;
        if ($kind eq "D") { $def{$sym} = $f } else { push @{ $undef{$f} }, $sym }
    }
    my %edge;
    for my $f (keys %undef)
    {
        for my $sym (@{ $undef{$f} })
        {
            my $to = $def{$sym};
            next unless defined $to && $to ne $f;
            push @{ $edge{$f}{$to} }, $sym;
        }
    }
    print "# file-level call graph of src/*.c (a -> b: a refers to a symbol of b)\n";
    for my $f (sort keys %files)
    {
        my @to = sort keys %{ $edge{$f} || {} };
        print "# $f -> ", (@to ? join(", ", @to) : "(nothing)"), "\n";
    }

    # Tarjan: the strongly connected components; one of more than one file,
    # or a file that refers to itself (never: same-file symbols are skipped),
    # is a cycle.
    my ($index, @stack, %on, %idx, %low, %comp) = (0);
    my $strong;
    $strong = sub {
        my ($v) = @_;
        $idx{$v} = $low{$v} = $index++;
        push @stack, $v;
        $on{$v} = 1;
        for my $w (sort keys %{ $edge{$v} || {} })
        {
            if (!exists $idx{$w}) { $strong->($w); $low{$v} = $low{$w} if $low{$w} < $low{$v} }
            elsif ($on{$w}) { $low{$v} = $idx{$w} if $idx{$w} < $low{$v} }
        }
        if ($low{$v} == $idx{$v})
        {
            my @c;
            my $w;
            do { $w = pop @stack; $on{$w} = 0; push @c, $w } while ($w ne $v);
            if (@c > 1) { my @s = sort @c; $comp{$_} = \@s for @c }
        }
    };
    for my $f (sort keys %files) { $strong->($f) unless exists $idx{$f} }

    # One shortest cycle through a file, for the message.
    my $cycle_of = sub {
        my ($start) = @_;
        my %prev;
        my @queue = ($start);
        my %seen;
        while (@queue)
        {
            my $v = shift @queue;
            for my $w (sort keys %{ $edge{$v} || {} })
            {
                if ($w eq $start)
                {
                    my @path = ($v);
                    unshift @path, $prev{$path[0]} while exists $prev{$path[0]};
                    return join(" -> ", @path, $start) . " (" .
                        join("; ", map { my ($a, $b) = ($path[$_], $path[$_ + 1] // $start);
                                         "$a: " . join(" ", sort @{ $edge{$a}{$b} }) } 0 .. $#path) . ")";
                }
                next if $seen{$w}++;
                $prev{$w} = $v;
                push @queue, $w;
            }
        }
    };

    my ($n, $failed) = (0, 0);
    for my $f (sort keys %files)
    {
        $n++;
        if ($comp{$f})
        {
            $failed++;
            print "not ok $n - $f is in no cycle\n";
            print "# cycle: ", $cycle_of->($f), "\n";
        }
        else
        {
            print "ok $n - $f is in no cycle\n";
        }
    }
    print "1..$n\n";
    exit($failed ? 1 : 0);
'
