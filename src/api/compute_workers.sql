-- The statements of src/api/compute_workers.rs, run as the extension's owner.

-- name: register(owner oid, role oid, label text)
-- Role $role as a worker of identity $owner labelled $label, or its label changed; its opaque id.
INSERT INTO workers AS w (owner, identity, label) VALUES ($owner, $role, $label)
ON CONFLICT (identity) DO UPDATE SET label = excluded.label
RETURNING w.opaque_id;

-- name: run_info(worker uuid, owner oid, capabilities integer, worktimes jsonb,
--                 cpu_cores double precision, gpu_cores double precision,
--                 max_sandboxes double precision, run_info jsonb)
-- The owner's worker's run information: what it can run (its capability bits and worktimes),
-- its cores and sandboxes, and what it says of itself ($run_info).
INSERT INTO worker_run_info AS r (worker_opaque_id, owner, type, hostname, os, arch, cpu_cores, gpu_cores,
                                  max_sandboxes, capabilities, worktimes, status, last_start_time)
VALUES ($worker, $owner, coalesce($run_info ->> 'type', 'dcp-worker'), $run_info ->> 'hostname',
        $run_info ->> 'os', $run_info ->> 'arch', $cpu_cores, $gpu_cores, $max_sandboxes,
        $capabilities, coalesce($worktimes, '{}'), 'running', now())
ON CONFLICT (worker_opaque_id) DO UPDATE
SET type = excluded.type, hostname = excluded.hostname, os = excluded.os, arch = excluded.arch,
    cpu_cores = excluded.cpu_cores, gpu_cores = excluded.gpu_cores, max_sandboxes = excluded.max_sandboxes,
    capabilities = excluded.capabilities, worktimes = excluded.worktimes, status = 'running',
    last_start_time = now();

-- name: task_info(worker uuid, owner oid)
INSERT INTO worker_task_info (worker_opaque_id, owner, serial) VALUES ($worker, $owner, 0)
ON CONFLICT (worker_opaque_id) DO NOTHING;

-- name: worker_of(role oid)
-- The worker role $role registered as: its opaque id and its owner.
SELECT w.opaque_id, w.owner FROM workers w WHERE w.identity = $role;

-- name: join(group_id bigint, worker uuid, owner oid)
-- The owner's worker in group $group_id (once), unless the group's owner holds its row (FOR
-- UPDATE, in a transaction left open), which the new row's check of its key would wait for:
-- whether the group's row was free. (Its key share taken first, SKIP LOCKED, the check finds it.)
WITH g AS (
    SELECT x.id FROM compute_groups x WHERE x.id = $group_id FOR KEY SHARE SKIP LOCKED
), joined AS (
    INSERT INTO compute_group_workers (compute_group_id, worker_opaque_id, owner)
    SELECT g.id, $worker, $owner FROM g
    ON CONFLICT DO NOTHING
)
SELECT EXISTS (SELECT FROM g);

-- name: leave(worker uuid, group_opaque_id uuid)
-- The worker out of the group whose opaque id is $group_opaque_id.
DELETE FROM compute_group_workers m USING compute_groups g
WHERE m.worker_opaque_id = $worker AND m.compute_group_id = g.id
  AND g.opaque_id = $group_opaque_id;

-- name: progress(role oid, task_token uuid, slice_numbers integer[])
-- The copies of task $task_token that role $role holds (slices $slice_numbers, or every one), at
-- work now. Those another statement holds (another copy's report deciding the slice, which locks
-- every copy of it) are passed over: a progress report is a sign of life, never worth a wait, and
-- waiting here, its rows locked in its own order, deadlocked with such a report locking them in
-- another order (a fresh clone's compute simulation, once).
UPDATE compute_slices s SET status = 'working', last_progress_time = statement_timestamp()
WHERE s.ctid = ANY (ARRAY(
    SELECT h.ctid FROM compute_slices h
    WHERE h.lease_token = $task_token AND h.last_assigned_worker_identity = $role
      AND ($slice_numbers::integer[] IS NULL OR h.slice_number = ANY ($slice_numbers))
    FOR UPDATE SKIP LOCKED));

-- name: held_task(role oid, task_token uuid, slice_numbers integer[])
-- Of the copies of task $task_token that role $role holds (slices $slice_numbers, or every one):
-- their job, its first slice, and the worker.
SELECT s.job_id, min(s.slice_number), min(s.last_assigned_worker::text)::uuid
FROM compute_slices s
WHERE s.lease_token = $task_token AND s.last_assigned_worker_identity = $role
  AND ($slice_numbers::integer[] IS NULL OR s.slice_number = ANY ($slice_numbers))
GROUP BY s.job_id;

-- name: give_back(role oid, task_token uuid, slice_numbers integer[])
-- Those copies given back unworked, to be sent to someone else. Their rows are locked in slice
-- order, as another copy's report deciding their slices deletes them (one slice after another,
-- in slice order): locked in the update's own order, a give-back holding the copy of slice 2 and
-- waiting for slice 1's deadlocked with a report holding slice 1's and waiting for slice 2's (a
-- fresh clone's compute simulation, once).
UPDATE compute_slices s SET status = 'returned', lease_token = NULL
WHERE s.ctid = ANY (ARRAY(
    SELECT h.ctid FROM compute_slices h
    WHERE h.lease_token = $task_token AND h.last_assigned_worker_identity = $role
      AND ($slice_numbers::integer[] IS NULL OR h.slice_number = ANY ($slice_numbers))
    ORDER BY h.slice_number
    FOR UPDATE));

-- name: count_returns(job bigint, returned integer)
-- The job's count of copies given back, $returned more.
UPDATE compute_perf_data p SET return_count = p.return_count + $returned WHERE p.job_id = $job;

-- name: reject(job bigint, slice_number integer, worker uuid, reason text, message text,
--               retries integer)
-- The job's rejection by the worker from slice $slice_number on.
INSERT INTO work_reject_history (job_id, slice_number, worker_opaque_id, reason, error_msg, retries)
VALUES ($job, $slice_number, $worker, $reason, $message, $retries);

-- name: prune_challenges(worker uuid)
-- The worker's expired join challenges.
DELETE FROM compute_join_challenges c
WHERE c.worker_opaque_id = $worker AND c.expires_at <= statement_timestamp();

-- name: issue_challenge(worker uuid, worker_identity oid, group_opaque_id uuid,
--                        max_challenges integer)
-- A new challenge for the worker (of identity $worker_identity) to join the group by signature,
-- replacing its earlier one for that group: the text to sign and when it expires. None when the
-- worker holds $max_challenges challenges for other groups.
INSERT INTO compute_join_challenges AS c (worker_opaque_id, group_opaque_id, worker_identity, challenge, expires_at)
SELECT $worker, $group_opaque_id, $worker_identity,
       format('pg_jobs: join compute group %s as worker %s, challenge %s',
              $group_opaque_id, $worker, replace(gen_random_uuid()::text, '-', '')),
       statement_timestamp() + interval '5 minutes'
WHERE (SELECT count(*) FROM compute_join_challenges o
       WHERE o.worker_opaque_id = $worker AND o.group_opaque_id <> $group_opaque_id)
      < $max_challenges
ON CONFLICT (worker_opaque_id, group_opaque_id)
DO UPDATE SET challenge = excluded.challenge, expires_at = excluded.expires_at, worker_identity = excluded.worker_identity
RETURNING c.challenge, c.expires_at;

-- name: take_challenge(worker uuid, group_opaque_id uuid, challenge text)
-- The worker's challenge for the group, used up, if it has not expired.
DELETE FROM compute_join_challenges c
WHERE c.worker_opaque_id = $worker AND c.group_opaque_id = $group_opaque_id
  AND c.challenge = $challenge
  AND c.expires_at > statement_timestamp()
RETURNING true;

-- name: group_of_address(group_opaque_id uuid, join_address text)
-- The group whose opaque id is $group_opaque_id and whose join address is $join_address (0x and
-- 40 lower-case digits).
SELECT g.id FROM compute_groups g
WHERE g.opaque_id = $group_opaque_id AND lower(g.join_address) = $join_address;
