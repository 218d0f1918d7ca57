-- The statements of src/api/due.rs, run by the launcher.

-- name: next_due(claimants oid[], queues text[], after timestamptz)
-- The earliest job due after $after (the time the queues were woken at) of each queue
-- ($claimants[i]'s $queues[i]), in their order (null: none). By the ready index, whose order within a queue is by priority first: one probe for each
-- priority the queue has jobs of (found one probe each, a skip scan), so that a queue of a
-- million jobs due later is read in as few probes as one of ten. A job waiting for dependencies
-- (due at infinity) is not due later.
SELECT (WITH RECURSIVE priorities(p) AS (
            SELECT (SELECT min(j.priority) FROM jobs j
                    WHERE j.claimable_by = q.claimant AND hashtextextended(j.queue, 0) = hashtextextended(q.queue, 0)
                      AND j.queue = q.queue)
            UNION ALL
            SELECT (SELECT min(j.priority) FROM jobs j
                    WHERE j.claimable_by = q.claimant AND hashtextextended(j.queue, 0) = hashtextextended(q.queue, 0)
                      AND j.queue = q.queue AND j.priority > p.p)
            FROM priorities p WHERE p.p IS NOT NULL
        )
        SELECT min((SELECT min(j.run_at) FROM jobs j
                    WHERE j.claimable_by = q.claimant AND hashtextextended(j.queue, 0) = hashtextextended(q.queue, 0)
                      AND j.queue = q.queue AND j.priority = p.p
                      AND j.run_at > $after AND j.run_at < 'infinity'))
        FROM priorities p WHERE p.p IS NOT NULL)
FROM unnest($claimants::oid[], $queues::text[]) WITH ORDINALITY AS q(claimant, queue, n)
ORDER BY q.n;

-- name: seeded(after timestamptz)
-- Each queue's earliest job due after $after (and not at infinity), of the queues members'
-- workers claim: what the places start from when the launcher first works in a database after
-- the server started (shared memory is new). One read of jobs, once.
SELECT j.claimable_by, j.queue::text, min(j.run_at)
FROM jobs j
WHERE j.status = 'created' AND j.run_at > $after AND j.run_at < 'infinity'
  AND j.claimable_by <> _extension_claimant()
GROUP BY 1, 2;
