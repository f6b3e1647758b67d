#!/usr/bin/env bash
# test/bench/citus.sh: on Citus, side by side in one run, citus_schema_move
# against sharded_id's move_shard at 10,000 and 1,000,000 rows under 2
# writers (the longest writer transaction, the total time, failed writes),
# next_id against nextval on a Citus worker, and a hot shard on the Citus
# coordinator against a server without Citus (their ratio).
# test/bench/citus.pl says what it does; SIZES, ROUNDS, BIG_ROUNDS,
# WRITER_SECONDS, CALL_ROUNDS, CALLS, HOT_IDS and HOT_ROUNDS set the effort
# (SIZES='' CALL_ROUNDS=0 times the hot shard only).  Run as root on Debian
# bookworm with ../shared/citus:
#
#   bash test/bench/citus.sh [OUTPUT.md]     # about 10 minutes
#
# It installs PostgreSQL 18, Citus and this build (test/setup.sh; skipped
# with SHID_NO_SETUP=1 when PG_CONFIG names an install that has them), then
# runs citus.pl as the user sharded_id_test under PostgreSQL's TAP harness,
# and writes its tables, with the machine and the command, to OUTPUT.md
# (default test/bench/results/citus.md).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$src/test/bench/results/citus.md}
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/18/bin/pg_config}
test_user=sharded_id_test
if [ "$(id -u)" -ne 0 ]; then
    echo "test/bench/citus.sh: run as root" >&2
    exit 1
fi
if [ -z "${SHID_NO_SETUP:-}" ]; then
    bash "$src/test/setup.sh" >/dev/null
fi
id "$test_user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$test_user"
work=$(mktemp -d /tmp/sharded_id_citus_bench.XXXXXX)
[ -n "${SHID_KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
cp -a "$src/." "$work/"
chown -R "$test_user:" "$work"
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
runuser -u "$test_user" -- env -C "$work" SHID_BENCH_OUT="$work/tables.md" \
    make -s installcheck PG_CONFIG="$PG_CONFIG" REGRESS= ISOLATION= \
    PROVE_TESTS=test/bench/citus.pl PROVE_FLAGS=-v
{
    echo "## Citus: its mover against move_shard, next_id on a worker, and a hot shard"
    echo
    echo "- machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1), $(free -g | awk '/^Mem:/ {print $2}') GiB"
    echo "- server: $("$PG_CONFIG" --version), Citus $(sed -n "s/^default_version = '\(.*\)'/\1/p" "$("$PG_CONFIG" --sharedir)/extension/citus.control")"
    echo "- load average at the start and at the end (other work shares the machine): $load_start; $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "- run: $(date -u '+%Y-%m-%d %H:%M UTC'), SIZES='${SIZES-10000 1000000}' ROUNDS=${ROUNDS:-3} BIG_ROUNDS=${BIG_ROUNDS:-1} WRITER_SECONDS='${WRITER_SECONDS:-10 60}' CALL_ROUNDS=${CALL_ROUNDS:-5} CALLS=${CALLS:-1000000} HOT_IDS=${HOT_IDS:-2000000} HOT_ROUNDS=${HOT_ROUNDS:-3}"
    echo
    cat "$work/tables.md"
} | tee "$out"
echo "written to $out"
