//! Kill jobs: a job that ends the running jobs of its owner's routine on this computer, and is
//! finished (exit 0, its output naming them) once they have all ended.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::{Agent, Ending, Job};
use crate::db::{Claimed, Report};
use crate::tail::Tail;

impl Agent {
    pub(super) fn start_kill(&mut self, c: Claimed) {
        // The running jobs of its routine that its owner posted: naming a routine does not let
        // one user end another's.
        let routine = c.routine.clone().unwrap_or_default();
        let targets: Vec<i64> = self
            .jobs
            .values()
            .filter(|j| {
                j.kind != "kill"
                    && !routine.is_empty()
                    && j.routine.as_deref() == Some(routine.as_str())
                    && j.owner.is_some()
                    && j.owner == c.owner
            })
            .map(|j| j.id)
            .collect();
        let id = c.id;
        let no_output = || Arc::new(Mutex::new(Tail::new()));
        self.jobs.insert(
            id,
            Job {
                ending_jobs: targets.iter().copied().collect(),
                ended_jobs: targets.clone(),
                ..Job::claimed(c, None, Instant::now(), no_output(), no_output())
            },
        );
        self.to_say = true;
        for id in targets {
            self.end(id, Ending::Cancel, "kill");
        }
        self.finish_kill_jobs();
    }

    /// Kill jobs whose targets have all ended are finished: exit 0, stdout says what was ended.
    pub(super) fn finish_kill_jobs(&mut self) {
        let done: Vec<i64> = self
            .jobs
            .values()
            .filter(|j| j.kind == "kill" && j.ending_jobs.is_empty() && !j.started_unsaid)
            .map(|j| j.id)
            .collect();
        for id in done {
            let job = self.jobs.remove(&id).unwrap();
            self.leases.lock().unwrap().remove(&id);
            let routine = job.routine.clone().unwrap_or_default();
            let stdout = if job.ended_jobs.is_empty() {
                format!("no running job of routine {routine} on {}\n", self.computer)
            } else {
                let ids: Vec<String> = job.ended_jobs.iter().map(i64::to_string).collect();
                format!(
                    "ended {} job(s) of routine {routine} on {}: {}\n",
                    ids.len(),
                    self.computer,
                    ids.join(", ")
                )
            };
            log!(
                "finished",
                job = id,
                kind = "kill",
                exit_code = 0,
                ended = job.ended_jobs
            );
            self.ended(
                job.ending,
                Report {
                    id,
                    token: job.token,
                    exit_code: Some(0),
                    run_time: job.started.elapsed(),
                    stderr: String::new(),
                    stdout,
                    cancelled: false,
                },
            );
        }
    }
}
