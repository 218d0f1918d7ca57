-- The statements of src/api/compute.rs, run as the extension's owner.

-- name: amount_to_add
-- Refuses an amount that is no amount of money (_money raises); whether it is more than nothing.
SELECT _money($1, 'the amount to add') > 0;

-- name: owned_job
-- The caller's ($1) compute job $2, locked for a change: its status, its funds, whether $3 more
-- would take them to 1e10, its flags, its input's type and its last slice.
SELECT c.status::text, c.funds::text, c.funds + $3 >= 1e10, c.flags, c.data_storage_type,
       c.last_slice_number
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

-- name: values_count
-- How many values $1 holds, or null if it is not an array.
SELECT CASE WHEN jsonb_typeof($1) = 'array' THEN jsonb_array_length($1) END;

-- name: pattern_count
-- A job whose input is a pattern names $2 more slices.
UPDATE compute_jobs c
SET data_storage_details = jsonb_set(c.data_storage_details::jsonb, '{count}', to_jsonb(c.last_slice_number + $2))::text
WHERE c.job_id = $1 AND c.data_storage_type = 'pattern';

-- name: add_slices
-- Job $1's last slice $2 further on.
UPDATE compute_jobs c SET last_slice_number = c.last_slice_number + $2 WHERE c.job_id = $1
RETURNING c.last_slice_number;


-- name: tick
-- The launcher's round at $1 (see compute.rs's COMPUTE).
SELECT _compute_tick($1);

-- name: next_look
-- Compute slices out or results to fold: the watchdog and the fold every second.
SELECT $1 + interval '1 second'
WHERE EXISTS (SELECT FROM compute_slices s WHERE s.lease_token IS NOT NULL)
   OR EXISTS (SELECT FROM slice_reports r WHERE r.folded_seq IS NULL)
   OR EXISTS (SELECT FROM compute_tasks);
