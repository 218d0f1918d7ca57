# make package's .deb, installed where the source tree is absent: a copy of PostgreSQL 15
# without pg_jobs in a folder of its own, the package unpacked into it as dpkg would, a cluster
# of that copy preloading it, CREATE EXTENSION, and a job added, claimed and completed. And apt's
# dry run of `apt install ./<package>.deb` on this machine, which must find its dependencies.
# Then the upgrade test (scripts/upgrade_tests.sh) on the same package. Sourced by test.sh
# (PORT, OUT, count, as_db_user from there); runs on its own too.
source "$(dirname "${BASH_SOURCE[0]}")/upgrade_tests.sh"

# package_root: a new folder holding a copy of this machine's PostgreSQL 15 without pg_jobs.
package_root() {
    local root
    root=$(mktemp -d /var/tmp/pg_jobs-package.XXXXXX)
    chmod 755 "$root"
    mkdir -p "$root/usr/lib/postgresql" "$root/usr/share/postgresql"
    cp -a "$PG_BIN/.." "$root/usr/lib/postgresql/15"
    cp -a "$("$PG_CONFIG" --sharedir)" "$root/usr/share/postgresql/15"
    rm -f "$root"/usr/lib/postgresql/15/lib/pg_jobs.so "$root"/usr/share/postgresql/15/extension/pg_jobs*
    printf %s "$root"
}

# package_unpack ROOT DEB: the package's files into ROOT, as dpkg lays them out (from ROOT, away
# from the source tree).
package_unpack() {
    (cd "$1" && cp "$2" package.deb && dpkg-deb -x package.deb "$1" && rm package.deb)
    chown -R postgres:postgres "$1" 2>/dev/null || true
}

# package_start ROOT PORT: a cluster of ROOT's PostgreSQL (made on first use) preloading pg_jobs,
# whose launcher works in database postgres.
package_start() {
    local bin="$1/usr/lib/postgresql/15/bin"
    if [ ! -f "$1/data/PG_VERSION" ]; then
        as_db_user "$bin/initdb" -D "$1/data" -U postgres --auth=trust >"$1/initdb.log" 2>&1 || return 1
        cat >>"$1/data/postgresql.conf" <<CONF
port = $2
listen_addresses = 'localhost'
unix_socket_directories = '/tmp'
shared_preload_libraries = 'pg_jobs'
pg_jobs.database_name = 'postgres'
CONF
    fi
    as_db_user "$bin/pg_ctl" -D "$1/data" -l "$1/server.log" -w start >/dev/null
}

package_stop() { as_db_user "$1/usr/lib/postgresql/15/bin/pg_ctl" -D "$1/data" -m fast stop >/dev/null 2>&1 || true; }

# package_psql ROOT PORT DATABASE ARGS...: psql of ROOT's PostgreSQL, run from ROOT.
package_psql() {
    local root=$1 port=$2 database=$3
    shift 3
    (cd "$root" && "$root/usr/lib/postgresql/15/bin/psql" -X -q -tA -v ON_ERROR_STOP=1 -h localhost -p "$port" -U postgres -d "$database" "$@")
}

run_package_tests() {
    local deb root port=$((PORT + 20)) outcome
    if ! deb=$(PG_JOBS_SETUP_DONE=1 "$ROOT/scripts/package.sh" 2>"$OUT/package.log" | tail -n 1) || [ ! -f "$deb" ]; then
        tail -n 20 "$OUT/package.log"
        echo "package: make package builds a .deb ... FAILED"
        count 0 1
        return
    fi
    echo "package: make package builds $(basename "$deb") ... ok"
    count 1 0

    if apt-get install -s "$deb" 2>&1 | grep -q "^Inst postgresql-15-pg-jobs "; then
        echo "package: apt install ./$(basename "$deb") resolves its dependencies (dry run) ... ok"
        count 1 0
    else
        apt-get install -s "$deb" 2>&1 | tail -n 5
        echo "package: apt install ./$(basename "$deb") resolves its dependencies (dry run) ... FAILED"
        count 0 1
    fi

    root=$(package_root)
    package_unpack "$root" "$deb"
    if package_start "$root" "$port" &&
        outcome=$(package_psql "$root" "$port" postgres -c "CREATE EXTENSION pg_jobs CASCADE" \
            -c "SELECT pgjobs.jobs_add('packaged') IS NOT NULL" -c "CREATE TEMP TABLE c AS SELECT * FROM pgjobs.jobs_claim('w')" \
            -c "SELECT pgjobs.jobs_complete(id, lease_token) FROM c" \
            -c "SELECT status FROM pgjobs.job_history WHERE task = 'packaged'" 2>&1) &&
        [ "$(printf %s "$outcome" | tail -n 1)" = completed ]; then
        echo "package: installed without the source tree, CREATE EXTENSION and a job completed ... ok"
        count 1 0
    else
        printf '%s\n' "$outcome"
        tail -n 5 "$root/server.log" 2>/dev/null
        echo "package: installed without the source tree, CREATE EXTENSION and a job completed ... FAILED"
        count 0 1
    fi
    package_stop "$root"
    rm -rf "$root"

    run_upgrade_tests "${PG_JOBS_UPGRADE_FROM:-$deb}" "$deb" $((port + 1))
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    source "$(dirname "$0")/lib.sh"
    PORT=${PG_JOBS_TEST_PORT:-28816}
    OUT="$ROOT/target/test-results"
    mkdir -p "$OUT"
    passed=0
    failed=0
    count() { passed=$((passed + $1)); failed=$((failed + $2)); }
    run_package_tests
    echo
    echo "$passed passed, $failed failed"
    [ "$failed" = 0 ] && [ "$passed" -gt 0 ]
fi
