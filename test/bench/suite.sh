#!/usr/bin/env bash
# test/bench/suite.sh: the benchmark suite proper.  Runs against the server
# that the PG* variables point to (test/bench/run.sh starts a throwaway one
# with pg_virtualenv), prints Markdown tables and writes them to the file
# given as $1 (default test/bench/results/latest.md).
#
# Every figure is a median over rounds, and within a round the candidates
# run one after the other in an order that rotates from round to round, so
# that ratios are taken side by side under the same conditions.
#
# Knobs: ROUNDS (per-call and bulk rounds, default 7), PGBENCH_ROUNDS
# (default 5), PGBENCH_SECONDS (default 5).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/results/latest.md}
rounds=${ROUNDS:-7}
pgbench_rounds=${PGBENCH_ROUNDS:-5}
pgbench_seconds=${PGBENCH_SECONDS:-5}
calls=1000000
mkdir -p "$(dirname "$out")"

psql=(psql -X -q -v ON_ERROR_STOP=1)
"${psql[@]}" -c 'DROP SCHEMA IF EXISTS bench, insta5, shard_0005 CASCADE' -c 'DROP EXTENSION IF EXISTS sharded_id CASCADE' 2>/dev/null
"${psql[@]}" -f "$here/setup.sql"

record() {
    # section candidate metric round value-expression
    "${psql[@]}" -c "INSERT INTO bench.results SELECT '$1', '$2', '$3', $4, $5"
}

# Print the names of "$@" rotated left by $1 positions.
rotate() {
    local k=$1
    shift
    local n=$#
    local items=("$@")
    for ((i = 0; i < n; i++)); do
        echo "${items[$(((i + k) % n))]}"
    done
}

echo "== per call: $calls calls in one statement, $rounds rounds"
declare -A percall=(
    ["nextval"]="nextval('bench.seq')"
    ["nextval + shard expression"]="nextval('bench.seq') + g % 8192"
    ["next_id, 8192 shards"]="sharded_id.next_id(g % 8192, 'bench.seq')"
    ["next_id, one shard"]="sharded_id.next_id(1, 'bench.seq')"
    ["PL/pgSQL original"]="insta5.seed_next_id()"
    ["gen_random_uuid"]="gen_random_uuid()"
)
names=("nextval" "nextval + shard expression" "next_id, 8192 shards" "next_id, one shard"
    "PL/pgSQL original" "gen_random_uuid")
for ((r = 1; r <= rounds; r++)); do
    while read -r name; do
        stmt="SELECT count(${percall[$name]}) FROM (SELECT generate_series(1, $calls) AS g) s"
        record percall "$name" ms "$r" "bench.time_ms(\$q\$$stmt\$q\$)"
    done < <(rotate "$r" "${names[@]}")
done

echo "== bulk INSERT of $calls rows, $rounds rounds"
declare -A bulk=(
    ["bigserial"]=bench.t_bigserial
    ["next_id(5, seq)"]=bench.t_next_id
    ["shard_0005.next_id() wrapper"]=bench.t_wrapper
    ["PL/pgSQL original"]=bench.t_plpgsql
    ["uuid (gen_random_uuid)"]=bench.t_uuid
)
names=("bigserial" "next_id(5, seq)" "shard_0005.next_id() wrapper" "PL/pgSQL original" "uuid (gen_random_uuid)")
for ((r = 1; r <= rounds; r++)); do
    while read -r name; do
        "${psql[@]}" -c CHECKPOINT
        "${psql[@]}" -c "INSERT INTO bench.results
            SELECT 'bulk', '$name', m.metric, $r, m.value
            FROM bench.bulk_insert('${bulk[$name]}', $calls) b,
                 LATERAL (VALUES ('ms', b.ms), ('wal_bytes', b.wal_bytes), ('pk_bytes', b.pk_bytes)) m(metric, value)"
    done < <(rotate "$r" "${names[@]}")
done

# One pgbench run: table, clients; prints transactions per second.
pgbench_tps() {
    local table=$1 clients=$2
    local jobs=$((clients < 2 ? clients : 2))
    "${psql[@]}" -c "TRUNCATE bench.t_$table" -c CHECKPOINT
    pgbench -n -c "$clients" -j "$jobs" -T "$pgbench_seconds" \
        -f "$here/pgbench/insert_$table.sql" 2>&1 |
        sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -n 1
}

echo "== pgbench single-row INSERT, 1/2/4/8 clients, ${pgbench_seconds}s runs, $pgbench_rounds rounds"
declare -A tables=(
    ["bigserial"]=bigserial
    ["next_id(5, seq)"]=next_id
    ["shard_0005.next_id() wrapper"]=wrapper
    ["PL/pgSQL original"]=plpgsql
    ["uuid (gen_random_uuid)"]=uuid
)
for ((r = 1; r <= pgbench_rounds; r++)); do
    for clients in 1 2 4 8; do
        while read -r name; do
            tps=$(pgbench_tps "${tables[$name]}" "$clients")
            record pgbench "$name" "$clients clients" "$r" "${tps:?pgbench printed no tps}"
        done < <(rotate "$r" "${names[@]}")
    done
done

echo "== sequence CACHE under next_id, 4 clients, $pgbench_rounds rounds"
caches=("CACHE 1" "CACHE 32" "CACHE 1000")
for ((r = 1; r <= pgbench_rounds; r++)); do
    while read -r name; do
        table="cache${name#CACHE }"
        tps=$(pgbench_tps "$table" 4)
        record cache "$name" tps "$r" "${tps:?pgbench printed no tps}"
    done < <(rotate "$r" "${caches[@]}")
done

{
    echo "## sharded_id benchmark"
    echo
    echo "- machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), $(free -g | awk '/^Mem:/ {print $2}') GiB"
    echo "- server: $(psql -XAt -c 'SHOW server_version'), fsync=$(psql -XAt -c 'SHOW fsync'), synchronous_commit=$(psql -XAt -c 'SHOW synchronous_commit'), shared_buffers=$(psql -XAt -c 'SHOW shared_buffers')"
    echo "- run: $(date -u '+%Y-%m-%d %H:%M UTC'), ROUNDS=$rounds PGBENCH_ROUNDS=$pgbench_rounds PGBENCH_SECONDS=$pgbench_seconds"
    echo
    "${psql[@]}" -f "$here/report.sql"
} | tee "$out"
echo "written to $out"
