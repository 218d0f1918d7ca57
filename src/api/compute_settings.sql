-- The statements of src/api/compute_settings.rs, run as the extension's owner. $1 is the
-- caller's identity wherever a statement acts on its rows. A delete answers 0 for a row of
-- another identity exactly as for one that does not exist, as a DELETE under row-level security
-- does, so nothing can be probed.

-- name: remove_origin
-- Origin $3 of group $2, for type $4 or (null) every type.
DELETE FROM compute_group_worker_origins o
WHERE o.compute_group_id = $2 AND o.origin = $3 AND ($4::text IS NULL OR o.type = $4) AND o.owner = $1;

-- name: remove_worker
-- Worker $2; its run and task information, settings, credential lists and notifications go with
-- it (their foreign keys cascade).
DELETE FROM workers w WHERE w.opaque_id = $2 AND w.owner = $1;

-- name: remove_config_value
-- The value of key path $2 for worker $3 (null: for all of the owner's workers, as in the table),
-- of type $4.
DELETE FROM worker_config_value v
WHERE v.key_path = $2 AND v.worker_opaque_id IS NOT DISTINCT FROM $3 AND v.type = $4 AND v.owner = $1;

-- name: remove_worker_creds
-- The link of worker $2 to credential list $3.
DELETE FROM worker_creds c WHERE c.worker_opaque_id = $2 AND c.creds_list_id = $3 AND c.owner = $1;

-- name: remove_app_config
DELETE FROM dcp_worker_app_config r WHERE r.id = $2 AND r.owner = $1;

-- name: remove_creds_list
-- With its credentials and its links to workers (their foreign keys cascade).
DELETE FROM creds_list r WHERE r.id = $2 AND r.owner = $1;

-- name: remove_credential
DELETE FROM credential r WHERE r.id = $2 AND r.owner = $1;

-- name: remove_notification
DELETE FROM worker_notifications r WHERE r.id = $2 AND r.owner = $1;

-- name: remove_directive
DELETE FROM register_worker_directive r WHERE r.id = $2 AND r.owner = $1;

-- name: own_group_locked
-- The caller's group $2, locked until its secret is set.
SELECT g.id FROM compute_groups g WHERE g.opaque_id = $2 AND g.owner = $1 FOR UPDATE;

-- name: set_secret
-- A null secret removes it (_join_hash is strict).
UPDATE compute_groups g SET join_hash = _join_hash($2) WHERE g.id = $1;

-- name: join_check
-- Group $1 and whether key $2 and secret $3 are its join credentials. The hash is computed
-- whether or not the group, its key and its hash are there (against a hash of the secret itself
-- where there is none), so the time taken does not tell which was wrong.
SELECT g.id, g.id IS NOT NULL AND g.join_hash IS NOT NULL AND g.join_key IS NOT DISTINCT FROM $2 AND m.matches
FROM (VALUES (1)) one
LEFT JOIN compute_groups g ON g.opaque_id = $1
CROSS JOIN LATERAL (
    SELECT _join_hash_matches(coalesce($3, ''), coalesce(g.join_hash, _join_hash(coalesce($3, '')))) AS matches
) m;

-- name: group_public
-- Any group by its opaque id $1, listed or not: its public fields only.
SELECT g.opaque_id, g.name, g.description FROM compute_groups g WHERE g.opaque_id = $1;

-- name: groups_jobs_by_job
-- The groups of the caller's jobs, with their opaque ids.
SELECT m.job_id, m.compute_group_id, g.opaque_id, m.last_update
FROM compute_group_jobs m JOIN compute_groups g ON g.id = m.compute_group_id
WHERE m.job_owner = $1;

-- name: budget_row
-- The caller's group $2: whether it exists, whether its budgets have a row, and whether that
-- row was taken for this transaction (tried, not waited for: a deployment into the group, or
-- another grant, may hold it in a transaction left open).
SELECT EXISTS (SELECT FROM compute_groups g WHERE g.id = $2 AND g.owner = $1),
       EXISTS (SELECT FROM compute_group_accounting_data a WHERE a.compute_group_id = $2),
       EXISTS (SELECT FROM compute_group_accounting_data a WHERE a.compute_group_id = $2
               FOR NO KEY UPDATE SKIP LOCKED);

-- name: grant_budget
-- Group $1's budgets grow by $2 ms of CPU, $3 of GPU, $4 jobs, $5 bytes in and $6 bytes out
-- (null: unchanged). A budget that was unlimited starts at the amount given past what the group
-- spent so far, so that what remains is that amount.
INSERT INTO compute_group_accounting_data AS a (compute_group_id, granted_cpu_time, granted_gpu_time,
                                                remaining_jobs, granted_in_data_size, granted_out_data_size)
SELECT $1, $2 + coalesce(s.cpu_time, 0), $3 + coalesce(s.gpu_time, 0), $4,
       $5 + coalesce(s.in_data_size, 0), $6 + coalesce(s.out_data_size, 0)
FROM (VALUES (1)) one LEFT JOIN compute_group_spent s ON s.compute_group_id = $1
ON CONFLICT (compute_group_id) DO UPDATE
SET granted_cpu_time = coalesce(a.granted_cpu_time + $2, excluded.granted_cpu_time, a.granted_cpu_time),
    granted_gpu_time = coalesce(a.granted_gpu_time + $3, excluded.granted_gpu_time, a.granted_gpu_time),
    remaining_jobs = coalesce(a.remaining_jobs + $4, excluded.remaining_jobs, a.remaining_jobs),
    granted_in_data_size = coalesce(a.granted_in_data_size + $5, excluded.granted_in_data_size,
                                    a.granted_in_data_size),
    granted_out_data_size = coalesce(a.granted_out_data_size + $6, excluded.granted_out_data_size,
                                     a.granted_out_data_size);

-- name: budgets
SELECT b.* FROM compute_group_budgets b WHERE b.compute_group_id = $1;
