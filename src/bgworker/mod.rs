//! The background workers: one launcher per cluster (`launcher.rs`), and one short-lived executor
//! per SQL job (`executor.rs`).
//!
//! The launcher starts only once recovery has finished, so a standby runs nothing and a promoted
//! standby starts scheduling. Each round it calls `pgjobs._launcher_tick()` (heartbeat, rescue of
//! expired leases, due schedules, retention) and then hands ready SQL jobs to executors, at most
//! `pg_jobs.max_workers` at once. A part of a round that fails is a WARNING and the others go on
//! (sql/070_launcher.sql); an error outside them ends the process, and the postmaster starts it
//! again a second later: the leases and keys in the tables make the restart harmless.

mod executor;
mod launcher;

use std::time::Duration;

use pgrx::bgworkers::*;

use crate::gucs;

pub(crate) const LAUNCHER_TYPE: &str = "pg_jobs launcher";
pub(crate) const EXECUTOR_TYPE: &str = "pg_jobs sql executor";

pub fn register_launcher() {
    BackgroundWorkerBuilder::new(LAUNCHER_TYPE)
        .set_type(LAUNCHER_TYPE)
        .set_library("pg_jobs")
        .set_function("pg_jobs_launcher_main")
        .enable_spi_access()
        .set_start_time(BgWorkerStartTime::RecoveryFinished)
        .set_restart_time(Some(Duration::from_secs(1)))
        .load();
}

/// What the background workers' own statements resolve names with, whatever the database's or
/// the role's settings say: a database owner who set `search_path = public, pg_catalog` and made
/// a `public.pg_backend_pid()` would have had them run it as the superuser. The statements
/// qualify their relations and functions too; this covers operators and types. The launcher
/// pins it for its whole session; an executor for each of its own transactions, since the job's
/// statements run with the database's settings, as their owner would have them.
pub(crate) const PINNED_SEARCH_PATH: &std::ffi::CStr = c"pg_catalog, pg_temp";

pub(crate) const EXTENSION_INSTALLED: &str =
    "SELECT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'pg_jobs')";

pub(crate) fn database_name() -> String {
    gucs::DATABASE_NAME
        .get()
        .and_then(|name| name.into_string().ok())
        .unwrap_or_else(|| "postgres".to_string())
}
