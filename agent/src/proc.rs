//! A job's process: spawned in a process group and session of its own, killed with the agent
//! (PR_SET_PDEATHSIG), its stdout and stderr tails kept by reader threads, its end reported to the
//! main loop by a waiter thread.

use crate::tail::Tail;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

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

/// How long the waiter waits, after the process ended, for the pipes to close: a process it
/// left behind in the background may hold them open for good.
const DRAIN_WAIT: Duration = Duration::from_millis(300);

fn reader(mut pipe: impl Read + Send + 'static, tail: Arc<Mutex<Tail>>, done: Sender<()>) {
    thread::Builder::new()
        .name("job-pipe".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let mut buf = [0u8; 8192];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => tail.lock().unwrap().push(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
            let _ = done.send(());
        })
        .expect("a reader thread");
}

/// Spawns the job. Must be called from the main thread: PR_SET_PDEATHSIG fires when the thread
/// that forked the child ends, not only the process. `on_exit` is called once, from the waiter
/// thread, when the process ended and its pipes were read (or DRAIN_WAIT passed).
pub fn spawn<F>(spec: &Spec, on_exit: F) -> std::io::Result<Running>
where
    F: FnOnce(Outcome, Instant) + Send + 'static,
{
    let (program, args) = argv(spec);
    let mut command = Command::new(&program);
    command
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
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
        command.current_dir(cwd);
    }
    for (name, value) in &spec.env {
        command.env(name, value);
    }
    let parent = unsafe { libc::getpid() };
    unsafe {
        command.pre_exec(move || {
            // The agent blocks SIGTERM and SIGINT (a thread sigwaits them) and std does not reset
            // the mask in a child with pre_exec: unblocked, or `sleep` would ignore a cancel.
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut empty);
            if libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            // A session and process group of its own: the agent ends the whole group, and a
            // terminal's signals do not reach it.
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) < 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The agent died between fork and prctl: nobody would kill this one.
            if libc::getppid() != parent {
                return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
            }
            Ok(())
        });
    }
    // Before the spawn: it returns once the child has exec'd, and the command may have been
    // running for a while by then (a `sleep 7` was reported as 6.9996 s).
    let started = Instant::now();
    let mut child = command.spawn()?;
    let pid = child.id() as i32;
    let stdout = Arc::new(Mutex::new(Tail::new()));
    let stderr = Arc::new(Mutex::new(Tail::new()));
    let (done_tx, done_rx) = mpsc::channel();
    reader(
        child.stdout.take().unwrap(),
        stdout.clone(),
        done_tx.clone(),
    );
    reader(child.stderr.take().unwrap(), stderr.clone(), done_tx);
    thread::Builder::new()
        .name("job-wait".into())
        .stack_size(64 * 1024)
        .spawn(move || {
            let outcome = loop {
                match child.wait() {
                    Ok(status) => break Outcome::from(status),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => {
                        break Outcome {
                            exit_code: None,
                            signal: None,
                        }
                    }
                }
            };
            let ended = Instant::now();
            let deadline = ended + DRAIN_WAIT;
            for _ in 0..2 {
                let left = deadline.saturating_duration_since(Instant::now());
                if done_rx.recv_timeout(left).is_err() {
                    break;
                }
            }
            on_exit(outcome, ended);
        })
        .expect("a waiter thread");
    Ok(Running {
        pid,
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
            run(&spec("grep", &["^SigBlk", "/proc/self/status"], false)).1
        })
        .join()
        .unwrap();
        assert_eq!(out.trim(), "SigBlk:\t0000000000000000");
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
