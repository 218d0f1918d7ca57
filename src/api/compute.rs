//! The compute tables' public functions (`sql/080_compute.sql`): join secrets, the deletes
//! members make through functions, and the rows of the view `compute_groups_jobs_by_job`.

use super::call::{call_as_owner, Parameters, Planning, Statement};
use crate::entry;

const STATEMENTS: &str = include_str!("compute.sql");

static COMPUTE_GROUPS_JOBS_BY_JOB: Statement = Statement::new(
    STATEMENTS,
    "compute_groups_jobs_by_job",
    Parameters::CallerThenArguments,
    Planning::Default,
);
static COMPUTE_GROUP_SET_SECRET: Statement = Statement::new(
    STATEMENTS,
    "compute_group_set_secret",
    Parameters::CallerThenArguments,
    Planning::Default,
);
static COMPUTE_GROUP_REMOVE_ORIGIN: Statement = Statement::new(
    STATEMENTS,
    "compute_group_remove_origin",
    Parameters::CallerThenArguments,
    Planning::Default,
);
static WORKER_REMOVE: Statement =
    Statement::new(STATEMENTS, "worker_remove", Parameters::CallerThenArguments, Planning::Default);
static WORKER_CONFIG_REMOVE: Statement =
    Statement::new(STATEMENTS, "worker_config_remove", Parameters::CallerThenArguments, Planning::Default);
static WORKER_CREDS_REMOVE: Statement =
    Statement::new(STATEMENTS, "worker_creds_remove", Parameters::CallerThenArguments, Planning::Default);
static WORKER_APP_CONFIG_REMOVE: Statement = Statement::new(
    STATEMENTS,
    "worker_app_config_remove",
    Parameters::CallerThenArguments,
    Planning::Default,
);
static CREDS_LIST_REMOVE: Statement =
    Statement::new(STATEMENTS, "creds_list_remove", Parameters::CallerThenArguments, Planning::Default);
static CREDENTIAL_REMOVE: Statement =
    Statement::new(STATEMENTS, "credential_remove", Parameters::CallerThenArguments, Planning::Default);
static WORKER_NOTIFICATION_REMOVE: Statement = Statement::new(
    STATEMENTS,
    "worker_notification_remove",
    Parameters::CallerThenArguments,
    Planning::Default,
);
static REGISTER_WORKER_DIRECTIVE_REMOVE: Statement = Statement::new(
    STATEMENTS,
    "register_worker_directive_remove",
    Parameters::CallerThenArguments,
    Planning::Default,
);

// The view's rows: the caller's jobs' groups, read as the extension's owner (a job's owner does
// not own the groups its jobs are in).
entry!(_caller_compute_groups_jobs_by_job, pg_finfo__caller_compute_groups_jobs_by_job, |fcinfo| {
    call_as_owner(fcinfo, &COMPUTE_GROUPS_JOBS_BY_JOB)
});
entry!(compute_group_set_secret, pg_finfo_compute_group_set_secret, |fcinfo| {
    call_as_owner(fcinfo, &COMPUTE_GROUP_SET_SECRET)
});
entry!(compute_group_remove_origin, pg_finfo_compute_group_remove_origin, |fcinfo| {
    call_as_owner(fcinfo, &COMPUTE_GROUP_REMOVE_ORIGIN)
});
entry!(worker_remove, pg_finfo_worker_remove, |fcinfo| {
    call_as_owner(fcinfo, &WORKER_REMOVE)
});
entry!(worker_config_remove, pg_finfo_worker_config_remove, |fcinfo| {
    call_as_owner(fcinfo, &WORKER_CONFIG_REMOVE)
});
entry!(worker_creds_remove, pg_finfo_worker_creds_remove, |fcinfo| {
    call_as_owner(fcinfo, &WORKER_CREDS_REMOVE)
});
entry!(worker_app_config_remove, pg_finfo_worker_app_config_remove, |fcinfo| {
    call_as_owner(fcinfo, &WORKER_APP_CONFIG_REMOVE)
});
entry!(creds_list_remove, pg_finfo_creds_list_remove, |fcinfo| {
    call_as_owner(fcinfo, &CREDS_LIST_REMOVE)
});
entry!(credential_remove, pg_finfo_credential_remove, |fcinfo| {
    call_as_owner(fcinfo, &CREDENTIAL_REMOVE)
});
entry!(worker_notification_remove, pg_finfo_worker_notification_remove, |fcinfo| {
    call_as_owner(fcinfo, &WORKER_NOTIFICATION_REMOVE)
});
entry!(register_worker_directive_remove, pg_finfo_register_worker_directive_remove, |fcinfo| {
    call_as_owner(fcinfo, &REGISTER_WORKER_DIRECTIVE_REMOVE)
});
