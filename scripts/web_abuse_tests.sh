# The SCHED page's server against faults and abuse (issue 25): slow clients, more logins than a
# role may hold, guessed passwords, a form from another site, an idle session (web_abuse.py,
# over plain sockets). Sourced by web_tests.sh; run_web_abuse_tests runs inside run_web_tests,
# with its roles (web_ana, web_bob asked for passwords). Two servers of their own, each with an
# application_name to count its connections by: the default limits, and --session-idle 2.

run_web_abuse_tests() {
    local url idle_url pids=() p status results="$OUT/web/abuse.log"
    url="http://127.0.0.1:$(web_port 5)"
    idle_url="http://127.0.0.1:$(web_port 6)"
    "$WEB_BIN" --listen "127.0.0.1:$(web_port 5)" \
        --dsn "host=localhost port=$PORT dbname=$LIVE_DB application_name=pg_jobs_web_abuse" \
        2>>"$OUT/web/server-abuse.log" &
    pids+=($!)
    "$WEB_BIN" --listen "127.0.0.1:$(web_port 6)" --session-idle 2 \
        --dsn "host=localhost port=$PORT dbname=$LIVE_DB application_name=pg_jobs_web_idle" \
        2>>"$OUT/web/server-idle.log" &
    pids+=($!)
    if wait_log 10 "$OUT/web/server-abuse.log" "listening" && wait_log 10 "$OUT/web/server-idle.log" "listening"; then
        python3 "$ROOT/scripts/web_abuse.py" --url "$url" --app pg_jobs_web_abuse \
            --idle-url "$idle_url" --idle-app pg_jobs_web_idle \
            --psql "$PG_BIN/psql -h localhost -p $PORT -U postgres -d $LIVE_DB" | tee "$results" \
            && status=0 || status=$?
    else
        echo "web abuse: the servers did not start ... FAILED" | tee "$results"
        tail -n 5 "$OUT/web/server-abuse.log" "$OUT/web/server-idle.log"
        status=1
    fi
    count_results "$results" "$status" "web abuse: the abuse tests" || true
    for p in "${pids[@]}"; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
}
