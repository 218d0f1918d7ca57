-- The statements of src/api/schedules.rs.

-- name: check_work
-- The job a slot would add, checked now, so that a schedule never fires a job that cannot be
-- added ($1 work, $2 options).
SELECT _check_spec(_scheduled_spec($1, $2, now(), 'check'), $1 ? 'sql', true);

-- name: insert
-- $1 name, $2 owner, $3 schedule, $4 time zone, $5 work, $6 options.
INSERT INTO schedules (name, owner, schedule, time_zone, work, options, missed, max_catch_up,
                       enabled, last_slot, next_slot)
VALUES ($1, $2, $3, $4, $5, $6, coalesce($6 ->> 'missed', 'skip'),
        coalesce(($6 ->> 'max_catch_up')::integer, 100), coalesce(($6 ->> 'enabled')::boolean, true),
        statement_timestamp(), schedule_next_slot($3, $4, statement_timestamp()))
ON CONFLICT (owner, name) DO NOTHING
RETURNING id;

-- name: lock
-- The caller's schedule of that name ($1, owner $2), with the options it would have once $3 is
-- merged into them; another owner's is as missing as one that never was.
SELECT s.id, s.schedule, s.work, s.options || coalesce($3, '{}')
FROM schedules s WHERE s.name = $1 AND s.owner = $2
FOR UPDATE;

-- name: update
-- $1 id, $2 schedule, $3 time zone, $4 work (null: unchanged), $5 options.
UPDATE schedules s
SET schedule = $2, time_zone = $3, work = coalesce($4, s.work), options = $5,
    missed = coalesce($5 ->> 'missed', 'skip'),
    max_catch_up = coalesce(($5 ->> 'max_catch_up')::integer, 100),
    enabled = coalesce(($5 ->> 'enabled')::boolean, true),
    -- A new timing starts from now: no slot of the old one is fired late.
    last_slot = CASE WHEN $2 <> s.schedule OR $3 <> s.time_zone
                     THEN statement_timestamp() ELSE s.last_slot END,
    next_slot = schedule_next_slot($2, $3, greatest(statement_timestamp(), s.last_slot)),
    updated_at = statement_timestamp()
WHERE s.id = $1;

-- name: delete
DELETE FROM schedules s WHERE s.name = $1 AND s.owner = $2
RETURNING s.id;

-- name: run_now
-- The caller's schedule of that name ($1, owner $2), with the job a slot of this second would add
-- (the key of that slot: a second run now, or the slot itself, finds the job this one adds).
SELECT s.id, _scheduled_spec(s.work, s.options, date_trunc('second', statement_timestamp()),
                             format('scheduled_job:%s:%s', s.id,
                                    to_char(date_trunc('second', statement_timestamp()) AT TIME ZONE 'UTC',
                                            'YYYY-MM-DD"T"HH24:MI:SS"Z"')))
FROM schedules s WHERE s.name = $1 AND s.owner = $2;

-- name: ran
-- Schedule $1's last job is $2.
UPDATE schedules s SET last_job_id = $2 WHERE s.id = $1;
