//! Routine schedules: what a routine's status is from what is known of it today, which command
//! the scheduler sends for it, and the rules of a definition's fields (runtimes, names,
//! arguments, dependencies, the CSV form).
//!
//! Times are Unix epoch seconds, so nothing here needs PostgreSQL's date types.

use std::collections::{BTreeMap, BTreeSet};

/// The status words, most pressing first: a group shows the first word any of its routines has
/// (failing, then starting, waiting, not known, running, scheduled, completed).
pub const STATUS_WORDS: [&str; 9] = [
    "ERROR",
    "DELAYED",
    "SILENT",
    "starting",
    "waiting",
    "WAS RUNNING",
    "running",
    "scheduled",
    "completed",
];

/// Shown for every routine of a schedule whose scheduler has not written its state lately.
pub const NOT_KNOWN: &str = "WAS RUNNING";

/// A realtime routine with no sign of life for this long is SILENT.
pub const SILENT_AFTER: f64 = 30.0;
/// A routine due (or commanded) this long ago that has not started is DELAYED.
pub const START_GRACE: f64 = 60.0;
/// The silence after which a realtime routine is started again: 45 s the first time, doubling
/// with each restart of the day, at most 5 minutes.
const FIRST_RESTART: f64 = 45.0;
const LAST_RESTART: f64 = 300.0;

pub fn status_rank(word: &str) -> Option<i32> {
    STATUS_WORDS
        .iter()
        .position(|w| *w == word)
        .map(|rank| rank as i32)
}

/// The words of a routine that is failing: counted as failing on the tabs, shown by the
/// problems filter.
pub const FAILING_WORDS: [&str; 3] = ["ERROR", "DELAYED", "SILENT"];

pub fn failing(word: &str) -> bool {
    FAILING_WORDS.contains(&word)
}

pub fn restart_after(restarts: i32) -> f64 {
    (FIRST_RESTART * 2f64.powi(restarts.clamp(0, 16))).min(LAST_RESTART)
}

/// Where the run the scheduler last commanded is (its batch job).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Run {
    /// Posted, not taken by an agent yet.
    Waiting,
    /// Taken, its process not started yet.
    Fetched,
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl Run {
    pub fn parse(word: &str) -> Option<Run> {
        Some(match word {
            "waiting" => Run::Waiting,
            "fetched" => Run::Fetched,
            "running" => Run::Running,
            "completed" => Run::Completed,
            "failed" => Run::Failed,
            "cancelled" => Run::Cancelled,
            _ => return None,
        })
    }

    fn alive(self) -> bool {
        matches!(self, Run::Waiting | Run::Fetched | Run::Running)
    }
}

/// The level of a message.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Level {
    Info,
    Warning,
    Error,
    /// A batch routine says it is done (the way an external one reports completion).
    Completed,
}

pub const LEVELS: [&str; 4] = ["info", "warning", "error", "completed"];

impl Level {
    pub fn parse(word: &str) -> Option<Level> {
        Some(match word {
            "info" => Level::Info,
            "warning" => Level::Warning,
            "error" => Level::Error,
            "completed" => Level::Completed,
            _ => return None,
        })
    }

    pub fn word(self) -> &'static str {
        LEVELS[self as usize]
    }
}

/// The level of a line a routine wrote: the usual words of loggers (`ERROR`, `CRITICAL`,
/// `FATAL`, a Python `Traceback`; `WARNING`, `WARN`), written in capitals as whole words.
pub fn line_level(line: &str) -> Level {
    let mut level = Level::Info;
    for word in line.split(|c: char| !c.is_ascii_alphanumeric()) {
        match word {
            "ERROR" | "CRITICAL" | "FATAL" | "Traceback" => return Level::Error,
            "WARNING" | "WARN" => level = Level::Warning,
            _ => {}
        }
    }
    level
}

/// What is known of one routine today.
#[derive(Clone, Debug)]
pub struct Facts {
    pub now: f64,
    pub realtime: bool,
    /// Run by something else: watched through its messages, never commanded.
    pub external: bool,
    /// The scheduler itself, listed in its schedule: never commanded.
    pub scheduler: bool,
    /// Since when a run is due: the latest runtime passed today (for a batch routine without
    /// runtimes and a realtime one, since the day or the routine began); None before the first.
    pub due_at: Option<f64>,
    pub dependencies_done: bool,
    /// The run last commanded today, and when it was commanded.
    pub run: Option<Run>,
    pub posted_at: Option<f64>,
    /// The latest message, output line, start or end of a run.
    pub last_sign: Option<f64>,
    pub last_level: Option<Level>,
    /// Runs started today after the first.
    pub restarts: i32,
    /// A person asked for a restart, and the run it ended has not ended yet.
    pub restart_asked: bool,
    /// The scheduler sent the end of the current run (a silent realtime one): it starts again
    /// once that has ended. (A person's stop leaves the restart to the silence.)
    pub ending: bool,
}

impl Facts {
    fn silent_for(&self) -> Option<f64> {
        self.last_sign.map(|at| self.now - at)
    }

    fn silent(&self) -> bool {
        self.silent_for().is_none_or(|quiet| quiet >= SILENT_AFTER)
    }

    /// The run that belongs to what is due now: a batch routine's run commanded before its latest
    /// runtime belongs to an earlier one.
    fn current_run(&self) -> Option<Run> {
        let run = self.run?;
        match (self.realtime, self.due_at, self.posted_at) {
            (false, Some(due), Some(posted)) if posted < due => None,
            _ => Some(run),
        }
    }

    fn late(&self, since: Option<f64>) -> bool {
        since.is_some_and(|at| self.now - at >= START_GRACE)
    }
}

/// The routine's status word (never WAS RUNNING: that is the reader's, when the scheduler is
/// not heard of).
pub fn status(f: &Facts) -> &'static str {
    if f.scheduler {
        return "running";
    }
    if f.external {
        return external_status(f);
    }
    match f.current_run() {
        Some(Run::Waiting | Run::Fetched) if f.late(f.posted_at) => "DELAYED",
        Some(Run::Waiting | Run::Fetched) => "starting",
        Some(_) if f.realtime && f.silent() => "SILENT",
        Some(Run::Running) if f.last_level == Some(Level::Error) => "ERROR",
        Some(Run::Running) => "running",
        Some(Run::Completed) => "completed",
        Some(Run::Failed | Run::Cancelled) => "ERROR",
        None if f.realtime && !f.silent() => "running",
        None if f.due_at.is_none() => "scheduled",
        None if !f.dependencies_done => "waiting",
        None if f.late(f.due_at) => "DELAYED",
        None => "waiting",
    }
}

/// An external routine is known only by its messages.
fn external_status(f: &Facts) -> &'static str {
    let heard_since_due = match (f.last_sign, f.due_at) {
        (Some(sign), Some(due)) => sign >= due,
        (Some(_), None) => f.realtime,
        (None, _) => false,
    };
    if f.realtime && heard_since_due {
        return match f.last_level {
            _ if f.silent() => "SILENT",
            Some(Level::Error) => "ERROR",
            _ => "running",
        };
    }
    match f.last_level {
        _ if f.due_at.is_none() => "scheduled",
        Some(Level::Completed) if heard_since_due => "completed",
        Some(Level::Error) if heard_since_due => "ERROR",
        _ if heard_since_due => "running",
        _ if f.late(f.due_at) => "DELAYED",
        _ => "waiting",
    }
}

/// A command the scheduler sends for a routine.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Command {
    /// Start a run (a batch job of kind routine), if its schedule's commands are on.
    Start,
    /// End a silent run (a batch job of kind kill); the start follows once it has ended.
    Kill,
    /// Start the run a person's restart asked for: sent whatever the switch says.
    StartAsked,
}

impl Command {
    pub fn word(self) -> &'static str {
        match self {
            Command::Start => "start",
            Command::Kill => "kill",
            Command::StartAsked => "start_asked",
        }
    }
}

pub fn command(f: &Facts) -> Option<Command> {
    if f.scheduler || f.external {
        return None;
    }
    let alive = f.run.is_some_and(Run::alive);
    if f.restart_asked {
        return (!alive).then_some(Command::StartAsked);
    }
    if !f.dependencies_done || f.due_at.is_none() {
        return None;
    }
    if !f.realtime {
        // One run per runtime; one that still runs from an earlier runtime is let finish.
        return (f.current_run().is_none() && !alive).then_some(Command::Start);
    }
    let restart_due = f
        .silent_for()
        .is_none_or(|quiet| quiet >= restart_after(f.restarts));
    match f.run {
        Some(Run::Waiting | Run::Fetched) => None,
        Some(Run::Running) => (restart_due && !f.ending).then_some(Command::Kill),
        // The silent run it ended has ended: the restart's second half.
        _ if f.ending => Some(Command::Start),
        // Never started, or started and ended: a first start is at once, a restart waits.
        None if f.last_sign.is_none() => Some(Command::Start),
        _ => restart_due.then_some(Command::Start),
    }
}

/// A routine's name, `user@COMPUTER:Repo/folder/code` or `user@COMPUTER:Package.Module`.
#[derive(Debug, PartialEq)]
pub struct RoutineName<'a> {
    pub user: &'a str,
    pub computer: &'a str,
    pub path: &'a str,
}

pub fn parse_routine(name: &str) -> Result<RoutineName<'_>, String> {
    let problem = || {
        format!(
            "routine \"{name}\" is not of the form user@COMPUTER:Repo/folder/code or user@COMPUTER:Package.Module"
        )
    };
    let (user, rest) = name.split_once('@').ok_or_else(problem)?;
    let (computer, path) = rest.split_once(':').ok_or_else(problem)?;
    let clean = |part: &str| {
        !part.is_empty()
            && !part
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '@' || c == ',')
    };
    if !clean(user) || !clean(computer) || computer.contains(':') || !clean(path) {
        return Err(problem());
    }
    Ok(RoutineName {
        user,
        computer,
        path,
    })
}

/// Whether a routine is the scheduler itself: pg_jobs' (the launcher) or, in a definition
/// brought from the seed's system, its Routines.Scheduler.
pub fn is_scheduler(path: &str) -> bool {
    matches!(path, "pg_jobs.scheduler" | "pg_jobs.launcher")
        || path == "Routines.Scheduler"
        || path.ends_with(".Routines.Scheduler")
        || path.ends_with("/Routines/Scheduler")
}

/// Runtimes, `HH:MM` separated by commas: minutes of the day, sorted, each once.
pub fn parse_runtimes(text: &str) -> Result<Vec<i32>, String> {
    let mut minutes = BTreeSet::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let bad = || format!("runtime \"{item}\" is not a time of day HH:MM (00:00 to 23:59)");
        let (h, m) = item.split_once(':').ok_or_else(bad)?;
        let digits = |s: &str| (1..=2).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(h) || m.len() != 2 || !digits(m) {
            return Err(bad());
        }
        let (h, m): (i32, i32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
        if h > 23 || m > 59 {
            return Err(bad());
        }
        minutes.insert(h * 60 + m);
    }
    Ok(minutes.into_iter().collect())
}

pub fn format_runtimes(minutes: &[i32]) -> String {
    minutes
        .iter()
        .map(|m| format!("{:02}:{:02}", m / 60, m % 60))
        .collect::<Vec<_>>()
        .join(",")
}

/// Splits arguments as a POSIX shell would split words: blanks separate, '...' and "..." quote,
/// a backslash escapes (inside "..." only before $ ` " \ and a newline). No expansion.
pub fn split_args(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => words.extend(word.take()),
            '\'' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err(format!("unclosed ' in arguments: {text}")),
                    }
                }
            }
            '"' => {
                let w = word.get_or_insert_with(String::new);
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('$' | '`' | '"' | '\\')) => w.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err(format!("unclosed \" in arguments: {text}")),
                        },
                        Some(c) => w.push(c),
                        None => return Err(format!("unclosed \" in arguments: {text}")),
                    }
                }
            }
            '\\' => match chars.next() {
                Some('\n') => {}
                Some(c) => word.get_or_insert_with(String::new).push(c),
                None => return Err(format!("arguments end in a lone backslash: {text}")),
            },
            c => word.get_or_insert_with(String::new).push(c),
        }
    }
    words.extend(word);
    Ok(words)
}

/// Arguments as shown: split, the values of secret-looking flags masked
/// ([`crate::mask`]), joined again with a shell's quoting where needed.
pub fn shown_args(text: &str) -> String {
    // A definition's arguments always split; anything else shows nothing of itself.
    let Ok(words) = split_args(text) else {
        return crate::mask::MASK.to_string();
    };
    let given: Vec<Option<String>> = words.into_iter().map(Some).collect();
    crate::mask::mask_args(&given)
        .into_iter()
        .flatten()
        .map(|word| {
            let plain = !word.is_empty()
                && word
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_=./:,@%+*".contains(c));
            if plain {
                word
            } else {
                format!("'{}'", word.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The first cycle among dependencies, as a path that ends where it starts.
pub fn dependency_cycle(edges: &[(String, String)]) -> Option<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (routine, dependency) in edges {
        next.entry(routine).or_default().push(dependency);
    }
    // Depth first, with the path so far; `done` holds what is known to lead to no cycle.
    let mut done: BTreeSet<&str> = BTreeSet::new();
    fn visit<'a>(
        at: &'a str,
        next: &BTreeMap<&'a str, Vec<&'a str>>,
        path: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|p| *p == at) {
            let mut cycle: Vec<String> = path[start..].iter().map(|p| p.to_string()).collect();
            cycle.push(at.to_string());
            return Some(cycle);
        }
        if done.contains(at) {
            return None;
        }
        path.push(at);
        for dependency in next.get(at).into_iter().flatten() {
            if let Some(cycle) = visit(dependency, next, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.insert(at);
        None
    }
    for routine in next.keys() {
        if let Some(cycle) = visit(routine, &next, &mut Vec::new(), &mut done) {
            return Some(cycle);
        }
    }
    None
}

/// The columns of a definition's CSV form, in order.
pub const CSV_COLUMNS: [&str; 10] = [
    "routine",
    "group",
    "external",
    "realtime",
    "runtimes",
    "args",
    "dependencies",
    "computer",
    "seq",
    "command",
];

/// One routine of a definition, as text (the SQL side checks the fields).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DefinitionRow {
    pub routine: String,
    pub group: String,
    pub external: bool,
    pub realtime: bool,
    pub runtimes: String,
    pub args: String,
    /// Routines, comma-separated.
    pub dependencies: String,
    pub computer: String,
    pub seq: Option<i32>,
    pub command: String,
}

fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "t" | "yes" | "y" | "1" => Some(true),
        "false" | "f" | "no" | "n" | "0" | "" => Some(false),
        _ => None,
    }
}

/// Reads a definition's CSV form: a header naming every column of [`CSV_COLUMNS`] (in any
/// order), then one row per routine. Errors name the line.
pub fn read_csv(text: &str) -> Result<Vec<DefinitionRow>, String> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(false)
        .from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| format!("the CSV's header cannot be read: {e}"))?
        .clone();
    let position = |column: &str| header.iter().position(|h| h.trim() == column);
    if let Some(unknown) = header.iter().find(|h| !CSV_COLUMNS.contains(&h.trim())) {
        return Err(format!(
            "the CSV has a column \"{unknown}\" that a definition does not; its columns are {}",
            CSV_COLUMNS.join(",")
        ));
    }
    let missing: Vec<&str> = CSV_COLUMNS
        .iter()
        .copied()
        .filter(|c| position(c).is_none())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the CSV has no column {}; its header must name {}",
            missing.join(", "),
            CSV_COLUMNS.join(",")
        ));
    }
    let index: Vec<usize> = CSV_COLUMNS.iter().map(|c| position(c).unwrap()).collect();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| format!("the CSV cannot be read: {e}"))?;
        let line = record.position().map_or(0, |p| p.line());
        let field = |i: usize| record.get(index[i]).unwrap_or("").to_string();
        let flag = |i: usize| {
            parse_bool(&field(i)).ok_or_else(|| {
                format!(
                    "line {line}: {} is \"{}\", not true or false",
                    CSV_COLUMNS[i],
                    field(i)
                )
            })
        };
        let seq = match field(8).trim() {
            "" => None,
            s => Some(
                s.parse::<i32>()
                    .map_err(|_| format!("line {line}: seq is \"{s}\", not a whole number"))?,
            ),
        };
        rows.push(DefinitionRow {
            routine: field(0).trim().to_string(),
            group: field(1),
            external: flag(2)?,
            realtime: flag(3)?,
            runtimes: field(4),
            args: field(5),
            dependencies: field(6),
            computer: field(7).trim().to_string(),
            seq,
            command: field(9),
        });
    }
    Ok(rows)
}

/// A definition in its CSV form, header first.
pub fn write_csv(rows: &[DefinitionRow]) -> String {
    let mut writer = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    writer.write_record(CSV_COLUMNS).expect("writes to memory");
    for row in rows {
        let seq = row.seq.map(|s| s.to_string()).unwrap_or_default();
        writer
            .write_record([
                row.routine.as_str(),
                &row.group,
                if row.external { "true" } else { "false" },
                if row.realtime { "true" } else { "false" },
                &row.runtimes,
                &row.args,
                &row.dependencies,
                &row.computer,
                &seq,
                &row.command,
            ])
            .expect("writes to memory");
    }
    String::from_utf8(writer.into_inner().expect("writes to memory")).expect("fields are text")
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: f64 = 1_000_000.0;

    fn batch() -> Facts {
        Facts {
            now: T,
            realtime: false,
            external: false,
            scheduler: false,
            due_at: Some(T - 1.0),
            dependencies_done: true,
            run: None,
            posted_at: None,
            last_sign: None,
            last_level: None,
            restarts: 0,
            restart_asked: false,
            ending: false,
        }
    }

    fn realtime() -> Facts {
        Facts {
            realtime: true,
            due_at: Some(T - 3600.0),
            ..batch()
        }
    }

    fn ran(mut f: Facts, run: Run, posted_ago: f64, sign_ago: f64) -> Facts {
        f.run = Some(run);
        f.posted_at = Some(f.now - posted_ago);
        f.last_sign = Some(f.now - sign_ago);
        f
    }

    #[test]
    fn batch_statuses() {
        assert_eq!(
            status(&Facts {
                due_at: None,
                ..batch()
            }),
            "scheduled"
        );
        assert_eq!(status(&batch()), "waiting");
        assert_eq!(
            status(&Facts {
                dependencies_done: false,
                ..batch()
            }),
            "waiting"
        );
        assert_eq!(
            status(&Facts {
                due_at: Some(T - 60.0),
                ..batch()
            }),
            "DELAYED"
        );
        assert_eq!(
            status(&Facts {
                due_at: Some(T - 59.0),
                ..batch()
            }),
            "waiting"
        );
        assert_eq!(status(&ran(batch(), Run::Waiting, 0.5, 0.5)), "starting");
        assert_eq!(status(&ran(batch(), Run::Fetched, 0.5, 0.5)), "starting");
        let late = ran(
            Facts {
                due_at: Some(T - 100.0),
                ..batch()
            },
            Run::Waiting,
            61.0,
            61.0,
        );
        assert_eq!(status(&late), "DELAYED");
        assert_eq!(status(&ran(batch(), Run::Running, 0.5, 0.1)), "running");
        // A batch routine is never SILENT: it may work quietly.
        assert_eq!(status(&ran(batch(), Run::Running, 0.5, 500.0)), "running");
        assert_eq!(status(&ran(batch(), Run::Completed, 0.5, 0.1)), "completed");
        assert_eq!(status(&ran(batch(), Run::Failed, 0.5, 0.1)), "ERROR");
        assert_eq!(status(&ran(batch(), Run::Cancelled, 0.5, 0.1)), "ERROR");
        let mut said_error = ran(batch(), Run::Running, 0.5, 0.1);
        said_error.last_level = Some(Level::Error);
        assert_eq!(status(&said_error), "ERROR");
        // A run commanded for an earlier runtime is not this runtime's.
        assert_eq!(status(&ran(batch(), Run::Completed, 5.0, 3.0)), "waiting");
        // Before the first runtime, a run (a person's restart) shows as it is.
        let early = Facts {
            due_at: None,
            ..ran(batch(), Run::Running, 5.0, 3.0)
        };
        assert_eq!(status(&early), "running");
    }

    #[test]
    fn realtime_statuses() {
        assert_eq!(status(&realtime()), "DELAYED");
        assert_eq!(
            status(&Facts {
                due_at: Some(T - 10.0),
                ..realtime()
            }),
            "waiting"
        );
        assert_eq!(
            status(&Facts {
                dependencies_done: false,
                ..realtime()
            }),
            "waiting"
        );
        assert_eq!(
            status(&ran(realtime(), Run::Running, 100.0, 29.0)),
            "running"
        );
        assert_eq!(
            status(&ran(realtime(), Run::Running, 100.0, 30.0)),
            "SILENT"
        );
        // Killed: an error until it has been silent for 30 s.
        assert_eq!(status(&ran(realtime(), Run::Failed, 100.0, 10.0)), "ERROR");
        assert_eq!(status(&ran(realtime(), Run::Failed, 100.0, 31.0)), "SILENT");
        assert_eq!(
            status(&ran(realtime(), Run::Completed, 100.0, 31.0)),
            "SILENT"
        );
        assert_eq!(status(&ran(realtime(), Run::Fetched, 2.0, 2.0)), "starting");
        // Heard of without a run of ours: it runs.
        let heard = Facts {
            last_sign: Some(T - 3.0),
            ..realtime()
        };
        assert_eq!(status(&heard), "running");
    }

    #[test]
    fn scheduler_and_external() {
        assert_eq!(
            status(&Facts {
                scheduler: true,
                ..realtime()
            }),
            "running"
        );
        assert_eq!(
            command(&Facts {
                scheduler: true,
                ..realtime()
            }),
            None
        );
        let ext = Facts {
            external: true,
            ..batch()
        };
        assert_eq!(command(&ext), None);
        assert_eq!(status(&ext), "waiting");
        assert_eq!(
            status(&Facts {
                due_at: Some(T - 100.0),
                ..ext.clone()
            }),
            "DELAYED"
        );
        let done = Facts {
            last_sign: Some(T - 0.5),
            last_level: Some(Level::Completed),
            ..ext.clone()
        };
        assert_eq!(status(&done), "completed");
        let failed = Facts {
            last_level: Some(Level::Error),
            ..done.clone()
        };
        assert_eq!(status(&failed), "ERROR");
        let info = Facts {
            last_level: Some(Level::Info),
            ..done.clone()
        };
        assert_eq!(status(&info), "running");
        // A message from before the runtime is not news of this run.
        let old = Facts {
            last_sign: Some(T - 5.0),
            ..done
        };
        assert_eq!(status(&old), "waiting");
        let ext_rt = Facts {
            external: true,
            last_sign: Some(T - 5.0),
            ..realtime()
        };
        assert_eq!(status(&ext_rt), "running");
        assert_eq!(
            status(&Facts {
                last_sign: Some(T - 40.0),
                ..ext_rt.clone()
            }),
            "SILENT"
        );
        assert_eq!(
            status(&Facts {
                last_sign: None,
                ..ext_rt
            }),
            "DELAYED"
        );
    }

    #[test]
    fn batch_commands() {
        assert_eq!(command(&batch()), Some(Command::Start));
        assert_eq!(
            command(&Facts {
                due_at: None,
                ..batch()
            }),
            None
        );
        assert_eq!(
            command(&Facts {
                dependencies_done: false,
                ..batch()
            }),
            None
        );
        assert_eq!(command(&ran(batch(), Run::Completed, 0.5, 0.1)), None);
        assert_eq!(command(&ran(batch(), Run::Failed, 0.5, 0.1)), None);
        // The next runtime starts it again; not while the earlier run still runs.
        assert_eq!(
            command(&ran(batch(), Run::Completed, 5.0, 3.0)),
            Some(Command::Start)
        );
        assert_eq!(command(&ran(batch(), Run::Running, 5.0, 3.0)), None);
    }

    #[test]
    fn realtime_commands() {
        assert_eq!(command(&realtime()), Some(Command::Start));
        assert_eq!(
            command(&Facts {
                dependencies_done: false,
                ..realtime()
            }),
            None
        );
        assert_eq!(command(&ran(realtime(), Run::Waiting, 1.0, 1.0)), None);
        assert_eq!(command(&ran(realtime(), Run::Running, 100.0, 44.0)), None);
        assert_eq!(
            command(&ran(realtime(), Run::Running, 100.0, 45.0)),
            Some(Command::Kill)
        );
        assert_eq!(command(&ran(realtime(), Run::Failed, 100.0, 44.0)), None);
        assert_eq!(
            command(&ran(realtime(), Run::Failed, 100.0, 45.0)),
            Some(Command::Start)
        );
        let again = Facts {
            restarts: 1,
            ..ran(realtime(), Run::Failed, 100.0, 60.0)
        };
        assert_eq!(command(&again), None);
        assert_eq!(
            command(&Facts {
                restarts: 1,
                ..ran(realtime(), Run::Failed, 100.0, 90.0)
            }),
            Some(Command::Start)
        );
        assert_eq!(restart_after(0), 45.0);
        assert_eq!(restart_after(2), 180.0);
        assert_eq!(restart_after(3), 300.0);
        assert_eq!(restart_after(1000), 300.0);
    }

    #[test]
    fn a_persons_restart() {
        let asked = |run| Facts {
            restart_asked: true,
            ..ran(batch(), run, 5.0, 1.0)
        };
        assert_eq!(command(&asked(Run::Running)), None);
        assert_eq!(command(&asked(Run::Cancelled)), Some(Command::StartAsked));
        // Even for a routine not due or waiting for dependencies: a person asked.
        let early = Facts {
            due_at: None,
            dependencies_done: false,
            ..asked(Run::Completed)
        };
        assert_eq!(command(&early), Some(Command::StartAsked));
    }

    #[test]
    fn ranks() {
        assert_eq!(status_rank("ERROR"), Some(0));
        assert!(status_rank("starting") < status_rank("waiting"));
        assert!(status_rank("waiting") < status_rank(NOT_KNOWN));
        assert!(status_rank(NOT_KNOWN) < status_rank("running"));
        assert!(status_rank("scheduled") < status_rank("completed"));
        assert_eq!(status_rank("RUNNING"), None);
        assert!(failing("SILENT") && failing("DELAYED") && !failing("starting"));
    }

    #[test]
    fn levels_of_lines() {
        assert_eq!(
            line_level("2026-12-01 10:00:01 - ERROR - disk full"),
            Level::Error
        );
        assert_eq!(
            line_level("Traceback (most recent call last):"),
            Level::Error
        );
        assert_eq!(line_level("[WARN] slow"), Level::Warning);
        assert_eq!(line_level("no errors today"), Level::Info);
        assert_eq!(line_level("ERRORS: 0"), Level::Info);
        assert_eq!(
            Level::parse("completed").map(Level::word),
            Some("completed")
        );
        assert_eq!(Level::parse("fatal"), None);
    }

    #[test]
    fn routine_names() {
        assert_eq!(
            parse_routine("ana@ALPHA:Repo/folder/code"),
            Ok(RoutineName {
                user: "ana",
                computer: "ALPHA",
                path: "Repo/folder/code"
            })
        );
        assert_eq!(
            parse_routine("ana@ALPHA:SharedData.Module").unwrap().path,
            "SharedData.Module"
        );
        for bad in [
            "ALPHA:code",
            "ana@ALPHA",
            "@ALPHA:x",
            "ana@:x",
            "ana@ALPHA:",
            "ana@AL PHA:x",
            "a@b@c:x",
            "a@b:c d",
        ] {
            assert!(parse_routine(bad).is_err(), "{bad}");
        }
        assert!(is_scheduler("SharedData.Routines.Scheduler"));
        assert!(is_scheduler("pg_jobs.scheduler"));
        assert!(!is_scheduler("Repo/Scheduler"));
    }

    #[test]
    fn runtimes() {
        assert_eq!(parse_runtimes(""), Ok(vec![]));
        assert_eq!(parse_runtimes("13:30, 9:05,13:30"), Ok(vec![545, 810]));
        assert_eq!(format_runtimes(&[545, 810]), "09:05,13:30");
        for bad in ["25:00", "12:60", "12", "12:5", "ab:cd", "-1:00", "12:00:00"] {
            let problem = parse_runtimes(bad).unwrap_err();
            assert!(problem.contains("HH:MM"), "{bad}: {problem}");
        }
        assert!(parse_runtimes("25:00").unwrap_err().contains("\"25:00\""));
    }

    #[test]
    fn arguments() {
        assert_eq!(split_args(""), Ok(vec![]));
        assert_eq!(
            split_args("  --fast  -n 3 "),
            Ok(vec!["--fast".into(), "-n".into(), "3".into()])
        );
        assert_eq!(
            split_args(r#"--name 'a b' --x="c \"d\"" e\ f ''"#),
            Ok(vec![
                "--name".into(),
                "a b".into(),
                r#"--x=c "d""#.into(),
                "e f".into(),
                "".into()
            ])
        );
        assert!(split_args("'open").is_err());
        assert_eq!(shown_args("'open --password x"), "********");
        assert_eq!(
            shown_args("--fast --password 'p w' --name \"a b\""),
            "--fast --password ******** --name 'a b'"
        );
        assert_eq!(
            shown_args("--api-key=abc \"it's\""),
            "--api-key=******** 'it'\\''s'"
        );
        assert!(split_args("\"open").is_err());
        assert!(split_args("end\\").is_err());
    }

    #[test]
    fn cycles() {
        let edges = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            dependency_cycle(&edges(&[("a", "b"), ("b", "c"), ("a", "c")])),
            None
        );
        assert_eq!(
            dependency_cycle(&edges(&[("a", "b"), ("b", "c"), ("c", "a")])),
            Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
        );
        assert_eq!(
            dependency_cycle(&edges(&[("a", "a")])),
            Some(vec!["a".into(), "a".into()])
        );
    }

    #[test]
    fn csv_both_ways() {
        let rows = vec![
            DefinitionRow {
                routine: "ana@ALPHA:Repo/load".into(),
                group: "LOAD, daily".into(),
                runtimes: "09:00,13:30".into(),
                args: "--name \"x y\"".into(),
                seq: Some(1),
                command: "python -m load".into(),
                ..Default::default()
            },
            DefinitionRow {
                routine: "ana@ALPHA:Repo/feed".into(),
                realtime: true,
                dependencies: "ana@ALPHA:Repo/load".into(),
                ..Default::default()
            },
        ];
        let text = write_csv(&rows);
        assert!(text.starts_with(
            "routine,group,external,realtime,runtimes,args,dependencies,computer,seq,command\n"
        ));
        assert_eq!(read_csv(&text), Ok(rows));
    }

    #[test]
    fn csv_refusals() {
        let missing = read_csv(
            "routine,group,external,realtime,runtimes,args,dependencies,computer,seq\nx,,,,,,,,\n",
        );
        assert!(missing.unwrap_err().contains("no column command"));
        let unknown = read_csv(&format!("{},colour\n", CSV_COLUMNS.join(",")));
        assert!(unknown.unwrap_err().contains("\"colour\""));
        let flag = read_csv(&format!("{}\nr,g,maybe,,,,,,,\n", CSV_COLUMNS.join(",")));
        assert!(flag.unwrap_err().contains("line 2: external is \"maybe\""));
        let seq = read_csv(&format!("{}\nr,g,,,,,,,x,\n", CSV_COLUMNS.join(",")));
        assert!(seq.unwrap_err().contains("seq is \"x\""));
        let short = read_csv(&format!("{}\nr,g\n", CSV_COLUMNS.join(",")));
        assert!(short.is_err());
    }
}
