#!/usr/bin/env bash
# The client examples (examples/python with psycopg 3, examples/node with node-postgres) against
# the live database, each as a login role of its own (ex_python, ex_node) in a queue of its own.
# For each language: two workers wait; a slow job is aborted while one works on it (it rolls
# back and reports, and the job ends aborted); producers add 20 jobs and 10 keyed ones twice; one
# worker gets SIGTERM mid-run and must exit 0 within a few seconds; a worker stopped with SIGSTOP
# past its lease loses its job to another and, continued, rolls back. Then, from the database:
# every job completed exactly once (one row in example_effects per completed job, in the
# transaction of its jobs_complete), none for the aborted or lost attempts, nothing left. Then the
# language's workflow (example_workflow) and its compute worker, with a result store of the
# test's (example_compute_worker).
# About a minute. Installs psycopg into target/example-venv and pg into examples/node/node_modules
# on first use. Sourced by test.sh (it uses PORT, LIVE_DB, OUT, log and count from there, and
# live_sql and wait_until from live_tests.sh); each test prints "name ... ok" or "name ... FAILED".
#
# Run on its own: scripts/example_tests.sh (its own cluster example-test, port PG_JOBS_TEST_PORT or
# 28900; PG_BIN may name another PostgreSQL 15 with pg_jobs installed). EXAMPLE_LANGUAGES=python
# (or node) runs one language only.

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    source "$(dirname "$0")/lib.sh"
    source "$(dirname "$0")/live_tests.sh"
fi

EXAMPLES="$ROOT/examples"
EXAMPLE_VENV="$ROOT/target/example-venv"
# Short leases (heartbeats every second) so that an abort is seen and a stopped worker's lease
# runs out within the test's waits.
EXAMPLE_LEASE=3
EX_LANG=
EX_PIDS=()

example_install() {
    if ! "$EXAMPLE_VENV/bin/python" -c "import psycopg" 2>/dev/null; then
        log "making the Python environment in $EXAMPLE_VENV"
        # Debian's python3 leaves venv's pip bootstrap to the package python3-venv.
        if ! python3 -c "import ensurepip" 2>/dev/null; then
            as_root apt-get update -qq
            as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
        fi
        rm -rf "$EXAMPLE_VENV"
        python3 -m venv "$EXAMPLE_VENV"
        "$EXAMPLE_VENV/bin/pip" install -q 'psycopg[binary]>=3.2' || return 1
    fi
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        log "installing Node.js and npm (Debian packages)"
        as_root apt-get update -qq
        as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
    fi
    # npm keeps what it installed in node_modules/.package-lock.json: older than the lock, or
    # missing, means install again.
    if [ ! -f "$EXAMPLES/node/node_modules/.package-lock.json" ] \
       || [ "$EXAMPLES/node/package-lock.json" -nt "$EXAMPLES/node/node_modules/.package-lock.json" ]; then
        log "installing the Node example's packages into $EXAMPLES/node/node_modules"
        (cd "$EXAMPLES/node" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || return 1
    fi
}

# ex_sql SQL: as the language's role, as its workers connect.
ex_sql() {
    "$PG_BIN/psql" -X -q -tA -v ON_ERROR_STOP=1 -h localhost -p "$PORT" -U "ex_$EX_LANG" -d "$LIVE_DB" -c "$1"
}

# ex_until SECONDS SQL: polls as the role until SQL returns t.
ex_until() {
    local deadline=$((SECONDS + $1))
    while [ $SECONDS -le $deadline ]; do
        [ "$(ex_sql "$2" 2>/dev/null)" = t ] && return 0
        sleep 0.1
    done
    return 1
}

ex_ok() {
    echo "$EX_LANG example: $1 ... ok"
    count 1 0
}

ex_failed() {
    echo "$EX_LANG example: $1 ... FAILED${2:+: $2}"
    count 0 1
}

# ex_check NAME CMD...: ok if CMD succeeds.
ex_check() {
    local name=$1
    shift
    if "$@"; then ex_ok "$name"; else ex_failed "$name"; fi
}

# ex_run producer|worker ARGS...: the language's producer or worker, as its role, in its queue.
# Execs it: run it in a subshell ($(...), or & for a worker, whose $! is then the worker itself).
ex_run() {
    local program=$1
    shift
    case $EX_LANG in
        python) set -- "$EXAMPLE_VENV/bin/python" "$EXAMPLES/python/$program.py" "$@" ;;
        node) set -- node "$EXAMPLES/node/$program.js" "$@" ;;
    esac
    [ "$program" = producer ] && set -- "$@" --queue "ex_$EX_LANG"
    exec env -u DATABASE_URL PGHOST=localhost PGPORT="$PORT" PGUSER="ex_$EX_LANG" PGDATABASE="$LIVE_DB" \
        QUEUES="ex_$EX_LANG" LEASE_SECONDS=$EXAMPLE_LEASE "$@"
}

ex_log() { printf %s "$OUT/examples/$EX_LANG-$1.log"; }

# ex_start NAME: a worker in the background, its pid in EX_PID, its output in ex_log NAME. Waits
# until it is listening.
ex_start() {
    ex_run worker >"$(ex_log "$1")" 2>&1 &
    EX_PID=$!
    EX_PIDS+=("$EX_PID")
    wait_log 15 "$(ex_log "$1")" "working on"
}

# ex_stop SECONDS PID: SIGTERM; EX_RC is the exit status if it exits within SECONDS, else
# "still running". (Not printed: a command substitution's subshell cannot wait for our children.)
ex_stop() {
    local deadline=$((SECONDS + $1))
    EX_RC=0
    kill -TERM "$2" 2>/dev/null || true
    while kill -0 "$2" 2>/dev/null; do
        if [ $SECONDS -gt $deadline ]; then
            EX_RC="still running"
            return
        fi
        sleep 0.1
    done
    wait "$2" || EX_RC=$?
}

ex_kill_all() {
    local pid
    for pid in "${EX_PIDS[@]}"; do
        kill -CONT "$pid" 2>/dev/null || true
        kill -9 "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    EX_PIDS=()
}

example_setup() {
    live_sql "DO \$\$BEGIN
            CREATE ROLE ex_python LOGIN IN ROLE pgjobs_user;
            CREATE ROLE ex_node LOGIN IN ROLE pgjobs_user;
        EXCEPTION WHEN duplicate_object THEN NULL;
        END\$\$;
        $(cat "$EXAMPLES/schema.sql")
        GRANT SELECT, INSERT ON example_effects TO ex_python, ex_node;
        GRANT SELECT, INSERT, DELETE ON example_outages TO ex_python, ex_node;" >/dev/null
}

# One language's run: see the top of this file.
example_language() {
    EX_LANG=$1
    local w1= w2= w3= w4= slow= holder ids keyed keyed_again lost holder_log expected pid bad_exits=
    if ! ex_start w1 || { w1=$EX_PID; ! ex_start w2; }; then
        ex_failed "two workers start and listen" "$(tail -n 5 "$(ex_log w1)" "$(ex_log w2)" 2>/dev/null)"
        ex_kill_all
        return
    fi
    w2=$EX_PID
    ex_ok "two workers start and listen"

    # A job that would take a minute, aborted while a worker holds it.
    slow=$(ex_run producer 1 --sleep 60) || slow=0
    if ex_until 15 "SELECT status = 'started' FROM pgjobs.jobs WHERE id = $slow"; then
        holder=$(ex_sql "SELECT locked_by FROM pgjobs.jobs WHERE id = $slow") || holder=
        ex_sql "SELECT pgjobs.jobs_abort($slow)" >/dev/null || true
        holder_log=$(ex_log w1)
        [ "${holder##*:}" = "$w2" ] && holder_log=$(ex_log w2)
        # Ended by the worker's jobs_fail (its error last in the log of errors), not by its lease.
        ex_check "an aborted job ends aborted, reported by its worker" ex_until 10 "
            SELECT status = 'aborted' AND errors->-1->>'error' = 'aborted while running: rolled back'
            FROM pgjobs.job_list WHERE id = $slow"
        ex_check "the worker saw aborted" wait_log 5 "$holder_log" "job $slow aborted"
    else
        ex_failed "a worker claims the slow job" "$(ex_sql "SELECT status, locked_by FROM pgjobs.job_list WHERE id = $slow" 2>&1)"
    fi

    # 20 jobs, and 10 under keys added twice (a producer run again adds nothing).
    ids=$(ex_run producer 20 --sleep 0.2) || ids=
    keyed=$(ex_run producer 10 --key "run-$$" --sleep 0.2) || keyed=
    keyed_again=$(ex_run producer 10 --key "run-$$" --sleep 0.2) || keyed_again=
    if [ -n "$keyed" ] && [ "$keyed" = "$keyed_again" ] && [ "$(sort -u <<<"$keyed" | wc -l)" = 10 ]; then
        ex_ok "a key added twice is one job"
    else
        ex_failed "a key added twice is one job" "$(echo $keyed) / $(echo $keyed_again)"
    fi
    expected=$(printf '%s\n%s\n' "$ids" "$keyed" | grep -E '^[0-9]+$' | paste -sd, || true)
    [ -n "$expected" ] || expected=0

    # SIGTERM to the first worker once the work is under way: it finishes its job and exits 0.
    if ex_until 15 "SELECT count(*) >= 8 FROM example_effects WHERE job_id IN ($expected)"; then
        ex_stop 5 "$w1"
        if [ "$EX_RC" = 0 ]; then ex_ok "SIGTERM mid-run: the worker exits 0 within 5 s"
        else ex_failed "SIGTERM mid-run: the worker exits 0 within 5 s" "exit status $EX_RC"; fi
        if ex_sql "SELECT count(*) FROM pgjobs.jobs WHERE id IN ($expected)" | grep -qvx 0; then
            ex_ok "work was left for the other worker when the first stopped"
        else
            ex_failed "work was left for the other worker when the first stopped"
        fi
    else
        ex_failed "the workers make progress" "$(ex_sql "SELECT count(*) FROM example_effects WHERE job_id IN ($expected)" 2>&1)"
    fi
    ex_check "the other worker finishes every job" \
        ex_until 60 "SELECT NOT EXISTS (SELECT FROM pgjobs.jobs WHERE id IN ($expected))"

    # A worker stopped (SIGSTOP) past its lease: the launcher requeues the job, another worker
    # does it, and the first, continued, finds its lease lost and rolls back.
    ex_stop 5 "$w2"
    [ "$EX_RC" = 0 ] || bad_exits="$bad_exits w2: $EX_RC"
    ex_start w3 && w3=$EX_PID
    # (Long enough that it is still being done when the test sees it claimed and stops its worker.)
    lost=$(ex_run producer 1 --sleep 4) || lost=0
    if [ -n "$w3" ] && ex_until 15 "SELECT status = 'started' FROM pgjobs.jobs WHERE id = $lost"; then
        kill -STOP "$w3" || true
        if ex_until 30 "SELECT status = 'created' FROM pgjobs.jobs WHERE id = $lost" && ex_start w4; then
            w4=$EX_PID
            ex_check "a job whose worker stopped is done by another" \
                ex_until 15 "SELECT status = 'completed' FROM pgjobs.job_list WHERE id = $lost"
        else
            ex_failed "a job whose worker stopped is requeued" "$(ex_sql "SELECT status, locked_by FROM pgjobs.job_list WHERE id = $lost" 2>&1)"
        fi
        kill -CONT "$w3" || true
        ex_check "the stopped worker, continued, saw its lease lost" wait_log 10 "$(ex_log w3)" "job $lost lost"
        expected="$expected,$lost"
    else
        ex_failed "a worker claims a job" "$(tail -n 3 "$(ex_log w3)")"
    fi
    for pid in $w3 $w4; do
        ex_stop 5 "$pid"
        [ "$EX_RC" = 0 ] || bad_exits="$bad_exits $pid: $EX_RC"
    done
    if [ -z "$bad_exits" ]; then ex_ok "the other workers exit 0 on SIGTERM within 5 s"
    else ex_failed "the other workers exit 0 on SIGTERM within 5 s" "$bad_exits"; fi

    # The outcome, from the database.
    ex_check "every job completed" ex_until 1 "
        SELECT count(*) = 31 AND bool_and(status = 'completed') FROM pgjobs.job_list WHERE id IN ($expected)"
    ex_check "one effect per completed job, none twice" ex_until 1 "
        SELECT count(*) = 31 AND count(DISTINCT job_id) = 31 FROM example_effects e
        JOIN pgjobs.job_list j ON j.id = e.job_id AND j.status = 'completed' WHERE e.job_id IN ($expected)"
    ex_check "no effect of the aborted job" ex_until 1 "
        SELECT NOT EXISTS (SELECT FROM example_effects WHERE job_id = $slow)"
    ex_check "both workers did some of the work" ex_until 1 "
        SELECT count(DISTINCT worker) = 2 FROM example_effects
        WHERE job_id IN ($expected) AND (worker LIKE '%:$w1' OR worker LIKE '%:$w2')"
    ex_check "no job is left in the queue" ex_until 1 "
        SELECT NOT EXISTS (SELECT FROM pgjobs.jobs WHERE queue = 'ex_$EX_LANG')"
    ex_kill_all
}

# batch_release answers the job's status after the call over the extended protocol too, as
# psycopg (and the SCHED page) send statements: it answered WAITING for the job it had just made
# PENDING, since the statement's time is taken again at Execute, after its transaction began.
example_batch_release_extended() {
    "$EXAMPLE_VENV/bin/python" - "$PORT" "$LIVE_DB" <<'PY'
import sys

import psycopg

with psycopg.connect(host="localhost", port=sys.argv[1], user="postgres", dbname=sys.argv[2]) as conn:
    conn.execute("DO $$ BEGIN CREATE ROLE ex_batch_poster IN ROLE pgjobs_user; "
                 "EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    conn.execute("SET ROLE ex_batch_poster")
    first = conn.execute("SELECT pgjobs.batch_post('ex-first', run_at => now() + interval '1 hour')").fetchone()[0]
    second = conn.execute("SELECT pgjobs.batch_post('ex-second', depends_on => ARRAY[%s::text])", (first,)).fetchone()[0]
    conn.commit()
    released = conn.execute("SELECT pgjobs.batch_release(%s)", (second,)).fetchone()[0]
    shown = conn.execute("SELECT status FROM pgjobs.batch_jobs WHERE id = %s", (second,)).fetchone()[0]
    conn.execute("SELECT count(*) FROM pgjobs.batch_cancel(ARRAY[%s, %s]::bigint[])", (first, second))
    conn.commit()
if (released, shown) != ("PENDING", "PENDING"):
    sys.exit(f"released: {released}, then shown as {shown}")
PY
}

# The result store of the compute worker's test: an HTTP server on the loopback that keeps each
# result POSTed with the token (in DIR, a file a slice) and refuses the first two POSTs with 503,
# logging "refused PATH". Prints its port first.
example_result_store() {
    "$EXAMPLE_VENV/bin/python" -u - "$@" <<'PY'
import http.server, json, os, sys

keep, token = sys.argv[1], sys.argv[2]
refused = 0

class Store(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global refused
        posted = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if posted.get("token") != token:
            self.send_response(403)
        elif refused < 2:
            refused += 1
            print(f"refused {self.path}", flush=True)
            self.send_response(503)
        else:
            with open(os.path.join(keep, self.path.rsplit("/", 1)[1]), "w") as kept:
                kept.write(posted["result"])
            self.send_response(204)
        self.end_headers()

    def log_message(self, *_):
        pass

server = http.server.HTTPServer(("127.0.0.1", 0), Store)
print(server.server_address[1], flush=True)
server.serve_forever()
PY
}

# The language's compute worker (compute_worker.py, compute_worker.js) as its role, in a group of
# ex_compute_owner's that lets its workers send results to the result store above: a job of 20
# slices whose results go to the store (the first two POSTs refused: their slices are handed
# back and stored by a later try), and one whose results come to the database. Both finish, each
# result where it should be and right.
example_compute_worker() {
    local keep="$OUT/examples/$EX_LANG-result-store" log store_log="$OUT/examples/$EX_LANG-result-store.log"
    local port group_id group job_stored job_here name
    rm -rf "$keep" && mkdir -p "$keep"
    example_result_store "$keep" ex-token >"$store_log" 2>&1 &
    EX_PIDS+=("$!")
    wait_log 10 "$store_log" '^[0-9]' || { ex_failed "the result store starts" "$(cat "$store_log")"; return; }
    port=$(head -n 1 "$store_log")
    name="ex-compute-$EX_LANG-$$"
    log=$(ex_log compute)
    read -r group_id group < <(live_sql "DO \$\$BEGIN CREATE ROLE ex_compute_owner IN ROLE pgjobs_user;
                      EXCEPTION WHEN duplicate_object THEN NULL; END\$\$;
        INSERT INTO pgjobs.compute_groups (owner, name, join_key) VALUES ('ex_compute_owner'::regrole, '$name', '$name')
        RETURNING id || ' ' || opaque_id")
    read -r job_stored job_here < <(live_sql "SET ROLE ex_compute_owner;
        SELECT pgjobs.compute_group_set_secret('$group', 'example secret, long enough');
        INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin, type)
        VALUES ($group_id, 'http://127.0.0.1:$port', 'sendResults');
        SELECT pgjobs.compute_deploy(jsonb_build_object('work', 'square', 'groups', jsonb_build_array('$group'),
            'input', '{\"range\": {\"start\": 1, \"end\": 20}}'::jsonb, 'offer', '0.001', 'funds', '1',
            'estimation_slices', 0, 'max_slices_per_task', 4,
            'result_storage', jsonb_build_object('url', 'http://127.0.0.1:$port/results/{slice}', 'params', '{\"token\": \"ex-token\"}'::jsonb)))
        || ' ' || pgjobs.compute_deploy(jsonb_build_object('work', 'reverse', 'groups', jsonb_build_array('$group'),
            'input', '{\"values\": [\"abc\", \"pg_jobs\"]}'::jsonb, 'offer', '0.001', 'funds', '1', 'estimation_slices', 0))" | tail -n 1)
    if [ -z "$job_here" ]; then
        ex_failed "a group and two compute jobs, one stored elsewhere" "group $group, jobs $job_stored $job_here"
        return
    fi
    (export GROUP="$group" JOIN_KEY="$name" JOIN_SECRET="example secret, long enough" IDLE_SECONDS=30
     ex_run compute_worker) </dev/null >"$log" 2>&1 &
    EX_PIDS+=("$!")
    ex_check "the compute worker finishes both jobs" wait_until 60 "
        SELECT count(*) = 2 AND bool_and(status = 'completed') FROM pgjobs.job_list WHERE id IN ($job_stored, $job_here)"
    ex_check "each of the 20 results went to the store, right, and the database keeps its address" \
        [ "$(live_sql "SELECT count(*) FILTER (WHERE value = 'http://127.0.0.1:$port/results/' || slice_number)
                        FROM pgjobs.compute_results WHERE job_id = $job_stored")" = 20 ]
    local slice wrong=
    for slice in $(seq 20); do
        [ "$(cat "$keep/$slice" 2>/dev/null)" = $((slice * slice)) ] || wrong="$wrong $slice"
    done
    if [ -z "$wrong" ]; then ex_ok "the store holds every slice's square"; else ex_failed "the store holds every slice's square" "wrong:$wrong"; fi
    ex_check "the two refused POSTs were handed back and stored later" \
        [ "$(grep -c '^refused' "$store_log")" = 2 ] && grep -q "handed back" "$log"
    ex_check "the other job's results are in the database" \
        [ "$(live_sql "SELECT string_agg(pgjobs.compute_result_text(value), ',' ORDER BY slice_number)
                        FROM pgjobs.compute_results WHERE job_id = $job_here")" = "cba,sboj_gp" ]
}

# The workflow example (workflow.py / workflow.js) with two workers: 8 steps and their join added
# in one jobs_add_batch (the join "after" the 8), step 0 failing while its service is down; the
# workflow sees the failure in jobs_wait and the join blocked by it, brings the service back and
# sends the step again with jobs_retry (same id), then waits for the join, which the workers do
# once the last step completed, from what jobs_dependency_results tells them. Then, from the
# database: every step completed, step 0 after a failed attempt (in its log of errors), each
# step's effect exactly once and none of the failed attempt; the join added with the steps,
# depending on them, completed once, after every step, with all 8 in its result.
example_workflow() {
    local out w1 w2 join steps first
    EX_PIDS=()
    if ! ex_start wf1 || { w1=$EX_PID; ! ex_start wf2; }; then
        ex_failed "workflow: two workers start" "$(tail -n 5 "$(ex_log wf1)" "$(ex_log wf2)" 2>/dev/null)"
        ex_kill_all
        return
    fi
    w2=$EX_PID
    out=$(ex_run workflow 8 --queue "ex_$EX_LANG" --outage "smtp-$EX_LANG-$$" 2>&1)
    join=$(tail -n 1 <<<"$out")
    # "fanned out 8 steps [101, ..., 108], join 109 after them"
    steps=$(sed -n "s/^fanned out 8 steps \[\([0-9, ]*\)\], join $join after them$/\1/p" <<<"$out" | tr -d ' ')
    first=${steps%%,*}
    if [[ "$join" =~ ^[0-9]+$ ]] && [ "$(tr , '\n' <<<"$steps" | grep -c .)" = 8 ] \
       && grep -q "^join $join completed: 8 steps by " <<<"$out"; then
        ex_ok "workflow: steps and join in one call, a failed step retried, the join completed"
    else
        ex_failed "workflow: steps and join in one call, a failed step retried, the join completed" "$(tail -n 6 <<<"$out")"
        ex_kill_all
        return
    fi
    # The workflow's lines in order: step 0's failure, the join blocked by it, the retry, the join's result.
    ex_check "workflow: the join was reported blocked by the failed step before the retry" \
        [ "$(grep -E "^(step |join |retried )" <<<"$out" | sed "s/: .*smtp-$EX_LANG-$$ is down$/: down/")" = \
          "step $first failed: down
join $join blocked: job $first failed
retried [$first]
$(grep "^join $join completed: " <<<"$out")" ]
    ex_check "workflow: every step completed, the failed one again under its id after one failed attempt" ex_until 1 "
        SELECT count(*) = 8 AND bool_and(status = 'completed')
               AND bool_and(jsonb_array_length(errors) = CASE WHEN id = $first THEN 1 ELSE 0 END)
               AND bool_or(id = $first AND errors->0->>'error' LIKE '%smtp-$EX_LANG-$$ is down')
        FROM pgjobs.job_list WHERE id IN ($steps)"
    ex_check "workflow: one effect per step and the join, none of the failed attempt" ex_until 1 "
        SELECT count(*) = 9 AND count(DISTINCT job_id) = 9
               AND bool_and(n = CASE WHEN job_id = $join THEN 8 ELSE n END)
        FROM example_effects WHERE job_id IN ($steps, $join)"
    ex_check "workflow: the join, added with the steps and depending on them, completed once" ex_until 1 "
        SELECT count(*) = 1 AND bool_and(j.status = 'completed' AND j.task = 'join' AND j.attempt = 1
                                         AND jsonb_array_length(j.errors) = 0
                                         AND j.depends_on = '{$steps}'::bigint[]
                                         AND j.start_time = ALL (SELECT start_time FROM pgjobs.job_list WHERE id IN ($steps)))
        FROM pgjobs.job_list j WHERE j.id = $join"
    ex_check "workflow: the join ended after every step" ex_until 1 "
        SELECT (SELECT end_time FROM pgjobs.job_history WHERE id = $join)
               > (SELECT max(end_time) FROM pgjobs.job_history WHERE id IN ($steps))"
    ex_check "workflow: the join's result lists the 8 steps' workers, read from their results" ex_until 1 "
        SELECT (result->'steps')::int = 8
               AND result->'workers' = (SELECT jsonb_agg(DISTINCT w ORDER BY w) FROM (
                                            SELECT s.result->>'worker' COLLATE \"C\" AS w
                                            FROM pgjobs.job_history s WHERE s.id IN ($steps)) s)
        FROM pgjobs.job_history WHERE id = $join"
    for pid in $w1 $w2; do ex_stop 5 "$pid"; done
    ex_kill_all
}

run_example_tests() {
    local started=$SECONDS
    mkdir -p "$OUT/examples"
    if ! example_install; then
        echo "examples: psycopg and pg installed ... FAILED"
        count 0 1
        return
    fi
    if ! example_setup; then
        echo "examples: roles and example_effects made ... FAILED"
        count 0 1
        return
    fi
    if example_batch_release_extended; then
        echo "python: batch_release answers PENDING over the extended protocol ... ok"
        count 1 0
    else
        echo "python: batch_release answers PENDING over the extended protocol ... FAILED"
        count 0 1
    fi
    local language
    for language in ${EXAMPLE_LANGUAGES:-python node}; do
        example_language "$language"
        example_workflow
        example_compute_worker
        ex_kill_all
    done
    log "the client examples took $((SECONDS - started)) s"
}

# On its own: a cluster of its own (PG_BIN may name a relocated PostgreSQL), the suite, a summary.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    PORT=${PG_JOBS_TEST_PORT:-28900}
    OUT="$ROOT/target/test-results"
    passed=0
    failed=0
    count() { passed=$((passed + $1)); failed=$((failed + $2)); }
    stop_cluster example-test
    rm -rf "$(cluster_dir example-test)/data"
    start_cluster example-test "$PORT" "$LIVE_DB" >/dev/null || exit 1
    trap 'ex_kill_all; stop_cluster example-test' EXIT
    rm -rf "$OUT/examples"
    prepare_live_database || exit 1
    run_example_tests
    echo
    echo "$passed passed, $failed failed"
    [ "$failed" = 0 ] && [ "$passed" -gt 0 ]
fi
