//! Cron schedules: the schedules' public functions (statements in `schedules.sql`), and the slot
//! arithmetic that `sql/060_schedules.sql` calls. Times cross the boundary as UTC (`datum::utc`),
//! so the parser in `pg_jobs_core` needs no PostgreSQL date types.

use chrono::TimeDelta;
use pg_jobs_core::schedule::{parse_time_zone, Schedule};
use pgrx::pg_sys::{Datum, INTERVALOID, JSONBOID};
use pgrx::prelude::*;
use pgrx::IntoDatum;
use serde_json::{Map, Value};

use super::call::{invalid, refuse, Caller, Section, Statement};
use super::datum::{input, json_value, object_members, text_of, timestamptz, utc};
use super::queue::{add, check_all, Spec};
use super::sql_jobs::check_timeout;
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("schedules.sql"));

static CHECK_WORK: Statement = statement("check_work");
static INSERT: Statement = statement("insert");
static LOCK: Statement = statement("lock");
static UPDATE: Statement = statement("update");
static DELETE: Statement = statement("delete");
static RUN_NOW: Statement = statement("run_now");
static RAN: Statement = statement("ran");

const WORK_KEYS: [&str; 4] = ["task", "payload", "queue", "sql"];
const OPTIONS: [&str; 10] = [
    "time_zone",
    "missed",
    "max_catch_up",
    "enabled",
    "priority",
    "max_attempts",
    "backoff",
    "max_backoff",
    "lease",
    "timeout",
];
const MISSED_RULES: [&str; 3] = ["skip", "once", "all"];

/// The time zone the options name, UTC where they name none.
fn time_zone(options: &Value) -> String {
    options
        .get("time_zone")
        .and_then(text_of)
        .unwrap_or_else(|| "UTC".into())
}

/// Refuses an unknown time zone, then a schedule that does not parse in it.
fn check_timing(schedule: &str, time_zone: &str) {
    if let Err(problem) = parse_time_zone(time_zone) {
        invalid(
            problem.to_string(),
            Some("Name a zone of pg_timezone_names, such as 'UTC' or 'Europe/Berlin' (names are case-sensitive)."),
        );
    }
    if let Err(problem) = Schedule::parse(schedule, time_zone) {
        invalid(
            format!("invalid schedule \"{schedule}\": {problem}"),
            Some(
                "Use five cron fields (minute hour day month weekday), six with seconds first, \
                  a macro such as @hourly, or an interval such as 'every 10 seconds'.",
            ),
        );
    }
}

/// Refuses work that is not one task or one SQL job, and options that are unknown or out of
/// range (`options` as `options_value` reads it); then the job a slot would add, so that a
/// schedule never fires a job that cannot be added.
fn check_work_and_options(
    section: &Section,
    work: Option<Datum>,
    options: Datum,
    options_value: &Value,
) {
    // Its keys and strings only: a task's payload is any JSON, as jobs_add takes it.
    let find = |members: &[(String, Option<String>)], key: &str| {
        members
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, text)| text.clone())
    };
    let Some(members) = work
        .and_then(object_members)
        .filter(|members| find(members, "task").is_some() != find(members, "sql").is_some())
    else {
        invalid(
            r#"work must be {"task": ..., "payload": ..., "queue": ...} or {"sql": ...}"#,
            Some("A schedule adds a queued task for your workers, or runs SQL in the database."),
        )
    };
    if let Some((unknown, _)) = members
        .iter()
        .find(|(k, _)| !WORK_KEYS.contains(&k.as_str()))
    {
        invalid(
            format!("unknown key \"{unknown}\" in work"),
            Some("work takes task, payload and queue, or sql."),
        );
    }
    // As jobs_add_sql takes them: an executor given none would have nothing to run.
    if find(&members, "sql").is_some_and(|sql| sql.is_none_or(|sql| sql.trim().is_empty())) {
        invalid(
            "work's sql must be the statements to run, as a JSON string that is not empty",
            Some(r#"For example {"sql": "VACUUM ANALYZE orders"}."#),
        );
    }
    let Some(options_map) = options_value.as_object() else {
        invalid("options must be a JSON object", None)
    };
    check_options(options_map);
    section.run(&CHECK_WORK, parameters! { work, options: Some(options) });
}

fn check_options(options: &Map<String, Value>) {
    if let Some(unknown) = options.keys().find(|k| !OPTIONS.contains(&k.as_str())) {
        invalid(
            format!("unknown option \"{unknown}\""),
            Some(
                "Options are time_zone, missed, max_catch_up, enabled, priority, max_attempts, \
                  backoff, max_backoff, lease and timeout.",
            ),
        );
    }
    if let Some(missed) = options
        .get("missed")
        .and_then(text_of)
        .filter(|m| !MISSED_RULES.contains(&m.as_str()))
    {
        invalid(
            format!("unknown missed-slot rule \"{missed}\""),
            Some(
                "missed is skip (a slot nobody fired is skipped), once (one catch-up run) or all \
                  (every missed slot, up to max_catch_up).",
            ),
        );
    }
    if let Some(given) = options.get("max_catch_up") {
        let whole = text_of(given).map(|text| {
            (1..=4).contains(&text.len())
                && text.bytes().all(|b| b.is_ascii_digit())
                && (1..=1000).contains(&text.parse::<i32>().unwrap_or(0))
        });
        if whole == Some(false) {
            invalid(
                format!("max_catch_up must be a whole number from 1 to 1000, not {given}"),
                Some("With missed => all, at most this many of the latest missed slots are fired."),
            );
        }
    }
    if let Some(enabled) = options.get("enabled").filter(|e| !e.is_boolean()) {
        invalid(
            format!("enabled must be true or false, not {enabled}"),
            None,
        );
    }
    if let Some(timeout) = options.get("timeout") {
        check_timeout(text_of(timeout).map(|t| input(&t, INTERVALOID)));
    }
}

/// The longest schedule name, as a queue's: each is an entry of an index (owner, name).
const NAME_BYTES: usize = super::queue::QUEUE_BYTES;

entry!(jobs_schedule, |fcinfo, arguments| {
    let caller = Caller::current();
    let (Some(name), Some(schedule)) = (
        arguments.name.get().filter(|name| !name.is_empty()),
        arguments.schedule.get(),
    ) else {
        refuse(
            PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            "a schedule needs a name and a schedule",
            None,
        )
    };
    if name.len() > NAME_BYTES {
        invalid(
            format!("name must be at most {NAME_BYTES} bytes, not {}", name.len()),
            Some("A schedule's name is an entry of an index: name it briefly, for example 'nightly-report'."),
        );
    }
    let options = arguments
        .options
        .datum()
        .unwrap_or_else(|| input("{}", JSONBOID));
    let options_value = json_value("options", options);
    let zone = time_zone(&options_value);
    check_timing(&schedule, &zone);
    let section = Section::as_owner(fcinfo);
    check_work_and_options(&section, arguments.work.datum(), options, &options_value);
    let inserted = section.run(
        &INSERT,
        parameters! {
            name: arguments.name.datum(),
            owner: Some(Datum::from(caller.identity)),
            schedule: arguments.schedule.datum(),
            time_zone: zone.as_str().into_datum(),
            work: arguments.work.datum(),
            options: Some(options),
        },
    );
    let Some(id) = inserted.get::<i64>(0, 0) else {
        refuse(
            PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION,
            format!("schedule \"{name}\" already exists"),
            Some("Change it with jobs_alter_schedule, or remove it with jobs_unschedule."),
        )
    };
    _wake_launcher();
    Datum::from(id)
});

fn missing_schedule(name: Option<String>) -> ! {
    refuse(
        PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
        format!("schedule \"{}\" does not exist", name.unwrap_or_default()),
        Some("SELECT name FROM pgjobs.jobs_schedules lists the schedules."),
    )
}

entry!(jobs_alter_schedule, |fcinfo, arguments| {
    let caller = Caller::current();
    let section = Section::as_owner(fcinfo);
    let old = section.run(
        &LOCK,
        parameters! {
            name: arguments.name.datum(),
            owner: Some(Datum::from(caller.identity)),
            options: arguments.options.datum(),
        },
    );
    let (Some(id), Some(old_schedule), Some(options)) =
        (old.datum(0, 0), old.get::<String>(0, 1), old.datum(0, 3))
    else {
        missing_schedule(arguments.name.get())
    };
    let schedule = arguments.schedule.get().unwrap_or(old_schedule);
    let options_value = json_value("options", options);
    let zone = time_zone(&options_value);
    check_timing(&schedule, &zone);
    check_work_and_options(
        &section,
        arguments.work.datum().or(old.datum(0, 2)),
        options,
        &options_value,
    );
    section.run(
        &UPDATE,
        parameters! {
            id: Some(id),
            schedule: schedule.as_str().into_datum(),
            time_zone: zone.as_str().into_datum(),
            work: arguments.work.datum(),
            options: Some(options),
        },
    );
    _wake_launcher();
    Datum::from(0)
});

entry!(jobs_unschedule, |fcinfo, arguments| {
    let caller = Caller::current();
    let section = Section::as_owner(fcinfo);
    let deleted = section.run(
        &DELETE,
        parameters! { name: arguments.name.datum(), owner: Some(Datum::from(caller.identity)) },
    );
    if deleted.len() == 0 {
        missing_schedule(arguments.name.get());
    }
    _wake_launcher();
    Datum::from(0)
});

// jobs_run_schedule(name) -> the job added (pg_timetable's and pg_cron's users ask for "run now").
entry!(jobs_run_schedule, |fcinfo, arguments| {
    let caller = Caller::current();
    let section = Section::as_owner(fcinfo);
    let found = section.run(
        &RUN_NOW,
        parameters! { name: arguments.name.datum(), owner: Some(Datum::from(caller.identity)) },
    );
    let (Some(id), Some(spec)) = (found.datum(0, 0), found.datum(0, 1)) else {
        missing_schedule(arguments.name.get())
    };
    let spec = Spec::of_record(spec);
    check_all(&[spec], true, true);
    let job = add(&section, caller.identity, &[spec])[0];
    section.run(
        &RAN,
        parameters! { id: Some(id), job: Some(Datum::from(job)) },
    );
    // A SQL job waits for the launcher to start its executor.
    _wake_launcher();
    Datum::from(job)
});

fn parse(schedule: &str, time_zone: &str) -> Schedule {
    Schedule::parse(schedule, time_zone).unwrap_or_else(|problem| {
        invalid(format!("invalid schedule \"{schedule}\": {problem}"), None)
    })
}

/// Why a time zone name is unknown, or None when it is known.
pub(crate) fn time_zone_problem(time_zone: &str) -> Option<String> {
    pg_jobs_core::schedule::parse_time_zone(time_zone)
        .err()
        .map(|problem| problem.to_string())
}

/// The first slot of a schedule strictly after a given time; null if none within 8 years.
#[pg_extern(immutable, parallel_safe)]
fn schedule_next_slot(
    schedule: &str,
    time_zone: &str,
    after: TimestampWithTimeZone,
) -> Option<TimestampWithTimeZone> {
    // ±infinity has no next slot to ask for.
    let Some(after) = utc(after) else {
        invalid(
            "after must be a finite time",
            Some("Ask for the slot after a time such as now()."),
        )
    };
    parse(schedule, time_zone)
        .next_after(after)
        .and_then(timestamptz)
}

/// The latest `max_slots` slots in `(after, until]`, oldest first. Looks back through widening
/// windows so that a per-second schedule after a month of downtime costs a few thousand steps,
/// not millions.
#[pg_extern(immutable, parallel_safe)]
fn _schedule_slots(
    schedule: &str,
    time_zone: &str,
    after: TimestampWithTimeZone,
    until: TimestampWithTimeZone,
    max_slots: i32,
) -> Vec<TimestampWithTimeZone> {
    let schedule = parse(schedule, time_zone);
    let (Some(after), Some(until)) = (utc(after), utc(until)) else {
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
            return latest.iter().copied().filter_map(timestamptz).collect();
        }
    }
    unreachable!("the last window starts at `after`")
}

/// Wakes the launcher once the calling transaction commits, so that a new schedule, SQL job or
/// routine is seen at once rather than after pg_jobs.refresh_interval.
#[pg_extern(volatile, parallel_unsafe)]
pub(crate) fn _wake_launcher() {
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
