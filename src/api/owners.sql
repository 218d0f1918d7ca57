-- The statements of src/api/owners.rs, run as the extension's owner: the owner of a row's parent.

-- name: job_owner(job bigint)
SELECT j.owner FROM jobs j WHERE j.id = $job;

-- name: finished_job_owner(job bigint)
-- Apart from job_owner, so that a live job's row never sets up a read of every month.
SELECT h.owner FROM job_history h WHERE h.id = $job LIMIT 1;

-- name: group_owner(compute_group bigint)
SELECT g.owner FROM compute_groups g WHERE g.id = $compute_group;

-- name: worker_owner(worker uuid)
SELECT w.owner FROM workers w WHERE w.opaque_id = $worker;

-- name: creds_list_owner(creds_list bigint)
SELECT l.owner FROM creds_list l WHERE l.id = $creds_list;
