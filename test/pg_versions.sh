# test/pg_versions.sh: which PostgreSQL installations the scripts build for
# and test.  Sourced by setup.sh, run.sh, demo.sh and bench/run.sh.
#
# PG_CONFIG, if set, names the one.  Otherwise: PostgreSQL 15 (Debian
# bookworm's), and 18 when ../shared/pg18 (a test build of PostgreSQL 18
# for bookworm) is beside the clone.

shid_src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shid_pg18_dir=$shid_src/../shared/pg18

# The pg_config of every installation to build for and test, one per line.
shid_pg_configs() {
    if [ -n "${PG_CONFIG:-}" ]; then
        echo "$PG_CONFIG"
        return
    fi
    echo /usr/lib/postgresql/15/bin/pg_config
    if [ -f "$shid_pg18_dir/install.sh" ]; then
        echo /usr/lib/postgresql/18/bin/pg_config
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
