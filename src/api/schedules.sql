-- The statements of src/api/schedules.rs.

-- name: check_work(work jsonb, options jsonb)
-- The job a slot would add, checked now, so that a schedule never fires a job that cannot be
-- added.
SELECT _check_spec(_scheduled_spec($work, $options, now(), 'check'), $work ? 'sql', true);

-- name: insert(name text, owner oid, schedule text, time_zone text, work jsonb, options jsonb)
INSERT INTO schedules (name, owner, schedule, time_zone, work, options, missed, max_catch_up,
                       enabled, last_slot, next_slot)
VALUES ($name, $owner, $schedule, $time_zone, $work, $options,
        coalesce($options ->> 'missed', 'skip'),
        coalesce(($options ->> 'max_catch_up')::integer, 100),
        coalesce(($options ->> 'enabled')::boolean, true),
        statement_timestamp(), schedule_next_slot($schedule, $time_zone, statement_timestamp()))
ON CONFLICT (owner, name) DO NOTHING
RETURNING id;

-- name: lock(name text, owner oid, options jsonb)
-- The schedule named $name of the owner (the caller), with the options it would have once
-- $options is merged into them; another owner's is as missing as one that never was.
SELECT s.id, s.schedule, s.work, s.options || coalesce($options, '{}')
FROM schedules s WHERE s.name = $name AND s.owner = $owner
FOR UPDATE;

-- name: update(id bigint, schedule text, time_zone text, work jsonb, options jsonb)
-- The work is left as it is where $work is null.
UPDATE schedules s
SET schedule = $schedule, time_zone = $time_zone, work = coalesce($work, s.work),
    options = $options,
    missed = coalesce($options ->> 'missed', 'skip'),
    max_catch_up = coalesce(($options ->> 'max_catch_up')::integer, 100),
    enabled = coalesce(($options ->> 'enabled')::boolean, true),
    -- A new timing starts from now: no slot of the old one is fired late.
    last_slot = CASE WHEN $schedule <> s.schedule OR $time_zone <> s.time_zone
                     THEN statement_timestamp() ELSE s.last_slot END,
    next_slot = schedule_next_slot($schedule, $time_zone,
                                   greatest(statement_timestamp(), s.last_slot)),
    updated_at = statement_timestamp()
WHERE s.id = $id;

-- name: delete(name text, owner oid)
DELETE FROM schedules s WHERE s.name = $name AND s.owner = $owner
RETURNING s.id;

-- name: run_now(name text, owner oid)
-- The schedule named $name of the owner (the caller), with the job a slot of this second would
-- add (the key of that slot: a second run now, or the slot itself, finds the job this one adds).
SELECT s.id, _scheduled_spec(s.work, s.options, date_trunc('second', statement_timestamp()),
                             format('scheduled_job:%s:%s', s.id,
                                    to_char(date_trunc('second', statement_timestamp()) AT TIME ZONE 'UTC',
                                            'YYYY-MM-DD"T"HH24:MI:SS"Z"')))
FROM schedules s WHERE s.name = $name AND s.owner = $owner;

-- name: ran(id bigint, job bigint)
-- The schedule's last job is $job.
UPDATE schedules s SET last_job_id = $job WHERE s.id = $id;
