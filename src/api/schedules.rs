//! Cron schedules, exposed to the SQL in `sql/060_schedules.sql`, and the schedules' public
//! functions. Times cross the boundary as Unix epoch seconds, so the parser in `pg_jobs_core`
//! needs no PostgreSQL date types.

use chrono::{DateTime, TimeDelta, Utc};
use pg_jobs_core::schedule::Schedule;
use pgrx::prelude::*;

use crate::owner_call;

const STATEMENTS: &str = include_str!("schedules.sql");

owner_call!(
    jobs_schedule,
    pg_finfo_jobs_schedule,
    STATEMENTS,
    "schedule"
);
owner_call!(
    jobs_alter_schedule,
    pg_finfo_jobs_alter_schedule,
    STATEMENTS,
    "alter_schedule"
);
owner_call!(
    jobs_unschedule,
    pg_finfo_jobs_unschedule,
    STATEMENTS,
    "unschedule"
);

fn parse(schedule: &str, time_zone: &str) -> Schedule {
    Schedule::parse(schedule, time_zone).unwrap_or_else(|problem| {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("invalid schedule \"{schedule}\": {problem}")
        );
    })
}

fn instant(epoch_seconds: f64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp_micros((epoch_seconds * 1e6).round() as i64)
}

fn epoch_seconds(instant: DateTime<Utc>) -> f64 {
    instant.timestamp_micros() as f64 / 1e6
}

/// Why a schedule is invalid, or null when it is valid.
#[pg_extern(immutable, parallel_safe)]
fn _schedule_problem(schedule: &str, time_zone: &str) -> Option<String> {
    Schedule::parse(schedule, time_zone)
        .err()
        .map(|problem| problem.to_string())
}

/// Why a time zone name is unknown, or null when it is known.
#[pg_extern(immutable, parallel_safe)]
fn _time_zone_problem(time_zone: &str) -> Option<String> {
    pg_jobs_core::schedule::parse_time_zone(time_zone)
        .err()
        .map(|problem| problem.to_string())
}

#[pg_extern(immutable, parallel_safe)]
fn _schedule_next_epoch(schedule: &str, time_zone: &str, after: f64) -> Option<f64> {
    // schedule_next_slot's `after`, from a caller: ±infinity has no next slot to ask for.
    if !after.is_finite() {
        crate::api::call::invalid(
            "after must be a finite time",
            Some("Ask for the slot after a time such as now()."),
        );
    }
    parse(schedule, time_zone)
        .next_after(instant(after)?)
        .map(epoch_seconds)
}

/// The latest `max_slots` slots in `(after, until]`, oldest first. Looks back through widening
/// windows so that a per-second schedule after a month of downtime costs a few thousand steps,
/// not millions.
#[pg_extern(immutable, parallel_safe)]
fn _schedule_latest_slots_epoch(
    schedule: &str,
    time_zone: &str,
    after: f64,
    until: f64,
    max_slots: i32,
) -> Vec<f64> {
    let schedule = parse(schedule, time_zone);
    let (Some(after), Some(until)) = (instant(after), instant(until)) else {
        return Vec::new();
    };
    let wanted = max_slots.max(0) as usize;
    let windows = [
        TimeDelta::hours(1),
        TimeDelta::days(1),
        TimeDelta::days(31),
        TimeDelta::days(366),
    ];
    for from in windows
        .map(|window| (until - window).max(after))
        .into_iter()
        .chain([after])
    {
        let slots = schedule.slots_between(from, until, usize::MAX);
        if slots.len() >= wanted || from == after {
            let latest = &slots[slots.len().saturating_sub(wanted)..];
            return latest.iter().copied().map(epoch_seconds).collect();
        }
    }
    unreachable!("the last window starts at `after`")
}

/// Wakes the launcher once the calling transaction commits, so that a new schedule or SQL job is
/// seen at once rather than after pg_jobs.refresh_interval.
#[pg_extern(volatile, parallel_unsafe)]
fn _wake_launcher() {
    let Ok(Some(pid)) = Spi::get_one::<i32>("SELECT pid FROM pgjobs.launcher_state") else {
        return;
    };
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, move || unsafe {
        let launcher = pg_sys::BackendPidGetProc(pid);
        if !launcher.is_null() {
            pg_sys::SetLatch(&mut (*launcher).procLatch);
        }
    });
}
