# Routine schedules against a real cluster, with the scheduler (the launcher) and an agent on
# this machine: one schedule (RT) with a batch routine due at the next minute, a routine that
# depends on it, a realtime routine, and the scheduler itself; another (OBS) that starts in
# observe. The checks run in the order their moments come; all of them take about 80 s. Sourced
# by test.sh after agent_tests.sh, whose helpers (role_sql, start_alpha, wait_log, job_pid,
# agent_cleanup) it uses; routines are poster_a's, run by agent_a's agent for computer alpha.

RT_RUNTIME=   # the batch routine's runtime (HH:MM, UTC) and its instant (Unix seconds)
RT_DUE=

rt_sql() { role_sql poster_a "$1"; }
# rt_status SCHEDULE ROUTINE: today's status of a routine, as its owner reads it.
rt_status() { rt_sql "SELECT status FROM pgjobs.routines_today WHERE schedule = '$1' AND routine = 'poster_a@alpha:$2'"; }
# rt_wait SECONDS SCHEDULE ROUTINE STATUS
rt_wait() {
    local deadline=$((SECONDS + $1))
    while [ $SECONDS -le $deadline ]; do
        [ "$(rt_status "$2" "$3" 2>/dev/null)" = "$4" ] && return 0
        sleep 0.25
    done
    echo "routine $3 of $2 is $(rt_status "$2" "$3"), not $4" >&2
    return 1
}
rt_job() { rt_sql "SELECT job_id FROM pgjobs.routines_today WHERE schedule = '$1' AND routine = 'poster_a@alpha:$2'"; }

rt_setup() {
    AGENT_CASE=routines
    start_alpha --batchjobs 4 || return 1
    # The next minute at least 8 s away.
    RT_DUE=$(( ($(date +%s) + 8 + 59) / 60 * 60 ))
    RT_RUNTIME=$(date -u -d "@$RT_DUE" +%H:%M)
    rt_sql "SELECT pgjobs.routines_put('RT', 'poster_a@alpha:load', 'LOAD', runtimes => '$RT_RUNTIME',
                                       command => 'echo loading; sleep 2; echo loaded');
            SELECT pgjobs.routines_put('RT', 'poster_a@alpha:report', 'LOAD', dependencies => 'poster_a@alpha:load',
                                       command => 'echo reported');
            SELECT pgjobs.routines_put('RT', 'poster_a@alpha:feed', 'FEED', realtime => true,
                                       command => 'while true; do echo tick; sleep 1; done');
            SELECT pgjobs.routines_put('RT', 'postgres@alpha:pg_jobs.scheduler', 'SCHED', realtime => true);
            SELECT pgjobs.routines_create('OBS');
            SELECT pgjobs.routines_set_mode('OBS', 'observe');
            SELECT pgjobs.routines_put('OBS', 'poster_a@alpha:watched', 'W', realtime => true,
                                       command => 'while true; do echo watched; sleep 1; done');" >/dev/null
}

# In observe the status is kept and nothing is sent; switched to control, what was due starts.
routines_observe_then_control() {
    wait_until 15 "SELECT state_at > loaded_at FROM pgjobs.routine_schedules WHERE schedule = 'OBS'" || return 1
    sleep 3
    [ "$(rt_sql "SELECT doing FROM pgjobs.routines_mode('OBS')")" = "observing; 1 held back (commands off)" ] || return 1
    [ "$(rt_sql "SELECT count(*) FROM pgjobs.batch_jobs WHERE routine = 'poster_a@alpha:watched'")" = 0 ] || return 1
    [ "$(rt_status OBS watched)" = waiting ] || return 1
    rt_sql "SELECT pgjobs.routines_set_mode('OBS', 'control')" >/dev/null || return 1
    rt_wait 15 OBS watched running
}

# The scheduler listed in its own schedule: shown running, never commanded, no Restart.
routines_never_command_the_scheduler() {
    [ "$(rt_sql "SELECT status || ' ' || commandable FROM pgjobs.routines_today WHERE routine = 'postgres@alpha:pg_jobs.scheduler'")" = "running false" ] || return 1
    [ "$(rt_sql "SELECT count(*) FROM pgjobs.batch_jobs WHERE routine LIKE '%pg_jobs.scheduler'")" = 0 ] || return 1
    [ "$(sqlstate_of poster_a "SELECT pgjobs.routine_restart('RT', 'postgres@alpha:pg_jobs.scheduler')")" = 0A000 ]
}

# A realtime routine killed by hand: SILENT 30 s after its last word, started again at 45 s.
routines_silent_realtime_is_restarted() {
    rt_wait 15 RT feed running || return 1
    local job pid killed_at
    job=$(rt_job RT feed)
    wait_log 10 "$(agent_log alpha)" "\"event\":\"spawned\",\"job\":$job," || return 1
    pid=$(job_pid alpha "$job")
    sleep 3
    kill -9 -- "-$pid" || return 1
    killed_at=$SECONDS
    rt_wait 40 RT feed SILENT || return 1
    [ $((SECONDS - killed_at)) -ge 27 ] || { echo "SILENT after $((SECONDS - killed_at)) s" >&2; return 1; }
    rt_wait 30 RT feed running || return 1
    [ "$(rt_job RT feed)" != "$job" ] || return 1
    [ $((SECONDS - killed_at)) -ge 42 ] || { echo "restarted after $((SECONDS - killed_at)) s" >&2; return 1; }
    rt_sql "SELECT message FROM pgjobs.routine_messages WHERE routine = 'poster_a@alpha:feed' AND command ORDER BY at" \
        | grep -qx "SCHED: restart of poster_a@alpha:feed by the scheduler"
}

# The batch routine starts at its runtime and completes; the one that depends on it is started
# only once it has completed. (Read from the times kept: the realtime test before this one may
# have outlasted both runs.)
routines_batch_on_time_then_dependent() {
    local wait=$((RT_DUE - $(date +%s) + 20))
    rt_wait $((wait > 15 ? wait : 15)) RT load completed || return 1
    rt_wait 15 RT report completed || return 1
    rt_sql "SELECT extract(epoch FROM started_at) - $RT_DUE BETWEEN 0 AND 6 FROM pgjobs.routines_today WHERE routine = 'poster_a@alpha:load'" \
        | grep -qx t || { echo "started at $(rt_sql "SELECT started_at FROM pgjobs.routines_today WHERE routine = 'poster_a@alpha:load'") for $RT_RUNTIME" >&2; return 1; }
    rt_sql "SELECT r.posted_at >= l.ended_at AND r.run_order > l.run_order AND r.last_message = 'reported'
            FROM pgjobs.routines_today l, pgjobs.routines_today r
            WHERE l.routine = 'poster_a@alpha:load' AND r.routine = 'poster_a@alpha:report'" | grep -qx t
}

# A person's restart, logged with the person's name, in observe too.
routines_persons_restart() {
    local job
    job=$(rt_job RT feed)
    rt_sql "SELECT pgjobs.routines_set_mode('RT', 'observe'); SELECT pgjobs.routine_restart('RT', 'poster_a@alpha:feed')" >/dev/null || return 1
    wait_until 20 "SELECT job_id <> $job FROM pgjobs.routines_today WHERE routine = 'poster_a@alpha:feed'" || return 1
    rt_wait 20 RT feed running || return 1
    rt_sql "SELECT message FROM pgjobs.routine_messages WHERE routine = 'poster_a@alpha:feed' ORDER BY at" \
        | grep -qx "SCHED: restart of poster_a@alpha:feed sent by poster_a"
}

# With the launcher stopped (SIGSTOP), every routine shows WAS RUNNING once
# pg_jobs.routines_stale_after (3 s here) has passed; then it is heard of again.
routines_was_running_without_the_scheduler() {
    local pid
    pid=$(launcher_pid) || return 1
    kill -STOP "$pid" || return 1
    sleep 4
    local seen
    seen=$(PGOPTIONS="-c pg_jobs.routines_stale_after=3" rt_sql "SELECT string_agg(DISTINCT status, ',') FROM pgjobs.routines_today")
    local banner
    banner=$(PGOPTIONS="-c pg_jobs.routines_stale_after=3" rt_sql "SELECT bool_and(not_known) FROM pgjobs.routine_schedule_list")
    kill -CONT "$pid"
    [ "$seen" = "WAS RUNNING" ] && [ "$banner" = t ] || { echo "seen: $seen, banner: $banner" >&2; return 1; }
    sleep 3
    [ "$(PGOPTIONS="-c pg_jobs.routines_stale_after=3" rt_sql "SELECT bool_or(not_known) FROM pgjobs.routine_schedule_list")" = f ]
}

# Export with the agent's command line, import it back: the same definition.
routines_export_import_command_line() {
    local dsn="host=localhost port=$PORT user=poster_a dbname=$LIVE_DB" csv="$AGENT_DIR/rt.csv"
    "$AGENT_BIN" routines export RT --dsn "$dsn" >"$csv" || return 1
    grep -q '^poster_a@alpha:feed,FEED,false,true,' "$csv" || return 1
    local before after
    before=$(live_sql "SELECT md5(string_agg(d::text, ',' ORDER BY routine)) FROM pgjobs.routine_definitions d JOIN pgjobs.routine_schedules s ON s.id = d.schedule_id WHERE s.schedule = 'RT'")
    "$AGENT_BIN" routines import RT "$csv" --dsn "$dsn" | grep -qx "imported 4 routines into RT" || return 1
    after=$(live_sql "SELECT md5(string_agg(d::text, ',' ORDER BY routine)) FROM pgjobs.routine_definitions d JOIN pgjobs.routine_schedules s ON s.id = d.schedule_id WHERE s.schedule = 'RT'")
    [ "$before" = "$after" ] || return 1
    "$AGENT_BIN" routines list --dsn "$dsn" | grep -q "^RT	4 routines	observe$"
}

# pg_jobs.routines_start_mode = observe: a scheduler that starts switches every schedule to
# observe, asked by nobody (the setting); switched on again, it is in charge.
routines_start_in_observe() {
    rt_sql "SELECT pgjobs.routines_set_mode('RT', 'control')" >/dev/null || return 1
    live_sql "ALTER SYSTEM SET pg_jobs.routines_start_mode = 'observe'" >/dev/null || return 1
    live_sql "SELECT pg_reload_conf()" >/dev/null || return 1
    local old_pid rc=0
    old_pid=$(launcher_pid)
    live_sql "SELECT pg_terminate_backend($old_pid)" >/dev/null || rc=1
    wait_until 20 "SELECT mode = 'observe' AND mode_by IS NULL FROM pgjobs.routine_schedules WHERE schedule = 'RT'" || rc=1
    live_sql "ALTER SYSTEM RESET pg_jobs.routines_start_mode" >/dev/null
    live_sql "SELECT pg_reload_conf()" >/dev/null
    [ $rc = 0 ] || return 1
    [ "$(rt_sql "SELECT asked || ' ' || coalesce(asked_by::text, 'the setting') FROM pgjobs.routines_mode('RT')")" = "observe the setting" ] || return 1
    rt_sql "SELECT pgjobs.routines_set_mode('RT', 'control')" >/dev/null || return 1
    wait_until 10 "SELECT doing LIKE 'controlling%' FROM pgjobs.routine_schedules WHERE schedule = 'RT'"
}

rt_cleanup() {
    rt_sql "SELECT pgjobs.routines_drop('RT'); SELECT pgjobs.routines_drop('OBS')" >/dev/null 2>&1 || true
    agent_cleanup
}

run_routine_tests() {
    if [ ! -x "$AGENT_BIN" ] || ! rt_setup; then
        echo "routines: no agent or schedules ... FAILED"
        count 0 1
        rt_cleanup
        return
    fi
    verdict "routines: observe keeps the status and sends nothing; control starts what was due" routines_observe_then_control
    verdict "routines: the scheduler listed in its schedule is never commanded" routines_never_command_the_scheduler
    verdict "routines: a realtime routine killed by hand is SILENT, then restarted" routines_silent_realtime_is_restarted
    verdict "routines: a batch routine starts on time, its dependent after it" routines_batch_on_time_then_dependent
    verdict "routines: a person's restart works in observe and names the person" routines_persons_restart
    verdict "routines: WAS RUNNING while the scheduler is stopped" routines_was_running_without_the_scheduler
    verdict "routines: export and import on the command line keep the definition" routines_export_import_command_line
    verdict "routines: pg_jobs.routines_start_mode = observe switches schedules off at the scheduler's start" routines_start_in_observe
    rt_cleanup
}
