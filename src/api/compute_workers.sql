-- The statements of src/api/compute_workers.rs, run as the extension's owner.

-- name: register
-- Role $2 as a worker of identity $1 labelled $3, or its label changed; its opaque id.
INSERT INTO workers AS w (owner, identity, label) VALUES ($1, $2, $3)
ON CONFLICT (identity) DO UPDATE SET label = excluded.label
RETURNING w.opaque_id;

-- name: run_info
-- Worker $1's (of identity $2) run information: what it can run ($3 capability bits, $4
-- worktimes), its cores and sandboxes ($5, $6, $7) and what it says of itself ($8).
INSERT INTO worker_run_info AS r (worker_opaque_id, owner, type, hostname, os, arch, cpu_cores, gpu_cores,
                                  max_sandboxes, capabilities, worktimes, status, last_start_time)
VALUES ($1, $2, coalesce($8 ->> 'type', 'dcp-worker'), $8 ->> 'hostname', $8 ->> 'os', $8 ->> 'arch',
        $5, $6, $7, $3, coalesce($4, '{}'), 'running', now())
ON CONFLICT (worker_opaque_id) DO UPDATE
SET type = excluded.type, hostname = excluded.hostname, os = excluded.os, arch = excluded.arch,
    cpu_cores = excluded.cpu_cores, gpu_cores = excluded.gpu_cores, max_sandboxes = excluded.max_sandboxes,
    capabilities = excluded.capabilities, worktimes = excluded.worktimes, status = 'running',
    last_start_time = now();

-- name: task_info
INSERT INTO worker_task_info (worker_opaque_id, owner, serial) VALUES ($1, $2, 0)
ON CONFLICT (worker_opaque_id) DO NOTHING;

-- name: worker_of
-- The worker role $1 registered as: its opaque id and its owner.
SELECT w.opaque_id, w.owner FROM workers w WHERE w.identity = $1;

-- name: join
-- Worker $2 of owner $3 in group $1 (once).
INSERT INTO compute_group_workers (compute_group_id, worker_opaque_id, owner) VALUES ($1, $2, $3)
ON CONFLICT DO NOTHING;

-- name: leave
-- Worker $1 out of the group whose opaque id is $2.
DELETE FROM compute_group_workers m USING compute_groups g
WHERE m.worker_opaque_id = $1 AND m.compute_group_id = g.id AND g.opaque_id = $2;

-- name: progress
-- The copies of task $2 that role $1 holds (slices $3, or every one), at work now. Those another
-- statement holds (another copy's report deciding the slice, which locks every copy of it) are
-- passed over: a progress report is a sign of life, never worth a wait, and waiting here, its
-- rows locked in its own order, deadlocked with such a report locking them in another order (a
-- fresh clone's compute simulation, once).
UPDATE compute_slices s SET status = 'working', last_progress_time = statement_timestamp()
WHERE s.ctid = ANY (ARRAY(
    SELECT h.ctid FROM compute_slices h
    WHERE h.lease_token = $2 AND h.last_assigned_worker_identity = $1
      AND ($3::integer[] IS NULL OR h.slice_number = ANY ($3))
    FOR UPDATE SKIP LOCKED));

-- name: held_task
-- Of the copies of task $2 that role $1 holds (slices $3, or every one): their job, its first
-- slice, and the worker.
SELECT s.job_id, min(s.slice_number), min(s.last_assigned_worker::text)::uuid
FROM compute_slices s
WHERE s.lease_token = $2 AND s.last_assigned_worker_identity = $1
  AND ($3::integer[] IS NULL OR s.slice_number = ANY ($3))
GROUP BY s.job_id;

-- name: give_back
-- Those copies given back unworked, to be sent to someone else.
UPDATE compute_slices s SET status = 'returned', lease_token = NULL
WHERE s.lease_token = $2 AND s.last_assigned_worker_identity = $1
  AND ($3::integer[] IS NULL OR s.slice_number = ANY ($3));

-- name: count_returns
UPDATE compute_perf_data p SET return_count = p.return_count + $2 WHERE p.job_id = $1;

-- name: reject
-- Job $1's rejection by worker $3 from slice $2 on: reason $4, message $5, retries $6.
INSERT INTO work_reject_history (job_id, slice_number, worker_opaque_id, reason, error_msg, retries)
VALUES ($1, $2, $3, $4, $5, $6);

-- name: prune_challenges
-- Worker $1's expired join challenges.
DELETE FROM compute_join_challenges c WHERE c.worker_opaque_id = $1 AND c.expires_at <= statement_timestamp();

-- name: issue_challenge
-- A new challenge for worker $1 of identity $2 to join group $3 by signature, replacing its
-- earlier one for that group: the text to sign and when it expires. None when the worker holds
-- $4 challenges for other groups.
INSERT INTO compute_join_challenges AS c (worker_opaque_id, group_opaque_id, worker_identity, challenge, expires_at)
SELECT $1, $3, $2,
       format('pg_jobs: join compute group %s as worker %s, challenge %s', $3, $1,
              replace(gen_random_uuid()::text, '-', '')),
       statement_timestamp() + interval '5 minutes'
WHERE (SELECT count(*) FROM compute_join_challenges o WHERE o.worker_opaque_id = $1 AND o.group_opaque_id <> $3) < $4
ON CONFLICT (worker_opaque_id, group_opaque_id)
DO UPDATE SET challenge = excluded.challenge, expires_at = excluded.expires_at, worker_identity = excluded.worker_identity
RETURNING c.challenge, c.expires_at;

-- name: take_challenge
-- Worker $1's challenge $3 for group $2, used up, if it has not expired.
DELETE FROM compute_join_challenges c
WHERE c.worker_opaque_id = $1 AND c.group_opaque_id = $2 AND c.challenge = $3
  AND c.expires_at > statement_timestamp()
RETURNING true;

-- name: group_of_address
-- The group whose opaque id is $1 and whose join address is $2 (0x and 40 lower-case digits).
SELECT g.id FROM compute_groups g WHERE g.opaque_id = $1 AND lower(g.join_address) = $2;
