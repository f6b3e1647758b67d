#!/usr/bin/env bash
# test/bench/run.sh: build and install sharded_id, then run the benchmark
# suite on a throwaway cluster (pg_virtualenv) with sharded_id preloaded and
# wal_level = logical, which the online shard moves need.  Run as root on
# Debian bookworm.  The tables are printed and written to
# test/bench/results/latest.md, or the file given as $1.  PostgreSQL 15, or
# the major PG_CONFIG names.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
. test/pg_versions.sh
bash test/setup.sh
pg_virtualenv -v "$(shid_major "$PG_CONFIG")" -o shared_preload_libraries=sharded_id -o wal_level=logical \
    bash test/bench/suite.sh "$@"
