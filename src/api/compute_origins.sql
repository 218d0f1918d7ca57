-- The statements of src/api/compute_origins.rs: what compute groups let their workers contact.

-- name: worker_origins(groups bigint[])
-- Each of the groups $groups, in id order, with the origins it lets its workers contact and what
-- for (compute_group_worker_origins' types), in lockstep; none for a group with no origin.
SELECT g.opaque_id,
       ARRAY(SELECT o.origin::text FROM compute_group_worker_origins o WHERE o.compute_group_id = g.id ORDER BY o.id),
       ARRAY(SELECT o.type FROM compute_group_worker_origins o WHERE o.compute_group_id = g.id ORDER BY o.id)
FROM compute_groups g WHERE g.id = ANY ($groups)
ORDER BY g.id;

-- name: job_groups(job bigint)
-- The groups job $job was deployed into.
SELECT coalesce(array_agg(m.compute_group_id), '{}') FROM compute_group_jobs m WHERE m.job_id = $job;
