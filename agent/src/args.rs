//! The command line, parsed by hand: a handful of flags, each `--flag VALUE` or `--flag=VALUE`;
//! or, first, the subcommand `routines` (routine schedule definitions, with the DSN's role).

use std::time::Duration;

pub const USAGE: &str = "\
pg_jobs_agent: claims the batch jobs of one computer from pg_jobs, runs them, reports how they ended

Usage: pg_jobs_agent [OPTIONS]
       pg_jobs_agent routines export|import|list ... (see pg_jobs_agent routines --help)

Options:
  --dsn DSN           libpq-style connection string ('host=... port=... user=... dbname=...')
                      or a postgres:// URL; PGHOST, PGPORT, PGUSER, PGDATABASE and PGPASSWORD
                      fill in what it leaves out
  --computer NAME     the computer this agent takes jobs for (default: the host name)
  --batchjobs N       how many jobs run at once (default 1)
  --poll SECONDS      claim at least this often even without a notification (default 2)
  --grace SECONDS     between SIGTERM and SIGKILL of a cancelled job's processes, and how long a
                      shutdown waits for running jobs to end on their own (default 10)
  --output-every SECONDS
                      a running job's new output (the tails of its stderr and stdout) reaches
                      the database within this long: at most one heartbeat per interval for
                      the jobs whose output changed (default 2, at least 0.2)
  --once              claim what is ready, run it, report, exit 0 when nothing is left
  --log json|text     the format of the log lines on stderr (default json)
  --help              this text

Signals: SIGTERM or SIGINT stop claiming, wait up to --grace for running jobs, end the rest and
hand them back (PENDING again); a second one ends the running jobs at once.
";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Text,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub dsn: Option<String>,
    pub computer: Option<String>,
    pub batchjobs: u32,
    pub poll: Duration,
    pub grace: Duration,
    pub output_every: Duration,
    pub once: bool,
    pub log: LogFormat,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            dsn: None,
            computer: None,
            batchjobs: 1,
            poll: Duration::from_secs(2),
            grace: Duration::from_secs(10),
            output_every: Duration::from_secs(2),
            once: false,
            log: LogFormat::Json,
        }
    }
}

#[derive(Debug, PartialEq)]
pub enum Parsed {
    Run(Options),
    Help,
    Routines(Routines),
    RoutinesHelp,
}

pub const ROUTINES_USAGE: &str = "\
pg_jobs_agent routines: the definitions of routine schedules, as CSV (a spreadsheet's), with the
role of the DSN (a person's role, not the agent's)

Usage: pg_jobs_agent routines export NAME [--dsn DSN]        the definition as CSV, to stdout
       pg_jobs_agent routines import NAME FILE [--dsn DSN]   replaces it with FILE ('-': stdin)
       pg_jobs_agent routines list [--dsn DSN]               the schedules: name, routines, mode

  --dsn DSN           as for the agent; PGHOST, PGPORT, PGUSER, PGDATABASE and PGPASSWORD fill
                      in what it leaves out

An error of the server is printed to stderr with its SQLSTATE (and hint), exit code 1; a usage
error exits 2.
";

/// What `pg_jobs_agent routines ...` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RoutinesAction {
    Export {
        name: String,
    },
    /// `file` is "-" for stdin.
    Import {
        name: String,
        file: String,
    },
    List,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Routines {
    pub dsn: Option<String>,
    pub action: RoutinesAction,
}

/// Seconds as given on the command line: a non-negative decimal number (0.5 is fine).
fn seconds(flag: &str, value: &str) -> Result<Duration, String> {
    match value.parse::<f64>() {
        Ok(s) if (0.0..=86_400.0 * 365.0).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(format!(
            "{flag}: expected a number of seconds, got {value:?}"
        )),
    }
}

/// `routines ...`: the arguments after `routines`. Options (`--dsn`) may come anywhere; `--`
/// ends them; "-" is a word (stdin).
fn parse_routines(args: impl Iterator<Item = String>) -> Result<Parsed, String> {
    let mut dsn = None;
    let mut words = vec![];
    let mut args = args;
    let mut options_ended = false;
    while let Some(arg) = args.next() {
        if options_ended || !arg.starts_with('-') || arg == "-" {
            words.push(arg);
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag.to_string(), Some(value.to_string())),
            None => (arg.clone(), None),
        };
        match flag.as_str() {
            "--" if inline.is_none() => options_ended = true,
            "--help" | "-h" if inline.is_none() => return Ok(Parsed::RoutinesHelp),
            "--dsn" => {
                let value = match inline {
                    Some(value) => value,
                    None => args.next().ok_or("--dsn needs a value")?,
                };
                dsn = Some(value);
            }
            _ => return Err(format!("routines: unknown option {flag}")),
        }
    }
    let mut words = words.into_iter();
    let action = match words.next().as_deref() {
        Some("export") => RoutinesAction::Export {
            name: words
                .next()
                .ok_or("routines export: the schedule's NAME is missing")?,
        },
        Some("import") => RoutinesAction::Import {
            name: words
                .next()
                .ok_or("routines import: the schedule's NAME is missing")?,
            file: words
                .next()
                .ok_or("routines import: FILE is missing ('-' for stdin)")?,
        },
        Some("list") => RoutinesAction::List,
        Some(other) => return Err(format!("routines: export, import or list, not {other:?}")),
        None => return Err("routines: export, import or list?".into()),
    };
    if let Some(extra) = words.next() {
        return Err(format!("routines: unexpected argument {extra:?}"));
    }
    Ok(Parsed::Routines(Routines { dsn, action }))
}

/// Parses the arguments after the program's name.
pub fn parse<I, S>(args: I) -> Result<Parsed, String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    let mut options = Options::default();
    let mut args = args.into_iter().map(Into::into).peekable();
    if args.peek().map(String::as_str) == Some("routines") {
        args.next();
        return parse_routines(args);
    }
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => {
                (flag.to_string(), Some(value.to_string()))
            }
            _ => (arg.clone(), None),
        };
        // Flags without a value.
        match flag.as_str() {
            "--help" | "-h" => return Ok(Parsed::Help),
            "--once" => {
                if inline.is_some() {
                    return Err("--once takes no value".into());
                }
                options.once = true;
                continue;
            }
            _ => {}
        }
        if !flag.starts_with("--") {
            return Err(format!("unexpected argument {arg:?} (see --help)"));
        }
        let known = [
            "--dsn",
            "--computer",
            "--batchjobs",
            "--poll",
            "--grace",
            "--output-every",
            "--log",
        ];
        if !known.contains(&flag.as_str()) {
            return Err(format!("unknown option {flag} (see --help)"));
        }
        let value = match inline {
            Some(value) => value,
            None => args.next().ok_or_else(|| format!("{flag} needs a value"))?,
        };
        match flag.as_str() {
            "--dsn" => options.dsn = Some(value),
            "--computer" => {
                if value.is_empty() {
                    return Err("--computer: empty name".into());
                }
                options.computer = Some(value)
            }
            "--batchjobs" => {
                options.batchjobs = match value.parse::<u32>() {
                    Ok(n) if (1..=10_000).contains(&n) => n,
                    _ => {
                        return Err(format!(
                            "--batchjobs: expected a whole number from 1 to 10000, got {value:?}"
                        ))
                    }
                }
            }
            "--poll" => {
                options.poll = seconds("--poll", &value)?;
                if options.poll < Duration::from_millis(10) {
                    return Err("--poll: at least 0.01 seconds".into());
                }
            }
            "--grace" => options.grace = seconds("--grace", &value)?,
            "--output-every" => {
                options.output_every = seconds("--output-every", &value)?;
                if options.output_every < Duration::from_millis(200) {
                    return Err("--output-every: at least 0.2 seconds".into());
                }
            }
            "--log" => {
                options.log = match value.as_str() {
                    "json" => LogFormat::Json,
                    "text" => LogFormat::Text,
                    _ => return Err(format!("--log: json or text, not {value:?}")),
                }
            }
            _ => unreachable!(),
        }
    }
    Ok(Parsed::Run(options))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Options {
        match parse(args.iter().copied()) {
            Ok(Parsed::Run(options)) => options,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    fn error(args: &[&str]) -> String {
        match parse(args.iter().copied()) {
            Err(e) => e,
            other => panic!("{args:?} was accepted: {other:?}"),
        }
    }

    #[test]
    fn defaults() {
        assert_eq!(run(&[]), Options::default());
        let o = Options::default();
        assert_eq!(
            (o.batchjobs, o.poll, o.grace, o.output_every, o.once, o.log),
            (
                1,
                Duration::from_secs(2),
                Duration::from_secs(10),
                Duration::from_secs(2),
                false,
                LogFormat::Json
            )
        );
    }

    #[test]
    fn every_flag_both_ways() {
        let o = run(&[
            "--dsn",
            "host=x port=5",
            "--computer=alpha",
            "--batchjobs",
            "8",
            "--poll=0.5",
            "--grace",
            "2",
            "--once",
            "--log",
            "text",
            "--output-every",
            "0.25",
        ]);
        assert_eq!(o.dsn.as_deref(), Some("host=x port=5"));
        assert_eq!(o.computer.as_deref(), Some("alpha"));
        assert_eq!(o.batchjobs, 8);
        assert_eq!(o.poll, Duration::from_millis(500));
        assert_eq!(o.grace, Duration::from_secs(2));
        assert!(o.once);
        assert_eq!(o.log, LogFormat::Text);
        assert_eq!(o.output_every, Duration::from_millis(250));
        assert_eq!(
            run(&["--output-every=0.2"]).output_every,
            Duration::from_millis(200)
        );
        // A DSN with '=' in it, given inline: only the first '=' splits.
        assert_eq!(
            run(&["--dsn=host=a user=b"]).dsn.as_deref(),
            Some("host=a user=b")
        );
        assert_eq!(run(&["--grace", "0"]).grace, Duration::ZERO);
    }

    #[test]
    fn help() {
        assert_eq!(parse(["--batchjobs", "2", "--help"]), Ok(Parsed::Help));
        assert_eq!(parse(["-h"]), Ok(Parsed::Help));
        assert!(USAGE.contains("--batchjobs N"));
    }

    #[test]
    fn refusals() {
        assert!(error(&["--batchjobs", "0"]).contains("1 to 10000"));
        assert!(error(&["--batchjobs", "two"]).contains("--batchjobs"));
        assert!(error(&["--batchjobs"]).contains("needs a value"));
        assert!(error(&["--poll", "-1"]).contains("seconds"));
        assert!(error(&["--poll", "0"]).contains("at least"));
        assert!(error(&["--grace", "NaN"]).contains("seconds"));
        assert!(error(&["--log", "xml"]).contains("json or text"));
        assert!(error(&["--computer", ""]).contains("empty"));
        assert!(error(&["--verbose"]).contains("unknown option --verbose"));
        assert!(error(&["alpha"]).contains("unexpected argument"));
        assert!(error(&["--once=yes"]).contains("no value"));
        assert!(error(&["--output-every", "0.1"]).contains("at least 0.2"));
        assert!(error(&["--output-every", "soon"]).contains("seconds"));
        assert!(error(&["--output-every"]).contains("needs a value"));
        // The subcommand comes first, or it is an argument the agent does not take.
        assert!(error(&["--dsn", "x", "routines", "list"]).contains("unexpected argument"));
    }

    fn routines(args: &[&str]) -> Routines {
        match parse(args.iter().copied()) {
            Ok(Parsed::Routines(r)) => r,
            other => panic!("{args:?}: {other:?}"),
        }
    }

    #[test]
    fn routines_subcommands() {
        assert_eq!(
            routines(&["routines", "export", "night"]),
            Routines {
                dsn: None,
                action: RoutinesAction::Export {
                    name: "night".into()
                }
            }
        );
        assert_eq!(
            routines(&["routines", "import", "night", "-", "--dsn", "host=a user=b"]),
            Routines {
                dsn: Some("host=a user=b".into()),
                action: RoutinesAction::Import {
                    name: "night".into(),
                    file: "-".into()
                }
            }
        );
        // --dsn anywhere, either way; the last one wins.
        assert_eq!(
            routines(&[
                "routines",
                "--dsn=x",
                "import",
                "--dsn=host=h",
                "n",
                "f.csv"
            ]),
            Routines {
                dsn: Some("host=h".into()),
                action: RoutinesAction::Import {
                    name: "n".into(),
                    file: "f.csv".into()
                }
            }
        );
        assert_eq!(
            routines(&["routines", "list"]),
            Routines {
                dsn: None,
                action: RoutinesAction::List
            }
        );
        assert_eq!(
            routines(&["routines", "list", "--dsn", "postgres://u@h/db"]).dsn,
            Some("postgres://u@h/db".into())
        );
        // After --, a name may start with a dash.
        assert_eq!(
            routines(&["routines", "export", "--", "-odd"]).action,
            RoutinesAction::Export {
                name: "-odd".into()
            }
        );
        assert_eq!(parse(["routines", "--help"]), Ok(Parsed::RoutinesHelp));
        assert_eq!(parse(["routines", "list", "-h"]), Ok(Parsed::RoutinesHelp));
        assert!(USAGE.contains("routines"));
        assert!(ROUTINES_USAGE.contains("routines import NAME FILE"));
    }

    #[test]
    fn routines_refusals() {
        assert!(error(&["routines"]).contains("export, import or list"));
        assert!(error(&["routines", "drop", "x"]).contains("not \"drop\""));
        assert!(error(&["routines", "export"]).contains("NAME is missing"));
        assert!(error(&["routines", "import", "n"]).contains("FILE is missing"));
        assert!(error(&["routines", "import"]).contains("NAME is missing"));
        assert!(error(&["routines", "list", "extra"]).contains("unexpected argument \"extra\""));
        assert!(error(&["routines", "export", "a", "b"]).contains("unexpected argument"));
        assert!(error(&["routines", "list", "--dsn"]).contains("needs a value"));
        // The agent's own options are not for these.
        assert!(
            error(&["routines", "list", "--computer", "a"]).contains("unknown option --computer")
        );
        assert!(error(&["routines", "list", "--once"]).contains("unknown option"));
        assert!(error(&["routines", "list", "-x"]).contains("unknown option -x"));
    }
}
