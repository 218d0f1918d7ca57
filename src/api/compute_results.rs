//! A compute worker's results (`sql/083_compute_work.sql`): `compute_submit`, which files the
//! reports of a task's copies and decides their slices. Statements in `compute_results.sql`.

use pgrx::pg_sys::{self, Datum};
use pgrx::IntoDatum;

use pg_jobs_core::compute::{self, Decision};
use pgrx::prelude::*;

use super::call::{
    in_subtransaction, invalid, materialize, refuse, return_row, Caller, LockTimeout, Planning,
    Section, Statement, CALL_LOCK_WAIT_MS,
};
use super::compute::end_job;
use super::datum::elements;
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("compute_results.sql"));

static TASK_JOB: Statement = statement("task_job");
static LOCK_SLICES: Statement = statement("lock_slices");
static REPORT: Statement = Statement::new(STATEMENTS, "report", Planning::Probes);
static SLICE_REPORTS: Statement = statement("slice_reports");
static REPORT_HASH: Statement = statement("report_hash");
static ACCEPT: Statement = statement("accept");
static TIEBREAKER: Statement = statement("tiebreaker");
static REFUSE_REPORTS: Statement = statement("refuse_reports");
static OUTCOME: Statement = statement("outcome");

/// The job whose slices a task's reports decide (the statement `task_job`, or the fetch that
/// handed the task out: see `handed`).
#[derive(Clone)]
pub(crate) struct Job {
    pub id: i64,
    /// An oid, by value.
    pub owner: Datum,
    pub duplication_level: f64,
    pub race: bool,
    pub estimation_slices: i32,
    /// Each slice sent once (a duplication level of 1): resolved by its one result.
    pub once: bool,
    /// The URL pattern its results are POSTed to; none: they are kept here.
    pub result_pattern: Option<String>,
}

thread_local! {
    /// The token of the task this backend's last fetch handed out, and its job: a worker submits
    /// on the connection it fetched on, and none of what a submit reads of a job ever changes
    /// after its deployment, so the submit of that task does not read it again (the statement
    /// task_job, a tenth of a submit of one slice).
    static LAST_TASK: std::cell::RefCell<Option<([u8; 16], Job)>> = const { std::cell::RefCell::new(None) };
}

/// A uuid's bytes.
fn uuid_bytes(uuid: Datum) -> [u8; 16] {
    unsafe { *uuid.cast_mut_ptr::<[u8; 16]>() }
}

/// For compute_fetch: task `token` (a uuid) was handed out, of `job`.
pub(crate) fn handed(token: Datum, job: Job) {
    LAST_TASK.with(|last| *last.borrow_mut() = Some((uuid_bytes(token), job)));
}

/// The job of task `token`: the one the last fetch handed it out of, or as task_job reads it
/// (none when no copy names the task any more: every slice is stale).
fn task_job(section: &Section, token: Datum) -> Option<Job> {
    let bytes = uuid_bytes(token);
    let fetched = LAST_TASK.with(|last| {
        last.borrow()
            .as_ref()
            .filter(|(task, _)| *task == bytes)
            .map(|(_, job)| job.clone())
    });
    if fetched.is_some() {
        return fetched;
    }
    let row = section.run(&TASK_JOB, parameters! { task_token: Some(token) });
    Some(Job {
        id: row.get(0, 0)?,
        once: row.get(0, 1)?,
        owner: row.datum(0, 2)?,
        duplication_level: row.get(0, 3).expect("a duplication level"),
        race: row.get(0, 4).expect("a duplication type"),
        estimation_slices: row.get(0, 5).expect("estimation slices"),
        result_pattern: row.get(0, 6),
    })
}

/// The locks of a job's slices, for deciding their copies' results. A submit of another copy holds
/// one until its transaction ends, which its worker decides: waited for 5 seconds at most, then
/// refused, the caller's copies still its own to submit again. (Holding a copy without reporting it
/// delays its slice as long as this would.) Taken in slice order and before any copy's row: taken
/// one by one after the copies were deleted, two reports of one slice waited for each other (a
/// deadlock, found by the simulation in sim/).
fn lock_slices(section: &Section, job: i64, slices: Option<Datum>) {
    let locked = {
        let _timeout = LockTimeout::of(5_000);
        in_subtransaction(|| {
            section.run(
                &LOCK_SLICES,
                parameters! { job: Some(Datum::from(job)), slices },
            );
        })
    };
    if let Err(failure) = locked {
        if failure.code == PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE {
            refuse(
                failure.code,
                format!("another copy of a slice of compute job {job} is being reported"),
                Some("Submit again: the slices are still this task's."),
            );
        }
        failure.raise();
    }
}

/// What the reports of `slice` of `job` come to, once report `mine` is in: under race the first
/// result is the slice's and its other copies go; under consensus, when no copy is out, the result
/// voted for most (pg_jobs_core::compute::consensus), or a tiebreaker copy, or a corrupted job.
/// Returns what became of report `mine`. The caller holds the slice's lock.
fn resolve(section: &Section, job: &Job, slice: i32, mine: Datum) -> String {
    let (id, slice_datum) = (Some(Datum::from(job.id)), Some(Datum::from(slice)));
    let reports = section.run(&SLICE_REPORTS, parameters! { job: id, slice: slice_datum });
    if reports.get::<bool>(0, 0) == Some(true) {
        section.run(
            &REFUSE_REPORTS,
            parameters! { job: id, slice: slice_datum, report: Some(mine) },
        );
        return "not accepted".into();
    }
    let decision = if job.race {
        let hash = section
            .run(&REPORT_HASH, parameters! { report: Some(mine) })
            .get::<String>(0, 0);
        Decision::Accept(hash.expect("the report's hash"))
    } else {
        let hashes: Vec<String> = reports.get(0, 1).unwrap_or_default();
        let identities: Vec<i64> = reports.get(0, 2).unwrap_or_default();
        let copies_out = reports.get::<i32>(0, 3).unwrap_or(0);
        let copies = reports.get::<i32>(0, 4).unwrap_or(0);
        let planned = compute::slice_copies(job.id, i64::from(slice), job.duplication_level);
        let votes: Vec<(&str, i64)> = hashes.iter().map(String::as_str).zip(identities).collect();
        let tiebreakers_left = (2 - (copies - planned)).max(0) as u32;
        match compute::consensus(&votes, copies_out.max(0) as usize, tiebreakers_left) {
            Decision::Tiebreak => {
                let estimation = slice <= job.estimation_slices;
                section.run(
                    &TIEBREAKER,
                    parameters! {
                        job: id,
                        slice: slice_datum,
                        copy: Some(Datum::from(copies)),
                        owner: Some(job.owner),
                        estimation: Some(Datum::from(estimation)),
                    },
                );
                Decision::Tiebreak
            }
            decision => decision,
        }
    };
    match decision {
        Decision::Accept(hash) => {
            section.run(
                &ACCEPT,
                parameters! {
                    job: id,
                    slice: slice_datum,
                    hash: Some(section.text(&hash)),
                    race: Some(Datum::from(job.race)),
                },
            );
        }
        Decision::Undecidable => {
            section.run(
                &REFUSE_REPORTS,
                parameters! { job: id, slice: slice_datum, report: None },
            );
            end_job(section, job.id, "corrupted");
            return "corrupted".into();
        }
        Decision::Wait => return "waiting".into(),
        Decision::Tiebreak => {}
    }
    section
        .run(&OUTCOME, parameters! { report: Some(mine) })
        .get::<String>(0, 0)
        .expect("the report is there")
}

/// Refuses a report whose arrays are not of one length (a measurement not taken is null), with a
/// null result, or with a measurement that is not a number from 0 to 1e12: bounded so that what
/// the fold adds up stays far inside a bigint (1e12 ms is 31 years, 1e12 bytes a terabyte), and
/// NaN and Infinity are out of range too. The measurements are CPU, GPU and wall time (float8),
/// then bytes in and out (int8).
fn check_report(slices: Datum, results: Datum, measurements: &[Option<Datum>]) {
    let count = elements(slices).len();
    let results = elements(results);
    let measured: Vec<(usize, Vec<Option<Datum>>)> = measurements
        .iter()
        .enumerate()
        .filter_map(|(k, array)| array.map(|array| (k, elements(array))))
        .collect();
    if results.len() != count || measured.iter().any(|(_, values)| values.len() != count) {
        invalid(
            "slice_numbers, results and the measurements must be arrays of one length",
            Some("Give null for measurements not taken."),
        );
    }
    if results.iter().any(Option::is_none) {
        invalid("a result must not be null", None);
    }
    let in_range = |k: usize, value: Datum| {
        if k < 3 {
            (0.0..=1e12).contains(&f64::from_bits(value.value() as u64))
        } else {
            (0..=1_000_000_000_000).contains(&(value.value() as i64))
        }
    };
    if !measured
        .iter()
        .all(|(k, values)| values.iter().flatten().all(|value| in_range(*k, *value)))
    {
        invalid(
            "a measurement must be a number from 0 to 1e12 (milliseconds or bytes)",
            Some("Give null for a measurement not taken; NaN and Infinity are not measurements."),
        );
    }
}

// compute_submit(task_token, slice_numbers, results, cpu_ms, gpu_ms, wall_ms, in_bytes,
// out_bytes): the results of the caller's copies of a task, with what they measured. One row per
// slice: accepted, waiting (for its other copies), tiebreaker (they disagree: another copy is
// sent), not accepted, corrupted (no agreement possible: the job ends), stale (not the caller's:
// retasked or resolved).
entry!(compute_submit, |fcinfo, arguments| {
    let _bounded = LockTimeout::of(CALL_LOCK_WAIT_MS);
    let caller = Caller::current();
    let token = arguments.task_token.given();
    let (slices, results) = (arguments.slice_numbers.given(), arguments.results.given());
    let measurements = [
        arguments.cpu_ms.datum(),
        arguments.gpu_ms.datum(),
        arguments.wall_ms.datum(),
        arguments.in_bytes.datum(),
        arguments.out_bytes.datum(),
    ];
    materialize(fcinfo);
    check_report(slices, results, &measurements);
    let (slices, results) = (Some(slices), Some(results));
    let section = Section::as_owner(fcinfo);
    // A null slice number names no copy, and is not stale either.
    let slice_numbers: Vec<i32> = elements(slices.expect("given"))
        .into_iter()
        .flatten()
        .map(|datum| datum.value() as i32)
        .collect();
    let mut reported: Vec<i32> = Vec::new();
    if let Some(job) = task_job(&section, token) {
        super::owners::job_owner_known(job.id, job.owner);
        // A slice sent once is never resolved.
        if !job.once {
            lock_slices(&section, job.id, slices);
        }
        let [cpu_ms, gpu_ms, wall_ms, in_bytes, out_bytes] = measurements;
        let reports = section.run(
            &REPORT,
            parameters! {
                task_token: Some(token),
                role: Some(Datum::from(caller.role)),
                slices,
                results,
                cpu_ms,
                gpu_ms,
                wall_ms,
                in_bytes,
                out_bytes,
                job: Some(Datum::from(job.id)),
                sent_once: Some(Datum::from(job.once)),
                owner: Some(job.owner),
                result_pattern: job.result_pattern.as_deref().map(|pattern| section.text(pattern)),
            },
        );
        for row in 0..reports.len() {
            let slice = reports.get::<i32>(row, 1).expect("a report's slice");
            let outcome = if reports.get::<bool>(row, 2) == Some(true) {
                "accepted".to_string()
            } else {
                resolve(
                    &section,
                    &job,
                    slice,
                    reports.datum(row, 0).expect("a report's id"),
                )
            };
            return_row(
                fcinfo,
                &[Datum::from(slice), outcome.into_datum().expect("text")],
                &[false, false],
            );
            reported.push(slice);
        }
    }
    for slice in slice_numbers
        .into_iter()
        .filter(|slice| !reported.contains(slice))
    {
        return_row(
            fcinfo,
            &[Datum::from(slice), "stale".into_datum().expect("text")],
            &[false, false],
        );
    }
    pg_sys::Datum::from(0)
});
