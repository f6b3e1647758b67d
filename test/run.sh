#!/usr/bin/env bash
# test/run.sh: run every test of sharded_id, on every PostgreSQL major that
# test/pg_versions.sh names (15, and 17 and 18 when their test builds are in
# ../shared/pg17 and ../shared/pg18), or on the one PG_CONFIG names:
#
#   bash test/run.sh
#   PG_CONFIG=/usr/lib/postgresql/18/bin/pg_config bash test/run.sh
#
# As root (a fresh Debian bookworm machine): installs the packages, builds
# with -Wall -Wextra -Werror, installs, then re-runs itself as the
# unprivileged user "sharded_id_test", because PostgreSQL refuses to run as
# root.  As any other user: runs the suites against the installed builds.
#
# Suites, per major: pg_regress (sql/, expected/) and pg_isolation_regress
# (test/specs/) on a throwaway cluster made by pg_virtualenv with sharded_id
# preloaded; TAP tests (test/t/) that start clusters of their own.  The TAP
# files of every major run in one pool (test/tap.sh: SHID_PROVE_JOBS at a
# time, 3 by default, the slowest first, in a copy of the tree per major),
# beside the other suites.  Once: the documents' links (test/docs.pl), that the file-level call
# graph of src/*.c has no cycle (test/callgraph.sh), Citus's frames fuzzed
# (test/frames.sh), and the sources' size
# limits (test/limits.sh; SHID_LIMITS_ENFORCE=0 makes it advisory).  Each
# suite's full output is kept in the log directory the run prints, with the
# TAP files' times (test/times.sh) in times.md.  The last line is
# "N passed, M failed", over all majors.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
test_user=sharded_id_test
. "$src/test/pg_versions.sh"

if [ "$(id -u)" -eq 0 ]; then
    PG_CFLAGS="${PG_CFLAGS:--Wall -Wextra -Werror -Wno-unused-parameter}" \
        bash "$src/test/setup.sh"
    id "$test_user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$test_user"
    logs=$(mktemp -d /tmp/sharded_id_logs.XXXXXX)
    chmod 755 "$logs"
    # The Debian package (PostgreSQL 15 only): built, installed, and the
    # regression suite run against it.
    if shid_pg_configs | grep -qx /usr/lib/postgresql/15/bin/pg_config; then
        echo "== pg15-package"
        if bash "$src/test/package.sh" "$test_user" >"$logs/pg15-package.log" 2>&1; then
            echo "   ok"
        else
            echo "   exited non-zero; its output:"
            sed 's/^/   | /' "$logs/pg15-package.log"
            touch "$logs/pg15-package.failed"
        fi
    fi
    chown -R "$test_user:" "$logs"
    work=$(mktemp -d /tmp/sharded_id_test.XXXXXX)
    cp -a "$src/." "$work/"
    chown -R "$test_user:" "$work"
    rc=0
    runuser -u "$test_user" -- env -C "$work" SHID_LOGS="$logs" \
        SHID_PROVE_JOBS="${SHID_PROVE_JOBS:-}" SHID_TAP_FILES="${SHID_TAP_FILES:-}" SHID_LIMITS_ENFORCE="${SHID_LIMITS_ENFORCE:-}" \
        SHID_PG_CONFIGS="$(shid_pg_configs | paste -sd ' ')" bash test/run.sh || rc=$?
    exit $rc
fi

cd "$src"
logs=${SHID_LOGS:-$(mktemp -d /tmp/sharded_id_logs.XXXXXX)}
echo "logs: $logs"
configs=${SHID_PG_CONFIGS:-$(shid_pg_configs | paste -sd ' ')}

run_suite() {
    local name=$1
    shift
    echo "== $name"
    if "$@" >"$logs/$name.log" 2>&1; then
        echo "   ok"
    else
        echo "   exited non-zero; its output:"
        sed 's/^/   | /' "$logs/$name.log"
        for f in regression.diffs output_iso/regression.diffs; do
            [ -f "$f" ] && sed 's/^/   diff| /' "$f"
        done
        touch "$logs/$name.failed"
    fi
}

# Count: one per pg_regress or isolation test, one per TAP assertion, and
# one failure for a TAP file that died or a suite that ran nothing.
passed=0
failed=0
count() {
    local suite=$1 log="$logs/$1.log" p=0 f=1
    # A suite without a log ran nothing: one failure.
    if [ -f "$log" ]; then
        p=$(grep -cE '\.\.\. ok|^ok [0-9]+' "$log" || true)
        f=$(grep -cE '\.\.\. FAILED|^not ok [0-9]+|Dubious, test returned|Parse errors' "$log" || true)
    fi
    if [ -f "$logs/$suite.failed" ] && [ "$f" -eq 0 ]; then
        f=1
    fi
    if [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
        f=1
    fi
    echo "$suite: $p passed, $f failed"
    passed=$((passed + p))
    failed=$((failed + f))
}

# The documents: every relative link resolves (once, not per major).
run_suite docs perl test/docs.pl
# The C core: no file calls into a file that calls it (once, built with the
# first major).
run_suite callgraph bash test/callgraph.sh
# Citus's frames and lines of time (src/citus_frames.c), fuzzed and
# checked by brute force (test/frames_fuzz.c), once.
run_suite frames bash test/frames.sh

# The sources' size limits (test/limits.sh), once: each limit exceeded a
# failure (SHID_LIMITS_ENFORCE=0: a note).
run_suite limits bash test/limits.sh

# pg_regress and isolation of each major, one suite after another, beside
# the TAP files of every major in one pool of SHID_PROVE_JOBS workers (3 by
# default; test/tap.sh).  PostgreSQL::Test::Cluster gives each server a
# free port, reserved under PG_TEST_PORT_DIR, which every file of the run
# shares.
export PG_TEST_PORT_DIR="$logs/portlock"
mkdir -p "$PG_TEST_PORT_DIR"
# The TAP pool's copy of the tree, taken before pg_regress writes in it
# (a copy taken beside it failed with "file changed as we read it").
tap_src=$logs/tap/src
mkdir -p "$tap_src"
tar -C "$src" --exclude=./tmp_check --exclude=./results --exclude=./output_iso \
    --exclude='./regression.*' --exclude=./log -cf - . | tar -C "$tap_src" -xf -
(
    for pg_config in $configs; do
        major=$(shid_major "$pg_config")
        preload=(pg_virtualenv -v "$major" -o shared_preload_libraries=sharded_id)
        mk=(make -s installcheck PG_CONFIG="$pg_config")
        echo "== PostgreSQL $major ($("$pg_config" --version))"
        run_suite "pg$major-regress" "${preload[@]}" "${mk[@]}" ISOLATION= TAP_TESTS=
        run_suite "pg$major-isolation" "${preload[@]}" "${mk[@]}" REGRESS= TAP_TESTS=
    done
) &
regress=$!
echo "== TAP files of every major (${SHID_PROVE_JOBS:-3} at a time; each file's log in $logs/tap)"
# shellcheck disable=SC2086
if ! bash "$tap_src/test/tap.sh" "$logs" "$tap_src" $configs; then
    echo "   test/tap.sh exited non-zero: every major's TAP suite counts as failed"
    for pg_config in $configs; do
        touch "$logs/pg$(shid_major "$pg_config")-tap.failed"
    done
fi
wait $regress || true
for pg_config in $configs; do
    major=$(shid_major "$pg_config")
    if [ -f "$logs/pg$major-tap.failed" ]; then
        echo "== pg$major-tap: a file failed; the output of each that did:"
        for f in "$logs"/tap/pg"$major"/*.log.failed; do
            [ -f "$f" ] && sed 's/^/   | /' "${f%.failed}"
        done
    fi
done

[ -f "$logs/pg15-package.log" ] && count pg15-package
count docs
count callgraph
count frames
count limits
for pg_config in $configs; do
    major=$(shid_major "$pg_config")
    for suite in regress isolation tap; do
        count "pg$major-$suite"
    done
done

# Citus: test/t/040_citus.pl, 041_citus_tenant.pl and 042_citus_windows.pl run in the TAP
# suite of the major Citus's build is for, and skip themselves (skip_all, not
# counted) elsewhere.  What each did is read from that suite's log.
citus_log="$logs/pg$shid_citus_major-tap.log"
for citus_test in 040_citus 041_citus_tenant 042_citus_windows 046_citus_limits 048_citus_coordinator; do
    if [ -f "$citus_log" ] && grep -Eq "^(\[[0-9:]+\] )?test/t/$citus_test\.pl \.* *\$" "$citus_log"; then
        echo "Citus: test/t/$citus_test.pl ran on PostgreSQL $shid_citus_major (../shared/citus)"
    elif [ -f "$citus_log" ] && grep -Eq "^(\[[0-9:]+\] )?test/t/$citus_test\.pl \.* skipped" "$citus_log"; then
        echo "Citus skipped: test/t/$citus_test.pl: $(sed -E -n "s/^(\[[0-9:]+\] )?test\/t\/$citus_test\.pl \.* skipped: //p" "$citus_log" | head -1)"
    else
        echo "Citus skipped: test/t/$citus_test.pl: PostgreSQL $shid_citus_major, the major of the build in ../shared/citus, was not tested"
    fi
done
# The crash sweep (test/t/034_crash_sweep.pl) needs a server built with
# injection points (../shared/pg18) and skips itself elsewhere: say where it
# ran and where it skipped, and why.
for pg_config in $configs; do
    major=$(shid_major "$pg_config")
    tap_log="$logs/pg$major-tap.log"
    if [ -f "$tap_log" ] && grep -Eq '^(\[[0-9:]+\] )?test/t/034_crash_sweep\.pl \.* skipped' "$tap_log"; then
        echo "Crash sweep skipped on PostgreSQL $major: $(sed -E -n 's/^(\[[0-9:]+\] )?test\/t\/034_crash_sweep\.pl \.* skipped: //p' "$tap_log" | head -1)"
    elif [ -f "$tap_log" ] && grep -Eq '^(\[[0-9:]+\] )?test/t/034_crash_sweep\.pl \.* *$' "$tap_log"; then
        echo "Crash sweep: test/t/034_crash_sweep.pl ran on PostgreSQL $major$(grep -o 'in all: [0-9]* crashes, [0-9]* ids compared' "$tap_log" | head -1 | sed 's/^/, /')"
    fi
done
for major in $(shid_skipped_majors "$configs"); do
    echo "PostgreSQL $major skipped: no test build in ../shared/pg$major"
done
# The ten slowest TAP files of each major (test/times.sh; all of them in
# times.md of the log directory).
bash test/times.sh "$logs" >"$logs/times.md" 2>&1 || true
echo "The ten slowest TAP files (seconds; every file in $logs/times.md):"
N=10 bash test/times.sh "$logs" 2>&1 | sed 's/^/   /' || true
echo "logs: $logs"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
