//! The rules of `pg_jobs_core::routine` that the routine schedules' SQL calls
//! (`sql/087_routines.sql`): statuses and commands, a definition's fields, its CSV form.

use pg_jobs_core::routine::{self, Command, DefinitionRow, Facts, Level, Run};
use pgrx::prelude::*;
use serde_json::{json, Value};

use super::call::{invalid, refuse_with_detail};
use super::datum::utc;

/// A time as `pg_jobs_core::routine` takes it: Unix seconds; None for ±infinity.
fn seconds(at: Option<TimestampWithTimeZone>) -> Option<f64> {
    utc(at?).map(|at| at.timestamp_micros() as f64 / 1e6)
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

pub(crate) fn level_ok(level: &str) -> bool {
    Level::parse(level).is_some()
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _routine_line_level(line: &str) -> &'static str {
    routine::line_level(line).word()
}

/// What is wrong with a routine of a definition, or None.
pub(crate) fn problem(
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
    routine::split_args(args).unwrap_or_else(|problem| invalid(problem, None))
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _routine_shown_args(args: &str) -> String {
    routine::shown_args(args)
}

/// A definition's CSV form read into rows (objects of text fields).
pub(crate) fn csv_rows(csv: &str) -> Vec<Value> {
    let rows = routine::read_csv(csv).unwrap_or_else(|problem| {
        refuse_with_detail(
            PgSqlErrorCode::ERRCODE_INVALID_TEXT_REPRESENTATION,
            problem,
            Some(format!(
                "The first line names the columns: {}.",
                routine::CSV_COLUMNS.join(",")
            )),
            None,
        )
    });
    rows.into_iter()
        .map(|r| {
            json!({
                "routine": r.routine, "group": r.group, "external": r.external,
                "realtime": r.realtime, "runtimes": r.runtimes, "args": r.args,
                "dependencies": r.dependencies, "computer": r.computer, "seq": r.seq,
                "command": r.command,
            })
        })
        .collect()
}

/// Rows (as `csv_rows` gives them) in their CSV form.
pub(crate) fn csv(rows: pgrx::JsonB) -> String {
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
