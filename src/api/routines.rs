//! Routine schedules (`sql/087_routines.sql`): the public functions of owners, watchers and
//! routines, and the rules of `pg_jobs_core::routine` the scheduler's SQL calls.

use pg_jobs_core::routine::{self, Command, DefinitionRow, Facts, Level, Run};
use pgrx::prelude::*;
use serde_json::{json, Value};

use crate::owner_call;

use super::call::{Parameters, Planning, Statement};
use super::services::{wished, Service};

const STATEMENTS: &str = include_str!("routines.sql");

static TICK: Statement = Statement::new(
    STATEMENTS,
    "tick",
    Parameters::Of(&[pg_sys::TIMESTAMPTZOID]),
    Planning::Default,
);
static NEXT_LOOK: Statement = Statement::new(
    STATEMENTS,
    "next_look",
    Parameters::Of(&[pg_sys::TIMESTAMPTZOID]),
    Planning::Default,
);

/// The routine schedules' scheduler (sql/087_routines.sql, `_routines_tick`).
pub(crate) static ROUTINES: Service = Service {
    name: "routines",
    work: |section, at| {
        section.run(&TICK, &[Some(at)]);
    },
    next: |section, at| wished(section, &NEXT_LOOK, at),
};

owner_call!(
    routines_create,
    pg_finfo_routines_create,
    STATEMENTS,
    "create"
);
owner_call!(routines_put, pg_finfo_routines_put, STATEMENTS, "put");
owner_call!(
    routines_remove,
    pg_finfo_routines_remove,
    STATEMENTS,
    "remove"
);
owner_call!(
    routines_import,
    pg_finfo_routines_import,
    STATEMENTS,
    "import"
);
owner_call!(
    routines_export,
    pg_finfo_routines_export,
    STATEMENTS,
    "export"
);
owner_call!(routines_drop, pg_finfo_routines_drop, STATEMENTS, "drop");
owner_call!(routines_grant, pg_finfo_routines_grant, STATEMENTS, "grant");
owner_call!(
    routines_revoke,
    pg_finfo_routines_revoke,
    STATEMENTS,
    "revoke"
);
owner_call!(
    routines_reload,
    pg_finfo_routines_reload,
    STATEMENTS,
    "reload"
);
owner_call!(routines_mode, pg_finfo_routines_mode, STATEMENTS, "mode");
owner_call!(
    routines_set_mode,
    pg_finfo_routines_set_mode,
    STATEMENTS,
    "set_mode"
);
owner_call!(
    routine_restart,
    pg_finfo_routine_restart,
    STATEMENTS,
    "restart"
);
owner_call!(routine_stop, pg_finfo_routine_stop, STATEMENTS, "stop");
owner_call!(
    routine_message,
    pg_finfo_routine_message,
    STATEMENTS,
    "message"
);

fn seconds(at: Option<TimestampWithTimeZone>) -> Option<f64> {
    let at = at?;
    if !at.is_finite() {
        return None;
    }
    // PostgreSQL counts from 2000-01-01.
    let micros = at.into_inner() + 946_684_800_000_000;
    Some(micros as f64 / 1e6)
}

/// A routine's status and the command due for it (start, kill, start_asked, or null), from what
/// is known of it (see `pg_jobs_core::routine`).
#[allow(clippy::too_many_arguments)]
#[pg_extern(immutable, parallel_safe)]
fn _routine_decide(
    now: TimestampWithTimeZone,
    realtime: bool,
    external: bool,
    scheduler: bool,
    due_at: Option<TimestampWithTimeZone>,
    dependencies_done: bool,
    run: Option<&str>,
    posted_at: Option<TimestampWithTimeZone>,
    last_sign: Option<TimestampWithTimeZone>,
    last_level: Option<&str>,
    restarts: i32,
    restart_asked: bool,
    ending: bool,
) -> TableIterator<
    'static,
    (
        name!(status, &'static str),
        name!(command, Option<&'static str>),
    ),
> {
    let facts = Facts {
        now: seconds(Some(now)).unwrap_or_default(),
        realtime,
        external,
        scheduler,
        due_at: seconds(due_at),
        dependencies_done,
        run: run.and_then(Run::parse),
        posted_at: seconds(posted_at),
        last_sign: seconds(last_sign),
        last_level: last_level.and_then(Level::parse),
        restarts,
        restart_asked,
        ending,
    };
    TableIterator::once((
        routine::status(&facts),
        routine::command(&facts).map(Command::word),
    ))
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _routine_status_rank(word: &str) -> Option<i32> {
    routine::status_rank(word)
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _routine_status_word(rank: i32) -> Option<&'static str> {
    routine::STATUS_WORDS
        .get(usize::try_from(rank).ok()?)
        .copied()
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _routine_failing(word: &str) -> bool {
    routine::failing(word)
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _routine_level_ok(level: &str) -> bool {
    Level::parse(level).is_some()
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _routine_line_level(line: &str) -> &'static str {
    routine::line_level(line).word()
}

/// What is wrong with a routine of a definition, or null.
#[pg_extern(immutable, parallel_safe)]
fn _routine_problem(
    name: Option<&str>,
    runtimes: Option<&str>,
    args: Option<&str>,
    realtime: Option<bool>,
) -> Option<String> {
    let Some(name) = name else {
        return Some("a routine must have a name".into());
    };
    let found = || -> Result<(), String> {
        routine::parse_routine(name)?;
        let runtimes = routine::parse_runtimes(runtimes.unwrap_or(""))?;
        if realtime.unwrap_or(false) && !runtimes.is_empty() {
            return Err(format!(
                "routine {name} is realtime: it runs all day and has no runtimes"
            ));
        }
        routine::split_args(args.unwrap_or(""))?;
        Ok(())
    };
    found().err()
}

/// Runtimes as times of day (the text was checked by `_routine_problem`).
#[pg_extern(immutable, parallel_safe)]
fn _routine_minutes(runtimes: Option<&str>) -> Vec<i32> {
    routine::parse_runtimes(runtimes.unwrap_or("")).unwrap_or_default()
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _routine_computer(name: &str) -> Option<&str> {
    routine::parse_routine(name).ok().map(|r| r.computer)
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _routine_is_scheduler(name: &str) -> bool {
    routine::parse_routine(name).is_ok_and(|r| routine::is_scheduler(r.path))
}

/// The shell command of a routine's run: its command (by default the path of its name), and
/// after it the arguments, which the job passes as words ("$@"), if it has any.
#[pg_extern(immutable, strict, parallel_safe)]
fn _routine_shell_command(name: &str, command: &str, args: &str) -> String {
    let command = match command.trim() {
        "" => routine::parse_routine(name).map_or(name, |r| r.path),
        given => given,
    };
    match routine::split_args(args) {
        Ok(words) if words.is_empty() => command.to_string(),
        _ => format!("{command} \"$@\""),
    }
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _routine_args(args: &str) -> Vec<String> {
    routine::split_args(args).unwrap_or_else(|problem| {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            problem
        );
    })
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _routine_shown_args(args: &str) -> String {
    routine::shown_args(args)
}

/// The first dependency cycle of the edges routine → dependency, or null.
#[pg_extern(immutable, strict, parallel_safe)]
fn _routine_cycle(routines: Vec<String>, dependencies: Vec<String>) -> Option<Vec<String>> {
    let edges: Vec<(String, String)> = routines.into_iter().zip(dependencies).collect();
    routine::dependency_cycle(&edges)
}

/// A definition's CSV form read into rows (jsonb objects of text fields).
#[pg_extern(immutable, strict, parallel_safe)]
fn _routines_csv_rows(csv: &str) -> pgrx::JsonB {
    let rows = routine::read_csv(csv).unwrap_or_else(|problem| {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INVALID_TEXT_REPRESENTATION,
            problem,
            format!(
                "The first line names the columns: {}.",
                routine::CSV_COLUMNS.join(",")
            )
        );
    });
    pgrx::JsonB(Value::Array(
        rows.into_iter()
            .map(|r| {
                json!({
                    "routine": r.routine, "group": r.group, "external": r.external,
                    "realtime": r.realtime, "runtimes": r.runtimes, "args": r.args,
                    "dependencies": r.dependencies, "computer": r.computer, "seq": r.seq,
                    "command": r.command,
                })
            })
            .collect(),
    ))
}

/// Rows (as `_routines_csv_rows` gives them) in their CSV form.
#[pg_extern(immutable, strict, parallel_safe)]
fn _routines_csv(rows: pgrx::JsonB) -> String {
    let text = |row: &Value, key: &str| row[key].as_str().unwrap_or("").to_string();
    let rows: Vec<DefinitionRow> = rows
        .0
        .as_array()
        .into_iter()
        .flatten()
        .map(|row| DefinitionRow {
            routine: text(row, "routine"),
            group: text(row, "group"),
            external: row["external"].as_bool().unwrap_or(false),
            realtime: row["realtime"].as_bool().unwrap_or(false),
            runtimes: text(row, "runtimes"),
            args: text(row, "args"),
            dependencies: text(row, "dependencies"),
            computer: text(row, "computer"),
            seq: row["seq"].as_i64().and_then(|s| i32::try_from(s).ok()),
            command: text(row, "command"),
        })
        .collect();
    routine::write_csv(&rows)
}
