#!/usr/bin/env bash
# Sets everything up and runs every suite: pure Rust unit tests, #[pg_test]s, the pg_regress
# suite and the isolation specs against one cluster. Ends with "N passed, N failed" and exits
# non-zero if anything failed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/live_tests.sh"
source "$(dirname "$0")/agent_tests.sh"
source "$(dirname "$0")/routine_tests.sh"
source "$(dirname "$0")/compute_tests.sh"
source "$(dirname "$0")/example_tests.sh"
source "$(dirname "$0")/web_tests.sh"
source "$(dirname "$0")/package_tests.sh"
# PG_JOBS_TEST_PORT moves the suite's clusters (this port, +2 and +10) off the default.
PORT=${PG_JOBS_TEST_PORT:-28816}
OUT="$ROOT/target/test-results"

"$ROOT/scripts/setup.sh"
rm -rf "$OUT"
mkdir -p "$OUT"
# Everything printed is kept too, so that the end can name what failed beside the summary: a CI
# log is often read from its tail only.
exec > >(tee "$OUT/test.log") 2>&1

# Ends the run: the failed tests' lines, then "N passed, N failed", and the exit status.
summary() {
    echo
    if [ "$1" != 0 ]; then
        sleep 1 # for tee to have written the lines just printed
        echo "failed:"
        grep -E '\.\.\. FAILED|\.\.\. failed|exited with exit code' "$OUT/test.log" | sed 's/^/  /' || true
    fi
    echo "$2 passed, $1 failed"
    [ "$1" = 0 ] && [ "$2" -gt 0 ]
}

passed=0
failed=0
count() { passed=$((passed + $1)); failed=$((failed + $2)); }

# cargo's "test result: ok. X passed; Y failed" lines, summed.
count_cargo() {
    local p f
    p=$(grep -o '[0-9]* passed' "$1" | awk '{s+=$1} END {print s+0}')
    f=$(grep -o '[0-9]* failed' "$1" | awk '{s+=$1} END {print s+0}')
    count "$p" "$f"
}

log "building the worker agent and the SCHED page"
# Before any cluster starts: their tests run them from target/release.
if ! cargo build --release -p pg_jobs_agent -p pg_jobs_web 2>"$OUT/agent-build.log"; then
    cat "$OUT/agent-build.log"
    # Their tests then fail, counted.
    rm -f "$ROOT/target/release/pg_jobs_agent" "$ROOT/target/release/pg_jobs_web" "$ROOT/target/release/pg_jobs_web_e2e"
fi

log "unit tests (no PostgreSQL)"
if ! cargo test -p pg_jobs_core -p pg_jobs_agent -p pg_jobs_web 2>&1 | tee "$OUT/unit.log"; then
    grep -q 'test result' "$OUT/unit.log" || count 0 1
fi
count_cargo "$OUT/unit.log"

log "#[pg_test]s"
pgrx_data=$(cluster_dir pgrx-test)
# `cargo pgrx test` installs its test build into the PostgreSQL it runs by overwriting the
# library in place, which would crash any running server that preloads it (make run's): it gets
# a copy of PostgreSQL 15 of its own, named in a PGRX_HOME of its own.
pgrx_pg="$pgrx_data/postgresql"
if [ ! -x "$pgrx_pg/usr/lib/postgresql/15/bin/pg_config" ]; then
    mkdir -p "$pgrx_pg/usr/lib/postgresql" "$pgrx_pg/usr/share/postgresql" "$pgrx_pg/usr/include"
    cp -a "$PG_BIN/.." "$pgrx_pg/usr/lib/postgresql/15"
    cp -a "$("$PG_CONFIG" --sharedir)" "$pgrx_pg/usr/share/postgresql/15"
    cp -a "$("$PG_CONFIG" --includedir)" "$pgrx_pg/usr/include/postgresql"
fi
mkdir -p "$pgrx_data/home"
printf '[configs]\npg15 = "%s"\n' "$pgrx_pg/usr/lib/postgresql/15/bin/pg_config" >"$pgrx_data/home/config.toml"
if ! PGRX_HOME="$pgrx_data/home" cargo pgrx test pg15 --runas postgres --pgdata "$pgrx_data/data" 2>&1 | tee "$OUT/pg_test.log"; then
    grep -q 'test result' "$OUT/pg_test.log" || count 0 1
fi
count_cargo "$OUT/pg_test.log"

# A new cluster every run: roles are cluster-wide, and tests create some.
stop_cluster test
rm -rf "$(cluster_dir test)/data"
if ! start_cluster test "$PORT" pg_jobs_live >/dev/null; then
    # Most often the port is taken (another checkout's cluster: PG_JOBS_TEST_PORT moves ours).
    tail -n 5 "$(cluster_dir test)/server.log"
    echo "the test cluster did not start on port $PORT ... FAILED"
    summary $((failed + 1)) "$passed"
    exit 1
fi
trap 'stop_cluster test; stop_cluster nopreload' EXIT
# The launcher of this cluster works in pg_jobs_live; making it now stops it restarting meanwhile.
launcher_ready=no
prepare_live_database && launcher_ready=yes

# pg_regress's per-test lines ("name ... ok" / "... FAILED"), counted.
# A test whose process exited non-zero (an isolation spec that does not parse, say) is a failure
# even when its output matched: an expected file holding the error would make it pass.
count_regress() {
    local p f
    p=$(grep -E '\.\.\. ok' "$1" | grep -cv 'exited with exit code' || true)
    f=$(grep -cE '\.\.\. FAILED|\.\.\. failed|exited with exit code' "$1" || true)
    count "$p" "$f"
}

log "SQL regression suite"
"$PGXS_TEST/regress/pg_regress" --host=localhost --port="$PORT" --user=postgres \
    --inputdir="$ROOT/tests/regress" --outputdir="$OUT/regress" \
    --schedule="$ROOT/tests/regress/schedule" --dbname=pg_jobs_regress 2>&1 | tee "$OUT/regress.log" || true
count_regress "$OUT/regress.log"

log "isolation specs"
"$PGXS_TEST/isolation/pg_isolation_regress" --host=localhost --port="$PORT" --user=postgres \
    --inputdir="$ROOT/tests/isolation" --outputdir="$OUT/isolation" \
    --schedule="$ROOT/tests/isolation/schedule" --dbname=pg_jobs_isolation 2>&1 | tee "$OUT/isolation.log" || true
count_regress "$OUT/isolation.log"

log "background worker"
if [ "$launcher_ready" = yes ]; then
    echo "background worker starts ... ok"
    count 1 0
    run_live_tests
else
    echo "background worker starts ... FAILED"
    count 0 1
fi

log "worker agent"
# The standby test (the last live test) stopped this cluster before promoting its copy.
start_cluster test "$PORT" pg_jobs_live >/dev/null
if wait_ready; then
    run_agent_tests
    log "routine schedules"
    run_routine_tests
    log "the compute scheduler under load"
    run_compute_tests
    log "the client examples (Python, Node)"
    run_example_tests
    log "the SCHED page in a browser"
    run_web_tests
else
    echo "worker agent: the test cluster did not start again ... FAILED"
    count 0 1
fi

log "preload check"
stop_cluster nopreload
start_cluster nopreload $((PORT + 10)) - >/dev/null
refusal=$("$PG_BIN/psql" -X -h localhost -p $((PORT + 10)) -U postgres -d postgres \
    -c "CREATE EXTENSION pg_jobs CASCADE" 2>&1 || true)
stop_cluster nopreload
if grep -q "must be loaded via shared_preload_libraries" <<<"$refusal" \
   && grep -q "shared_preload_libraries = 'pg_jobs'" <<<"$refusal"; then
    echo "CREATE EXTENSION without preloading ... ok"
    count 1 0
else
    echo "CREATE EXTENSION without preloading ... FAILED: $refusal"
    count 0 1
fi

log "the Debian package"
run_package_tests

for diffs in "$OUT"/regress/regression.diffs "$OUT"/isolation/regression.diffs; do
    [ -s "$diffs" ] && { echo "--- $diffs"; cat "$diffs"; }
done

summary "$failed" "$passed"
