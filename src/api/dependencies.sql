-- The statements of src/api/dependencies.rs: jobs that wait for jobs (job_dependencies,
-- sql/030_queue.sql), for queue jobs; the release's first two serve batch jobs too.

-- name: key_holders(owner oid, keys text[])
-- The jobs that the owner's idempotency keys $keys name: each key and its job.
SELECT k.idempotency_key, k.job_id
FROM job_keys k WHERE k.owner = $owner AND k.idempotency_key = ANY ($keys);

-- name: mark_waited_on(ids bigint[], owner oid)
-- Of jobs $ids, those of the owner in its own queues (not SQL or batch jobs) that have not
-- finished, marked as waited on. A write, not a lock alone: a finish of one of them (a DELETE)
-- waits for this transaction and then sees the mark, so it releases the jobs this one adds; in
-- repeatable read it fails with 40001 instead of missing them. Rows are locked in id order (a
-- probe each).
UPDATE jobs j SET waited_on = true
WHERE j.id = ANY ($ids) AND j.owner = $owner AND j.claimable_by = $owner
RETURNING j.id;

-- name: finished_dependencies(ids bigint[], owner oid)
-- Of jobs $ids, those of the owner in its own queues that have finished: whether each completed.
SELECT h.id, h.status = 'completed'
FROM job_history h
WHERE h.id = ANY ($ids) AND h.owner = $owner AND NOT _reserved_queue(h.queue);

-- name: hold(job_ids bigint[], on_jobs bigint[], owner oid, waits boolean[], skips boolean[])
-- Jobs $job_ids, just added by the owner, depend on jobs $on_jobs (pairs, in lockstep); $waits
-- says of each pair whether its dependency is still to complete, $skips whether its job is
-- skipped if it does not. Each job records what it depends on; a pair still to complete is a row
-- of job_dependencies, and a job with one is not due (run_at infinity) until its dependencies
-- release it.
WITH pairs AS (
    SELECT *
    FROM unnest($job_ids::bigint[], $on_jobs::bigint[], $waits::boolean[], $skips::boolean[])
         AS p(job_id, on_job, waits, skip)
), waits AS (
    INSERT INTO job_dependencies (on_job, job_id, owner, skip)
    SELECT DISTINCT p.on_job, p.job_id, $owner, p.skip FROM pairs p WHERE p.waits
)
UPDATE jobs j
SET depends_on = d.on_jobs, run_at = CASE WHEN d.waits THEN 'infinity' ELSE j.run_at END
FROM (SELECT p.job_id, array_agg(DISTINCT p.on_job) AS on_jobs, bool_or(p.waits) AS waits
      FROM pairs p GROUP BY p.job_id) d
WHERE j.id = ANY ($job_ids) AND j.id = d.job_id;

-- name: release_waits(completed bigint[])
-- The waits on jobs $completed, which just completed, gone: the jobs that had them, in id order,
-- and those of them that wait for another job too, as this statement sees (see touch_waiting).
WITH gone AS (DELETE FROM job_dependencies d WHERE d.on_job = ANY ($completed) RETURNING d.job_id)
SELECT coalesce(array_agg(DISTINCT g.job_id ORDER BY g.job_id), '{}'),
       coalesce(array_agg(DISTINCT g.job_id ORDER BY g.job_id) FILTER (
           WHERE EXISTS (SELECT FROM job_dependencies o
                         WHERE o.job_id = g.job_id AND o.on_job <> ALL ($completed))),
                '{}')
FROM gone g;

-- name: touch_waiting(ids bigint[])
-- Jobs $ids that still wait to run, written (locked in id order first). Two completions of two
-- dependencies of one job then take turns on its row: the second's next statement sees the
-- first's waits gone (or, in repeatable read, it fails with 40001), so the last to commit is the
-- one that finds no wait left, where each would otherwise have seen the other's still there.
-- Only for jobs with a wait on another job in the snapshot of release_waits: another completion
-- of one of its dependencies, committed or not, leaves its row there, so a job with none has no
-- other completion to take turns with (most jobs of a fan-out have one dependency).
UPDATE jobs j SET last_update = statement_timestamp()
WHERE j.ctid = ANY (ARRAY(
    SELECT w.ctid FROM jobs w WHERE w.id = ANY ($ids) AND w.status = 'created'
    ORDER BY w.id FOR NO KEY UPDATE));

-- name: make_due(ids bigint[])
-- Of queue jobs $ids, those that still wait for dependencies and no longer have one, due now (or
-- when they were asked to run, if later). Returns each with who may claim it, its queue and its
-- place in the claim order (priority, run_at).
UPDATE jobs j SET run_at = greatest(j.due_at, statement_timestamp())
WHERE j.id = ANY ($ids) AND j.status = 'created' AND j.run_at = 'infinity'
  AND j.claimable_by <> _extension_claimant()
  AND NOT EXISTS (SELECT FROM job_dependencies d WHERE d.job_id = j.id)
RETURNING j.id, j.claimable_by, j.queue::text, j.priority, j.run_at;

-- name: dependents(on_jobs bigint[])
-- The jobs that wait for any of jobs $on_jobs.
SELECT d.job_id FROM job_dependencies d WHERE d.on_job = ANY ($on_jobs);

-- name: to_skip(failed bigint[])
-- The jobs that wait for jobs $failed, which ended without completing, and were added to be
-- skipped then (not blocked), in id order: each with why. Locked, and passed over where another
-- transaction holds the row (they stay blocked): the launcher fails jobs whose last lease ran
-- out, and nothing it runs waits for a member.
WITH skipped AS (
    SELECT j.id FROM jobs j
    WHERE j.id IN (SELECT d.job_id FROM job_dependencies d
                   WHERE d.on_job = ANY ($failed) AND d.skip)
      AND j.status = 'created'
    ORDER BY j.id
    FOR UPDATE OF j SKIP LOCKED
)
SELECT d.job_id, 'skipped: ' || string_agg(format('job %s %s', d.on_job,
                                                   coalesce(h.status::text, 'ended without completing')),
                                            '; ' ORDER BY d.on_job)
FROM job_dependencies d
JOIN skipped s ON s.id = d.job_id
LEFT JOIN job_history h ON h.id = d.on_job
WHERE d.on_job = ANY ($failed) AND d.skip
GROUP BY d.job_id
ORDER BY d.job_id;

-- name: forget_waits(job_ids bigint[])
-- The waits of jobs $job_ids, which finished while waiting for dependencies (aborted).
DELETE FROM job_dependencies d WHERE d.job_id = ANY ($job_ids);

-- name: unblock(id bigint, owner oid)
-- The owner's (any owner's when null) queue job $id, if it waits for dependencies: its waits gone
-- and due now (or when it was asked to run, if later). Returns it as make_due does.
WITH gone AS (
    DELETE FROM job_dependencies d
    WHERE d.job_id = $id
      AND EXISTS (SELECT FROM jobs j WHERE j.id = $id AND ($owner::oid IS NULL OR j.owner = $owner)
                                       AND j.claimable_by <> _extension_claimant())
)
UPDATE jobs j SET run_at = greatest(j.due_at, statement_timestamp())
WHERE j.id = $id AND ($owner::oid IS NULL OR j.owner = $owner) AND j.status = 'created'
  AND j.run_at = 'infinity' AND j.claimable_by <> _extension_claimant()
RETURNING j.id, j.claimable_by, j.queue::text, j.priority, j.run_at;

-- name: live_queue_job(id bigint, owner oid)
-- The owner's (any owner's when null) queue job $id, if it has not finished: whether it waits to
-- run and was added with dependencies (which have released it), and when it is due.
SELECT j.status = 'created' AND j.depends_on IS NOT NULL, j.run_at
FROM jobs j
WHERE j.id = $id AND ($owner::oid IS NULL OR j.owner = $owner)
  AND j.claimable_by <> _extension_claimant();

-- name: dependency_results(id bigint, lease_token uuid, owner oid)
-- What job $id, held with $lease_token by the owner (any when null), depends on, in id order:
-- each dependency's status, result and, unless it completed, its last error (a dependency that a
-- queue keeping no history dropped has none). No row: the token holds no lease on the job; one
-- row of nulls: the job depends on nothing.
SELECT d.id, coalesce(h.status::text, l.status::text), h.result,
       CASE WHEN h.status <> 'completed' THEN h.errors -> -1 ->> 'error' END
FROM jobs j
LEFT JOIN LATERAL unnest(j.depends_on) AS d(id) ON true
LEFT JOIN job_history h ON h.id = d.id AND h.owner = j.owner
LEFT JOIN jobs l ON l.id = d.id AND l.owner = j.owner
WHERE j.id = $id AND j.lease_token = $lease_token AND j.status = 'started'
  AND ($owner::oid IS NULL OR j.owner = $owner)
ORDER BY d.id;
