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
    log!("{LAUNCHER_TYPE} started in database \"{}\"", database_name());

    let started_at = BackgroundWorker::transaction(|| {
        Spi::get_one::<String>("SELECT now()::text").ok().flatten().unwrap_or_default()
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
        sleep = BackgroundWorker::transaction(|| tick(&started_at, running));
        start_sql_jobs(&mut executors);
    }
    log!("{LAUNCHER_TYPE} stopped");
}

/// One round of `_launcher_tick`; returns how long to sleep before the next.
fn tick(started_at: &str, running_sql_jobs: usize) -> Duration {
    let refresh = Duration::from_secs(gucs::REFRESH_INTERVAL.get().max(1) as u64);
    let installed = Spi::get_one::<bool>(
        "SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_jobs')",
    );
    if !matches!(installed, Ok(Some(true))) {
        return refresh;
    }
    let doing = format!("scheduling; {running_sql_jobs} SQL jobs running");
    Spi::run_with_args(
        "SELECT pgjobs._launcher_heartbeat(pg_backend_pid(), $1::timestamptz, $2)",
        &[started_at.into(), doing.as_str().into()],
    )
    .expect("heartbeat");
    let seconds = Spi::get_one::<f64>(
        "SELECT extract(epoch FROM pgjobs._launcher_tick() - clock_timestamp())::float8",
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
    let claimed: Vec<(i64, String)> = BackgroundWorker::transaction(|| {
        Spi::connect_mut(|client| {
            let Ok(Some(true)) = client
                .select("SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'pg_jobs')", None, &[])
                .and_then(|rows| rows.first().get_one::<bool>())
            else {
                return Vec::new();
            };
            client
                .update(
                    "SELECT id, lease_token::text FROM pgjobs._claim($1, ARRAY['pg_jobs.sql'], $2, NULL, 0)",
                    None,
                    &[LAUNCHER_TYPE.into(), (free as i32).into()],
                )
                .expect("claim SQL jobs")
                .map(|row| {
                    (
                        row.get::<i64>(1).ok().flatten().unwrap_or_default(),
                        row.get::<String>(2).ok().flatten().unwrap_or_default(),
                    )
                })
                .collect()
        })
    });
    for (job, token) in claimed {
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
    let token = BackgroundWorker::get_extra().to_string();
    BackgroundWorker::connect_worker_to_spi(Some(&database_name()), None);

    let (sql, timeout_ms, owner, run) = BackgroundWorker::transaction(|| {
        Spi::connect_mut(|client| {
            let row = client
                .update(
                    "SELECT sql, timeout_ms, owner, run_id FROM pgjobs._sql_job_start($1, $2::uuid, pg_backend_pid())",
                    Some(1),
                    &[job.into(), token.as_str().into()],
                )
                .expect("start SQL job")
                .first();
            (
                row.get::<String>(1).ok().flatten().unwrap_or_default(),
                row.get::<i64>(2).ok().flatten().unwrap_or(3_600_000),
                row.get::<pg_sys::Oid>(3).ok().flatten().unwrap_or(pg_sys::InvalidOid),
                row.get::<i64>(4).ok().flatten().unwrap_or_default(),
            )
        })
    });

    if let Err(message) = run_as_owner_and_complete(job, &token, run, &sql, timeout_ms, owner) {
        BackgroundWorker::transaction(|| {
            Spi::run_with_args(
                "SELECT pgjobs._sql_job_failed($1, $2, $3::uuid, $4)",
                &[run.into(), job.into(), token.as_str().into(), message.as_str().into()],
            )
            .expect("report failed SQL job");
        });
    }
}

fn run_as_owner_and_complete(
    job: i64,
    token: &str,
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
        unsafe {
            pg_sys::GetUserIdAndSecContext(&mut superuser, &mut context);
            pg_sys::SetUserIdAndSecContext(owner, context | pg_sys::SECURITY_RESTRICTED_OPERATION as i32);
            enable_timeout_after(STATEMENT_TIMEOUT, timeout_ms.clamp(1, i32::MAX as i64) as i32);
        }
        Spi::run(sql).map_err(|error| error.to_string())?;
        unsafe {
            disable_timeout(STATEMENT_TIMEOUT, false);
            pg_sys::SetUserIdAndSecContext(superuser, context);
        }
        Spi::run_with_args(
            "SELECT pgjobs.jobs_complete($1, $2::uuid), pgjobs._sql_job_end($3, 'succeeded')",
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
