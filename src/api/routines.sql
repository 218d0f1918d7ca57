-- The statements of src/api/routines.rs. $role is the calling role; $schedule is a schedule's name
-- (NAME, or OWNER/NAME where it is given by the caller), $schedule_id its id.

-- name: named_owner(schedule text)
-- The owner part of OWNER/NAME, as an identity (null for a plain NAME, an unknown role: 0).
SELECT _routines_named_owner($schedule);

-- name: name_ok(schedule text)
SELECT _routine_schedule_name_ok($schedule);

-- name: find(role oid, schedule text)
-- The schedules named $schedule (NAME or OWNER/NAME) that the role may watch, its own first;
-- each with how its name is written in full.
SELECT s.id, s.owner, quote_literal(s.owner::regrole::text || '/' || s.schedule)
FROM routine_schedules s
WHERE s.schedule = substring($schedule FROM '[^/]*$')
  AND s.owner = coalesce(_routines_named_owner($schedule), s.owner)
  AND _may_watch($role, s.owner, s.operators)
ORDER BY s.owner <> _identity_of($role), s.id;

-- name: own_schedule(owner oid, schedule text)
-- The schedule named $schedule of the owner (an identity).
SELECT s.id, s.owner FROM routine_schedules s WHERE s.owner = $owner AND s.schedule = $schedule;

-- name: make_schedule(owner oid, schedule text)
-- The schedule named $schedule of the owner (an identity), made in the mode
-- pg_jobs.routines_start_mode says.
INSERT INTO routine_schedules (schedule, owner, mode, mode_at)
VALUES ($schedule, $owner, current_setting('pg_jobs.routines_start_mode'), now())
ON CONFLICT (owner, schedule) DO NOTHING;

-- name: watched_elsewhere(role oid, schedule text)
-- Whether the role may watch some other owner's schedule named $schedule.
SELECT EXISTS (SELECT FROM routine_schedules s
               WHERE s.schedule = $schedule AND _may_watch($role, s.owner, s.operators));

-- name: lock_schedule(schedule_id bigint)
SELECT s.id, s.schedule FROM routine_schedules s WHERE s.id = $schedule_id FOR UPDATE;

-- name: set_time_zone(schedule_id bigint, time_zone text)
UPDATE routine_schedules s SET time_zone = $time_zone, reload = true WHERE s.id = $schedule_id;

-- name: first_seq(schedule_id bigint)
SELECT coalesce(max(d.seq), 0) FROM routine_definitions d WHERE d.schedule_id = $schedule_id;

-- name: clear_definition(schedule_id bigint)
DELETE FROM routine_definitions d WHERE d.schedule_id = $schedule_id;

-- name: write_routine(schedule_id bigint, fields jsonb, last_seq integer)
-- A routine of the schedule from a row of its definition ($fields: jsonb of text fields:
-- routine, group, external, realtime, runtimes, args, dependencies, computer, seq, command),
-- added or changed; $last_seq is the seq its place follows when the row gives none. Returns the
-- row's own seq.
INSERT INTO routine_definitions AS d (schedule_id, routine, group_name, external, realtime, runtimes,
                                      args, dependencies, computer, seq, command)
VALUES ($schedule_id, $fields ->> 'routine', coalesce($fields ->> 'group', ''),
        coalesce(($fields ->> 'external')::boolean, false),
        coalesce(($fields ->> 'realtime')::boolean, false),
        _routine_runtimes($fields ->> 'runtimes'),
        coalesce($fields ->> 'args', ''),
        ARRAY(SELECT btrim(x)
              FROM unnest(string_to_array(coalesce($fields ->> 'dependencies', ''), ',')) x
              WHERE btrim(x) <> ''),
        coalesce(nullif(btrim($fields ->> 'computer'), ''),
                 _routine_computer($fields ->> 'routine')),
        coalesce(($fields ->> 'seq')::integer, $last_seq + 1), coalesce($fields ->> 'command', ''))
ON CONFLICT (schedule_id, routine) DO UPDATE
SET group_name = excluded.group_name, external = excluded.external, realtime = excluded.realtime,
    runtimes = excluded.runtimes, args = excluded.args, dependencies = excluded.dependencies,
    computer = excluded.computer,
    seq = CASE WHEN $fields ? 'seq' AND $fields ->> 'seq' IS NOT NULL THEN excluded.seq
               ELSE d.seq END,
    command = excluded.command
RETURNING ($fields ->> 'seq')::integer;

-- name: missing_dependency(schedule_id bigint, schedule text)
-- The first routine of the schedule (named $schedule) that depends on one it does not list.
SELECT format('routine %s depends on %s, which schedule %s does not list', d.routine, x, $schedule)
FROM routine_definitions d, unnest(d.dependencies) x
WHERE d.schedule_id = $schedule_id
  AND NOT EXISTS (SELECT FROM routine_definitions e
                  WHERE e.schedule_id = $schedule_id AND e.routine = x)
ORDER BY d.seq LIMIT 1;

-- name: dependencies(schedule_id bigint)
-- The edges routine → dependency of the schedule, in the order a cycle is reported in.
SELECT coalesce(array_agg(d.routine ORDER BY d.seq, d.routine, x), '{}'),
       coalesce(array_agg(x ORDER BY d.seq, d.routine, x), '{}')
FROM routine_definitions d, unnest(d.dependencies) x
WHERE d.schedule_id = $schedule_id;

-- name: count_routines(schedule_id bigint)
SELECT count(*)::integer FROM routine_definitions d WHERE d.schedule_id = $schedule_id;

-- name: dependent(schedule_id bigint, routine text)
-- A routine of the schedule that depends on $routine.
SELECT d.routine FROM routine_definitions d
WHERE d.schedule_id = $schedule_id AND $routine = ANY (d.dependencies) LIMIT 1;

-- name: remove_routine(schedule_id bigint, routine text)
DELETE FROM routine_definitions d WHERE d.schedule_id = $schedule_id AND d.routine = $routine
RETURNING d.routine;

-- name: definition(schedule_id bigint)
-- The schedule's definition as rows of text fields, in its order.
SELECT coalesce(jsonb_agg(jsonb_build_object(
           'routine', d.routine, 'group', d.group_name, 'external', d.external,
           'realtime', d.realtime, 'runtimes', _routine_runtimes_text(d.runtimes),
           'args', d.args, 'dependencies', array_to_string(d.dependencies, ','),
           'computer', d.computer, 'seq', d.seq, 'command', d.command) ORDER BY d.seq, d.routine), '[]')
FROM routine_definitions d WHERE d.schedule_id = $schedule_id;

-- name: drop_schedule(schedule_id bigint)
DELETE FROM routine_schedules s WHERE s.id = $schedule_id;

-- name: may_grant(role oid, grantee oid)
-- Whether the role is a member of the grantee, and whether the grantee is one of the extension's
-- roles.
SELECT pg_has_role($role, $grantee, 'MEMBER'),
       $grantee IN ('pgjobs_user'::regrole, 'pgjobs_agent'::regrole);

-- name: set_operator(schedule_id bigint, grantee regrole, granted boolean)
-- The schedule granted to role $grantee when $granted, else revoked from it.
UPDATE routine_schedules s
SET operators = CASE WHEN $granted THEN array_append(array_remove(s.operators, $grantee), $grantee)
                     ELSE array_remove(s.operators, $grantee) END
WHERE s.id = $schedule_id;

-- name: ask_reload(schedule_id bigint)
UPDATE routine_schedules s SET reload = true WHERE s.id = $schedule_id;

-- name: mode(schedule_id bigint)
-- The schedule's switch, as routine_schedule_list shows it.
SELECT l.mode, l.mode_by, l.mode_at, l.doing, l.state_at, l.not_known
FROM routine_schedule_list l JOIN routine_schedules s ON l.schedule = s.schedule AND l.owner = s.owner::regrole
WHERE s.id = $schedule_id;

-- name: set_mode(schedule_id bigint, mode text, mode_by oid)
UPDATE routine_schedules s SET mode = $mode, mode_by = $mode_by, mode_at = clock_timestamp()
WHERE s.id = $schedule_id;

-- name: message(routine text, level text, message text, sender oid)
-- A routine's message from the sender (a role), kept for each schedule that lists the routine
-- and that the sender may watch.
INSERT INTO routine_log (schedule_id, routine, level, message, sender)
SELECT s.id, $routine, $level, left(_mask_text($message), 4096), $sender
FROM routine_schedules s
WHERE EXISTS (SELECT FROM routine_definitions d
              WHERE d.schedule_id = s.id AND d.routine = $routine)
  AND _may_watch($sender, s.owner, s.operators)
RETURNING 1;

-- name: commanded(schedule_id bigint, routine text)
-- The routine's row of today in the schedule, locked: whether it is the scheduler, whether it is
-- external, whether it is realtime, and whether its run has not finished.
SELECT _routine_is_scheduler(r.routine), r.external, r.realtime, _routine_run_alive(r)
FROM routine_days r JOIN routine_schedules s ON s.id = r.schedule_id AND r.day = s.day
WHERE r.schedule_id = $schedule_id AND r.routine = $routine
FOR UPDATE OF r;

-- name: log_command(schedule_id bigint, routine text, what text, sender oid)
-- A person's command $what (restart or stop) of the routine, sent by role $sender.
SELECT _routine_log_command($schedule_id, $routine, $what, $sender);

-- name: restart_asked(schedule_id bigint, routine text, asked_by oid)
UPDATE routine_days r SET restart_asked_by = $asked_by
FROM routine_schedules s
WHERE r.schedule_id = $schedule_id AND r.routine = $routine AND s.id = r.schedule_id
  AND r.day = s.day;

-- name: stop_asked(schedule_id bigint, routine text)
-- Not the scheduler's restart: a realtime routine starts again once silent for 45 s.
UPDATE routine_days r SET restart_asked_by = NULL, ending_since = NULL
FROM routine_schedules s
WHERE r.schedule_id = $schedule_id AND r.routine = $routine AND s.id = r.schedule_id
  AND r.day = s.day;

-- name: next_look(at timestamptz)
-- Routine schedules are looked at every 2 seconds.
SELECT $at + interval '2 seconds' WHERE EXISTS (SELECT FROM routine_schedules);

-- name: groups(by text, realtime boolean, schedule text)
-- The caller's routines of today (read as the caller: routines_today shows what it may watch)
-- in groups by $by, realtime ones or not ($realtime, both when null), of schedule $schedule (all
-- when null):
-- each group's key, its status (RUNNING when all run, else its most pressing one), its count,
-- how many fail, and its count per status; the most pressing first.
SELECT g.key, CASE WHEN bool_and(g.status = 'running') THEN 'RUNNING'
                   ELSE _routine_status_word(min(_routine_status_rank(g.status))) END,
       count(*)::integer, count(*) FILTER (WHERE _routine_failing(g.status))::integer,
       (SELECT jsonb_object_agg(c.status, c.n) FROM (
            SELECT t.status, count(*) AS n FROM unnest(array_agg(g.status)) t(status) GROUP BY t.status) c)
FROM (
    SELECT CASE $by WHEN 'group' THEN t.group_name WHEN 'computer' THEN t.computer
                   WHEN 'status' THEN t.status ELSE t.schedule END AS key,
           t.status
    FROM routines_today t
    WHERE ($realtime::boolean IS NULL OR t.realtime = $realtime)
      AND ($schedule::text IS NULL OR t.schedule = $schedule)
) g
GROUP BY g.key
ORDER BY min(_routine_status_rank(g.status)), g.key;
