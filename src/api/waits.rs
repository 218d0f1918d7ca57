//! Waiting for jobs to finish: `jobs_wait(ids, timeout)` returns once every job given has
//! finished, or at the timeout. The caller sleeps on its latch, registered in shared memory by
//! each job's id; a transaction that finishes jobs (`queue::finish`) sets the latches of their
//! waiters when it commits, and the waiter reads the jobs again. A read every WAKE_ANYWAY_MS
//! besides covers the waits shared memory has no room for and the jobs finished by paths that do
//! not wake (batch jobs' reports). Statements in `waits.sql`.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use pgrx::pg_sys::{self, Datum};
use pgrx::prelude::*;

use super::call::{invalid, materialize, refuse, Caller, Rows, Section, Statement};
use super::datum::{interval_span, interval_text};
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("waits.sql"));

static JOBS: Statement = statement("jobs");

const WAIT_ENTRIES: usize = 512;
/// The longest sleep between two reads of the jobs waited for.
const WAKE_ANYWAY_MS: i64 = 5_000;
/// The longest wait a call may ask for, in microseconds: an hour.
const LONGEST_WAIT: i128 = 3_600_000_000;

/// Who waits for which job: a waiting backend's pid in the high 32 bits, a hash of the job's id
/// in the low 32; 0 is a free entry. A hash shared by two jobs costs a needless read.
pub(crate) static WAITS: pgrx::PgAtomic<[AtomicU64; WAIT_ENTRIES]> =
    unsafe { pgrx::PgAtomic::new(c"pg_jobs waits") };
/// Entries in use: a finishing transaction reads the entries only when some are.
pub(crate) static WAITING: pgrx::PgAtomic<AtomicU32> =
    unsafe { pgrx::PgAtomic::new(c"pg_jobs waiting") };

/// Whether a jobs_wait is waiting now.
pub(crate) fn anyone_waiting() -> bool {
    WAITING.get().load(Ordering::SeqCst) != 0
}

pub(crate) fn init_waits() {
    pgrx::pg_shmem_init!(WAITS = std::array::from_fn(|_| AtomicU64::new(0)));
    pgrx::pg_shmem_init!(WAITING = AtomicU32::new(0));
}

fn id_hash(id: i64) -> u64 {
    let mixed = (id as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (mixed >> 32).max(1)
}

/// The entries a wait took, given back when it ends, by an error too.
struct Registered(Vec<usize>);

impl Registered {
    /// Entries for `ids`, as many as are free.
    fn take(ids: &[i64]) -> Registered {
        let pid = u64::from(unsafe { pg_sys::MyProcPid } as u32) << 32;
        let entries = WAITS.get();
        let mut taken = Vec::new();
        let mut free = 0;
        for &id in ids {
            while free < WAIT_ENTRIES {
                let claimed = entries[free]
                    .compare_exchange(0, pid | id_hash(id), Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok();
                free += 1;
                if claimed {
                    taken.push(free - 1);
                    break;
                }
            }
        }
        WAITING
            .get()
            .fetch_add(taken.len() as u32, Ordering::SeqCst);
        Registered(taken)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        let entries = WAITS.get();
        for &entry in &self.0 {
            entries[entry].store(0, Ordering::SeqCst);
        }
        WAITING
            .get()
            .fetch_sub(self.0.len() as u32, Ordering::SeqCst);
    }
}

thread_local! {
    /// Hashes of the jobs this transaction finished, whose waiters its commit wakes.
    static FINISHED: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
    static CALLBACK_SET: Cell<bool> = const { Cell::new(false) };
}

/// Called with the jobs a statement finished: their waiters are woken when this transaction
/// commits (not before: they would read the jobs as not finished yet).
pub(crate) fn finished(ids: impl Iterator<Item = i64>) {
    if !anyone_waiting() {
        return;
    }
    FINISHED.with(|finished| finished.borrow_mut().extend(ids.map(id_hash)));
    if CALLBACK_SET.with(|set| set.replace(true)) {
        return;
    }
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, || {
        let finished = FINISHED.with(|finished| std::mem::take(&mut *finished.borrow_mut()));
        for entry in WAITS.get().iter() {
            let waiter = entry.load(Ordering::SeqCst);
            if waiter != 0 && finished.contains(&(waiter & 0xffff_ffff)) {
                unsafe {
                    let proc = pg_sys::BackendPidGetProc((waiter >> 32) as i32);
                    if proc.is_null() {
                        // Its backend ended without giving the entry back (FATAL).
                        if entry
                            .compare_exchange(waiter, 0, Ordering::SeqCst, Ordering::Relaxed)
                            .is_ok()
                        {
                            WAITING.get().fetch_sub(1, Ordering::SeqCst);
                        }
                    } else {
                        pg_sys::SetLatch(&mut (*proc).procLatch);
                    }
                }
            }
        }
        CALLBACK_SET.with(|set| set.set(false));
    });
    pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Abort, || {
        FINISHED.with(|finished| finished.borrow_mut().clear());
        CALLBACK_SET.with(|set| set.set(false));
    });
}

/// Milliseconds since some fixed point, for the deadline.
fn now_ms() -> i64 {
    unsafe { pg_sys::GetCurrentTimestamp() / 1000 }
}

// jobs_wait(ids, timeout) -> (id, status, result, error, attempts, finished_at) of each job given
entry!(jobs_wait, |fcinfo, arguments| {
    let caller = Caller::current();
    let (given, ids) = super::queue::job_ids(arguments.ids, None);
    let timeout = arguments.timeout.datum();
    let wait_us = timeout.map_or(-1, interval_span);
    if !(0..=LONGEST_WAIT).contains(&wait_us) {
        invalid(
            format!(
                "timeout must be from 0 to 1 hour, not {}",
                interval_text(timeout)
            ),
            Some("jobs_wait(ARRAY[id], '30 seconds'); then read the jobs again."),
        );
    }
    // Under one snapshot for the whole transaction no commit of another would ever be seen.
    if pg_sys::XactIsoLevel >= pg_sys::XACT_REPEATABLE_READ as i32 {
        refuse(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            "jobs_wait cannot see jobs finish in a repeatable read or serializable transaction",
            Some("Wait in a read committed transaction, or outside one."),
        );
    }
    materialize(fcinfo);
    let owner = (!caller.admin()).then(|| Datum::from(caller.identity));
    let section = Section::as_owner(fcinfo);
    let read = || -> Rows { section.run(&JOBS, parameters! { ids: Some(given), owner }) };
    let first = read();
    if let Some(row) = (0..first.len()).find(|&row| first.get::<String>(row, 1).is_none()) {
        refuse(
            PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
            format!(
                "job {} does not exist",
                first.get::<i64>(row, 0).unwrap_or_default()
            ),
            None,
        );
    }
    let deadline = now_ms() + (wait_us / 1000) as i64;
    // Finished, or blocked by a dependency that did not complete: nothing happens to it until
    // its owner acts.
    let all_finished = |rows: &Rows| {
        (0..rows.len()).all(|row| {
            rows.datum(row, 5).is_some() || rows.get::<String>(row, 1).as_deref() == Some("blocked")
        })
    };
    let mut rows = first;
    let _registered = (!all_finished(&rows)).then(|| Registered::take(&ids));
    while !all_finished(&rows) && now_ms() < deadline {
        let sleep = (deadline - now_ms()).clamp(1, WAKE_ANYWAY_MS);
        pg_sys::WaitLatch(
            pg_sys::MyLatch,
            (pg_sys::WL_LATCH_SET | pg_sys::WL_TIMEOUT | pg_sys::WL_EXIT_ON_PM_DEATH) as i32,
            sleep,
            pg_sys::PG_WAIT_EXTENSION,
        );
        pg_sys::ResetLatch(pg_sys::MyLatch);
        pgrx::check_for_interrupts!();
        rows = read();
    }
    rows.return_all(fcinfo);
    Datum::from(0)
});
