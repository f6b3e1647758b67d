#!/usr/bin/env bash
# test/demo.sh: build and install sharded_id, then run test/demo.sql on a
# throwaway cluster (Debian's pg_virtualenv) with sharded_id preloaded.
# Run as root on Debian bookworm; the cluster runs as the postgres user and
# is dropped at the end.  PostgreSQL 15, or the major PG_CONFIG names.
set -euo pipefail
cd "$(dirname "$0")/.."
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
. test/pg_versions.sh
bash test/setup.sh
major=$(shid_major "$PG_CONFIG")
pg_virtualenv -v "$major" -o shared_preload_libraries=sharded_id \
    "$("$PG_CONFIG" --bindir)/psql" -X -v ON_ERROR_STOP=1 -f test/demo.sql
