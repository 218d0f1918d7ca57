//! `pg_jobs_agent routines export|import|list`: routine schedule definitions as CSV, for a DBA who
//! keeps one in a spreadsheet. One connection with the DSN's role (a person's, not an agent's),
//! one call of the extension's SQL, the answer on stdout; no registration, no LISTEN.

use crate::args::{Routines, RoutinesAction};
use postgres::{Config, NoTls};
use std::io::{Read, Write};

const EXPORT: &str = "SELECT pgjobs.routines_export($1::text)::text";
const IMPORT: &str = "SELECT pgjobs.routines_import($1::text, $2::text)::bigint";
const LIST: &str = "SELECT schedule::text, routines::bigint, mode::text
                    FROM pgjobs.routine_schedule_list ORDER BY schedule";

/// How an error of the server reads on stderr: `pg_jobs_agent: ERROR <SQLSTATE>: <message>`, and
/// `HINT: <hint>` on a line of its own when there is one. Other errors (no server's answer: the
/// connection) as the agent's log describes them.
pub fn error_text(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut text = format!(
                "pg_jobs_agent: ERROR {}: {}",
                db.code().code(),
                db.message()
            );
            if let Some(hint) = db.hint() {
                text.push_str("\nHINT: ");
                text.push_str(hint);
            }
            text
        }
        None => format!("pg_jobs_agent: {}", crate::db::describe_error(e)),
    }
}

/// A definition's text as read from FILE: UTF-8 (a byte-order mark, as spreadsheets write one,
/// is dropped).
pub fn definition_text(bytes: Vec<u8>, file: &str) -> Result<String, String> {
    let text = String::from_utf8(bytes)
        .map_err(|_| format!("{file}: not UTF-8 text (save the CSV as UTF-8)"))?;
    Ok(match text.strip_prefix('\u{FEFF}') {
        Some(rest) => rest.to_string(),
        None => text,
    })
}

/// `list`'s line for one schedule.
pub fn list_line(schedule: &str, routines: i64, mode: &str) -> String {
    format!("{schedule}\t{routines} routines\t{mode}")
}

fn read_definition(file: &str) -> Result<String, String> {
    let mut bytes = vec![];
    let read = if file == "-" {
        std::io::stdin().lock().read_to_end(&mut bytes)
    } else {
        std::fs::File::open(file).and_then(|mut f| f.read_to_end(&mut bytes))
    };
    let shown = if file == "-" { "stdin" } else { file };
    read.map_err(|e| format!("{shown}: {e}"))?;
    definition_text(bytes, shown)
}

/// Runs the subcommand; the process's exit code (0, or 1 after an error, printed).
pub fn run(cmd: Routines, config: Config) -> i32 {
    // The file first: a wrong name is said before any connection.
    let definition = match &cmd.action {
        RoutinesAction::Import { file, .. } => match read_definition(file) {
            Ok(text) => Some(text),
            Err(e) => {
                eprintln!("pg_jobs_agent: {e}");
                return 1;
            }
        },
        _ => None,
    };
    let result = config.connect(NoTls).and_then(|mut client| {
        let mut out = String::new();
        match &cmd.action {
            RoutinesAction::Export { name } => {
                let csv: Option<String> = client.query_one(EXPORT, &[name])?.get(0);
                out = csv.unwrap_or_default();
                if !out.is_empty() && !out.ends_with('\n') {
                    out.push('\n');
                }
            }
            RoutinesAction::Import { name, .. } => {
                let definition = definition.as_deref().unwrap_or_default();
                let n: Option<i64> = client.query_one(IMPORT, &[name, &definition])?.get(0);
                out = format!("imported {} routines into {name}\n", n.unwrap_or(0));
            }
            RoutinesAction::List => {
                for row in client.query(LIST, &[])? {
                    let schedule: Option<String> = row.get(0);
                    let routines: Option<i64> = row.get(1);
                    let mode: Option<String> = row.get(2);
                    out.push_str(&list_line(
                        &schedule.unwrap_or_default(),
                        routines.unwrap_or(0),
                        &mode.unwrap_or_default(),
                    ));
                    out.push('\n');
                }
            }
        }
        Ok(out)
    });
    match result {
        Ok(out) => {
            let mut stdout = std::io::stdout().lock();
            if let Err(e) = stdout
                .write_all(out.as_bytes())
                .and_then(|_| stdout.flush())
            {
                // A closed pipe (| head) is not worth a panic.
                if e.kind() != std::io::ErrorKind::BrokenPipe {
                    eprintln!("pg_jobs_agent: stdout: {e}");
                    return 1;
                }
            }
            0
        }
        Err(e) => {
            eprintln!("{}", error_text(&e));
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_definition_is_utf8_without_its_byte_order_mark() {
        assert_eq!(
            definition_text(b"\xEF\xBB\xBFroutine,at\nx,1\n".to_vec(), "f.csv").unwrap(),
            "routine,at\nx,1\n"
        );
        assert_eq!(definition_text(b"a\n".to_vec(), "f.csv").unwrap(), "a\n");
        assert!(definition_text(b"caf\xE9\n".to_vec(), "f.csv")
            .unwrap_err()
            .starts_with("f.csv: not UTF-8"));
    }

    #[test]
    fn list_lines() {
        assert_eq!(
            list_line("nightly", 12, "realtime"),
            "nightly\t12 routines\trealtime"
        );
    }
}
