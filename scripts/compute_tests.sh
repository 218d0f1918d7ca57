# The compute scheduler under load (sim/, pg_jobs_compute_sim) against test.sh's cluster. First
# the simulation: 3 groups (one limited, with a CPU budget that runs out mid-job), 11 jobs (one
# with its results POSTed to the simulation's result store), 20 workers each its own role, among
# them one returning wrong results, one dying with a task and one rejecting a job; then checks of
# results, consensus, moving averages, money, limits, the budget, results stored elsewhere, period
# statistics, retasking and rejection. Then a
# crash: the server stopped immediately under 8 workers and started again, after which nothing
# acknowledged may be lost, nothing done twice, and the folded statistics must still be exact.
# About two minutes. Sourced by test.sh (it uses PORT, LIVE_DB, OUT, log and count from there, and
# wait_ready and wait_until from live_tests.sh); each "ok - ..." line of the simulation is a pass,
# each "not ok - ..." a failure, printed as "compute: ... ok|FAILED".

SIM_BIN="$ROOT/target/release/pg_jobs_compute_sim"
# As the superuser, in the database the cluster's background worker folds results in (a function:
# test.sh sets PORT after sourcing this).
sim_dsn() { printf %s "host=localhost port=$PORT user=postgres dbname=$LIVE_DB"; }

# count_checks LOG EXIT-STATUS WHAT: the ok / not ok lines of a run of the simulation, counted.
count_checks() {
    local out=$1 rc=$2 what=$3 passes fails
    sed -nE 's/^ok - (.*)/compute: \1 ... ok/p; s/^not ok - ([^:]*): (.*)/compute: \1 ... FAILED: \2/p' "$out"
    passes=$(grep -c '^ok - ' "$out" || true)
    fails=$(grep -c '^not ok - ' "$out" || true)
    count "$passes" "$fails"
    # A run that stopped without saying why (a panic, a lost connection) is one failure more.
    if [ "$rc" != 0 ] && [ "$fails" = 0 ]; then
        tail -n 20 "$out"
        echo "compute: $what ran to its end ... FAILED (exit $rc)"
        count 0 1
    fi
}

run_compute_tests() {
    local out="$OUT/compute-sim.log" rc=0
    if ! cargo build --release -q -p pg_jobs_compute_sim 2>"$OUT/compute-sim-build.log"; then
        cat "$OUT/compute-sim-build.log"
        echo "compute: the simulation builds ... FAILED"
        count 0 1
        return
    fi
    "$SIM_BIN" simulate --dsn "$(sim_dsn)" >"$out" 2>&1 || rc=$?
    count_checks "$out" "$rc" "the simulation"
    run_crash_test
}

# crash-load works until the server stops under it; crash-check, after the restart, finishes its
# jobs and checks them. Leaves the cluster up with its launcher running, for the tests after.
run_crash_test() {
    local load="$OUT/compute-crash-load.log" out="$OUT/compute-crash-check.log" pid tag="" rc=0 submitted
    # Made first: the loop below reads it before the background job may have opened it.
    : >"$load"
    "$SIM_BIN" crash-load --dsn "$(sim_dsn)" --seconds 120 >"$load" 2>&1 &
    pid=$!
    # Its tag is its first line (once its jobs are deployed, their names start with it). The crash
    # comes once the launcher has folded a few hundred of their reports, while more come in (some
    # unfolded), and well before the jobs can end.
    for _ in $(seq 300); do
        tag=$(sed -n '1{/^crash/p}' "$load")
        [ -n "$tag" ] && break
        sleep 0.1
    done
    if [ -z "$tag" ] || ! wait_until 60 "SELECT count(*) >= 300 FROM pgjobs.slice_reports r JOIN pgjobs.jobs j ON j.id = r.job_id
                                         WHERE j.name LIKE '$tag %' AND r.folded_seq IS NOT NULL"; then
        kill "$pid" 2>/dev/null || true
        tail -n 20 "$load"
        echo "compute: the crash load got going ... FAILED"
        count 0 1
        return
    fi
    as_db_user "$PG_BIN/pg_ctl" -D "$(cluster_dir test)/data" -m immediate stop >/dev/null
    wait "$pid" || rc=$?
    if [ "$rc" = 0 ]; then
        echo "compute: the crash load saw the server go ... ok"
        count 1 0
    else
        tail -n 20 "$load"
        echo "compute: the crash load saw the server go ... FAILED (exit $rc)"
        count 0 1
    fi
    start_cluster test "$PORT" "$LIVE_DB" >/dev/null
    # Crash recovery, then the launcher: it folds the reports and retasks the copies the crash left.
    if ! wait_ready || ! wait_until 30 "SELECT alive FROM pgjobs.launcher"; then
        echo "compute: the launcher is back after the crash ... FAILED"
        count 0 1
        return
    fi
    submitted=$(sed -n 's/^submitted //p' "$load")
    rc=0
    "$SIM_BIN" crash-check --dsn "$(sim_dsn)" --tag "$tag" ${submitted:+--submitted "$submitted"} >"$out" 2>&1 || rc=$?
    count_checks "$out" "$rc" "the check after the crash"
}
