# The compute scheduler under load (sim/, pg_jobs_compute_sim simulate) against test.sh's cluster:
# 3 groups (one limited), 10 jobs, 20 workers each its own role, among them one returning wrong
# results, one dying with a task and one rejecting a job; then checks of results, consensus,
# moving averages, money, limits, period statistics, retasking and rejection. About a minute.
# Sourced by test.sh (it uses PORT, LIVE_DB, OUT, log and count from there); each "ok - ..." line
# of the simulation is a pass, each "not ok - ..." a failure, printed as "compute: ... ok|FAILED".

SIM_BIN="$ROOT/target/release/pg_jobs_compute_sim"

run_compute_tests() {
    local out="$OUT/compute-sim.log" rc=0 passes fails
    if ! cargo build --release -q -p pg_jobs_compute_sim 2>"$OUT/compute-sim-build.log"; then
        cat "$OUT/compute-sim-build.log"
        echo "compute: the simulation builds ... FAILED"
        count 0 1
        return
    fi
    # As the superuser, in the database the cluster's background worker folds results in.
    "$SIM_BIN" simulate --dsn "host=localhost port=$PORT user=postgres dbname=$LIVE_DB" >"$out" 2>&1 || rc=$?
    sed -nE 's/^ok - (.*)/compute: \1 ... ok/p; s/^not ok - ([^:]*): (.*)/compute: \1 ... FAILED: \2/p' "$out"
    passes=$(grep -c '^ok - ' "$out" || true)
    fails=$(grep -c '^not ok - ' "$out" || true)
    count "$passes" "$fails"
    # A simulation that stopped without saying why (a panic, a lost connection) is one failure more.
    if [ "$rc" != 0 ] && [ "$fails" = 0 ]; then
        tail -n 20 "$out"
        echo "compute: the simulation ran to its end ... FAILED (exit $rc)"
        count 0 1
    fi
}
