//! The agent's state and its loop, which the main thread runs: each turn says which jobs started
//! and ended and claims more (`exchange.rs`), ends processes (`ending.rs`), finishes kill jobs
//! (`kill_jobs.rs`) and keeps the connection (`connection.rs`); between turns it sleeps until an
//! `Event` or a timer.

mod connection;
mod ending;
mod exchange;
mod kill_jobs;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use postgres::Config;

use crate::args::Options;
use crate::backoff::Backoff;
use crate::db::{describe_error, reconnect_delay, Claimed, Db, Report};
use crate::proc::Outcome;
use crate::tail::Tail;
use crate::watch::{Leases, Watch};
use crate::{dsn, hostname, sentinel};

/// What the main loop wakes up for.
#[derive(Debug)]
pub enum Event {
    /// A pgjobs_ready notification for this computer.
    Ready,
    /// A heartbeat answered something else than 'held' (after a cancel's notification too).
    LeaseState(i64, String),
    /// The watch connection is (again) listening: notifications may have been missed.
    WatchConnected,
    /// A job's process ended.
    Exited {
        id: i64,
        outcome: Outcome,
        ended: Instant,
    },
    Signal(i32),
}

/// Why the agent is ending a job's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Cancelled (a cancel, an 'aborted' lease, a kill job): reported with cancelled = true.
    Cancel,
    /// The lease is someone else's: killed, nothing reported.
    Lost,
    /// The agent stops: handed back.
    Shutdown,
}

struct Job {
    id: i64,
    token: String,
    kind: String,
    routine: Option<String>,
    owner: Option<String>,
    /// The process (its group has the same id); None for a kill job.
    pid: Option<i32>,
    started: Instant,
    stdout: Arc<Mutex<Tail>>,
    stderr: Arc<Mutex<Tail>>,
    ending: Option<Ending>,
    /// When SIGTERM went to the group, and whether SIGKILL followed.
    term_sent: Option<Instant>,
    kill_sent: bool,
    /// batch_started not yet answered (the connection was lost): said again once back.
    started_unsaid: bool,
    /// A kill job: the jobs it ends, still running, and all it ended.
    ending_jobs: BTreeSet<i64>,
    ended_jobs: Vec<i64>,
}

impl Job {
    /// A job a claim just handed over, with its process (none for a kill job); batch_started
    /// is still to be said.
    fn claimed(
        c: Claimed,
        pid: Option<i32>,
        started: Instant,
        stdout: Arc<Mutex<Tail>>,
        stderr: Arc<Mutex<Tail>>,
    ) -> Job {
        Job {
            id: c.id,
            token: c.token,
            kind: c.kind,
            routine: c.routine,
            owner: c.owner,
            pid,
            started,
            stdout,
            stderr,
            ending: None,
            term_sent: None,
            kill_sent: false,
            started_unsaid: true,
            ending_jobs: BTreeSet::new(),
            ended_jobs: vec![],
        }
    }
}

enum Pending {
    Finish(Report),
    HandBack(i64, String),
}

pub(crate) struct Agent {
    opts: Options,
    computer: String,
    config: Config,
    db: Option<Db>,
    backoff: Backoff,
    reconnect_at: Instant,
    jobs: HashMap<i64, Job>,
    leases: Leases,
    pending: Vec<Pending>,
    pub(crate) events_tx: Sender<Event>,
    events: Receiver<Event>,
    /// The last claim was full: more may be ready.
    more: bool,
    /// A notification (or a reconnection) asks for a claim.
    claim_now: bool,
    next_poll: Instant,
    stopping: Option<Instant>,
    stop_signals: u32,
    handed_back: Vec<i64>,
    /// Something happened that the store is to be told (a job started or ended): the loop
    /// turns at once. What was said busy waits for a later turn.
    to_say: bool,
    /// The last claim was refused (not a lost connection): --once then exits 1.
    claim_refused: bool,
    /// Kills the jobs' process groups if the agent is killed.
    sentinel: Option<sentinel::Sentinel>,
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGHUP => "SIGHUP",
        _ => "signal",
    }
}

impl Agent {
    pub(crate) fn new(opts: Options, computer: String, config: Config) -> Agent {
        let (events_tx, events) = mpsc::channel();
        Agent {
            opts,
            computer,
            config,
            db: None,
            backoff: Backoff::seeded(),
            reconnect_at: Instant::now(),
            jobs: HashMap::new(),
            leases: Arc::new(Mutex::new(HashMap::new())),
            pending: vec![],
            events_tx,
            events,
            more: false,
            claim_now: true,
            next_poll: Instant::now(),
            stopping: None,
            stop_signals: 0,
            handed_back: vec![],
            to_say: false,
            claim_refused: false,
            sentinel: None,
        }
    }

    fn capacity(&self) -> usize {
        self.opts.batchjobs as usize
    }

    fn info(&self) -> serde_json::Value {
        serde_json::json!({
            "host": hostname(),
            "pid": std::process::id(),
            "version": env!("CARGO_PKG_VERSION"),
            "batchjobs": self.opts.batchjobs,
        })
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Ready | Event::WatchConnected => self.claim_now = true,
            Event::LeaseState(id, state) => self.lease_state(id, &state, "heartbeat"),
            Event::Exited { id, outcome, ended } => self.exited(id, outcome, ended),
            Event::Signal(sig) => {
                self.stop_signals += 1;
                if self.stopping.is_none() {
                    self.stopping = Some(Instant::now());
                    log!(
                        "stopping",
                        signal = signal_name(sig),
                        running = self.jobs.len(),
                        grace = self.opts.grace.as_secs_f64()
                    );
                } else {
                    log!(
                        "stopping",
                        signal = signal_name(sig),
                        running = self.jobs.len(),
                        now = true
                    );
                    self.end_all(true);
                }
            }
        }
    }

    pub(crate) fn run(&mut self) -> i32 {
        log!(
            "started",
            computer = self.computer,
            batchjobs = self.opts.batchjobs,
            pid = std::process::id(),
            version = env!("CARGO_PKG_VERSION"),
            server = dsn::describe(&self.config),
            once = self.opts.once
        );
        // The first connection: refusals (a wrong password, a name another agent owns) end the
        // agent; an unreachable server is waited for, as after a restart.
        loop {
            match self.connect() {
                Ok(()) => break,
                Err((e, true)) => {
                    log!("error", during = "register", error = describe_error(&e));
                    return 1;
                }
                Err((e, false)) if self.opts.once => {
                    // A script wants to know now, not after the server comes back.
                    log!("error", during = "connect", error = describe_error(&e));
                    return 1;
                }
                Err((e, false)) => {
                    let delay = reconnect_delay(&mut self.backoff, "main", &e);
                    if let Ok(Event::Signal(_)) = self.events.recv_timeout(delay) {
                        log!("stopped", handed_back = 0);
                        return 0;
                    }
                }
            }
        }
        self.backoff.reset();
        log!(
            "registered",
            computer = self.computer,
            capacity = self.opts.batchjobs
        );
        match sentinel::Sentinel::start() {
            Ok(s) => self.sentinel = Some(s),
            Err(e) => log!(
                "error",
                during = "sentinel",
                error = format!("not started: {e}")
            ),
        }
        let stop_watch = Arc::new(AtomicBool::new(false));
        let watch = Watch {
            config: self.config.clone(),
            computer: self.computer.clone(),
            leases: self.leases.clone(),
            events: self.events_tx.clone(),
            stop: stop_watch.clone(),
            output_every: self.opts.output_every,
        };
        let watch_thread = std::thread::Builder::new()
            .name("watch".into())
            .spawn(move || watch.run())
            .unwrap();

        let mut ended_all = false;
        let mut code = 0;
        loop {
            self.try_reconnect();
            // A kill job whose targets have all ended (or that ends itself) is done.
            self.finish_kill_jobs();
            let now = Instant::now();
            let claim = self.stopping.is_none()
                && self.db.is_some()
                && (self.claim_now
                    || self.more
                    || now >= self.next_poll
                    || (self.opts.once && self.jobs.is_empty()))
                && self.jobs.len() < self.capacity();
            let n = self.exchange(claim);
            if claim
                && self.opts.once
                && n == 0
                && self.jobs.is_empty()
                && self.pending.is_empty()
                && self.db.is_some()
            {
                code = i32::from(self.claim_refused);
                break;
            }
            // A kill job the claim handed over with nothing to end is done once said to have
            // started; it is reported at the next turn, which comes at once.
            self.finish_kill_jobs();
            if let Some(since) = self.stopping {
                if !ended_all && now >= since + self.opts.grace {
                    ended_all = true;
                    self.end_all(false);
                }
                if self.jobs.is_empty() {
                    self.exchange(false);
                    let waited_too_long =
                        now >= since + self.opts.grace * 2 + Duration::from_secs(30);
                    if self.pending.is_empty() || waited_too_long {
                        if !self.pending.is_empty() {
                            log!(
                                "error",
                                during = "stop",
                                error = "the server is unreachable: some jobs were not reported",
                                unreported = self.pending.len()
                            );
                        }
                        break;
                    }
                }
            }
            // Sleep until something happens or a timer is due. Without a connection no claim
            // is made (next_poll stays where it was, maybe past): the reconnection is the timer.
            let mut until = if self.db.is_some() {
                self.next_poll
            } else {
                self.reconnect_at
            };
            if let Some(kill_at) = self.escalate() {
                until = until.min(kill_at);
            }
            if let Some(since) = self.stopping {
                if !ended_all {
                    until = until.min(since + self.opts.grace);
                }
                until = until.min(Instant::now() + Duration::from_millis(200));
            }
            let claim_more = (self.more || self.claim_now)
                && self.jobs.len() < self.capacity()
                && self.stopping.is_none();
            let wait = if (claim_more || self.to_say) && self.db.is_some() {
                Duration::ZERO
            } else {
                until
                    .saturating_duration_since(Instant::now())
                    .min(Duration::from_secs(1))
            };
            match self.events.recv_timeout(wait) {
                Ok(event) => {
                    self.handle(event);
                    // Whatever else arrived meanwhile, before claiming again.
                    while let Ok(event) = self.events.try_recv() {
                        self.handle(event);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => unreachable!("the agent holds a sender"),
            }
        }
        stop_watch.store(true, Ordering::Relaxed);
        let _ = watch_thread.join();
        if let Some(sentinel) = self.sentinel.take() {
            sentinel.bye();
        }
        log!(
            "stopped",
            handed_back = self.handed_back,
            unreported = self.pending.len()
        );
        code
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
    }
}
