//! SQL jobs: added here, run by the launcher's executors (`src/bgworker/executor.rs`), recorded
//! in `job_runs` (`sql/050_sql_jobs.sql`).

use pgrx::pg_sys::{self, Datum};
use pgrx::prelude::*;
use pgrx::IntoDatum;

use super::call::{argument, value, Caller, Section};
use super::datum::{input, interval_span, interval_text};
use super::queue::{add, check_all, Field, Spec, SQL_QUEUE};
use super::schedules::_wake_launcher;
use crate::entry;

/// The longest statement timeout PostgreSQL can hold (2^31 - 1 ms, a little under 25 days), in
/// the whole days a caller would write.
const LONGEST_TIMEOUT_DAYS: i128 = 24;

/// A SQL job's statement timeout: positive, and no more than a statement timeout can hold.
pub(crate) fn check_timeout(timeout: Option<Datum>) {
    if !timeout
        .is_some_and(|t| (1..=LONGEST_TIMEOUT_DAYS * 86_400_000_000).contains(&interval_span(t)))
    {
        super::call::invalid(
            format!(
                "timeout must be positive and at most 24 days, not {}",
                interval_text(timeout)
            ),
            None,
        );
    }
}

/// The job of a SQL job: its statements and timeout in the payload, in the reserved queue, with
/// a lease that outlives the statement timeout, so that a slow job is cancelled before anyone
/// else could take it.
pub(crate) fn sql_job_fields(spec: &mut Spec, sql: &str, timeout: Datum) {
    let span = interval_span(timeout);
    let payload = serde_json::json!({"sql": sql, "timeout_ms": (span + 500) / 1000});
    let timeout = unsafe { &*timeout.cast_mut_ptr::<pg_sys::Interval>() };
    let lease = pgrx::datum::Interval::new(timeout.month, timeout.day, timeout.time + 60_000_000)
        .unwrap_or_else(|_| error!("pg_jobs: interval out of range"));
    spec.set(Field::Task, "sql".into_datum());
    spec.set(
        Field::Payload,
        Some(input(&payload.to_string(), pg_sys::JSONBOID)),
    );
    spec.set(Field::Queue, SQL_QUEUE.into_datum());
    spec.set(Field::Lease, lease.into_datum());
}

entry!(jobs_add_sql, pg_finfo_jobs_add_sql, |fcinfo| {
    let caller = Caller::current();
    let sql = value::<String>(fcinfo, 0)
        .filter(|sql| !sql.trim().is_empty())
        .unwrap_or_else(|| {
            super::call::refuse(
                PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                "sql must not be empty",
                Some("Pass the statements the job runs, for example 'VACUUM ANALYZE orders'."),
            )
        });
    let timeout = argument(fcinfo, 6);
    check_timeout(timeout);
    // jobs_add_sql(sql, run_at, priority, max_attempts, backoff, max_backoff, timeout, key, on_conflict)
    let mut spec = Spec::empty();
    for (field, n) in [
        (Field::RunAt, 1),
        (Field::Priority, 2),
        (Field::MaxAttempts, 3),
        (Field::Backoff, 4),
        (Field::MaxBackoff, 5),
        (Field::Key, 7),
        (Field::OnConflict, 8),
    ] {
        spec.set(field, argument(fcinfo, n));
    }
    sql_job_fields(&mut spec, &sql, timeout.expect("checked"));
    check_all(&[spec], true, false);
    let section = Section::as_owner(fcinfo);
    let id = add(&section, caller.identity, &[spec])[0];
    _wake_launcher();
    Datum::from(id)
});
