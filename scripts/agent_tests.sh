# The worker agent (agent/, pg_jobs_agent) against a real cluster: two agents for two computers
# claim, run, cancel and report batch jobs; an agent stopped with SIGSTOP loses its lease, one
# killed with SIGKILL takes its job's process with it and the job is run again elsewhere, a
# server restart is ridden out, SIGTERM hands jobs back, and roles keep to their own. Sourced by
# test.sh after live_tests.sh (it uses live_sql, wait_until, wait_ready and verdict from there).
# Each test prints "name ... ok" or "name ... FAILED" and is counted.
#
# Agents run as login roles agent_a (computer alpha) and agent_b (computer beta), members of
# pgjobs_agent; jobs are posted by poster_a and poster_b, members of pgjobs_user. Each agent's log
# (one JSON object a line) goes to $OUT/agents/<test>-<computer>.log.

AGENT_BIN="$ROOT/target/release/pg_jobs_agent"
# The cluster the tests restart (test.sh's); another name for a cluster of one's own.
AGENT_CLUSTER=${AGENT_CLUSTER:-test}
AGENT_DIR=  # $OUT/agents, set by run_agent_tests
AGENT_CASE=none
ALPHA_PID=
BETA_PID=
AGENT_SILENCE_SET=no

# role_sql ROLE SQL: as a login role of its own (not SET ROLE: the agent functions see who connected).
role_sql() {
    "$PG_BIN/psql" -X -q -tA -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -h localhost -p "$PORT" -U "$1" -d "$LIVE_DB" -c "$2"
}

# sqlstate_of ROLE SQL: the SQLSTATE the statement fails with, or "none".
sqlstate_of() {
    local out
    if out=$(role_sql "$1" "$2" 2>&1); then
        echo none
    else
        grep -o 'ERROR:  [0-9A-Z]\{5\}' <<<"$out" | head -n1 | cut -c9-
    fi
}

agent_log() { printf %s "$AGENT_DIR/$AGENT_CASE-$1.log"; }

# start_agent COMPUTER ROLE [ARGS...]: an agent in the background; its pid in ALPHA_PID or BETA_PID.
# Alpha is given a DSN, beta the PG* variables (and a DSN naming only the database's host).
start_agent() {
    local computer=$1 role=$2 pid
    shift 2
    mkdir -p "$AGENT_DIR"
    if [ "$computer" = alpha ]; then
        "$AGENT_BIN" --dsn "host=localhost port=$PORT user=$role dbname=$LIVE_DB" --computer "$computer" \
            --batchjobs 2 --poll 1 "$@" 2>>"$(agent_log "$computer")" &
    else
        PGPORT=$PORT PGUSER=$role PGDATABASE=$LIVE_DB "$AGENT_BIN" --dsn "host=localhost" --computer "$computer" \
            --batchjobs 2 --poll 1 "$@" 2>>"$(agent_log "$computer")" &
    fi
    pid=$!
    case $computer in alpha) ALPHA_PID=$pid ;; beta) BETA_PID=$pid ;; esac
    wait_log 15 "$(agent_log "$computer")" '"event":"registered"'
}

start_alpha() { start_agent alpha agent_a "$@"; }
start_beta() { start_agent beta agent_b "$@"; }

# job_pid COMPUTER JOB: the pid of the job's process, from the agent's "spawned" line.
job_pid() {
    grep -E "\"event\":\"spawned\",\"job\":$2," "$(agent_log "$1")" | tail -n1 | sed -E 's/.*"pid":([0-9]+).*/\1/'
}

# wait_gone SECONDS PID: polls until no process has PID (nor its process group).
wait_gone() {
    local deadline=$((SECONDS + $1))
    while [ $SECONDS -le $deadline ]; do
        kill -0 "$2" 2>/dev/null || pgrep -g "$2" >/dev/null || return 0
        sleep 0.1
    done
    return 1
}

post() { role_sql "${POSTER:-poster_a}" "SELECT pgjobs.batch_post($1)"; }
status_is() { wait_until "$1" "SELECT status = '$3' FROM pgjobs.batch_jobs WHERE id = $2"; }

stop_agent_pid() {
    local pid=$1
    [ -n "$pid" ] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -CONT "$pid" 2>/dev/null || true
        kill -9 "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# Also run by the EXIT trap, where errexit is in force: nothing in it may fail.
agent_cleanup() {
    stop_agent_pid "$ALPHA_PID"
    stop_agent_pid "$BETA_PID"
    ALPHA_PID=
    BETA_PID=
    if [ "$AGENT_SILENCE_SET" = yes ]; then
        live_sql "ALTER SYSTEM RESET pg_jobs.batch_silence" >/dev/null 2>&1 || true
        live_sql "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
        AGENT_SILENCE_SET=no
    fi
    # Nothing a test left waiting is run by the next one's agents.
    local poster
    for poster in poster_a poster_b; do
        role_sql "$poster" "SELECT count(*) FROM pgjobs.batch_cancel(ARRAY(
            SELECT id FROM pgjobs.batch_jobs WHERE status NOT IN ('COMPLETED', 'ERROR', 'CANCEL')))" >/dev/null 2>&1 || true
    done
}

# agent_case NAME BODY: runs a test's body with its own logs, then cleans up whatever happened.
agent_case() {
    local rc=0
    AGENT_CASE=$1
    "$2" || rc=$?
    agent_cleanup
    return $rc
}

# pg_jobs.batch_silence of a few seconds, restored by agent_cleanup.
short_silence() {
    AGENT_SILENCE_SET=yes
    live_sql "ALTER SYSTEM SET pg_jobs.batch_silence = '$1'" >/dev/null || return 1
    live_sql "SELECT pg_reload_conf()" >/dev/null || return 1
    wait_until 10 "SELECT current_setting('pg_jobs.batch_silence') IN ('$1', '${1%s}')"
}

prepare_agent_roles() {
    live_sql "
        DO \$\$BEGIN
            CREATE ROLE agent_a LOGIN IN ROLE pgjobs_agent;
            CREATE ROLE agent_b LOGIN IN ROLE pgjobs_agent;
            CREATE ROLE poster_a LOGIN IN ROLE pgjobs_user;
            CREATE ROLE poster_b LOGIN IN ROLE pgjobs_user;
        EXCEPTION WHEN duplicate_object THEN NULL;
        END\$\$" >/dev/null
}

# 1. A job for alpha runs on alpha, a job for ANY on either; an unregistered computer is refused.
agent_targeting() {
    start_alpha && start_beta || return 1
    local mine any
    mine=$(post "'echo', ARRAY['for alpha'], computer => 'alpha'") || return 1
    any=$(post "'echo', ARRAY['for anyone']") || return 1
    status_is 15 "$mine" COMPLETED && status_is 15 "$any" COMPLETED || return 1
    [ "$(live_sql "SELECT target || '|' || stdout FROM pgjobs.batch_jobs WHERE id = $mine")" = "alpha|for alpha" ] || return 1
    live_sql "SELECT target IN ('alpha', 'beta') AND exit_code = 0 FROM pgjobs.batch_jobs WHERE id = $any" | grep -qx t || return 1
    grep -q "\"event\":\"reported\",\"job\":$mine," "$(agent_log alpha)" || return 1
    ! grep -q "\"job\":$mine," "$(agent_log beta)" || return 1
    [ "$(sqlstate_of poster_a "SELECT pgjobs.batch_post('echo', computer => 'gamma')")" = 42704 ]
}
test_agent_targeting() { agent_case targeting agent_targeting; }

# 2. Posting the same command while the first is still waiting returns the same id, one job.
agent_replacement() {
    # Arguments of this run only: finished jobs of earlier runs stay in batch_jobs.
    local tag="replace-$RANDOM$RANDOM" first second dep after1 after2
    first=$(post "'echo', ARRAY['$tag later'], computer => 'alpha', run_at => now() + interval '1 hour'") || return 1
    second=$(post "'echo', ARRAY['$tag later'], computer => 'alpha', run_at => now() + interval '2 hours'") || return 1
    [ -n "$first" ] && [ "$first" = "$second" ] || return 1
    # Waiting for a dependency that has not finished.
    dep=$(post "'echo', ARRAY['$tag not yet'], run_at => now() + interval '1 hour'") || return 1
    after1=$(post "'echo', ARRAY['$tag after'], depends_on => ARRAY['$dep']") || return 1
    after2=$(post "'echo', ARRAY['$tag after'], depends_on => ARRAY['$dep']") || return 1
    [ "$after1" = "$after2" ] || return 1
    live_sql "SELECT count(*) FILTER (WHERE args = ARRAY['$tag later']) = 1
                 AND count(*) FILTER (WHERE args = ARRAY['$tag after']) = 1
                 AND bool_and(status = 'WAITING')
              FROM pgjobs.batch_jobs WHERE args[1] LIKE '$tag %'" | grep -qx t
}
test_agent_replacement() { agent_case replacement agent_replacement; }

# 3. a -> b -> c where b fails: a completed, b in error, c blocked with a reason naming b.
agent_dependency_chain() {
    start_alpha || return 1
    local a b c
    a=$(post "'echo', ARRAY['chain a'], computer => 'alpha'") || return 1
    b=$(post "'false', computer => 'alpha', depends_on => ARRAY['$a']") || return 1
    c=$(post "'echo', ARRAY['chain c'], computer => 'alpha', depends_on => ARRAY['$b']") || return 1
    status_is 15 "$b" ERROR && status_is 10 "$c" BLOCKED || return 1
    live_sql "SELECT (SELECT status FROM pgjobs.batch_jobs WHERE id = $a) = 'COMPLETED'
                 AND (SELECT exit_code FROM pgjobs.batch_jobs WHERE id = $b) = 1
                 AND (SELECT blocked_reason FROM pgjobs.batch_jobs WHERE id = $c) ~ '\\m$b\\M'" | grep -qx t
}
test_agent_dependency_chain() { agent_case dependency-chain agent_dependency_chain; }

# 4. A cancel of a running sleep 60 ends its process; the job is CANCEL. A forged notification
# does not.
agent_cancel() {
    start_alpha --grace 5 || return 1
    local job pid
    job=$(post "'sleep', ARRAY['60'], computer => 'alpha'") || return 1
    status_is 15 "$job" RUNNING || return 1
    pid=$(job_pid alpha "$job")
    [ -n "$pid" ] && kill -0 "$pid" || return 1
    # Anyone may NOTIFY: a forged cancel naming the job ends nothing (the agent asks the server).
    role_sql poster_b "NOTIFY pgjobs_batch_cancel, '$job'" || return 1
    sleep 1
    kill -0 "$pid" && live_sql "SELECT status = 'RUNNING' FROM pgjobs.batch_jobs WHERE id = $job" | grep -qx t || return 1
    role_sql poster_a "SELECT status FROM pgjobs.batch_cancel(ARRAY[$job::bigint])" >/dev/null || return 1
    # SIGTERM ends sleep at once: well within the grace.
    status_is 4 "$job" CANCEL && wait_gone 2 "$pid" || return 1
    grep -q "\"event\":\"cancelled\",\"job\":$job," "$(agent_log alpha)"
}
test_agent_cancel() { agent_case cancel agent_cancel; }

# 5. An agent stopped with SIGSTOP stops renewing its lease: after pg_jobs.batch_silence the job
# ends in ERROR, lease expired; once continued, the agent ends the process and reports nothing.
agent_silence() {
    short_silence 3s || return 1
    start_alpha || return 1
    local job pid
    job=$(post "'sleep', ARRAY['30'], computer => 'alpha'") || return 1
    status_is 15 "$job" RUNNING || return 1
    pid=$(job_pid alpha "$job")
    kill -STOP "$ALPHA_PID"
    wait_until 30 "SELECT status = 'ERROR' AND error LIKE '%lease expired%' FROM pgjobs.batch_jobs WHERE id = $job"
    local expired=$?
    kill -CONT "$ALPHA_PID"
    [ $expired = 0 ] || return 1
    # Its next heartbeat says 'lost': the process is killed, and the ERROR stays.
    wait_gone 10 "$pid" || return 1
    sleep 0.5
    live_sql "SELECT status = 'ERROR' FROM pgjobs.batch_jobs WHERE id = $job" | grep -qx t
}
test_agent_silence() { agent_case silence agent_silence; }

# Heartbeats keep a job that outlives pg_jobs.batch_silence (3 s) alive, and carry its output's
# tails while it runs.
agent_heartbeats() {
    short_silence 3s || return 1
    start_alpha || return 1
    local job
    job=$(post "'echo progress >&2; echo half; sleep 7; echo done', computer => 'alpha', shell => true") || return 1
    status_is 15 "$job" RUNNING || return 1
    wait_until 5 "SELECT status = 'RUNNING' AND stderr = E'progress\\n' AND stdout = E'half\\n'
                  FROM pgjobs.batch_jobs WHERE id = $job" || return 1
    status_is 15 "$job" COMPLETED || return 1
    live_sql "SELECT stdout = E'half\\ndone\\n' AND run_time >= interval '7 seconds' FROM pgjobs.batch_jobs WHERE id = $job" | grep -qx t
}
test_agent_heartbeats() { agent_case heartbeats agent_heartbeats; }

# A running job's new output reaches the database within --output-every (2 s by default), with
# pg_jobs.batch_silence at its default (a lease heartbeat only every 20 minutes).
agent_output() {
    start_alpha || return 1
    local job
    job=$(post "'echo first; sleep 3; echo second >&2; sleep 20', computer => 'alpha', shell => true") || return 1
    status_is 15 "$job" RUNNING || return 1
    wait_until 4 "SELECT status = 'RUNNING' AND stdout = E'first\\n' FROM pgjobs.batch_jobs WHERE id = $job" || return 1
    wait_until 6 "SELECT status = 'RUNNING' AND stderr = E'second\\n' FROM pgjobs.batch_jobs WHERE id = $job"
}
test_agent_output() { agent_case output agent_output; }

# 6. kill -9 of an agent mid-job: its job's processes die with it (PR_SET_PDEATHSIG and the
# sentinel), the job is
# PENDING again after the lease and the other agent completes it, to the end exactly once.
agent_kill_9() {
    short_silence 3s || return 1
    local trace="$AGENT_DIR/kill-9.trace" job first other pid
    rm -f "$trace"
    start_alpha && start_beta || return 1
    # Run by either: it writes "started" at once, "completed" after 3 s.
    job=$(post "'echo started >> \"\$1\"; sleep 3; echo completed >> \"\$1\"', ARRAY['$trace'], shell => true, max_attempts => 2") || return 1
    status_is 15 "$job" RUNNING || return 1
    first=$(live_sql "SELECT target FROM pgjobs.batch_jobs WHERE id = $job")
    case $first in alpha) other=beta ;; beta) other=alpha ;; *) return 1 ;; esac
    pid=$(job_pid "$first" "$job")
    [ -n "$pid" ] || return 1
    if [ "$first" = alpha ]; then
        kill -9 "$ALPHA_PID" && { wait "$ALPHA_PID"; } 2>/dev/null
        ALPHA_PID=
    else
        kill -9 "$BETA_PID" && { wait "$BETA_PID"; } 2>/dev/null
        BETA_PID=
    fi
    # The shell is gone at once (PR_SET_PDEATHSIG), and its sleep with it (the agent's sentinel
    # kills the job's process group when the agent's pipe to it closes).
    wait_gone 2 "$pid" || return 1
    # PENDING again once the lease ran out (the other agent may take it at once).
    wait_until 30 "SELECT attempt = 2 OR status = 'PENDING' FROM pgjobs.batch_jobs WHERE id = $job" || return 1
    status_is 20 "$job" COMPLETED || return 1
    [ "$(live_sql "SELECT target || '|' || attempt FROM pgjobs.batch_jobs WHERE id = $job")" = "$other|2" ] || return 1
    # One completion; the killed run may or may not have written its "started" line.
    [ "$(grep -c '^completed$' "$trace")" = 1 ] && [ "$(grep -c '^started$' "$trace")" -le 2 ]
}
test_agent_kill_9() { agent_case kill-9 agent_kill_9; }

# 7. The server restarts (-m fast) while both agents run a job: both reconnect, report, and the
# jobs end COMPLETED, each run once.
agent_database_restart() {
    start_alpha && start_beta || return 1
    local a b data
    a=$(post "'sleep', ARRAY['3'], computer => 'alpha'") || return 1
    b=$(post "'sleep', ARRAY['3'], computer => 'beta'") || return 1
    status_is 15 "$a" RUNNING && status_is 15 "$b" RUNNING || return 1
    data="$(cluster_dir "$AGENT_CLUSTER")/data"
    as_db_user "$PG_BIN/pg_ctl" -D "$data" -l "$(cluster_dir "$AGENT_CLUSTER")/server.log" -m fast -w restart >/dev/null || return 1
    wait_ready || return 1
    status_is 40 "$a" COMPLETED && status_is 40 "$b" COMPLETED || return 1
    local computer job
    for computer in alpha beta; do
        [ $computer = alpha ] && job=$a || job=$b
        grep -q '"event":"reconnected","conn":"main"' "$(agent_log $computer)" || return 1
        [ "$(grep -c "\"event\":\"spawned\",\"job\":$job," "$(agent_log $computer)")" = 1 ] || return 1
    done
    live_sql "SELECT bool_and(attempt = 1 AND exit_code = 0) FROM pgjobs.batch_jobs WHERE id IN ($a, $b)" | grep -qx t
}
test_agent_database_restart() { agent_case database-restart agent_database_restart; }

# 8. SIGTERM with a job running: the agent waits --grace (2 s) for it, ends it, hands it back
# (PENDING, no attempt counted) and exits 0; no process is left.
agent_sigterm() {
    start_alpha --grace 2 || return 1
    local job pid started rc=0
    job=$(post "'sleep', ARRAY['61'], computer => 'alpha'") || return 1
    status_is 15 "$job" RUNNING || return 1
    pid=$(job_pid alpha "$job")
    started=$SECONDS
    kill -TERM "$ALPHA_PID"
    local deadline=$((SECONDS + 7))
    while kill -0 "$ALPHA_PID" 2>/dev/null && [ $SECONDS -le $deadline ]; do sleep 0.1; done
    kill -0 "$ALPHA_PID" 2>/dev/null && return 1
    wait "$ALPHA_PID" || rc=$?
    ALPHA_PID=
    [ $rc = 0 ] && [ $((SECONDS - started)) -le 7 ] || return 1
    wait_gone 1 "$pid" || return 1
    live_sql "SELECT status = 'PENDING' AND attempt <= 1 FROM pgjobs.batch_jobs WHERE id = $job" | grep -qx t || return 1
    grep -q '"event":"handed_back"' "$(agent_log alpha)" && grep -q '"event":"stopped"' "$(agent_log alpha)"
}
test_agent_sigterm() { agent_case sigterm agent_sigterm; }

# 9. Who may do what: agent_b cannot take alpha's name nor claim its jobs, a poster cannot claim,
# and a poster neither sees nor cancels another's jobs.
agent_access() {
    role_sql agent_a "SELECT pgjobs.batch_register('alpha', 2, '{}')" >/dev/null || return 1
    [ "$(sqlstate_of agent_b "SELECT pgjobs.batch_register('alpha', 2, '{}')")" = 42501 ] || return 1
    [ "$(sqlstate_of agent_b "SELECT * FROM pgjobs.batch_claim('alpha', 1)")" = 42501 ] || return 1
    [ "$(sqlstate_of poster_a "SELECT * FROM pgjobs.batch_claim('alpha', 1)")" = 42501 ] || return 1
    [ "$(sqlstate_of poster_a "SELECT pgjobs.batch_register('poster-box')")" = 42501 ] || return 1
    local job
    job=$(post "'echo', ARRAY['private'], run_at => now() + interval '1 hour'") || return 1
    [ "$(role_sql poster_b "SELECT count(*) FROM pgjobs.batch_jobs WHERE id = $job")" = 0 ] || return 1
    role_sql poster_b "SELECT * FROM pgjobs.batch_cancel(ARRAY[$job::bigint])" >/dev/null 2>&1 || true
    live_sql "SELECT status NOT IN ('CANCEL') AND owner::text = 'poster_a' FROM pgjobs.batch_jobs WHERE id = $job" | grep -qx t || return 1
    [ "$(role_sql poster_a "SELECT count(*) FROM pgjobs.batch_jobs WHERE id = $job")" = 1 ]
}
test_agent_access() { agent_case access agent_access; }

# A kill job ends this agent's running jobs of its routine that its owner posted, as cancels, and
# says which it ended; another poster's kill job naming the same routine ends none of them.
agent_kill_job() {
    start_alpha --batchjobs 3 --grace 3 || return 1
    local victim foreign kill
    victim=$(post "'sleep', ARRAY['62'], computer => 'alpha', routine => 'nightly'") || return 1
    status_is 15 "$victim" RUNNING || return 1
    foreign=$(POSTER=poster_b post "'', computer => 'alpha', kind => 'kill', routine => 'nightly'") || return 1
    POSTER=poster_b status_is 15 "$foreign" COMPLETED || return 1
    live_sql "SELECT status = 'RUNNING' FROM pgjobs.batch_jobs WHERE id = $victim" | grep -qx t || return 1
    kill=$(post "'', computer => 'alpha', kind => 'kill', routine => 'nightly'") || return 1
    status_is 15 "$kill" COMPLETED && status_is 5 "$victim" CANCEL || return 1
    live_sql "SELECT (SELECT stdout LIKE '%: $victim%' FROM pgjobs.batch_jobs WHERE id = $kill)
                 AND (SELECT stdout LIKE 'no running job%' FROM pgjobs.batch_jobs WHERE id = $foreign)" | grep -qx t
}
test_agent_kill_job() { agent_case kill-job agent_kill_job; }

# --once runs what is ready, including what its own completions release, and exits 0; refused
# (another agent's computer name) it exits 1 at once.
agent_once() {
    local a b rc=0
    a=$(post "'echo', ARRAY['once a $RANDOM'], computer => 'alpha'") || return 1
    b=$(post "'echo', ARRAY['once b $RANDOM'], computer => 'alpha', depends_on => ARRAY['$a']") || return 1
    timeout 20 "$AGENT_BIN" --dsn "host=localhost port=$PORT user=agent_a dbname=$LIVE_DB" --computer alpha --once \
        2>>"$(agent_log alpha)" || rc=$?
    [ $rc = 0 ] || return 1
    live_sql "SELECT count(*) = 2 FROM pgjobs.batch_jobs WHERE id IN ($a, $b) AND status = 'COMPLETED'" | grep -qx t || return 1
    rc=0
    timeout 20 "$AGENT_BIN" --dsn "host=localhost port=$PORT user=agent_b dbname=$LIVE_DB" --computer alpha --once \
        2>>"$(agent_log alpha-as-b)" || rc=$?
    [ $rc = 1 ] && grep -q '"error":"42501' "$(agent_log alpha-as-b)"
}
test_agent_once() { agent_case once agent_once; }

# A poster's open transaction on one of its running jobs (a cancel not yet committed) holds
# nothing else up: the agent's heartbeats and other reports go on, the report of that job is
# refused as busy and made again once the transaction has ended.
agent_never_waits_for_a_poster() {
    start_alpha --batchjobs 3 || return 1
    local held other rc=0 holder
    held=$(post "'sleep', ARRAY['2'], computer => 'alpha'") || return 1
    status_is 15 "$held" RUNNING || return 1
    role_sql poster_a "BEGIN; SELECT count(*) FROM pgjobs.batch_cancel(ARRAY[$held::bigint]); SELECT pg_sleep(8); COMMIT" \
        >/dev/null 2>&1 &
    holder=$!
    wait_log 10 "$(agent_log alpha)" "\"event\":\"busy\",\"during\":\"finish\",\"job\":$held" || rc=1
    other=$(post "'echo', ARRAY['not held up'], computer => 'alpha'") || rc=1
    status_is 5 "$other" COMPLETED || rc=1
    # The poster's transaction is still open.
    kill -0 "$holder" 2>/dev/null || rc=1
    wait "$holder"
    [ $rc = 0 ] || return 1
    wait_until 10 "SELECT status IN ('COMPLETED', 'CANCEL') FROM pgjobs.batch_jobs WHERE id = $held"
}
test_agent_never_waits_for_a_poster() { agent_case never-waits agent_never_waits_for_a_poster; }

run_agent_tests() {
    local prev_exit
    trap_command prev_exit EXIT
    trap "agent_cleanup; $prev_exit" EXIT
    AGENT_DIR="$OUT/agents"
    rm -rf "$AGENT_DIR"
    mkdir -p "$AGENT_DIR"
    if [ ! -x "$AGENT_BIN" ] || ! prepare_agent_roles; then
        echo "agent tests: no agent binary at $AGENT_BIN or no roles ... FAILED"
        count 0 1
        return
    fi
    verdict "agent: jobs run where they are targeted" test_agent_targeting
    verdict "agent: posting a waiting command again replaces it" test_agent_replacement
    verdict "agent: a failed dependency blocks the chain" test_agent_dependency_chain
    verdict "agent: a cancel ends the running process, a forged NOTIFY does not" test_agent_cancel
    verdict "agent: a silent agent's job ends in lease expired" test_agent_silence
    verdict "agent: heartbeats keep a long job alive and carry its output" test_agent_heartbeats
    verdict "agent: a running job's output reaches the database within seconds" test_agent_output
    verdict "agent: kill -9 of an agent, its job completes elsewhere once" test_agent_kill_9
    verdict "agent: jobs complete across a server restart" test_agent_database_restart
    verdict "agent: SIGTERM hands the running job back" test_agent_sigterm
    verdict "agent: roles keep to their own computers and jobs" test_agent_access
    verdict "agent: a kill job ends its owner's running jobs of its routine" test_agent_kill_job
    verdict "agent: --once runs what is ready and exits" test_agent_once
    verdict "agent: a poster's open transaction holds up nothing but its own job's report" test_agent_never_waits_for_a_poster
    if [ -n "$prev_exit" ]; then trap "$prev_exit" EXIT; else trap - EXIT; fi
}
