-- The statements of src/api/batch_agent.rs: the agent's side of batch jobs. A statement joining
-- jobs to ids it was given also names them in `j.id = ANY (...)`, which only the primary key
-- serves, so the jobs are read by probes whatever the statistics say (src/api/queue.sql, finish).

-- name: agent_of(computer text)
SELECT c.agent FROM batch_computers c WHERE c.computer = $computer;

-- name: register(computer text, agent oid, capacity integer, info jsonb)
-- The computer for the agent identity, unless another agent registered it first.
INSERT INTO batch_computers (computer, agent, capacity, info)
VALUES ($computer, $agent, $capacity, coalesce($info, '{}'))
ON CONFLICT ON CONSTRAINT batch_computers_pkey DO NOTHING;

-- name: registered_again(computer text, capacity integer, info jsonb)
UPDATE batch_computers c SET capacity = $capacity, info = coalesce($info, '{}'), last_seen = now()
WHERE c.computer = $computer;

-- name: forget_computer(computer text)
-- The computer forgotten, as far as the caller may (row-level security: an administrator).
DELETE FROM batch_computers c WHERE c.computer = $computer RETURNING c.computer;

-- name: ready_signals(computer text)
SELECT ARRAY[_ready_signal(_extension_claimant(), _batch_queue($computer)),
             _ready_signal(_extension_claimant(), _batch_queue('ANY'))];

-- name: cancel_signal(computer text)
SELECT _batch_cancel_signal($computer);

-- name: seen(computer text)
UPDATE batch_computers c SET last_seen = now()
WHERE c.computer = $computer AND c.last_seen < now() - interval '10 seconds';

-- name: claimed(ids bigint[])
-- The args are read here rather than by _text_array, a SQL function with a subquery, which is
-- not inlined: its body was read and planned again on every call (a tenth of a claim's work).
SELECT j.id, j.lease_token, j.attempt, j.task::text, j.payload ->> 'routine', j.payload ->> 'command',
       ARRAY(SELECT jsonb_array_elements_text(j.payload -> 'args')), j.payload ->> 'cwd',
       (j.payload ->> 'shell')::boolean,
       j.payload -> 'env', _batch_silence(), j.owner::regrole::text
FROM unnest($ids::bigint[]) WITH ORDINALITY AS t(id, ord)
JOIN jobs j ON j.id = t.id AND j.id = ANY ($ids)
ORDER BY t.ord;

-- name: held(role oid, ids bigint[], tokens uuid[])
-- The jobs ids (with their tokens) that the role's computers hold (an administrator's: any
-- computer's), each with its place in ids, its status, and whether it is busy: its row is
-- locked by another transaction (its owner cancelling it, or posting a job that depends on it),
-- which the agent never waits for, since one such transaction, left open, would have held every
-- report and heartbeat of the agent. The others are locked as an update of their columns locks
-- them (not FOR UPDATE, which would wait for a post that depends on one).
-- Each id probes the primary key alone: in a subquery kept apart (OFFSET 0, which no condition
-- outside enters), and its queue tested outside it, since a condition on the queue implies the
-- ready index's predicate (queue IS NOT NULL), and with the statistics of an empty table the
-- planner then found each id by a scan of the whole ready index (its last column is the id):
-- 200 pages a report (regress batch_agent).
SELECT g.ord, c.id, l.status::text, l.status IS NULL
FROM unnest($ids::bigint[], $tokens::uuid[]) WITH ORDINALITY AS g(id, token, ord)
CROSS JOIN LATERAL (
    SELECT j.id, j.queue, g.token FROM jobs j
    WHERE j.id = g.id AND j.lease_token = g.token AND j.status IN ('started', 'aborted')
      AND (_is_admin($role)
           OR j.locked_by IN (SELECT c.computer FROM batch_computers c WHERE c.agent = _identity_of($role)))
    OFFSET 0
) c
LEFT JOIN LATERAL (
    SELECT j.status FROM jobs j
    WHERE j.id = c.id AND j.lease_token = c.token AND j.status IN ('started', 'aborted')
    FOR UPDATE OF j SKIP LOCKED
) l ON true
WHERE _is_batch_queue(c.queue)
ORDER BY c.id;

-- name: started(ids bigint[], places bigint[], tokens uuid[], pids integer[])
-- The held jobs ids (each at its place in the report's arrays of tokens and pids) run: their
-- progress begun anew and their leases renewed. The latest lease's end.
WITH started AS (
    UPDATE jobs j
    SET progress = jsonb_build_object('token', $tokens[r.ord], 'pid', $pids[r.ord],
                                      'started_at', statement_timestamp(), 'changed', statement_timestamp()),
        locked_until = statement_timestamp() + _batch_silence()
    FROM unnest($ids::bigint[], $places::bigint[]) AS r(id, ord)
    WHERE j.id = r.id AND j.id = ANY ($ids)
    RETURNING j.locked_until
)
SELECT max(s.locked_until) FROM started s;

-- name: renew(ids bigint[], places bigint[], stderr text[], stdout text[])
-- The leases of the held jobs ids (each at its place in the heartbeat's arrays) renewed, and the
-- tails of their output (stderr, stdout; null: as they are) kept.
UPDATE jobs j
SET locked_until = statement_timestamp() + _batch_silence(),
    progress = CASE WHEN $stderr[r.ord] IS NULL AND $stdout[r.ord] IS NULL THEN j.progress
                    ELSE coalesce(j.progress, '{}') || jsonb_strip_nulls(jsonb_build_object(
                        'stderr', right($stderr[r.ord], 8192), 'stdout', right($stdout[r.ord], 8192),
                        'changed', statement_timestamp(),
                        -- Which stream spoke last: a routine's last message is its last line.
                        'stderr_at', CASE WHEN $stderr[r.ord] IS NOT NULL THEN statement_timestamp() END,
                        'stdout_at', CASE WHEN $stdout[r.ord] IS NOT NULL THEN statement_timestamp() END)) END
FROM unnest($ids::bigint[], $places::bigint[]) AS r(id, ord)
WHERE j.id = r.id AND j.id = ANY ($ids);

-- name: uncancel(ids bigint[])
-- The agent's report replaces a cancel's mark: the jobs that ran to their end despite a cancel
-- ended as they ended.
UPDATE jobs j SET status = 'started' WHERE j.id = ANY ($ids);

-- name: finish(ids bigint[], tokens uuid[], outcome text, exit_codes integer[],
--              run_times interval[], stderr text[], stdout text[], errors text[])
-- The jobs ids (with their tokens) ended as the outcome: their exit codes after their run
-- times, the tails of their output, the errors of those that failed.
SELECT _finish($ids, $tokens, '{started,aborted}', $outcome, NULL,
               ARRAY(SELECT jsonb_build_object('exit_code', r.exit_code, 'run_time', r.run_time,
                                               'stderr', right(r.stderr, 8192), 'stdout', right(r.stdout, 8192))
                     FROM unnest($exit_codes::integer[], $run_times::interval[], $stderr::text[], $stdout::text[])
                          WITH ORDINALITY AS r(exit_code, run_time, stderr, stdout, ord)
                     ORDER BY r.ord),
               $errors);

-- name: hand_back(ids bigint[])
-- Pending again, no attempt counted.
UPDATE jobs j
SET status = 'created', lease_token = NULL, locked_until = NULL, attempt = j.attempt - 1,
    run_at = statement_timestamp(), progress = NULL, last_update = statement_timestamp()
WHERE j.id = ANY ($ids);

-- name: end_cancelled(ids bigint[])
-- A cancelled job that is handed back has ended: as CANCEL.
SELECT _finish($ids, NULL, '{aborted}', 'aborted', NULL);
