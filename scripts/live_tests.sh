# Against a real cluster: the background worker (schedules firing in time, SQL jobs run by
# executors, crashes, abort, a standby) and pg_dump. Sourced by test.sh after the SQL suites,
# since it kills server processes. Each test prints "name ... ok" or "name ... FAILED" and is
# counted.

LIVE_DB=pg_jobs_live

live_sql() { "$PG_BIN/psql" -X -q -tA -v ON_ERROR_STOP=1 -h localhost -p "${2:-$PORT}" -U postgres -d "${3:-$LIVE_DB}" -c "$1"; }

# wait_until SECONDS SQL [PORT]: polls until SQL returns t; false when time runs out.
wait_until() {
    local deadline=$((SECONDS + $1))
    while [ $SECONDS -le $deadline ]; do
        [ "$(live_sql "$2" "${3:-$PORT}" 2>/dev/null)" = t ] && return 0
        sleep 0.1
    done
    return 1
}

# wait_log SECONDS FILE PATTERN: polls until FILE has a line matching the extended regex.
wait_log() {
    local deadline=$((SECONDS + $1))
    while [ $SECONDS -le $deadline ]; do
        grep -qE "$3" "$2" 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

wait_ready() {
    local deadline=$((SECONDS + 60))
    until "$PG_BIN/pg_isready" -q -h localhost -p "${1:-$PORT}" && live_sql "SELECT 1" "${1:-$PORT}" >/dev/null 2>&1; do
        [ $SECONDS -le $deadline ] || return 1
        sleep 0.2
    done
}

# restart_immediately: the test cluster stopped with -m immediate (as a crash would stop it: no
# checkpoint, shared memory gone) and started again.
restart_immediately() {
    local data
    data="$(cluster_dir test)/data"
    as_db_user "$PG_BIN/pg_ctl" -D "$data" -m immediate -w stop >/dev/null || return 1
    sleep 1
    as_db_user "$PG_BIN/pg_ctl" -D "$data" -l "$(cluster_dir test)/server.log" -w start >/dev/null
}

verdict() {
    local name=$1
    shift
    if "$@"; then
        echo "$name ... ok"
        count 1 0
    else
        echo "$name ... FAILED"
        count 0 1
    fi
}

launcher_pid() { live_sql "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_jobs launcher'" "${1:-$PORT}"; }

prepare_live_database() {
    "$PG_BIN/psql" -X -q -h localhost -p "$PORT" -U postgres -d postgres \
        -c "DROP DATABASE IF EXISTS $LIVE_DB WITH (FORCE)" -c "CREATE DATABASE $LIVE_DB" >/dev/null
    live_sql "CREATE EXTENSION pg_jobs CASCADE; CREATE TABLE live_effects (v integer)" >/dev/null
    wait_until 15 "SELECT alive FROM pgjobs.launcher"
}

# Every slot of a per-second schedule runs exactly once over 20 s, though the launcher is
# killed with SIGKILL (and the postmaster restarts every backend) in the middle.
test_seconds_fire_once_per_slot_across_sigkill() {
    local start end
    live_sql "SELECT pgjobs.jobs_schedule('live-seconds', 'every 1 second', '{\"task\": \"tick\", \"queue\": \"live\"}', '{\"missed\": \"all\"}')" >/dev/null
    start=$(live_sql "SELECT now()")
    sleep 8
    kill -9 "$(launcher_pid)"
    sleep 1
    wait_ready || return 1
    sleep 11
    end=$(live_sql "SELECT now()")
    live_sql "SELECT pgjobs.jobs_disable_schedule('live-seconds')" >/dev/null
    live_sql "
        WITH slots AS (
            SELECT generate_series(date_trunc('second', '$start'::timestamptz) + interval '1 second',
                                   date_trunc('second', '$end'::timestamptz) - interval '2 seconds',
                                   interval '1 second') AS slot),
        fired AS (SELECT run_at FROM pgjobs.job_list WHERE task = 'tick')
        SELECT (SELECT count(*) FROM fired) = (SELECT count(DISTINCT run_at) FROM fired)
           AND NOT EXISTS (SELECT FROM slots WHERE slot NOT IN (SELECT run_at FROM fired))
           AND (SELECT count(*) FROM slots) >= 15" | grep -qx t
}

# A SQL job's effects and its completion commit together: kill -9 of its executor leaves neither.
test_sql_job_effects_and_completion_are_atomic() {
    local done_job killed_job pid
    done_job=$(live_sql "SELECT pgjobs.jobs_add_sql('INSERT INTO live_effects VALUES (1)')")
    killed_job=$(live_sql "SELECT pgjobs.jobs_add_sql('INSERT INTO live_effects VALUES (2); SELECT pg_sleep(30)', max_attempts => 1)")
    wait_until 10 "SELECT status = 'completed' FROM pgjobs.job_list WHERE id = $done_job" || return 1
    wait_until 10 "SELECT EXISTS (SELECT FROM pgjobs.job_runs WHERE job_id = $killed_job AND status = 'running')" || return 1
    pid=$(live_sql "SELECT pid FROM pgjobs.job_runs WHERE job_id = $killed_job AND status = 'running'")
    kill -9 "$pid"
    sleep 1
    wait_ready || return 1
    wait_until 20 "SELECT status = 'failed' FROM pgjobs.job_list WHERE id = $killed_job" || return 1
    live_sql "SELECT array_agg(v ORDER BY v) = ARRAY[1]
                     AND (SELECT status FROM pgjobs.job_runs WHERE job_id = $killed_job) = 'lost'
              FROM live_effects" | grep -qx t
}

# A finished SQL job's end_time is when it ended: its run's end, not when its executor's
# transaction began (a 1.5 s job showed an end right after it was added).
test_sql_job_ends_when_it_ends() {
    local job
    job=$(live_sql "SELECT pgjobs.jobs_add_sql('SELECT pg_sleep(1.5)')") || return 1
    wait_until 15 "SELECT status = 'completed' FROM pgjobs.job_list WHERE id = $job" || return 1
    live_sql "SELECT h.end_time - r.started_at >= interval '1.5 seconds'
                     AND abs(extract(epoch FROM h.end_time - r.ended_at)) < 0.5
              FROM pgjobs.job_list h JOIN pgjobs.job_runs r ON r.job_id = h.id
              WHERE h.id = $job" | grep -qx t
}

# jobs_abort stops a running pg_sleep(60) within 2 s: the statement is cancelled and rolled back.
test_abort_stops_a_running_sql_job() {
    local job
    job=$(live_sql "SELECT pgjobs.jobs_add_sql('INSERT INTO live_effects VALUES (3); SELECT pg_sleep(60)')")
    wait_until 10 "SELECT EXISTS (SELECT FROM pgjobs.job_runs WHERE job_id = $job AND status = 'running')" || return 1
    live_sql "SELECT pgjobs.jobs_abort($job)" >/dev/null
    wait_until 2 "SELECT (SELECT status FROM pgjobs.job_list WHERE id = $job) = 'aborted'
                         AND (SELECT status FROM pgjobs.job_runs WHERE job_id = $job) = 'aborted'" || return 1
    live_sql "SELECT NOT EXISTS (SELECT FROM live_effects WHERE v = 3)" | grep -qx t
}

# An owner's abort of her running SQL job left open (its row and its run held) does not keep the
# executor that runs it: the job's statements end, its report waits 100 ms for the rows and
# fails, and the executor goes (its run is lost once the hold ends). The executors are shared by
# every identity; the report waited for her transaction before. Once she rolls back, the job is
# requeued and runs again to its completion: nothing lost.
test_a_held_sql_job_keeps_no_executor() {
    local job pid holder
    job=$(live_sql "SELECT pgjobs.jobs_add_sql('SELECT pg_sleep(1)', max_attempts => 3)")
    wait_until 10 "SELECT EXISTS (SELECT FROM pgjobs.job_runs WHERE job_id = $job AND status = 'running')" || return 1
    pid=$(live_sql "SELECT pid FROM pgjobs.job_runs WHERE job_id = $job")
    live_sql "BEGIN; SELECT pgjobs.jobs_abort($job); SELECT pg_sleep(8); ROLLBACK;" >/dev/null 2>&1 &
    holder=$!
    wait_until 6 "SELECT NOT pgjobs._is_executor($pid)
                  AND EXISTS (SELECT FROM pg_stat_activity WHERE query LIKE '%jobs_abort($job)%' AND state = 'active'
                              AND pid <> pg_backend_pid())" || { wait $holder; return 1; }
    wait $holder
    wait_until 30 "SELECT status = 'completed' FROM pgjobs.job_history WHERE id = $job" || return 1
    live_sql "SELECT count(*) = 1 FROM pgjobs.job_runs WHERE job_id = $job AND status = 'succeeded'" | grep -qx t
}

# A failing SQL job is retried after 1 s, then 2 s, and fails for good after its third attempt.
test_failing_sql_job_follows_the_backoff() {
    local job
    job=$(live_sql "SELECT pgjobs.jobs_add_sql('SELECT 1/0', max_attempts => 3, backoff => '1 second')")
    wait_until 20 "SELECT status = 'failed' FROM pgjobs.job_list WHERE id = $job" || return 1
    live_sql "
        WITH runs AS (
            SELECT attempt, status, message,
                   started_at - lag(started_at) OVER (ORDER BY attempt) AS gap
            FROM pgjobs.job_runs WHERE job_id = $job)
        SELECT count(*) = 3
           AND bool_and(status = 'failed' AND message = 'division by zero')
           AND bool_and(gap IS NULL OR (attempt = 2 AND gap >= interval '1 second')
                                    OR (attempt = 3 AND gap >= interval '2 seconds'))
           AND (SELECT result ->> 'error' FROM pgjobs.job_history WHERE id = $job) = 'division by zero'
        FROM runs" | grep -qx t
}

# A SQL job runs as its owner: it cannot read what the owner cannot, nor switch back to a superuser.
test_sql_job_runs_with_its_owners_rights() {
    local reader escalator
    live_sql "CREATE ROLE live_alice IN ROLE pgjobs_user; CREATE TABLE live_secret (v integer); INSERT INTO live_secret VALUES (42);
              CREATE TABLE live_alice_out (v integer); GRANT INSERT ON live_alice_out TO live_alice"
    reader=$(live_sql "SET ROLE live_alice; SELECT pgjobs.jobs_add_sql('INSERT INTO live_alice_out SELECT v FROM live_secret', max_attempts => 1)")
    escalator=$(live_sql "SET ROLE live_alice; SELECT pgjobs.jobs_add_sql('RESET ROLE; INSERT INTO live_alice_out SELECT v FROM live_secret', max_attempts => 1)")
    wait_until 20 "SELECT count(*) = 2 FROM pgjobs.job_history WHERE id IN ($reader, $escalator)" || return 1
    live_sql "SELECT (SELECT result ->> 'error' FROM pgjobs.job_history WHERE id = $reader) = 'permission denied for table live_secret'
                 AND (SELECT result ->> 'error' FROM pgjobs.job_history WHERE id = $escalator)
                     = 'cannot set parameter \"role\" within security-restricted operation'
                 AND NOT EXISTS (SELECT FROM live_alice_out)" | grep -qx t
}

# Nothing a SQL job leaves behind runs with the extension's rights (issue 11's attack): a
# search_path into the member's schema, with a look-alike uuid type and casts, reached the
# executor's completion, which resolved `$2::uuid` by it as the superuser; a deferred trigger
# would have fired at the commit, after the executor had switched back to the superuser.
test_sql_job_leaves_nothing_for_the_extension_to_run() {
    live_sql "CREATE ROLE live_mallory IN ROLE pgjobs_user; GRANT CREATE ON DATABASE $LIVE_DB TO live_mallory;
              CREATE TABLE live_ran_as (who text, what text); GRANT INSERT ON live_ran_as TO live_mallory" || return 1
    live_sql "SET ROLE live_mallory;
        CREATE SCHEMA m;
        CREATE TYPE m.uuid AS (v text);
        CREATE FUNCTION m.to_m(text) RETURNS m.uuid LANGUAGE plpgsql AS
            \$\$BEGIN INSERT INTO public.live_ran_as VALUES (current_user, 'cast'); RETURN ROW(\$1); END\$\$;
        CREATE CAST (text AS m.uuid) WITH FUNCTION m.to_m(text);
        CREATE FUNCTION m.to_u(m.uuid) RETURNS pg_catalog.uuid LANGUAGE sql AS \$\$SELECT (\$1).v::pg_catalog.uuid\$\$;
        CREATE CAST (m.uuid AS pg_catalog.uuid) WITH FUNCTION m.to_u(m.uuid) AS IMPLICIT;
        CREATE TABLE m.t (x integer);
        CREATE FUNCTION m.late() RETURNS trigger LANGUAGE plpgsql AS
            \$\$BEGIN INSERT INTO public.live_ran_as VALUES (current_user, 'deferred trigger'); RETURN NULL; END\$\$;
        CREATE CONSTRAINT TRIGGER late AFTER INSERT ON m.t DEFERRABLE INITIALLY DEFERRED
            FOR EACH ROW EXECUTE FUNCTION m.late()" || return 1
    local jobs
    jobs=$(live_sql "SET ROLE live_mallory;
        SELECT string_agg(pgjobs.jobs_add_sql(sql, max_attempts => 1)::text, ',')
        FROM (VALUES ('SET search_path = m, pg_catalog; SELECT 1'),
                     ('SET LOCAL search_path = m, pg_catalog; SET work_mem = ''64kB''; SELECT 1'),
                     ('INSERT INTO m.t VALUES (1)')) AS s(sql)") || return 1
    wait_until 20 "SELECT count(*) = 3 FROM pgjobs.job_history WHERE id IN ($jobs)" || return 1
    # The deferred trigger may not fire at all: PostgreSQL refuses it inside the job's
    # security-restricted operation, and the job fails.
    live_sql "SELECT array_agg(status::text || ':' || coalesce(result ->> 'error', '') ORDER BY id)
                     = ARRAY['completed:', 'completed:', 'failed:cannot fire deferred trigger within security-restricted operation']
                 AND NOT EXISTS (SELECT FROM live_ran_as)
              FROM pgjobs.job_history WHERE id IN ($jobs)" | grep -qx t
}

# Executors stay: a burst of SQL jobs is run by at most pg_jobs.max_workers (4) processes, job
# after job, and nothing one job leaves in its session reaches the next, another owner's: its
# settings, session advisory locks and sequence values are gone (PostgreSQL refuses temporary
# tables, prepared statements and LISTEN to a job, a security-restricted operation), and no job
# sees the executor's own sequence values either.
test_sql_job_executors_stay_and_forget() {
    live_sql "CREATE ROLE live_leaver IN ROLE pgjobs_user; CREATE ROLE live_looker IN ROLE pgjobs_user;
              CREATE SEQUENCE live_seq; GRANT USAGE ON live_seq TO live_leaver;
              CREATE TABLE live_session_seen (pid integer, advisory bigint, work_mem text, lastval_known boolean);
              GRANT INSERT ON live_session_seen TO live_looker" >/dev/null || return 1
    local leave='SELECT pg_advisory_lock(4242); SET work_mem = $m$77MB$m$; SELECT nextval($s$live_seq$s$)'
    local look='DO $d$ DECLARE known boolean := true; BEGIN
                  BEGIN PERFORM lastval(); EXCEPTION WHEN object_not_in_prerequisite_state THEN known := false; END;
                  INSERT INTO live_session_seen SELECT pg_backend_pid(),
                      (SELECT count(*) FROM pg_locks WHERE locktype = $a$advisory$a$ AND pid = pg_backend_pid()),
                      current_setting($w$work_mem$w$), known;
                END $d$'
    local jobs
    jobs=$("$PG_BIN/psql" -X -q -tA -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d "$LIVE_DB" \
        -v leave="$leave" -v look="$look" <<'SQL'
BEGIN;
SET ROLE live_leaver;
SELECT string_agg(pgjobs.jobs_add_sql(:'leave', max_attempts => 1)::text, ',') AS leavers
FROM generate_series(1, 10) \gset
SET ROLE live_looker;
SELECT string_agg(pgjobs.jobs_add_sql(:'look', max_attempts => 1)::text, ',') AS lookers
FROM generate_series(1, 10) \gset
COMMIT;
\echo :leavers,:lookers
SQL
) || return 1
    wait_until 30 "SELECT count(*) = 20 FROM pgjobs.job_history WHERE id IN ($jobs)" || return 1
    live_sql "SELECT (SELECT bool_and(status = 'completed') FROM pgjobs.job_history WHERE id IN ($jobs))
                 AND (SELECT count(DISTINCT pid) BETWEEN 1 AND 4 FROM pgjobs.job_runs WHERE job_id IN ($jobs))
                 AND (SELECT count(*) = 10 AND bool_and(advisory = 0 AND work_mem <> '77MB' AND NOT lastval_known)
                      FROM live_session_seen)
                 AND EXISTS (SELECT FROM live_session_seen s
                             JOIN pgjobs.job_runs r ON r.pid = s.pid AND r.owner = 'live_leaver'::regrole
                             WHERE r.job_id IN ($jobs))" | grep -qx t
}

# A database owner who is no superuser cannot make the background workers run its code: they
# resolve names with a pinned search_path, not the one the owner set for the database.
test_database_settings_do_not_reach_the_background_workers() {
    local old job
    live_sql "CREATE ROLE live_db_owner; ALTER DATABASE $LIVE_DB OWNER TO live_db_owner;
              CREATE TABLE live_pid_calls (who text); GRANT INSERT ON live_pid_calls TO live_db_owner" || return 1
    live_sql "SET ROLE live_db_owner;
        CREATE FUNCTION public.pg_backend_pid() RETURNS integer LANGUAGE sql
            AS \$\$INSERT INTO public.live_pid_calls VALUES (current_user) RETURNING pg_catalog.pg_backend_pid()\$\$;
        ALTER DATABASE $LIVE_DB SET search_path = public, pg_catalog" || return 1
    # The launcher and every executor from now on connect with that setting.
    old=$(launcher_pid)
    live_sql "SELECT pg_catalog.pg_terminate_backend($old)" >/dev/null
    wait_until 15 "SELECT alive AND pid <> $old FROM pgjobs.launcher" || return 1
    job=$(live_sql "SELECT pgjobs.jobs_add_sql('SELECT 1')") || return 1
    wait_until 15 "SELECT status = 'completed' FROM pgjobs.job_list WHERE id = $job" || return 1
    local calls
    calls=$(live_sql "SELECT count(*) FROM live_pid_calls")
    live_sql "ALTER DATABASE $LIVE_DB RESET search_path; DROP FUNCTION public.pg_backend_pid();
              ALTER DATABASE $LIVE_DB OWNER TO postgres" >/dev/null
    [ "$calls" = 0 ]
}

# No member stops the launcher for everyone by holding rows in an open transaction: its own
# schedule, and the row of its own job whose last lease has run out (the rescue waited for it,
# and with it every schedule). Nor can it take the keys of the scheduler's slots, which let it
# freeze the launcher on the key's lock. Another identity's per-second SQL job keeps running.
test_a_member_holding_rows_does_not_stop_the_launcher() {
    live_sql "CREATE ROLE live_holder IN ROLE pgjobs_user; CREATE ROLE live_victim IN ROLE pgjobs_user;
              CREATE TABLE live_ticks (at timestamptz); GRANT INSERT ON live_ticks TO live_victim" || return 1
    local held
    held=$(live_sql "SET ROLE live_holder;
        SELECT pgjobs.jobs_schedule('holder-daily', '@daily', '{\"task\": \"t\"}');
        SELECT pgjobs.jobs_add('held', max_attempts => 1)") || return 1
    held=$(tail -n1 <<<"$held")
    live_sql "SET ROLE live_holder; SELECT count(*) FROM pgjobs.jobs_claim('holder-worker')" >/dev/null || return 1
    live_sql "UPDATE pgjobs.jobs SET locked_until = now() - interval '1 second' WHERE id = $held;
              SELECT pgjobs._leases_found(now() - interval '1 second')" || return 1
    local refused
    refused=$(live_sql "SET ROLE live_holder;
        SELECT pgjobs.jobs_add('squat', key => 'scheduled_job:1:2030-01-01T00:00:00Z')" 2>&1 || true)
    "$PG_BIN/psql" -X -q -h localhost -p "$PORT" -U postgres -d "$LIVE_DB" >/dev/null 2>&1 <<SQL &
SET ROLE live_holder;
BEGIN;
SELECT pgjobs.jobs_alter_schedule('holder-daily', '@hourly');
UPDATE pgjobs.jobs SET name = 'mine' WHERE id = $held;
SELECT pg_sleep(12);
COMMIT;
SQL
    local holder=$!
    sleep 1
    live_sql "SET ROLE live_victim;
        SELECT pgjobs.jobs_schedule('victim-ticks', 'every 1 second', '{\"sql\": \"INSERT INTO live_ticks VALUES (now())\"}')" >/dev/null
    local ticking=f
    wait_until 8 "SELECT count(*) >= 3 FROM live_ticks" && ticking=t
    live_sql "SET ROLE live_victim; SELECT pgjobs.jobs_unschedule('victim-ticks')" >/dev/null
    wait "$holder"
    # Once the holder commits, its job is rescued (its last attempt: failed).
    wait_until 15 "SELECT status = 'failed' FROM pgjobs.job_history WHERE id = $held" || return 1
    [ "$ticking" = t ] && grep -q "22023\|reserved for the scheduler" <<<"$refused"
}

# A member restarts or stops her own 15 due routines (one schedule each) in a transaction she
# leaves open, which holds their rows of the day, and switches her schedules' commands on: each
# of the launcher's rounds used to wait a second for each such row (lock_timeout), and another
# identity's per-second schedule fired every 15 s or so. The rounds pass her rows over: the
# other schedule fires each second, and her routines start once she commits.
test_a_member_holding_her_routines_does_not_slow_others() {
    live_sql "CREATE ROLE live_rt_holder IN ROLE pgjobs_user; CREATE ROLE live_rt_victim IN ROLE pgjobs_user;
              CREATE ROLE live_rt_agent IN ROLE pgjobs_agent;
              CREATE TABLE live_rt_ticks (at timestamptz); GRANT INSERT ON live_rt_ticks TO live_rt_victim" || return 1
    live_sql "SET ROLE live_rt_agent; SELECT pgjobs.batch_register('HOLDPC');
              SET ROLE live_rt_holder;
              SELECT count(pgjobs.routines_put('MAL' || g, 'mal@HOLDPC:feed' || g, realtime => true, command => 'feed'))
              FROM generate_series(1, 15) g;
              SELECT count(*) FROM generate_series(1, 15) g, pgjobs.routines_set_mode('MAL' || g, 'observe')" >/dev/null || return 1
    wait_until 15 "SELECT count(*) = 15 FROM pgjobs.routines_today WHERE routine LIKE 'mal@HOLDPC:%'" || return 1
    "$PG_BIN/psql" -X -q -h localhost -p "$PORT" -U postgres -d "$LIVE_DB" >/dev/null 2>&1 <<'SQL' &
SET ROLE live_rt_holder;
BEGIN;
SELECT pgjobs.routine_stop('MAL' || g, 'mal@HOLDPC:feed' || g) FROM generate_series(1, 15) g;
SELECT pg_sleep(12);
COMMIT;
SQL
    local holder=$!
    sleep 1
    live_sql "SET ROLE live_rt_holder;
              SELECT count(*) FROM generate_series(1, 15) g, pgjobs.routines_set_mode('MAL' || g, 'control');
              SET ROLE live_rt_victim;
              SELECT pgjobs.jobs_schedule('victim-ticks', 'every 1 second', '{\"sql\": \"INSERT INTO live_rt_ticks VALUES (now())\"}')" >/dev/null || return 1
    sleep 8
    local ticks
    ticks=$(live_sql "SELECT count(*) FROM live_rt_ticks")
    live_sql "SET ROLE live_rt_victim; SELECT pgjobs.jobs_unschedule('victim-ticks')" >/dev/null
    wait "$holder"
    local started=f
    wait_until 15 "SELECT count(*) = 15 FROM pgjobs.batch_jobs WHERE kind = 'routine' AND routine LIKE 'mal@HOLDPC:%'" && started=t
    live_sql "DELETE FROM pgjobs.routine_schedules WHERE schedule LIKE 'MAL%'" >/dev/null
    [ "$ticks" -ge 4 ] && [ "$started" = t ]
}

# A member's transaction that fills the server's lock table (advisory locks, held open) makes
# every round of the launcher fail with 53200 (out of shared memory), while a per-second
# schedule keeps it coming round. The launcher logs it, backs off and goes on: the same process,
# its heartbeat fresh and the schedule firing again once the member is done. (It used to exit,
# and be restarted a second later only to exit again.)
test_launcher_survives_a_full_lock_table() {
    live_sql "CREATE ROLE live_filler IN ROLE pgjobs_user;
              SELECT pgjobs.jobs_schedule('lock-ticks', 'every 1 second', '{\"task\": \"lock-tick\"}')" >/dev/null || return 1
    local pid log
    pid=$(launcher_pid)
    log="$(cluster_dir test)/server.log"
    "$PG_BIN/psql" -X -q -h localhost -p "$PORT" -U postgres -d "$LIVE_DB" >/dev/null 2>&1 <<'SQL' &
SET ROLE live_filler;
BEGIN;
DO $$
DECLARE
    n bigint := 0;
BEGIN
    LOOP
        n := n + 1;
        BEGIN
            PERFORM pg_advisory_xact_lock(n);
        EXCEPTION WHEN out_of_memory THEN
            EXIT;
        END;
    END LOOP;
END
$$;
SELECT pg_sleep(6);
COMMIT;
SQL
    local filler=$!
    local failed=f
    wait_log 20 "$log" "\\[$pid\\] WARNING:  pg_jobs launcher: its round failed.*out of shared memory" && failed=t
    wait "$filler"
    local ended
    ended=$(live_sql "SELECT clock_timestamp()")
    wait_until 30 "SELECT pid = $pid AND heartbeat_at > now() - interval '3 seconds' FROM pgjobs.launcher" || return 1
    local firing=f
    wait_until 30 "SELECT count(*) >= 2 FROM pgjobs.jobs WHERE task = 'lock-tick' AND due_at > '$ended'" && firing=t
    live_sql "SELECT pgjobs.jobs_unschedule('lock-ticks'); DELETE FROM pgjobs.jobs WHERE task = 'lock-tick'" >/dev/null
    [ "$failed" = t ] && [ "$firing" = t ] && [ "$(launcher_pid)" = "$pid" ]
}

# A SQL job that catches query_canceled outlived its timeout and jobs_abort and held an executor
# for good. Now the launcher ends its process pg_jobs.cancel_grace (5 s) after the cancel and
# records the run as timed out or aborted.
# In its database the launcher requeues an expired lease when it runs out, with no claim (claims
# there leave that to it rather than probe for expired leases on every call). It sleeps at most
# pg_jobs.refresh_interval (10 s) before it notices a lease taken while it slept.
# jobs_wait returns when the commit that completes the job wakes it: a session waits for a job
# for up to 10 s while another claims and completes it a second later, and the waiter returns
# completed well before its timeout and before its read of every 5 s would have seen it.
test_jobs_wait_is_woken_by_the_completion() {
    local id
    id=$(live_sql "SELECT pgjobs.jobs_add('waited for', queue => 'waits')") || return 1
    [ "$(woken_waiter "$id" "SELECT pgjobs.jobs_complete(id, lease_token) FROM pgjobs.jobs_claim('w', ARRAY['waits'], 1)")" = \
        "completed  true" ]
}

# A job waiting for another is blocked when that one fails: its waiter returns then, with the
# reason, and does not sleep on to its timeout.
test_jobs_wait_returns_when_its_job_is_blocked() {
    local first second
    first=$(live_sql "SELECT pgjobs.jobs_add('doomed', queue => 'waits-blocked', max_attempts => 1)") || return 1
    second=$(live_sql "SELECT pgjobs.jobs_add('after it', queue => 'waits-blocked', depends_on => ARRAY[$first::bigint])") || return 1
    [ "$(woken_waiter "$second" "SELECT pgjobs.jobs_fail(id, lease_token, 'broken') FROM pgjobs.jobs_claim('w', ARRAY['waits-blocked'], 1)")" = \
        "blocked job $first failed true" ] || return 1
    live_sql "SELECT pgjobs.jobs_abort($second)" >/dev/null
}

# woken_waiter JOB SQL: a jobs_wait for JOB of up to 10 s, seen asleep, then SQL a second later;
# prints the waiter's answer: the job's status and error, and whether it returned within 4 s.
woken_waiter() {
    local out="$OUT/jobs-wait-$1.out" waiter
    live_sql "SELECT status || ' ' || coalesce(error, '') || ' ' || (clock_timestamp() - statement_timestamp() < interval '4 seconds')
              FROM pgjobs.jobs_wait(ARRAY[$1::bigint], '10 seconds')" >"$out" 2>&1 &
    waiter=$!
    wait_until 5 "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE wait_event_type = 'Extension'
                                 AND query LIKE '%jobs_wait%' AND pid <> pg_backend_pid())" || { wait $waiter; return 1; }
    sleep 1
    live_sql "$2" >/dev/null || return 1
    wait $waiter || return 1
    cat "$out"
}

# A job due later wakes its queue's workers when it comes due, and not before: added due in 2 s,
# its queue's signal reaches a listener after 1.5 s and within 8 s (the launcher's regular round
# is 10 s away, and nothing else notifies a job due later); then the same for its retry, waiting
# out a backoff of 2 s.
test_jobs_due_later_wake_their_workers() {
    local signal job
    signal=$(live_sql "SELECT pgjobs.jobs_ready_signal('live-due')") || return 1
    notified_when_due "$signal" "SELECT pgjobs.jobs_add('later', queue => 'live-due', backoff => '2 seconds',
                                                        run_at => now() + interval '2 seconds')" || return 1
    notified_when_due "$signal" "SELECT pgjobs.jobs_fail(id, lease_token, 'again')
                                 FROM pgjobs.jobs_claim('w', ARRAY['live-due'], 1)" || return 1
    [ "$(live_sql "SELECT count(pgjobs.jobs_abort(id)) FROM pgjobs.jobs WHERE queue = 'live-due' AND attempt = 1")" = 1 ]
}

# Jobs due later added before the server stopped (the places in shared memory that said when
# were lost with it): the launcher's first round reads them, and a job due 15 s after its add, the
# server stopped with -m immediate and started between, wakes its queue's workers when it comes
# due. Without that read nothing would notify the queue: no add, no claim, no lease.
test_jobs_due_later_wake_their_workers_after_a_restart() {
    local signal job
    signal=$(live_sql "SELECT pgjobs.jobs_ready_signal('live-due-restart')") || return 1
    job=$(live_sql "SELECT pgjobs.jobs_add('later', queue => 'live-due-restart', run_at => now() + interval '15 seconds')") || return 1
    restart_immediately && wait_ready || return 1
    notified_when_due "$signal" "SELECT 1" \
        "pg_sleep(extract(epoch FROM (SELECT run_at FROM pgjobs.jobs WHERE id = $job) - clock_timestamp()) - 0.5)" || return 1
    [ "$(live_sql "SELECT count(pgjobs.jobs_abort(id)) FROM pgjobs.jobs WHERE queue = 'live-due-restart'")" = 1 ]
}

# A claim that finds its queue's rate limit spent wakes the queue's workers when a token is free
# again, as a job due later does: with one claim in 3 s, the first claim takes r1, the second
# finds the rate spent and nothing, and the queue's signal reaches a listener after 1.5 s and
# within 8 s (nothing else notifies the queue then; a worker would otherwise wait for its poll).
test_rate_limited_claims_wake_their_workers() {
    local signal
    signal=$(live_sql "SELECT pgjobs.jobs_ready_signal('live-rate')") || return 1
    live_sql "SELECT pgjobs.jobs_rate_limit('live-rate', 1, interval '3 seconds');
              SELECT pgjobs.jobs_add('r1', queue => 'live-rate'), pgjobs.jobs_add('r2', queue => 'live-rate')" >/dev/null || return 1
    [ "$(live_sql "SELECT string_agg(task, ',') FROM pgjobs.jobs_claim('w', ARRAY['live-rate'], 1)")" = r1 ] || return 1
    notified_when_due "$signal" "SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['live-rate'], 1)" || return 1
    live_sql "SELECT pgjobs.jobs_unlimit('live-rate')" >/dev/null || return 1
    [ "$(live_sql "SELECT count(pgjobs.jobs_abort(id)) FROM pgjobs.jobs WHERE queue = 'live-rate'")" = 2 ]
}

# The same for a rate limit per key: with one claim of each key in 3 s, the first claim takes
# r1 of key k, the second finds k's rate spent (r2 waits, as k's job) and nothing, and the
# queue's signal reaches a listener when k's token is free again. Once with the limit of every
# key and once by a prefix, the claims' two ways of reading a key's limits.
test_key_rate_limited_claims_wake_their_workers() {
    local prefix queue signal
    for prefix in "" "k"; do
        queue="live-key-rate-by-${prefix:-all}"
        signal=$(live_sql "SELECT pgjobs.jobs_ready_signal('$queue')") || return 1
        live_sql "SELECT pgjobs.jobs_key_rate_limit('$queue', 1, interval '3 seconds', '$prefix');
                  SELECT pgjobs.jobs_add('r1', queue => '$queue', concurrency_key => 'k'),
                         pgjobs.jobs_add('r2', queue => '$queue', concurrency_key => 'k')" >/dev/null || return 1
        [ "$(live_sql "SELECT string_agg(task, ',') FROM pgjobs.jobs_claim('w', ARRAY['$queue'], 1)")" = r1 ] || return 1
        notified_when_due "$signal" "SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['$queue'], 1)" || return 1
        live_sql "SELECT pgjobs.jobs_unlimit('$queue')" >/dev/null || return 1
        [ "$(live_sql "SELECT count(pgjobs.jobs_abort(id)) FROM pgjobs.jobs WHERE queue = '$queue'")" = 2 ] || return 1
    done
}

# notified_when_due SIGNAL SQL [EARLY]: whether a session that LISTENs and runs SQL (which makes a
# job due 2 s later) gets the notification with SIGNAL after EARLY (a pg_sleep call: 1.5 s) and
# within 6.5 s more. psql prints a notification after the command during which it came.
notified_when_due() {
    local out
    out=$("$PG_BIN/psql" -X -q -tA -h localhost -p "$PORT" -U postgres -d "$LIVE_DB" \
        -c "LISTEN pgjobs_ready" -c "$2" -c "SELECT 'early', ${3:-pg_sleep(1.5)}" \
        -c "SELECT 'late', pg_sleep(6.5)" -c "SELECT 'end'" 2>&1) || return 1
    echo "$out" >"$OUT/notified-when-due.out"
    echo "$out" | awk -v signal="\"$1\"" '
        /^early/ { phase = "early" } /^late/ { phase = "late" } /^end/ { phase = "end" }
        index($0, signal) { seen[phase]++ }
        END { exit !(seen["late"] >= 1 && !seen["early"] && !seen[""]) }'
}

test_launcher_requeues_expired_leases() {
    local job
    job=$(live_sql "SELECT pgjobs.jobs_add('t', queue => 'live-lease', lease => '2 seconds')") || return 1
    [ "$(live_sql "SELECT count(*) FROM pgjobs.jobs_claim('live-dead-worker', ARRAY['live-lease'])")" = 1 ] || return 1
    wait_until 20 "SELECT status = 'created' AND attempt = 1
                          AND errors -> 0 ->> 'error' = 'lease expired: worker live-dead-worker stopped renewing it'
                   FROM pgjobs.jobs WHERE id = $job" || return 1
    live_sql "SELECT pgjobs.jobs_abort($job)" >/dev/null
}

# A batch agent's claim requeues an expired lease at once even where the launcher does it too (a
# batch job's lease is its agent's allowed silence, seconds in a tight setup): in one
# transaction, which the launcher cannot see, a lease expires and the next claim ends the job.
test_batch_claims_rescue_where_the_launcher_does() {
    [ "$(live_sql "SELECT alive FROM pgjobs.launcher")" = t ] || return 1
    "$PG_BIN/psql" -X -q -tA -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d "$LIVE_DB" <<'SQL' | tail -n1 | grep -qx ERROR
BEGIN;
SELECT pgjobs.batch_register('live-rescuer');
SELECT pgjobs.batch_post('true', computer => 'live-rescuer') AS job \gset
SELECT count(*) FROM pgjobs.batch_claim('live-rescuer');
UPDATE pgjobs.jobs SET locked_until = now() - interval '1 second' WHERE id = :job;
SELECT pgjobs._leases_found(now() - interval '1 second');
SELECT count(*) FROM pgjobs.batch_claim('live-rescuer');
SELECT status FROM pgjobs.batch_jobs WHERE id = :job;
ROLLBACK;
SQL
}

# SQL jobs that wait for an executor (more are due than pg_jobs.max_workers, 4, may run) do not
# keep the launcher busy: it waits for an executor to end (which wakes it) instead of starting
# round after round. Each round writes the launcher's heartbeat, so rounds show as the distinct
# heartbeats seen in 3 s.
test_launcher_idles_while_sql_jobs_wait() {
    local first
    first=$(live_sql "SELECT min(pgjobs.jobs_add_sql('SELECT pg_sleep(6)')) FROM generate_series(1, 6)") || return 1
    wait_until 10 "SELECT count(*) = 4 FROM pgjobs.job_runs WHERE status = 'running' AND job_id >= $first" || return 1
    # Its heartbeats over 3 s, read every 0.1 s in one session (a psql per reading took twice as
    # long on a loaded machine, and saw more rounds). A launcher going round without a pause is
    # seen in every reading (30); waiting a second between rounds, with a wake-up from each
    # executor that ends and each schedule that fires, in far fewer.
    live_sql "DO \$\$
        DECLARE seen timestamptz[] := '{}'; rounds bigint;
        BEGIN
            FOR i IN 1..30 LOOP
                seen := seen || (SELECT heartbeat_at FROM pgjobs.launcher);
                PERFORM pg_sleep(0.1);
            END LOOP;
            rounds := (SELECT count(DISTINCT s) FROM unnest(seen) s);
            IF rounds > 10 THEN
                RAISE EXCEPTION 'the launcher made % rounds in 3 s', rounds;
            END IF;
        END \$\$" >/dev/null || return 1
    wait_until 30 "SELECT NOT EXISTS (SELECT FROM pgjobs.jobs WHERE id >= $first)"
}

test_sql_job_that_ignores_cancel_is_stopped() {
    local stubborn='DO $x$ BEGIN LOOP BEGIN PERFORM pg_sleep(60); EXCEPTION WHEN query_canceled THEN NULL; END; END LOOP; END $x$'
    local timed aborted
    timed=$(live_sql "SELECT pgjobs.jobs_add_sql(\$s\$$stubborn\$s\$, timeout => '1 second', max_attempts => 1)") || return 1
    aborted=$(live_sql "SELECT pgjobs.jobs_add_sql(\$s\$$stubborn\$s\$, max_attempts => 1)") || return 1
    wait_until 10 "SELECT EXISTS (SELECT FROM pgjobs.job_runs WHERE job_id = $aborted AND status = 'running')" || return 1
    live_sql "SELECT pgjobs.jobs_abort($aborted)" >/dev/null
    wait_until 20 "SELECT count(*) = 2 FROM pgjobs.job_history WHERE id IN ($timed, $aborted)" || return 1
    wait_until 5 "SELECT NOT EXISTS (SELECT FROM pg_stat_activity a JOIN pgjobs.job_runs r ON r.pid = a.pid
                                     WHERE r.job_id IN ($timed, $aborted))" || return 1
    live_sql "SELECT (SELECT status FROM pgjobs.job_history WHERE id = $timed) = 'failed'
                 AND (SELECT status FROM pgjobs.job_runs WHERE job_id = $timed) = 'timed out'
                 AND (SELECT status FROM pgjobs.job_history WHERE id = $aborted) = 'aborted'
                 AND (SELECT status FROM pgjobs.job_runs WHERE job_id = $aborted) = 'aborted'" | grep -qx t
}

# On a streaming standby made with pg_basebackup nothing fires; after pg_ctl promote it does.
# Stops the primary, so it runs last.
test_standby_is_idle_until_promoted() {
    local standby standby_port=$((PORT + 2)) promoted_at
    live_sql "SELECT pgjobs.jobs_schedule('live-standby', 'every 1 second', '{\"task\": \"standby-tick\", \"queue\": \"live\"}')" >/dev/null
    standby=$(cluster_dir standby)
    rm -rf "$standby/data"
    as_db_user "$PG_BIN/pg_basebackup" -h localhost -p "$PORT" -U postgres -D "$standby/data" -R -X stream -c fast || return 1
    echo "port = $standby_port" >>"$standby/data/postgresql.conf"
    as_db_user "$PG_BIN/pg_ctl" -D "$standby/data" -l "$standby/server.log" -w start >/dev/null || return 1
    wait_ready "$standby_port" || return 1
    sleep 2
    local idle
    idle=$(live_sql "SELECT pg_is_in_recovery() AND NOT EXISTS (
                         SELECT FROM pg_stat_activity WHERE backend_type = 'pg_jobs launcher')" "$standby_port")
    stop_cluster test
    promoted_at=$(date -u +%Y-%m-%dT%H:%M:%SZ)
    as_db_user "$PG_BIN/pg_ctl" -D "$standby/data" -w promote >/dev/null
    local fired=f
    wait_until 15 "SELECT EXISTS (SELECT FROM pgjobs.job_list WHERE task = 'standby-tick' AND run_at > '$promoted_at'::timestamptz + interval '1 second')" "$standby_port" && fired=t
    as_db_user "$PG_BIN/pg_ctl" -D "$standby/data" -m fast -w stop >/dev/null
    rm -rf "$standby"
    [ "$idle" = t ] && [ "$fired" = t ]
}

# pg_dump and a restore into a new database keep every row of the queue, the history, the
# schedules, the proxies and a compute job's own row (compute_jobs), the jobs' opaque ids (their
# key is dumped), and where the ids have got to: the next job gets a new id.
test_dump_and_restore_keep_every_row() {
    local src=pg_jobs_dump_src dst=pg_jobs_dump_dst before after
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d postgres \
        -c "DROP DATABASE IF EXISTS $src WITH (FORCE)" -c "DROP DATABASE IF EXISTS $dst WITH (FORCE)" \
        -c "CREATE DATABASE $src" -c "CREATE DATABASE $dst" \
        -c "DROP ROLE IF EXISTS dump_root" -c "DROP ROLE IF EXISTS dump_proxy" \
        -c "CREATE ROLE dump_root" -c "CREATE ROLE dump_proxy" >/dev/null || return 1
    local rows="SELECT md5(concat_ws('|',
        (SELECT string_agg(j::text, ',' ORDER BY j.id) FROM pgjobs.jobs j),
        (SELECT string_agg(k::text, ',' ORDER BY k.idempotency_key) FROM pgjobs.job_keys k),
        (SELECT string_agg(h::text || h.tableoid::regclass::text, ',' ORDER BY h.id) FROM pgjobs.job_history h),
        (SELECT string_agg(x::text, ',' ORDER BY x.id) FROM pgjobs.schedules x),
        (SELECT string_agg(p::text, ',' ORDER BY p.proxy) FROM pgjobs.proxies p),
        (SELECT string_agg(c::text, ',' ORDER BY c.job_id) FROM pgjobs.compute_jobs c),
        (SELECT string_agg(o::text, ',' ORDER BY o.id) FROM pgjobs.job_opaque_ids o)))"
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d "$src" <<'SQL' >/dev/null || return 1
SET client_min_messages = warning;
CREATE EXTENSION pg_jobs CASCADE;
SELECT pgjobs.jobs_history_prepare();
SELECT pgjobs.jobs_add('done', key => 'k:done'), pgjobs.jobs_add('waiting'),
       pgjobs.jobs_add('later', run_at => now() + interval '5 years');
SELECT pgjobs.jobs_complete(c.id, c.lease_token) FROM pgjobs.jobs_claim('w') c;
SELECT pgjobs.jobs_schedule('nightly', '0 3 * * *', '{"sql": "SELECT 1"}');
SELECT pgjobs.jobs_add_proxy('dump_proxy', 'dump_root');
INSERT INTO pgjobs.compute_jobs (job_id, address, duplication_type, flags, need_capabilities, requirements)
SELECT id, 'acct:escrow', 'consensus', 2, 4, '{"gpu": true}' FROM pgjobs.jobs WHERE task = 'later';
SQL
    before=$(live_sql "$rows" "$PORT" "$src") || return 1
    "$PG_BIN/pg_dump" -h localhost -p "$PORT" -U postgres "$src" >"$OUT/dump.sql" || return 1
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d "$dst" \
        -f "$OUT/dump.sql" >/dev/null 2>"$OUT/restore.log" || return 1
    after=$(live_sql "$rows" "$PORT" "$dst") || return 1
    [ "$before" = "$after" ] &&
        live_sql "SELECT count(opaque_id) FROM pgjobs.job_opaque_ids" "$PORT" "$dst" | grep -qx 3 &&
        live_sql "SELECT pgjobs.jobs_add('after') = 4 AND pgjobs.jobs_schedule('hourly', '0 * * * *', '{\"sql\": \"SELECT 1\"}') = 2" \
            "$PORT" "$dst" | grep -qx t
}

# A dump restored where its roles were made anew (as into another cluster after `pg_dumpall
# --globals-only`: each role has another oid there) gives every row to the role of the same name:
# the owner columns are regrole, which pg_dump writes by name. Here the roles are dropped and made
# again between the dump and the restore; with owners kept as plain oids the rows would name the
# dropped roles' numbers, and the member would see none of them.
test_restore_where_roles_were_made_anew() {
    local src=pg_jobs_roles_src dst=pg_jobs_roles_dst
    local roles="DROP ROLE IF EXISTS dump_member_proxy; DROP ROLE IF EXISTS dump_member;
        CREATE ROLE dump_member IN ROLE pgjobs_user; CREATE ROLE dump_member_proxy IN ROLE pgjobs_user;"
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d postgres \
        -c "DROP DATABASE IF EXISTS $src WITH (FORCE)" -c "DROP DATABASE IF EXISTS $dst WITH (FORCE)" \
        -c "CREATE DATABASE $src" -c "$roles" >/dev/null || return 1
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d "$src" <<'SQL' >/dev/null || return 1
SET client_min_messages = warning;
CREATE EXTENSION pg_jobs CASCADE;
SELECT pgjobs.jobs_add_proxy('dump_member_proxy', 'dump_member');
SET ROLE dump_member;
SELECT pgjobs.jobs_add('mine', queue => 'members');
SELECT pgjobs.jobs_schedule('nightly', '0 3 * * *', '{"sql": "SELECT 1"}');
SELECT pgjobs.jobs_limit('members', 2);
SQL
    local old
    old=$(live_sql "SELECT 'dump_member'::regrole::oid" "$PORT" postgres) || return 1
    "$PG_BIN/pg_dump" -h localhost -p "$PORT" -U postgres "$src" >"$OUT/dump_roles.sql" || return 1
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d postgres \
        -c "DROP DATABASE $src WITH (FORCE)" -c "$roles" -c "CREATE DATABASE $dst" >/dev/null || return 1
    "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d "$dst" \
        -f "$OUT/dump_roles.sql" >/dev/null 2>"$OUT/restore_roles.log" || return 1
    [ "$(live_sql "SELECT 'dump_member'::regrole::oid" "$PORT" postgres)" != "$old" ] &&
        live_sql "SELECT (SELECT count(*) FROM pgjobs.jobs WHERE owner = 'dump_member'::regrole
                                                       AND claimable_by = 'dump_member'::regrole) = 1
                     AND (SELECT count(*) FROM pgjobs.schedules WHERE owner = 'dump_member'::regrole) = 1
                     AND (SELECT count(*) FROM pgjobs.queue_limits WHERE owner = 'dump_member'::regrole) = 1
                     AND (SELECT count(*) FROM pgjobs.proxies
                          WHERE proxy = 'dump_member_proxy'::regrole AND root = 'dump_member'::regrole) = 1" \
            "$PORT" "$dst" | grep -qx t &&
        "$PG_BIN/psql" -X -q -tA -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d "$dst" \
            -c "SET ROLE dump_member_proxy" -c "SELECT count(*) FROM pgjobs.job_list WHERE task = 'mine'" | grep -qx 1
}

# The fault test (issue 11): producers and workers run for a minute while workers and their
# backends are killed with SIGKILL and the server is stopped once with -m immediate and started
# again. Producers record each job they add in fault_produced, in the transaction of its
# jobs_add; workers write the job's effect in fault_effects (no unique constraint: a second
# completion would show as a second row) in the transaction of its jobs_complete. Afterwards
# every produced job has finished as it should, exactly once, within its attempts, and every
# effect of a completing transaction is there exactly once. One job in about twenty is "doomed":
# max_attempts 2, its worker always fails it, so it must end failed after exactly 2 attempts.
# The queue is limited to FAULT_LIMIT jobs leased at once (jobs_limit), fewer than the workers,
# and to one of each of its FAULT_KEYS concurrency keys (jobs_key_limit): a monitor counts the
# leased jobs, and those of each key, every 0.1 s, and no count may exceed its limit, whatever was
# killed.
FAULT_SECONDS=${FAULT_SECONDS:-60}
FAULT_WORKERS=5
FAULT_PRODUCERS=2
FAULT_LIMIT=3
FAULT_KEYS=6

# trap_command VAR SIGNAL: sets VAR to the command a trap runs for SIGNAL, or to nothing. (Not
# for use inside $(...): a nested command substitution no longer sees the shell's traps.)
trap_command() {
    local var=$1 t
    t=$(trap -p "$2")
    [ -n "$t" ] && eval "set -- $t" || set -- "" "" ""
    printf -v "$var" %s "$3"
}

# fault_psql NAME ARGS...: psql as a client named NAME (its application_name), never waiting long.
fault_psql() {
    PGAPPNAME=$1 PGCONNECT_TIMEOUT=3 PGOPTIONS="-c statement_timeout=10s -c lock_timeout=10s" \
        "$PG_BIN/psql" -X -q -tA -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres -d "$LIVE_DB" "${@:2}"
}

# fault_producer N: adds 2 jobs a transaction, about 5 a second (one transaction in ten rolled
# back), until told to stop or its time is up; connection errors (kills, the restart) are shrugged
# off.
fault_producer() {
    set +e
    local name="fault-producer-$1" end=$((SECONDS + FAULT_SECONDS + 60)) last
    RANDOM=$((BASHPID + $1))
    while [ $SECONDS -lt $end ] && [ ! -e "$FAULT_DIR/stop-producers" ]; do
        last=COMMIT
        [ $((RANDOM % 10)) = 0 ] && last=ROLLBACK
        fault_psql "$name" -c BEGIN -c "
            INSERT INTO fault_produced (job_id, doomed)
            SELECT pgjobs.jobs_add('fault', jsonb_build_object('doomed', d), queue => 'fault',
                                   max_attempts => CASE WHEN d THEN 2 ELSE 50 END,
                                   backoff => '0.2 seconds', lease => '3 seconds',
                                   concurrency_key => 'k' || floor(random() * $FAULT_KEYS)), d
            FROM (SELECT random() < 0.05 AS d FROM generate_series(1, 2)) g" -c "$last" \
            && { [ $last = COMMIT ] || echo 2 >>"$FAULT_DIR/rolled-back"; } || sleep 0.3
        sleep 0.3
    done
}

# fault_worker NAME: claims one job at a time with a 3 s lease and completes it in one
# transaction with its effect, after a random pause; fails doomed jobs and one job in 25; and one
# claim in 25 (claimed as NAME/slow) sleeps past its lease before trying to complete.
fault_worker() {
    set +e
    local name=$1 end=$((SECONDS + FAULT_SECONDS + 90)) me row id token doomed
    RANDOM=$((BASHPID + ${#name}))
    while [ $SECONDS -lt $end ] && [ ! -e "$FAULT_DIR/stop-workers" ]; do
        me=$name
        [ $((RANDOM % 25)) = 0 ] && me="$name/slow"
        row=$(fault_psql "$name" -c "SELECT id, lease_token, payload ->> 'doomed'
                                     FROM pgjobs.jobs_claim('$me', ARRAY['fault'], 1, '3 seconds')") \
            || { sleep 0.3; continue; }
        [ -n "$row" ] || { sleep 0.1; continue; }
        IFS='|' read -r id token doomed <<<"$row"
        if [ "$doomed" = true ] || [ $((RANDOM % 25)) = 0 ]; then
            fault_psql "$name" -c "SELECT pgjobs.jobs_fail($id, '$token', 'fault test: $me fails it')" >/dev/null
            continue
        fi
        if [ "$me" != "$name" ]; then
            sleep 3.5
        else
            case $((RANDOM % 4)) in 0) sleep "0.$((RANDOM % 10))" ;; esac
        fi
        fault_psql "$name" -c BEGIN -c "INSERT INTO fault_effects VALUES ($id, '$me')" \
            -c "SELECT pg_sleep(random() * 0.05)" -c "SELECT pgjobs.jobs_complete($id, '$token', '{}')" \
            -c COMMIT >/dev/null
    done
}

# fault_monitor: the jobs of the queue leased at once, and the most of one key, counted in one
# snapshot every 0.1 s (a line each in FAULT_DIR/leased: "jobs|most of a key") until the workers
# stop; a count the restart makes impossible is skipped.
fault_monitor() {
    set +e
    while [ ! -e "$FAULT_DIR/stop-workers" ]; do
        fault_psql fault-monitor -c "SELECT coalesce(sum(n), 0), coalesce(max(n), 0) FROM (
                                         SELECT count(*) AS n FROM pgjobs.jobs
                                         WHERE queue = 'fault' AND lease_token IS NOT NULL
                                         GROUP BY concurrency_key) k" \
            >>"$FAULT_DIR/leased" 2>/dev/null
        sleep 0.1
    done
}

# fault_start_worker SLOT: a new incarnation of the worker in SLOT, named fault-worker-SLOT.GEN.
fault_start_worker() {
    local slot=$1
    FAULT_GEN[$slot]=$((${FAULT_GEN[$slot]:--1} + 1))
    fault_worker "fault-worker-$slot.${FAULT_GEN[$slot]}" 2>>"$FAULT_DIR/worker-$slot.log" &
    FAULT_PID[$slot]=$!
}

# A process and its descendants (a loop's psql runs in a subshell of the loop).
process_tree() { local child; for child in $(pgrep -P "$1"); do process_tree "$child"; done; echo "$1"; }

# SIGKILL of a background loop and of every process under it (stopped first, so that none forks
# meanwhile).
fault_kill_loop() {
    local pid=$1
    kill -0 "$pid" 2>/dev/null || return 0
    kill -STOP $(process_tree "$pid") 2>/dev/null || true
    kill -9 $(process_tree "$pid") 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# Also run by the traps, where errexit is in force: nothing in it may fail.
fault_cleanup() {
    local pid
    if [ -n "${FAULT_DIR:-}" ]; then touch "$FAULT_DIR/stop-producers" "$FAULT_DIR/stop-workers" 2>/dev/null || true; fi
    for pid in "${FAULT_PID[@]}" "${FAULT_PRODUCER_PID[@]}" ${FAULT_MONITOR_PID:-}; do
        fault_kill_loop "$pid"
    done
    FAULT_PID=()
    FAULT_PRODUCER_PID=()
    FAULT_MONITOR_PID=
}

# wait_loops SECONDS PID...: waits for loops that were told to stop; false if one is still running.
wait_loops() {
    local deadline=$((SECONDS + $1)) pid
    shift
    for pid in "$@"; do
        while kill -0 "$pid" 2>/dev/null; do
            [ $SECONDS -le $deadline ] || return 1
            sleep 0.1
        done
        wait "$pid" 2>/dev/null || true
    done
    return 0
}

test_fault_jobs_survive_kills_and_restart() { with_fault_cleanup fault_run; }

# with_fault_cleanup FUNCTION: runs a fault test, its loops killed however it ends.
with_fault_cleanup() {
    local prev_exit prev_int prev_term rc
    trap_command prev_exit EXIT
    trap_command prev_int INT
    trap_command prev_term TERM
    trap "fault_cleanup; $prev_exit" EXIT
    trap 'fault_cleanup; exit 130' INT TERM
    "$1"
    rc=$?
    fault_cleanup
    if [ -n "$prev_exit" ]; then trap "$prev_exit" EXIT; else trap - EXIT; fi
    if [ -n "$prev_int" ]; then trap "$prev_int" INT; else trap - INT; fi
    if [ -n "$prev_term" ]; then trap "$prev_term" TERM; else trap - TERM; fi
    return $rc
}

fault_run() {
    local slot i end victim tries started=$SECONDS
    local process_kills=0 backend_kills=0 restarts=0 killed=()
    FAULT_DIR="$OUT/fault"
    rm -rf "$FAULT_DIR"
    mkdir -p "$FAULT_DIR"
    FAULT_PID=()
    FAULT_GEN=()
    FAULT_PRODUCER_PID=()
    live_sql "CREATE TABLE fault_produced (job_id bigint NOT NULL, doomed boolean NOT NULL);
              CREATE TABLE fault_effects (job_id bigint NOT NULL, worker text NOT NULL);
              SELECT max_running FROM pgjobs.jobs_limit('fault', $FAULT_LIMIT);
              SELECT max_per_key FROM pgjobs.jobs_key_limit('fault', 1)" >/dev/null || return 1
    fault_monitor &
    FAULT_MONITOR_PID=$!

    for ((i = 1; i <= FAULT_PRODUCERS; i++)); do
        fault_producer "$i" 2>>"$FAULT_DIR/producer-$i.log" &
        FAULT_PRODUCER_PID[$i]=$!
    done
    for ((slot = 1; slot <= FAULT_WORKERS; slot++)); do
        fault_start_worker "$slot"
    done

    # A fault every 4 s: a worker process killed (and started again), a worker's backend killed
    # (the postmaster then restarts every backend), and halfway the immediate stop and a start.
    # Halfway by the clock, not by count: each crash's recovery takes seconds (more in a cluster
    # with many databases, as after the SQL suites), so rounds take longer than 4 s.
    end=$((SECONDS + FAULT_SECONDS))
    i=0
    while [ $SECONDS -lt $((end - 4)) ]; do
        sleep 4
        i=$((i + 1))
        if [ $restarts = 0 ] && [ $SECONDS -ge $((end - FAULT_SECONDS / 2)) ]; then
            restart_immediately || return 1
            restarts=$((restarts + 1))
        elif [ $((i % 2)) = 1 ]; then
            slot=$((RANDOM % FAULT_WORKERS + 1))
            killed+=("fault-worker-$slot.${FAULT_GEN[$slot]}")
            fault_kill_loop "${FAULT_PID[$slot]}"
            fault_start_worker "$slot"
            process_kills=$((process_kills + 1))
        else
            # A worker's backend, busy if one is (a claim or a completion under way); workers
            # connect for each statement, so there may be none for a moment.
            victim=
            for ((tries = 0; tries < 20; tries++)); do
                victim=$(live_sql "SELECT pid || ' ' || application_name FROM pg_stat_activity
                                   WHERE application_name LIKE 'fault-worker-%'
                                   ORDER BY state <> 'active', random() LIMIT 1" 2>/dev/null) || victim=
                [ -z "$victim" ] || break
                sleep 0.05
            done
            if [ -n "$victim" ]; then
                kill -9 "${victim%% *}" 2>/dev/null && backend_kills=$((backend_kills + 1))
                killed+=("${victim#* }")
            fi
        fi
        wait_ready || return 1
    done
    while [ $SECONDS -lt $end ]; do sleep 0.5; done

    # No more jobs; the workers finish those left (expired leases come back to them).
    touch "$FAULT_DIR/stop-producers"
    wait_loops 20 "${FAULT_PRODUCER_PID[@]}" || { echo "fault test: producers did not stop" >&2; return 1; }
    wait_until 45 "SELECT NOT EXISTS (SELECT FROM pgjobs.jobs WHERE queue = 'fault')
                      AND NOT EXISTS (SELECT FROM pgjobs.jobs WHERE queue = 'fault')" \
        || { echo "fault test: jobs left in the queue: $(live_sql "SELECT count(*) FROM pgjobs.jobs WHERE queue = 'fault'")" >&2; return 1; }
    touch "$FAULT_DIR/stop-workers"
    wait_loops 20 "${FAULT_PID[@]}" "$FAULT_MONITOR_PID" || { echo "fault test: workers did not stop" >&2; return 1; }
    local samples most_leased most_of_a_key
    samples=$(grep -c . "$FAULT_DIR/leased" 2>/dev/null || echo 0)
    most_leased=$(cut -d '|' -f 1 "$FAULT_DIR/leased" 2>/dev/null | sort -n | tail -n 1)
    most_of_a_key=$(cut -d '|' -f 2 "$FAULT_DIR/leased" 2>/dev/null | sort -n | tail -n 1)

    # Each check is named; those that do not hold are printed.
    local killed_list failures summary rolled_back
    killed_list=$(printf "'%s'," "${killed[@]}" "none")
    killed_list=${killed_list%,}
    failures=$(live_sql "
        WITH h AS (SELECT * FROM pgjobs.job_history WHERE queue = 'fault'),
        checks(name, ok) AS (VALUES
          ('a produced job is recorded once',
           (SELECT count(*) = count(DISTINCT job_id) FROM fault_produced)),
          ('every job produced finished: no job lost',
           NOT EXISTS (SELECT FROM fault_produced p WHERE NOT EXISTS (SELECT FROM h WHERE h.id = p.job_id))),
          ('no job that was not produced (rolled-back adds leave none)',
           NOT EXISTS (SELECT FROM pgjobs.job_list l WHERE l.queue = 'fault'
                       AND l.id NOT IN (SELECT job_id FROM fault_produced))),
          ('a job finished once', (SELECT count(*) = count(DISTINCT id) FROM h)),
          ('every job not doomed completed',
           NOT EXISTS (SELECT FROM fault_produced p JOIN h ON h.id = p.job_id
                       WHERE NOT p.doomed AND h.status <> 'completed')),
          ('every doomed job failed after exactly its 2 attempts',
           NOT EXISTS (SELECT FROM fault_produced p JOIN h ON h.id = p.job_id
                       WHERE p.doomed AND (h.status <> 'failed' OR h.attempts <> 2 OR h.max_attempts <> 2))),
          ('no attempt beyond its maximum',
           NOT EXISTS (SELECT FROM pgjobs.job_list l WHERE l.queue = 'fault'
                       AND (l.attempt > l.max_attempts OR l.attempt < 1))),
          ('every attempt counted: each but a completed one''s last left an error',
           NOT EXISTS (SELECT FROM h WHERE h.attempts <> jsonb_array_length(h.errors)
                                                        + CASE WHEN h.status = 'completed' THEN 1 ELSE 0 END)),
          ('one effect per completed job: none completed twice',
           (SELECT count(*) = count(DISTINCT job_id)
                   AND count(*) = (SELECT count(*) FROM h WHERE status = 'completed')
            FROM fault_effects)),
          ('no effect of a job that did not complete',
           NOT EXISTS (SELECT FROM fault_effects e WHERE NOT EXISTS (
                           SELECT FROM h WHERE h.id = e.job_id AND h.status = 'completed'))),
          ('at least 200 jobs completed', (SELECT count(*) >= 200 FROM h WHERE status = 'completed')),
          ('a lease held when a worker or the server was killed expired and its job was retried',
           EXISTS (SELECT FROM h, jsonb_array_elements(h.errors) e
                   WHERE e ->> 'error' LIKE 'lease expired%' AND e ->> 'error' NOT LIKE '%/slow stopped%')),
          ('never more than $FAULT_LIMIT jobs leased at once (the queue''s limit), at most ${most_leased:-none} in $samples samples, the limit reached',
           ${most_leased:-0} = $FAULT_LIMIT AND $samples >= 100),
          ('never more than one job of a key leased at once (its key limit), at most ${most_of_a_key:-none}, the limit reached',
           ${most_of_a_key:-0} = 1),
          ('every slot came back: none held once the queue is empty',
           NOT EXISTS (SELECT FROM pgjobs.queue_slots s WHERE s.queue = 'fault'
                       AND EXISTS (SELECT FROM pgjobs.jobs j WHERE j.id = s.job_id AND j.lease_token = s.lease_token))
           AND NOT EXISTS (SELECT FROM pgjobs.queue_key_slots s WHERE s.queue = 'fault'
                           AND EXISTS (SELECT FROM pgjobs.jobs j WHERE j.id = s.job_id AND j.lease_token = s.lease_token)))
        )
        SELECT name FROM checks WHERE ok IS NOT TRUE") || return 1
    summary=$(live_sql "
        SELECT format('%s jobs, %s completed, %s failed (doomed), %s retried, '
                      '%s leases expired (%s of killed workers, %s of slow ones), '
                      '%s completions accepted after the lease ran out (nobody else held the job)',
                      count(*), count(*) FILTER (WHERE status = 'completed'),
                      count(*) FILTER (WHERE status = 'failed'), count(*) FILTER (WHERE attempts > 1),
                      (SELECT count(*) FROM pgjobs.job_history h2, jsonb_array_elements(h2.errors) e
                       WHERE h2.queue = 'fault' AND e ->> 'error' LIKE 'lease expired%'),
                      (SELECT count(*) FROM pgjobs.job_history h2, jsonb_array_elements(h2.errors) e
                       WHERE h2.queue = 'fault' AND e ->> 'error' IN (
                           SELECT format('lease expired: worker %s stopped renewing it', k)
                           FROM unnest(ARRAY[$killed_list]) k)),
                      (SELECT count(*) FROM pgjobs.job_history h2, jsonb_array_elements(h2.errors) e
                       WHERE h2.queue = 'fault' AND e ->> 'error' LIKE '%/slow stopped%'),
                      (SELECT count(*) FROM fault_effects WHERE worker LIKE '%/slow'))
        FROM pgjobs.job_history WHERE queue = 'fault'") || return 1
    rolled_back=$(awk '{n += $1} END {print n + 0}' "$FAULT_DIR/rolled-back" 2>/dev/null || echo 0)
    echo "fault test: $summary; $rolled_back adds rolled back; $process_kills worker processes and $backend_kills backends killed, $restarts immediate restart; at most $most_leased of $FAULT_LIMIT leased at once and $most_of_a_key of a key in $samples samples; $((SECONDS - started)) s" >&2
    if [ -n "$failures" ]; then
        echo "fault test: these do not hold:" >&2
        sed 's/^/  - /' <<<"$failures" >&2
        return 1
    fi
    [ "$process_kills" -ge 1 ] && [ "$backend_kills" -ge 1 ] && [ "$restarts" = 1 ]
}

# The graph fault test (issue 30): a graph of 1,002 steps added in one call (a root; 100 steps
# after it; 8 after each of those; a join after each 8; a last join after the 100 joins) is
# worked by GRAPH_WORKERS workers while worker processes and backends are killed with SIGKILL and
# the server is stopped once with -m immediate. A worker reads what its job depends on
# (jobs_dependency_results) and records, in the transaction of its jobs_complete, when it claimed
# the job, how many dependencies it saw, whether all had completed and how many results it read.
# Afterwards every step completed exactly once, none was claimed before each of its dependencies
# had completed, and every join read every result of its dependencies.
GRAPH_WORKERS=5

# graph_worker NAME: claims one job at a time with a 3 s lease and completes it as above.
graph_worker() {
    set +e
    local name=$1 end=$((SECONDS + 150)) row id token at
    while [ $SECONDS -lt $end ] && [ ! -e "$FAULT_DIR/stop-workers" ]; do
        row=$(fault_psql "$name" -c "SELECT id, lease_token, now()
                                     FROM pgjobs.jobs_claim('$name', ARRAY['graph'], 1, '3 seconds')") \
            || { sleep 0.3; continue; }
        [ -n "$row" ] || { sleep 0.1; continue; }
        IFS='|' read -r id token at <<<"$row"
        fault_psql "$name" -c BEGIN -c "
            INSERT INTO graph_runs
            SELECT $id, '$name', '$at', count(d.dependency),
                   coalesce(bool_and(d.status = 'completed'), true), count(d.result)
            FROM pgjobs.jobs_dependency_results($id, '$token') d" \
            -c "SELECT pg_sleep(random() * 0.05)" \
            -c "SELECT pgjobs.jobs_complete($id, '$token', jsonb_build_object('step', $id))" \
            -c COMMIT >/dev/null
    done
}

graph_start_worker() {
    local slot=$1
    FAULT_GEN[$slot]=$((${FAULT_GEN[$slot]:--1} + 1))
    graph_worker "graph-worker-$slot.${FAULT_GEN[$slot]}" 2>>"$FAULT_DIR/worker-$slot.log" &
    FAULT_PID[$slot]=$!
}

test_fault_graph_survives_kills_and_restart() { with_fault_cleanup graph_run; }

graph_run() {
    local slot i victim failures summary started=$SECONDS
    local process_kills=0 backend_kills=0 restarts=0
    FAULT_DIR="$OUT/fault-graph"
    rm -rf "$FAULT_DIR"
    mkdir -p "$FAULT_DIR"
    FAULT_PID=()
    FAULT_GEN=()
    # Positions: 1 the root, 2-101 its steps, 102-901 eight after each step, 902-1001 a join
    # after each eight, 1002 the last join. Leases of 3 s, attempts to spare.
    live_sql "CREATE TABLE graph_runs (job_id bigint NOT NULL, worker text NOT NULL,
                                       claimed_at timestamptz NOT NULL, dependencies integer NOT NULL,
                                       all_completed boolean NOT NULL, results integer NOT NULL);
              SELECT count(*) FROM pgjobs.jobs_add_batch((
                  SELECT jsonb_agg(g.spec || '{\"queue\": \"graph\", \"lease\": \"3 seconds\",
                                               \"max_attempts\": 50, \"backoff\": \"0.2 seconds\"}'
                                   ORDER BY g.position)
                  FROM (SELECT 1 AS position, jsonb_build_object('task', 'root') AS spec
                        UNION ALL
                        SELECT 1 + m, jsonb_build_object('task', 'step', 'after', jsonb_build_array(1))
                        FROM generate_series(1, 100) m
                        UNION ALL
                        SELECT 101 + (m - 1) * 8 + l, jsonb_build_object('task', 'leaf', 'after', jsonb_build_array(1 + m))
                        FROM generate_series(1, 100) m, generate_series(1, 8) l
                        UNION ALL
                        SELECT 901 + m, jsonb_build_object('task', 'join', 'after',
                            (SELECT jsonb_agg(101 + (m - 1) * 8 + l) FROM generate_series(1, 8) l))
                        FROM generate_series(1, 100) m
                        UNION ALL
                        SELECT 1002, jsonb_build_object('task', 'last', 'after',
                            (SELECT jsonb_agg(901 + m) FROM generate_series(1, 100) m))) g))" \
        | grep -qx 1002 || return 1
    for ((slot = 1; slot <= GRAPH_WORKERS; slot++)); do
        graph_start_worker "$slot"
    done

    # A fault every 2 s until the graph is done: a worker process killed (and started again) or
    # a worker's backend killed; the third time, the immediate stop and a start.
    i=0
    while live_sql "SELECT EXISTS (SELECT FROM pgjobs.jobs WHERE queue = 'graph')" 2>/dev/null | grep -qx t \
        && [ $((SECONDS - started)) -lt 120 ]; do
        sleep 2
        i=$((i + 1))
        if [ $i = 3 ]; then
            restart_immediately || return 1
            restarts=$((restarts + 1))
        elif [ $((i % 2)) = 1 ]; then
            slot=$((RANDOM % GRAPH_WORKERS + 1))
            fault_kill_loop "${FAULT_PID[$slot]}"
            graph_start_worker "$slot"
            process_kills=$((process_kills + 1))
        else
            victim=$(live_sql "SELECT pid FROM pg_stat_activity WHERE application_name LIKE 'graph-worker-%'
                               ORDER BY state <> 'active', random() LIMIT 1" 2>/dev/null) || victim=
            [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null && backend_kills=$((backend_kills + 1))
        fi
        wait_ready || return 1
    done
    touch "$FAULT_DIR/stop-workers"
    wait_loops 20 "${FAULT_PID[@]}" || { echo "graph fault test: workers did not stop" >&2; return 1; }

    failures=$(live_sql "
        WITH h AS (SELECT * FROM pgjobs.job_history WHERE queue = 'graph'),
        runs AS (SELECT r.*, h.task, h.depends_on FROM graph_runs r JOIN h ON h.id = r.job_id),
        checks(name, ok) AS (VALUES
          ('every step finished, none left', (SELECT count(*) = 1002 FROM h)
                                             AND NOT EXISTS (SELECT FROM pgjobs.jobs WHERE queue = 'graph')),
          ('every step completed, once', (SELECT count(*) = 1002 AND count(DISTINCT id) = 1002 FROM h WHERE status = 'completed')),
          ('one run recorded per step: none completed twice',
           (SELECT count(*) = 1002 AND count(DISTINCT job_id) = 1002 FROM graph_runs)),
          ('every step saw each of its dependencies completed, and read its result',
           NOT EXISTS (SELECT FROM runs WHERE NOT all_completed
                                        OR dependencies <> coalesce(cardinality(depends_on), 0)
                                        OR results <> dependencies)),
          ('the joins saw 8 dependencies each, the last join 100',
           (SELECT count(*) = 100 FROM runs WHERE task = 'join' AND dependencies = 8)
           AND (SELECT dependencies = 100 FROM runs WHERE task = 'last')),
          ('no step was claimed before each of its dependencies had completed',
           NOT EXISTS (SELECT FROM runs r, unnest(r.depends_on) d JOIN h ON h.id = d
                       WHERE h.end_time > r.claimed_at)),
          ('no wait left', NOT EXISTS (SELECT FROM pgjobs.job_dependencies)))
        SELECT name FROM checks WHERE ok IS NOT TRUE") || return 1
    summary=$(live_sql "SELECT format('%s steps completed, %s of them after an attempt lost with a killed worker',
                                      count(*), count(*) FILTER (WHERE attempts > 1))
                        FROM pgjobs.job_history WHERE queue = 'graph'") || return 1
    echo "graph fault test: $summary; $process_kills worker processes and $backend_kills backends killed, $restarts immediate restart; $((SECONDS - started)) s" >&2
    if [ -n "$failures" ]; then
        echo "graph fault test: these do not hold:" >&2
        sed 's/^/  - /' <<<"$failures" >&2
        return 1
    fi
    [ "$process_kills" -ge 1 ] && [ "$backend_kills" -ge 1 ] && [ "$restarts" = 1 ]
}

# Installing pg_jobs again while this cluster runs with the library preloaded: the library is a
# new file renamed into place (a new inode), so the postmaster and its sessions keep the one they
# mapped and go on; new sessions work. (An overwrite in place crashed the server.)
test_install_under_a_running_server() {
    local library postmaster inode_before
    library="$("$PG_CONFIG" --pkglibdir)/pg_jobs.so"
    postmaster=$(head -n 1 "$(cluster_dir test)/data/postmaster.pid")
    inode_before=$(stat -c %i "$library")
    (cd "$ROOT" && install_extension 2>/dev/null) || return 1
    [ "$(stat -c %i "$library")" != "$inode_before" ] || return 1
    live_sql "SELECT pgjobs.jobs_add('after-install', queue => 'install') > 0" | grep -qx t || return 1
    [ "$(head -n 1 "$(cluster_dir test)/data/postmaster.pid")" = "$postmaster" ] && kill -0 "$postmaster" &&
        wait_until 10 "SELECT alive FROM pgjobs.launcher"
}

run_live_tests() {
    verdict "installing again under a running server leaves it running" test_install_under_a_running_server
    verdict "per-second schedule fires once per slot across a SIGKILL" test_seconds_fire_once_per_slot_across_sigkill
    verdict "SQL job effects and completion commit together" test_sql_job_effects_and_completion_are_atomic
    verdict "a finished SQL job's end_time is when it ended" test_sql_job_ends_when_it_ends
    verdict "abort stops a running SQL job within 2 s" test_abort_stops_a_running_sql_job
    verdict "a SQL job its owner holds keeps no executor" test_a_held_sql_job_keeps_no_executor
    verdict "failing SQL job follows the backoff" test_failing_sql_job_follows_the_backoff
    verdict "SQL job runs with its owner's rights" test_sql_job_runs_with_its_owners_rights
    verdict "SQL job leaves nothing for the extension to run" test_sql_job_leaves_nothing_for_the_extension_to_run
    verdict "SQL job executors stay, and forget each job's session" test_sql_job_executors_stay_and_forget
    verdict "database settings do not reach the background workers" test_database_settings_do_not_reach_the_background_workers
    verdict "a member holding rows does not stop the launcher" test_a_member_holding_rows_does_not_stop_the_launcher
    verdict "a member holding her routines does not slow others" test_a_member_holding_her_routines_does_not_slow_others
    verdict "the launcher survives a full lock table" test_launcher_survives_a_full_lock_table
    verdict "SQL job that ignores cancel is stopped" test_sql_job_that_ignores_cancel_is_stopped
    verdict "the launcher requeues an expired lease without a claim" test_launcher_requeues_expired_leases
    verdict "jobs_wait is woken by the commit that completes its job" test_jobs_wait_is_woken_by_the_completion
    verdict "jobs_wait returns when its job is blocked by a failed dependency" test_jobs_wait_returns_when_its_job_is_blocked
    verdict "a job due later wakes its queue's workers when it comes due" test_jobs_due_later_wake_their_workers
    verdict "a job due later added before an immediate restart wakes its queue's workers when due" \
        test_jobs_due_later_wake_their_workers_after_a_restart
    verdict "a claim that finds the rate spent wakes its queue's workers when a token is free" \
        test_rate_limited_claims_wake_their_workers
    verdict "a claim that finds a key's rate spent wakes its queue's workers when its token is free" \
        test_key_rate_limited_claims_wake_their_workers
    verdict "the launcher idles while SQL jobs wait for an executor" test_launcher_idles_while_sql_jobs_wait
    verdict "a batch claim requeues an expired lease where the launcher also does" test_batch_claims_rescue_where_the_launcher_does
    verdict "dump and restore keep every row and id" test_dump_and_restore_keep_every_row
    verdict "a restore where the roles were made anew gives each row to its role by name" \
        test_restore_where_roles_were_made_anew
    verdict "jobs survive a minute of SIGKILLs and an immediate restart" test_fault_jobs_survive_kills_and_restart
    verdict "a graph of 1,002 steps survives SIGKILLs and an immediate restart" test_fault_graph_survives_kills_and_restart
    verdict "standby is idle until promoted" test_standby_is_idle_until_promoted
}
