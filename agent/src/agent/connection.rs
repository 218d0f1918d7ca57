//! The agent's connection: made and registered at the start and after a loss, with a growing
//! delay; a lost one is dropped and its calls are made again once it is back.

use std::time::Instant;

use super::Agent;
use crate::db::{describe_error, is_connection_error, reconnect_delay, Db};

/// Whether an error at the first connection means trying again will not help.
fn is_fatal_at_start(e: &postgres::Error) -> bool {
    match e.code() {
        Some(code) => matches!(&code.code()[..2], "28" | "3D" | "42" | "22"),
        None => false,
    }
}

impl Agent {
    /// Connects and registers; Err(true) when it is not worth trying again.
    pub(super) fn connect(&mut self) -> Result<(), (postgres::Error, bool)> {
        let mut db = Db::connect(&self.config).map_err(|e| {
            let fatal = is_fatal_at_start(&e);
            (e, fatal)
        })?;
        let capacity = self.opts.batchjobs as i32;
        db.register(&self.computer, capacity, &self.info())
            .map_err(|e| {
                let fatal = !is_connection_error(&e);
                (e, fatal)
            })?;
        self.db = Some(db);
        Ok(())
    }

    /// Handles a failed call: a lost connection is dropped and retried later; other errors are
    /// logged. Returns whether the connection is gone.
    pub(super) fn failed(&mut self, during: &str, job: Option<i64>, e: &postgres::Error) -> bool {
        if is_connection_error(e) {
            if self.db.take().is_some() {
                let delay = self.backoff.next_delay();
                self.reconnect_at = Instant::now() + delay;
                log!(
                    "reconnecting",
                    conn = "main",
                    during = during,
                    attempt = self.backoff.attempts(),
                    delay = delay.as_secs_f64(),
                    error = describe_error(e)
                );
            }
            true
        } else {
            log!(
                "error",
                during = during,
                job = job,
                error = describe_error(e)
            );
            false
        }
    }

    pub(super) fn try_reconnect(&mut self) {
        if self.db.is_some() || Instant::now() < self.reconnect_at {
            return;
        }
        match self.connect() {
            Ok(()) => {
                log!(
                    "reconnected",
                    conn = "main",
                    computer = self.computer,
                    attempts = self.backoff.attempts(),
                    running = self.jobs.len(),
                    unreported = self.pending.len()
                );
                self.backoff.reset();
                self.claim_now = true;
            }
            Err((e, _)) => {
                self.reconnect_at = Instant::now() + reconnect_delay(&mut self.backoff, "main", &e);
            }
        }
    }
}
