#!/usr/bin/env bash
# test/bench/writers_versions.sh: what 2 writers through the router see of an
# online shard move (suite.sh's section "writers": the longest writer
# transaction, the write freeze, failed and aborted writes), on this build
# and on the release before it, side by side in one run.  Run as root on
# Debian bookworm:
#
#   bash test/bench/writers_versions.sh [OUTPUT.md]
#
# It builds and installs this tree into the PostgreSQL that PG_CONFIG names
# (test/setup.sh; default PostgreSQL 15), copies that PostgreSQL to a
# scratch directory and installs there the release before it (BASE, by
# default the parent of the commit that made the version in development
# sharded_id.control's default_version, as test/bench/versions.sh does),
# built from git: two installations of the same PostgreSQL, each with one
# build of the whole extension (library, scripts, command-line tools).
# Then, as the user sharded_id_test, four rounds one after the other,
# alternating the builds: base, new, base_again, new_again.  Each round
# makes a fresh cluster of its build (sharded_id preloaded,
# wal_level = logical, fsync off, scram-sha-256 over TCP, as run.sh's
# pg_virtualenv makes it), runs this tree's suite.sh with SECTIONS=writers
# against it, keeps its results and removes the cluster; nothing else of
# the run goes on meanwhile.  MOVE_ROUNDS (default 3), MOVE_SIZES and
# MOVE_WRITER_SECONDS are suite.sh's.
#
# Per mover and size, a round's figure is the median over its moves of the
# longest writer transaction; a build's is the mean of its two rounds'; the
# gap between a build's two rounds is its A/A noise, and the new build is
# within the noise when it differs from the base by no more than the larger
# of the two gaps.  The report goes to OUTPUT.md (default
# test/bench/results/writers_versions.md), the four rounds' own reports
# beside it (OUTPUT.md.base, ...).
set -euo pipefail

src=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$src/test/bench/results/writers_versions.md}
export PG_CONFIG=${PG_CONFIG:-/usr/lib/postgresql/15/bin/pg_config}
export MOVE_ROUNDS=${MOVE_ROUNDS:-3}
test_user=sharded_id_test

if [ "$(id -u)" -eq 0 ]; then
    git=(git -c safe.directory="$src" -C "$src")
    bash "$src/test/setup.sh" >/dev/null
    version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$src/sharded_id.control")
    base=${BASE:-$("${git[@]}" rev-parse "$("${git[@]}" log --format=%H -1 -G"default_version = '$version'" -- sharded_id.control)^")}
    # A copy of PG_CONFIG's PostgreSQL, laid out as Debian lays it out
    # (ROOT/usr/lib/postgresql/MAJOR, ROOT/usr/share/postgresql/MAJOR), so
    # that its pg_config, which finds its directories from where it is,
    # names the copy's.
    bindir=$("$PG_CONFIG" --bindir)
    major=$(basename "$(dirname "$bindir")")
    root=${bindir%/usr/lib/postgresql/"$major"/bin}
    [ "$root/usr/lib/postgresql/$major/bin" = "$bindir" ] ||
        { echo "writers_versions.sh: $PG_CONFIG is not laid out as ROOT/usr/lib/postgresql/MAJOR/bin" >&2; exit 1; }
    base_root=$(mktemp -d /tmp/sharded_id_writers_base.XXXXXX)
    mkdir -p "$base_root/usr/lib/postgresql" "$base_root/usr/share/postgresql" "$base_root/usr/include"
    cp -a "$root/usr/lib/postgresql/$major" "$base_root/usr/lib/postgresql/"
    cp -a "$root/usr/share/postgresql/$major" "$base_root/usr/share/postgresql/"
    ln -s "$(readlink -f "$root/usr/include/postgresql")" "$base_root/usr/include/postgresql"
    base_pg_config=$base_root/usr/lib/postgresql/$major/bin/pg_config
    build=$(mktemp -d /tmp/sharded_id_base.XXXXXX)
    "${git[@]}" archive "$base" | tar -x -C "$build"
    make -s -C "$build" PG_CONFIG="$base_pg_config" >/dev/null
    make -s -C "$build" PG_CONFIG="$base_pg_config" install >/dev/null
    rm -rf "$build"
    chmod -R a+rX "$base_root"
    trap 'rm -rf "$base_root"' EXIT
    id "$test_user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$test_user"
    mkdir -p "$(dirname "$out")"
    for f in "$out" "$out".{base,new,base_again,new_again}; do
        touch "$f"
        chown "$test_user:" "$f"
    done
    runuser -u "$test_user" -- env PG_CONFIG="$PG_CONFIG" BASE_PG_CONFIG="$base_pg_config" \
        MOVE_ROUNDS="$MOVE_ROUNDS" ${MOVE_SIZES:+MOVE_SIZES="$MOVE_SIZES"} \
        ${MOVE_WRITER_SECONDS:+MOVE_WRITER_SECONDS="$MOVE_WRITER_SECONDS"} \
        BASE_LABEL="$("${git[@]}" log -1 --format='%h, %s' "$base" | cut -c1-60)" \
        NEW_LABEL="$("${git[@]}" log -1 --format='%h, %s' HEAD | cut -c1-60)" \
        bash "$0" "$out"
    exit
fi

: "${BASE_PG_CONFIG:?run as root, or set BASE_PG_CONFIG to the pg_config of the base installation}"
work=$(mktemp -d /tmp/sharded_id_writers.XXXXXX)
port=54381
rounds=(base new base_again new_again)
results=$work/results.tsv
: >"$results"
started=$(date -u '+%Y-%m-%d %H:%M UTC')
data=
stop() {
    if [ -n "$data" ]; then
        "$bindir/pg_ctl" -D "$data" -m immediate stop >/dev/null 2>&1 || true
    fi
    rm -rf "$work"
}
trap stop EXIT

for label in "${rounds[@]}"; do
    case $label in base*) pg_config=$BASE_PG_CONFIG ;; *) pg_config=$PG_CONFIG ;; esac
    bindir=$("$pg_config" --bindir)
    data=$work/$label
    password=$(head -c 18 /dev/urandom | base64 | tr -dc 'A-Za-z0-9')
    echo "$password" >"$work/pwfile"
    "$bindir/initdb" -D "$data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
        --pwfile="$work/pwfile" >/dev/null
    printf '%s\n' "port = $port" "listen_addresses = 'localhost'" "unix_socket_directories = '$work'" \
        "shared_preload_libraries = 'sharded_id'" "wal_level = logical" "fsync = off" >>"$data/postgresql.conf"
    "$bindir/pg_ctl" -D "$data" -l "$work/$label.log" -w start >/dev/null
    echo "== round $label: $("$bindir/postgres" --version), sharded_id from $pg_config"
    PGHOST=localhost PGPORT=$port PGUSER=postgres PGPASSWORD=$password PGDATABASE=postgres \
        PG_CONFIG=$pg_config SECTIONS=writers bash "$src/test/bench/suite.sh" "$work/$label.md" >"$work/$label.suite.log" 2>&1 ||
        { cat "$work/$label.suite.log"; echo "writers_versions.sh: round $label failed" >&2; exit 1; }
    cat "$work/$label.md" >"$out.$label"
    "$bindir/psql" -X -q -v ON_ERROR_STOP=1 -h "$work" -p "$port" -U postgres -d postgres \
        -c "\\copy (SELECT '$label', candidate, metric, round, value FROM bench.results WHERE section = 'writers') TO STDOUT" >>"$results"
    [ "$label" = new_again ] && break
    "$bindir/pg_ctl" -D "$data" -m fast -w stop >/dev/null
    rm -rf "$data"
    data=
done

# Medians and the comparison, computed by the last round's server.
report=$("$bindir/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$work" -p "$port" -U postgres -d postgres <<SQL
CREATE TEMP TABLE r (build text, candidate text, metric text, round int, value float8);
\\copy r FROM '$results'
CREATE TEMP VIEW med AS
SELECT build, candidate, metric, percentile_cont(0.5) WITHIN GROUP (ORDER BY value) AS median,
       max(value) AS max, sum(value) AS total, count(*) AS moves
FROM r GROUP BY 1, 2, 3;
CREATE TEMP VIEW cmp AS
SELECT split_part(l.candidate, ',', 1) AS mover, n.median AS rows,
       max(l.median) FILTER (WHERE l.build = 'base') AS base,
       max(l.median) FILTER (WHERE l.build = 'base_again') AS base_again,
       max(l.median) FILTER (WHERE l.build = 'new') AS new,
       max(l.median) FILTER (WHERE l.build = 'new_again') AS new_again,
       max(l.max) AS longest
FROM med l JOIN med n ON n.build = l.build AND n.candidate = l.candidate AND n.metric = 'rows'
WHERE l.metric = 'longest writer transaction ms'
GROUP BY 1, 2;
SELECT format('| %s | %s | %s / %s | %s / %s | %s%s | %s |', mover, to_char(rows, 'FM9,999,999'),
              round(base::numeric, 1), round(base_again::numeric, 1),
              round(new::numeric, 1), round(new_again::numeric, 1),
              CASE WHEN (new + new_again) >= (base + base_again) THEN '+' ELSE '-' END,
              round(abs((new + new_again) - (base + base_again))::numeric / 2, 1),
              round(greatest(abs(base - base_again), abs(new - new_again))::numeric, 1))
FROM cmp ORDER BY mover, rows;
SELECT '';
SELECT format('- %s, %s rows: base %s ms, new %s ms (%s%s, %s). A/A gaps: base %s, new %s ms.',
              mover, to_char(rows, 'FM9,999,999'),
              round(((base + base_again) / 2)::numeric, 1), round(((new + new_again) / 2)::numeric, 1),
              CASE WHEN (new + new_again) >= (base + base_again) THEN '+' ELSE '-' END,
              round(abs((new + new_again) - (base + base_again))::numeric / 2, 1),
              CASE WHEN abs((new + new_again) - (base + base_again)) / 2
                        <= greatest(abs(base - base_again), abs(new - new_again))
                   THEN 'within the noise' ELSE 'outside the noise' END,
              round(abs(base - base_again)::numeric, 1), round(abs(new - new_again)::numeric, 1))
FROM cmp ORDER BY mover, rows;
SELECT format('- Over all %s moves: longest writer transaction %s ms; write freeze median %s ms (base) and %s ms (new); %s failed, %s retried and %s aborted writes.',
              (SELECT count(*) FROM r WHERE metric = 'rows'),
              (SELECT round(max(value)::numeric, 1) FROM r WHERE metric = 'longest writer transaction ms'),
              (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY value)::numeric, 0) FROM r WHERE metric = 'write freeze ms' AND build LIKE 'base%'),
              (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY value)::numeric, 0) FROM r WHERE metric = 'write freeze ms' AND build LIKE 'new%'),
              (SELECT sum(value) FROM r WHERE metric = 'writes failed'),
              (SELECT sum(value) FROM r WHERE metric = 'writes retried'),
              (SELECT sum(value) FROM r WHERE metric = 'clients aborted'));
SQL
)

command="MOVE_ROUNDS=$MOVE_ROUNDS"
[ -z "${MOVE_SIZES:-}" ] || command+=" MOVE_SIZES='$MOVE_SIZES'"
[ -z "${MOVE_WRITER_SECONDS:-}" ] || command+=" MOVE_WRITER_SECONDS='$MOVE_WRITER_SECONDS'"
command+=" bash test/bench/writers_versions.sh"
{
    echo "## Moves seen by 2 writers, this build against the release before it"
    echo
    echo "- base: $BASE_LABEL"
    echo "- new: $NEW_LABEL"
    echo "- PostgreSQL $("$bindir/postgres" --version | sed 's/^postgres (PostgreSQL) //'), $(nproc) cores; run from $started to $(date -u '+%H:%M UTC')"
    echo "- command: $command"
    echo "- rounds, one after the other: ${rounds[*]}; each the median over its moves"
    echo
    echo "| mover | rows | base, longest writer transaction ms (round 1 / 2) | new (round 1 / 2) | new − base | A/A gap, larger |"
    echo "|---|---:|---:|---:|---:|---:|"
    printf '%s\n' "$report"
} | tee "$out"
