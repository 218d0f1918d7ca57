#!/usr/bin/env bash
# The SCHED page (web/, pg_jobs_web) in a real headless browser: Debian's chromium driven by
# chromedriver over WebDriver from Rust (pg_jobs_web_e2e), against the test cluster with the
# launcher and an agent (start_alpha from agent_tests.sh) running routines and batch jobs. Sourced
# by test.sh after routine_tests.sh; each test prints "name ... ok" or "name ... FAILED" and is
# counted. Screenshots of each tab go to $OUT/web/*.png.
#
# Two people log in with passwords: web_ana (schedules WEB and WEB2, batch jobs, cron schedules
# ana-nightly, ana-ticks and ana-sleep, queue jobs in web_ana_mail) and web_bob (schedule BOB, a
# job of his own, cron schedule bob-hourly, queue jobs in web_bob_mail, and in web_bob_flow two
# that wait for the other two). The cluster trusts localhost, so pg_hba.conf gets lines that ask
# these two roles for scram-sha-256 first (removed afterwards). A second pg_jobs_web points at a
# port where no server listens, for the "database not reachable" page.
#
# Then the server against faults and abuse (web_abuse_tests.sh), with the same roles.
#
# Run on its own: scripts/web_tests.sh (its own cluster web-test, port PG_JOBS_TEST_PORT or 29300).

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    source "$(dirname "$0")/lib.sh"
    source "$(dirname "$0")/live_tests.sh"
    source "$(dirname "$0")/agent_tests.sh"
fi
source "$(dirname "${BASH_SOURCE[0]}")/web_abuse_tests.sh"

WEB_BIN="$ROOT/target/release/pg_jobs_web"
WEB_E2E="$ROOT/target/release/pg_jobs_web_e2e"
WEB_PID=
WEB_DEAD_PID=
WEB_HBA_MARK="# pg_jobs web tests"

web_port() { echo $((PORT + ${1:-0} + 20)); }

# web_sql ROLE SQL: as a web role, with its password.
web_sql() {
    PGPASSWORD="pw-$1" "$PG_BIN/psql" -X -q -tA -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U "$1" -d "$LIVE_DB" -c "$2"
}

web_hba() {
    local hba
    hba=$(live_sql "SHOW hba_file")
    if [ "$1" = on ]; then
        { printf '%s\nhost all web_ana,web_bob,web_api 127.0.0.1/32 scram-sha-256 %s\nhost all web_ana,web_bob,web_api ::1/128 scram-sha-256 %s\n' \
              "$WEB_HBA_MARK" "$WEB_HBA_MARK" "$WEB_HBA_MARK"; grep -v "$WEB_HBA_MARK" "$hba"; } >"$hba.web" \
            && cat "$hba.web" >"$hba" && rm -f "$hba.web"
    else
        grep -v "$WEB_HBA_MARK" "$hba" >"$hba.web" && cat "$hba.web" >"$hba" && rm -f "$hba.web"
    fi
    live_sql "SELECT pg_reload_conf()" >/dev/null
}

web_setup() {
    live_sql "SET password_encryption = 'scram-sha-256';
        DO \$\$BEGIN
            CREATE ROLE web_ana LOGIN IN ROLE pgjobs_user;
            CREATE ROLE web_bob LOGIN IN ROLE pgjobs_user;
        EXCEPTION WHEN duplicate_object THEN NULL;
        END\$\$;
        DO \$\$BEGIN
            CREATE ROLE web_api LOGIN IN ROLE pgjobs_api;
        EXCEPTION WHEN duplicate_object THEN NULL;
        END\$\$;
        ALTER ROLE web_ana PASSWORD 'pw-web_ana';
        ALTER ROLE web_bob PASSWORD 'pw-web_bob';
        ALTER ROLE web_api PASSWORD 'pw-web_api';" >/dev/null || return 1
    web_hba on || return 1
    AGENT_CASE=web
    start_alpha --batchjobs 8 || return 1
    # Realtime routines that run (one with a secret in its arguments), one that fails, the
    # scheduler itself; batch routines completed and scheduled; a second schedule.
    # The batch routines' runtimes (00:00, long past; 23:59, far off) are read in a time zone
    # where it is about noon now, so that the suite means the same at any hour.
    local hour offset zone
    hour=$(date -u +%H)
    offset=$((12 - 10#$hour))
    if [ $offset -ge 0 ]; then zone="Etc/GMT-$offset"; else zone="Etc/GMT+$((-offset))"; fi
    web_sql web_ana "
        SELECT pgjobs.routines_create('WEB', '$zone');
        SELECT pgjobs.routines_put('WEB', 'web_ana@alpha:feeds.quotes', 'FEEDS', realtime => true,
               args => '--password hunter2 --fast', command => 'while true; do echo quote; sleep 1; done; echo');
        SELECT pgjobs.routines_put('WEB', 'web_ana@alpha:feeds.news', 'FEEDS', realtime => true,
               command => 'while true; do echo news; sleep 1; done');
        SELECT pgjobs.routines_put('WEB', 'web_ana@alpha:broken.feed', 'BROKEN', realtime => true,
               command => 'echo ERROR the feed broke; exit 1');
        SELECT pgjobs.routines_put('WEB', 'postgres@alpha:pg_jobs.scheduler', 'SCHED', realtime => true);
        SELECT pgjobs.routines_put('WEB', 'web_ana@alpha:etl.load', 'LOAD', runtimes => '00:00', command => 'echo loaded');
        SELECT pgjobs.routines_put('WEB', 'web_ana@alpha:etl.report', 'LOAD', runtimes => '23:59',
               dependencies => 'web_ana@alpha:etl.load', command => 'echo reported');
        SELECT pgjobs.routines_put('WEB2', 'web_ana@alpha:misc.clock', 'MISC', realtime => true,
               command => 'while true; do date; sleep 1; done');
        SELECT pgjobs.routines_reload('WEB'); SELECT pgjobs.routines_reload('WEB2');" >/dev/null || return 1
    web_sql web_bob "
        SELECT pgjobs.routines_put('BOB', 'web_bob@alpha:bob.feed', 'BOBS', realtime => true,
               command => 'while true; do echo bob; sleep 1; done');
        SELECT pgjobs.routines_reload('BOB');
        SELECT pgjobs.batch_post('echo', ARRAY['bob-only-job'], computer => 'alpha', routine => 'bobjob',
               run_at => now() + interval '2 hours');" >/dev/null || return 1
    # Cron schedules for the Schedules tab: a far-off queue job in another time zone (Disable and
    # Enable), a queue job every 5 s (a run history), a SQL job that sleeps longer than its
    # schedule's step (one is always running, to Abort); and one of web_bob's.
    web_sql web_ana "
        SELECT pgjobs.jobs_schedule('ana-nightly', '30 2 * * *', '{\"task\": \"report\", \"queue\": \"web_ana_reports\"}',
               '{\"time_zone\": \"Asia/Tokyo\", \"missed\": \"all\", \"max_catch_up\": 3}');
        SELECT pgjobs.jobs_schedule('ana-ticks', 'every 5 seconds', '{\"task\": \"tick\", \"queue\": \"web_ana_ticks\"}',
               '{\"missed\": \"once\"}');
        SELECT pgjobs.jobs_schedule('ana-sleep', 'every 20 seconds', '{\"sql\": \"SELECT pg_sleep(30)\"}');" >/dev/null || return 1
    web_sql web_bob "SELECT pgjobs.jobs_schedule('bob-hourly', '@hourly', '{\"task\": \"bob-task\"}')" >/dev/null || return 1
    # Queues for the Queues tab: web_ana_mail with jobs ready (each with a customer's concurrency
    # key), due tomorrow, running (leased by mail-worker-1 for an hour, with its progress),
    # completed, and failed after two attempts (two errors each), under a limit of each kind;
    # web_ana_bulk with 250 jobs (Show more); web_ana_reports (ana-nightly's) paused; and web_bob's
    # web_bob_mail, and web_bob_flow: two roots, each with a step that waits for it (jobs_add's
    # depends_on, jobs_add_batch's after), for the waiting, blocked and Unblock tests.
    web_sql web_ana "
        SELECT pgjobs.jobs_add('welcome', jsonb_build_object('to', 'ana-' || i || '@example.org'), queue => 'web_ana_mail',
               concurrency_key => 'customer:' || i) FROM generate_series(1, 4) i;
        SELECT pgjobs.jobs_add('digest', queue => 'web_ana_mail', run_at => now() + interval '1 day') FROM generate_series(1, 2);
        SELECT pgjobs.jobs_add('bounce', jsonb_build_object('to', 'gone-' || i || '@example.org'), queue => 'web_ana_mail',
               priority => -10, max_attempts => 2, backoff => '0 seconds') FROM generate_series(1, 2) i;
        SELECT pgjobs.jobs_add('receipt', '{\"order\": 7}', queue => 'web_ana_mail', priority => -7);
        SELECT pgjobs.jobs_add('send', '{\"to\": \"ana-sent@example.org\"}', queue => 'web_ana_mail', priority => -5);
        SELECT count(pgjobs.jobs_add('bulk', jsonb_build_object('n', i), queue => 'web_ana_bulk', run_at => now() + interval '1 day'))
        FROM generate_series(1, 250) i;" >/dev/null || return 1
    local attempt
    for attempt in 1 2; do
        web_sql web_ana "SELECT pgjobs.jobs_fail(c.id, c.lease_token, 'smtp down (attempt $attempt)')
            FROM pgjobs.jobs_claim('mail-worker-1', ARRAY['web_ana_mail'], 2) c" >/dev/null || return 1
    done
    web_sql web_ana "
        SELECT pgjobs.jobs_complete(c.id, c.lease_token, '{\"sent\": true}')
        FROM pgjobs.jobs_claim('mail-worker-1', ARRAY['web_ana_mail'], 1) c;
        SELECT pgjobs.jobs_progress(c.id, c.lease_token, '{\"sent\": 3, \"of\": 10}')
        FROM pgjobs.jobs_claim('mail-worker-1', ARRAY['web_ana_mail'], 1, lease => '1 hour') c;
        SELECT pgjobs.jobs_limit('web_ana_mail', 4);
        SELECT pgjobs.jobs_rate_limit('web_ana_mail', 100, '1 minute');
        SELECT pgjobs.jobs_key_limit('web_ana_mail', 2);
        SELECT pgjobs.jobs_key_limit('web_ana_mail', 1, ordered => true, prefix => 'vip:');
        SELECT pgjobs.jobs_key_rate_limit('web_ana_mail', 5, '1 hour', prefix => 'trial:');
        SELECT pgjobs.jobs_pause('web_ana_reports');" >/dev/null || return 1
    web_sql web_bob "SELECT pgjobs.jobs_add('bob-mail', '{\"to\": \"bob@example.org\"}', queue => 'web_bob_mail')
        FROM generate_series(1, 2);
        SELECT pgjobs.jobs_add('flow-step', queue => 'web_bob_flow',
               depends_on => ARRAY[pgjobs.jobs_add('flow-root', queue => 'web_bob_flow')]);
        SELECT count(*) FROM pgjobs.jobs_add_batch('[{\"task\": \"flow-root-2\", \"queue\": \"web_bob_flow\"},
               {\"task\": \"flow-step-2\", \"queue\": \"web_bob_flow\", \"after\": [1]}]');" >/dev/null || return 1
    # Jobs due in an hour (one minute, so one group each by time): 250 for Show more, three for
    # Cancel N, three for Cancel all, three for Cancel selected, one with a secret; one that fails.
    web_sql web_ana "
        SELECT count(pgjobs.batch_post('echo', ARRAY['many ' || i], computer => 'alpha', routine => 'bulk',
               run_at => date_trunc('minute', now()) + interval '1 hour')) FROM generate_series(1, 250) i;
        SELECT count(pgjobs.batch_post('echo', ARRAY[r || ' ' || i], computer => 'alpha', routine => r,
               run_at => date_trunc('minute', now()) + interval '1 hour'))
        FROM generate_series(1, 3) i, unnest(ARRAY['cancelgroup', 'cancelall', 'pickme']) r;
        SELECT pgjobs.batch_post('echo', ARRAY['--token', 's3cr3t-tok', 'visible'], computer => 'alpha',
               routine => 'secret', run_at => now() + interval '1 hour');
        SELECT pgjobs.batch_post('sh', ARRAY['-c', 'echo boom-failure >&2; exit 3'], computer => 'alpha', routine => 'failing');" \
        >/dev/null || return 1
    wait_until 30 "SELECT count(*) = 8 FROM pgjobs.routines_today WHERE schedule IN ('WEB', 'WEB2', 'BOB')
                     AND status IN ('running', 'completed', 'scheduled', 'ERROR')" || return 1
    # The routines' status goes stale after 5 s here (the WAS RUNNING test stops the launcher).
    "$WEB_BIN" --listen "127.0.0.1:$(web_port)" \
        --dsn "host=localhost port=$PORT dbname=$LIVE_DB options='-c pg_jobs.routines_stale_after=5s'" \
        2>>"$OUT/web/server.log" &
    WEB_PID=$!
    "$WEB_BIN" --listen "127.0.0.1:$(web_port 1)" --dsn "host=localhost port=$(web_port 2) dbname=$LIVE_DB" \
        2>>"$OUT/web/server-dead.log" &
    WEB_DEAD_PID=$!
    wait_log 10 "$OUT/web/server.log" "listening" && wait_log 10 "$OUT/web/server-dead.log" "listening"
}

web_cleanup() {
    local pid
    for pid in "$WEB_PID" "$WEB_DEAD_PID"; do
        [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
    done
    WEB_PID=
    WEB_DEAD_PID=
    web_sql web_ana "SELECT pgjobs.routines_drop('WEB'); SELECT pgjobs.routines_drop('WEB2')" >/dev/null 2>&1 || true
    local role
    for role in web_ana web_bob; do
        web_sql "$role" "SELECT pgjobs.jobs_unschedule(name) FROM pgjobs.jobs_schedules;
            SELECT count(pgjobs.jobs_abort(job_id)) FROM pgjobs.job_runs WHERE status = 'running'" >/dev/null 2>&1 || true
    done
    web_sql web_bob "SELECT pgjobs.routines_drop('BOB');
        SELECT count(*) FROM pgjobs.batch_cancel(ARRAY(SELECT id FROM pgjobs.batch_active WHERE status <> 'CANCEL'))" >/dev/null 2>&1 || true
    web_sql web_ana "SELECT count(*) FROM pgjobs.batch_cancel(ARRAY(SELECT id FROM pgjobs.batch_active WHERE status <> 'CANCEL'))" >/dev/null 2>&1 || true
    web_hba off >/dev/null 2>&1 || true
    agent_cleanup
}

run_web_tests() {
    mkdir -p "$OUT/web"
    AGENT_DIR=${AGENT_DIR:-$OUT/agents}
    mkdir -p "$AGENT_DIR"
    if [ ! -x "$WEB_BIN" ] || [ ! -x "$WEB_E2E" ] || [ ! -x "$AGENT_BIN" ] || ! command -v chromedriver >/dev/null || ! web_setup; then
        echo "web: no pg_jobs_web, pg_jobs_web_e2e, agent, chromedriver or fixtures ... FAILED"
        count 0 1
        web_cleanup
        return
    fi
    local results="$OUT/web/e2e.log" status
    "$WEB_E2E" --url "http://127.0.0.1:$(web_port)" --dead-url "http://127.0.0.1:$(web_port 1)" \
        --admin-dsn "host=localhost port=$PORT user=postgres dbname=$LIVE_DB" \
        --driver-port "$(web_port 3)" --out "$OUT/web" 2>"$OUT/web/e2e.stderr" | tee "$results" \
        && status=0 || status=$?
    count_results "$results" "$status" "web: the browser tests" || tail -n 20 "$OUT/web/e2e.stderr"
    run_web_abuse_tests
    run_web_api_token_tests
    web_cleanup
}

# Counts the `... ok` and `... FAILED` lines a runner (`what`) wrote to `results`. A runner that
# exited non-zero (`status`) with no FAILED line stopped before its end (a panic, an exception),
# which fails even when every test it ran passed, as does one that ran nothing: then it says so
# and returns 1.
count_results() {
    local results=$1 status=$2 what=$3 p f
    p=$(grep -cE ' \.\.\. ok$' "$results" || true)
    f=$(grep -cE ' \.\.\. FAILED' "$results" || true)
    if [ "$f" = 0 ] && { [ "$status" != 0 ] || [ "$p" = 0 ]; }; then
        echo "$what stopped before their end (exit $status) ... FAILED"
        count "$p" 1
        return 1
    fi
    count "$p" "$f"
}

# Seed 001's addresses from a script with API tokens (web_api_tokens.py), against a server of its
# own that logs in as web_api (a member of pgjobs_api, asked for its password) for them, and the
# page's server, which has no --api-role.
run_web_api_token_tests() {
    local pid status results="$OUT/web/api-tokens.log"
    PG_JOBS_WEB_API_PASSWORD=pw-web_api "$WEB_BIN" --listen "127.0.0.1:$(web_port 7)" --api-role web_api \
        --dsn "host=localhost port=$PORT dbname=$LIVE_DB" 2>>"$OUT/web/server-api.log" &
    pid=$!
    if wait_log 10 "$OUT/web/server-api.log" "listening"; then
        python3 "$ROOT/scripts/web_api_tokens.py" --url "http://127.0.0.1:$(web_port 7)" \
            --plain-url "http://127.0.0.1:$(web_port)" --psql "$PG_BIN/psql -h localhost -p $PORT -d $LIVE_DB" \
            | tee "$results" && status=0 || status=$?
    else
        echo "web api: the server did not start ... FAILED" | tee "$results"
        tail -n 5 "$OUT/web/server-api.log"
        status=1
    fi
    count_results "$results" "$status" "web api: the token tests" || true
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# On its own: a cluster of its own, the release builds, the suite, a summary.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    PORT=${PG_JOBS_TEST_PORT:-29300}
    OUT="$ROOT/target/test-results"
    passed=0
    failed=0
    count() { passed=$((passed + $1)); failed=$((failed + $2)); }
    (cd "$ROOT" && cargo build --release -p pg_jobs_agent -p pg_jobs_web) || exit 1
    stop_cluster web-test
    rm -rf "$(cluster_dir web-test)/data"
    start_cluster web-test "$PORT" "$LIVE_DB" >/dev/null || exit 1
    trap 'web_cleanup; stop_cluster web-test' EXIT
    mkdir -p "$OUT/web"
    rm -f "$OUT"/web/*
    prepare_live_database && prepare_agent_roles || exit 1
    run_web_tests
    echo
    echo "$passed passed, $failed failed"
    [ "$failed" = 0 ] && [ "$passed" -gt 0 ]
fi
