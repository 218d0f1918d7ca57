-- The statements of src/api/batch_waits.rs, run as the extension's owner.

-- name: upstream(ids bigint[], at_most integer)
-- The jobs that jobs $ids wait for, through job_dependencies, and those they wait for, and so on,
-- $at_most of them at most. Each job is visited once (UNION keeps the set of those seen), so the
-- work grows with the jobs and their waits, not with the paths between them; the recursion is
-- read as far as the limit asks and no further.
WITH RECURSIVE upstream(id) AS (
    SELECT d FROM unnest($ids::bigint[]) d
    UNION
    SELECT b.on_job FROM job_dependencies b JOIN upstream u ON b.job_id = u.id
)
SELECT coalesce(array_agg(u.id), '{}') FROM (SELECT u.id FROM upstream u LIMIT $at_most) u;

-- name: step_back(job bigint, reached bigint[], path bigint[])
-- A job of $reached that waits for $job and is not on $path yet: a step back along a cycle.
SELECT b.job_id FROM job_dependencies b
WHERE b.on_job = $job AND b.job_id = ANY ($reached) AND b.job_id <> ALL ($path)
ORDER BY b.job_id LIMIT 1;

-- name: unwaited(ids bigint[])
-- Of the jobs $ids, those that still wait to run and no longer wait for a dependency.
SELECT coalesce(array_agg(j.id), '{}') FROM jobs j
WHERE j.id = ANY ($ids) AND j.status = 'created'
  AND NOT EXISTS (SELECT FROM job_dependencies b WHERE b.job_id = j.id);

-- name: lock_waiting(ids bigint[])
-- The jobs $ids that still wait to run, locked in id order.
SELECT FROM jobs j WHERE j.id = ANY ($ids) AND j.status = 'created'
ORDER BY j.id FOR NO KEY UPDATE OF j;

-- name: due_now(ids bigint[])
-- The jobs $ids wait for nothing any more: due now, or at the time they were posted for if later.
WITH unwaited AS (DELETE FROM job_dependencies b WHERE b.job_id = ANY ($ids))
UPDATE jobs j
SET run_at = greatest(coalesce((j.payload ->> 'run_at')::timestamptz, '-infinity'), statement_timestamp()),
    last_update = statement_timestamp()
WHERE j.id = ANY ($ids) AND j.status = 'created';

-- name: wake(ids bigint[])
-- Wakes the agents of the queues of the jobs $ids, pending again (NOTIFY pgjobs_ready).
SELECT pg_notify('pgjobs_ready', _ready_signal(_extension_claimant(), q.queue))
FROM (SELECT DISTINCT j.queue::text AS queue FROM jobs j WHERE j.id = ANY ($ids)) q;
