//! The compute scheduler's maintenance (`sql/083_compute_work.sql`), a service of the launcher's
//! round: the watchdog, which sends silent copies again, and the fold, which turns decided
//! reports and recorded tasks into statistics and payments and moves jobs on. Folding happens in
//! the transaction that marks what it folded, so each report counts exactly once, crash or not.
//! Statements in `compute_fold.sql`; `_compute_fold` and `_compute_watchdog` run them by hand.

use pg_jobs_core::compute::job_flag;
use pgrx::pg_sys::{self, Datum};
use pgrx::prelude::*;

use super::call::{in_subtransaction, Failure, Planning, Section, Statement};
use super::compute::end_job;
use super::services::{wished, Service};
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("compute_fold.sql"));

static WATCHDOG: Statement = statement("watchdog");
static RESUME_FREED: Statement = statement("resume_freed");
static FOLD_LOCK: Statement = statement("fold_lock");
static JOBS_TO_FOLD: Statement = Statement::new(STATEMENTS, "jobs_to_fold", Planning::Probes);
static REPORTS_TO_FOLD: Statement = statement("reports_to_fold");
static FOLD_FAILED: Statement = statement("fold_failed");
static PLACE_REPORTS: Statement = statement("place_reports");
static FOLD_FIGURES: Statement = statement("fold_figures");
static FOLD_MONEY: Statement = statement("fold_money");
static REPORT_PERIODS: Statement = statement("report_periods");
static PERIOD_ROW: Statement = statement("period_row");
static FOLD_PERIOD: Statement = statement("fold_period");
static FOLD_WORKER_PERIODS: Statement = statement("fold_worker_periods");
static SPEND: Statement = statement("spend");
static FOLD_TASKS: Statement = statement("fold_tasks");
static MOVE_JOBS_ON: Statement = statement("move_jobs_on");
static JOBS_DONE: Statement = statement("jobs_done");
static NEXT_LOOK: Statement = Statement::new(STATEMENTS, "next_look", Planning::Probes);

/// Reports folded in one round at most.
const REPORTS_A_ROUND: i32 = 10_000;

/// The compute scheduler's watchdog and fold, every second while copies are out or reports or
/// tasks are to be folded.
pub(crate) static COMPUTE: Service = Service {
    name: "compute",
    work: |section, at| {
        watchdog(section, at);
        fold(section, REPORTS_A_ROUND);
    },
    next: |section, at| wished(section, &NEXT_LOOK, parameters! { at: Some(at) }),
};

/// Copies silent for longer than pg_jobs.compute_progress_timeout (before `at`) are overdue: sent
/// again to the next fetch, their worker's report refused. The escrow of an overdue copy is free
/// again: a job that a fetch paused for want of funds while the copy was out goes on if its funds
/// now pay for a slice. How many copies.
fn watchdog(section: &Section, at: Datum) -> i32 {
    let overdue = section.run(&WATCHDOG, parameters! { at: Some(at) });
    if let Some(freed) = overdue.datum(0, 1) {
        section.run(
            &RESUME_FREED,
            parameters! { jobs: Some(freed), nsf: Some(Datum::from(job_flag::NSF)) },
        );
    }
    overdue.get::<i32>(0, 0).unwrap_or(0)
}

/// Folds up to `max_reports` decided reports and every task recorded, then moves jobs on; how
/// many reports. Every job with something to fold gets its share of the round, so a busy job does
/// not hold up the figures of the others; and each job is folded in a subtransaction of its own,
/// so that one that cannot be folded holds up nobody: it is marked with its error and left out.
fn fold(section: &Section, max_reports: i32) -> i32 {
    if section.run(&FOLD_LOCK, &[]).get::<bool>(0, 0) != Some(true) {
        return 0;
    }
    let jobs: Vec<i64> = section
        .run(&JOBS_TO_FOLD, &[])
        .get(0, 0)
        .unwrap_or_default();
    let share = (max_reports / jobs.len().max(1) as i32).max(1);
    let mut folded = 0;
    for job in jobs {
        let id = Some(Datum::from(job));
        let reports = section.run(
            &REPORTS_TO_FOLD,
            parameters! { job: id, max_reports: Some(Datum::from(share)) },
        );
        let ids: Vec<i64> = reports.get(0, 0).unwrap_or_default();
        if ids.is_empty() {
            continue;
        }
        match in_subtransaction(|| fold_job(section, job, reports.datum(0, 0)))
            .map_err(Failure::unless_cancelled)
        {
            Ok(()) => folded += ids.len() as i32,
            // A row a fetch holds (past the launcher's lock_timeout): the job's turn comes next
            // round.
            Err(failure)
                if failure.code == PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE
                    || failure.code == PgSqlErrorCode::ERRCODE_T_R_DEADLOCK_DETECTED => {}
            Err(failure) => {
                let state = unsafe {
                    std::ffi::CStr::from_ptr(pg_sys::unpack_sql_state(failure.code as i32))
                }
                .to_string_lossy();
                let why = format!("{} (SQLSTATE {state})", failure.message);
                section.run(
                    &FOLD_FAILED,
                    parameters! { job: id, fold_error: Some(section.text(&why)) },
                );
                warning!("compute job {job} could not be folded: {}", failure.message);
            }
        }
    }
    section.run(&FOLD_TASKS, &[]);
    move_jobs_on(section);
    folded
}

/// Folds reports `ids` (an array) of `job`: their places and pay, the job's moving averages and
/// totals, its money and its workers' earnings, the groups' figures of the job and of each worker
/// for the periods they fell in, and what the groups spent of their budgets.
fn fold_job(section: &Section, job: i64, ids: Option<Datum>) {
    let id = Some(Datum::from(job));
    section.run(&PLACE_REPORTS, parameters! { job: id, reports: ids });
    section.run(&FOLD_FIGURES, parameters! { job: id, reports: ids });
    section.run(&FOLD_MONEY, parameters! { job: id, reports: ids });
    let periods = section.run(&REPORT_PERIODS, parameters! { reports: ids });
    for row in 0..periods.len() {
        let (group, start) = (periods.datum(row, 0), periods.datum(row, 1));
        section.run(
            &PERIOD_ROW,
            parameters! { job: id, group_id: group, period_start: start },
        );
        section.run(
            &FOLD_PERIOD,
            parameters! {
                job: id,
                group_id: group,
                period_start: start,
                reports: periods.datum(row, 2),
            },
        );
    }
    section.run(&FOLD_WORKER_PERIODS, parameters! { reports: ids });
    section.run(&SPEND, parameters! { reports: ids });
}

/// Jobs whose estimation slices are all done run; jobs whose every slice has its result, that are
/// closed and have nothing out or unfolded, are finished.
fn move_jobs_on(section: &Section) {
    section.run(&MOVE_JOBS_ON, &[]);
    let done = section.run(
        &JOBS_DONE,
        parameters! { open: Some(Datum::from(job_flag::OPEN)) },
    );
    for row in 0..done.len() {
        end_job(section, done.get(row, 0).expect("a job"), "finished");
    }
}

// _compute_watchdog(at): the watchdog's part of a round at `at`, by hand (the tests, an
// administrator); how many copies it found overdue.
entry!(_compute_watchdog, |fcinfo, arguments| {
    let at = arguments.at.given();
    let section = Section::as_current_user();
    Datum::from(watchdog(&section, at))
});

// _compute_fold(max_reports): the fold's part of a round, by hand; how many reports it folded.
entry!(_compute_fold, |fcinfo, arguments| {
    let max_reports = arguments
        .max_reports
        .datum()
        .map_or(REPORTS_A_ROUND, |n| n.value() as i32);
    let section = Section::as_current_user();
    Datum::from(fold(&section, max_reports))
});
