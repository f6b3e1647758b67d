#!/usr/bin/env bash
# test/bench/run.sh: build and install sharded_id, then run the benchmark
# suite on a throwaway cluster (pg_virtualenv) with sharded_id preloaded.
# Run as root on Debian bookworm.  The tables are printed and written to
# test/bench/results/latest.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
bash test/setup.sh
pg_virtualenv -o shared_preload_libraries=sharded_id bash test/bench/suite.sh "$@"
