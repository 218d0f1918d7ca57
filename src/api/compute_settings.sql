-- The statements of src/api/compute_settings.rs, run as the extension's owner. $owner is the
-- caller's identity wherever a statement acts on its rows. A delete answers 0 for a row of
-- another identity exactly as for one that does not exist, as a DELETE under row-level security
-- does, so nothing can be probed.

-- name: remove_origin(owner oid, group_id bigint, origin text, origin_type text)
-- Origin $origin of group $group_id, for type $origin_type or (null) every type.
DELETE FROM compute_group_worker_origins o
WHERE o.compute_group_id = $group_id AND o.origin = $origin
  AND ($origin_type::text IS NULL OR o.type = $origin_type) AND o.owner = $owner;

-- name: remove_worker(owner oid, worker uuid)
-- Worker $worker; its run and task information, settings, credential lists and notifications go
-- with it (their foreign keys cascade).
DELETE FROM workers w WHERE w.opaque_id = $worker AND w.owner = $owner;

-- name: remove_config_value(owner oid, key_path text, worker uuid, config_type text)
-- The value of key path $key_path for worker $worker (null: for all of the owner's workers, as
-- in the table), of type $config_type.
DELETE FROM worker_config_value v
WHERE v.key_path = $key_path AND v.worker_opaque_id IS NOT DISTINCT FROM $worker
  AND v.type = $config_type AND v.owner = $owner;

-- name: remove_worker_creds(owner oid, worker uuid, creds_list_id bigint)
-- The link of worker $worker to credential list $creds_list_id.
DELETE FROM worker_creds c
WHERE c.worker_opaque_id = $worker AND c.creds_list_id = $creds_list_id AND c.owner = $owner;

-- name: remove_app_config(owner oid, id bigint)
DELETE FROM dcp_worker_app_config r WHERE r.id = $id AND r.owner = $owner;

-- name: remove_creds_list(owner oid, id bigint)
-- With its credentials and its links to workers (their foreign keys cascade).
DELETE FROM creds_list r WHERE r.id = $id AND r.owner = $owner;

-- name: remove_credential(owner oid, id bigint)
DELETE FROM credential r WHERE r.id = $id AND r.owner = $owner;

-- name: remove_notification(owner oid, id bigint)
DELETE FROM worker_notifications r WHERE r.id = $id AND r.owner = $owner;

-- name: remove_directive(owner oid, id bigint)
DELETE FROM register_worker_directive r WHERE r.id = $id AND r.owner = $owner;

-- name: own_group_locked(owner oid, group_opaque_id uuid)
-- The caller's group $group_opaque_id, locked until its secret is set: FOR NO KEY UPDATE, which
-- the key shares of other identities' deployments into the group and joins of it, held until
-- their transactions end, do not hold up (FOR UPDATE waited for them).
SELECT g.id FROM compute_groups g WHERE g.opaque_id = $group_opaque_id AND g.owner = $owner
FOR NO KEY UPDATE;

-- name: set_secret(group_id bigint, secret text)
-- A null secret removes it (_join_hash is strict).
UPDATE compute_groups g SET join_hash = _join_hash($secret) WHERE g.id = $group_id;

-- name: join_check(group_opaque_id uuid, join_key text, secret text)
-- Group $group_opaque_id and whether key $join_key and secret $secret are its join credentials.
-- The hash is computed whether or not the group, its key and its hash are there (against a hash
-- of the secret itself where there is none), so the time taken does not tell which was wrong.
SELECT g.id,
       g.id IS NOT NULL AND g.join_hash IS NOT NULL AND g.join_key IS NOT DISTINCT FROM $join_key
       AND m.matches
FROM (VALUES (1)) one
LEFT JOIN compute_groups g ON g.opaque_id = $group_opaque_id
CROSS JOIN LATERAL (
    SELECT _join_hash_matches(coalesce($secret, ''),
                              coalesce(g.join_hash, _join_hash(coalesce($secret, '')))) AS matches
) m;

-- name: group_public(opaque_id uuid)
-- Any group by its opaque id, listed or not: its public fields only.
SELECT g.opaque_id, g.name, g.description FROM compute_groups g WHERE g.opaque_id = $opaque_id;

-- name: groups_jobs_by_job(job_owner oid)
-- The groups of the caller's jobs, with their opaque ids.
SELECT m.job_id, m.compute_group_id, g.opaque_id, m.last_update
FROM compute_group_jobs m JOIN compute_groups g ON g.id = m.compute_group_id
WHERE m.job_owner = $job_owner;

-- name: budget_row(owner oid, group_id bigint)
-- The caller's group $group_id: whether it exists, whether its budgets have a row, and whether
-- that row was taken for this transaction (tried, not waited for: a deployment into the group,
-- or another grant, may hold it in a transaction left open).
SELECT EXISTS (SELECT FROM compute_groups g WHERE g.id = $group_id AND g.owner = $owner),
       EXISTS (SELECT FROM compute_group_accounting_data a WHERE a.compute_group_id = $group_id),
       EXISTS (SELECT FROM compute_group_accounting_data a WHERE a.compute_group_id = $group_id
               FOR NO KEY UPDATE SKIP LOCKED);

-- name: budget_room(group_id bigint)
-- How far each of group $group_id's budgets (CPU, GPU, jobs, bytes in, bytes out) can still
-- grow, as grant_budget adds to it: its column's largest value less what it was granted, or, where
-- it is unlimited, less what the group spent (a grant then starts past it).
SELECT 9223372036854775807 - coalesce(a.granted_cpu_time, s.cpu_time, 0),
       9223372036854775807 - coalesce(a.granted_gpu_time, s.gpu_time, 0),
       2147483647 - coalesce(a.remaining_jobs, 0)::bigint,
       9223372036854775807 - coalesce(a.granted_in_data_size, s.in_data_size, 0),
       9223372036854775807 - coalesce(a.granted_out_data_size, s.out_data_size, 0)
FROM (VALUES (1)) one
LEFT JOIN compute_group_accounting_data a ON a.compute_group_id = $group_id
LEFT JOIN compute_group_spent s ON s.compute_group_id = $group_id;

-- name: grant_budget(group_id bigint, cpu_time bigint, gpu_time bigint, jobs integer,
-- in_data_size bigint, out_data_size bigint)
-- Group $group_id's budgets grow by $cpu_time ms of CPU, $gpu_time of GPU, $jobs jobs,
-- $in_data_size bytes in and $out_data_size bytes out (null: unchanged). A budget that was
-- unlimited starts at the amount given past what the group spent so far, so that what remains
-- is that amount.
INSERT INTO compute_group_accounting_data AS a (compute_group_id, granted_cpu_time, granted_gpu_time,
                                                remaining_jobs, granted_in_data_size, granted_out_data_size)
SELECT $group_id, $cpu_time + coalesce(s.cpu_time, 0), $gpu_time + coalesce(s.gpu_time, 0), $jobs,
       $in_data_size + coalesce(s.in_data_size, 0),
       $out_data_size + coalesce(s.out_data_size, 0)
FROM (VALUES (1)) one LEFT JOIN compute_group_spent s ON s.compute_group_id = $group_id
ON CONFLICT (compute_group_id) DO UPDATE
SET granted_cpu_time = coalesce(a.granted_cpu_time + $cpu_time, excluded.granted_cpu_time,
                                a.granted_cpu_time),
    granted_gpu_time = coalesce(a.granted_gpu_time + $gpu_time, excluded.granted_gpu_time,
                                a.granted_gpu_time),
    remaining_jobs = coalesce(a.remaining_jobs + $jobs, excluded.remaining_jobs, a.remaining_jobs),
    granted_in_data_size = coalesce(a.granted_in_data_size + $in_data_size,
                                    excluded.granted_in_data_size, a.granted_in_data_size),
    granted_out_data_size = coalesce(a.granted_out_data_size + $out_data_size,
                                     excluded.granted_out_data_size, a.granted_out_data_size);

-- name: unbudget(group_id bigint, budgets text[])
-- Group $group_id's budgets named in $budgets unlimited (null granted; nothing remaining to count
-- down). What the group spent stays counted: a budget granted again starts past it.
UPDATE compute_group_accounting_data a
SET granted_cpu_time = CASE WHEN 'cpu_time' = ANY ($budgets) THEN NULL ELSE a.granted_cpu_time END,
    granted_gpu_time = CASE WHEN 'gpu_time' = ANY ($budgets) THEN NULL ELSE a.granted_gpu_time END,
    remaining_jobs = CASE WHEN 'jobs' = ANY ($budgets) THEN NULL ELSE a.remaining_jobs END,
    granted_in_data_size = CASE WHEN 'in_data_size' = ANY ($budgets) THEN NULL ELSE a.granted_in_data_size END,
    granted_out_data_size = CASE WHEN 'out_data_size' = ANY ($budgets) THEN NULL ELSE a.granted_out_data_size END
WHERE a.compute_group_id = $group_id;

-- name: budgets(group_id bigint)
SELECT b.* FROM compute_group_budgets b WHERE b.compute_group_id = $group_id;
