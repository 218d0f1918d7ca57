//! Every `pg_jobs.*` setting, defined once from `_PG_init`.
//!
//! The queue's SQL reads them with `current_setting('pg_jobs.<name>')`, so a session or a role
//! can override a default with `SET` or `ALTER ROLE ... SET` like any other setting.

use std::ffi::CString;

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting, PostgresGucEnum};

pub static LEASE: GucSetting<i32> = GucSetting::<i32>::new(60);
pub static MAX_ATTEMPTS: GucSetting<i32> = GucSetting::<i32>::new(3);
pub static BACKOFF: GucSetting<i32> = GucSetting::<i32>::new(10);
pub static MAX_BACKOFF: GucSetting<i32> = GucSetting::<i32>::new(3600);
pub static POLL_INTERVAL: GucSetting<i32> = GucSetting::<i32>::new(2);
pub static DATABASE_NAME: GucSetting<Option<CString>> =
    GucSetting::<Option<CString>>::new(Some(c"postgres"));
pub static REFRESH_INTERVAL: GucSetting<i32> = GucSetting::<i32>::new(10);
pub static MAX_WORKERS: GucSetting<i32> = GucSetting::<i32>::new(4);
pub static HISTORY_DAYS: GucSetting<i32> = GucSetting::<i32>::new(30);
pub static CANCEL_GRACE: GucSetting<i32> = GucSetting::<i32>::new(5);
pub static BATCH_SILENCE: GucSetting<i32> = GucSetting::<i32>::new(3600);
pub static COMPUTE_PROGRESS_TIMEOUT: GucSetting<i32> = GucSetting::<i32>::new(300);
pub static COMPUTE_STATS_PERIOD: GucSetting<i32> = GucSetting::<i32>::new(3600);
pub static COMPUTE_TASK_TARGET: GucSetting<i32> = GucSetting::<i32>::new(60);
pub static COMPUTE_INLINE_RESULT_BYTES: GucSetting<i32> = GucSetting::<i32>::new(4096);
pub static COMPUTE_MAX_SLICES: GucSetting<i32> = GucSetting::<i32>::new(1_000_000);
pub static CLAIM_RESCAN_INTERVAL: GucSetting<i32> = GucSetting::<i32>::new(1000);
pub static ROUTINES_STALE_AFTER: GucSetting<i32> = GucSetting::<i32>::new(60);
pub static ROUTINES_START_MODE: GucSetting<RoutinesMode> =
    GucSetting::<RoutinesMode>::new(RoutinesMode::Control);

/// The switch of a routine schedule (read by the SQL as text: 'control' or 'observe').
#[derive(Clone, Copy, Debug, PostgresGucEnum)]
pub enum RoutinesMode {
    #[name = c"control"]
    Control,
    #[name = c"observe"]
    Observe,
}

const ONE_DAY: i32 = 86_400;

pub fn init() {
    GucRegistry::define_int_guc(
        c"pg_jobs.lease",
        c"Seconds a worker holds a claimed job without renewing its lease.",
        c"After a worker dies its job is claimable again after at most this long.",
        &LEASE,
        1,
        ONE_DAY,
        GucContext::Userset,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.max_attempts",
        c"Attempts before a job is marked failed.",
        c"",
        &MAX_ATTEMPTS,
        1,
        i32::MAX,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.backoff",
        c"Seconds before the first retry; doubles with every further attempt.",
        c"",
        &BACKOFF,
        0,
        i32::MAX,
        GucContext::Userset,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.max_backoff",
        c"Longest wait between two attempts.",
        c"",
        &MAX_BACKOFF,
        0,
        i32::MAX,
        GucContext::Userset,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.poll_interval",
        c"Seconds between looks at an empty queue by workers that do not LISTEN.",
        c"Workers read it to pace their polling; NOTIFY on channel pgjobs_ready wakes them sooner.",
        &POLL_INTERVAL,
        1,
        ONE_DAY,
        GucContext::Userset,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_string_guc(
        c"pg_jobs.database_name",
        c"The database the background worker schedules and runs jobs in.",
        c"The extension must be created in this database; elsewhere it only queues.",
        &DATABASE_NAME,
        GucContext::Postmaster,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.refresh_interval",
        c"Longest time the background worker sleeps between two looks at schedules and leases.",
        c"Changes made through the schedule functions wake it at once.",
        &REFRESH_INTERVAL,
        1,
        ONE_DAY,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.max_workers",
        c"SQL jobs run at once, each in its own background worker.",
        c"Each counts against max_worker_processes, as does the launcher.",
        &MAX_WORKERS,
        0,
        1024,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.history_days",
        c"Days the background worker keeps the run history of SQL jobs.",
        c"",
        &HISTORY_DAYS,
        1,
        36_500,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.cancel_grace",
        c"Seconds a cancelled SQL job (timed out or aborted) has to stop before its process is ended.",
        c"A job that catches query_canceled would otherwise run on and hold an executor.",
        &CANCEL_GRACE,
        1,
        30,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.batch_silence",
        c"Seconds an agent may say nothing about a batch job it took before the job ends in ERROR.",
        c"The lease of batch jobs: agents renew it every third of this; a job with attempts left is pending again instead.",
        &BATCH_SILENCE,
        1,
        ONE_DAY,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.compute_progress_timeout",
        c"Seconds a worker may hold a compute slice without reporting progress before the watchdog sends it to another.",
        c"Workers report progress (compute_progress) more often than this; the seed's rule is every 5 minutes.",
        &COMPUTE_PROGRESS_TIMEOUT,
        1,
        ONE_DAY,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.compute_stats_period",
        c"Length in seconds of the periods of compute_group_job_period_stats and compute_group_worker_period_stats.",
        c"Change it only between periods: rows of another length are kept apart.",
        &COMPUTE_STATS_PERIOD,
        60,
        ONE_DAY,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.compute_task_target",
        c"Seconds a task is meant to take: compute_perf_data.task_distribution is a slice's wall time over this.",
        c"",
        &COMPUTE_TASK_TARGET,
        1,
        ONE_DAY,
        GucContext::Sighup,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.compute_inline_result_bytes",
        c"Largest compute result kept as a data: URI; a larger one goes to the result store and is referred to by a pgjobs:result: URL.",
        c"",
        &COMPUTE_INLINE_RESULT_BYTES,
        0,
        1 << 30,
        GucContext::Sighup,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.claim_rescan_interval",
        c"How often a queue's claims read it from its start, and a backend's compute fetches a job from its first slice; between, they start past the last job claimed or slice handed out.",
        c"A job that sorts below where claims start (its row was locked when a claim passed it, or its add committed after later jobs were claimed), or a copy of a slice given back below where a backend's fetches start, waits at most this long more. 0: every claim and fetch reads from the start.",
        &CLAIM_RESCAN_INTERVAL,
        0,
        3_600_000,
        GucContext::Suset,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.compute_max_slices",
        c"Most slices one compute_deploy or compute_add_slices call may add.",
        c"Each slice is written once per copy its duplication asks, in the caller's statement: without a bound a range of two billion would be as many rows. Superusers may raise it for a session.",
        &COMPUTE_MAX_SLICES,
        1,
        i32::MAX,
        GucContext::Suset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.routines_stale_after",
        c"Seconds after which a routine schedule whose scheduler has not written its state shows its routines as WAS RUNNING.",
        c"Nobody is watching them then: the launcher is stopped, stuck, or runs elsewhere.",
        &ROUTINES_STALE_AFTER,
        1,
        ONE_DAY,
        GucContext::Userset,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_enum_guc(
        c"pg_jobs.routines_start_mode",
        c"The switch every routine schedule is set to when the scheduler starts: control, or observe (status only).",
        c"observe is for running beside another scheduler that controls the routines; routines_set_mode switches a schedule on.",
        &ROUTINES_START_MODE,
        GucContext::Sighup,
        GucFlags::default(),
    );
}
