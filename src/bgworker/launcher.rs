//! The launcher: its rounds (`_launcher_tick`, sql/070_launcher.sql) and the SQL jobs it hands
//! to executors.

use std::time::Duration;

use pgrx::bgworkers::*;
use pgrx::prelude::*;

use super::{database_name, EXECUTOR_TYPE, EXTENSION_INSTALLED, LAUNCHER_TYPE, PINNED_SEARCH_PATH};
use crate::gucs;

/// The launcher's settings: the pinned search_path, and never a long wait for a lock (see
/// `_launcher_tick`), so that no member can stop it for everyone by holding a row.
fn pin_launcher_settings() {
    for (name, value) in [
        (c"search_path", PINNED_SEARCH_PATH),
        (c"lock_timeout", c"1s"),
    ] {
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

#[pg_guard]
#[unsafe(no_mangle)]
pub extern "C-unwind" fn pg_jobs_launcher_main(_arg: pg_sys::Datum) {
    BackgroundWorker::attach_signal_handlers(SignalWakeFlags::SIGHUP);
    // SIGTERM as a backend takes it (pg_terminate_backend, DROP DATABASE ... WITH (FORCE), a fast
    // shutdown): the statement under way ends at its next check for interrupts. With a flag read
    // between rounds, a round of several seconds (a big queue's minutes) outlasted the 5 s that
    // DROP DATABASE ... WITH (FORCE) waits, and delayed every fast shutdown.
    unsafe { pg_sys::pqsignal(pg_sys::SIGTERM as i32, Some(postgres_die)) };
    BackgroundWorker::connect_worker_to_spi(Some(&database_name()), None);
    pin_launcher_settings();
    log!(
        "{LAUNCHER_TYPE} started in database \"{}\"",
        database_name()
    );

    let started_at = BackgroundWorker::transaction(|| {
        Spi::get_one::<TimestampWithTimeZone>("SELECT pg_catalog.now()")
            .ok()
            .flatten()
    });
    crate::api::due::launcher_started();
    let mut executors: Vec<DynamicBackgroundWorker> = Vec::new();
    let mut sleep = Duration::ZERO;
    let mut failures: u32 = 0;
    while BackgroundWorker::wait_latch(Some(sleep)) {
        pgrx::check_for_interrupts!();
        if BackgroundWorker::sighup_received() {
            unsafe { pg_sys::ProcessConfigFile(pg_sys::GucContext::PGC_SIGHUP) };
        }
        executors.retain(|executor| {
            !matches!(
                executor.pid(),
                Err(BackgroundWorkerStatus::Stopped | BackgroundWorkerStatus::PostmasterDied)
            )
        });
        let running = executors.len();
        let mut round_done = false;
        match survive("round", || tick(started_at, running)) {
            Some((wait, done)) => {
                if done {
                    super::round_finished();
                }
                round_done = done;
                failures = 0;
                sleep = wait;
            }
            None => {
                // Backs off (1, 2, 4 ... seconds, up to pg_jobs.refresh_interval) while the
                // rounds fail, as they do while the server's lock table is full.
                failures = failures.saturating_add(1);
                sleep = Duration::from_secs(1u64 << (failures - 1).min(16)).min(refresh_interval());
            }
        }
        start_sql_jobs(&mut executors);
        // Only after a round that ran: while the rounds fail (or the extension is not installed),
        // a wake-up due would end every back-off, and every sleep, at once.
        if round_done {
            sleep = crate::api::due::launcher_sleeps(sleep);
        }
    }
    // Only the postmaster's death ends the loop (a SIGTERM ends the process with FATAL, exit code
    // 1). Exiting with 1 has the postmaster start it again a second later, unless the server is
    // shutting down: a pg_terminate_backend or a DROP DATABASE ... WITH (FORCE) of its database
    // must not leave the cluster without a launcher until the next restart (an exit with 0 would).
    log!("{LAUNCHER_TYPE} stopped");
    unsafe { pg_sys::proc_exit(1) };
}

unsafe extern "C-unwind" {
    /// PostgreSQL's SIGTERM handler of a backend (tcop/postgres.c).
    #[link_name = "die"]
    fn postgres_die(signal: std::ffi::c_int);
}

fn refresh_interval() -> Duration {
    Duration::from_secs(gucs::REFRESH_INTERVAL.get().max(1) as u64)
}

/// Runs `body` in a transaction of its own; an error in it (any statement of the round may fail
/// with 53200 while a member's transaction fills the server's lock table) is logged and the
/// transaction rolled back, and the launcher goes on: it used to exit, and be restarted by the
/// postmaster a second later, only to fail again (4 exits in 4 s).
fn survive<R>(what: &str, body: impl FnOnce() -> R + std::panic::UnwindSafe) -> Option<R> {
    unsafe {
        pg_sys::SetCurrentStatementStartTimestamp();
        pg_sys::StartTransactionCommand();
        pg_sys::PushActiveSnapshot(pg_sys::GetTransactionSnapshot());
    }
    let outcome = PgTryBuilder::new(move || {
        let result = body();
        unsafe {
            pg_sys::PopActiveSnapshot();
            pg_sys::CommitTransactionCommand();
        }
        Ok(result)
    })
    .catch_others(|caught| Err(super::caught_message(caught)))
    .execute();
    outcome
        .map_err(|message| {
            unsafe { pg_sys::AbortCurrentTransaction() };
            warning!("{LAUNCHER_TYPE}: its {what} failed, tried again later: {message}");
        })
        .ok()
}

/// One round of `_launcher_tick`; returns how long to sleep before the next, and whether a round
/// ran (not where the extension is not installed).
fn tick(started_at: Option<TimestampWithTimeZone>, running_sql_jobs: usize) -> (Duration, bool) {
    let refresh = refresh_interval();
    if !matches!(Spi::get_one::<bool>(EXTENSION_INSTALLED), Ok(Some(true))) {
        return (refresh, false);
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
    // A time already past (SQL jobs waiting for a free executor, an expired lease or a schedule
    // whose row a member holds) would start round after round, a CPU's worth: it waits a second
    // instead. An executor that ends, a new SQL job or a change of schedules wakes it sooner.
    let seconds = if seconds > 0.0 { seconds } else { 1.0 };
    (
        Duration::from_secs_f64(seconds.min(refresh.as_secs_f64())),
        true,
    )
}

/// Starts executors for the ready SQL jobs, at most pg_jobs.max_workers running at once; each
/// runs ready jobs until there are none (executor.rs). A job that finds no free executor waits
/// for one to take it.
fn start_sql_jobs(executors: &mut Vec<DynamicBackgroundWorker>) {
    let free = (gucs::MAX_WORKERS.get().max(0) as usize).saturating_sub(executors.len());
    if free == 0 {
        return;
    }
    let ready = survive("count of ready SQL jobs", || {
        let installed = Spi::get_one::<bool>(EXTENSION_INSTALLED);
        if installed != Ok(Some(true)) {
            return 0;
        }
        crate::api::sql_jobs::ready_sql_jobs(free as i32)
    })
    .unwrap_or_default();
    for _ in 0..ready {
        let started = BackgroundWorkerBuilder::new(EXECUTOR_TYPE)
            .set_type(EXECUTOR_TYPE)
            .set_library("pg_jobs")
            .set_function("pg_jobs_sql_executor_main")
            .enable_spi_access()
            .set_notify_pid(unsafe { pg_sys::MyProcPid })
            .load_dynamic();
        match started {
            Ok(executor) => executors.push(executor),
            Err(_) => {
                warning!(
                    "pg_jobs: no background worker slot for an executor of SQL jobs; they wait for one \
                     (raise max_worker_processes or lower pg_jobs.max_workers)"
                );
                break;
            }
        }
    }
}
