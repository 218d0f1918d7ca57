//! One thread watches every job's process: it reads their pipes into their tails, reaps each
//! process when its pidfd says it ended, and then calls its `on_exit`, once its pipes are read
//! to their end or DRAIN_WAIT passed. A job had three threads of its own before (a waiter and
//! two pipe readers), whose starts and ends cost the agent about a fifth of its CPU in a drain
//! of short jobs.

use super::Outcome;
use crate::tail::Tail;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

/// How long `on_exit` waits, after the process ended, for its pipes to close: a process it left
/// behind in the background may hold them open for good (they are read on until it lets go).
const DRAIN_WAIT: Duration = Duration::from_millis(300);

/// Called once, on the poller's thread: it must not block.
pub type OnExit = Box<dyn FnOnce(Outcome, Instant) + Send>;

struct Poller {
    /// An eventfd, written when a process is added.
    wake: OwnedFd,
    added: Mutex<Vec<Entry>>,
}

/// A process being watched: how it ended, once reaped, and its `on_exit` until called; its
/// pipes each dropped at its end.
struct Entry {
    pid: i32,
    pidfd: OwnedFd,
    pipes: Vec<(OwnedFd, Arc<Mutex<Tail>>)>,
    exited: Option<(Outcome, Instant)>,
    on_exit: Option<OnExit>,
}

/// Watches process `pid` (`pidfd` its pidfd) from the poller's thread (started at the first
/// call), its `pipes` (stdout's and stderr's read ends) read into their tails.
pub fn watch(pid: i32, pidfd: OwnedFd, pipes: Vec<(OwnedFd, Arc<Mutex<Tail>>)>, on_exit: OnExit) {
    let poller = poller();
    poller.added.lock().unwrap().push(Entry {
        pid,
        pidfd,
        pipes,
        exited: None,
        on_exit: Some(on_exit),
    });
    let one: u64 = 1;
    // Cannot fail but at 2^64 - 1 unread wakes.
    unsafe {
        libc::write(
            poller.wake.as_raw_fd(),
            &one as *const u64 as *const libc::c_void,
            8,
        )
    };
}

fn poller() -> &'static Poller {
    static POLLER: OnceLock<Poller> = OnceLock::new();
    let mut made = false;
    let poller = POLLER.get_or_init(|| {
        made = true;
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        assert!(fd >= 0, "eventfd: {}", std::io::Error::last_os_error());
        Poller {
            wake: unsafe { OwnedFd::from_raw_fd(fd) },
            added: Mutex::new(vec![]),
        }
    });
    if made {
        thread::Builder::new()
            .name("jobs".into())
            .spawn(move || run(poller))
            .expect("the jobs' poller thread");
    }
    poller
}

fn pollfd(fd: &OwnedFd) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }
}

/// How process `pid` ended, if it has: reaped now.
fn reap(pid: i32) -> Option<Outcome> {
    let mut status = 0;
    match unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) } {
        0 => None,
        n if n == pid => Some(Outcome::from(ExitStatus::from_raw(status))),
        _ => Some(Outcome {
            exit_code: None,
            signal: None,
        }),
    }
}

/// Reads what a pipe has now into its tail; false at its end.
fn read_into(fd: &OwnedFd, tail: &Mutex<Tail>) -> bool {
    let mut buf = [0u8; 8192];
    match unsafe {
        libc::read(
            fd.as_raw_fd(),
            buf.as_mut_ptr() as *mut libc::c_void,
            buf.len(),
        )
    } {
        0 => false,
        n if n > 0 => {
            tail.lock().unwrap().push(&buf[..n as usize]);
            true
        }
        _ => matches!(
            std::io::Error::last_os_error().raw_os_error(),
            Some(libc::EINTR | libc::EAGAIN)
        ),
    }
}

fn run(poller: &'static Poller) {
    let mut entries: Vec<Entry> = vec![];
    let mut fds: Vec<libc::pollfd> = vec![];
    loop {
        entries.append(&mut poller.added.lock().unwrap());
        fds.clear();
        fds.push(pollfd(&poller.wake));
        for entry in &entries {
            if entry.exited.is_none() {
                fds.push(pollfd(&entry.pidfd));
            }
            fds.extend(entry.pipes.iter().map(|(fd, _)| pollfd(fd)));
        }
        let now = Instant::now();
        let timeout = entries
            .iter()
            .filter(|e| e.on_exit.is_some())
            .filter_map(|e| e.exited.map(|(_, ended)| ended + DRAIN_WAIT))
            .min()
            .map_or(-1, |deadline| {
                deadline.saturating_duration_since(now).as_millis() as libc::c_int + 1
            });
        if unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) } < 0 {
            continue; // EINTR
        }
        if fds[0].revents != 0 {
            let mut count = 0u64;
            unsafe {
                libc::read(
                    poller.wake.as_raw_fd(),
                    &mut count as *mut u64 as *mut libc::c_void,
                    8,
                )
            };
        }
        let mut ready = fds[1..].iter().map(|fd| fd.revents != 0);
        for entry in &mut entries {
            if entry.exited.is_none() && ready.next() == Some(true) {
                entry.exited = reap(entry.pid).map(|outcome| (outcome, Instant::now()));
            }
            entry
                .pipes
                .retain(|(fd, tail)| ready.next() != Some(true) || read_into(fd, tail));
        }
        let now = Instant::now();
        for entry in &mut entries {
            if let Some((outcome, ended)) = entry.exited {
                if entry.on_exit.is_some() && (entry.pipes.is_empty() || now >= ended + DRAIN_WAIT)
                {
                    (entry.on_exit.take().unwrap())(outcome, ended);
                }
            }
        }
        entries.retain(|e| e.on_exit.is_some() || !e.pipes.is_empty());
    }
}
