-- The statements of src/api/compute.rs. $1 is the calling role.

-- name: compute_groups_jobs_by_job
SELECT * FROM _compute_groups_jobs_by_job($1);

-- name: compute_group_set_secret
SELECT _compute_group_set_secret($1, $2, $3);

-- name: compute_group_remove_origin
SELECT _compute_group_remove_origin($1, $2, $3, $4);

-- name: worker_remove
SELECT _worker_remove($1, $2);

-- name: worker_config_remove
SELECT _worker_config_remove($1, $2, $3, $4);

-- name: worker_creds_remove
SELECT _worker_creds_remove($1, $2, $3);

-- name: worker_app_config_remove
SELECT _remove_own_row($1, 'dcp_worker_app_config', $2);

-- name: creds_list_remove
SELECT _remove_own_row($1, 'creds_list', $2);

-- name: credential_remove
SELECT _remove_own_row($1, 'credential', $2);

-- name: worker_notification_remove
SELECT _remove_own_row($1, 'worker_notifications', $2);

-- name: register_worker_directive_remove
SELECT _remove_own_row($1, 'register_worker_directive', $2);
