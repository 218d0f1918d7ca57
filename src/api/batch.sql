-- The statements of src/api/batch.rs: the poster's side of batch jobs, and their counts.

-- name: missing
-- The first of the jobs $1 that is no batch job of the owner $2 (of anyone when null).
SELECT i FROM unnest($1::bigint[]) i
WHERE NOT EXISTS (SELECT FROM jobs j WHERE j.id = i AND _is_batch_queue(j.queue)
                                       AND j.owner = coalesce($2, j.owner))
  AND NOT EXISTS (SELECT FROM job_history h WHERE h.id = i AND _is_batch_queue(h.queue)
                                              AND h.owner = coalesce($2, h.owner))
LIMIT 1;

-- name: abort
SELECT jobs_abort($1)::text;

-- name: tell_agent
-- Which job is not said: anyone may LISTEN. The agent of that computer asks about its jobs with a
-- heartbeat when its signal comes.
SELECT pg_notify('pgjobs_batch_cancel', _batch_cancel_signal(j.locked_by)) FROM jobs j WHERE j.id = $1;

-- name: status
SELECT b.status FROM batch_jobs b WHERE b.id = $1;

-- name: check_selection
-- batch_cancel_where's month $1, grouping $2 and statuses $3, checked as batch_find's are.
SELECT _finite_date($1, 'month'), _batch_check_reading(coalesce($2, 'time'), $3, 0, 0);

-- name: selected
-- The active jobs of owner $6 (anyone's when null) that batch_find selects (month $1, statuses $2,
-- search $3), or one group of batch_groups ($4 by, $5 key), in order.
SELECT coalesce(array_agg(b.id ORDER BY b.id), '{}')
FROM _batch_selection($1, $2, $3) b
WHERE b.ended_at IS NULL AND b.status <> 'CANCEL'
  AND b.owner::oid = coalesce($6, b.owner::oid)
  AND ($4 IS NULL
       OR _batch_group_key($4, b.due_at, b.routine, b.command, b.status, b.target, b.computer) = $5);

-- name: lock_waiting
-- Job $1 of owner $2 (anyone's when null) if it is a batch job waiting for dependencies, locked.
SELECT j.id FROM jobs j
WHERE j.id = $1 AND _is_batch_queue(j.queue) AND j.status = 'created'
  AND j.owner = coalesce($2, j.owner)
  AND EXISTS (SELECT FROM job_dependencies b WHERE b.job_id = j.id)
FOR UPDATE;

-- name: lock_tally
-- The table lock waits for every transaction that has written a delta; one that has changed jobs
-- but not yet written its delta is not seen by the count, and its delta then applies to it.
LOCK TABLE batch_tally IN EXCLUSIVE MODE;

-- name: count_tally
-- The tallied jobs counted afresh.
WITH cleared AS (DELETE FROM batch_tally)
INSERT INTO batch_tally (owner, due_minute, label, computer, run_minute, n, first_due)
SELECT j.owner, date_trunc('minute', j.due_at, 'UTC'), _batch_label(j.payload),
       j.payload ->> 'computer', date_trunc('minute', j.run_at, 'UTC'), count(*), min(j.due_at)
FROM jobs j
WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
  AND j.status = 'created' AND j.run_at < 'infinity'
GROUP BY 1, 2, 3, 4, 5;

-- name: fold_counts
SELECT _batch_tally_fold();

-- name: computer_known
SELECT EXISTS (SELECT FROM batch_computers c WHERE c.computer = $1);

-- name: job_of_hash
-- The latest job of owner $1 with the command hash $2, live or finished.
SELECT x.id FROM (
    SELECT j.id FROM jobs j WHERE j.owner = $1 AND j.idempotency_key = $2
    UNION ALL
    SELECT h.id FROM job_history h WHERE h.owner = $1 AND h.idempotency_key = $2
) x ORDER BY x.id DESC LIMIT 1;

-- name: lock_dependencies
-- The live ones of jobs $1 of owner $2, locked FOR KEY SHARE: the lock a finish's DELETE waits
-- for, and a heartbeat's update does not. One finishing now waits for this post to commit and
-- then releases this job, or has finished before the lock and is read from job_history by the
-- next statement.
SELECT FROM jobs j WHERE j.id = ANY ($1) AND j.owner = $2 ORDER BY j.id FOR KEY SHARE OF j;

-- name: waiting_for
-- Of the jobs $1 of owner $2, those to wait for: the live ones, and the finished ones that did
-- not complete (a wait on a failed or cancelled job is what blocks); and the first that is not
-- the owner's at all.
SELECT coalesce((SELECT array_agg(x.id) FROM (
                    SELECT j.id FROM jobs j WHERE j.id = ANY ($1) AND j.owner = $2
                    UNION ALL
                    SELECT h.id FROM job_history h
                    WHERE h.id = ANY ($1) AND h.owner = $2 AND h.status <> 'completed') x), '{}'),
       (SELECT d FROM unnest($1::bigint[]) d
        WHERE NOT EXISTS (SELECT FROM jobs j WHERE j.id = d AND j.owner = $2)
          AND NOT EXISTS (SELECT FROM job_history h WHERE h.id = d AND h.owner = $2)
        LIMIT 1);

-- name: spec
-- A post's command as its job's spec, the spec's hash (the job's key), the poster's ($9)
-- advisory lock for commands of that hash's first digit, and the job's payload.
SELECT x.spec, x.hash, _lock_key('batch_post', $9::text || '/' || left(x.hash, 1)),
       x.spec || jsonb_build_object('revision', $10, 'extra', coalesce($11, '{}'),
                                    'depends_on', to_jsonb($12::bigint[]), 'run_at', $13)
FROM (SELECT s.spec, encode(sha256(convert_to(s.spec::text, 'UTF8')), 'hex') AS hash
      FROM (SELECT jsonb_build_object('kind', $1, 'computer', $2, 'routine', $3, 'command', $4,
                                      'args', to_jsonb($5::text[]), 'cwd', $6,
                                      'shell', coalesce($7, false), 'env', $8) AS spec) s) x;

-- name: try_turn
SELECT CASE WHEN pg_try_advisory_lock($1) THEN pg_advisory_unlock($1) ELSE false END;

-- name: shorten_lock_waits
SELECT current_setting('lock_timeout'), set_config('lock_timeout', '1ms', true);

-- name: restore_lock_waits
SELECT set_config('lock_timeout', $1, true);

-- name: take_turn
SELECT pg_advisory_xact_lock_shared($1);

-- name: waiting_job
-- The waiting job of owner $1 with the command hash $2, locked as a replace's update locks it;
-- found through its key's row (a batch job's key is held as long as the job is live), one probe
-- of each primary key, where an index on jobs would be chosen by statistics that may not have
-- seen the jobs yet (src/api/batch.rs).
SELECT j.id FROM job_keys k JOIN jobs j ON j.id = k.job_id
WHERE k.owner = $1 AND k.idempotency_key = $2 AND j.owner = $1 AND j.idempotency_key = $2
  AND j.status = 'created'
FOR NO KEY UPDATE OF j;

-- name: waiting_job_nowait
SELECT j.id FROM job_keys k JOIN jobs j ON j.id = k.job_id
WHERE k.owner = $1 AND k.idempotency_key = $2 AND j.owner = $1 AND j.idempotency_key = $2
  AND j.status = 'created'
FOR NO KEY UPDATE OF j NOWAIT;

-- name: made_now
-- Whether job $1 is one this post added: its id the one the add drew (a key taken gives the
-- holder's, drawn earlier); if so its key must be freed when it finishes, as a replace's is.
UPDATE jobs j SET key_rule = 'replace'
WHERE j.id = $1 AND $1 = currval('jobs_id_seq'::regclass)
RETURNING j.id;

-- name: still_waiting
SELECT EXISTS (SELECT FROM jobs j WHERE j.id = $1 AND j.status = 'created');

-- name: clear_waits
DELETE FROM job_dependencies b WHERE b.job_id = $1;

-- name: add_waits
-- Job $1 of owner $2 waits for the jobs $3, and is not due while it has any.
WITH added AS (
    INSERT INTO job_dependencies (on_job, job_id, owner) SELECT DISTINCT d, $1, $2 FROM unnest($3::bigint[]) d
)
UPDATE jobs j SET run_at = 'infinity' WHERE j.id = $1;

-- name: tally
-- Adds ($2 = 1) or subtracts (-1) what the jobs $1 count in batch_tally as they are now; $3: as
-- they were before a claim took them (a claim changes neither their times nor their payload).
INSERT INTO batch_tally (owner, due_minute, label, computer, run_minute, n, first_due)
SELECT j.owner, date_trunc('minute', j.due_at, 'UTC'), _batch_label(j.payload),
       j.payload ->> 'computer', date_trunc('minute', j.run_at, 'UTC'), $2 * count(*),
       CASE WHEN $2 > 0 THEN min(j.due_at) END
FROM unnest($1::bigint[]) AS i(id),
     -- Not flattened (OFFSET 0): each job by its primary key (see TALLY in batch.rs).
     LATERAL (SELECT * FROM jobs j WHERE j.id = i.id OFFSET 0) j
WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
  AND ($3 OR (j.status = 'created' AND j.run_at < 'infinity'))
GROUP BY 1, 2, 3, 4, 5;
