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

-- name: end_job
-- Job $1 ends as $2 (its flag open, $3, cleared): its copies go (a worker still holding one finds
-- its report refused), its live row moves to job_history. Reports already in are still folded
-- and paid.
WITH ended AS (
    UPDATE compute_jobs c SET status = $2::compute_job_status, end_time = now(), flags = c.flags & ~$3
    WHERE c.job_id = $1
), copies AS (
    DELETE FROM compute_slices s WHERE s.job_id = $1
), gone AS (
    DELETE FROM jobs j WHERE j.id = $1 RETURNING j.*
)
INSERT INTO job_history (id, owner, status, task, queue, priority, payload, result, errors,
                         attempts, max_attempts, idempotency_key, key_rule, locked_by, due_at, start_time,
                         end_time, name, description, link, listed)
SELECT g.id, g.owner,
       CASE $2 WHEN 'finished' THEN 'completed' WHEN 'cancelled' THEN 'aborted' ELSE 'failed' END::job_status,
       g.task, g.queue, g.priority, g.payload, jsonb_build_object('status', $2), g.errors, g.attempt,
       g.max_attempts, g.idempotency_key, g.key_rule, g.locked_by, g.due_at, g.start_time, now(), g.name,
       g.description, g.link, g.listed
FROM gone g;

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
