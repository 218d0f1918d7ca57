-- The statements of src/api/batch_agent.rs: the agent's side of batch jobs. A statement joining
-- jobs to ids it was given also names them in `j.id = ANY (...)`, which only the primary key
-- serves, so the jobs are read by probes whatever the statistics say (src/api/queue.sql, finish).

-- name: agent_of
SELECT c.agent FROM batch_computers c WHERE c.computer = $1;

-- name: register
-- Computer $1 for the agent identity $2, unless another agent registered it first.
INSERT INTO batch_computers (computer, agent, capacity, info) VALUES ($1, $2, $3, coalesce($4, '{}'))
ON CONFLICT ON CONSTRAINT batch_computers_pkey DO NOTHING;

-- name: registered_again
UPDATE batch_computers c SET capacity = $2, info = coalesce($3, '{}'), last_seen = now()
WHERE c.computer = $1;

-- name: forget_computer
-- Computer $1 forgotten, as far as the caller may (row-level security: an administrator).
DELETE FROM batch_computers c WHERE c.computer = $1 RETURNING c.computer;

-- name: ready_signals
SELECT ARRAY[_ready_signal(_extension_claimant(), _batch_queue($1)),
             _ready_signal(_extension_claimant(), _batch_queue('ANY'))];

-- name: cancel_signal
SELECT _batch_cancel_signal($1);

-- name: seen
UPDATE batch_computers c SET last_seen = now()
WHERE c.computer = $1 AND c.last_seen < now() - interval '10 seconds';

-- name: claim
-- Up to $2 jobs for computer $1 or for ANY, leased for pg_jobs.batch_silence: their ids in order.
SELECT array_agg(c.id ORDER BY c.ord)
FROM _claim(_extension_claimant(), ARRAY[_batch_queue($1), _batch_queue('ANY')], $2, _batch_silence(), $1)
     WITH ORDINALITY AS c(id, attempt, lease_token, task, payload, locked_until, ord);

-- name: claimed
SELECT j.id, j.lease_token, j.attempt, j.task::text, j.payload ->> 'routine', j.payload ->> 'command',
       _text_array(j.payload -> 'args'), j.payload ->> 'cwd', (j.payload ->> 'shell')::boolean,
       j.payload -> 'env', _batch_silence(), j.owner::regrole::text
FROM unnest($1::bigint[]) WITH ORDINALITY AS t(id, ord)
JOIN jobs j ON j.id = t.id AND j.id = ANY ($1)
ORDER BY t.ord;

-- name: held
-- The jobs $2 (tokens $3) that role $1's computers hold (an administrator's: any computer's),
-- each with its place in $2, its status, and whether it is busy: its row is locked by another
-- transaction (its owner cancelling it, or posting a job that depends on it), which the agent
-- never waits for, since one such transaction, left open, would have held every report and
-- heartbeat of the agent. The others are locked as an update of their columns locks them (not
-- FOR UPDATE, which would wait for a post that depends on one).
SELECT c.ord, c.id, l.status::text, l.status IS NULL
FROM (
    SELECT g.ord, j.id, g.token
    FROM unnest($2::bigint[], $3::uuid[]) WITH ORDINALITY AS g(id, token, ord)
    JOIN jobs j ON j.id = g.id AND j.id = ANY ($2) AND j.lease_token = g.token AND j.status IN ('started', 'aborted')
    WHERE _is_batch_queue(j.queue)
      AND (_is_admin($1)
           OR j.locked_by IN (SELECT c.computer FROM batch_computers c WHERE c.agent = _identity_of($1)))
) c
LEFT JOIN LATERAL (
    SELECT j.status FROM jobs j
    WHERE j.id = c.id AND j.lease_token = c.token AND j.status IN ('started', 'aborted')
    FOR UPDATE OF j SKIP LOCKED
) l ON true
ORDER BY c.id;

-- name: started
-- The held jobs $1 (each at its place $2 in the report's arrays of tokens $3 and pids $4) run:
-- their progress begun anew and their leases renewed. The latest lease's end.
WITH started AS (
    UPDATE jobs j
    SET progress = jsonb_build_object('token', $3[r.ord], 'pid', $4[r.ord],
                                      'started_at', statement_timestamp(), 'changed', statement_timestamp()),
        locked_until = statement_timestamp() + _batch_silence()
    FROM unnest($1::bigint[], $2::bigint[]) AS r(id, ord)
    WHERE j.id = r.id AND j.id = ANY ($1)
    RETURNING j.locked_until
)
SELECT max(s.locked_until) FROM started s;

-- name: renew
-- The leases of the held jobs $1 (each at its place $2 in the heartbeat's arrays) renewed, and
-- the tails of their output ($3 stderr, $4 stdout; null: as they are) kept.
UPDATE jobs j
SET locked_until = statement_timestamp() + _batch_silence(),
    progress = CASE WHEN $3[r.ord] IS NULL AND $4[r.ord] IS NULL THEN j.progress
                    ELSE coalesce(j.progress, '{}') || jsonb_strip_nulls(jsonb_build_object(
                        'stderr', right($3[r.ord], 8192), 'stdout', right($4[r.ord], 8192),
                        'changed', statement_timestamp(),
                        -- Which stream spoke last: a routine's last message is its last line.
                        'stderr_at', CASE WHEN $3[r.ord] IS NOT NULL THEN statement_timestamp() END,
                        'stdout_at', CASE WHEN $4[r.ord] IS NOT NULL THEN statement_timestamp() END)) END
FROM unnest($1::bigint[], $2::bigint[]) AS r(id, ord)
WHERE j.id = r.id AND j.id = ANY ($1);

-- name: uncancel
-- The agent's report replaces a cancel's mark: jobs $1 that ran to their end despite a cancel
-- ended as they ended.
UPDATE jobs j SET status = 'started' WHERE j.id = ANY ($1);

-- name: finish
-- Jobs $1 (tokens $2) ended as $3: exit codes $4 after $5, the tails of their output $6 and $7,
-- the errors $8 of those that failed.
SELECT _finish($1, $2, '{started,aborted}', $3, NULL,
               ARRAY(SELECT jsonb_build_object('exit_code', r.exit_code, 'run_time', r.run_time,
                                               'stderr', right(r.stderr, 8192), 'stdout', right(r.stdout, 8192))
                     FROM unnest($4::integer[], $5::interval[], $6::text[], $7::text[])
                          WITH ORDINALITY AS r(exit_code, run_time, stderr, stdout, ord)
                     ORDER BY r.ord),
               $8);

-- name: hand_back
-- Pending again, no attempt counted.
UPDATE jobs j
SET status = 'created', lease_token = NULL, locked_until = NULL, attempt = j.attempt - 1,
    run_at = statement_timestamp(), progress = NULL, last_update = statement_timestamp()
WHERE j.id = ANY ($1);

-- name: end_cancelled
-- A cancelled job that is handed back has ended: as CANCEL.
SELECT _finish($1, NULL, '{aborted}', 'aborted', NULL);
