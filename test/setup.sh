#!/usr/bin/env bash
# test/setup.sh: install what sharded_id needs on Debian bookworm, then build
# and install the extension into each PostgreSQL that test/pg_versions.sh
# names: 15 from Debian, and 17 and 18 from ../shared/pg17 and ../shared/pg18
# when they are there (or the one PG_CONFIG names), and Citus into 18 from
# ../shared/citus when it is there.
#
# Run as root.  PG_CFLAGS, if set, is passed to the compiler (the test
# runner sets -Wall -Wextra -Werror).
set -euo pipefail

cd "$(dirname "$0")/.."
. test/pg_versions.sh

if [ "$(id -u)" -ne 0 ]; then
    echo "test/setup.sh: run as root: it installs packages and the extension" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt=(apt-get -q -o DPkg::Lock::Timeout=600)
"${apt[@]}" update
"${apt[@]}" install -y --no-install-recommends \
    ca-certificates make gcc libc6-dev git \
    postgresql-15 postgresql-client-15 postgresql-contrib \
    postgresql-server-dev-15 postgresql-common \
    postgresql-15-plproxy \
    libipc-run-perl libfaketime \
    >/dev/null

for pg_config in $(shid_pg_configs); do
    major=$(shid_major "$pg_config")
    installer=$(shid_test_build_installer "$major")
    # A test build is installed, or brought up to date, by its install.sh,
    # which does nothing when the same build is in place.
    if [ -f "$installer" ]; then
        bash "$installer" >/dev/null
    fi
    # Citus into the same tree (its install.sh runs the major's first), for
    # test/t/040_citus.pl and 041_citus_tenant.pl.
    citus=$(shid_citus_installer "$major")
    if [ -n "$citus" ]; then
        bash "$citus" >/dev/null
        echo "Citus installed into PostgreSQL $major from $(dirname "$citus")"
    fi
    [ -x "$pg_config" ] || { echo "test/setup.sh: no pg_config at $pg_config" >&2; exit 1; }
    # pg_tle 1.5.2 into the same tree, for test/t/047_sql_edition.pl (the
    # SQL edition's pg_tle script), which skips where it is missing.  Its
    # build is skipped when that version is in place already.
    if [ -f ../shared/pg_tle/install.sh ]; then
        tle_control="$("$pg_config" --sharedir)/extension/pg_tle.control"
        if [ -f "$("$pg_config" --pkglibdir)/pg_tle.so" ] &&
            grep -qx "default_version = '1.5.2'" "$tle_control" 2>/dev/null; then
            echo "pg_tle 1.5.2 already in PostgreSQL $major"
        else
            # Its own code, built with its own flags: not ours (-Werror).
            env -u PG_CFLAGS bash ../shared/pg_tle/install.sh "$pg_config" >/dev/null
            echo "pg_tle installed into PostgreSQL $major from ../shared/pg_tle"
        fi
    fi
    make -s clean PG_CONFIG="$pg_config"
    echo "building sharded_id for PostgreSQL $major${PG_CFLAGS:+ with PG_CFLAGS=$PG_CFLAGS}"
    make -s PG_CONFIG="$pg_config" ${PG_CFLAGS:+PG_CFLAGS="$PG_CFLAGS"}
    make -s PG_CONFIG="$pg_config" install
    # Objects of one major must never be installed into another.
    make -s clean PG_CONFIG="$pg_config"
    echo "sharded_id built and installed into $("$pg_config" --pkglibdir)"
done
