//! The background workers: one launcher per cluster, and one short-lived executor per SQL job.
//!
//! The launcher starts only once recovery has finished, so a standby runs nothing and a promoted
//! standby starts scheduling. Each round it calls `pgjobs._launcher_tick()` (heartbeat, rescue of
//! expired leases, due schedules, retention) and then hands ready SQL jobs to executors, at most
//! `pg_jobs.max_workers` at once. A failing round ends the process; the postmaster starts it
//! again a second later, and the leases and keys in the tables make the restart harmless.

use std::time::Duration;

use pgrx::bgworkers::*;
use pgrx::prelude::*;

use crate::gucs;

// utils/timeout.h, which pgrx does not bind. The server arms STATEMENT_TIMEOUT only for
// statements from a client, so the executor arms it around the job's SQL itself.
const STATEMENT_TIMEOUT: u32 = 3;
unsafe extern "C-unwind" {
    fn enable_timeout_after(id: u32, delay_ms: i32);
    fn disable_timeout(id: u32, keep_indicator: bool);
}

const LAUNCHER_TYPE: &str = "pg_jobs launcher";
const EXECUTOR_TYPE: &str = "pg_jobs sql executor";

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
const PINNED_SEARCH_PATH: &std::ffi::CStr = c"pg_catalog, pg_temp";

/// The launcher's settings: the pinned search_path, and never a long wait for a lock (see
/// `_launcher_tick`), so that no member can stop it for everyone by holding a row.
fn pin_launcher_settings() {
    for (name, value) in [(c"search_path", PINNED_SEARCH_PATH), (c"lock_timeout", c"1s")] {
        unsafe {
            pg_sys::SetConfigOption(
                name.as_ptr(),
                value.as_ptr(),
                pg_sys::GucContext::PGC_SUSET,
                pg_sys::GucSource::PGC_S_SESSION,
            )
        };
    }
}

/// The pinned search_path until the end of the executor's current transaction.
fn pin_search_path_locally() {
    Spi::run(&format!("SET LOCAL search_path = {}", PINNED_SEARCH_PATH.to_string_lossy())).expect("pin search_path");
}

const EXTENSION_INSTALLED: &str =
    "SELECT EXISTS (SELECT FROM pg_catalog.pg_extension WHERE extname = 'pg_jobs')";

fn database_name() -> String {
    gucs::DATABASE_NAME
        .get()
        .and_then(|name| name.into_string().ok())
        .unwrap_or_else(|| "postgres".to_string())
}

#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_jobs_launcher_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP | SignalWakeFlags::SIGTERM);
    BackgroundWorker::connect_worker_to_spi(Some(&database_name()), None);
    pin_launcher_settings();
    log!("{LAUNCHER_TYPE} started in database \"{}\"", database_name());

    let started_at = BackgroundWorker::transaction(|| {
        Spi::get_one::<TimestampWithTimeZone>("SELECT pg_catalog.now()").ok().flatten()
    });
    let mut executors: Vec<DynamicBackgroundWorker> = Vec::new();
    let mut sleep = Duration::ZERO;
    while BackgroundWorker::wait_latch(Some(sleep)) {
        if BackgroundWorker::sighup_received() {
            unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
        }
        executors.retain(|executor| {
            !matches!(executor.pid(), Err(BackgroundWorkerStatus::Stopped | BackgroundWorkerStatus::PostmasterDied))
        });
        let running = executors.len();
        sleep = BackgroundWorker::transaction(|| tick(started_at, running));
        start_sql_jobs(&mut executors);
    }
    // Exiting with 1 has the postmaster start it again a second later, unless the server is
    // shutting down: a pg_terminate_backend or a DROP DATABASE ... WITH (FORCE) of its database
    // must not leave the cluster without a launcher until the next restart (an exit with 0 would).
    log!("{LAUNCHER_TYPE} stopped");
    unsafe { pg_sys::proc_exit(1) };
}

/// One round of `_launcher_tick`; returns how long to sleep before the next.
fn tick(started_at: Option<TimestampWithTimeZone>, running_sql_jobs: usize) -> Duration {
    let refresh = Duration::from_secs(gucs::REFRESH_INTERVAL.get().max(1) as u64);
    if !matches!(Spi::get_one::<bool>(EXTENSION_INSTALLED), Ok(Some(true))) {
        return refresh;
    }
    let doing = format!("scheduling; {running_sql_jobs} SQL jobs running");
    Spi::run_with_args(
        "SELECT pgjobs._launcher_heartbeat(pg_catalog.pg_backend_pid(), $1, $2)",
        &[started_at.into(), doing.as_str().into()],
    )
    .expect("heartbeat");
    let seconds = Spi::get_one::<f64>(
        "SELECT pg_catalog.date_part('epoch', pgjobs._launcher_tick() - pg_catalog.clock_timestamp())",
    )
    .expect("launcher tick")
    .unwrap_or(refresh.as_secs_f64());
    Duration::from_secs_f64(seconds.clamp(0.0, refresh.as_secs_f64()))
}

/// Claims ready SQL jobs for the free executor slots and starts one executor per job. A job
/// whose executor cannot start stays claimed until its lease runs out, then it is requeued.
fn start_sql_jobs(executors: &mut Vec<DynamicBackgroundWorker>) {
    let free = (gucs::MAX_WORKERS.get().max(0) as usize).saturating_sub(executors.len());
    if free == 0 {
        return;
    }
    let claimed: Vec<(i64, pgrx::Uuid)> = BackgroundWorker::transaction(|| {
        Spi::connect_mut(|client| {
            let Ok(Some(true)) = client.select(EXTENSION_INSTALLED, None, &[]).and_then(|rows| rows.first().get_one::<bool>())
            else {
                return Vec::new();
            };
            client
                .update(
                    "SELECT id, lease_token FROM pgjobs._claim($1, ARRAY[pgjobs._sql_queue()], $2, NULL, pgjobs._extension_claimant())",
                    None,
                    &[LAUNCHER_TYPE.into(), (free as i32).into()],
                )
                .expect("claim SQL jobs")
                .filter_map(|row| Some((row.get::<i64>(1).ok()??, row.get::<pgrx::Uuid>(2).ok()??)))
                .collect()
        })
    });
    for (job, token) in claimed {
        // The token travels to the executor as 32 hex digits in the worker's extra bytes.
        let token = format!("{:032x}", u128::from_be_bytes(*token.as_bytes()));
        let started = BackgroundWorkerBuilder::new(&format!("{EXECUTOR_TYPE} for job {job}"))
            .set_type(EXECUTOR_TYPE)
            .set_library("pg_jobs")
            .set_function("pg_jobs_sql_executor_main")
            .enable_spi_access()
            .set_argument(job.into_datum())
            .set_extra(&token)
            .set_notify_pid(unsafe { pg_sys::MyProcPid })
            .load_dynamic();
        match started {
            Ok(executor) => executors.push(executor),
            Err(_) => warning!(
                "pg_jobs: no background worker slot for SQL job {job}; it is retried when its lease runs out \
                 (raise max_worker_processes or lower pg_jobs.max_workers)"
            ),
        }
    }
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
    let SqlJob { sql, timeout_ms, owner, run } =
        started.unwrap_or_else(|problem| error!("pg_jobs: SQL job {job} cannot start: {problem}"));

    if let Err(message) = run_as_owner_and_complete(job, token, run, &sql, timeout_ms, owner) {
        BackgroundWorker::transaction(|| {
            pin_search_path_locally();
            Spi::run_with_args(
                "SELECT pgjobs._sql_job_failed($1, $2, $3, $4)",
                &[run.into(), job.into(), token.into(), message.as_str().into()],
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
            timeout_ms: row.get::<i64>(2)?.ok_or(StartError::Missing("timeout_ms"))?,
            owner: row.get::<pg_sys::Oid>(3)?.ok_or(StartError::Missing("owner"))?,
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
            pg_sys::SetUserIdAndSecContext(owner, context | pg_sys::SECURITY_RESTRICTED_OPERATION as i32);
            enable_timeout_after(STATEMENT_TIMEOUT, timeout_ms.clamp(1, i32::MAX as i64) as i32);
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
    .catch_others(|caught| {
        Err(match caught {
            pg_sys::panic::CaughtError::PostgresError(report)
            | pg_sys::panic::CaughtError::ErrorReport(report)
            | pg_sys::panic::CaughtError::RustPanic { ereport: report, .. } => report.message().to_string(),
        })
    })
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
