-- The statements of src/api/routine_rounds.rs, run by the launcher (or by hand, as its owner).

-- name: scheduler_started
SELECT l.started_at FROM launcher_state l;

-- name: schedules
SELECT s.id, s.schedule, s.owner::regrole::text FROM routine_schedules s ORDER BY s.id;

-- name: round_lock(schedule_id bigint)
-- One round of schedule $schedule_id at a time; an advisory lock, not the schedule's row, so that
-- the switch can be changed while a round runs (and be seen before its next command). Its key is
-- one no member can compute, so no member can hold it and freeze the schedule's rounds.
SELECT pg_try_advisory_xact_lock(_lock_key('routine_round', $schedule_id::text));

-- name: schedule(schedule_id bigint, at timestamptz, scheduler_started_at timestamptz)
-- Schedule $schedule_id at $at, held shared as the rows of its state and log refer to it (its
-- owner editing the definition holds it, and the schedule is passed over until that transaction
-- ends): its name, its day at $at, whether the scheduler is new since its last load, whether it
-- was loaded before, whether its day is a new one, and whether it is to be loaded again.
SELECT x.schedule, ($at AT TIME ZONE x.time_zone)::date,
       x.loaded_at IS NULL OR coalesce(x.loaded_at < $scheduler_started_at, false),
       x.loaded_at IS NOT NULL,
       x.day IS DISTINCT FROM ($at AT TIME ZONE x.time_zone)::date, x.reload
FROM routine_schedules x WHERE x.id = $schedule_id FOR KEY SHARE SKIP LOCKED;

-- name: take_schedule(schedule_id bigint)
SELECT FROM routine_schedules x WHERE x.id = $schedule_id FOR NO KEY UPDATE SKIP LOCKED;

-- name: take_day(schedule_id bigint, day date)
SELECT FROM routine_days r WHERE r.schedule_id = $schedule_id AND r.day = $day FOR UPDATE NOWAIT;

-- name: load_day(schedule_id bigint, day date, at timestamptz)
-- Schedule $schedule_id's day $day (loaded at $at) from its definitions: a new day's routines due
-- from its midnight (or from $at when it is the schedule's first), a realtime routine's run still
-- alive kept from the day before; a day already loaded takes the definitions' changes.
INSERT INTO routine_days AS r (schedule_id, day, routine, group_name, external, realtime, runtimes,
                               args, dependencies, computer, seq, command, due_since,
                               job_id, posted_at, started_at, last_message, last_level, last_message_at)
SELECT d.schedule_id, $day, d.routine, d.group_name, d.external, d.realtime, d.runtimes, d.args,
       d.dependencies, d.computer, d.seq, d.command,
       CASE WHEN s.day IS DISTINCT FROM $day AND s.day IS NOT NULL
            THEN $day::timestamp AT TIME ZONE s.time_zone ELSE $at END,
       y.job_id, y.posted_at, y.started_at, y.last_message, y.last_level, y.last_message_at
FROM routine_schedules s
JOIN routine_definitions d ON d.schedule_id = s.id
LEFT JOIN routine_days y
    ON s.day IS DISTINCT FROM $day AND d.realtime AND y.schedule_id = d.schedule_id
       AND y.day = s.day AND y.routine = d.routine AND _routine_run_alive(y)
WHERE s.id = $schedule_id
ON CONFLICT (schedule_id, day, routine) DO UPDATE
SET group_name = excluded.group_name, external = excluded.external, realtime = excluded.realtime,
    runtimes = excluded.runtimes, args = excluded.args, dependencies = excluded.dependencies,
    computer = excluded.computer, seq = excluded.seq, command = excluded.command;

-- name: drop_undefined(schedule_id bigint, day date)
-- Schedule $schedule_id's routines of day $day that its definitions no longer have.
DELETE FROM routine_days r
WHERE r.schedule_id = $schedule_id AND r.day = $day
  AND NOT EXISTS (SELECT FROM routine_definitions d
                  WHERE d.schedule_id = $schedule_id AND d.routine = r.routine);

-- name: loaded(schedule_id bigint, day date, at timestamptz)
UPDATE routine_schedules x SET day = $day, loaded_at = $at, reload = false
WHERE x.id = $schedule_id;

-- name: observe_at_start(schedule_id bigint, at timestamptz)
-- A scheduler that starts with pg_jobs.routines_start_mode = observe switches schedule
-- $schedule_id's commands off (at $at); anyone may switch them on again.
UPDATE routine_schedules x SET mode = 'observe', mode_by = NULL, mode_at = $at
WHERE x.id = $schedule_id AND x.mode <> 'observe'
  AND current_setting('pg_jobs.routines_start_mode') = 'observe';

-- name: status(schedule_id bigint, day date, at timestamptz)
SELECT _routines_status($schedule_id, $day, $at);

-- name: todo(schedule_id bigint, day date, at timestamptz)
-- What schedule $schedule_id's routines of day $day are to be sent at $at (read from the
-- statuses just written), in their order; a routine whose row is held (a person's restart or
-- stop left open) is passed over: still due, for a later round.
SELECT d.routine, d.job_id IS NOT NULL, x.command
FROM routine_days d
JOIN _routine_decisions($schedule_id, $day, $at) x ON x.routine = d.routine
WHERE d.schedule_id = $schedule_id AND d.day = $day AND x.command IS NOT NULL
ORDER BY d.seq
FOR NO KEY UPDATE OF d SKIP LOCKED;

-- name: mode(schedule_id bigint)
SELECT x.mode FROM routine_schedules x WHERE x.id = $schedule_id;

-- name: cannot_start(schedule_id bigint, day date, routine text, reason text,
--                     at timestamptz)
-- Routine $routine of schedule $schedule_id's day $day could not be posted (at $at, for
-- $reason): it stays due and shows why.
UPDATE routine_days r
SET last_message = _mask_text('SCHED: cannot start: ' || $reason), last_level = 'error',
    last_message_at = $at
WHERE r.schedule_id = $schedule_id AND r.day = $day AND r.routine = $routine;

-- name: doing(schedule_id bigint, mode text, sent integer, held integer)
-- What schedule $schedule_id's scheduler is doing ($mode: its switch; $sent commands sent, $held
-- held back); not written while a switch or a reload holds the row.
UPDATE routine_schedules x
SET state_at = clock_timestamp(),
    doing = CASE WHEN $mode = 'control' THEN 'controlling' ELSE 'observing' END
            || CASE WHEN $sent > 0 THEN format('; %s command(s) sent', $sent) ELSE '' END
            || CASE WHEN $held > 0 THEN format('; %s held back (commands off)', $held) ELSE '' END
WHERE x.id = (SELECT y.id FROM routine_schedules y
              WHERE y.id = $schedule_id FOR NO KEY UPDATE SKIP LOCKED);

-- name: forget_days(at timestamptz)
-- Days older than pg_jobs.history_days before $at; a day's row held (a person's command left
-- open since) goes at a later round.
DELETE FROM routine_days d
USING (SELECT o.schedule_id, o.day, o.routine FROM routine_days o
       WHERE o.day < ($at - make_interval(
                                days => current_setting('pg_jobs.history_days')::integer))::date
       FOR UPDATE SKIP LOCKED) o
WHERE (d.schedule_id, d.day, d.routine) = (o.schedule_id, o.day, o.routine);

-- name: forget_log(at timestamptz)
-- Lines older than pg_jobs.history_days before $at; a line held (its schedule being dropped in a
-- transaction left open, which deletes its lines) goes at a later round.
DELETE FROM routine_log l
WHERE l.ctid = ANY (ARRAY(
    SELECT o.ctid FROM routine_log o
    WHERE o.at < $at - make_interval(days => current_setting('pg_jobs.history_days')::integer)
    FOR UPDATE SKIP LOCKED));

-- name: post(schedule_id bigint, routine text, kind text, nowait boolean)
-- Routine $routine of schedule $schedule_id's current day posted for the schedule's owner, as
-- kind $kind: its run (routine) or the end of its runs (kill: an empty command for the agent to
-- end the run with), without waiting for a transaction of the owner when $nowait.
SELECT _batch_post(s.owner,
    CASE $kind WHEN 'kill' THEN '' ELSE _routine_shell_command(d.routine, d.command, d.args) END,
    CASE $kind WHEN 'kill' THEN '{}' ELSE _routine_args(d.args) END,
    d.computer, $kind, d.routine, NULL, $kind <> 'kill', '{}', NULL, 1, 0, NULL, '{}',
    jsonb_build_object('schedule', s.schedule, 'day', d.day), $nowait)
FROM routine_days d JOIN routine_schedules s ON s.id = d.schedule_id AND d.day = s.day
WHERE d.schedule_id = $schedule_id AND d.routine = $routine;

-- name: killing(schedule_id bigint, routine text)
UPDATE routine_days r SET ending_since = clock_timestamp()
FROM routine_schedules s
WHERE r.schedule_id = $schedule_id AND r.routine = $routine
  AND s.id = r.schedule_id AND r.day = s.day;

-- name: running(schedule_id bigint, routine text, job_id bigint)
-- Routine $routine of schedule $schedule_id runs as job $job_id: a restart counted if it ran
-- before, the run's times and requests cleared, its place in the day's run order kept (or the
-- next).
UPDATE routine_days r
SET restarts = r.restarts + (r.job_id IS NOT NULL)::integer, job_id = $job_id,
    posted_at = clock_timestamp(), started_at = NULL, ended_at = NULL, restart_asked_by = NULL,
    ending_since = NULL,
    run_order = coalesce(r.run_order, (SELECT coalesce(max(o.run_order), 0) + 1 FROM routine_days o
                                       WHERE o.schedule_id = r.schedule_id AND o.day = r.day))
FROM routine_schedules s
WHERE r.schedule_id = $schedule_id AND r.routine = $routine
  AND s.id = r.schedule_id AND r.day = s.day;

-- name: log_command(schedule_id bigint, routine text, command text)
SELECT _routine_log_command($schedule_id, $routine, $command, NULL);
