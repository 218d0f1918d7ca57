//! pg_jobs_agent: the worker agent of pg_jobs' batch jobs. It registers one computer, claims the
//! jobs posted for it (or for ANY) up to --batchjobs at a time, runs each as a process, renews
//! their leases, ends them when they are cancelled, and reports how they ended. See USAGE in
//! args.rs and agent/README.md.
//!
//! Threads: the main thread owns the first connection (register, claim, started, finish,
//! hand_back) and every job's state, and is the only one to spawn (PR_SET_PDEATHSIG follows the
//! spawning thread); the watch thread owns the second (LISTEN, heartbeats); one thread waits for
//! signals; each job has a waiter and two pipe readers. They all talk to the main thread through
//! one channel of `Event`s, so it sleeps until something happens.

mod args;
mod backoff;
mod db;
mod dsn;
#[macro_use]
mod log;
mod proc;
mod routines;
mod sentinel;
mod tail;
mod watch;

use args::{Options, Parsed};
use backoff::Backoff;
use db::{describe_error, is_connection_error, reconnect_delay, Claimed, Db, Report, Started};
use postgres::Config;
use proc::Outcome;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tail::Tail;
use watch::{Lease, Leases, Watch};

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

struct Agent {
    opts: Options,
    computer: String,
    config: Config,
    db: Option<Db>,
    backoff: Backoff,
    reconnect_at: Instant,
    jobs: HashMap<i64, Job>,
    leases: Leases,
    pending: Vec<Pending>,
    events_tx: Sender<Event>,
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

fn hostname() -> String {
    let mut buf = [0u8; 256];
    if unsafe { libc::gethostname(buf.as_mut_ptr() as *mut libc::c_char, buf.len()) } == 0 {
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        let name = String::from_utf8_lossy(&buf[..end]).to_string();
        // The short name: a computer name is [A-Za-z0-9._-], and dots are allowed, but
        // host names are usually known by their first label.
        if !name.is_empty() {
            return name;
        }
    }
    "localhost".to_string()
}

fn os_user() -> String {
    std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| unsafe {
            let pw = libc::getpwuid(libc::geteuid());
            if pw.is_null() {
                "postgres".into()
            } else {
                std::ffi::CStr::from_ptr((*pw).pw_name)
                    .to_string_lossy()
                    .into_owned()
            }
        })
}

/// Blocks SIGTERM, SIGINT and SIGHUP in this thread (and so in every thread started after it) and
/// hands them to a thread that waits for them. Children start with an empty mask (std resets it).
fn signals(events: Sender<Event>) {
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        let set = set;
        std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || loop {
                let mut sig: libc::c_int = 0;
                if libc::sigwait(&set, &mut sig) == 0 {
                    // SIGHUP is ignored: the agent has no configuration file to read again.
                    if sig != libc::SIGHUP && events.send(Event::Signal(sig)).is_err() {
                        return;
                    }
                }
            })
            .expect("the signal thread");
    }
}

/// Arguments as the log shows them: secret values masked as batch_jobs masks them.
fn shown_args(args: &[String]) -> Vec<String> {
    let given: Vec<Option<String>> = args.iter().cloned().map(Some).collect();
    pg_jobs_core::mask::mask_args(&given)
        .into_iter()
        .map(Option::unwrap_or_default)
        .collect()
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

/// Whether an error at the first connection means trying again will not help.
fn is_fatal_at_start(e: &postgres::Error) -> bool {
    match e.code() {
        Some(code) => matches!(&code.code()[..2], "28" | "3D" | "42" | "22"),
        None => false,
    }
}

impl Agent {
    fn new(opts: Options, computer: String, config: Config) -> Agent {
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

    /// Connects and registers; Err(true) when it is not worth trying again.
    fn connect(&mut self) -> Result<(), (postgres::Error, bool)> {
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
    fn failed(&mut self, during: &str, job: Option<i64>, e: &postgres::Error) -> bool {
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

    fn try_reconnect(&mut self) {
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

    // ---- claiming and starting ----

    /// One turn's call: says which jobs started and which ended since the last, and claims as
    /// many as there are free slots if `claim`; then hands back what the agent gave up. Returns
    /// how many were claimed.
    fn exchange(&mut self, claim: bool) -> usize {
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

    fn start(&mut self, c: Claimed) {
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

    fn lease_state(&mut self, id: i64, state: &str, from: &str) {
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

    // ---- kill jobs ----

    fn start_kill(&mut self, c: Claimed) {
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
    fn finish_kill_jobs(&mut self) {
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
            let cancelled = job.ending == Some(Ending::Cancel);
            log!(
                "finished",
                job = id,
                kind = "kill",
                exit_code = 0,
                ended = job.ended_jobs
            );
            match job.ending {
                Some(Ending::Lost) => {}
                Some(Ending::Shutdown) => self.pending.push(Pending::HandBack(id, job.token)),
                _ => self.pending.push(Pending::Finish(Report {
                    id,
                    token: job.token,
                    exit_code: Some(0),
                    run_time: job.started.elapsed(),
                    stderr: String::new(),
                    stdout,
                    cancelled,
                })),
            }
        }
    }

    // ---- ending processes ----

    /// Starts ending a job's process group: SIGTERM, and SIGKILL after --grace (at once when the
    /// lease is lost: someone else may run the job already).
    fn end(&mut self, id: i64, why: Ending, from: &str) {
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
    fn escalate(&mut self) -> Option<Instant> {
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

    fn exited(&mut self, id: i64, outcome: Outcome, ended: Instant) {
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
        match job.ending {
            Some(Ending::Lost) => {}
            Some(Ending::Shutdown) => self.pending.push(Pending::HandBack(id, job.token)),
            ending => self.pending.push(Pending::Finish(Report {
                id,
                token: job.token,
                exit_code: outcome.exit_code,
                run_time,
                stderr,
                stdout,
                cancelled: ending == Some(Ending::Cancel),
            })),
        }
        for kill in self.jobs.values_mut().filter(|j| j.kind == "kill") {
            kill.ending_jobs.remove(&id);
        }
        self.finish_kill_jobs();
        self.to_say = true;
    }

    // ---- reporting ----

    /// Hands back together the jobs the agent gave up (it is stopping).
    fn hand_back(&mut self) {
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

    // ---- the loop ----

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

    /// Ends every running job for the shutdown (handed back); at once with SIGKILL if `now`.
    fn end_all(&mut self, now: bool) {
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

    fn run(&mut self) -> i32 {
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

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--sentinel") {
        sentinel::run();
    }
    let routines_given = std::env::args().nth(1).as_deref() == Some("routines");
    let opts = match args::parse(std::env::args().skip(1)) {
        Ok(Parsed::Help) => {
            print!("{}", args::USAGE);
            return;
        }
        Ok(Parsed::RoutinesHelp) => {
            print!("{}", args::ROUTINES_USAGE);
            return;
        }
        Ok(Parsed::Routines(cmd)) => {
            let config = match dsn::assemble(
                cmd.dsn.as_deref(),
                |k| std::env::var(k).ok(),
                &os_user(),
                "pg_jobs_agent routines",
            ) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("pg_jobs_agent: {e}");
                    std::process::exit(2);
                }
            };
            std::process::exit(routines::run(cmd, config));
        }
        Ok(Parsed::Run(opts)) => opts,
        Err(e) if routines_given => {
            eprint!("pg_jobs_agent: {e}\n\n{}", args::ROUTINES_USAGE);
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("pg_jobs_agent: {e}");
            std::process::exit(2);
        }
    };
    log::init(opts.log);
    let computer = opts.computer.clone().unwrap_or_else(hostname);
    let config = match dsn::assemble(
        opts.dsn.as_deref(),
        |k| std::env::var(k).ok(),
        &os_user(),
        &format!("pg_jobs_agent {computer}"),
    ) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pg_jobs_agent: {e}");
            std::process::exit(2);
        }
    };
    let mut agent = Agent::new(opts, computer, config);
    signals(agent.events_tx.clone());
    std::process::exit(agent.run());
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

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(libc::SIGTERM), "SIGTERM");
        assert_eq!(signal_name(libc::SIGKILL), "SIGKILL");
    }
}
