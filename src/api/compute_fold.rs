//! The compute scheduler's maintenance (`sql/083_compute_work.sql`), a service of the launcher's
//! round: the watchdog, which sends silent copies again, and the fold, which turns decided
//! reports and recorded tasks into statistics and payments and moves jobs on. Folding happens in
//! the transaction that marks what it folded, so each report counts exactly once, crash or not.
//! Statements in `compute_fold.sql`; `_compute_fold` and `_compute_watchdog` run them by hand.

use std::collections::BTreeMap;

use pg_jobs_core::compute::{self, job_flag};
use pgrx::datum::AnyNumeric;
use pgrx::pg_sys::{self, Datum, FLOAT8OID, NUMERICOID, TIMESTAMPTZOID, UUIDOID};
use pgrx::prelude::*;

use super::call::{in_subtransaction, Failure, LockTimeout, Planning, Section, Statement};
use super::compute::end_job;
use super::datum::{array, array_of, int8_array};
use super::services::{wished, Service};
use crate::gucs;
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
        // Rows a member's call may hold in a transaction left open (the job's figures, a
        // worker's earnings, a group's row, which a new period's row names) are not waited for:
        // the job's turn comes next round.
        let fold_one = || {
            let _not_waiting = LockTimeout::of(1);
            fold_job(section, job, reports.datum(0, 0), ids.len())
        };
        match in_subtransaction(fold_one).map_err(Failure::unless_cancelled) {
            Ok(()) => folded += ids.len() as i32,
            // A row held, as above, or by a fetch: the job's turn comes next round.
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

/// What the fold needs of a report placed (place_reports' row).
struct Placed {
    place: i64,
    group: i64,
    period: i64,
    series: [f64; SERIES],
    in_size: i64,
    out_size: i64,
    accepted: bool,
    worker: pgrx::Uuid,
    paid: AnyNumeric,
    commission: AnyNumeric,
    /// Whether its group is still there (its figures of the job, of the report's worker and of
    /// what it spent are written only then).
    group_kept: bool,
}

/// The series a report feeds into moving averages (pg_jobs_core::compute::Moving).
const SERIES: usize = 7;

/// What reports measured, summed: a time rounded to the millisecond first (half to even, as
/// PostgreSQL rounds a float), a size exactly.
#[derive(Default)]
struct Totals {
    reports: i64,
    cpu: f64,
    gpu: f64,
    bytes_in: i128,
    bytes_out: i128,
}

impl Totals {
    fn add(&mut self, report: &Placed) {
        self.reports += 1;
        self.cpu += report.series[0].round_ties_even();
        self.gpu += report.series[1].round_ties_even();
        self.bytes_in += i128::from(report.in_size);
        self.bytes_out += i128::from(report.out_size);
    }

    /// The sizes in and out, as numeric: a sum of bigints may pass a bigint.
    fn in_size(&self) -> AnyNumeric {
        AnyNumeric::from(self.bytes_in)
    }

    fn out_size(&self) -> AnyNumeric {
        AnyNumeric::from(self.bytes_out)
    }
}

/// Reports folded together into one set of figures: their series one after the other and each
/// one's weight, in the order of their places, their totals and how many were accepted.
#[derive(Default)]
struct Folded {
    series: Vec<Option<Datum>>,
    alphas: Vec<Option<Datum>>,
    totals: Totals,
    accepted: i32,
}

impl Folded {
    /// `report`, with weight `alpha` (none: it moves no average).
    fn add(&mut self, report: &Placed, alpha: Option<f64>) {
        self.series
            .extend(report.series.iter().map(|x| x.into_datum()));
        self.alphas.push(alpha.and_then(|alpha| alpha.into_datum()));
        self.totals.add(report);
        self.accepted += i32::from(report.accepted);
    }

    /// The parameters of fold_figures and fold_period that these figures give.
    fn parameters(&self) -> [(&'static str, Option<Datum>); 6] {
        [
            ("series", Some(array(FLOAT8OID, &self.series))),
            ("alphas", Some(array(FLOAT8OID, &self.alphas))),
            ("cpu", self.totals.cpu.into_datum()),
            ("gpu", self.totals.gpu.into_datum()),
            ("in_size", self.totals.in_size().into_datum()),
            ("out_size", self.totals.out_size().into_datum()),
        ]
    }
}

/// A worker's opaque id, by its bytes.
type Worker = [u8; 16];

fn uuid(worker: &Worker) -> pgrx::Uuid {
    pgrx::Uuid::from_bytes(*worker)
}

/// What a fold of a job's reports writes, summed from them: the job's figures and money, each
/// group's figures of the job for each period (in the order of their first report), what each
/// worker earned, each group's figures of each worker for each period, what each group spent.
struct Sums {
    figures: Folded,
    periods: Vec<((i64, i64), Folded)>,
    paid: AnyNumeric,
    commission: AnyNumeric,
    earned: BTreeMap<Worker, AnyNumeric>,
    worker_periods: BTreeMap<(i64, Worker, i64), (Totals, AnyNumeric)>,
    spent: BTreeMap<i64, Totals>,
}

impl Sums {
    /// The sums of `placed`, in the order of their places; `last_slice`, the job's, weighs each
    /// (none, while it is not known: the averages do not move).
    fn of(placed: &[Placed], last_slice: Option<i64>) -> Sums {
        let mut sums = Sums {
            figures: Folded::default(),
            periods: vec![],
            paid: AnyNumeric::from(0),
            commission: AnyNumeric::from(0),
            earned: BTreeMap::new(),
            worker_periods: BTreeMap::new(),
            spent: BTreeMap::new(),
        };
        for report in placed {
            let alpha = last_slice.map(|total| compute::alpha(report.place, total));
            sums.figures.add(report, alpha);
            sums.paid += report.paid.clone();
            sums.commission += report.commission.clone();
            let earning = report.paid.clone() - report.commission.clone();
            let worker = *report.worker.as_bytes();
            *sums
                .earned
                .entry(worker)
                .or_insert_with(|| AnyNumeric::from(0)) += earning.clone();
            if !report.group_kept {
                continue;
            }
            let key = (report.group, report.period);
            match sums.periods.iter_mut().find(|(k, _)| *k == key) {
                Some((_, period)) => period.add(report, alpha),
                None => {
                    let mut period = Folded::default();
                    period.add(report, alpha);
                    sums.periods.push((key, period));
                }
            }
            let (totals, earnings) = sums
                .worker_periods
                .entry((report.group, worker, report.period))
                .or_insert_with(|| (Totals::default(), AnyNumeric::from(0)));
            totals.add(report);
            *earnings += earning;
            sums.spent.entry(report.group).or_default().add(report);
        }
        sums
    }
}

/// Folds reports `ids` (an array of `count`) of `job`: their places and pay, the job's moving
/// averages and totals, its money and its workers' earnings, the groups' figures of the job and
/// of each worker for the periods they fell in, and what the groups spent of their budgets. The
/// reports are read once, by the statement that places them, and summed here: fold_figures and
/// fold_period each read them again and sorted their series in SQL (a round of 10,000 reports:
/// 324 of 743 ms, now 3), and fold_money, fold_worker_periods and spend read them again each
/// (100 ms more).
fn fold_job(section: &Section, job: i64, ids: Option<Datum>, count: usize) {
    let id = Some(Datum::from(job));
    let task_target_ms = f64::from(gucs::COMPUTE_TASK_TARGET.get()) * 1000.0;
    let rows = section.run(
        &PLACE_REPORTS,
        parameters! { job: id, reports: ids, task_target_ms: task_target_ms.into_datum() },
    );
    let mut placed: Vec<Placed> = (0..rows.len())
        .map(|row| Placed {
            place: rows.get(row, 0).expect("a place"),
            group: rows.get(row, 1).expect("a group"),
            period: rows.get(row, 2).expect("a period"),
            series: std::array::from_fn(|k| rows.get(row, 3 + k).expect("a measurement")),
            in_size: rows.get(row, 10).expect("a size"),
            out_size: rows.get(row, 11).expect("a size"),
            accepted: rows.get(row, 12).unwrap_or(false),
            worker: rows.get(row, 15).expect("a worker"),
            paid: rows.get(row, 16).expect("a pay"),
            commission: rows.get(row, 17).expect("a commission"),
            group_kept: rows.get(row, 18) == Some(true),
        })
        .collect();
    placed.sort_unstable_by_key(|report| report.place);
    let (slice_payment, last_slice) = (rows.datum(0, 13), rows.get::<i64>(0, 14));
    let sums = Sums::of(&placed, last_slice);
    let with = |head: &[(&'static str, Option<Datum>)], folded: &Folded| -> Vec<_> {
        head.iter().copied().chain(folded.parameters()).collect()
    };
    section.run(
        &FOLD_FIGURES,
        &with(
            &[("job", id), ("reports", Some(Datum::from(count as i32)))],
            &sums.figures,
        ),
    );
    section.run(
        &FOLD_MONEY,
        parameters! {
            job: id,
            paid: sums.paid.into_datum(),
            commission: sums.commission.into_datum(),
            workers: Some(array_of(UUIDOID, sums.earned.keys().map(uuid))),
            earned: Some(array_of(NUMERICOID, sums.earned.into_values())),
        },
    );
    for ((group, start), period) in &sums.periods {
        let (group, start) = (Some(Datum::from(*group)), Some(Datum::from(*start)));
        section.run(
            &PERIOD_ROW,
            parameters! { job: id, group_id: group, period_start: start },
        );
        section.run(
            &FOLD_PERIOD,
            &with(
                &[
                    ("job", id),
                    ("group_id", group),
                    ("period_start", start),
                    ("accepted", Some(Datum::from(period.accepted))),
                    ("slice_payment", slice_payment),
                ],
                period,
            ),
        );
    }
    let worker_periods = sums.worker_periods;
    section.run(
        &FOLD_WORKER_PERIODS,
        parameters! {
            groups: Some(int8_array(worker_periods.keys().map(|k| k.0))),
            workers: Some(array_of(UUIDOID, worker_periods.keys().map(|k| uuid(&k.1)))),
            // A timestamptz is its int8 of microseconds.
            periods: Some(array_of(TIMESTAMPTZOID, worker_periods.keys().map(|k| k.2))),
            slices: Some(int8_array(worker_periods.values().map(|v| v.0.reports))),
            cpu: Some(array_of(FLOAT8OID, worker_periods.values().map(|v| v.0.cpu))),
            gpu: Some(array_of(FLOAT8OID, worker_periods.values().map(|v| v.0.gpu))),
            in_size: Some(array_of(NUMERICOID, worker_periods.values().map(|v| v.0.in_size()))),
            out_size: Some(array_of(NUMERICOID, worker_periods.values().map(|v| v.0.out_size()))),
            earnings: Some(array_of(NUMERICOID, worker_periods.into_values().map(|v| v.1))),
        },
    );
    let spent = sums.spent;
    section.run(
        &SPEND,
        parameters! {
            groups: Some(int8_array(spent.keys().copied())),
            cpu: Some(array_of(FLOAT8OID, spent.values().map(|t| t.cpu))),
            gpu: Some(array_of(FLOAT8OID, spent.values().map(|t| t.gpu))),
            in_size: Some(array_of(NUMERICOID, spent.values().map(Totals::in_size))),
            out_size: Some(array_of(NUMERICOID, spent.values().map(Totals::out_size))),
        },
    );
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
