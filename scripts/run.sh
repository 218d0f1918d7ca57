#!/usr/bin/env bash
# Sets everything up, starts a local cluster with pg_jobs preloaded, and runs the demo.
source "$(dirname "$0")/lib.sh"
PORT=28815

# Stopped first: installing a new build under a running server that preloads it can crash it.
# The demo's worker agent goes first, so that it does not wait for the server to come back.
"$ROOT/scripts/stop.sh" agent
stop_cluster run
"$ROOT/scripts/setup.sh"
log "starting the cluster on port $PORT"
dir=$(start_cluster run "$PORT")
psql_run() { "$PG_BIN/psql" -X -q -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U postgres "$@"; }
if ! psql_run -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'pg_jobs'" | grep -q 1; then
    psql_run -d postgres -c "CREATE DATABASE pg_jobs"
fi
psql_run -d pg_jobs -c "SET client_min_messages = warning" -c "DROP EXTENSION IF EXISTS pg_jobs CASCADE" -c "CREATE EXTENSION pg_jobs CASCADE"

# The launcher makes the months of job_history at its first round; the demo shows one of them.
for _ in $(seq 150); do
    psql_run -d pg_jobs -tAc "SELECT count(*) > 1 FROM pgjobs.jobs_history_months()" | grep -qx t && break
    sleep 0.1
done

log "demo"
psql_run -d pg_jobs -f "$ROOT/scripts/demo.sql"

log "batch jobs: a worker agent for computer demo"
cargo build --release -q -p pg_jobs_agent
# demo_agent logs in (trust on localhost) and has what an agent needs, nothing more.
psql_run -d pg_jobs -c "SET client_min_messages = warning" -c "DO \$\$BEGIN CREATE ROLE demo_agent LOGIN IN ROLE pgjobs_agent;
                                  EXCEPTION WHEN duplicate_object THEN GRANT pgjobs_agent TO demo_agent; END\$\$"
agent_log="$dir/agent.log"
: >"$agent_log"
# The jobs it runs are anyone's commands: as root, it runs as the OS user postgres (setpriv
# execs, so the pid is the agent's), unless that user cannot reach the binary.
agent_as=()
if [ "$(id -u)" = 0 ] && runuser -u postgres -- test -x "$ROOT/target/release/pg_jobs_agent"; then
    agent_as=(setpriv --reuid=postgres --regid=postgres --init-groups)
    chown postgres "$agent_log"
fi
nohup "${agent_as[@]}" "$ROOT/target/release/pg_jobs_agent" --dsn "host=localhost port=$PORT user=demo_agent dbname=pg_jobs" \
    --computer demo --batchjobs 4 </dev/null >/dev/null 2>>"$agent_log" &
echo $! >"$dir/agent.pid"
for _ in $(seq 100); do grep -q '"event":"registered"' "$agent_log" && break; sleep 0.1; done
# demo_alice posts two jobs: one for the computer demo, one for ANY computer.
jobs=$(psql_run -d pg_jobs -tA -c "SET ROLE demo_alice" \
    -c "SELECT pgjobs.batch_post('echo', ARRAY['hello'], computer => 'demo')" \
    -c "SELECT pgjobs.batch_post('uname', ARRAY['-a'])" | paste -sd, -)
for _ in $(seq 100); do
    psql_run -d pg_jobs -tA -c "SET ROLE demo_alice" \
        -c "SELECT count(*) = 2 FROM pgjobs.batch_jobs WHERE id IN ($jobs) AND status = 'COMPLETED'" | grep -qx t && break
    sleep 0.1
done
psql_run -d pg_jobs -c "SET ROLE demo_alice" \
    -c "SELECT id, status, computer, target, command, args, exit_code, run_time, rtrim(stdout, E'\\n') AS stdout
        FROM pgjobs.batch_jobs WHERE id IN ($jobs) ORDER BY id"

log "routine schedules: schedule DEMO, a batch routine due this minute and a realtime one"
runtime=$(date -u +%H:%M)
psql_run -d pg_jobs -q -c "SET ROLE demo_alice" \
    -c "SELECT pgjobs.routines_put('DEMO', 'demo_alice@demo:reports/daily', 'REPORTS', runtimes => '$runtime',
                                   command => 'echo daily report written')" \
    -c "SELECT pgjobs.routines_put('DEMO', 'demo_alice@demo:feeds/ticker', 'FEEDS', realtime => true,
                                   command => 'while true; do echo \"tick \$(date +%T)\"; sleep 2; done')" \
    -c "SELECT pgjobs.routines_reload('DEMO')" >/dev/null
for _ in $(seq 150); do
    psql_run -d pg_jobs -tA -c "SET ROLE demo_alice" \
        -c "SELECT count(*) = 2 FROM pgjobs.routines_today
            WHERE schedule = 'DEMO' AND status IN ('completed', 'running') AND last_message NOT LIKE 'SCHED:%'" | grep -qx t && break
    sleep 0.2
done
psql_run -d pg_jobs -c "SET ROLE demo_alice" \
    -c "SELECT routine, CASE WHEN realtime THEN 'realtime' ELSE runtimes END AS runs, status, last_message
        FROM pgjobs.routines_today WHERE schedule = 'DEMO' ORDER BY seq" \
    -c "SELECT schedule, mode, doing, realtime, realtime_failing, batch, batch_failing FROM pgjobs.routine_schedule_list"

log "the SCHED page"
# The demo's people log in to the page (the demo cluster trusts localhost: any password).
# Scripts use API tokens: the page's server logs in as demo_web, a member of pgjobs_api, for them.
psql_run -d pg_jobs -q -c "ALTER ROLE demo_alice LOGIN" -c "ALTER ROLE demo_bob LOGIN" \
    -c "DO \$\$BEGIN CREATE ROLE demo_web LOGIN IN ROLE pgjobs_api; EXCEPTION WHEN duplicate_object THEN NULL; END\$\$"
cargo build --release -q -p pg_jobs_web
web_log="$dir/web.log"
: >"$web_log"
nohup "$ROOT/target/release/pg_jobs_web" --listen 127.0.0.1:28818 --dsn "host=localhost port=$PORT dbname=pg_jobs" \
    --api-role demo_web </dev/null >/dev/null 2>>"$web_log" &
echo $! >"$dir/web.pid"
for _ in $(seq 50); do grep -q listening "$web_log" && break; sleep 0.1; done

cat <<TXT

pg_jobs is running: data in $dir/data, log in $dir/server.log.
  connect:  psql -h localhost -p $PORT -U postgres pg_jobs
  try:      SELECT pgjobs.jobs_add('hello', '{"to": "world"}');
            SELECT * FROM pgjobs.jobs_claim('me');
  agent:    pg_jobs_agent (pid $(cat "$dir/agent.pid")) runs batch jobs for computer demo, log in $agent_log
            SET ROLE demo_alice; SELECT pgjobs.batch_post('date', computer => 'demo');
            SELECT id, status, stdout FROM pgjobs.batch_jobs ORDER BY id DESC LIMIT 5;
  routines: SET ROLE demo_alice; SELECT routine, status, last_message FROM pgjobs.routines_today;
            SELECT pgjobs.routines_set_mode('DEMO', 'observe');
            SELECT pgjobs.routine_restart('DEMO', 'demo_alice@demo:feeds/ticker');
  page:     http://127.0.0.1:28818 (pg_jobs_web, pid $(cat "$dir/web.pid"), log in $web_log): the SCHED page;
            log in as demo_alice (this cluster trusts localhost, so any password is taken)
  api:      SET ROLE demo_alice; SELECT token FROM pgjobs.jobs_api_token_create('my script');
            curl -H "Authorization: Bearer <token>" http://127.0.0.1:28818/api/schedules
  stop:     make stop
TXT
