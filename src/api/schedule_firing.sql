-- The statements of src/api/schedule_firing.rs: $at is the time fired at, $grace the grace of
-- slots on time (pg_jobs.refresh_interval).

-- name: due(at timestamptz, grace interval, only_id bigint)
-- The due schedules (all, or only the one of id $only_id), locked, each with the latest of its
-- slots since it last fired and the jobs to add for the slots it fires, oldest first. Each slot's
-- job carries the key scheduled_job:<id>:<slot>, so however many schedulers fire, a slot runs
-- once. Slots within the grace $grace of $at are on time; older ones were missed (no scheduler
-- ran) and follow the schedule's rule: skip passes them over, once fires the latest of them, all
-- the latest max_catch_up slots.
-- (The rule is a condition here rather than a function of the slots: a SQL function with a
-- subquery is not inlined, and its executor, set up for each schedule, took 9 µs of one's 50.)
WITH due AS (
    SELECT x.id, x.owner, x.work, x.options, x.last_slot, x.missed, x.max_catch_up,
           _schedule_slots(x.schedule, x.time_zone, x.last_slot, $at, x.max_catch_up + 1) AS slots
    FROM schedules x
    WHERE x.enabled AND x.next_slot <= $at AND ($only_id::bigint IS NULL OR x.id = $only_id)
    FOR UPDATE SKIP LOCKED
)
SELECT d.id, d.owner, coalesce(d.slots[cardinality(d.slots)], d.last_slot),
       ARRAY(SELECT _scheduled_spec(d.work, d.options, f.slot,
                        format('scheduled_job:%s:%s', d.id,
                               to_char(f.slot AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')))
             FROM unnest(d.slots) WITH ORDINALITY AS f(slot, n)
             WHERE CASE d.missed
                       WHEN 'all' THEN f.n > cardinality(d.slots) - d.max_catch_up
                       -- The slots are in order: the latest missed one is the last, or followed
                       -- by one on time.
                       WHEN 'once' THEN f.slot > $at - $grace OR f.n = cardinality(d.slots)
                                        OR d.slots[f.n + 1] > $at - $grace
                       ELSE f.slot > $at - $grace
                   END
             ORDER BY f.slot)
FROM due d
ORDER BY d.id;

-- name: due_ids(at timestamptz)
-- The due schedules, one by one when their slots cannot be computed together.
SELECT x.id FROM schedules x
WHERE x.enabled AND x.next_slot <= $at
ORDER BY x.id
FOR UPDATE SKIP LOCKED;

-- name: passed(at timestamptz, grace interval, passed_ids bigint[], latest_slots timestamptz[],
--     failed_ids bigint[], errors text[], fired_ids bigint[], last_jobs bigint[])
-- The due schedules ($passed_ids, each with the latest of its slots in $latest_slots, null where
-- they could not be computed), the failed ones among them ($failed_ids, with their $errors) and
-- the jobs the others added ($fired_ids, each with the job of its latest slot in $last_jobs), in
-- one update of each. A failed schedule retries at its next slot; the slots it could not fire are
-- passed over. One whose slots could not be computed has no next slot to compute either: it is
-- tried again after the grace.
UPDATE schedules x
SET last_slot = CASE WHEN e.message IS NULL THEN d.latest_slot ELSE $at END,
    next_slot = CASE WHEN d.latest_slot IS NULL THEN $at + $grace
                     ELSE schedule_next_slot(x.schedule, x.time_zone, $at) END,
    last_error = e.message,
    last_job_id = coalesce(f.job, x.last_job_id)
FROM unnest($passed_ids::bigint[], $latest_slots::timestamptz[]) AS d(id, latest_slot)
LEFT JOIN unnest($failed_ids::bigint[], $errors::text[]) AS e(id, message) ON e.id = d.id
LEFT JOIN unnest($fired_ids::bigint[], $last_jobs::bigint[]) AS f(id, job) ON f.id = d.id
WHERE x.id = d.id;

-- name: next_slot
SELECT min(s.next_slot) FROM schedules s WHERE s.enabled;
