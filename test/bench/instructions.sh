#!/usr/bin/env bash
# test/bench/instructions.sh: the instructions one call of next_id costs,
# this build against a release, counted by valgrind's callgrind: a count,
# not a time, so the same on a loaded machine as on a quiet one.  Run as
# root on Debian bookworm (valgrind installed):
#
#   BASE=1fd722a bash test/bench/instructions.sh [OUTPUT.md]
#
# It builds BASE (default: the last commit of 1.6) from git and this tree,
# each with plain make, and installs their libraries as sharded_id_base.so
# and sharded_id_new.so (so that no other install of sharded_id.so beside
# it changes what it counts), makes a data directory for each, and runs, as the
# user sharded_id_test, a single-user backend (postgres --single) under
# callgrind for each call: nextval, counter mode and seed mode over 8192
# shards, and counter mode on one shard.  A call's count is the program's
# total for 200,000 calls in one statement less its total for 0 calls,
# over 200,000.  PostgreSQL 15, or the major PG_CONFIG names.
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$src/test/bench/results/instructions.md}
calls=200000
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
test_user=sharded_id_test

if [ "$(id -u)" -eq 0 ]; then
    command -v valgrind >/dev/null || apt-get -q install -y valgrind >/dev/null
    base=${BASE:-1fd722a}
    for lib in sharded_id_base sharded_id_new; do
        build=$(mktemp -d /tmp/$lib.XXXXXX)
        if [ $lib = sharded_id_base ]; then
            git -c safe.directory="$src" -C "$src" archive "$base" | tar -x -C "$build"
        else
            (cd "$src" && git -c safe.directory="$src" ls-files -z | tar -c --null -T - | tar -x -C "$build")
        fi
        make -s -C "$build" PG_CONFIG="$PG_CONFIG" >/dev/null
        install -m 755 "$build/sharded_id.so" "$("$PG_CONFIG" --pkglibdir)/$lib.so.new"
        mv -f "$("$PG_CONFIG" --pkglibdir)/$lib.so.new" "$("$PG_CONFIG" --pkglibdir)/$lib.so"
        rm -rf "$build"
    done
    id "$test_user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$test_user"
    mkdir -p "$(dirname "$out")"
    touch "$out"
    chown "$test_user:" "$out"
    exec runuser -u "$test_user" -- env PG_CONFIG="$PG_CONFIG" \
        BASE_LABEL="$(git -c safe.directory="$src" -C "$src" log -1 --format='%h, %s' "$base" | cut -c1-60)" bash "$0" "$out"
fi

bindir=$("$PG_CONFIG" --bindir)
work=$(mktemp -d /tmp/sharded_id_instructions.XXXXXX)
trap 'rm -rf "$work"' EXIT

for lib in sharded_id_base sharded_id_new; do
    "$bindir/initdb" -D "$work/$lib" -A trust >/dev/null
    echo "shared_preload_libraries = '$lib'" >>"$work/$lib/postgresql.conf"
    # Only the two C functions measured, bound to each library.
    printf '%s\n' "CREATE SEQUENCE seq;" "CREATE SCHEMA sharded_id;" \
        "CREATE FUNCTION sharded_id.next_id(integer) RETURNS bigint AS '$lib', 'shid_next_counter_id' LANGUAGE C VOLATILE STRICT;" \
        "CREATE FUNCTION sharded_id.next_id(integer, regclass) RETURNS bigint AS '$lib', 'shid_next_id' LANGUAGE C VOLATILE STRICT;" |
        "$bindir/postgres" --single -D "$work/$lib" postgres >/dev/null 2>&1
done

# The program's instructions for one statement of n calls of expr.
count() {
    local lib=$1 expr=$2 n=$3 file
    file=$(mktemp "$work/callgrind.XXXXXX")
    echo "SELECT count($expr) FROM generate_series(1, $n) g;" |
        valgrind --tool=callgrind --callgrind-out-file="$file" "$bindir/postgres" --single -D "$work/$lib" postgres >/dev/null 2>&1
    callgrind_annotate "$file" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}

declare -A expr=([nextval]="nextval('seq')" [counter]="sharded_id.next_id((g % 8192)::int)"
    [seed]="sharded_id.next_id((g % 8192)::int, 'seq')" [counter, one shard]="sharded_id.next_id(3)")
declare -A per_call
for lib in sharded_id_base sharded_id_new; do
    for m in nextval counter seed "counter, one shard"; do
        a=$(count "$lib" "${expr[$m]}" 0)
        b=$(count "$lib" "${expr[$m]}" "$calls")
        per_call[$lib/$m]=$(((b - a) / calls))
    done
done

{
    echo "## Instructions per call, this build against $BASE_LABEL"
    echo
    echo "PostgreSQL $("$bindir/postgres" --version | sed 's/^postgres (PostgreSQL) //'), single-user backend under callgrind; $calls calls in one statement, less 0 calls."
    echo
    echo "| call | base | new | base, ratio to nextval | new, ratio to nextval |"
    echo "|---|---:|---:|---:|---:|"
    for m in nextval counter seed "counter, one shard"; do
        b=${per_call[sharded_id_base/$m]} n=${per_call[sharded_id_new/$m]}
        bn=${per_call[sharded_id_base/nextval]} nn=${per_call[sharded_id_new/nextval]}
        printf '| %s | %s | %s | %s | %s |\n' "$m" "$b" "$n" \
            "$(awk -v a="$b" -v b="$bn" 'BEGIN { printf "%.4f", a / b }')" \
            "$(awk -v a="$n" -v b="$nn" 'BEGIN { printf "%.4f", a / b }')"
    done
} | tee "$out"
