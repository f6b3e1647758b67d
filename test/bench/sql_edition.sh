#!/usr/bin/env bash
# test/bench/sql_edition.sh: what one next_id costs in the SQL edition
# (sharded_id_sql) against nextval, the C extension and the seed's PL/pgSQL
# function, side by side in one run.  Run as root, after make install of
# this tree into the major PG_CONFIG names (default: PostgreSQL 18):
#
#   PG_CONFIG=/usr/lib/postgresql/18/bin/pg_config bash test/bench/sql_edition.sh [OUTPUT.md]
#
# It starts one throwaway cluster as the user sharded_id_test with the C
# library preloaded and two databases: "c" with CREATE EXTENSION sharded_id,
# "s" with CREATE EXTENSION sharded_id_sql (the two share the schema
# sharded_id, so they cannot share a database), the seed's function and a
# plain sequence.  Each round times, inside the server,
#
#   SELECT count(f) FROM generate_series(1, CALLS) g
#
# for each candidate f in turn, and divides by CALLS.  The shard is g % 64,
# so that no shard reaches its 1,024 ids a millisecond (the C extension can
# mint faster than that; the cap would be measured instead).  There each
# call of the SQL edition finds its shard behind the clock and moves it up
# under the lock: its dearest path.  sql_edition_one_shard mints one shard
# (next_id(5)), which the SQL edition keeps far below the cap: most calls
# find the sequence at the clock and take nextval without the lock.  The figure of
# a candidate is its median over ROUNDS rounds (default 7), the ratio its
# figure over nextval's.
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$src/test/bench/results/sql_edition.md}
rounds=${ROUNDS:-7}
calls=${CALLS:-100000}
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/18/bin/pg_config}
test_user=sharded_id_test

if [ "$(id -u)" -eq 0 ]; then
    id "$test_user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$test_user"
    mkdir -p "$(dirname "$out")"
    touch "$out"
    chown "$test_user:" "$out"
    exec runuser -u "$test_user" -- env PG_CONFIG="$PG_CONFIG" ROUNDS="$rounds" CALLS="$calls" bash "$0" "$out"
fi

bindir=$("$PG_CONFIG" --bindir)
work=$(mktemp -d /tmp/sharded_id_sql_bench.XXXXXX)
port=54391
trap '"$bindir/pg_ctl" -D "$work/data" -m immediate stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
q() { "$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$work" -p "$port" -d "$1" -c "$2"; }

"$bindir/initdb" -D "$work/data" -A trust >/dev/null
printf '%s\n' "shared_preload_libraries = 'sharded_id'" "port = $port" \
    "unix_socket_directories = '$work'" "listen_addresses = ''" "autovacuum = off" >>"$work/data/postgresql.conf"
"$bindir/pg_ctl" -D "$work/data" -l "$work/log" -w start >/dev/null
q postgres "CREATE DATABASE c"
q postgres "CREATE DATABASE s"
q c "CREATE EXTENSION sharded_id;"
q s "CREATE EXTENSION sharded_id_sql;
     CREATE SEQUENCE bench_seq;
     -- The seed's PL/pgSQL function as published (test/bench/setup.sql).
     CREATE SCHEMA insta5;
     CREATE SEQUENCE insta5.table_id_seq;
     CREATE FUNCTION insta5.seed_next_id(OUT result bigint) AS \$\$
     DECLARE
         our_epoch bigint := 1314220021721;
         seq_id bigint;
         now_millis bigint;
         shard_id int := 5;
     BEGIN
         SELECT nextval('insta5.table_id_seq') % 1024 INTO seq_id;
         SELECT FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) INTO now_millis;
         result := (now_millis - our_epoch) << 23;
         result := result | (shard_id << 10);
         result := result | (seq_id);
     END;
     \$\$ LANGUAGE plpgsql;
     -- every shard's sequences made before the rounds
     SELECT count(sharded_id.next_id(s)) FROM generate_series(0, 63) s;" >/dev/null

# candidate: database and expression
candidates=(nextval seed_plpgsql c_extension sql_edition sql_edition_one_shard)
declare -A db=([nextval]=s [seed_plpgsql]=s [c_extension]=c [sql_edition]=s [sql_edition_one_shard]=s)
declare -A expr=([nextval]="nextval('bench_seq')" [seed_plpgsql]="insta5.seed_next_id()"
    [c_extension]="sharded_id.next_id((g % 64)::integer)" [sql_edition]="sharded_id.next_id((g % 64)::integer)"
    [sql_edition_one_shard]="sharded_id.next_id(5)")
time_us() {
    q "${db[$1]}" "DO \$\$ DECLARE t0 timestamptz := clock_timestamp(); BEGIN
        PERFORM count(${expr[$1]}) FROM generate_series(1, $calls) g;
        RAISE NOTICE '%', extract(epoch FROM clock_timestamp() - t0) * 1e6 / $calls; END \$\$;" 2>&1 |
        sed -n 's/^NOTICE: *//p'
}
declare -A figures
for r in $(seq 1 "$rounds"); do
    for c in "${candidates[@]}"; do
        figures[$c]+="$(time_us "$c") "
    done
done
median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
base=$(printf '%s' "${figures[nextval]}" | median)
{
    echo "# next_id per call: SQL edition against nextval, C extension, seed PL/pgSQL"
    echo
    echo "PostgreSQL $("$PG_CONFIG" --version | sed 's/PostgreSQL //'), $calls calls a round, median of $rounds rounds, $(date -u +%F), $(nproc) cores."
    echo
    echo "| candidate | µs per call | ratio to nextval |"
    echo "| --- | ---: | ---: |"
    for c in "${candidates[@]}"; do
        m=$(printf '%s' "${figures[$c]}" | median)
        awk -v c="$c" -v m="$m" -v b="$base" 'BEGIN { printf "| %s | %.2f | %.1f |\n", c, m, m / b }'
    done
} | tee "$out"
