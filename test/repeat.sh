#!/usr/bin/env bash
# test/repeat.sh: run the TAP files again and again, to find the flaky ones.
#
#   bash test/repeat.sh [RUNS [FILE...]]
#   STREAMS=2 PG_CONFIG=/usr/lib/postgresql/18/bin/pg_config bash test/repeat.sh 10
#
# Every TAP file (or the FILEs named, as test/t/NNN_name.pl) runs RUNS times
# (10 by default) on every PostgreSQL major that test/pg_versions.sh names,
# or on the one PG_CONFIG names.  Each major runs in STREAMS copies of the
# tree at once (1 by default); within a stream the files run one after
# another, in order, as a full suite does, and a file's runs are counted
# over all streams.  A run passes when prove passes the file.  Each run's
# output is kept in the log directory the script prints, and the table
# gives, per file and major, the runs passed; the last line is
# "N passed, M failed", over all runs.
#
# As root (a fresh Debian bookworm machine): installs the packages, builds
# with -Wall -Wextra -Werror and installs, as test/run.sh does, then runs the
# files as the unprivileged user "sharded_id_test".
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
test_user=sharded_id_test
. "$src/test/pg_versions.sh"
runs=${1:-10}
shift || true
streams=${STREAMS:-1}
case "$runs$streams" in
    *[!0-9]*) echo "test/repeat.sh: RUNS and STREAMS are counts" >&2; exit 2 ;;
esac

if [ "$(id -u)" -eq 0 ]; then
    PG_CFLAGS="${PG_CFLAGS:--Wall -Wextra -Werror -Wno-unused-parameter}" \
        bash "$src/test/setup.sh"
    id "$test_user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$test_user"
    logs=$(mktemp -d /tmp/sharded_id_repeat.XXXXXX)
    chmod 755 "$logs"
    chown "$test_user:" "$logs"
    # A copy of the tree the test user owns, as test/run.sh makes.
    work=$(mktemp -d /tmp/sharded_id_repeat_src.XXXXXX)
    tar -C "$src" --exclude=./tmp_check --exclude=./results --exclude=./output_iso -cf - . | tar -C "$work" -xf -
    chown -R "$test_user:" "$work"
    rc=0
    runuser -u "$test_user" -- env SHID_LOGS="$logs" STREAMS="$streams" \
        SHID_PG_CONFIGS="$(shid_pg_configs | paste -sd ' ')" bash "$work/test/repeat.sh" "$runs" "$@" || rc=$?
    rm -rf "$work"
    exit $rc
fi

logs=${SHID_LOGS:-$(mktemp -d /tmp/sharded_id_repeat.XXXXXX)}
configs=${SHID_PG_CONFIGS:-$(shid_pg_configs | paste -sd ' ')}
if [ $# -gt 0 ]; then
    files=("$@")
else
    files=()
    for f in "$src"/test/t/*.pl; do files+=("test/t/$(basename "$f")"); done
fi
echo "logs: $logs"
echo "$runs runs of ${#files[@]} TAP files, $streams stream(s) per major, majors: $configs"

# One stream: its share of the runs, each a pass over every file in order.
stream() {
    local pg_config=$1 major=$2 s=$3 run f name
    work=$(mktemp -d "/tmp/sharded_id_repeat_pg$major.$s.XXXXXX")
    trap 'rm -rf "$work"' EXIT
    tar -C "$src" --exclude=./tmp_check --exclude=./results --exclude=./output_iso -cf - . | tar -C "$work" -xf -
    for ((run = s; run <= runs; run += streams)); do
        for f in "${files[@]}"; do
            name=$(basename "$f" .pl)
            if make -s -C "$work" installcheck PG_CONFIG="$pg_config" REGRESS= ISOLATION= \
                    PROVE_TESTS="$f" PROVE_FLAGS=-v >"$logs/pg$major-$name-run$run.log" 2>&1; then
                echo "pg$major $name run $run: passed" >>"$logs/results"
            else
                cp -a "$work/tmp_check/log" "$logs/pg$major-$name-run$run.tmp_check" 2>/dev/null || true
                echo "pg$major $name run $run: FAILED" >>"$logs/results"
            fi
        done
    done
}

: >"$logs/results"
pids=()
# An interrupt stops every stream; each removes its copy of the tree.
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT TERM
for pg_config in $configs; do
    major=$(shid_major "$pg_config")
    for ((s = 1; s <= streams; s++)); do
        stream "$pg_config" "$major" "$s" &
        pids+=($!)
    done
done
for pid in "${pids[@]}"; do wait "$pid" || true; done

printf '%-28s' "file"
for pg_config in $configs; do printf ' %8s' "pg$(shid_major "$pg_config")"; done
echo
for f in "${files[@]}"; do
    name=$(basename "$f" .pl)
    printf '%-28s' "$name"
    for pg_config in $configs; do
        major=$(shid_major "$pg_config")
        printf ' %8s' "$(grep -c "^pg$major $name run [0-9]*: passed" "$logs/results" || true)/$runs"
    done
    echo
done
grep 'FAILED' "$logs/results" || true
passed=$(grep -c ': passed$' "$logs/results" || true)
failed=$(grep -c ': FAILED$' "$logs/results" || true)
echo "logs: $logs"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -eq $((runs * ${#files[@]} * $(wc -w <<<"$configs"))) ]
