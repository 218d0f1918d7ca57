//! Jobs due later: a queue's workers are woken when its next such job comes due.
//!
//! An add of work ready now notifies the queue's workers (ready.rs); a job due later (added with
//! a future `run_at`, a retry waiting out its backoff, a snooze, a redrive or a dependency's copy
//! due later) was found only by the workers' polling, up to `pg_jobs.poll_interval` late. Now
//! each queue with jobs due later has a place in shared memory holding when the earliest of them
//! is due, and the launcher's service `jobs due later` wakes at that time, notifies the queue (as
//! an add of ready work does) and finds the queue's next job due later:
//!
//! - a transaction that placed a job due later notes it when it commits, which is after the job
//!   became visible to other transactions: the place's time is lowered to the job's, and the
//!   launcher's latch is set when that is before the launcher's next round;
//! - the service first raises the places that came due to now + RESCAN, then reads each queue's
//!   next job due later by a statement that starts after the raise, and lowers each place to it
//!   (or frees it when there is none and no note came meanwhile). A job committed before that
//!   statement's snapshot is read by it; one committed after is noted after the raise: so no
//!   place is ever later than a committed job's time (the argument of leases.rs).
//!
//! The places start empty when the server starts; the launcher's first round in its database reads
//! each queue's earliest job due later from `jobs` (seed). Past PLACES queues at once, for a queue
//! name over 128 bytes (queue_places.rs: the calls refuse one, a row written behind their back may
//! hold one) and in a database the launcher does not work in, a job due later is found by polling
//! as before: a wake-up missed costs a poll's delay, never a job. A place noted by a transaction
//! whose subtransaction rolled back wakes the queue for nothing. The extension's own queues (SQL
//! and batch jobs) have wake-ups of their own. Statements in `due.sql`.

use std::cell::RefCell;

use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::prelude::*;
use pgrx::PgLwLock;

use super::call::{Section, Statement};
use super::datum::array;
use super::queue::{wake, EXTENSION_CLAIMANT};
use super::queue_places::{database, place, place_of, QueuePlace};
use super::services::Service;
use crate::{named_statements, parameters};

named_statements!(include_str!("due.sql"));

static NEXT_DUE: Statement = statement("next_due");
static SEEDED: Statement = statement("seeded");

/// Queues with jobs due later, at once, in the cluster.
const PLACES: usize = 1024;
/// How long a raise leaves a place that its service's round did not lower again (a round that
/// failed): it is looked at again then.
const RESCAN_MICROS: i64 = 60_000_000;
/// The least time between two wake-ups: a queue of jobs due a millisecond apart would otherwise
/// have the launcher run a round every millisecond. Each wake-up wakes every queue due by then.
const QUIET_MICROS: i64 = 50_000;

/// The launcher: its database, its process (0: not known yet), when its next round starts, the
/// earliest its service wakes queues again (QUIET_MICROS after it last did), and the database
/// whose jobs due later its service read since the server started (seed).
#[derive(Clone, Copy)]
struct Launcher {
    database: u32,
    pid: i32,
    wakes_at: i64,
    quiet_until: i64,
    seeded: u32,
}

#[derive(Clone, Copy)]
struct DueQueues {
    launcher: Launcher,
    /// Each keeping when its queue's earliest job due later is due (microseconds since 2000).
    places: [QueuePlace<i64>; PLACES],
}

unsafe impl pgrx::PGRXSharedMemory for DueQueues {}

static DUE_QUEUES: PgLwLock<DueQueues> = unsafe { PgLwLock::new(c"pg_jobs jobs due later") };

pub(crate) fn init_due_queues() {
    pgrx::pg_shmem_init!(
        DUE_QUEUES = DueQueues {
            launcher: Launcher {
                database: 0,
                pid: 0,
                wakes_at: 0,
                quiet_until: 0,
                seeded: 0,
            },
            places: [QueuePlace::free(0); PLACES],
        }
    );
}

thread_local! {
    /// The jobs due later this transaction placed, noted when it commits: (queue's claimant,
    /// queue, when it is due), the earliest of each queue.
    static PENDING: RefCell<Vec<(u32, String, i64)>> = const { RefCell::new(Vec::new()) };
}

/// A job of `claimable_by`'s `queue` placed to be due at `run_at`: noted when this transaction
/// commits if that is later than the statement's start (the time an add gives a job due now) and
/// finite (a job waiting for dependencies is due at infinity, and released by a completion,
/// which notifies).
pub(crate) fn note(claimable_by: Oid, queue: &str, run_at: pg_sys::TimestampTz) {
    if claimable_by == EXTENSION_CLAIMANT
        || run_at == i64::MAX
        || run_at <= unsafe { pg_sys::GetCurrentStatementStartTimestamp() }
    {
        return;
    }
    let first = PENDING.with_borrow_mut(|pending| {
        let first = pending.is_empty();
        match pending
            .iter_mut()
            .find(|(by, name, _)| *by == claimable_by.to_u32() && name == queue)
        {
            Some(found) => found.2 = found.2.min(run_at),
            None => pending.push((claimable_by.to_u32(), queue.to_owned(), run_at)),
        }
        first
    });
    if first {
        pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, || {
            record(PENDING.with_borrow_mut(std::mem::take));
        });
        pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Abort, || {
            PENDING.with_borrow_mut(Vec::clear);
        });
    }
}

/// Lowers the places of `jobs` to their times (taking free places for queues without one), and
/// wakes the launcher when one of them is before its next round.
fn record(jobs: Vec<(u32, String, i64)>) {
    let database = database();
    let wake = {
        let mut due = DUE_QUEUES.exclusive();
        let launcher = due.launcher;
        if launcher.database != 0 && launcher.database != database {
            return;
        }
        let mut earliest = i64::MAX;
        for (claimable_by, queue, run_at) in jobs {
            if let Some(place) = place_of(&mut due.places, claimable_by, &queue, run_at) {
                place.kept = place.kept.min(run_at);
                earliest = earliest.min(run_at);
            }
        }
        let wakes_at = earliest.max(launcher.quiet_until);
        (launcher.pid != 0 && wakes_at < launcher.wakes_at).then(|| {
            due.launcher.wakes_at = wakes_at;
            launcher.pid
        })
    };
    if let Some(pid) = wake {
        unsafe {
            let launcher = pg_sys::BackendPidGetProc(pid);
            if !launcher.is_null() {
                pg_sys::SetLatch(&mut (*launcher).procLatch);
            }
        }
    }
}

/// For the launcher, when it starts: its database and process, so that its first round reads the
/// jobs due later added before the server started (seed) and the notes after it wake it.
pub(crate) fn launcher_started() {
    let mut due = DUE_QUEUES.exclusive();
    due.launcher.database = database();
    due.launcher.pid = unsafe { pg_sys::MyProcPid };
}

/// For the launcher, which would sleep `sleep` before its next round: how long it sleeps, no
/// later than the next wake-up. Its round asked for that before its own commit noted the jobs due
/// later it added (the schedules' jobs, fired ahead of their slots).
pub(crate) fn launcher_sleeps(sleep: std::time::Duration) -> std::time::Duration {
    let now = unsafe { pg_sys::GetCurrentTimestamp() };
    let mut wakes_at = now.saturating_add(i64::try_from(sleep.as_micros()).unwrap_or(i64::MAX));
    let mut due = DUE_QUEUES.exclusive();
    if let Some(next) = next_wake_up(&due) {
        wakes_at = wakes_at.min(next.max(now));
    }
    due.launcher.wakes_at = wakes_at;
    std::time::Duration::from_micros((wakes_at - now) as u64)
}

/// Wakes the workers of each queue whose earliest job due later is due now, and finds the queue's
/// next one, due after now (a job due by now is woken with its queue). Now is the clock's, not
/// the round's start: a place that comes due while the round runs would otherwise be past when
/// the round asks for its next, and the launcher waits a second after a round that asks for a
/// time past.
fn wake_due(section: &Section, _: Datum) {
    let (database, now) = (database(), unsafe { pg_sys::GetCurrentTimestamp() });
    let raised = now + RESCAN_MICROS;
    seed(section, database, now);
    let came_due: Vec<(u32, String)> = {
        let mut due = DUE_QUEUES.exclusive();
        // Only in the launcher's database (the regress tests run rounds of their own elsewhere).
        if due.launcher.database != database || now < due.launcher.quiet_until {
            return;
        }
        let came_due: Vec<(u32, String)> = due
            .places
            .iter_mut()
            .filter(|place| place.taken())
            .filter_map(|place| {
                if place.database != database {
                    // Of a database no launcher works in: found by polling.
                    *place = QueuePlace::free(0);
                    None
                } else if place.kept <= now {
                    place.kept = raised;
                    Some((place.owner, place.queue()))
                } else {
                    None
                }
            })
            .collect();
        if !came_due.is_empty() {
            due.launcher.quiet_until = now + QUIET_MICROS;
        }
        came_due
    };
    if came_due.is_empty() {
        return;
    }
    let claimants: Vec<Option<Datum>> = came_due
        .iter()
        .map(|(by, _)| Some(Datum::from(Oid::from(*by))))
        .collect();
    let queues: Vec<Option<Datum>> = came_due
        .iter()
        .map(|(_, queue)| Some(section.text(queue)))
        .collect();
    let next = section.run(
        &NEXT_DUE,
        parameters! {
            claimants: Some(array(pg_sys::OIDOID, &claimants)),
            queues: Some(array(pg_sys::TEXTOID, &queues)),
            after: Some(Datum::from(now)),
        },
    );
    wake(
        came_due
            .iter()
            .map(|(by, queue)| (Oid::from(*by), queue.as_str())),
    );
    let mut due = DUE_QUEUES.exclusive();
    for (row, (claimable_by, queue)) in came_due.iter().enumerate() {
        let Some(place) = place(&mut due.places, *claimable_by, queue) else {
            continue;
        };
        match next.datum(row, 0) {
            Some(next) => place.kept = place.kept.min(next.value() as i64),
            // Nothing due later is left, and no transaction noted a job since the raise.
            None if place.kept == raised => *place = QueuePlace::free(0),
            None => {}
        }
    }
}

/// The places of the jobs due later added before the server started (whose notes went with the
/// shared memory they were kept in), read once when the launcher first works in its database: they
/// only lower places, so a note committed meanwhile is never undone.
fn seed(section: &Section, database: u32, now: i64) {
    {
        let due = DUE_QUEUES.share();
        if due.launcher.database != database || due.launcher.seeded == database {
            return;
        }
    }
    let seeded = section.run(&SEEDED, parameters! { after: Some(Datum::from(now)) });
    let mut due = DUE_QUEUES.exclusive();
    for row in 0..seeded.len() {
        let (Some(claimable_by), Some(queue), Some(run_at)) = (
            seeded.get::<Oid>(row, 0),
            seeded.get::<String>(row, 1),
            seeded.get::<TimestampWithTimeZone>(row, 2),
        ) else {
            continue;
        };
        let run_at = run_at.into_inner();
        if let Some(place) = place_of(&mut due.places, claimable_by.to_u32(), &queue, run_at) {
            place.kept = place.kept.min(run_at);
        }
    }
    due.launcher.seeded = database;
}

/// When the service next wakes queues: when the earliest job due later of this database's queues
/// is due, and not while it keeps quiet.
fn next_wake_up(due: &DueQueues) -> Option<i64> {
    let database = database();
    if due.launcher.database != database {
        return None;
    }
    due.places
        .iter()
        .filter(|place| place.taken() && place.database == database)
        .map(|place| place.kept.max(due.launcher.quiet_until))
        .min()
}

pub(crate) static JOBS_DUE_LATER: Service = Service {
    name: "jobs due later",
    work: wake_due,
    next: |_, _| next_wake_up(&DUE_QUEUES.share()).map(Datum::from),
};
