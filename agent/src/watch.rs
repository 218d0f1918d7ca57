//! The agent's second connection, in a thread of its own: it LISTENs (pgjobs_ready and
//! pgjobs_batch_cancel) and passes on what concerns this computer, and it renews the leases of
//! the running jobs, one batch_heartbeat call for all of them every third of the shortest lease,
//! with the tails of their output. New output goes sooner: every --output-every it looks at the
//! tails, and one batch_heartbeat carries those that changed (renewing those jobs' leases too).
//! The main thread is never held up by either.
//!
//! A cancel's notification names no job (any role may LISTEN, and any role may NOTIFY): its
//! payload is this computer's keyed signal, and the agent learns which jobs were cancelled from
//! the heartbeat it sends at once ('aborted'). Nothing a notification says is acted on unchecked.

use crate::agent::Event;
use crate::backoff::Backoff;
use crate::db::{describe_error, is_connection_error, reconnect_delay, Db};
use crate::tail::Tail;
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

/// When the tails are looked at for new output: every `every`, counted from the last look (or
/// the last heartbeat that carried them). New output so waits at most `every`, and at most one
/// heartbeat for output goes per `every`.
#[derive(Debug, Clone, Copy)]
pub struct OutputPace {
    every: Duration,
    next: Instant,
}

impl OutputPace {
    pub fn new(every: Duration, now: Instant) -> OutputPace {
        OutputPace {
            every,
            next: now + every,
        }
    }

    pub fn due(&self, now: Instant) -> bool {
        now >= self.next
    }

    pub fn next(&self) -> Instant {
        self.next
    }

    /// The tails were looked at (sent if they changed) at `now`.
    pub fn looked(&mut self, now: Instant) {
        self.next = now + self.every;
    }
}

/// Which leases a heartbeat now covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cover {
    /// No heartbeat.
    None,
    /// Every lease (one is due, or a cancel's notification came), with the tails that changed.
    All,
    /// The leases whose output changed, if any (the tails are due to be looked at).
    Changed,
}

fn cover(cancel: bool, lease_due: bool, output_due: bool) -> Cover {
    if cancel || lease_due {
        Cover::All
    } else if output_due {
        Cover::Changed
    } else {
        Cover::None
    }
}

/// One batch_heartbeat's arrays.
#[derive(Debug, Default, PartialEq)]
struct Beat {
    ids: Vec<i64>,
    tokens: Vec<String>,
    errs: Vec<Option<String>>,
    outs: Vec<Option<String>>,
}

/// The leases a heartbeat covers, their tails taken as sent and the leases as renewed at `now`;
/// empty when there is nothing to send.
fn collect(leases: &mut HashMap<i64, Lease>, cover: Cover, now: Instant) -> Beat {
    let mut beat = Beat::default();
    if cover == Cover::None {
        return beat;
    }
    for (id, lease) in leases.iter_mut() {
        let err = changed(&lease.stderr, &mut lease.sent_stderr);
        let out = changed(&lease.stdout, &mut lease.sent_stdout);
        if cover == Cover::Changed && err.is_none() && out.is_none() {
            continue;
        }
        beat.ids.push(*id);
        beat.tokens.push(lease.token.clone());
        beat.errs.push(err);
        beat.outs.push(out);
        lease.renewed = now;
    }
    beat
}

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
    /// --output-every.
    pub output_every: Duration,
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
        let mut pace = OutputPace::new(self.output_every, Instant::now());
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
            let wait = self.next_due(&pace).map_or(TICK, |due| {
                due.saturating_duration_since(Instant::now()).min(TICK)
            });
            let result = self
                .wait(conn, &signals, wait)
                .and_then(|cancelled| self.renew(conn, cancelled, &mut pace));
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

    /// When the next heartbeat may be due: a lease's renewal, or the next look at the tails of
    /// jobs that have output.
    fn next_due(&self, pace: &OutputPace) -> Option<Instant> {
        let leases = self.leases.lock().unwrap();
        let renewal = leases.values().map(Lease::due).min()?;
        if leases
            .values()
            .any(|l| l.stdout.is_some() || l.stderr.is_some())
        {
            Some(renewal.min(pace.next()))
        } else {
            Some(renewal)
        }
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

    /// One batch_heartbeat for every lease when any is due, or `now_please` (a cancel's
    /// notification); else, when the tails are due to be looked at, one for the jobs whose
    /// output changed (none if none did).
    fn renew(
        &self,
        db: &mut Db,
        now_please: bool,
        pace: &mut OutputPace,
    ) -> Result<(), postgres::Error> {
        let now = Instant::now();
        let Beat {
            ids,
            tokens,
            errs,
            outs,
        } = {
            let mut leases = self.leases.lock().unwrap();
            let lease_due = leases.values().any(|l| l.due() <= now);
            let cover = cover(now_please, lease_due, pace.due(now));
            if cover != Cover::None {
                // Either way the tails were looked at (and what changed is sent).
                pace.looked(now);
            }
            collect(&mut leases, cover, now)
        };
        if ids.is_empty() {
            return Ok(());
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
    fn the_tails_are_looked_at_every_interval_from_the_last_look() {
        let t0 = Instant::now();
        let every = Duration::from_secs(2);
        let mut pace = OutputPace::new(every, t0);
        assert!(!pace.due(t0));
        assert!(!pace.due(t0 + Duration::from_millis(1999)));
        assert!(pace.due(t0 + every));
        assert_eq!(pace.next(), t0 + every);
        // Looked at late (the thread was busy): the next look is an interval after this one.
        let late = t0 + Duration::from_millis(2700);
        pace.looked(late);
        assert!(!pace.due(late + Duration::from_millis(1999)));
        assert!(pace.due(late + every));
    }

    #[test]
    fn what_a_heartbeat_covers() {
        assert_eq!(cover(false, false, false), Cover::None);
        assert_eq!(cover(false, false, true), Cover::Changed);
        assert_eq!(cover(true, false, false), Cover::All);
        assert_eq!(cover(false, true, false), Cover::All);
        assert_eq!(cover(true, true, true), Cover::All);
    }

    #[test]
    fn an_output_heartbeat_covers_only_the_jobs_with_new_output() {
        let t0 = Instant::now();
        let tail = || Arc::new(Mutex::new(Tail::new()));
        let mut leases = HashMap::new();
        let (out1, err2) = (tail(), tail());
        for (id, out, err) in [
            (1, out1.clone(), tail()),
            (2, tail(), err2.clone()),
            (3, tail(), tail()),
        ] {
            let mut l = Lease::new(format!("t{id}"), Duration::from_secs(30));
            l.renewed = t0;
            l.stdout = Some(out);
            l.stderr = Some(err);
            leases.insert(id, l);
        }
        // A kill job: no tails.
        leases.insert(4, Lease::new("t4".into(), Duration::from_secs(30)));
        let t1 = t0 + Duration::from_secs(2);
        // No output yet: nothing to send.
        assert_eq!(collect(&mut leases, Cover::Changed, t1), Beat::default());
        assert_eq!(collect(&mut leases, Cover::None, t1), Beat::default());
        out1.lock().unwrap().push(b"one\n");
        err2.lock().unwrap().push(b"two\n");
        let mut beat = collect(&mut leases, Cover::Changed, t1);
        let mut rows: Vec<_> = (0..beat.ids.len())
            .map(|i| {
                (
                    beat.ids[i],
                    beat.tokens[i].clone(),
                    beat.errs[i].take(),
                    beat.outs[i].take(),
                )
            })
            .collect();
        rows.sort();
        assert_eq!(
            rows,
            [
                (1, "t1".to_string(), None, Some("one\n".to_string())),
                (2, "t2".to_string(), Some("two\n".to_string()), None)
            ]
        );
        // Those are renewed, the others not.
        assert_eq!(leases[&1].renewed, t1);
        assert_eq!(leases[&2].renewed, t1);
        assert_eq!(leases[&3].renewed, t0);
        // Sent: nothing new the next time.
        assert_eq!(collect(&mut leases, Cover::Changed, t1), Beat::default());
        // A lease heartbeat covers all, with no tail that did not change.
        let all = collect(&mut leases, Cover::All, t1);
        assert_eq!(all.ids.len(), 4);
        assert!(all.errs.iter().chain(&all.outs).all(Option::is_none));
        assert!(leases.values().all(|l| l.renewed == t1));
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
