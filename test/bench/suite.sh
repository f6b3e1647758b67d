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
# (default 5), PGBENCH_SECONDS (default 5), MOVE_ROUNDS (moves per method
# and size, default PGBENCH_ROUNDS), MOVE_SIZES (default "10000 100000
# 1000000"), MOVE_WRITER_SECONDS (default "6 10 40") and MOVE_OPTS (more
# options for sharded_id_move_shard, such as --verbose), and SECTIONS, the
# sections to run (default all: "percall bulk pgbench cache router move
# writers").
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/results/latest.md}
rounds=${ROUNDS:-7}
pgbench_rounds=${PGBENCH_ROUNDS:-5}
pgbench_seconds=${PGBENCH_SECONDS:-5}
calls=1000000
mkdir -p "$(dirname "$out")"
sections=" ${SECTIONS:-percall bulk pgbench cache router move writers} "
want() { [[ $sections == *" $1 "* ]]; }

# The server's own client programs, not whichever major Debian's wrappers pick.
bindir=$("${PG_CONFIG:-pg_config}" --bindir)
psql=("$bindir/psql" -X -q -v ON_ERROR_STOP=1)
pgbench() { "$bindir/pgbench" "$@"; }
psql_at() { "$bindir/psql" -XAt "$@"; }
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
# 16 shards in turn, through each shard's zero-argument next_id() or the
# direct call it stands for: the same statement shape, below the ceiling.
case_over_shards() {
    local expr="CASE g % 16" s
    for s in $(seq 0 15); do
        if [ "$1" = wrapper ]; then
            expr+=" WHEN $s THEN shard_$(printf %04d "$s").next_id()"
        else
            expr+=" WHEN $s THEN sharded_id.next_id($s, 'shard_$(printf %04d "$s").id_seq')"
        fi
    done
    echo "$expr END"
}
declare -A percall=(
    ["nextval"]="nextval('bench.seq')"
    ["nextval + shard expression"]="nextval('bench.seq') + g % 8192"
    ["next_id, 8192 shards"]="sharded_id.next_id(g % 8192, 'bench.seq')"
    ["next_id, 8192 shards, again (noise floor)"]="sharded_id.next_id(g % 8192, 'bench.seq')"
    ["next_id, 8192 shards, track_stats off"]="sharded_id.next_id(g % 8192, 'bench.seq')"
    ["next_id, one shard"]="sharded_id.next_id(1, 'bench.seq')"
    ["counter next_id(n), 8192 shards"]="sharded_id.next_id(g % 8192)"
    ["counter next_id(n), one shard"]="sharded_id.next_id(3)"
    ["next_id(n, seq) over 16 shards"]="$(case_over_shards direct)"
    ["shard_n.next_id() over 16 shards"]="$(case_over_shards wrapper)"
    ["PL/pgSQL original"]="insta5.seed_next_id()"
    ["gen_random_uuid"]="gen_random_uuid()"
)
declare -A percall_settings=(
    ["next_id, 8192 shards, track_stats off"]="sharded_id.track_stats=off"
)
names=("nextval" "nextval + shard expression" "next_id, 8192 shards" "next_id, one shard"
    "next_id, 8192 shards, again (noise floor)" "next_id, 8192 shards, track_stats off"
    "counter next_id(n), 8192 shards" "counter next_id(n), one shard"
    "next_id(n, seq) over 16 shards" "shard_n.next_id() over 16 shards" "PL/pgSQL original" "gen_random_uuid")
if want percall; then
for ((r = 1; r <= rounds; r++)); do
    while read -r name; do
        stmt="SELECT count(${percall[$name]}) FROM (SELECT generate_series(1, $calls) AS g) s"
        settings=${percall_settings[$name]:-}
        "${psql[@]}" -c "INSERT INTO bench.results
            SELECT 'percall', '$name', m.metric, $r, m.value
            FROM bench.time_ms(\$q\$$stmt\$q\$, '{$settings}') t,
                 LATERAL (VALUES ('ms', t.ms), ('wal_bytes', t.wal_bytes)) m(metric, value)"
    done < <(rotate "$r" "${names[@]}")
done
fi

echo "== bulk INSERT of $calls rows, $rounds rounds"
declare -A bulk=(
    ["bigserial"]=bench.t_bigserial
    ["bigserial, again (noise floor)"]=bench.t_bigserial2
    ["next_id(5, seq)"]=bench.t_next_id
    ["counter next_id(9)"]=bench.t_counter
    ["shard_0005.next_id() wrapper"]=bench.t_wrapper
    ["PL/pgSQL original"]=bench.t_plpgsql
    ["uuid (gen_random_uuid)"]=bench.t_uuid
)
names=("bigserial" "bigserial, again (noise floor)" "next_id(5, seq)" "counter next_id(9)"
    "shard_0005.next_id() wrapper" "PL/pgSQL original" "uuid (gen_random_uuid)")
if want bulk; then
for ((r = 1; r <= rounds; r++)); do
    while read -r name; do
        "${psql[@]}" -c CHECKPOINT
        "${psql[@]}" -c "INSERT INTO bench.results
            SELECT 'bulk', '$name', m.metric, $r, m.value
            FROM bench.bulk_insert('${bulk[$name]}', $calls) b,
                 LATERAL (VALUES ('ms', b.ms), ('wal_bytes', b.wal_bytes), ('pk_bytes', b.pk_bytes)) m(metric, value)"
    done < <(rotate "$r" "${names[@]}")
done
fi

# One pgbench run: table, clients; prints transactions per second.
pgbench_tps() {
    local table=$1 clients=$2
    local jobs=$((clients < 2 ? clients : 2))
    "${psql[@]}" -c "TRUNCATE bench.t_$table" -c CHECKPOINT
    pgbench -n -c "$clients" -j "$jobs" -T "$pgbench_seconds" \
        -f "$here/pgbench/insert_$table.sql" 2>&1 |
        sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -n 1
}

echo "== pgbench single-row INSERT, 1/2/4 clients, ${pgbench_seconds}s runs, $pgbench_rounds rounds"
declare -A tables=(
    ["bigserial"]=bigserial
    ["bigserial, again (noise floor)"]=bigserial2
    ["next_id(5, seq)"]=next_id
    ["counter next_id(9)"]=counter
    ["shard_0005.next_id() wrapper"]=wrapper
    ["PL/pgSQL original"]=plpgsql
    ["uuid (gen_random_uuid)"]=uuid
)
if want pgbench; then
for ((r = 1; r <= pgbench_rounds; r++)); do
    for clients in 1 2 4; do
        while read -r name; do
            tps=$(pgbench_tps "${tables[$name]}" "$clients")
            record pgbench "$name" "$clients clients" "$r" "${tps:?pgbench printed no tps}"
        done < <(rotate "$r" "${names[@]}")
    done
done
fi

echo "== sequence CACHE under next_id, 4 clients, $pgbench_rounds rounds"
caches=("CACHE 1" "CACHE 32" "CACHE 1000")
if want cache; then
for ((r = 1; r <= pgbench_rounds; r++)); do
    while read -r name; do
        table="cache${name#CACHE }"
        tps=$(pgbench_tps "$table" 4)
        record cache "$name" tps "$r" "${tps:?pgbench printed no tps}"
    done < <(rotate "$r" "${caches[@]}")
done
fi

echo "== router: PL/Proxy overhead, $pgbench_rounds rounds"
# Two data nodes as two databases of this cluster, this database as router.
example=$here/../example
# The password is in each node's connection string, as an operator may
# keep it; an online move's subscription carries none, so the server reads
# it from a password file of its own.
passdir=$(mktemp -d)
trap 'rm -rf "$passdir"' EXIT
chmod 711 "$passdir"
echo "*:*:*:$PGUSER:$PGPASSWORD" >"$passdir/pgpass"
chmod 600 "$passdir/pgpass"
chown "$(stat -c %U "$(psql_at -c 'SHOW data_directory')")" "$passdir/pgpass"
node_conn() { echo "host=$PGHOST port=$PGPORT user=$PGUSER password=$PGPASSWORD passfile=$passdir/pgpass dbname=$1"; }
for db in bench_node_a bench_node_b; do
    "${psql[@]}" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
    if [ $db = bench_node_a ]; then shards='0,2,4,6'; else shards='1,3,5,7'; fi
    "${psql[@]}" -d $db -c "CREATE EXTENSION sharded_id" -f "$example/templates.sql" \
        -c "SELECT sharded_id.add_table('app.users'), sharded_id.add_table('app.photos')" \
        -c "SELECT count(sharded_id.create_shard(s)) FROM unnest(ARRAY[$shards]) s"
    "${psql[@]}" -d $db -v shard_count=8 -f "$example/node_api.sql"
done
"${psql[@]}" -c 'DROP SCHEMA IF EXISTS app_api, app CASCADE' -c 'CREATE EXTENSION IF NOT EXISTS plproxy' \
    -c 'CREATE EXTENSION IF NOT EXISTS dblink' -c 'CREATE EXTENSION IF NOT EXISTS postgres_fdw' \
    -c "DO \$\$ BEGIN   -- the router: an extension of its own from 2.0 on, part of sharded_id before
            IF (SELECT string_to_array(extversion, '.')::int[] >= '{2,0}' FROM pg_extension WHERE extname = 'sharded_id') THEN
                CREATE EXTENSION IF NOT EXISTS sharded_id_router;
            END IF;
        END \$\$" \
    -c 'DELETE FROM sharded_id.shard_map' -c 'DELETE FROM sharded_id.nodes' \
    -c "INSERT INTO sharded_id.nodes VALUES ('a', '$(node_conn bench_node_a)'), ('b', '$(node_conn bench_node_b)')" \
    -c "INSERT INTO sharded_id.shard_map SELECT s, CASE WHEN s % 2 = 0 THEN 'a' ELSE 'b' END FROM generate_series(0, 7) s" \
    -c 'SELECT sharded_id.apply_shard_map()'
"${psql[@]}" -v shard_count=8 -f "$example/router_api.sql"
"${psql[@]}" -c "CREATE TABLE bench.demo_users AS SELECT g AS n, app_api.add_user('user ' || g) AS user_id FROM generate_series(1, 200) g"
# A user whose shard is on node a, for the direct calls.
uid=$(psql_at -c "SELECT user_id FROM bench.demo_users WHERE sharded_id.shard_id(user_id) % 2 = 0 LIMIT 1")
if want router; then
for ((r = 1; r <= pgbench_rounds; r++)); do
    for clients in 1 4; do
        for way in direct router; do
            if [ $way = direct ]; then db=bench_node_a; name="direct on the node"; else db=$PGDATABASE; name="through the PL/Proxy router"; fi
            tps=$(pgbench -n -c "$clients" -j "$((clients < 2 ? clients : 2))" -T "$pgbench_seconds" -D uid="$uid" \
                      -f "$here/pgbench/add_photo.sql" "$db" 2>&1 | sed -n 's/^tps = \([0-9.]*\).*/\1/p' | head -n 1)
            record router "$name" "$clients clients" "$r" "${tps:?pgbench printed no tps}"
        done
    done
done
fi
# Move shard 1 back and forth while two writers insert through the router,
# by each method, at about 10,000, 100,000 and 1,000,000 rows: before each
# move, the shard is brought back to its size with rows of one user.
# Writers run for MOVE_WRITER_SECONDS at each size, long enough to outlast
# the move (the report shows the move's total time beside it).
mover=$bindir/sharded_id_move_shard
move_rounds=${MOVE_ROUNDS:-$pgbench_rounds}
read -r -a move_sizes <<<"${MOVE_SIZES:-10000 100000 1000000}"
read -r -a writer_seconds <<<"${MOVE_WRITER_SECONDS:-6 10 40}"
if want move; then
echo "== shard moves under 2 writers through the router: online and dump, ${move_sizes[*]} rows, $move_rounds rounds"
uid1=$(psql_at -c "SELECT user_id FROM bench.demo_users WHERE sharded_id.shard_id(user_id) = 1 LIMIT 1")
from=b to=a
for i in "${!move_sizes[@]}"; do
    size=${move_sizes[$i]}
    for ((r = 1; r <= move_rounds; r++)); do
        while read -r method; do
            "${psql[@]}" -d bench_node_$from \
                -c "DELETE FROM shard_0001.photos WHERE caption = 'during a move'" \
                -c "INSERT INTO shard_0001.photos (user_id, caption)
                    SELECT $uid1, 'row ' || g FROM generate_series(1, $size - (SELECT count(*) FROM shard_0001.photos)) g" \
                -c 'VACUUM ANALYZE shard_0001.photos' -c CHECKPOINT
            rows=$(psql_at -d bench_node_$from -c 'SELECT count(*) FROM shard_0001.photos')
            pgbench -n -c 2 -j 2 -T "${writer_seconds[$i]}" --max-tries=1000 -f "$here/pgbench/add_photo_random.sql" \
                >"$out.writers" 2>&1 &
            writers=$!
            sleep 1    # let the writers connect; the freeze is measured by the tool itself
            # shellcheck disable=SC2086
            move_out=$("$mover" ${MOVE_OPTS:-} --method "$method" --shard 1 --from "$(node_conn bench_node_$from)" \
                           --to "$(node_conn bench_node_$to)" --to-node "$to" --router "$(node_conn "$PGDATABASE")")
            wait $writers
            name="$method, $size rows"
            record move "$name" "rows" "$r" "$rows"
            # The tool prints the move's write freeze; its total time is the
            # journal's, from the move's start to its end.
            record move "$name" "write freeze ms" "$r" "$(sed -n 's/^write freeze: \([0-9]*\) ms/\1/p' <<<"$move_out")"
            record move "$name" "total ms" "$r" "$(psql_at -c "SELECT round(extract(epoch FROM finished_at - started_at) * 1000)
                FROM sharded_id.moves ORDER BY move_id DESC LIMIT 1")"
            record move "$name" "writes" "$r" "$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out.writers")"
            record move "$name" "writes retried" "$r" "$(sed -n 's/^number of transactions retried: \([0-9]*\).*/\1/p' "$out.writers")"
            record move "$name" "writes failed" "$r" "$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$out.writers" | head -n 1)"
            record move "$name" "writer seconds" "$r" "${writer_seconds[$i]}"
            tmp=$from; from=$to; to=$tmp
        done < <(rotate "$r" online dump)
    done
done
fi
rm -f "$out.writers"

# The writers' view of a move, the command-line tool (a wrapper of
# move_shard) beside CALL sharded_id.move_shard, both online, at each size:
# the longest transaction of 2 pgbench writers through the router (from
# pgbench -l per-transaction latency logs), and their failed and retried
# transactions.  Both wait on the router's route lock, so the writers run
# without --max-tries: any error fails or aborts a client.
if want writers; then
echo "== moves seen by 2 writers through the router: command-line tool and move_shard, ${move_sizes[*]} rows, $move_rounds rounds"
uid1=$(psql_at -c "SELECT user_id FROM bench.demo_users WHERE sharded_id.shard_id(user_id) = 1 LIMIT 1")
from=$(psql_at -c "SELECT node_name FROM sharded_id.shard_map WHERE shard_id = 1")
if [ "$from" = a ]; then to=b; else to=a; fi
lat=$(mktemp -d)
chmod 777 "$lat"
for i in "${!move_sizes[@]}"; do
    size=${move_sizes[$i]}
    for ((r = 1; r <= move_rounds; r++)); do
        while read -r way; do
            "${psql[@]}" -d bench_node_$from \
                -c "DELETE FROM shard_0001.photos WHERE caption = 'during a move'" \
                -c "INSERT INTO shard_0001.photos (user_id, caption)
                    SELECT $uid1, 'row ' || g FROM generate_series(1, $size - (SELECT count(*) FROM shard_0001.photos)) g" \
                -c 'VACUUM ANALYZE shard_0001.photos' -c CHECKPOINT
            rm -f "$lat"/w.*
            pgbench -n -c 2 -j 2 -T "${writer_seconds[$i]}" -l --log-prefix="$lat/w" \
                -f "$here/pgbench/add_photo_random.sql" >"$out.writers" 2>&1 &
            writers=$!
            sleep 1    # let the writers connect
            if [ "$way" = "command-line tool" ]; then
                move_out=$("$mover" --method online --shard 1 --from "$(node_conn bench_node_$from)" \
                               --to "$(node_conn bench_node_$to)" --to-node "$to" --router "$(node_conn "$PGDATABASE")")
                freeze=$(sed -n 's/^write freeze: \([0-9]*\) ms/\1/p' <<<"$move_out")
            else
                "${psql[@]}" -c "CALL sharded_id.move_shard(1, '$to', method => 'online')"
                freeze=$(psql_at -c "SELECT round(freeze_ms) FROM sharded_id.moves ORDER BY move_id DESC LIMIT 1")
            fi
            wait $writers || true
            name="$way, $size rows"
            record writers "$name" "rows" "$r" "$size"
            record writers "$name" "write freeze ms" "$r" "$freeze"
            record writers "$name" "longest writer transaction ms" "$r" \
                "$(cat "$lat"/w.* | awk '$3 > m {m = $3} END {printf "%.1f", m / 1000}')"
            record writers "$name" "writes" "$r" "$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out.writers")"
            record writers "$name" "writes retried" "$r" "$(sed -n 's/^number of transactions retried: \([0-9]*\).*/\1/p' "$out.writers" | grep . || echo 0)"
            record writers "$name" "writes failed" "$r" "$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' "$out.writers" | head -n 1 | grep . || echo 0)"
            record writers "$name" "clients aborted" "$r" "$(grep -c 'aborted in command' "$out.writers" || true)"
            tmp=$from; from=$to; to=$tmp
        done < <(rotate "$r" "command-line tool" "move_shard")
    done
done
rm -rf "$lat"
fi
rm -f "$out.writers"
rm -rf "$passdir"

{
    echo "## sharded_id benchmark"
    echo
    echo "- machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), $(free -g | awk '/^Mem:/ {print $2}') GiB"
    echo "- server: $(psql_at -c 'SHOW server_version'), fsync=$(psql_at -c 'SHOW fsync'), synchronous_commit=$(psql_at -c 'SHOW synchronous_commit'), wal_level=$(psql_at -c 'SHOW wal_level'), shared_buffers=$(psql_at -c 'SHOW shared_buffers')"
    echo "- run: $(date -u '+%Y-%m-%d %H:%M UTC'), ROUNDS=$rounds PGBENCH_ROUNDS=$pgbench_rounds PGBENCH_SECONDS=$pgbench_seconds MOVE_ROUNDS=$move_rounds"
    echo
    "${psql[@]}" -f "$here/report.sql"
} | tee "$out"
echo "written to $out"
