//! The compute scheduler's public functions (`sql/083_compute_work.sql`): deploying and
//! controlling jobs, what workers call, and the rules of `pg_jobs_core::compute` the scheduler's
//! SQL calls (its settings are in `compute_settings.rs`).

use pg_jobs_core::compute::{self, job_flag, Moving};

use pgrx::prelude::*;

use pgrx::pg_sys::{Datum, NUMERICOID};

use crate::{entry, gucs, named_statements, parameters};

use super::arguments::Arg;
use super::call::{
    invalid, refuse, Caller, LockTimeout, Rows, Section, Statement, CALL_LOCK_WAIT_MS,
};
use super::compute_deploy::{add_copies, check_slice_count};
use super::compute_origins::{check_job_contacts, contacts_of_values, Contact};
use super::datum::output;

named_statements!(include_str!("compute.sql"));

static AMOUNT_TO_ADD: Statement = statement("amount_to_add");
static OWNED_JOB: Statement = statement("owned_job");
static PAUSE: Statement = statement("pause");
static RESUME: Statement = statement("resume");
static CLOSE: Statement = statement("close");
static END_JOB: Statement = statement("end_job");
static FUND: Statement = statement("fund");
static JOB_STATUS: Statement = statement("job_status");
static VALUES_COUNT: Statement = statement("values_count");
static PATTERN_COUNT: Statement = statement("pattern_count");
static ADD_SLICES: Statement = statement("add_slices");

/// The caller's live compute job `job`, locked for a change (see `owned_job` for its columns,
/// `amount` the amount to add, if any); another owner's gets the same error as none.
fn owned(section: &Section, caller: &Caller, job: i64, amount: Option<Datum>) -> Rows {
    let owned = section.run(
        &OWNED_JOB,
        parameters! {
            owner: Some(Datum::from(caller.identity)),
            job_id: Some(Datum::from(job)),
            amount,
        },
    );
    let Some(status) = owned.get::<String>(0, 0) else {
        refuse(
            PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
            format!("compute job {job} does not exist"),
            None,
        )
    };
    if ["finished", "cancelled", "corrupted"].contains(&status.as_str()) {
        refuse(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("compute job {job} has ended ({status})"),
            None,
        );
    }
    owned
}

/// Ends job `job` as `status` (finished, cancelled or corrupted).
pub(super) fn end_job(section: &Section, job: i64, status: &str) {
    section.run(
        &END_JOB,
        parameters! {
            job_id: Some(Datum::from(job)),
            status: Some(section.text(status)),
            open_flag: Some(Datum::from(job_flag::OPEN)),
        },
    );
}

/// An owner's act on one of its jobs.
#[derive(PartialEq)]
enum Act {
    Pause,
    Resume,
    Close,
    Cancel,
    Fund,
}

/// Does `act` to the caller's live job (compute_fund's `amount` with it) and returns the job's
/// status after it. Another owner's job gets the same error as none.
fn control(
    fcinfo: pg_sys::FunctionCallInfo,
    job_id: Arg<i64>,
    act: Act,
    amount: Option<Datum>,
) -> Datum {
    let caller = Caller::current();
    let _bounded = LockTimeout::of(CALL_LOCK_WAIT_MS);
    let section = Section::as_owner(fcinfo);
    // The amount is checked before the job is looked up: bad input is refused as such, whoever's
    // job it names.
    if act == Act::Fund
        && section
            .run(&AMOUNT_TO_ADD, parameters! { amount })
            .get::<bool>(0, 0)
            != Some(true)
    {
        invalid(
            format!(
                "funds to add must be a positive amount, not {}",
                amount.map_or_else(|| "null".into(), |amount| output(amount, NUMERICOID))
            ),
            None,
        );
    }
    let job = job_id.required();
    let id = Some(Datum::from(job));
    let owned = owned(&section, &caller, job, amount);
    let flags = owned.get::<i32>(0, 3).unwrap_or(0);
    match act {
        Act::Pause => {
            section.run(&PAUSE, parameters! { job_id: id });
        }
        Act::Resume => {
            if flags & job_flag::NSF != 0 {
                refuse(
                    PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                    format!("compute job {job} is out of funds"),
                    Some("compute_fund adds funds and resumes it."),
                );
            }
            section.run(&RESUME, parameters! { job_id: id });
        }
        Act::Close => {
            section.run(
                &CLOSE,
                parameters! { job_id: id, open_flag: Some(Datum::from(job_flag::OPEN)) },
            );
        }
        Act::Cancel => end_job(&section, job, "cancelled"),
        Act::Fund => {
            if owned.get::<bool>(0, 2) == Some(true) {
                invalid(
                    format!(
                        "a job's funds must stay below 10000000000 DCC ({} now)",
                        owned.get::<String>(0, 1).unwrap_or_default()
                    ),
                    Some("Deploy another job for more work."),
                );
            }
            section.run(
                &FUND,
                parameters! {
                    job_id: id,
                    amount,
                    nsf_flag: Some(Datum::from(job_flag::NSF)),
                },
            );
        }
    }
    section
        .run(&JOB_STATUS, parameters! { job_id: id })
        .datum(0, 0)
        .expect("the job is there")
}

entry!(compute_pause, |fcinfo, arguments| control(
    fcinfo,
    arguments.job_id,
    Act::Pause,
    None
));
entry!(compute_resume, |fcinfo, arguments| control(
    fcinfo,
    arguments.job_id,
    Act::Resume,
    None
));
entry!(compute_close, |fcinfo, arguments| control(
    fcinfo,
    arguments.job_id,
    Act::Close,
    None
));
entry!(compute_cancel, |fcinfo, arguments| control(
    fcinfo,
    arguments.job_id,
    Act::Cancel,
    None
));
entry!(compute_fund, |fcinfo, arguments| {
    control(
        fcinfo,
        arguments.job_id,
        Act::Fund,
        arguments.amount.datum(),
    )
});

// compute_add_slices(job_id, data, count): an open job's more slices, values for a job of values,
// a count for a range or a pattern; the job's last slice after them.
entry!(compute_add_slices, |fcinfo, arguments| {
    let caller = Caller::current();
    let _bounded = LockTimeout::of(CALL_LOCK_WAIT_MS);
    let job = arguments.job_id.required();
    let (values, more) = (arguments.data.datum(), arguments.count.get());
    let section = Section::as_owner(fcinfo);
    let owned = owned(&section, &caller, job, None);
    let id = Some(Datum::from(job));
    if owned.get::<i32>(0, 3).unwrap_or(0) & job_flag::OPEN == 0 {
        refuse(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("compute job {job} is closed"),
            Some("Only a job deployed with the flag open takes more slices."),
        );
    }
    let storage = owned.get::<String>(0, 4).unwrap_or_default();
    let count = if storage == "values" {
        let count = section
            .run(&VALUES_COUNT, parameters! { data: values })
            .get::<i32>(0, 0);
        let count = match (count, more) {
            (Some(count), None) => count,
            _ => invalid("a job of values takes more values: an array", None),
        };
        let values = arguments.data.get();
        check_job_contacts(
            &section,
            job,
            contacts_of_values(Contact::Data, values.as_ref().map(|values| &values.0)),
        );
        count
    } else {
        let (Some(more), None) = (more, values) else {
            invalid(
                format!("a job whose input is a {storage} takes a count of more slices"),
                None,
            )
        };
        section.run(
            &PATTERN_COUNT,
            parameters! { job_id: id, count: Some(Datum::from(more)) },
        );
        more
    };
    if count < 1 {
        invalid("no slices to add", None);
    }
    check_slice_count(i64::from(count));
    let last = owned.get::<i64>(0, 5).unwrap_or(0);
    add_copies(&section, job, caller.identity, last + 1, count, values);
    section
        .run(
            &ADD_SLICES,
            parameters! { job_id: id, count: Some(Datum::from(count)) },
        )
        .datum(0, 0)
        .expect("the job is there")
});

/// The names of a compute job's flags (`compute_jobs.flags`).
#[pg_extern(immutable, strict, parallel_safe)]
fn job_flag_names(flags: i32) -> Vec<String> {
    compute::bit_names(flags, &compute::JOB_FLAG_NAMES)
}

/// The names of a set of capabilities (`compute_jobs.need_capabilities`).
#[pg_extern(immutable, strict, parallel_safe)]
fn capability_names(need: i32) -> Vec<String> {
    compute::bit_names(need, &compute::CAPABILITY_NAMES)
}

/// The names of a worker's flags (`workers.flags`).
#[pg_extern(immutable, strict, parallel_safe)]
fn worker_flag_names(flags: i32) -> Vec<String> {
    compute::bit_names(flags, &compute::WORKER_FLAG_NAMES)
}

/// Copies of a slice sent under a duplication level (see `pg_jobs_core::compute::slice_copies`).
#[pg_extern(immutable, strict, parallel_safe)]
fn _slice_copies(job: i64, slice: i32, level: f64) -> i32 {
    compute::slice_copies(job, i64::from(slice), level)
}

/// The period `at` falls in: pg_jobs.compute_stats_period long, counted from the Unix epoch. The
/// fold asks it for every report; as a SQL function it read the setting as text, and parsed it,
/// twice a call.
#[pg_extern(stable, strict, parallel_safe)]
fn _stats_period(at: TimestampWithTimeZone) -> TimestampWithTimeZone {
    // The Unix epoch in PostgreSQL's microseconds (from 2000-01-01), in 128 bits: the last times
    // PostgreSQL takes are past i64::MAX counted from 1970.
    const UNIX_EPOCH: i128 = -946_684_800_000_000;
    if at.is_infinity() || at.is_neg_infinity() {
        return at;
    }
    let period = i128::from(gucs::COMPUTE_STATS_PERIOD.get()) * 1_000_000;
    let since_epoch = i128::from(at.into_inner()) - UNIX_EPOCH;
    let start = UNIX_EPOCH + since_epoch.div_euclid(period) * period;
    TimestampWithTimeZone::try_from(start as i64).unwrap_or(at)
}

/// The weight of the `ordinal`-th measurement of a job of `total` slices.
#[pg_extern(immutable, strict, parallel_safe)]
fn _perf_alpha(ordinal: i64, total: i64) -> f64 {
    compute::alpha(ordinal, total)
}

/// Folds rows of measurements into moving averages. `state` holds the series' means, then their
/// variances (a null mean: not measured yet); `values` the rows one after the other, as many per
/// row as there are series; `alphas` each row's weight. Returns the new state.
#[pg_extern(immutable, parallel_safe)]
fn _moving_fold(
    state: Vec<Option<f64>>,
    values: Option<Vec<Option<f64>>>,
    alphas: Option<Vec<Option<f64>>>,
) -> Vec<Option<f64>> {
    let series = state.len() / 2;
    let mut moving: Vec<Moving> = (0..series)
        .map(|k| Moving {
            mean: state[k],
            variance: state[series + k].unwrap_or(0.0),
        })
        .collect();
    let (values, alphas) = (values.unwrap_or_default(), alphas.unwrap_or_default());
    for (row, alpha) in values.chunks(series.max(1)).zip(alphas) {
        for (m, x) in moving.iter_mut().zip(row) {
            if let (Some(x), Some(alpha)) = (x, alpha) {
                m.add(*x, alpha);
            }
        }
    }
    let means = moving.iter().map(|m| m.mean);
    let variances = moving.iter().map(|m| m.mean.map(|_| m.variance));
    means.chain(variances).collect()
}

/// Whether worktime `version` is in `range`.
#[pg_extern(immutable, strict, parallel_safe)]
fn _worktime_ok(range: &str, version: &str) -> bool {
    compute::worktime_ok(range, version)
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _worktime_range_ok(range: &str) -> bool {
    compute::worktime_range_ok(range)
}
