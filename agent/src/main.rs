//! pg_jobs_agent: the worker agent of pg_jobs' batch jobs. It registers one computer, claims the
//! jobs posted for it (or for ANY) up to --batchjobs at a time, runs each as a process, renews
//! their leases, ends them when they are cancelled, and reports how they ended. See USAGE in
//! args.rs and agent/README.md.
//!
//! Threads: the main thread owns the first connection (register, claim, started, finish,
//! hand_back) and every job's state, and is the only one to spawn (PR_SET_PDEATHSIG follows the
//! spawning thread); the watch thread owns the second (LISTEN, heartbeats); one thread waits for
//! signals; one thread watches every job's process and pipes (proc/poller.rs). They all talk to
//! the main thread through one channel of `Event`s, so it sleeps until something happens.

// First: its macro is used by the modules after it.
#[macro_use]
mod log;

mod agent;
mod args;
mod backoff;
mod db;
mod dsn;
mod proc;
mod routines;
mod sentinel;
mod tail;
mod watch;

use agent::{Agent, Event};
use args::Parsed;
use std::sync::mpsc::Sender;

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
