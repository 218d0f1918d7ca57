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
