#!/usr/bin/env bash
# test/package.sh: build the Debian package postgresql-15-sharded-id with
# pg_buildext (dpkg-buildpackage -us -uc -b), install it in place of the
# build that make installed, and run the regression suite against it on a
# fresh cluster.  Afterwards the package is removed and the make-installed
# build restored.
#
# Run as root on Debian bookworm; the suite runs as the user named by $1
# (default sharded_id_test), since PostgreSQL refuses to run as root.
set -euo pipefail

src=$(cd "$(dirname "$0")/.." && pwd)
test_user=${1:-sharded_id_test}
pg_config=/usr/lib/postgresql/15/bin/pg_config
package=postgresql-15-sharded-id

export DEBIAN_FRONTEND=noninteractive
# Every change to the installed packages goes through apt-get, which waits
# up to 10 minutes for the dpkg lock that another apt or dpkg may hold (dpkg
# itself fails at once).
apt=(apt-get -q -o DPkg::Lock::Timeout=600)
"${apt[@]}" install -y --no-install-recommends \
    debhelper dpkg-dev fakeroot postgresql-server-dev-all >/dev/null

work=$(mktemp -d /tmp/sharded_id_package.XXXXXX)
chmod 755 "$work"
cp -a "$src" "$work/sharded-id"
make -s -C "$work/sharded-id" clean PG_CONFIG="$pg_config"
# The package is built for 15 alone, whatever other majors' test builds
# are installed beside it.
(cd "$work/sharded-id" && PG_SUPPORTED_VERSIONS=15 dpkg-buildpackage -us -uc -b) > "$work/build.log" 2>&1 ||
    { cat "$work/build.log"; echo "dpkg-buildpackage failed" >&2; exit 1; }
deb=$(ls "$work"/${package}_*.deb)
echo "built $(basename "$deb")"

restore() {
    "${apt[@]}" remove -y "$package" >/dev/null 2>&1 || true
    make -s -C "$work/sharded-id" clean PG_CONFIG="$pg_config"
    make -s -C "$work/sharded-id" PG_CONFIG="$pg_config" ${PG_CFLAGS:+PG_CFLAGS="$PG_CFLAGS"} >/dev/null
    make -s -C "$work/sharded-id" install PG_CONFIG="$pg_config" >/dev/null
}
trap restore EXIT

# The suite must see the package's files only.
make -s -C "$work/sharded-id" uninstall PG_CONFIG="$pg_config" >/dev/null
"${apt[@]}" install -y --no-install-recommends "$deb" >/dev/null
for tool in sharded_id_move_shard sharded_id_rebalance; do
    dpkg -L "$package" | grep -qx "$("$pg_config" --bindir)/$tool" ||
        { echo "the package lacks $tool" >&2; exit 1; }
done
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$src/sharded_id.control")
dpkg -L "$package" | grep -qx "$("$pg_config" --sharedir)/extension/sharded_id--$version.sql" ||
    { echo "the package lacks the install script" >&2; exit 1; }
router_version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$src/sharded_id_router.control")
for f in sharded_id_router.control "sharded_id_router--$router_version.sql"; do
    dpkg -L "$package" | grep -qx "$("$pg_config" --sharedir)/extension/$f" ||
        { echo "the package lacks $f" >&2; exit 1; }
done
echo "installed $package; the move and rebalance tools and both extensions' install scripts are in it"

cp -a "$src" "$work/check"
chown -R "$test_user:" "$work/check"
runuser -u "$test_user" -- env -C "$work/check" \
    pg_virtualenv -v 15 -o shared_preload_libraries=sharded_id \
    make -s installcheck PG_CONFIG="$pg_config" ISOLATION= TAP_TESTS=
