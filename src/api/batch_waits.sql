-- The statements of src/api/batch_waits.rs, run as the extension's owner.

-- name: upstream
-- The jobs that jobs $1 wait for, through job_dependencies, and those they wait for, and so on, $2 at
-- most. Each job is visited once (UNION keeps the set of those seen), so the work grows with the
-- jobs and their waits, not with the paths between them; the recursion is read as far as the
-- limit asks and no further.
WITH RECURSIVE upstream(id) AS (
    SELECT d FROM unnest($1::bigint[]) d
    UNION
    SELECT b.on_job FROM job_dependencies b JOIN upstream u ON b.job_id = u.id
)
SELECT coalesce(array_agg(u.id), '{}') FROM (SELECT u.id FROM upstream u LIMIT $2) u;

-- name: step_back
-- A job of $2 that waits for job $1 and is not one of $3: a step back along a cycle.
SELECT b.job_id FROM job_dependencies b
WHERE b.on_job = $1 AND b.job_id = ANY ($2) AND b.job_id <> ALL ($3)
ORDER BY b.job_id LIMIT 1;

-- name: unwaited
-- Of jobs $1, those that still wait to run and no longer wait for a dependency.
SELECT coalesce(array_agg(j.id), '{}') FROM jobs j
WHERE j.id = ANY ($1) AND j.status = 'created'
  AND NOT EXISTS (SELECT FROM job_dependencies b WHERE b.job_id = j.id);

-- name: lock_waiting
-- Jobs $1 that still wait to run, locked in id order.
SELECT FROM jobs j WHERE j.id = ANY ($1) AND j.status = 'created' ORDER BY j.id FOR NO KEY UPDATE OF j;

-- name: due_now
-- Jobs $1 wait for nothing any more: due now, or at the time they were posted for if later.
WITH unwaited AS (DELETE FROM job_dependencies b WHERE b.job_id = ANY ($1))
UPDATE jobs j
SET run_at = greatest(coalesce((j.payload ->> 'run_at')::timestamptz, '-infinity'), statement_timestamp()),
    last_update = statement_timestamp()
WHERE j.id = ANY ($1) AND j.status = 'created';

-- name: wake
-- Wakes the agents of the queues of jobs $1, pending again (NOTIFY pgjobs_ready).
SELECT pg_notify('pgjobs_ready', _ready_signal(_extension_claimant(), q.queue))
FROM (SELECT DISTINCT j.queue::text AS queue FROM jobs j WHERE j.id = ANY ($1)) q;
