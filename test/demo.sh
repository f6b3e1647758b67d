#!/usr/bin/env bash
# test/demo.sh: build and install sharded_id, then run test/demo.sql on a
# throwaway cluster (Debian's pg_virtualenv) with sharded_id preloaded.
# Run as root on Debian bookworm; the cluster runs as the postgres user and
# is dropped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash test/setup.sh
pg_virtualenv -o shared_preload_libraries=sharded_id \
    psql -X -v ON_ERROR_STOP=1 -f test/demo.sql
