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

-- name: open_jobs(group_id bigint)
-- The jobs of group $group_id that have not ended, each with every group it was deployed into;
-- none once the group is gone (its rows go with it).
SELECT m.job_id, ARRAY(SELECT o.compute_group_id FROM compute_group_jobs o WHERE o.job_id = m.job_id)
FROM compute_groups g
JOIN compute_group_jobs m ON m.compute_group_id = g.id
JOIN compute_jobs c ON c.job_id = m.job_id
WHERE g.id = $group_id AND c.status IN ('new', 'estimation', 'running', 'paused');

-- name: job_contacts(job bigint)
-- What job $job's workers are to contact: its work function, its pattern's URL of slice 1, its
-- result storage's of slice 1 and copy 0 (as deployment checked them), and of its arguments and
-- values each distinct start that names an origin (an http or https scheme, any slashes, then
-- the authority up to its end), so that a million values come to the few origins they name.
SELECT (SELECT f.value::text FROM work_functions f WHERE f.job_id = $job),
       CASE WHEN c.data_storage_type = 'pattern'
            THEN replace(c.data_storage_details::jsonb ->> 'pattern', '{slice}', '1') END,
       replace(replace(c.result_storage_details, '{slice}', '1'), '{copy}', '0'),
       ARRAY(SELECT DISTINCT substring(a.value::text FROM '^[hH][tT][tT][pP][sS]?:[/\\]*[^/\\?#]*')
             FROM compute_arguments a WHERE a.job_id = $job),
       ARRAY(SELECT DISTINCT substring(d.value::text FROM '^[hH][tT][tT][pP][sS]?:[/\\]*[^/\\?#]*')
             FROM compute_data d WHERE d.job_id = $job)
FROM compute_jobs c WHERE c.job_id = $job;

-- name: group_opaque_id(group_id bigint)
SELECT g.opaque_id FROM compute_groups g WHERE g.id = $group_id;
