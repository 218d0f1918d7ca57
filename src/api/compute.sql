-- The statements of src/api/compute.rs, run as the extension's owner.

-- name: amount_to_add(amount numeric)
-- Refuses an amount that is no amount of money (_money raises); whether it is more than nothing.
SELECT _money($amount, 'the amount to add') > 0;

-- name: owned_job(owner oid, job_id bigint, amount numeric)
-- The caller's (owner's) compute job, locked for a change: its status, its funds, whether the
-- amount more would take them to 1e10, its flags, its input's type and its last slice.
SELECT c.status::text, c.funds::text, c.funds + $amount >= 1e10, c.flags, c.data_storage_type,
       c.last_slice_number
FROM compute_jobs c WHERE c.job_id = $job_id AND c.owner = $owner FOR NO KEY UPDATE;

-- name: pause(job_id bigint)
UPDATE compute_jobs c SET status = 'paused' WHERE c.job_id = $job_id;

-- name: resume(job_id bigint)
UPDATE compute_jobs c SET status = _compute_resumed_status($job_id) WHERE c.job_id = $job_id AND c.status = 'paused';

-- name: close(job_id bigint, open_flag integer)
-- No slice may be added any more.
UPDATE compute_jobs c SET flags = c.flags & ~$open_flag WHERE c.job_id = $job_id;

-- name: end_job(job_id bigint, status text, open_flag integer)
-- The job ends as the status (its flag open cleared): its copies go (a worker still holding one
-- finds its report refused), its live row moves to job_history. Reports already in are still
-- folded and paid.
WITH ended AS (
    UPDATE compute_jobs c SET status = $status::compute_job_status, end_time = now(), flags = c.flags & ~$open_flag
    WHERE c.job_id = $job_id
), copies AS (
    DELETE FROM compute_slices s WHERE s.job_id = $job_id
), gone AS (
    DELETE FROM jobs j WHERE j.id = $job_id RETURNING j.*
)
INSERT INTO job_history (id, owner, status, task, queue, priority, payload, result, errors,
                         attempts, max_attempts, idempotency_key, key_rule, locked_by, due_at, start_time,
                         begin_time, end_time, name, description, link, listed)
SELECT g.id, g.owner,
       CASE $status WHEN 'finished' THEN 'completed' WHEN 'cancelled' THEN 'aborted' ELSE 'failed' END::job_status,
       g.task, g.queue, g.priority, g.payload, jsonb_build_object('status', $status), g.errors, g.attempt,
       g.max_attempts, g.idempotency_key, g.key_rule, g.locked_by, g.due_at, g.start_time, g.begin_time, now(), g.name,
       g.description, g.link, g.listed
FROM gone g;

-- name: fund(job_id bigint, amount numeric, nsf_flag integer)
-- The amount more funds; a job paused for want of them (its flag nsf set) goes on.
UPDATE compute_jobs c
SET funds = c.funds + $amount, flags = c.flags & ~$nsf_flag,
    status = CASE WHEN c.flags & $nsf_flag <> 0 AND c.status = 'paused' THEN _compute_resumed_status($job_id) ELSE c.status END
WHERE c.job_id = $job_id;

-- name: job_status(job_id bigint)
SELECT c.status FROM compute_jobs c WHERE c.job_id = $job_id;

-- name: values_count(data jsonb)
-- How many values the data holds, or null if it is not an array.
SELECT CASE WHEN jsonb_typeof($data) = 'array' THEN jsonb_array_length($data) END;

-- name: pattern_count(job_id bigint, count integer)
-- A job whose input is a pattern names count more slices.
UPDATE compute_jobs c
SET data_storage_details = jsonb_set(c.data_storage_details::jsonb, '{count}', to_jsonb(c.last_slice_number + $count))::text
WHERE c.job_id = $job_id AND c.data_storage_type = 'pattern';

-- name: add_slices(job_id bigint, count integer)
-- The job's last slice count further on.
UPDATE compute_jobs c SET last_slice_number = c.last_slice_number + $count WHERE c.job_id = $job_id
RETURNING c.last_slice_number;
