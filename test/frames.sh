#!/usr/bin/env bash
# test/frames.sh: builds test/frames_fuzz.c with src/citus_frames.c against
# the server headers of the first pg_config of test/pg_versions.sh (or the
# one PG_CONFIG names), and runs it: random nodes, clocks seconds apart,
# placed among a shard's frames and lines of time, every grant checked
# (test/frames_fuzz.c says what).  Prints TAP; test/run.sh runs it once,
# like test/callgraph.sh.
#
#   bash test/frames.sh [SEQUENCES [SEED]]
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
if [ -z "${PG_CONFIG:-}" ]; then
    . "$src/test/pg_versions.sh"
    PG_CONFIG=$(shid_pg_configs | head -n1)
fi
out=$(mktemp -d /tmp/sharded_id_frames.XXXXXX)
trap 'rm -rf "$out"' EXIT
# libpgport and libpgcommon (pg_popcount64) lie in pkglibdir or libdir.
gcc -O2 -Wall -Wextra -Werror -Wno-unused-parameter -I"$src/src" -I"$("$PG_CONFIG" --includedir-server)" \
    -o "$out/frames_fuzz" "$src/test/frames_fuzz.c" "$src/src/citus_frames.c" \
    -L"$("$PG_CONFIG" --pkglibdir)" -L"$("$PG_CONFIG" --libdir)" -lpgcommon -lpgport -lm
echo "# $("$PG_CONFIG" --version) headers"
"$out/frames_fuzz" "${1:-6000}" "${2:-1}"
