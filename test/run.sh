#!/usr/bin/env bash
# test/run.sh: run every test of sharded_id.
#
# As root (a fresh Debian bookworm machine): installs the packages, builds
# with -Wall -Wextra -Werror, installs, then re-runs itself as the
# unprivileged user "sharded_id_test", because PostgreSQL refuses to run as
# root.  As any other user: runs the suites against the installed build.
#
# Suites: pg_regress (sql/, expected/) and pg_isolation_regress (test/specs/)
# on a throwaway cluster made by pg_virtualenv with sharded_id preloaded;
# TAP tests (test/t/) that start clusters of their own.  The last line is
# "N passed, M failed".
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
test_user=sharded_id_test

if [ "$(id -u)" -eq 0 ]; then
    PG_CFLAGS="${PG_CFLAGS:--Wall -Wextra -Werror -Wno-unused-parameter}" \
        bash "$src/test/setup.sh"
    id "$test_user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$test_user"
    work=$(mktemp -d /tmp/sharded_id_test.XXXXXX)
    cp -a "$src/." "$work/"
    chown -R "$test_user:" "$work"
    rc=0
    runuser -u "$test_user" -- env -C "$work" bash test/run.sh || rc=$?
    exit $rc
fi

cd "$src"
logs=$(mktemp -d /tmp/sharded_id_logs.XXXXXX)
export PG_CONFIG=${PG_CONFIG:-pg_config}

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

preload=(pg_virtualenv -o shared_preload_libraries=sharded_id)
run_suite regress "${preload[@]}" make -s installcheck ISOLATION= TAP_TESTS=
run_suite isolation "${preload[@]}" make -s installcheck REGRESS= TAP_TESTS=
run_suite tap make -s installcheck REGRESS= ISOLATION= PROVE_FLAGS=-v

# Count: one per pg_regress or isolation test, one per TAP assertion, and
# one failure for a TAP file that died or a suite that ran nothing.
passed=0
failed=0
for suite in regress isolation tap; do
    log="$logs/$suite.log"
    p=$(grep -cE '\.\.\. ok|^ok [0-9]+' "$log" || true)
    f=$(grep -cE '\.\.\. FAILED|^not ok [0-9]+|Dubious, test returned|Parse errors' "$log" || true)
    if [ -f "$logs/$suite.failed" ] && [ "$f" -eq 0 ]; then
        f=1
    fi
    echo "$suite: $p passed, $f failed"
    passed=$((passed + p))
    failed=$((failed + f))
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
