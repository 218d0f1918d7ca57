//! The executor of one SQL job (sql/050_sql_jobs.sql): its statements as the job's owner, and its
//! completion in the same transaction.

use pgrx::bgworkers::*;
use pgrx::prelude::*;

use super::{database_name, PINNED_SEARCH_PATH};

// utils/timeout.h, which pgrx does not bind. The server arms STATEMENT_TIMEOUT only for
// statements from a client, so the executor arms it around the job's SQL itself.
const STATEMENT_TIMEOUT: u32 = 3;
unsafe extern "C-unwind" {
    fn enable_timeout_after(id: u32, delay_ms: i32);
    fn disable_timeout(id: u32, keep_indicator: bool);
}

/// The pinned search_path until the end of the executor's current transaction.
fn pin_search_path_locally() {
    Spi::run(&format!(
        "SET LOCAL search_path = {}",
        PINNED_SEARCH_PATH.to_string_lossy()
    ))
    .expect("pin search_path");
}

/// Runs one SQL job: as its owner, under a security-restricted context (no SET ROLE back to a
/// superuser), with its statement timeout, and completes it in the same transaction, so that its
/// effects and its completion commit together or not at all.
#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_jobs_sql_executor_main(arg: pg_sys::Datum) {
    // Postgres's own handlers stay: SIGINT cancels the running statement (jobs_abort,
    // statement_timeout), SIGTERM ends the process.
    unsafe { pg_sys::BackgroundWorkerUnblockSignals() };
    let Some(job) = (unsafe { i64::from_datum(arg, false) }) else {
        return;
    };
    let Ok(token) = u128::from_str_radix(BackgroundWorker::get_extra(), 16) else {
        return;
    };
    let token = pgrx::Uuid::from_bytes(token.to_be_bytes());
    BackgroundWorker::connect_worker_to_spi(Some(&database_name()), None);

    let started = BackgroundWorker::transaction(|| {
        pin_search_path_locally();
        start_sql_job(job, token)
    });
    // The lease stays with this executor until it runs out; then the job is retried.
    let SqlJob {
        sql,
        timeout_ms,
        owner,
        run,
    } = started.unwrap_or_else(|problem| error!("pg_jobs: SQL job {job} cannot start: {problem}"));

    if let Err(message) = run_as_owner_and_complete(job, token, run, &sql, timeout_ms, owner) {
        BackgroundWorker::transaction(|| {
            pin_search_path_locally();
            Spi::run_with_args(
                "SELECT pgjobs._sql_job_failed($1, $2, $3, $4)",
                &[
                    run.into(),
                    job.into(),
                    token.into(),
                    message.as_str().into(),
                ],
            )
            .expect("report failed SQL job");
        });
    }
}

/// What an executor needs to run one SQL job, read under its lease.
struct SqlJob {
    sql: String,
    timeout_ms: i64,
    owner: pg_sys::Oid,
    run: i64,
}

#[derive(Debug)]
enum StartError {
    Spi(pgrx::spi::Error),
    Missing(&'static str),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Spi(error) => write!(f, "{error}"),
            StartError::Missing(column) => write!(f, "_sql_job_start returned no {column}"),
        }
    }
}

impl From<pgrx::spi::Error> for StartError {
    fn from(error: pgrx::spi::Error) -> Self {
        StartError::Spi(error)
    }
}

/// Checks the lease, records the run and reads the job (`_sql_job_start`).
fn start_sql_job(job: i64, token: pgrx::Uuid) -> Result<SqlJob, StartError> {
    Spi::connect_mut(|client| {
        let row = client
            .update(
                "SELECT sql, timeout_ms, owner, run_id FROM pgjobs._sql_job_start($1, $2, pg_catalog.pg_backend_pid())",
                Some(1),
                &[job.into(), token.into()],
            )?
            .first();
        Ok(SqlJob {
            sql: row.get::<String>(1)?.ok_or(StartError::Missing("sql"))?,
            timeout_ms: row
                .get::<i64>(2)?
                .ok_or(StartError::Missing("timeout_ms"))?,
            owner: row
                .get::<pg_sys::Oid>(3)?
                .ok_or(StartError::Missing("owner"))?,
            run: row.get::<i64>(4)?.ok_or(StartError::Missing("run_id"))?,
        })
    })
}

fn run_as_owner_and_complete(
    job: i64,
    token: pgrx::Uuid,
    run: i64,
    sql: &str,
    timeout_ms: i64,
    owner: pg_sys::Oid,
) -> Result<(), String> {
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
                owner,
                context | pg_sys::SECURITY_RESTRICTED_OPERATION as i32,
            );
            enable_timeout_after(
                STATEMENT_TIMEOUT,
                timeout_ms.clamp(1, i32::MAX as i64) as i32,
            );
            pg_sys::NewGUCNestLevel()
        };
        Spi::run(sql).map_err(|error| error.to_string())?;
        // Nothing the job left behind may run with the extension's rights. Its deferred
        // triggers fire now, as its owner, not at the commit; every setting it changed (a
        // search_path that would resolve the completion's names in its schema, for one) is
        // undone, as at the end of a function with SET clauses.
        Spi::run("SET CONSTRAINTS ALL IMMEDIATE").map_err(|error| error.to_string())?;
        unsafe {
            disable_timeout(STATEMENT_TIMEOUT, false);
            pg_sys::AtEOXact_GUC(false, settings);
            pg_sys::SetUserIdAndSecContext(superuser, context);
        }
        pin_search_path_locally();
        Spi::run_with_args(
            "SELECT pgjobs.jobs_complete($1, $2), pgjobs._sql_job_end($3, 'succeeded')",
            &[job.into(), token.into(), run.into()],
        )
        .map_err(|error| error.to_string())
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
