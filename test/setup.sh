#!/usr/bin/env bash
# test/setup.sh: install what sharded_id needs on Debian bookworm, then build
# and install the extension into the system's PostgreSQL 15.
#
# Run as root.  PG_CFLAGS, if set, is passed to the compiler (the test
# runner sets -Wall -Wextra -Werror).
set -euo pipefail

cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
    echo "test/setup.sh: run as root: it installs packages and the extension" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends \
    ca-certificates make gcc libc6-dev git \
    postgresql-15 postgresql-client-15 postgresql-contrib \
    postgresql-server-dev-15 postgresql-common \
    postgresql-15-plproxy \
    libipc-run-perl libfaketime \
    >/dev/null

make -s clean
echo "building sharded_id${PG_CFLAGS:+ with PG_CFLAGS=$PG_CFLAGS}"
make -s ${PG_CFLAGS:+PG_CFLAGS="$PG_CFLAGS"}
make -s install
echo "sharded_id built and installed into $(pg_config --pkglibdir)"
