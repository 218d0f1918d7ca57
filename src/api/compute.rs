//! The compute tables' public functions (`sql/080_compute.sql`): join secrets, the deletes
//! members make through functions, and the rows of the view `compute_groups_jobs_by_job`.

use crate::owner_call;

const STATEMENTS: &str = include_str!("compute.sql");

// The view's rows: the caller's jobs' groups, read as the extension's owner (a job's owner does
// not own the groups its jobs are in).
owner_call!(
    _caller_compute_groups_jobs_by_job,
    pg_finfo__caller_compute_groups_jobs_by_job,
    STATEMENTS,
    "compute_groups_jobs_by_job"
);
owner_call!(
    compute_group_set_secret,
    pg_finfo_compute_group_set_secret,
    STATEMENTS,
    "compute_group_set_secret"
);
owner_call!(
    compute_group_remove_origin,
    pg_finfo_compute_group_remove_origin,
    STATEMENTS,
    "compute_group_remove_origin"
);
owner_call!(
    worker_remove,
    pg_finfo_worker_remove,
    STATEMENTS,
    "worker_remove"
);
owner_call!(
    worker_config_remove,
    pg_finfo_worker_config_remove,
    STATEMENTS,
    "worker_config_remove"
);
owner_call!(
    worker_creds_remove,
    pg_finfo_worker_creds_remove,
    STATEMENTS,
    "worker_creds_remove"
);
owner_call!(
    worker_app_config_remove,
    pg_finfo_worker_app_config_remove,
    STATEMENTS,
    "worker_app_config_remove"
);
owner_call!(
    creds_list_remove,
    pg_finfo_creds_list_remove,
    STATEMENTS,
    "creds_list_remove"
);
owner_call!(
    credential_remove,
    pg_finfo_credential_remove,
    STATEMENTS,
    "credential_remove"
);
owner_call!(
    worker_notification_remove,
    pg_finfo_worker_notification_remove,
    STATEMENTS,
    "worker_notification_remove"
);
owner_call!(
    register_worker_directive_remove,
    pg_finfo_register_worker_directive_remove,
    STATEMENTS,
    "register_worker_directive_remove"
);
// Read as the extension's owner, whoever calls: public fields of a row found by its opaque id,
// and whether join credentials match (members cannot read the hash).
owner_call!(
    compute_group_public,
    pg_finfo_compute_group_public,
    STATEMENTS,
    "compute_group_public"
);
owner_call!(
    jobs_public_lookup,
    pg_finfo_jobs_public_lookup,
    STATEMENTS,
    "jobs_public_lookup"
);
owner_call!(
    compute_group_check_secret,
    pg_finfo_compute_group_check_secret,
    STATEMENTS,
    "compute_group_check_secret"
);
