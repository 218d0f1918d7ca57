//! The agent's second connection, in a thread of its own: it LISTENs (pgjobs_ready and
//! pgjobs_batch_cancel) and passes on what concerns this computer, and it renews the leases of
//! the running jobs, one batch_heartbeat call for all of them every third of the shortest lease,
//! with the tails of their output. The main thread is never held up by either.
//!
//! A cancel's notification names no job (any role may LISTEN, and any role may NOTIFY): its
//! payload is this computer's keyed signal, and the agent learns which jobs were cancelled from
//! the heartbeat it sends at once ('aborted'). Nothing a notification says is acted on unchecked.

use crate::backoff::Backoff;
use crate::db::{describe_error, is_connection_error, reconnect_delay, Db};
use crate::tail::Tail;
use crate::Event;
use postgres::fallible_iterator::FallibleIterator;
use postgres::Config;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A lease the watch thread renews.
pub struct Lease {
    pub token: String,
    pub lease: Duration,
    pub renewed: Instant,
    pub stdout: Option<Arc<Mutex<Tail>>>,
    pub stderr: Option<Arc<Mutex<Tail>>>,
    pub sent_stdout: u64,
    pub sent_stderr: u64,
}

impl Lease {
    pub fn new(token: String, lease: Duration) -> Lease {
        Lease {
            token,
            lease,
            renewed: Instant::now(),
            stdout: None,
            stderr: None,
            sent_stdout: 0,
            sent_stderr: 0,
        }
    }

    /// When the next renewal is due: a third of the lease after the last one.
    pub fn due(&self) -> Instant {
        self.renewed + self.lease / 3
    }
}

pub type Leases = Arc<Mutex<HashMap<i64, Lease>>>;

/// The longest the thread sleeps before it looks at the leases and the stop flag again.
const TICK: Duration = Duration::from_millis(500);

/// A tail to send if it changed since it was last sent.
fn changed(tail: &Option<Arc<Mutex<Tail>>>, sent: &mut u64) -> Option<String> {
    let tail = tail.as_ref()?.lock().unwrap();
    if tail.version == *sent {
        return None;
    }
    *sent = tail.version;
    Some(tail.text())
}

/// The payloads that concern this computer.
#[derive(Default)]
struct Signals {
    ready: Vec<String>,
    cancel: String,
}

pub struct Watch {
    pub config: Config,
    pub computer: String,
    pub leases: Leases,
    pub events: Sender<Event>,
    pub stop: Arc<AtomicBool>,
}

impl Watch {
    fn connect(&self) -> Result<(Db, Signals), postgres::Error> {
        let mut db = Db::connect(&self.config)?;
        db.listen()?;
        let ready = db.ready_signals(&self.computer)?;
        let cancel = db.cancel_signal(&self.computer)?;
        Ok((db, Signals { ready, cancel }))
    }

    pub fn run(self) {
        let mut backoff = Backoff::seeded();
        let mut db: Option<Db> = None;
        let mut signals = Signals::default();
        let mut retry_at = Instant::now();
        let mut was_lost = false;
        while !self.stop.load(Ordering::Relaxed) {
            let Some(conn) = db.as_mut() else {
                let now = Instant::now();
                if now < retry_at {
                    std::thread::sleep((retry_at - now).min(TICK));
                    continue;
                }
                match self.connect() {
                    Ok((d, s)) => {
                        if was_lost {
                            crate::log!(
                                "reconnected",
                                conn = "watch",
                                attempts = backoff.attempts()
                            );
                        }
                        backoff.reset();
                        db = Some(d);
                        signals = s;
                        // Notifications sent while it was away are lost: the main loop claims.
                        let _ = self.events.send(Event::WatchConnected);
                    }
                    Err(e) => {
                        if !is_connection_error(&e) {
                            crate::log!(
                                "error",
                                conn = "watch",
                                during = "connect",
                                error = describe_error(&e)
                            );
                        }
                        let delay = reconnect_delay(&mut backoff, "watch", &e);
                        was_lost = true;
                        retry_at = Instant::now() + delay;
                    }
                }
                continue;
            };
            let wait = self.next_due().map_or(TICK, |due| {
                due.saturating_duration_since(Instant::now()).min(TICK)
            });
            let result = self
                .wait(conn, &signals, wait)
                .and_then(|cancelled| self.renew(conn, cancelled));
            if let Err(e) = result {
                if is_connection_error(&e) {
                    let delay = reconnect_delay(&mut backoff, "watch", &e);
                    was_lost = true;
                    db = None;
                    retry_at = Instant::now() + delay;
                } else {
                    crate::log!("error", conn = "watch", error = describe_error(&e));
                    std::thread::sleep(TICK);
                }
            }
        }
    }

    fn next_due(&self) -> Option<Instant> {
        self.leases.lock().unwrap().values().map(Lease::due).min()
    }

    /// Waits up to `wait` for notifications and passes on those for this computer; true when a
    /// cancel's came (renew at once to learn which job).
    fn wait(
        &self,
        db: &mut Db,
        signals: &Signals,
        wait: Duration,
    ) -> Result<bool, postgres::Error> {
        let mut received = vec![];
        {
            let mut notifications = db.client().notifications();
            if let Some(n) = notifications
                .timeout_iter(wait.max(Duration::from_millis(1)))
                .next()?
            {
                received.push(n);
            }
            // Those that came with it.
            let mut more = notifications.iter();
            while let Some(n) = more.next()? {
                received.push(n);
            }
        }
        let (mut ready, mut cancelled) = (false, false);
        for n in received {
            match n.channel() {
                "pgjobs_ready" => ready |= signals.ready.iter().any(|s| s == n.payload()),
                "pgjobs_batch_cancel" => {
                    cancelled |= !signals.cancel.is_empty() && n.payload() == signals.cancel
                }
                _ => {}
            }
        }
        if ready {
            let _ = self.events.send(Event::Ready);
        }
        Ok(cancelled)
    }

    /// One batch_heartbeat for every lease when any is due, or `now` (a cancel's notification).
    fn renew(&self, db: &mut Db, now_please: bool) -> Result<(), postgres::Error> {
        let now = Instant::now();
        let (mut ids, mut tokens, mut errs, mut outs) = (vec![], vec![], vec![], vec![]);
        {
            let mut leases = self.leases.lock().unwrap();
            if leases.is_empty() || !(now_please || leases.values().any(|l| l.due() <= now)) {
                return Ok(());
            }
            for (id, lease) in leases.iter_mut() {
                ids.push(*id);
                tokens.push(lease.token.clone());
                errs.push(changed(&lease.stderr, &mut lease.sent_stderr));
                outs.push(changed(&lease.stdout, &mut lease.sent_stdout));
                lease.renewed = now;
            }
        }
        let states = match db.heartbeat(&ids, &tokens, &errs, &outs) {
            Ok(states) => states,
            Err(e) => {
                // Not renewed: try again at the next tick, tails included.
                let mut leases = self.leases.lock().unwrap();
                for id in &ids {
                    if let Some(l) = leases.get_mut(id) {
                        l.renewed = now.checked_sub(l.lease / 3).unwrap_or(now);
                        l.sent_stderr = 0;
                        l.sent_stdout = 0;
                    }
                }
                return Err(e);
            }
        };
        for (id, state) in states {
            if state != "held" {
                let _ = self.events.send(Event::LeaseState(id, state));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewal_is_due_a_third_into_the_lease() {
        let l = Lease::new("t".into(), Duration::from_secs(3));
        assert_eq!(l.due() - l.renewed, Duration::from_secs(1));
    }

    #[test]
    fn a_tail_is_sent_when_it_changed() {
        let tail = Some(Arc::new(Mutex::new(Tail::new())));
        let mut sent = 0;
        assert_eq!(changed(&tail, &mut sent), None);
        tail.as_ref().unwrap().lock().unwrap().push(b"hi");
        assert_eq!(changed(&tail, &mut sent).as_deref(), Some("hi"));
        assert_eq!(changed(&tail, &mut sent), None);
        assert_eq!(changed(&None, &mut sent), None);
    }
}
