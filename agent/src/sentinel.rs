//! The sentinel: a small process the agent starts from its own binary (`pg_jobs_agent
//! --sentinel`) that learns the process group of every running job through a pipe ("+PGID" when
//! one starts, "-PGID" when its process ended) and, when the pipe closes without a goodbye (the
//! agent was killed, even with SIGKILL), kills those groups with SIGKILL. PR_SET_PDEATHSIG alone
//! kills only each job's own process: what a job started itself (a shell's children) would run
//! on, orphaned.

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

/// What the sentinel does with one line; false when the agent said goodbye.
pub fn apply(groups: &mut BTreeSet<i32>, line: &str) -> bool {
    let line = line.trim();
    if line == "bye" {
        return false;
    }
    if let Some(pgid) = line.strip_prefix('+').and_then(|p| p.parse::<i32>().ok()) {
        if pgid > 1 {
            groups.insert(pgid);
        }
    } else if let Some(pgid) = line.strip_prefix('-').and_then(|p| p.parse::<i32>().ok()) {
        groups.remove(&pgid);
    }
    true
}

/// The sentinel's main: never returns.
pub fn run() -> ! {
    unsafe {
        // A terminal's Ctrl-C or a stop of the agent's group is the agent's business: the
        // sentinel leaves when its pipe closes.
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
            libc::signal(s, libc::SIG_IGN);
        }
    }
    let mut groups = BTreeSet::new();
    let stdin = std::io::stdin();
    let mut said_bye = false;
    for line in stdin.lock().lines() {
        match line {
            Ok(line) => {
                if !apply(&mut groups, &line) {
                    said_bye = true;
                    break;
                }
            }
            Err(_) => break,
        }
    }
    if !said_bye {
        for pgid in &groups {
            unsafe {
                libc::kill(-pgid, libc::SIGKILL);
            }
        }
        if !groups.is_empty() {
            crate::log!(
                "error",
                during = "sentinel",
                error = "the agent is gone: its jobs' process groups were killed",
                groups = groups.iter().collect::<Vec<_>>()
            );
        }
    }
    std::process::exit(0);
}

pub struct Sentinel {
    child: Child,
    pipe: Option<ChildStdin>,
}

impl Sentinel {
    pub fn start() -> std::io::Result<Sentinel> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg("--sentinel")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()?;
        let pipe = child.stdin.take();
        Ok(Sentinel { child, pipe })
    }

    fn say(&mut self, line: &str) {
        if let Some(pipe) = self.pipe.as_mut() {
            if let Err(e) = pipe.write_all(line.as_bytes()).and_then(|_| pipe.flush()) {
                crate::log!("error", during = "sentinel", error = e.to_string());
                self.pipe = None;
            }
        }
    }

    pub fn started(&mut self, pgid: i32) {
        self.say(&format!("+{pgid}\n"));
    }

    pub fn ended(&mut self, pgid: i32) {
        self.say(&format!("-{pgid}\n"));
    }

    /// The agent stops as it should: the sentinel leaves without killing anything.
    pub fn bye(mut self) {
        self.say("bye\n");
        self.pipe = None;
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines() {
        let mut g = BTreeSet::new();
        assert!(apply(&mut g, "+100"));
        assert!(apply(&mut g, "+200\n"));
        assert!(apply(&mut g, "-100"));
        assert!(apply(&mut g, "+1")); // never init, nor everyone
        assert!(apply(&mut g, "+-5"));
        assert!(apply(&mut g, "nonsense"));
        assert_eq!(g.into_iter().collect::<Vec<_>>(), vec![200]);
        assert!(!apply(&mut BTreeSet::new(), "bye"));
    }
}
