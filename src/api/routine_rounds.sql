-- The statements of src/api/routine_rounds.rs, run by the launcher (or by hand, as its owner).

-- name: scheduler_started
SELECT l.started_at FROM launcher_state l;

-- name: schedules
SELECT s.id, s.schedule, s.owner::regrole::text FROM routine_schedules s ORDER BY s.id;

-- name: round_lock
-- One round of schedule $1 at a time; an advisory lock, not the schedule's row, so that the
-- switch can be changed while a round runs (and be seen before its next command). Its key is one
-- no member can compute, so no member can hold it and freeze the schedule's rounds.
SELECT pg_try_advisory_xact_lock(_lock_key('routine_round', $1::text));

-- name: schedule
-- Schedule $1 at $2, held shared as the rows of its state and log refer to it (its owner editing
-- the definition holds it, and the schedule is passed over until that transaction ends): its
-- name, its day at $2, whether the scheduler is new since its last load (started at $3), whether
-- it was loaded before, whether its day is a new one, and whether it is to be loaded again.
SELECT x.schedule, ($2 AT TIME ZONE x.time_zone)::date,
       x.loaded_at IS NULL OR coalesce(x.loaded_at < $3, false), x.loaded_at IS NOT NULL,
       x.day IS DISTINCT FROM ($2 AT TIME ZONE x.time_zone)::date, x.reload
FROM routine_schedules x WHERE x.id = $1 FOR KEY SHARE SKIP LOCKED;

-- name: take_schedule
SELECT FROM routine_schedules x WHERE x.id = $1 FOR NO KEY UPDATE SKIP LOCKED;

-- name: take_day
SELECT FROM routine_days r WHERE r.schedule_id = $1 AND r.day = $2 FOR UPDATE NOWAIT;

-- name: load_day
-- Schedule $1's day $2 (loaded at $3) from its definitions: a new day's routines due from its
-- midnight (or from $3 when it is the schedule's first), a realtime routine's run still alive
-- kept from the day before; a day already loaded takes the definitions' changes.
INSERT INTO routine_days AS r (schedule_id, day, routine, group_name, external, realtime, runtimes,
                               args, dependencies, computer, seq, command, due_since,
                               job_id, posted_at, started_at, last_message, last_level, last_message_at)
SELECT d.schedule_id, $2, d.routine, d.group_name, d.external, d.realtime, d.runtimes, d.args,
       d.dependencies, d.computer, d.seq, d.command,
       CASE WHEN s.day IS DISTINCT FROM $2 AND s.day IS NOT NULL THEN $2::timestamp AT TIME ZONE s.time_zone ELSE $3 END,
       y.job_id, y.posted_at, y.started_at, y.last_message, y.last_level, y.last_message_at
FROM routine_schedules s
JOIN routine_definitions d ON d.schedule_id = s.id
LEFT JOIN routine_days y
    ON s.day IS DISTINCT FROM $2 AND d.realtime AND y.schedule_id = d.schedule_id AND y.day = s.day
       AND y.routine = d.routine AND _routine_run_alive(y)
WHERE s.id = $1
ON CONFLICT (schedule_id, day, routine) DO UPDATE
SET group_name = excluded.group_name, external = excluded.external, realtime = excluded.realtime,
    runtimes = excluded.runtimes, args = excluded.args, dependencies = excluded.dependencies,
    computer = excluded.computer, seq = excluded.seq, command = excluded.command;

-- name: drop_undefined
-- Schedule $1's routines of day $2 that its definitions no longer have.
DELETE FROM routine_days r
WHERE r.schedule_id = $1 AND r.day = $2
  AND NOT EXISTS (SELECT FROM routine_definitions d WHERE d.schedule_id = $1 AND d.routine = r.routine);

-- name: loaded
UPDATE routine_schedules x SET day = $2, loaded_at = $3, reload = false WHERE x.id = $1;

-- name: observe_at_start
-- A scheduler that starts with pg_jobs.routines_start_mode = observe switches schedule $1's
-- commands off (at $2); anyone may switch them on again.
UPDATE routine_schedules x SET mode = 'observe', mode_by = NULL, mode_at = $2
WHERE x.id = $1 AND x.mode <> 'observe' AND current_setting('pg_jobs.routines_start_mode') = 'observe';

-- name: status
SELECT _routines_status($1, $2, $3);

-- name: todo
-- What schedule $1's routines of day $2 are to be sent at $3 (read from the statuses just
-- written), in their order; a routine whose row is held (a person's restart or stop left open) is
-- passed over: still due, for a later round.
SELECT d.routine, d.job_id IS NOT NULL, x.command
FROM routine_days d
JOIN _routine_decisions($1, $2, $3) x ON x.routine = d.routine
WHERE d.schedule_id = $1 AND d.day = $2 AND x.command IS NOT NULL
ORDER BY d.seq
FOR NO KEY UPDATE OF d SKIP LOCKED;

-- name: mode
SELECT x.mode FROM routine_schedules x WHERE x.id = $1;

-- name: cannot_start
-- Routine $3 of schedule $1's day $2 could not be posted ($4 why, at $5): it stays due and shows why.
UPDATE routine_days r
SET last_message = _mask_text('SCHED: cannot start: ' || $4), last_level = 'error', last_message_at = $5
WHERE r.schedule_id = $1 AND r.day = $2 AND r.routine = $3;

-- name: doing
-- What schedule $1's scheduler is doing ($2: its switch; $3 commands sent, $4 held back); not
-- written while a switch or a reload holds the row.
UPDATE routine_schedules x
SET state_at = clock_timestamp(),
    doing = CASE WHEN $2 = 'control' THEN 'controlling' ELSE 'observing' END
            || CASE WHEN $3 > 0 THEN format('; %s command(s) sent', $3) ELSE '' END
            || CASE WHEN $4 > 0 THEN format('; %s held back (commands off)', $4) ELSE '' END
WHERE x.id = (SELECT y.id FROM routine_schedules y WHERE y.id = $1 FOR NO KEY UPDATE SKIP LOCKED);

-- name: forget_days
-- Days older than pg_jobs.history_days before $1; a day's row held (a person's command left
-- open since) goes at a later round.
DELETE FROM routine_days d
USING (SELECT o.schedule_id, o.day, o.routine FROM routine_days o
       WHERE o.day < ($1 - make_interval(days => current_setting('pg_jobs.history_days')::integer))::date
       FOR UPDATE SKIP LOCKED) o
WHERE (d.schedule_id, d.day, d.routine) = (o.schedule_id, o.day, o.routine);

-- name: forget_log
DELETE FROM routine_log l WHERE l.at < $1 - make_interval(days => current_setting('pg_jobs.history_days')::integer);

-- name: post
-- Routine $2 of schedule $1's current day posted for the schedule's owner, as kind $3: its run
-- (routine) or the end of its runs (kill: an empty command for the agent to end the run with),
-- without waiting for a transaction of the owner ($4).
SELECT _batch_post(s.owner,
    CASE $3 WHEN 'kill' THEN '' ELSE _routine_shell_command(d.routine, d.command, d.args) END,
    CASE $3 WHEN 'kill' THEN '{}' ELSE _routine_args(d.args) END,
    d.computer, $3, d.routine, NULL, $3 <> 'kill', '{}', NULL, 1, 0, NULL, '{}',
    jsonb_build_object('schedule', s.schedule, 'day', d.day), $4)
FROM routine_days d JOIN routine_schedules s ON s.id = d.schedule_id AND d.day = s.day
WHERE d.schedule_id = $1 AND d.routine = $2;

-- name: killing
UPDATE routine_days r SET ending_since = clock_timestamp()
FROM routine_schedules s
WHERE r.schedule_id = $1 AND r.routine = $2 AND s.id = r.schedule_id AND r.day = s.day;

-- name: running
-- Routine $2 of schedule $1 runs as job $3: a restart counted if it ran before, the run's times
-- and requests cleared, its place in the day's run order kept (or the next).
UPDATE routine_days r
SET restarts = r.restarts + (r.job_id IS NOT NULL)::integer, job_id = $3,
    posted_at = clock_timestamp(), started_at = NULL, ended_at = NULL, restart_asked_by = NULL,
    ending_since = NULL,
    run_order = coalesce(r.run_order, (SELECT coalesce(max(o.run_order), 0) + 1 FROM routine_days o
                                       WHERE o.schedule_id = r.schedule_id AND o.day = r.day))
FROM routine_schedules s
WHERE r.schedule_id = $1 AND r.routine = $2 AND s.id = r.schedule_id AND r.day = s.day;

-- name: log_command
SELECT _routine_log_command($1, $2, $3, NULL);
