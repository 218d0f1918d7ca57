//! Ending a job's process group (SIGTERM, then SIGKILL after --grace; at once when its lease is
//! lost) and what the agent does once a process has exited: its report, or its hand-back.

use std::time::Instant;

use super::{signal_name, Agent, Ending, Pending};
use crate::db::Report;
use crate::proc::{self, Outcome};

impl Agent {
    /// Starts ending a job's process group: SIGTERM, and SIGKILL after --grace (at once when the
    /// lease is lost: someone else may run the job already).
    pub(super) fn end(&mut self, id: i64, why: Ending, from: &str) {
        let grace = self.opts.grace;
        let Some(job) = self.jobs.get_mut(&id) else {
            return;
        };
        // A lost lease overrides: nothing is reported then. Otherwise the first reason stays.
        match (job.ending, why) {
            (None, _) | (Some(Ending::Cancel | Ending::Shutdown), Ending::Lost) => {
                job.ending = Some(why)
            }
            _ => {
                if why != Ending::Lost {
                    return;
                }
            }
        }
        if why == Ending::Cancel {
            log!("cancelled", job = id, from = from, pid = job.pid);
        }
        let Some(pid) = job.pid else {
            // A kill job: nothing runs; it ends with its targets (or now, if lost or stopping).
            if why != Ending::Cancel {
                job.ending_jobs.clear();
            }
            return;
        };
        if why == Ending::Lost || grace.is_zero() {
            proc::signal_group(pid, libc::SIGKILL);
            job.kill_sent = true;
        } else if job.term_sent.is_none() {
            proc::signal_group(pid, libc::SIGTERM);
            job.term_sent = Some(Instant::now());
        }
    }

    /// SIGKILL for the groups still there --grace after their SIGTERM.
    pub(super) fn escalate(&mut self) -> Option<Instant> {
        let grace = self.opts.grace;
        let now = Instant::now();
        let mut next: Option<Instant> = None;
        for job in self.jobs.values_mut() {
            if let (Some(at), false, Some(pid)) = (job.term_sent, job.kill_sent, job.pid) {
                if now >= at + grace {
                    proc::signal_group(pid, libc::SIGKILL);
                    job.kill_sent = true;
                } else {
                    next = Some(next.map_or(at + grace, |n: Instant| n.min(at + grace)));
                }
            }
        }
        next
    }

    pub(super) fn exited(&mut self, id: i64, outcome: Outcome, ended: Instant) {
        let Some(job) = self.jobs.remove(&id) else {
            return;
        };
        self.leases.lock().unwrap().remove(&id);
        if let (Some(sentinel), Some(pid)) = (self.sentinel.as_mut(), job.pid) {
            sentinel.ended(pid);
        }
        if job.ending.is_some() {
            // What the job left behind in its group goes with it.
            if let Some(pid) = job.pid {
                proc::signal_group(pid, libc::SIGKILL);
            }
        }
        let run_time = ended.saturating_duration_since(job.started);
        let stderr = job.stderr.lock().unwrap().text();
        let stdout = job.stdout.lock().unwrap().text();
        log!(
            "finished",
            job = id,
            exit_code = outcome.exit_code,
            signal = outcome.signal.map(signal_name),
            run_time = run_time.as_secs_f64(),
            ending = job.ending.map(|e| format!("{e:?}").to_lowercase())
        );
        self.ended(
            job.ending,
            Report {
                id,
                token: job.token,
                exit_code: outcome.exit_code,
                run_time,
                stderr,
                stdout,
                cancelled: false,
            },
        );
        for kill in self.jobs.values_mut().filter(|j| j.kind == "kill") {
            kill.ending_jobs.remove(&id);
        }
        self.finish_kill_jobs();
        self.to_say = true;
    }

    /// Ends every running job for the shutdown (handed back); at once with SIGKILL if `now`.
    pub(super) fn end_all(&mut self, now: bool) {
        let ids: Vec<i64> = self.jobs.keys().copied().collect();
        for id in ids {
            self.end(id, Ending::Shutdown, "stop");
            if now {
                if let Some(job) = self.jobs.get_mut(&id) {
                    if let Some(pid) = job.pid {
                        proc::signal_group(pid, libc::SIGKILL);
                        job.kill_sent = true;
                    }
                }
            }
        }
    }

    /// What follows a job's end, by why the agent ended it: a report (cancelled if it was), a
    /// hand-back when the agent stops, or nothing when the lease was lost.
    pub(super) fn ended(&mut self, ending: Option<Ending>, report: Report) {
        match ending {
            Some(Ending::Lost) => {}
            Some(Ending::Shutdown) => self
                .pending
                .push(Pending::HandBack(report.id, report.token)),
            ending => self.pending.push(Pending::Finish(Report {
                cancelled: ending == Some(Ending::Cancel),
                ..report
            })),
        }
    }
}
