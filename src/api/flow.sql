-- The statements of src/api/flow.rs: what an identity says about when its queues' jobs may be
-- claimed (sql/030_queue.sql: queue_pauses).

-- name: pause
-- Pauses owner $1's queue $2 for role $3, unless it is paused already: the pause in force.
INSERT INTO queue_pauses AS p (owner, queue, paused_at, paused_by)
VALUES ($1, $2, statement_timestamp(), $3::regrole)
ON CONFLICT (owner, queue) DO UPDATE SET queue = p.queue
RETURNING p.paused_at, p.paused_by;

-- name: resume
-- Resumes owner $1's queue $2 and wakes its idle workers (at commit, as an add does): a row if
-- it was paused.
WITH resumed AS (
    DELETE FROM queue_pauses p WHERE p.owner = $1 AND p.queue = $2
    RETURNING p.owner, p.queue
)
SELECT pg_notify('pgjobs_ready', _ready_signal(r.owner, r.queue)) FROM resumed r;
