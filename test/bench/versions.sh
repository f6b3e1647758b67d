#!/usr/bin/env bash
# test/bench/versions.sh: the cost per call of this build against the last
# release's, side by side in one run.  Run as root on Debian bookworm:
#
#   bash test/bench/versions.sh [OUTPUT.md]
#
# It builds and installs this tree (test/setup.sh; SKIP_SETUP=1 uses the
# build already installed), builds the release
# before it (BASE, default: the parent of the commit that made the version
# in development, sharded_id.control's default_version, the default) from git and installs its library as sharded_id_base.so
# beside this one's, then starts five throwaway clusters as the user
# sharded_id_test: "base" and "base_again" preload the release's library,
# "new" and "new_again" this one's, and "stripes" this one's with
# sharded_id.stripes = 4 and sharded_id.stripe = 1.  Each round times, in an
# order that rotates from round to round, 1,000,000 calls in one statement
# of nextval, counter mode and seed mode over 8192 shards, on each cluster,
# restarted at the start of each round.  A cluster's ratio is the median of
# its calls over the median of its nextval, over ROUNDS rounds (default 11).
# Each build runs twice: the gap between its two clusters is its noise
# (A/A).  A build's ratio is the mean of its two clusters'; the new build is
# within the noise when it differs from the base by no more than the larger
# of the two A/A gaps.
# PostgreSQL 15, or the major PG_CONFIG names.
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$src/test/bench/results/versions.md}
rounds=${ROUNDS:-11}
calls=1000000
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
test_user=sharded_id_test

if [ "$(id -u)" -eq 0 ]; then
    [ -n "${SKIP_SETUP:-}" ] || bash "$src/test/setup.sh" >/dev/null
    version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$src/sharded_id.control")
    base=${BASE:-$(git -c safe.directory="$src" -C "$src" rev-parse "$(git -c safe.directory="$src" -C "$src" log --format=%H -1 -G"default_version = '$version'" -- sharded_id.control)^")}
    build=$(mktemp -d /tmp/sharded_id_base.XXXXXX)
    git -c safe.directory="$src" -C "$src" archive "$base" | tar -x -C "$build"
    make -s -C "$build" PG_CONFIG="$PG_CONFIG" >/dev/null
    install -m 755 "$build/sharded_id.so" "$("$PG_CONFIG" --pkglibdir)/sharded_id_base.so"
    rm -rf "$build"
    id "$test_user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$test_user"
    mkdir -p "$(dirname "$out")"
    touch "$out"
    chown "$test_user:" "$out"
    exec runuser -u "$test_user" -- env PG_CONFIG="$PG_CONFIG" ROUNDS="$rounds" \
        BASE_LABEL="$(git -c safe.directory="$src" -C "$src" log -1 --format='%h, %s' "$base" | cut -c1-60)" bash "$0" "$out"
fi

bindir=$("$PG_CONFIG" --bindir)
work=$(mktemp -d /tmp/sharded_id_versions.XXXXXX)
clusters=(base base_again new new_again stripes)
declare -A port=([base]=54391 [base_again]=54392 [new]=54393 [new_again]=54394 [stripes]=54395)
declare -A conf=(
    [base]="shared_preload_libraries = 'sharded_id_base'"
    [base_again]="shared_preload_libraries = 'sharded_id_base'"
    [new]="shared_preload_libraries = 'sharded_id'"
    [new_again]="shared_preload_libraries = 'sharded_id'"
    [stripes]="shared_preload_libraries = 'sharded_id'
sharded_id.stripes = 4
sharded_id.stripe = 1")
stop_all() {
    for c in "${clusters[@]}"; do
        "$bindir/pg_ctl" -D "$work/$c" -m immediate stop >/dev/null 2>&1 || true
    done
    rm -rf "$work"
}
trap stop_all EXIT
q() { "$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$work" -p "${port[$1]}" -d postgres "${@:3}" -c "$2"; }

for c in "${clusters[@]}"; do
    "$bindir/initdb" -D "$work/$c" -A trust >/dev/null
    printf '%s\n' "${conf[$c]}" "port = ${port[$c]}" "unix_socket_directories = '$work'" \
        "listen_addresses = ''" "autovacuum = off" >>"$work/$c/postgresql.conf"
    "$bindir/pg_ctl" -D "$work/$c" -l "$work/$c.log" -w start >/dev/null
    q "$c" "CREATE SEQUENCE seq;
        CREATE FUNCTION time_ms(stmt text) RETURNS double precision LANGUAGE plpgsql AS \$\$
        DECLARE t timestamptz := clock_timestamp();
        BEGIN EXECUTE stmt; RETURN extract(epoch FROM clock_timestamp() - t) * 1000; END \$\$;"
    case $c in
        base*)
            # The release's library, without its extension scripts: the two
            # calls measured, bound to its symbols.
            q "$c" "CREATE SCHEMA sharded_id;
                CREATE FUNCTION sharded_id.next_id(integer) RETURNS bigint
                    AS 'sharded_id_base', 'shid_next_counter_id' LANGUAGE C VOLATILE STRICT;
                CREATE FUNCTION sharded_id.next_id(integer, regclass) RETURNS bigint
                    AS 'sharded_id_base', 'shid_next_id' LANGUAGE C VOLATILE STRICT;" ;;
        *) q "$c" "CREATE EXTENSION sharded_id" ;;
    esac
done

declare -A expr=([nextval]="nextval('seq')" [counter]="sharded_id.next_id((g % 8192)::int)"
    [seed]="sharded_id.next_id((g % 8192)::int, 'seq')")
candidates=()
for c in "${clusters[@]}"; do
    for m in nextval counter seed; do candidates+=("$c $m"); done
done

results=$work/results.tsv
: >"$results"
# Every round restarts every cluster, so that what a server's start leaves
# to chance (where its shared memory and libraries land) varies from round
# to round instead of biasing one cluster for the whole run; then one
# unrecorded pass warms every slot and cache.
n=${#candidates[@]}
for ((r = 1; r <= rounds; r++)); do
    for c in "${clusters[@]}"; do
        "$bindir/pg_ctl" -D "$work/$c" -l "$work/$c.log" -m fast -w restart >/dev/null
    done
    for pass in warm measure; do
        for ((i = 0; i < n; i++)); do
            read -r c m <<<"${candidates[$(((i + r * 5) % n))]}"
            ms=$(q "$c" "SELECT time_ms(\$s\$SELECT count(${expr[$m]}) FROM (SELECT generate_series(1, $calls) AS g) s\$s\$)")
            [ "$pass" = warm ] || printf '%s\t%s\t%s\t%s\n' "$c" "$m" "$r" "$ms" >>"$results"
        done
    done
done

# Medians and ratios, computed by the new cluster's server.
report=$("$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$work" -p "${port[new]}" -d postgres <<SQL
CREATE TEMP TABLE r (cluster text, mode text, round int, ms float8);
\\copy r FROM '$results'
CREATE TEMP VIEW med AS
SELECT m.cluster, m.mode, m.ms, m.ms / nv.ms AS ratio
FROM (SELECT cluster, mode, percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS ms FROM r GROUP BY 1, 2) m
JOIN (SELECT cluster, percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS ms FROM r WHERE mode = 'nextval' GROUP BY 1) nv
  USING (cluster);
SELECT format('| %s | %s | %s | %s |', cluster, mode, round(ms::numeric, 1), round(ratio::numeric, 3))
FROM med ORDER BY array_position(ARRAY['base', 'base_again', 'new', 'new_again', 'stripes'], cluster),
                  array_position(ARRAY['nextval', 'counter', 'seed'], mode);
SELECT '';
WITH per_mode AS (
    SELECT b.mode, (b.ratio + ba.ratio) / 2 AS base, (n.ratio + na.ratio) / 2 AS new, st.ratio AS stripes,
           greatest(abs(b.ratio - ba.ratio), abs(n.ratio - na.ratio)) AS noise,
           abs(b.ratio - ba.ratio) AS base_aa, abs(n.ratio - na.ratio) AS new_aa
    FROM med b
    JOIN med ba ON ba.cluster = 'base_again' AND ba.mode = b.mode
    JOIN med n ON n.cluster = 'new' AND n.mode = b.mode
    JOIN med na ON na.cluster = 'new_again' AND na.mode = b.mode
    JOIN med st ON st.cluster = 'stripes' AND st.mode = b.mode
    WHERE b.cluster = 'base' AND b.mode <> 'nextval')
SELECT format('- %s mode, ratio to nextval: base %s, new %s (%s%s%s); new with stripes %s (%s%s%s). A/A gaps: base %s, new %s.',
              mode, round(base::numeric, 3), round(new::numeric, 3),
              CASE WHEN new >= base THEN '+' ELSE '-' END, round(abs(new - base)::numeric, 3),
              CASE WHEN abs(new - base) <= noise THEN ', within the noise' ELSE ', outside the noise' END,
              round(stripes::numeric, 3),
              CASE WHEN stripes >= base THEN '+' ELSE '-' END, round(abs(stripes - base)::numeric, 3),
              CASE WHEN abs(stripes - base) <= noise THEN ', within the noise' ELSE ', outside the noise' END,
              round(base_aa::numeric, 3), round(new_aa::numeric, 3))
FROM per_mode ORDER BY mode;
SQL
)

{
    echo "## Per call, this build against the release before it ($BASE_LABEL)"
    echo
    echo "PostgreSQL $("$bindir/postgres" --version | sed 's/^postgres (PostgreSQL) //'), $(nproc) cores, $rounds rounds of $calls calls in one statement, over 8192 shards, every cluster restarted each round; median per candidate; ratio to the same cluster's nextval."
    echo
    echo "| cluster | call | ms | ratio to nextval |"
    echo "|---|---|---:|---:|"
    printf '%s\n' "$report"
} | tee "$out"
