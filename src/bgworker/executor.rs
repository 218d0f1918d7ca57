//! An executor of SQL jobs (sql/050_sql_jobs.sql, src/api/sql_jobs.rs): job after job, each one's
//! statements as its owner, and its completion in the same transaction.

use pgrx::bgworkers::*;
use pgrx::prelude::*;

use super::{database_name, EXECUTOR_TYPE};
use crate::api::sql_jobs::{next_sql_job, SqlJob};

// utils/timeout.h, which pgrx does not bind. The server arms STATEMENT_TIMEOUT only for
// statements from a client, so the executor arms it around the job's SQL itself.
const STATEMENT_TIMEOUT: u32 = 3;
unsafe extern "C-unwind" {
    fn enable_timeout_after(id: u32, delay_ms: i32);
    fn disable_timeout(id: u32, keep_indicator: bool);
}

/// What a session keeps from one transaction to the next, dropped before each job, as DISCARD ALL
/// drops it for a connection pooler's next client: the job before's session advisory locks (held
/// even when its transaction rolled back) and sequence values (the executor's own too:
/// `lastval()` in a job would name the sequence of `job_runs`). A job's settings are undone with
/// its transaction (see `run_as_owner_and_complete`); temporary tables, prepared statements,
/// LISTEN and cursors WITH HOLD are refused to it as a security-restricted operation.
const FORGET_SESSION: &str = "SELECT pg_catalog.pg_advisory_unlock_all(); DISCARD SEQUENCES";

/// Runs SQL jobs one after another, each as its owner, under a security-restricted context (no
/// SET ROLE back to a superuser), with its statement timeout, and completed in the same
/// transaction, so that its effects and its completion commit together or not at all. It stops
/// when no SQL job is ready (the launcher starts executors again when some are), so a queue of
/// them is run by at most pg_jobs.max_workers processes, each started once.
#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_jobs_sql_executor_main(_arg: pg_sys::Datum) {
    // Postgres's own handlers stay: SIGINT cancels the running statement (jobs_abort,
    // statement_timeout), SIGTERM ends the process.
    unsafe { pg_sys::BackgroundWorkerUnblockSignals() };
    BackgroundWorker::connect_worker_to_spi(Some(&database_name()), None);
    let pid = unsafe { pg_sys::MyProcPid };
    let name = format!("{EXECUTOR_TYPE} {pid}");
    while let Some(job) = BackgroundWorker::transaction(|| {
        let job = next_sql_job(&name, pid);
        Spi::run(FORGET_SESSION).expect("forget the job before's session");
        job
    }) {
        // A cancel that was meant for the job before (an abort that committed as it ended) must
        // not stop this one.
        unsafe { pg_sys::QueryCancelPending = 0 };
        if let Err(message) = run_as_owner_and_complete(&job) {
            BackgroundWorker::transaction(|| job.failed(&message));
        }
    }
}

fn run_as_owner_and_complete(job: &SqlJob) -> Result<(), String> {
    unsafe {
        pg_sys::SetCurrentStatementStartTimestamp();
        pg_sys::StartTransactionCommand();
        pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
    }
    let outcome = PgTryBuilder::new(|| {
        let (mut superuser, mut context) = (pg_sys::InvalidOid, 0);
        let settings = unsafe {
            pg_sys::GetUserIdAndSecContext(&mut superuser, &mut context);
            pg_sys::SetUserIdAndSecContext(
                job.owner,
                context | pg_sys::SECURITY_RESTRICTED_OPERATION as i32,
            );
            enable_timeout_after(
                STATEMENT_TIMEOUT,
                job.timeout_ms.clamp(1, i32::MAX as i64) as i32,
            );
            pg_sys::NewGUCNestLevel()
        };
        Spi::run(&job.sql).map_err(|error| error.to_string())?;
        // Nothing the job left behind may run with the extension's rights. Its deferred
        // triggers fire now, as its owner, not at the commit; every setting it changed (a
        // search_path that would resolve the completion's names in its schema, for one) is
        // undone, as at the end of a function with SET clauses.
        Spi::run("SET CONSTRAINTS ALL IMMEDIATE").map_err(|error| error.to_string())?;
        unsafe {
            disable_timeout(STATEMENT_TIMEOUT, false);
            pg_sys::AtEOXact_GUC(false, settings);
            pg_sys::SetUserIdAndSecContext(superuser, context);
            // The completion is a statement of its own: its times (the job's end_time) are now,
            // not when the job's transaction began.
            pg_sys::SetCurrentStatementStartTimestamp();
        }
        job.succeeded();
        Ok(())
    })
    .catch_others(|caught| Err(super::caught_message(caught)))
    .execute();
    unsafe {
        disable_timeout(STATEMENT_TIMEOUT, false);
        match outcome {
            Ok(()) => {
                pg_sys::PopActiveSnapshot();
                pg_sys::CommitTransactionCommand();
            }
            // Undoes the job's effects; the abort also restores the user id and context.
            Err(_) => pg_sys::AbortCurrentTransaction(),
        }
    }
    outcome
}

/// Cancels the running statement of a SQL job's executor once the calling transaction commits,
/// so that an abort which is rolled back leaves the job running.
#[pg_extern(volatile, parallel_unsafe)]
fn _cancel_executor_at_commit(pid: i32) {
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || unsafe {
        libc::kill(pid, libc::SIGINT);
    });
}
