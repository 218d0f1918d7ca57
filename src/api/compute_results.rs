//! A compute worker's results (`sql/083_compute_work.sql`): `compute_submit`, which files the
//! reports of a task's copies and decides their slices. Statements in `compute_results.sql`.

use pgrx::pg_sys::{
    self, Datum, BOOLOID, FLOAT8ARRAYOID, INT4ARRAYOID, INT4OID, INT8ARRAYOID, INT8OID, OIDOID,
    TEXTARRAYOID, UUIDOID,
};
use pgrx::IntoDatum;

use super::call::{
    argument, given_argument, invalid, materialize, return_row, Caller, Section, Statement,
};
use super::datum::elements;
use crate::{entry, named_statements};

named_statements!(include_str!("compute_results.sql"));

static CHECK_REPORT: Statement = statement(
    "check_report",
    &[
        INT4ARRAYOID,
        TEXTARRAYOID,
        FLOAT8ARRAYOID,
        FLOAT8ARRAYOID,
        FLOAT8ARRAYOID,
        INT8ARRAYOID,
        INT8ARRAYOID,
    ],
);
static TASK_JOB: Statement = statement("task_job", &[UUIDOID]);
static LOCK_SLICES: Statement = statement("lock_slices", &[INT8OID, INT4ARRAYOID]);
static REPORT: Statement = statement(
    "report",
    &[
        UUIDOID,
        OIDOID,
        INT4ARRAYOID,
        TEXTARRAYOID,
        FLOAT8ARRAYOID,
        FLOAT8ARRAYOID,
        FLOAT8ARRAYOID,
        INT8ARRAYOID,
        INT8ARRAYOID,
        INT8OID,
        BOOLOID,
        OIDOID,
    ],
);
static RESOLVE: Statement = statement("resolve", &[INT8OID, INT4OID, INT8OID]);

// compute_submit(task_token, slice_numbers, results, cpu_ms, gpu_ms, wall_ms, in_bytes,
// out_bytes): the results of the caller's copies of a task, with what they measured. One row per
// slice: accepted, waiting (for its other copies), tiebreaker (they disagree: another copy is
// sent), not accepted, corrupted (no agreement possible: the job ends), stale (not the caller's:
// retasked or resolved).
entry!(compute_submit, pg_finfo_compute_submit, |fcinfo| {
    let caller = Caller::current();
    let names = ["task_token", "slice_numbers", "results"];
    let [token, slices, results] =
        std::array::from_fn(|n| Some(given_argument(fcinfo, n, names[n])));
    let measurements: Vec<Option<Datum>> = (3..8).map(|n| argument(fcinfo, n)).collect();
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    let mut arguments = vec![slices, results];
    arguments.extend_from_slice(&measurements);
    let check = section.run(&CHECK_REPORT, &arguments);
    if check.get::<bool>(0, 0) != Some(true) {
        invalid(
            "slice_numbers, results and the measurements must be arrays of one length",
            Some("Give null for measurements not taken."),
        );
    }
    if check.get::<bool>(0, 1) == Some(true) {
        invalid("a result must not be null", None);
    }
    if check.get::<bool>(0, 2) != Some(true) {
        invalid(
            "a measurement must be a number from 0 to 1e12 (milliseconds or bytes)",
            Some("Give null for a measurement not taken; NaN and Infinity are not measurements."),
        );
    }
    // A null slice number names no copy, and is not stale either.
    let slice_numbers: Vec<i32> = elements(slices.expect("given"))
        .into_iter()
        .flatten()
        .map(|datum| datum.value() as i32)
        .collect();
    let mut reported: Vec<i32> = Vec::new();
    let job = section.run(&TASK_JOB, &[token]);
    if let (Some(job), Some(once), Some(owner)) =
        (job.datum(0, 0), job.get::<bool>(0, 1), job.datum(0, 2))
    {
        // The locks under which _compute_resolve decides, in slice order and before any copy's
        // row: taken one by one after the copies were deleted, two reports of one slice waited
        // for each other (a deadlock, found by the simulation in sim/). A slice sent once is never
        // resolved.
        if !once {
            section.run(&LOCK_SLICES, &[Some(job), slices]);
        }
        let mut report = vec![token, Some(Datum::from(caller.role)), slices, results];
        report.extend_from_slice(&measurements);
        report.extend([Some(job), Some(Datum::from(once)), Some(owner)]);
        let reports = section.run(&REPORT, &report);
        for row in 0..reports.len() {
            let slice = reports.get::<i32>(row, 1).expect("a report's slice");
            let outcome = if reports.get::<bool>(row, 2) == Some(true) {
                "accepted".to_string()
            } else {
                section
                    .run(
                        &RESOLVE,
                        &[Some(job), Some(Datum::from(slice)), reports.datum(row, 0)],
                    )
                    .get::<String>(0, 0)
                    .expect("an outcome")
            };
            return_row(
                fcinfo,
                &mut [Datum::from(slice), outcome.into_datum().expect("text")],
                &mut [false, false],
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
            &mut [Datum::from(slice), "stale".into_datum().expect("text")],
            &mut [false, false],
        );
    }
    pg_sys::Datum::from(0)
});
