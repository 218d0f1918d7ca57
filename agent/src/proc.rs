//! A job's process: started in a session and process group of its own, killed with the agent
//! (PR_SET_PDEATHSIG) without a fork of the agent (`launch.rs`), its stdout and stderr tails kept
//! and its end reported by the one thread that watches every job (`poller.rs`).

mod launch;
mod poller;

use crate::tail::Tail;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What to run, as a claim returned it.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub command: String,
    pub args: Vec<String>,
    pub cwd: Option<String>,
    pub shell: bool,
    pub env: Vec<(String, String)>,
}

/// The program and its arguments: `sh -c COMMAND sh ARGS...` for a shell job (ARGS become $1...),
/// else COMMAND itself with ARGS, looked up in PATH, no shell.
pub fn argv(spec: &Spec) -> (String, Vec<String>) {
    if spec.shell {
        let mut args = vec!["-c".to_string(), spec.command.clone(), "sh".to_string()];
        args.extend(spec.args.iter().cloned());
        ("sh".to_string(), args)
    } else {
        (spec.command.clone(), spec.args.clone())
    }
}

/// How a process ended, as the store wants it: its exit code, or the signal that killed it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
}

impl From<ExitStatus> for Outcome {
    fn from(status: ExitStatus) -> Outcome {
        Outcome {
            exit_code: status.code(),
            signal: status.signal(),
        }
    }
}

pub struct Running {
    pub pid: i32,
    pub stdout: Arc<Mutex<Tail>>,
    pub stderr: Arc<Mutex<Tail>>,
    pub started: Instant,
}

/// Starts the job. Must be called from the main thread: PR_SET_PDEATHSIG fires when the thread
/// that started the child ends, not only the process. `on_exit` is called once, from the
/// poller's thread (it must not block), when the process ended and its pipes were read (or a
/// moment passed: a process it left in the background may hold them).
pub fn spawn<F>(spec: &Spec, on_exit: F) -> std::io::Result<Running>
where
    F: FnOnce(Outcome, Instant) + Send + 'static,
{
    let (program, args) = argv(spec);
    if let Some(cwd) = &spec.cwd {
        // Said here: a failed chdir in the child reads as if the command were missing.
        match std::fs::metadata(cwd) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotADirectory,
                    format!("working folder {cwd}: not a folder"),
                ))
            }
            Err(e) => {
                return Err(std::io::Error::new(
                    e.kind(),
                    format!("working folder {cwd}: {e}"),
                ))
            }
        }
    }
    // Before the start: it returns once the child has exec'd, and the command may have been
    // running for a while by then (a `sleep 7` was reported as 6.9996 s).
    let started = Instant::now();
    let child = launch::launch(&program, &args, &spec.env, spec.cwd.as_deref())?;
    let stdout = Arc::new(Mutex::new(Tail::new()));
    let stderr = Arc::new(Mutex::new(Tail::new()));
    poller::watch(
        child.pid,
        child.pidfd,
        vec![
            (child.stdout, stdout.clone()),
            (child.stderr, stderr.clone()),
        ],
        Box::new(on_exit),
    );
    Ok(Running {
        pid: child.pid,
        stdout,
        stderr,
        started,
    })
}

/// Sends a signal to a process group; false if none is left.
pub fn signal_group(pgid: i32, signal: i32) -> bool {
    pgid > 0 && unsafe { libc::kill(-pgid, signal) } == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    fn spec(command: &str, args: &[&str], shell: bool) -> Spec {
        Spec {
            command: command.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            cwd: None,
            shell,
            env: vec![],
        }
    }

    fn run(spec: &Spec) -> (Outcome, String, String, i32) {
        let (tx, rx) = mpsc::channel();
        let running = spawn(spec, move |outcome, _| tx.send(outcome).unwrap()).unwrap();
        let outcome = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        let out = running.stdout.lock().unwrap().text();
        let err = running.stderr.lock().unwrap().text();
        (outcome, out, err, running.pid)
    }

    #[test]
    fn argv_with_and_without_shell() {
        assert_eq!(
            argv(&spec("echo", &["a b", "c"], false)),
            ("echo".into(), vec!["a b".into(), "c".into()])
        );
        assert_eq!(
            argv(&spec("echo \"$1\"", &["x"], true)),
            (
                "sh".into(),
                vec!["-c".into(), "echo \"$1\"".into(), "sh".into(), "x".into()]
            )
        );
    }

    #[test]
    fn runs_without_a_shell_in_its_own_session() {
        // Arguments reach the program as given: no word splitting, no expansion.
        let (outcome, out, _, pid) = run(&spec(
            "sh",
            &[
                "-c",
                "echo \"$1|$2\"; ps -o sid= -p $$",
                "sh",
                "a b",
                "$HOME",
            ],
            false,
        ));
        assert_eq!(
            outcome,
            Outcome {
                exit_code: Some(0),
                signal: None
            }
        );
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("a b|$HOME"));
        // Its session (and so its process group) is its own pid.
        assert_eq!(lines.next().map(str::trim), Some(pid.to_string().as_str()));
    }

    #[test]
    fn shell_env_cwd_and_exit_codes() {
        let mut s = spec(
            "printf '%s %s' \"$GREETING\" \"$1\" ; pwd >&2; exit 3",
            &["world"],
            true,
        );
        s.env = vec![("GREETING".into(), "hello".into())];
        s.cwd = Some("/tmp".into());
        let (outcome, out, err, _) = run(&s);
        assert_eq!(outcome.exit_code, Some(3));
        assert_eq!(out, "hello world");
        assert_eq!(err.trim(), "/tmp");
    }

    #[test]
    fn killed_by_a_signal() {
        let (tx, rx) = mpsc::channel();
        let running = spawn(&spec("sleep", &["30"], false), move |o, _| {
            tx.send(o).unwrap()
        })
        .unwrap();
        assert!(signal_group(running.pid, libc::SIGTERM));
        let outcome = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(
            outcome,
            Outcome {
                exit_code: None,
                signal: Some(libc::SIGTERM)
            }
        );
        assert!(!signal_group(running.pid, 0), "the group is gone");
    }

    #[test]
    fn signals_blocked_in_the_agent_are_not_blocked_in_the_job() {
        // Block SIGTERM in a thread of our own, as the agent blocks it in all of its threads;
        // the thread lives until the job ends (PR_SET_PDEATHSIG follows the spawning thread).
        let out = thread::spawn(move || unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            run(&spec(
                "grep",
                &["^Sig\\(Blk\\|Ign\\)", "/proc/self/status"],
                false,
            ))
            .1
        })
        .join()
        .unwrap();
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("SigBlk:\t0000000000000000"));
        // Nor SIGPIPE ignored, as the agent has it (Rust programs do).
        let ignored = lines.next().unwrap().strip_prefix("SigIgn:\t").unwrap();
        let ignored = u64::from_str_radix(ignored, 16).unwrap();
        assert_eq!(ignored & (1 << (libc::SIGPIPE - 1)), 0, "{out}");
    }

    #[test]
    fn a_job_dies_with_the_thread_that_started_it() {
        // PR_SET_PDEATHSIG: the agent's main thread ends only with the agent, so a job does not
        // outlive a kill -9 of it.
        let (tx, rx) = mpsc::channel();
        let pid = thread::spawn(move || {
            spawn(&spec("sleep", &["30"], false), move |o, _| {
                tx.send(o).unwrap()
            })
            .unwrap()
            .pid
        })
        .join()
        .unwrap();
        let outcome = rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(outcome.signal, Some(libc::SIGKILL));
        assert!(!signal_group(pid, 0), "the group is gone");
    }

    #[test]
    fn commands_are_found_in_the_jobs_path_and_scripts_without_a_first_line_run_in_sh() {
        let dir = std::env::temp_dir().join(format!("pg_jobs_agent_path_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("pg_jobs_agent_script");
        std::fs::write(&script, "echo \"from the script: $1\"\n").unwrap();
        let not_executable = dir.join("pg_jobs_agent_not_executable");
        std::fs::write(&not_executable, "echo no\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::set_permissions(&not_executable, std::fs::Permissions::from_mode(0o644)).unwrap();
        let path = format!("/nonexistent:{}:/usr/bin:/bin", dir.display());
        let mut s = spec("pg_jobs_agent_script", &["x"], false);
        s.env = vec![("PATH".into(), path.clone())];
        let (outcome, out, _, _) = run(&s);
        assert_eq!(outcome.exit_code, Some(0));
        assert_eq!(out, "from the script: x\n");
        // Only the job's PATH is searched.
        let err = spawn(&spec("pg_jobs_agent_script", &[], false), |_, _| {})
            .err()
            .unwrap();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
        let mut s = spec("pg_jobs_agent_not_executable", &[], false);
        s.env = vec![("PATH".into(), path)];
        let err = spawn(&s, |_, _| {}).err().unwrap();
        assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_nul_byte_in_an_argument_fails_to_spawn() {
        let err = spawn(&spec("echo", &["a\0b"], false), |_, _| {})
            .err()
            .unwrap();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    }

    #[test]
    fn a_missing_command_fails_to_spawn() {
        let err = spawn(
            &spec("pg_jobs_agent_no_such_command", &[], false),
            |_, _| {},
        )
        .err()
        .unwrap();
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
        let mut s = spec("true", &[], false);
        s.cwd = Some("/nonexistent/folder".into());
        let err = spawn(&s, |_, _| {}).err().unwrap().to_string();
        assert!(
            err.starts_with("working folder /nonexistent/folder: No such file"),
            "{err}"
        );
        s.cwd = Some("/etc/hostname".into());
        assert!(spawn(&s, |_, _| {})
            .err()
            .unwrap()
            .to_string()
            .contains("not a folder"));
    }

    #[test]
    fn a_background_process_holding_the_pipe_does_not_hold_the_report() {
        let t = Instant::now();
        let (outcome, out, _, pid) = run(&spec("echo before; sleep 5 & echo after", &[], true));
        assert_eq!(outcome.exit_code, Some(0));
        assert!(out.contains("before") && out.contains("after"));
        assert!(t.elapsed() < Duration::from_secs(3));
        signal_group(pid, libc::SIGKILL);
    }
}
