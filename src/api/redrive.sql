-- The statements of src/api/redrive.rs: failed and aborted jobs brought back from job_history,
-- and the dead-letter queues their failures are copied to (queue_dead_letters,
-- sql/040_history.sql; the copy is made by queue.sql's finish).

-- name: set_dead_letter
-- Owner $1's queue $2 sends copies of the jobs that fail their last attempt to queue $3, as set by
-- role $4.
INSERT INTO queue_dead_letters AS d (owner, queue, dead_letter_queue, set_at, set_by)
VALUES ($1, $2, $3, statement_timestamp(), $4::regrole)
ON CONFLICT (owner, queue) DO UPDATE
SET dead_letter_queue = excluded.dead_letter_queue, set_at = excluded.set_at, set_by = excluded.set_by;

-- name: remove_dead_letter
DELETE FROM queue_dead_letters d WHERE d.owner = $1 AND d.queue = $2;

-- name: retry
-- Jobs $1 of owner $2 (any when null) that failed or were aborted, out of job_history and back
-- into jobs with the same id, due now, attempts fresh, errors kept; the settings history kept for
-- them, else $3 .. $5 (backoff, max_backoff, lease). The rows are locked first, so that two
-- retries of one job bring it back once: the second finds the row gone. A job whose key rule is
-- `replace` gets its key back (its finish gave it up, unless a hand-over of it rolled back: then
-- the key still names the job), and stays where it is if another job has taken the key since. Returns each job brought back, who may claim it, its queue and its place
-- in the claim order (priority, run_at), its owner and what it was added to wait for.
WITH chosen AS (
    SELECT h.id, h.owner, h.idempotency_key, h.key_rule, h.due_at
    FROM job_history h
    WHERE h.id = ANY ($1) AND ($2::oid IS NULL OR h.owner = $2)
      AND h.status IN ('failed', 'aborted') AND NOT _reserved_queue(h.queue)
    FOR UPDATE
), keys AS (
    INSERT INTO job_keys (owner, idempotency_key, job_id, due_at)
    SELECT c.owner, c.idempotency_key, c.id, c.due_at FROM chosen c WHERE c.key_rule = 'replace'
    ON CONFLICT DO NOTHING
    RETURNING job_id
), moved AS (
    DELETE FROM job_history h USING chosen c
    WHERE h.id = ANY ($1) AND h.id = c.id
      AND (c.key_rule IS DISTINCT FROM 'replace' OR c.id IN (SELECT k.job_id FROM keys k)
           OR EXISTS (SELECT FROM job_keys k
                      WHERE k.owner = c.owner AND k.idempotency_key = c.idempotency_key AND k.job_id = c.id))
    RETURNING h.*
)
INSERT INTO jobs (id, owner, claimable_by, task, queue, priority, run_at, max_attempts, backoff,
                  max_backoff, lease, payload, errors, idempotency_key, key_rule, due_at,
                  start_time, name, description, link, listed, concurrency_key, depends_on, waited_on)
SELECT m.id, m.owner, m.owner, m.task, m.queue, m.priority, statement_timestamp(), m.max_attempts,
       coalesce(m.backoff, $3), coalesce(m.max_backoff, $4), coalesce(m.lease, $5), m.payload,
       m.errors, m.idempotency_key, m.key_rule, m.due_at, m.start_time, m.name, m.description,
       m.link, m.listed, m.concurrency_key, m.depends_on,
       -- The jobs its failure blocked wait for it again, and its completion releases them.
       CASE WHEN EXISTS (SELECT FROM job_dependencies d WHERE d.on_job = m.id) THEN true END
FROM moved m
RETURNING id, claimable_by, queue::text, priority, run_at, owner, depends_on;

-- name: retry_chosen
-- The oldest $6 (by id) of owner $1's (any when null) failed and aborted jobs of queue $2, of task
-- $3, due in the month of $4 and whose last error contains $5 (each when not null), for retry;
-- not those whose `replace` key another job holds, which retry would leave where they are, so
-- that calls until one brings back nothing do not stop at them.
SELECT array_agg(c.id)
FROM (SELECT h.id
      FROM job_history h
      WHERE ($1::oid IS NULL OR h.owner = $1) AND h.queue = $2
        AND h.status IN ('failed', 'aborted')
        AND NOT (h.key_rule = 'replace'
                 AND EXISTS (SELECT FROM job_keys k WHERE k.owner = h.owner AND k.idempotency_key = h.idempotency_key
                                                      AND k.job_id <> h.id))
        AND ($3::text IS NULL OR h.task = $3)
        AND ($4::date IS NULL OR _utc_month(h.due_at) = date_trunc('month', $4)::date)
        AND ($5::text IS NULL OR strpos(h.errors -> -1 ->> 'error', $5) > 0)
      ORDER BY h.id
      LIMIT $6) c;

-- name: reschedule
-- Owner $2's (any owner's when null) jobs $1 that wait to run, due at $3 (now when null) instead;
-- not a leased job, one waiting for its dependencies (run_at infinity: jobs_unblock) or one of
-- the extension's queues. When each was first due (due_at: its month, its turn under an ordered
-- key) stays, as a snooze leaves it. Returns each job moved, in id order, with when it is due, who
-- may claim it, its queue and its priority.
WITH moved AS (
    UPDATE jobs j SET run_at = coalesce($3, statement_timestamp())
    WHERE j.id = ANY ($1) AND ($2::oid IS NULL OR j.owner = $2) AND j.status = 'created'
      AND j.run_at <> 'infinity' AND j.claimable_by <> _extension_claimant()
    RETURNING j.id, j.run_at, j.claimable_by, j.queue::text AS queue, j.priority
)
SELECT m.id, m.run_at, m.claimable_by, m.queue, m.priority FROM moved m ORDER BY m.id;

-- name: deletable
-- Owner $2's (any owner's when null) jobs $1 that wait to run, not the extension's: their ids,
-- owners and keys, for jobs_delete to abort and then forget. A claim that takes one meanwhile
-- wins: the abort is fenced by the waiting status.
SELECT array_agg(j.id), array_agg(j.owner), array_agg(j.idempotency_key)
FROM jobs j
WHERE j.id = ANY ($1) AND ($2::oid IS NULL OR j.owner = $2) AND j.status = 'created'
  AND j.claimable_by <> _extension_claimant();

-- name: forget_deleted
-- Jobs $1, just aborted by jobs_delete, out of job_history, and their keys free (a `skip` key
-- would go on naming its job): $2 .. $4 are the ids, owners and keys of the jobs it chose.
WITH gone AS (
    DELETE FROM job_history h WHERE h.id = ANY ($1) AND h.status = 'aborted'
)
DELETE FROM job_keys k
USING unnest($2::bigint[], $3::oid[], $4::text[]) AS d(id, owner, idempotency_key)
WHERE d.id = ANY ($1) AND k.owner = d.owner AND k.idempotency_key = d.idempotency_key
  AND k.job_id = d.id;
