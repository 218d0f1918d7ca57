-- The statements of src/api/routines.rs. $1 is the calling role.

-- name: named_owner
-- The owner part of OWNER/NAME $1, as an identity (null for a plain NAME, an unknown role: 0).
SELECT _routines_named_owner($1);

-- name: name_ok
SELECT _routine_schedule_name_ok($1);

-- name: find
-- The schedules named $2 that the role $1 may watch, its own first; each with how its name is
-- written in full.
SELECT s.id, s.owner, quote_literal(s.owner::regrole::text || '/' || s.schedule)
FROM routine_schedules s
WHERE s.schedule = substring($2 FROM '[^/]*$') AND s.owner = coalesce(_routines_named_owner($2), s.owner)
  AND _may_watch($1, s.owner, s.operators)
ORDER BY s.owner <> _identity_of($1), s.id;

-- name: own_schedule
-- Identity $1's schedule named $2.
SELECT s.id, s.owner FROM routine_schedules s WHERE s.owner = $1 AND s.schedule = $2;

-- name: make_schedule
-- Identity $1's schedule named $2, made in the mode pg_jobs.routines_start_mode says.
INSERT INTO routine_schedules (schedule, owner, mode, mode_at)
VALUES ($2, $1, current_setting('pg_jobs.routines_start_mode'), now())
ON CONFLICT (owner, schedule) DO NOTHING;

-- name: watched_elsewhere
-- Whether role $1 may watch some other owner's schedule named $2.
SELECT EXISTS (SELECT FROM routine_schedules s
               WHERE s.schedule = $2 AND _may_watch($1, s.owner, s.operators));

-- name: lock_schedule
SELECT s.id, s.schedule FROM routine_schedules s WHERE s.id = $1 FOR UPDATE;

-- name: set_time_zone
UPDATE routine_schedules s SET time_zone = $2, reload = true WHERE s.id = $1;

-- name: first_seq
SELECT coalesce(max(d.seq), 0) FROM routine_definitions d WHERE d.schedule_id = $1;

-- name: clear_definition
DELETE FROM routine_definitions d WHERE d.schedule_id = $1;

-- name: write_routine
-- A routine of schedule $1 from a row of its definition ($2: jsonb of text fields: routine,
-- group, external, realtime, runtimes, args, dependencies, computer, seq, command), added or
-- changed; $3 is the seq its place follows when the row gives none. Returns the row's own seq.
INSERT INTO routine_definitions AS d (schedule_id, routine, group_name, external, realtime, runtimes,
                                      args, dependencies, computer, seq, command)
VALUES ($1, $2 ->> 'routine', coalesce($2 ->> 'group', ''), coalesce(($2 ->> 'external')::boolean, false),
        coalesce(($2 ->> 'realtime')::boolean, false), _routine_runtimes($2 ->> 'runtimes'),
        coalesce($2 ->> 'args', ''),
        ARRAY(SELECT btrim(x) FROM unnest(string_to_array(coalesce($2 ->> 'dependencies', ''), ',')) x
              WHERE btrim(x) <> ''),
        coalesce(nullif(btrim($2 ->> 'computer'), ''), _routine_computer($2 ->> 'routine')),
        coalesce(($2 ->> 'seq')::integer, $3 + 1), coalesce($2 ->> 'command', ''))
ON CONFLICT (schedule_id, routine) DO UPDATE
SET group_name = excluded.group_name, external = excluded.external, realtime = excluded.realtime,
    runtimes = excluded.runtimes, args = excluded.args, dependencies = excluded.dependencies,
    computer = excluded.computer,
    seq = CASE WHEN $2 ? 'seq' AND $2 ->> 'seq' IS NOT NULL THEN excluded.seq ELSE d.seq END,
    command = excluded.command
RETURNING ($2 ->> 'seq')::integer;

-- name: missing_dependency
-- The first routine of schedule $1 (named $2) that depends on one the schedule does not list.
SELECT format('routine %s depends on %s, which schedule %s does not list', d.routine, x, $2)
FROM routine_definitions d, unnest(d.dependencies) x
WHERE d.schedule_id = $1
  AND NOT EXISTS (SELECT FROM routine_definitions e WHERE e.schedule_id = $1 AND e.routine = x)
ORDER BY d.seq LIMIT 1;

-- name: dependencies
-- The edges routine → dependency of schedule $1, in the order a cycle is reported in.
SELECT coalesce(array_agg(d.routine ORDER BY d.seq, d.routine, x), '{}'),
       coalesce(array_agg(x ORDER BY d.seq, d.routine, x), '{}')
FROM routine_definitions d, unnest(d.dependencies) x
WHERE d.schedule_id = $1;

-- name: count_routines
SELECT count(*)::integer FROM routine_definitions d WHERE d.schedule_id = $1;

-- name: dependent
-- A routine of schedule $1 that depends on routine $2.
SELECT d.routine FROM routine_definitions d WHERE d.schedule_id = $1 AND $2 = ANY (d.dependencies) LIMIT 1;

-- name: remove_routine
DELETE FROM routine_definitions d WHERE d.schedule_id = $1 AND d.routine = $2 RETURNING d.routine;

-- name: definition
-- Schedule $1's definition as rows of text fields, in its order.
SELECT coalesce(jsonb_agg(jsonb_build_object(
           'routine', d.routine, 'group', d.group_name, 'external', d.external,
           'realtime', d.realtime, 'runtimes', _routine_runtimes_text(d.runtimes),
           'args', d.args, 'dependencies', array_to_string(d.dependencies, ','),
           'computer', d.computer, 'seq', d.seq, 'command', d.command) ORDER BY d.seq, d.routine), '[]')
FROM routine_definitions d WHERE d.schedule_id = $1;

-- name: drop_schedule
DELETE FROM routine_schedules s WHERE s.id = $1;

-- name: may_grant
-- Whether role $1 is a member of role $2, and whether $2 is one of the extension's roles.
SELECT pg_has_role($1, $2, 'MEMBER'), $2 IN ('pgjobs_user'::regrole, 'pgjobs_agent'::regrole);

-- name: set_operator
-- Role $2 granted schedule $1 ($3) or not.
UPDATE routine_schedules s
SET operators = CASE WHEN $3 THEN array_append(array_remove(s.operators, $2), $2)
                     ELSE array_remove(s.operators, $2) END
WHERE s.id = $1;

-- name: ask_reload
UPDATE routine_schedules s SET reload = true WHERE s.id = $1;

-- name: mode
-- Schedule $1's switch, as routine_schedule_list shows it.
SELECT l.mode, l.mode_by, l.mode_at, l.doing, l.state_at, l.not_known
FROM routine_schedule_list l JOIN routine_schedules s ON l.schedule = s.schedule AND l.owner = s.owner::regrole
WHERE s.id = $1;

-- name: set_mode
UPDATE routine_schedules s SET mode = $2, mode_by = $3, mode_at = clock_timestamp() WHERE s.id = $1;

-- name: message
-- A routine's message ($2 level, $3 text) from role $4, kept for each schedule that lists routine
-- $1 and that the role may watch.
INSERT INTO routine_log (schedule_id, routine, level, message, sender)
SELECT s.id, $1, $2, left(_mask_text($3), 4096), $4
FROM routine_schedules s
WHERE EXISTS (SELECT FROM routine_definitions d WHERE d.schedule_id = s.id AND d.routine = $1)
  AND _may_watch($4, s.owner, s.operators)
RETURNING 1;

-- name: commanded
-- Today's row of routine $2 of schedule $1, locked: whether it is the scheduler, whether it is
-- external, whether it is realtime, and whether its run has not finished.
SELECT _routine_is_scheduler(r.routine), r.external, r.realtime, _routine_run_alive(r)
FROM routine_days r JOIN routine_schedules s ON s.id = r.schedule_id AND r.day = s.day
WHERE r.schedule_id = $1 AND r.routine = $2
FOR UPDATE OF r;

-- name: log_command
-- A person's command ($3) of routine $2 of schedule $1, sent by role $4.
SELECT _routine_log_command($1, $2, $3, $4);

-- name: restart_asked
UPDATE routine_days r SET restart_asked_by = $3
FROM routine_schedules s
WHERE r.schedule_id = $1 AND r.routine = $2 AND s.id = r.schedule_id AND r.day = s.day;

-- name: stop_asked
-- Not the scheduler's restart: a realtime routine starts again once silent for 45 s.
UPDATE routine_days r SET restart_asked_by = NULL, ending_since = NULL
FROM routine_schedules s
WHERE r.schedule_id = $1 AND r.routine = $2 AND s.id = r.schedule_id AND r.day = s.day;

-- name: next_look
-- Routine schedules are looked at every 2 seconds.
SELECT $1 + interval '2 seconds' WHERE EXISTS (SELECT FROM routine_schedules);

-- name: groups
-- The caller's routines of today (read as the caller: routines_today shows what it may watch)
-- in groups by $1, realtime ones or not ($2, both when null), of schedule $3 (all when null):
-- each group's key, its status (RUNNING when all run, else its most pressing one), its count,
-- how many fail, and its count per status; the most pressing first.
SELECT g.key, CASE WHEN bool_and(g.status = 'running') THEN 'RUNNING'
                   ELSE _routine_status_word(min(_routine_status_rank(g.status))) END,
       count(*)::integer, count(*) FILTER (WHERE _routine_failing(g.status))::integer,
       (SELECT jsonb_object_agg(c.status, c.n) FROM (
            SELECT t.status, count(*) AS n FROM unnest(array_agg(g.status)) t(status) GROUP BY t.status) c)
FROM (
    SELECT CASE $1 WHEN 'group' THEN t.group_name WHEN 'computer' THEN t.computer
                   WHEN 'status' THEN t.status ELSE t.schedule END AS key,
           t.status
    FROM routines_today t
    WHERE ($2::boolean IS NULL OR t.realtime = $2) AND ($3::text IS NULL OR t.schedule = $3)
) g
GROUP BY g.key
ORDER BY min(_routine_status_rank(g.status)), g.key;
