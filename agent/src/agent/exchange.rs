//! One turn's call to the store (batch_report_and_claim): which jobs started, which ended, and
//! as many new ones as there are free places; then the processes of those claimed, and the jobs
//! handed back when the agent stops.

use std::time::{Duration, Instant};

use super::{Agent, Ending, Event, Job, Pending};
use crate::db::{Claimed, Report, Started};
use crate::proc;
use crate::watch::Lease;

/// Arguments as the log shows them: secret values masked as batch_jobs masks them.
fn shown_args(args: &[String]) -> Vec<String> {
    let given: Vec<Option<String>> = args.iter().cloned().map(Some).collect();
    pg_jobs_core::mask::mask_args(&given)
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect()
}

impl Agent {
    /// One turn's call: says which jobs started and which ended since the last, and claims as
    /// many as there are free slots if `claim`; then hands back what the agent gave up. Returns
    /// how many were claimed.
    pub(super) fn exchange(&mut self, claim: bool) -> usize {
        if self.db.is_none() {
            return 0;
        }
        self.to_say = false;
        // batch_report_and_claim takes at most 1000 at a time.
        let free = self.capacity().saturating_sub(self.jobs.len()).min(1000);
        let n = if claim && self.stopping.is_none() {
            free
        } else {
            0
        };
        if claim {
            self.claim_now = false;
            self.next_poll = Instant::now() + self.opts.poll;
        }
        let started: Vec<Started> = self
            .jobs
            .values()
            .filter(|j| j.started_unsaid)
            .map(|j| Started {
                id: j.id,
                token: j.token.clone(),
                pid: j.pid.unwrap_or(std::process::id() as i32),
            })
            .collect();
        let finished: Vec<Report> = self
            .pending
            .iter()
            .filter_map(|p| match p {
                Pending::Finish(report) => Some(report.clone()),
                Pending::HandBack(..) => None,
            })
            .collect();
        let mut claimed = 0;
        if n > 0 || !started.is_empty() || !finished.is_empty() {
            let db = self.db.as_mut().expect("connected");
            match db.report_and_claim(&self.computer, n as i32, &started, &finished) {
                Ok(answer) => {
                    claimed = answer.claimed.len();
                    if n > 0 {
                        self.claim_refused = false;
                        self.more = claimed == n;
                    }
                    self.said_started(answer.started);
                    self.said_finished(&finished, answer.finished);
                    for job in answer.claimed {
                        self.start(job);
                    }
                }
                Err(e) => {
                    if self.failed("report_and_claim", None, &e) {
                        self.more = false;
                        return 0;
                    }
                    // Refused: the jobs run and their reports are dropped, as the store would
                    // not take them; the leases say the rest.
                    self.claim_refused = n > 0;
                    self.more = false;
                    for job in self.jobs.values_mut() {
                        job.started_unsaid = false;
                    }
                    self.pending.retain(|p| matches!(p, Pending::HandBack(..)));
                }
            }
        }
        self.hand_back();
        claimed
    }

    pub(super) fn start(&mut self, c: Claimed) {
        log!(
            "claimed",
            job = c.id,
            attempt = c.attempt,
            kind = c.kind,
            routine = c.routine,
            owner = c.owner,
            command = c.spec.command,
            args = shown_args(&c.spec.args),
            lease = c.lease.as_secs_f64()
        );
        self.leases
            .lock()
            .unwrap()
            .insert(c.id, Lease::new(c.token.clone(), c.lease));
        if c.kind == "kill" {
            self.start_kill(c);
            return;
        }
        let tx = self.events_tx.clone();
        let id = c.id;
        match proc::spawn(&c.spec, move |outcome, ended| {
            let _ = tx.send(Event::Exited { id, outcome, ended });
        }) {
            Ok(running) => {
                log!(
                    "spawned",
                    job = c.id,
                    pid = running.pid,
                    command = c.spec.command
                );
                if let Some(sentinel) = self.sentinel.as_mut() {
                    sentinel.started(running.pid);
                }
                if let Some(lease) = self.leases.lock().unwrap().get_mut(&c.id) {
                    lease.stdout = Some(running.stdout.clone());
                    lease.stderr = Some(running.stderr.clone());
                }
                self.jobs.insert(
                    c.id,
                    Job::claimed(
                        c,
                        Some(running.pid),
                        running.started,
                        running.stdout,
                        running.stderr,
                    ),
                );
                self.to_say = true;
            }
            Err(e) => {
                // As a shell says it: 127, and why.
                let text = if c.spec.cwd.is_some() && e.to_string().starts_with("working folder ") {
                    e.to_string()
                } else {
                    format!("{}: {}", c.spec.command, e)
                };
                log!(
                    "finished",
                    job = c.id,
                    exit_code = 127,
                    error = text,
                    spawned = false
                );
                self.leases.lock().unwrap().remove(&c.id);
                self.pending.push(Pending::Finish(Report {
                    id: c.id,
                    token: c.token,
                    exit_code: Some(127),
                    run_time: Duration::ZERO,
                    stderr: text,
                    stdout: String::new(),
                    cancelled: false,
                }));
                self.to_say = true;
            }
        }
    }

    /// What the store made of the jobs said to have started: each one's lease state, or busy
    /// (said again at the next turn of the loop).
    fn said_started(&mut self, states: Vec<(i64, String)>) {
        for (id, state) in states {
            if state == "busy" {
                log!("busy", during = "started", job = id);
                continue;
            }
            if let Some(job) = self.jobs.get_mut(&id) {
                job.started_unsaid = false;
            }
            // A start writes the job's progress anew, without the tails an earlier heartbeat
            // may have sent: the next one sends them again.
            if let Some(lease) = self.leases.lock().unwrap().get_mut(&id) {
                lease.sent_stdout = 0;
                lease.sent_stderr = 0;
            }
            self.lease_state(id, &state, "started");
        }
    }

    /// What the store made of the finished jobs' reports: each one's status, lost (the lease
    /// was no longer this agent's: dropped), or busy (kept for the next turn of the loop).
    fn said_finished(&mut self, reports: &[Report], statuses: Vec<(i64, String)>) {
        for (report, (_, status)) in reports.iter().zip(statuses) {
            match status.as_str() {
                "busy" => {
                    log!("busy", during = "finish", job = report.id);
                    continue;
                }
                "lost" => log!(
                    "reported",
                    job = report.id,
                    status = status,
                    note = "the lease was no longer this agent's: the report was dropped"
                ),
                _ => log!(
                    "reported",
                    job = report.id,
                    status = status,
                    exit_code = report.exit_code,
                    cancelled = report.cancelled
                ),
            }
            self.pending
                .retain(|p| !matches!(p, Pending::Finish(r) if r.id == report.id));
        }
    }

    pub(super) fn lease_state(&mut self, id: i64, state: &str, from: &str) {
        match state {
            "held" | "" => {}
            "aborted" => self.end(id, Ending::Cancel, from),
            "lost" => {
                log!("heartbeat_lost", job = id, from = from);
                self.end(id, Ending::Lost, from);
            }
            other => log!(
                "error",
                job = id,
                during = from,
                error = format!("unknown lease state {other:?}")
            ),
        }
    }

    /// Hands back together the jobs the agent gave up (it is stopping).
    pub(super) fn hand_back(&mut self) {
        let (ids, tokens): (Vec<i64>, Vec<String>) = self
            .pending
            .iter()
            .filter_map(|p| match p {
                Pending::HandBack(id, token) => Some((*id, token.clone())),
                Pending::Finish(_) => None,
            })
            .unzip();
        let Some(db) = self.db.as_mut() else { return };
        if ids.is_empty() {
            return;
        }
        match db.hand_back(&ids, &tokens) {
            Ok(n) => {
                log!("handed_back", jobs = ids, handed_back = n);
                self.handed_back.extend(&ids);
            }
            Err(e) => {
                if self.failed("hand_back", None, &e) {
                    return;
                }
            }
        }
        self.pending.retain(|p| !matches!(p, Pending::HandBack(..)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_masks_secret_arguments_as_the_store_does() {
        let args: Vec<String> = [
            "--user",
            "ann",
            "--password",
            "hunter2",
            "--api-key=abc",
            "file",
        ]
        .map(String::from)
        .to_vec();
        assert_eq!(
            shown_args(&args),
            [
                "--user",
                "ann",
                "--password",
                "********",
                "--api-key=********",
                "file"
            ]
        );
    }
}
