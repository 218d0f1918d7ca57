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

-- name: compute_group_public
-- Any group by its opaque id $2, listed or not: its public fields only.
SELECT g.opaque_id, g.name, g.description FROM compute_groups g WHERE g.opaque_id = $2;

-- name: compute_group_check_secret
SELECT _join_check($1, $2, $3, $4) IS NOT NULL;

-- name: compute_deploy
SELECT _compute_deploy($1, $2);

-- name: compute_add_slices
SELECT _compute_add_slices($1, $2, $3, $4);

-- name: compute_pause
SELECT _compute_control($1, $2, 'pause', NULL);

-- name: compute_resume
SELECT _compute_control($1, $2, 'resume', NULL);

-- name: compute_close
SELECT _compute_control($1, $2, 'close', NULL);

-- name: compute_cancel
SELECT _compute_control($1, $2, 'cancel', NULL);

-- name: compute_fund
SELECT _compute_control($1, $2, 'fund', $3);

-- name: compute_worker_register
SELECT _compute_worker_register($1, $2, $3, $4, $5, $6, $7, $8);

-- name: compute_worker_join
SELECT _compute_worker_join($1, $2, $3, $4);

-- name: compute_worker_leave
SELECT _compute_worker_leave($1, $2);

-- name: compute_fetch
SELECT * FROM _compute_fetch($1, $2);

-- name: compute_progress
SELECT _compute_progress($1, $2, $3);

-- name: compute_return
SELECT _compute_return($1, $2, $3, NULL, NULL, NULL);

-- name: compute_reject
SELECT _compute_return($1, $2, NULL, coalesce($3, 'EWORKREJECT'), $4, $5);

-- name: compute_submit
SELECT * FROM _compute_submit($1, $2, $3, $4, $5, $6, $7, $8, $9);

-- name: tick
-- The launcher's round at $1 (see compute.rs's COMPUTE).
SELECT _compute_tick($1);

-- name: next_look
-- Compute slices out or results to fold: the watchdog and the fold every second.
SELECT $1 + interval '1 second'
WHERE EXISTS (SELECT FROM compute_slices s WHERE s.lease_token IS NOT NULL)
   OR EXISTS (SELECT FROM slice_reports r WHERE r.folded_seq IS NULL)
   OR EXISTS (SELECT FROM compute_tasks);
