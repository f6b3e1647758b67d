# test/pg_versions.sh: which PostgreSQL installations the scripts build for
# and test.  Sourced by setup.sh, run.sh, demo.sh and bench/run.sh.
#
# PG_CONFIG, if set, names the one.  Otherwise: PostgreSQL 15 (Debian
# bookworm's), and each of 17 and 18 whose test build, made from Debian's
# own source packages, sits beside the clone in ../shared/pgNN.

shid_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shid_shared=$shid_src/../shared
shid_test_builds="17 18"

# The pg_config of every installation to build for and test, one per line.
shid_pg_configs() {
    if [ -n "${PG_CONFIG:-}" ]; then
        echo "$PG_CONFIG"
        return
    fi
    echo /usr/lib/postgresql/15/bin/pg_config
    local major
    for major in $shid_test_builds; do
        if [ -f "$shid_shared/pg$major/install.sh" ]; then
            echo "/usr/lib/postgresql/$major/bin/pg_config"
        fi
    done
}

# The majors with a test build that the pg_config list "$1" leaves out,
# one per line (none when PG_CONFIG picks one major on purpose).
shid_skipped_majors() {
    [ -z "${PG_CONFIG:-}" ] || return 0
    local major config tested=" "
    for config in $1; do
        tested+="$(shid_major "$config") "
    done
    for major in $shid_test_builds; do
        [[ $tested == *" $major "* ]] || echo "$major"
    done
}

# The install.sh of a major's test build.
shid_test_build_installer() {
    echo "$shid_shared/pg$1/install.sh"
}

# Citus, a test dependency for test/t/040_citus.pl and 041_citus_tenant.pl: its build in
# ../shared/citus is for this major only.
shid_citus_major=18

# The install.sh of Citus's test build, for a major that has one, or nothing.
shid_citus_installer() {
    if [ "$1" = "$shid_citus_major" ] && [ -f "$shid_shared/citus/install.sh" ]; then
        echo "$shid_shared/citus/install.sh"
    fi
}

# The major version of a pg_config: asked, or read from Debian's path.
shid_major() {
    if [ -x "$1" ]; then
        "$1" --version | sed -E 's/^PostgreSQL ([0-9]+).*/\1/'
    else
        echo "$1" | sed -nE 's#^/usr/lib/postgresql/([0-9]+)/bin/pg_config$#\1#p'
    fi
}
