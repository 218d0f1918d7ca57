-- The statements of src/api/compute.rs. In the forwarding ones (named after their function), $1
-- is the calling role.

-- name: amount_to_add
-- Refuses an amount that is no amount of money (_money raises); whether it is more than nothing.
SELECT _money($1, 'the amount to add') > 0;

-- name: owned_job
-- The caller's ($1) compute job $2, locked for a change: its status, its funds, and whether $3
-- more would take them to 1e10.
SELECT c.status::text, c.funds::text, c.funds + $3 >= 1e10, c.flags
FROM compute_jobs c WHERE c.job_id = $2 AND c.owner = $1 FOR NO KEY UPDATE;

-- name: pause
UPDATE compute_jobs c SET status = 'paused' WHERE c.job_id = $1;

-- name: resume
UPDATE compute_jobs c SET status = _compute_resumed_status($1) WHERE c.job_id = $1 AND c.status = 'paused';

-- name: close
-- No slice may be added any more ($2: the flag open).
UPDATE compute_jobs c SET flags = c.flags & ~$2 WHERE c.job_id = $1;

-- name: cancel
SELECT _compute_end($1, 'cancelled');

-- name: fund
-- $2 more funds; a job paused for want of them ($3: the flag nsf) goes on.
UPDATE compute_jobs c
SET funds = c.funds + $2, flags = c.flags & ~$3,
    status = CASE WHEN c.flags & $3 <> 0 AND c.status = 'paused' THEN _compute_resumed_status($1) ELSE c.status END
WHERE c.job_id = $1;

-- name: job_status
SELECT c.status FROM compute_jobs c WHERE c.job_id = $1;


-- name: compute_deploy
SELECT _compute_deploy($1, $2);

-- name: compute_add_slices
SELECT _compute_add_slices($1, $2, $3, $4);

-- name: compute_worker_register
SELECT _compute_worker_register($1, $2, $3, $4, $5, $6, $7, $8);

-- name: compute_worker_join
SELECT _compute_worker_join($1, $2, $3, $4);

-- name: compute_worker_leave
SELECT _compute_worker_leave($1, $2);

-- name: compute_fetch
SELECT * FROM _compute_fetch($1, $2);

-- name: compute_progress
SELECT _compute_progress($1, $2, $3);

-- name: compute_return
SELECT _compute_return($1, $2, $3, NULL, NULL, NULL);

-- name: compute_reject
SELECT _compute_return($1, $2, NULL, coalesce($3, 'EWORKREJECT'), $4, $5);

-- name: compute_submit
SELECT * FROM _compute_submit($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- name: tick
-- The launcher's round at $1 (see compute.rs's COMPUTE).
SELECT _compute_tick($1);

-- name: next_look
-- Compute slices out or results to fold: the watchdog and the fold every second.
SELECT $1 + interval '1 second'
WHERE EXISTS (SELECT FROM compute_slices s WHERE s.lease_token IS NOT NULL)
   OR EXISTS (SELECT FROM slice_reports r WHERE r.folded_seq IS NULL)
   OR EXISTS (SELECT FROM compute_tasks);
