//! The background workers: one launcher per cluster (`launcher.rs`), and executors of SQL jobs
//! (`executor.rs`), each running ready jobs until none is left.
//!
//! The launcher starts only once recovery has finished, so a standby runs nothing and a promoted
//! standby starts scheduling. Each round it calls `pgjobs._launcher_tick()` (heartbeat, rescue of
//! expired leases, the wake-up of jobs due later, schedules fired ahead of their slots, retention)
//! and then starts executors for ready SQL jobs, at most `pg_jobs.max_workers` at once. A part of
//! a round that fails is a WARNING and the others go on (sql/070_launcher.sql); a round that
//! fails as a whole (53200 while a member's transaction fills the lock table) is a WARNING too,
//! rolled back and tried again after a back-off (`launcher::survive`). Only an error outside the
//! rounds ends the process, and the postmaster starts it again a second later: the leases and keys
//! in the tables make the restart harmless.

mod executor;
mod launcher;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use pgrx::bgworkers::*;
use pgrx::prelude::*;

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
/// The database of the launcher's last round and when that round ended (Unix seconds, in the
/// low 32 bits). Where the launcher runs, it requeues expired leases as they run out (it wakes
/// for the earliest one), so claims there leave that to it instead of probing for expired leases
/// on every call: the probe reads the leased index from its start, through every dead entry a
/// long transaction keeps, and made claims slow for everyone while one was open.
static LAST_ROUND: pgrx::PgAtomic<AtomicU64> =
    unsafe { pgrx::PgAtomic::new(c"pg_jobs launcher round") };

pub(crate) fn init_shared_state() {
    pgrx::pg_shmem_init!(LAST_ROUND = AtomicU64::new(0));
}

fn now_seconds() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
        & 0xffff_ffff
}

/// Called by the launcher when a round has committed.
fn round_finished() {
    let database = u64::from(unsafe { pg_sys::MyDatabaseId }.to_u32());
    LAST_ROUND
        .get()
        .store(database << 32 | now_seconds(), Ordering::Relaxed);
}

/// Whether the launcher requeues expired leases in this database: it finished a round here within
/// twice its longest sleep (`pg_jobs.refresh_interval`). Otherwise (another database, a launcher
/// that stopped or is stuck) claims requeue them.
pub(crate) fn rescues_expired_leases_here() -> bool {
    let state = LAST_ROUND.get().load(Ordering::Relaxed);
    let database = u64::from(unsafe { pg_sys::MyDatabaseId }.to_u32());
    let longest_sleep = gucs::REFRESH_INTERVAL.get().max(1) as u64;
    state >> 32 == database
        && (now_seconds().wrapping_sub(state & 0xffff_ffff) & 0xffff_ffff) <= 2 * longest_sleep + 1
}

/// The message of an error caught by a `PgTryBuilder` (a Postgres error or a panic).
pub(crate) fn caught_message(caught: pg_sys::panic::CaughtError) -> String {
    match caught {
        pg_sys::panic::CaughtError::PostgresError(report)
        | pg_sys::panic::CaughtError::ErrorReport(report)
        | pg_sys::panic::CaughtError::RustPanic {
            ereport: report, ..
        } => report.message().to_string(),
    }
}

pub(crate) const PINNED_SEARCH_PATH: &std::ffi::CStr = c"pg_catalog, pg_temp";

pub(crate) const EXTENSION_INSTALLED: &str =
    "SELECT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'pg_jobs')";

pub(crate) fn database_name() -> String {
    gucs::DATABASE_NAME
        .get()
        .and_then(|name| name.into_string().ok())
        .unwrap_or_else(|| "postgres".to_string())
}
