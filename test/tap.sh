#!/usr/bin/env bash
# test/tap.sh: the TAP files of every major in one pool of workers, the
# slowest first, as test/run.sh runs them (test/README.md says why).
#
#   bash test/tap.sh LOGDIR SRC PG_CONFIG...
#
# For each major: a copy of SRC to run in (a file that dies leaves its
# tmp_check there, not in the next major's), the environment PGXS gives
# prove there (captured by running "make installcheck" with PROVE set to
# this script's "env" mode), and an initdb template that each server's
# data directory is copied from (PostgreSQL::Test::Cluster does it from 17
# on, test/perl/ShardedIdTest.pm on 15) instead of running initdb.
# Then every (major, file) pair runs in SHID_PROVE_JOBS workers (3 by
# default), in the order of test/times.md (slowest first; files not in it
# after).  Each file's output goes to LOGDIR/tap/pgNN/FILE.log; at the end
# each major's are put together, in file order, into LOGDIR/pgNN-tap.log,
# and LOGDIR/pgNN-tap.failed marks a major one of whose files failed.
# SHID_TAP_FILES (a glob, test/t/*.pl by default) picks the files.
set -euo pipefail

# "env FILE ARGS...": called by PGXS as prove; keep its environment and
# flags (the test list, one word here, is dropped).
if [ "${1:-}" = env ]; then
    out=$2
    shift 2
    { export -p; printf 'tap_flags=('; printf '%q ' "${@:1:$#-1}"; printf ')\n'; } >"$out"
    exit 0
fi

# "one LOGDIR MAJOR FILE": run one file in that major's tree.
if [ "${1:-}" = one ]; then
    logs=$2 major=$3 file=$4
    tree=$logs/tap/tree$major
    log=$logs/tap/pg$major/$(basename "$file" .pl).log
    # shellcheck disable=SC1090,SC1091
    . "$tree/.tap_env"
    cd "$tree"
    start=$SECONDS
    # A file that hangs ends after 30 minutes, failed, and the pool goes on.
    if timeout --kill-after=30 1800 /usr/bin/prove "${tap_flags[@]}" "$file" >"$log" 2>&1; then
        result=ok
    else
        result=FAILED
        touch "$log.failed"
        # Servers a file left running (killed by the timeout, or died
        # before its END block): stopped, so that they take no CPU from the
        # files after it.
        for pid in tmp_check/t_"$(basename "$file" .pl)"_*/pgdata/postmaster.pid; do
            [ -f "$pid" ] && pg_ctl -D "$(dirname "$pid")" stop -m immediate >/dev/null 2>&1 || true
        done
    fi
    echo "   [$(date +%T)] pg$major $file: $result ($((SECONDS - start)) s)"
    exit 0
fi

logs=$1 src=$2
shift 2
me=$src/test/tap.sh
jobs=${SHID_PROVE_JOBS:-3}
mkdir -p "$logs/tap"

# Each major's tree, environment and initdb template.
for pg_config in "$@"; do
    major=$("$pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
    tree=$logs/tap/tree$major
    mkdir -p "$tree" "$logs/tap/pg$major"
    # Not what a run left in SRC (test/run.sh passes a copy of its own).
    tar -C "$src" --exclude=./tmp_check --exclude=./results --exclude=./output_iso \
        --exclude='./regression.*' --exclude=./log -cf - . | tar -C "$tree" -xf -
    make -s -C "$tree" installcheck PG_CONFIG="$pg_config" REGRESS= ISOLATION= \
        PROVE="bash $me env $tree/.tap_env" PROVE_FLAGS="-v --timer" PROVE_TESTS=none >/dev/null
    # As PostgreSQL::Test::Cluster runs it (15's: -D -A trust -N), in the
    # locale PostgreSQL::Test::Utils sets.
    env -u LC_ALL -u LANGUAGE LC_MESSAGES=C \
        "$("$pg_config" --bindir)/initdb" --no-sync --pgdata "$tree/initdb-template" --auth trust \
        >"$logs/tap/initdb$major.log" 2>&1
    if [ "$major" -ge 17 ]; then
        echo "export INITDB_TEMPLATE=$tree/initdb-template" >>"$tree/.tap_env"
    else
        echo "export SHID_INITDB_TEMPLATE=$tree/initdb-template" >>"$tree/.tap_env"
    fi
done

# The jobs, slowest first by test/times.md (its column pgNN-tap, or its
# slowest column; 60 s for a file it lacks).
cd "$src"
perl - "$src/test/times.md" "$@" <<'PERL' >"$logs/tap/jobs"
use strict;
use warnings;
my ($times, @configs) = @ARGV;
my (%t, @cols);
if (open my $fh, '<', $times)
{
	while (<$fh>)
	{
		my @c = map { s/^\s+|\s+$//gr } split /\|/;
		shift @c;
		if ($c[0] eq 'file') { @cols = map { s/ \(s\)$//r } @c[ 1 .. $#c ]; next; }
		next unless $c[0] =~ m{^test/t/};
		$t{ $c[0] }{ $cols[$_ - 1] } = $c[$_] for 1 .. $#cols + 1;
	}
}
my @jobs;
for my $config (@configs)
{
	my ($major) = `$config --version` =~ /PostgreSQL (\d+)/;
	for my $file (sort glob($ENV{SHID_TAP_FILES} || 'test/t/*.pl'))
	{
		my $row = $t{$file} // {};
		my $v = $row->{"pg$major-tap"};
		($v) = sort { $b <=> $a } grep { /^[\d.]+$/ } values %$row unless defined $v && $v =~ /^[\d.]+$|^skip$/;
		$v = 60 unless defined $v;
		$v = 0 if $v eq 'skip';
		push @jobs, [ $v, $major, $file ];
	}
}
print "$_->[1] $_->[2]\n" for sort { $b->[0] <=> $a->[0] || $a->[1] <=> $b->[1] || $a->[2] cmp $b->[2] } @jobs;
PERL

# The pool.
xargs -P "$jobs" -L 1 bash "$me" one "$logs" <"$logs/tap/jobs"

# Each major's log, in file order.
for pg_config in "$@"; do
    major=$("$pg_config" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/')
    out=$logs/pg$major-tap.log
    : >"$out"
    for file in ${SHID_TAP_FILES:-test/t/*.pl}; do
        log=$logs/tap/pg$major/$(basename "$file" .pl).log
        if [ -f "$log" ]; then
            cat "$log" >>"$out"
        else
            echo "$file .. not run" >>"$out"
            touch "$logs/pg$major-tap.failed"
        fi
        [ -f "$log.failed" ] && touch "$logs/pg$major-tap.failed"
    done
done
exit 0
