-- The statements of src/api/redrive.rs: failed and aborted jobs brought back from job_history,
-- and the dead-letter queues their failures are copied to (queue_dead_letters,
-- sql/040_history.sql; the copy is made by queue.sql's finish).

-- name: set_dead_letter(owner oid, queue text, dead_letter_queue text, set_by oid)
-- The owner's queue sends copies of the jobs that fail their last attempt to queue
-- $dead_letter_queue, as set by role $set_by.
INSERT INTO queue_dead_letters AS d (owner, queue, dead_letter_queue, set_at, set_by)
VALUES ($owner, $queue, $dead_letter_queue, statement_timestamp(), $set_by::regrole)
ON CONFLICT (owner, queue) DO UPDATE
SET dead_letter_queue = excluded.dead_letter_queue, set_at = excluded.set_at, set_by = excluded.set_by;

-- name: remove_dead_letter(owner oid, queue text)
DELETE FROM queue_dead_letters d WHERE d.owner = $owner AND d.queue = $queue;

-- name: retry(ids bigint[], owner oid, default_backoff interval, default_max_backoff interval,
--             default_lease interval)
-- Jobs $ids of the owner (any when null) that failed or were aborted, out of job_history and
-- back into jobs with the same id, due now, attempts fresh, errors kept; the settings history
-- kept for them, else the defaults given (pg_jobs.backoff, pg_jobs.max_backoff, pg_jobs.lease).
-- The rows are locked first, so that two retries of one job bring it back once: the second finds
-- the row gone. A job whose key rule is `replace` gets its key back (its finish gave it up,
-- unless a hand-over of it rolled back: then the key still names the job), and stays where it is
-- if another job has taken the key since. Returns each job brought back, who may claim it, its
-- queue and its place in the claim order (priority, run_at), its owner and what it was added to
-- wait for.
WITH chosen AS (
    SELECT h.id, h.owner, h.idempotency_key, h.key_rule, h.due_at
    FROM job_history h
    WHERE h.id = ANY ($ids) AND ($owner::oid IS NULL OR h.owner = $owner)
      AND h.status IN ('failed', 'aborted') AND NOT _reserved_queue(h.queue)
    FOR UPDATE
), keys AS (
    INSERT INTO job_keys (owner, idempotency_key, job_id, due_at)
    SELECT c.owner, c.idempotency_key, c.id, c.due_at FROM chosen c WHERE c.key_rule = 'replace'
    ON CONFLICT DO NOTHING
    RETURNING job_id
), moved AS (
    DELETE FROM job_history h USING chosen c
    WHERE h.id = ANY ($ids) AND h.id = c.id
      AND (c.key_rule IS DISTINCT FROM 'replace' OR c.id IN (SELECT k.job_id FROM keys k)
           OR EXISTS (SELECT FROM job_keys k
                      WHERE k.owner = c.owner AND k.idempotency_key = c.idempotency_key AND k.job_id = c.id))
    RETURNING h.*
)
INSERT INTO jobs (id, owner, claimable_by, task, queue, priority, run_at, max_attempts, backoff,
                  max_backoff, lease, payload, errors, idempotency_key, key_rule, due_at,
                  start_time, name, description, link, listed, concurrency_key, depends_on, waited_on)
SELECT m.id, m.owner, m.owner, m.task, m.queue, m.priority, statement_timestamp(), m.max_attempts,
       coalesce(m.backoff, $default_backoff), coalesce(m.max_backoff, $default_max_backoff),
       coalesce(m.lease, $default_lease), m.payload,
       m.errors, m.idempotency_key, m.key_rule, m.due_at, m.start_time, m.name, m.description,
       m.link, m.listed, m.concurrency_key, m.depends_on,
       -- The jobs its failure blocked wait for it again, and its completion releases them.
       CASE WHEN EXISTS (SELECT FROM job_dependencies d WHERE d.on_job = m.id) THEN true END
FROM moved m
RETURNING id, claimable_by, queue::text, priority, run_at, owner, depends_on;

-- name: retry_chosen(owner oid, queue text, task text, month date, error text,
--                    max_jobs integer)
-- The oldest $max_jobs (by id) of the owner's (any when null) failed and aborted jobs of $queue,
-- of $task, due in the month of $month and whose last error contains $error (each when not
-- null), for retry; not those whose `replace` key another job holds, which retry would leave
-- where they are, so that calls until one brings back nothing do not stop at them.
SELECT array_agg(c.id)
FROM (SELECT h.id
      FROM job_history h
      WHERE ($owner::oid IS NULL OR h.owner = $owner) AND h.queue = $queue
        AND h.status IN ('failed', 'aborted')
        AND NOT (h.key_rule = 'replace'
                 AND EXISTS (SELECT FROM job_keys k WHERE k.owner = h.owner AND k.idempotency_key = h.idempotency_key
                                                      AND k.job_id <> h.id))
        AND ($task::text IS NULL OR h.task = $task)
        AND ($month::date IS NULL OR _utc_month(h.due_at) = date_trunc('month', $month)::date)
        AND ($error::text IS NULL OR strpos(h.errors -> -1 ->> 'error', $error) > 0)
      ORDER BY h.id
      LIMIT $max_jobs) c;

-- name: reschedule(ids bigint[], owner oid, run_at timestamptz)
-- The owner's (any owner's when null) jobs $ids that wait to run, due at $run_at (now when null)
-- instead; not a leased job, one waiting for its dependencies (run_at infinity: jobs_unblock) or
-- one of the extension's queues. When each was first due (due_at: its month, its turn under an
-- ordered key) stays, as a snooze leaves it. Returns each job moved, in id order, with when it is
-- due, who may claim it, its queue and its priority.
WITH moved AS (
    UPDATE jobs j SET run_at = coalesce($run_at, statement_timestamp())
    WHERE j.id = ANY ($ids) AND ($owner::oid IS NULL OR j.owner = $owner) AND j.status = 'created'
      AND j.run_at <> 'infinity' AND j.claimable_by <> _extension_claimant()
    RETURNING j.id, j.run_at, j.claimable_by, j.queue::text AS queue, j.priority
)
SELECT m.id, m.run_at, m.claimable_by, m.queue, m.priority FROM moved m ORDER BY m.id;

-- name: deletable(ids bigint[], owner oid)
-- The owner's (any owner's when null) jobs $ids that wait to run, not the extension's: their ids,
-- owners and keys, for jobs_delete to abort and then forget. A claim that takes one meanwhile
-- wins: the abort is fenced by the waiting status.
SELECT array_agg(j.id), array_agg(j.owner), array_agg(j.idempotency_key)
FROM jobs j
WHERE j.id = ANY ($ids) AND ($owner::oid IS NULL OR j.owner = $owner) AND j.status = 'created'
  AND j.claimable_by <> _extension_claimant();

-- name: forget_deleted(aborted bigint[], chosen_ids bigint[], chosen_owners oid[],
--                      chosen_keys text[])
-- Jobs $aborted, just aborted by jobs_delete, out of job_history, and their keys free (a `skip`
-- key would go on naming its job): $chosen_ids, $chosen_owners and $chosen_keys are the ids,
-- owners and keys of the jobs it chose (deletable's).
WITH gone AS (
    DELETE FROM job_history h WHERE h.id = ANY ($aborted) AND h.status = 'aborted'
)
DELETE FROM job_keys k
USING unnest($chosen_ids::bigint[], $chosen_owners::oid[], $chosen_keys::text[])
      AS d(id, owner, idempotency_key)
WHERE d.id = ANY ($aborted) AND k.owner = d.owner AND k.idempotency_key = d.idempotency_key
  AND k.job_id = d.id;
