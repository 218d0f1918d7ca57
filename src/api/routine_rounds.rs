//! The routine schedules' scheduler (`sql/087_routines.sql`): the launcher's round of every
//! schedule, which loads its day, writes its routines' statuses and sends what is due (starts,
//! restarts, the end of a silent run) while its switch says control, and a routine posted as a
//! batch job. Nothing here waits for a row anyone but the scheduler can hold: each is locked with
//! SKIP LOCKED or NOWAIT, and what is held is done at a later round. Statements in
//! `routine_rounds.sql`; `_routines_tick` runs a round by hand.

use pgrx::pg_sys::Datum;
use pgrx::prelude::*;

use super::call::{in_subtransaction, Failure, Section, Statement};
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("routine_rounds.sql"));

static SCHEDULER_STARTED: Statement = statement("scheduler_started");
static SCHEDULES: Statement = statement("schedules");
static ROUND_LOCK: Statement = statement("round_lock");
static SCHEDULE: Statement = statement("schedule");
static TAKE_SCHEDULE: Statement = statement("take_schedule");
static TAKE_DAY: Statement = statement("take_day");
static LOAD_DAY: Statement = statement("load_day");
static DROP_UNDEFINED: Statement = statement("drop_undefined");
static LOADED: Statement = statement("loaded");
static OBSERVE_AT_START: Statement = statement("observe_at_start");
static STATUS: Statement = statement("status");
static TODO: Statement = statement("todo");
static MODE: Statement = statement("mode");
static CANNOT_START: Statement = statement("cannot_start");
static DOING: Statement = statement("doing");
static FORGET_DAYS: Statement = statement("forget_days");
static FORGET_LOG: Statement = statement("forget_log");
static POST: Statement = statement("post");
static KILLING: Statement = statement("killing");
static RUNNING: Statement = statement("running");
static LOG_COMMAND: Statement = statement("log_command");

/// The scheduler's round at `at`: each schedule's in a subtransaction of its own, so that one
/// that fails holds up no other; then the days and the log older than pg_jobs.history_days go.
pub(super) fn tick(section: &Section, at: Datum) {
    let started = section.run(&SCHEDULER_STARTED, &[]).datum(0, 0);
    let schedules = section.run(&SCHEDULES, &[]);
    for row in 0..schedules.len() {
        let id = schedules.datum(row, 0).expect("a schedule's id");
        if let Err(failure) =
            in_subtransaction(|| round(section, id, at, started)).map_err(Failure::unless_cancelled)
        {
            warning!(
                "pg_jobs scheduler: schedule {} of {} failed: {failure}",
                schedules.get::<String>(row, 1).unwrap_or_default(),
                schedules.get::<String>(row, 2).unwrap_or_default()
            );
        }
    }
    section.run(&FORGET_DAYS, parameters! { at: Some(at) });
    section.run(&FORGET_LOG, parameters! { at: Some(at) });
}

/// One round of schedule `id` at `at` (the scheduler started at `started`).
fn round(section: &Section, id: Datum, at: Datum, started: Option<Datum>) {
    let schedule = Some(id);
    if section
        .run(&ROUND_LOCK, parameters! { schedule_id: schedule })
        .get::<bool>(0, 0)
        != Some(true)
    {
        return;
    }
    let read = section.run(
        &SCHEDULE,
        parameters! { schedule_id: schedule, at: Some(at), scheduler_started_at: started },
    );
    let Some(today) = read.datum(0, 1) else {
        return;
    };
    let [starting, loaded_before, new_day, reload] =
        [2, 3, 4, 5].map(|column| read.get::<bool>(0, column) == Some(true));
    if starting || reload || new_day {
        if !load(section, id, today, at) {
            // Held: a reload waits, and the day goes on as read; a new day or a new scheduler
            // (whose switch must be set first) waits with its commands.
            if starting || new_day {
                return;
            }
        } else if starting && loaded_before {
            section.run(
                &OBSERVE_AT_START,
                parameters! { schedule_id: schedule, at: Some(at) },
            );
        }
    }
    let day = parameters! { schedule_id: schedule, day: Some(today), at: Some(at) };
    section.run(&STATUS, day);
    let (mut sent, mut held) = (0, 0);
    let todo = section.run(&TODO, day);
    for row in 0..todo.len() {
        let routine = todo.get::<String>(row, 0).expect("a routine");
        let ran_before = todo.get::<bool>(row, 1) == Some(true);
        let what = todo.get::<String>(row, 2).expect("a command");
        // The switch is read right before each command: one switched off in the middle of a round
        // stops the rest of it. A person's restart goes whatever it says.
        let mode = section
            .run(&MODE, parameters! { schedule_id: schedule })
            .get::<String>(0, 0);
        if what != "start_asked" && mode.as_deref() != Some("control") {
            held += 1;
            continue;
        }
        let kind = if what == "kill" { "kill" } else { "routine" };
        let posted = in_subtransaction(|| {
            post(section, id, &routine, kind, true);
            if what != "start_asked" {
                let command = match (what.as_str(), ran_before) {
                    ("kill", _) => "restart (silent)",
                    (_, false) => "start",
                    _ => "restart",
                };
                section.run(
                    &LOG_COMMAND,
                    parameters! {
                        schedule_id: schedule,
                        routine: Some(section.text(&routine)),
                        command: Some(section.text(command)),
                    },
                );
            }
        })
        .map_err(Failure::unless_cancelled);
        match posted {
            Ok(()) => sent += 1,
            // Its job is held by a transaction of the schedule's owner: it stays due, for the
            // next round; no round waits for one identity's transactions.
            Err(failure) if failure.code == PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE => {}
            // A computer no agent has registered, say: the routine stays due and shows why.
            Err(failure) => {
                section.run(
                    &CANNOT_START,
                    parameters! {
                        schedule_id: schedule,
                        day: Some(today),
                        routine: Some(section.text(&routine)),
                        reason: Some(section.text(&failure.message)),
                        at: Some(at),
                    },
                );
            }
        }
    }
    if sent > 0 {
        section.run(&STATUS, day);
    }
    let mode = section
        .run(&MODE, parameters! { schedule_id: schedule })
        .datum(0, 0);
    section.run(
        &DOING,
        parameters! {
            schedule_id: schedule,
            mode,
            sent: Some(Datum::from(sent)),
            held: Some(Datum::from(held)),
        },
    );
}

/// Loads schedule `id`'s day `today` from its definitions, at `at`: whether it could, its rows
/// not held (its row by its owner editing it, its day's rows by a person's command left open).
fn load(section: &Section, id: Datum, today: Datum, at: Datum) -> bool {
    let (schedule, today, at) = (Some(id), Some(today), Some(at));
    if section
        .run(&TAKE_SCHEDULE, parameters! { schedule_id: schedule })
        .len()
        == 0
    {
        return false;
    }
    let day_taken = in_subtransaction(|| {
        section.run(&TAKE_DAY, parameters! { schedule_id: schedule, day: today });
    });
    match day_taken {
        Ok(()) => {}
        Err(failure) if failure.code == PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE => return false,
        Err(failure) => failure.raise(),
    }
    section.run(
        &LOAD_DAY,
        parameters! { schedule_id: schedule, day: today, at },
    );
    section.run(
        &DROP_UNDEFINED,
        parameters! { schedule_id: schedule, day: today },
    );
    section.run(
        &LOADED,
        parameters! { schedule_id: schedule, day: today, at },
    );
    true
}

/// Posts routine `routine` of schedule `id`'s current day for the schedule's owner, as `kind`:
/// its run (routine) or the end of its runs (kill); `nowait`: without waiting for a transaction
/// of the owner that posts the same command (refused with 55P03 instead).
pub(super) fn post(section: &Section, id: Datum, routine: &str, kind: &str, nowait: bool) {
    let (schedule, routine) = (Some(id), Some(section.text(routine)));
    let job = section
        .run(
            &POST,
            parameters! {
                schedule_id: schedule,
                routine,
                kind: Some(section.text(kind)),
                nowait: Some(Datum::from(nowait)),
            },
        )
        .datum(0, 0);
    if kind == "kill" {
        section.run(&KILLING, parameters! { schedule_id: schedule, routine });
    } else {
        section.run(
            &RUNNING,
            parameters! { schedule_id: schedule, routine, job_id: job },
        );
    }
}

// _routines_tick(at): the scheduler's round at `at`, by hand (the tests), as the launcher runs it.
entry!(_routines_tick, |fcinfo, arguments| {
    let at = arguments.at.given();
    tick(&Section::as_current_user(), at);
    Datum::from(0)
});
