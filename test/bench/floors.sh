#!/usr/bin/env bash
# test/bench/floors.sh: what raising the floors of many shards in one
# transaction costs against one call, this build against a release, side
# by side in one run.  Run as root on Debian bookworm:
#
#   BASE=1fd722a bash test/bench/floors.sh [OUTPUT.md]
#
# It builds and installs this tree (test/setup.sh; SKIP_SETUP=1 uses the
# build already installed), builds BASE (default:
# the last commit of 1.6) from git and installs its library as
# sharded_id_base.so beside this one's, then starts two throwaway clusters
# as the user sharded_id_test: "base" preloads the release's library, "new"
# this one's.  Each round times, on each cluster in turn, as psql's round
# trip of one autocommit statement (so the commit, and whatever it makes
# durable, is inside the figure):
#
#   one:   SELECT raise_floor(7, high_water(7) + 2^23)
#   many:  SELECT count(raise_floor(s, high_water(s) + 2^23))
#              FROM generate_series(1, 1000) s
#
# each raising the floors 1 ms past where they were, so every call raises.
# A cluster's ratio is the median of "many" over the median of "one", over
# ROUNDS rounds (default 11).  PostgreSQL 15, or the major PG_CONFIG names.
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$src/test/bench/results/floors.md}
rounds=${ROUNDS:-11}
shards=1000
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
test_user=sharded_id_test

if [ "$(id -u)" -eq 0 ]; then
    [ -n "${SKIP_SETUP:-}" ] || bash "$src/test/setup.sh" >/dev/null
    base=${BASE:-1fd722a}
    build=$(mktemp -d /tmp/sharded_id_base.XXXXXX)
    git -c safe.directory="$src" -C "$src" archive "$base" | tar -x -C "$build"
    make -s -C "$build" PG_CONFIG="$PG_CONFIG" >/dev/null
    install -m 755 "$build/sharded_id.so" "$("$PG_CONFIG" --pkglibdir)/sharded_id_base.so"
    rm -rf "$build"
    id "$test_user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$test_user"
    mkdir -p "$(dirname "$out")"
    touch "$out"
    chown "$test_user:" "$out"
    exec runuser -u "$test_user" -- env PG_CONFIG="$PG_CONFIG" ROUNDS="$rounds" \
        BASE_LABEL="$(git -c safe.directory="$src" -C "$src" log -1 --format='%h, %s' "$base" | cut -c1-60)" bash "$0" "$out"
fi

bindir=$("$PG_CONFIG" --bindir)
work=$(mktemp -d /tmp/sharded_id_floors.XXXXXX)
clusters=(base new)
declare -A port=([base]=54381 [new]=54382)
declare -A lib=([base]=sharded_id_base [new]=sharded_id)
stop_all() {
    for c in "${clusters[@]}"; do
        "$bindir/pg_ctl" -D "$work/$c" -m immediate stop >/dev/null 2>&1 || true
    done
    rm -rf "$work"
}
trap stop_all EXIT
q() { "$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$work" -p "${port[$1]}" -d postgres -c "$2"; }

for c in "${clusters[@]}"; do
    "$bindir/initdb" -D "$work/$c" -A trust >/dev/null
    printf '%s\n' "shared_preload_libraries = '${lib[$c]}'" "port = ${port[$c]}" \
        "unix_socket_directories = '$work'" "listen_addresses = ''" "autovacuum = off" \
        "sharded_id.max_shards = 4096" >>"$work/$c/postgresql.conf"
    "$bindir/pg_ctl" -D "$work/$c" -l "$work/$c.log" -w start >/dev/null
    # Only the two C functions measured, bound to each cluster's library,
    # so that both run the same SQL.
    q "$c" "CREATE SCHEMA sharded_id;
        CREATE FUNCTION sharded_id.raise_floor(integer, bigint) RETURNS bigint
            AS '${lib[$c]}', 'shid_raise_floor' LANGUAGE C VOLATILE STRICT;
        CREATE FUNCTION sharded_id.high_water(integer) RETURNS bigint
            AS '${lib[$c]}', 'shid_high_water' LANGUAGE C VOLATILE STRICT;"
done

declare -A stmt=(
    [one]="SELECT sharded_id.raise_floor(7, sharded_id.high_water(7) + 8388608)"
    [many]="SELECT count(sharded_id.raise_floor(s, sharded_id.high_water(s) + 8388608)) FROM generate_series(1, $shards) s")

# psql's round trip of one statement, in ms.
timed() {
    "$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$work" -p "${port[$1]}" -d postgres \
        -c '\timing on' -c "$2" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
}

results=$work/results.tsv
: >"$results"
for ((r = 1; r <= rounds; r++)); do
    for c in "${clusters[@]}"; do
        # Warm: every shard's slot exists before anything is timed.
        [ "$r" -gt 1 ] || timed "$c" "${stmt[many]}" >/dev/null
        for m in one many; do
            printf '%s\t%s\t%s\t%s\n' "$c" "$m" "$r" "$(timed "$c" "${stmt[$m]}")" >>"$results"
        done
    done
done

report=$("$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$work" -p "${port[new]}" -d postgres <<SQL
CREATE TEMP TABLE r (cluster text, mode text, round int, ms float8);
\\copy r FROM '$results'
CREATE TEMP VIEW med AS
SELECT cluster, mode, percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS ms FROM r GROUP BY 1, 2;
SELECT format('| %s | %s | %s | %s |', o.cluster, round(o.ms::numeric, 2), round(m.ms::numeric, 2),
              round((m.ms / o.ms)::numeric, 2))
FROM med o JOIN med m ON m.cluster = o.cluster AND m.mode = 'many'
WHERE o.mode = 'one'
ORDER BY array_position(ARRAY['base', 'new'], o.cluster);
SQL
)

{
    echo "## Floors of $shards shards in one transaction against one call ($BASE_LABEL as base)"
    echo
    echo "PostgreSQL $("$bindir/postgres" --version | sed 's/^postgres (PostgreSQL) //'), $(nproc) cores, $rounds rounds; median of psql's round trip of one autocommit statement, commit included."
    echo
    echo "| cluster | one raise_floor, ms | $shards raise_floor in one transaction, ms | ratio |"
    echo "|---|---:|---:|---:|"
    printf '%s\n' "$report"
} | tee "$out"
