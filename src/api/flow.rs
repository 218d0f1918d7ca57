//! Flow control of an identity's queues: when their jobs may be claimed. A pause stops every
//! claim of a queue (the claim statements read `queue_pauses`, `queue.sql`) until the queue is
//! resumed; a concurrency limit lets claims take at most so many of its jobs leased at once
//! (`queue_limits`, whose slots the claims of a limited queue take: `claim_limited`).
//! Statements in `flow.sql`.

use std::sync::atomic::{AtomicU64, Ordering};

use pgrx::pg_sys::{Datum, Oid, INT4OID, OIDOID, TEXTOID};
use pgrx::prelude::*;
use pgrx::IntoDatum;

use super::ready::queue_hash;

use super::call::{invalid, record, refuse, value, Caller, Section, Statement};
use super::queue::callers_queue;
use crate::{entry, named_statements};

named_statements!(include_str!("flow.sql"));

static PAUSE: Statement = statement("pause", &[OIDOID, TEXTOID, OIDOID]);
static RESUME: Statement = statement("resume", &[OIDOID, TEXTOID]);
static SLOTS_HELD: Statement = statement("slots_held", &[OIDOID, TEXTOID]);
static LIMIT: Statement = statement("limit", &[OIDOID, TEXTOID, INT4OID, OIDOID]);
static UNLIMIT: Statement = statement("unlimit", &[OIDOID, TEXTOID]);

/// The most jobs of a queue a limit lets run at once: a claim reads the slots it passes over.
const MOST_RUNNING: i32 = 1000;

const SLOT_WAITERS: usize = 1024;

/// Limited queues whose last claim found fewer free slots than it asked for: its worker may go
/// to sleep while jobs are ready, and nothing is added to wake it (src/api/ready.rs wakes workers
/// for adds). So the end of a lease there wakes it, as an add of ready work would. A word per
/// queue hash, holding the queue's tag (never 0) while a claim waits; a collision loses the
/// other queue's mark, whose worker then finds its slot at its next poll.
pub(crate) static SLOT_WAITERS_STATE: pgrx::PgAtomic<[AtomicU64; SLOT_WAITERS]> =
    unsafe { pgrx::PgAtomic::new(c"pg_jobs slot waiters") };

pub(crate) fn init_slot_waiters() {
    pgrx::pg_shmem_init!(SLOT_WAITERS_STATE = std::array::from_fn(|_| AtomicU64::new(0)));
}

/// A queue's word and tag.
fn waiter_slot(claimable_by: Oid, queue: &str) -> (usize, u64) {
    let hash = queue_hash(claimable_by, queue);
    ((hash % SLOT_WAITERS as u64) as usize, (hash >> 16).max(1))
}

/// Called by a claim of a limited queue that found fewer free slots than it asked for.
pub(crate) fn waiting_for_slots(claimable_by: Oid, queue: &str) {
    let (slot, tag) = waiter_slot(claimable_by, queue);
    SLOT_WAITERS_STATE.get()[slot].store(tag, Ordering::SeqCst);
}

/// The queues, of those whose leases just ended (claimable_by, queue), where a claim waits for a
/// slot; each is taken off the marks, to be woken.
pub(crate) fn slots_freed<'a>(
    leases_ended: impl Iterator<Item = (Oid, &'a str)>,
) -> Vec<(Oid, &'a str)> {
    let words = SLOT_WAITERS_STATE.get();
    leases_ended
        .filter(|&(claimable_by, queue)| {
            let (slot, tag) = waiter_slot(claimable_by, queue);
            words[slot].load(Ordering::Relaxed) == tag
                && words[slot]
                    .compare_exchange(tag, 0, Ordering::SeqCst, Ordering::Relaxed)
                    .is_ok()
        })
        .collect()
}

/// What a pause refuses of the extension's queues.
const RESERVED: (&str, &str) = (
    "cannot be paused",
    "Stop batch jobs with batch_cancel, SQL jobs with jobs_abort, schedules with jobs_disable_schedule.",
);
/// What a limit refuses of them.
const RESERVED_LIMIT: (&str, &str) = (
    "cannot be limited",
    "pg_jobs.max_workers bounds the SQL jobs run at once; an agent's --batchjobs its batch jobs.",
);

/// Refuses a change of `queue`'s limit while a claim holds one of its slots: it would wait for
/// that claim's transaction, which its worker ends when it will.
fn refuse_if_slots_held(section: &Section, identity: Datum, queue: Option<Datum>) {
    if section
        .run(&SLOTS_HELD, &[Some(identity), queue])
        .get::<bool>(0, 0)
        == Some(true)
    {
        refuse(
            PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
            "a claim in progress holds one of the queue's slots",
            Some("Try again when the claim's transaction has ended: claim in a transaction of its own."),
        );
    }
}

// jobs_pause(queue) -> (paused_at, paused_by)
entry!(jobs_pause, pg_finfo_jobs_pause, |fcinfo| {
    let caller = Caller::current();
    let queue = callers_queue(fcinfo, 0, "jobs_pause('emails')", RESERVED);
    let section = Section::as_owner(fcinfo);
    let pause = section.run(
        &PAUSE,
        &[
            Some(Datum::from(caller.identity)),
            queue.into_datum(),
            Some(Datum::from(caller.role)),
        ],
    );
    let values = [pause.datum(0, 0), pause.datum(0, 1)];
    drop(section);
    record(fcinfo, &values)
});

// jobs_resume(queue) -> whether it was paused
entry!(jobs_resume, pg_finfo_jobs_resume, |fcinfo| {
    let caller = Caller::current();
    let queue = callers_queue(fcinfo, 0, "jobs_resume('emails')", RESERVED);
    let section = Section::as_owner(fcinfo);
    let resumed = section.run(
        &RESUME,
        &[Some(Datum::from(caller.identity)), queue.into_datum()],
    );
    Datum::from(resumed.len() > 0)
});

// jobs_limit(queue, max_running) -> (max_running, set_at, set_by)
entry!(jobs_limit, pg_finfo_jobs_limit, |fcinfo| {
    let caller = Caller::current();
    let queue = callers_queue(fcinfo, 0, "jobs_limit('emails', 8)", RESERVED_LIMIT);
    let most = match value::<i32>(fcinfo, 1) {
        Some(most) if (1..=MOST_RUNNING).contains(&most) => most,
        most => invalid(
            format!(
                "max_running must be from 1 to {MOST_RUNNING}, not {}",
                most.map_or("null".into(), |most| most.to_string())
            ),
            Some("jobs_pause stops a queue's claims; jobs_unlimit removes its limit."),
        ),
    };
    let section = Section::as_owner(fcinfo);
    let identity = Datum::from(caller.identity);
    refuse_if_slots_held(&section, identity, queue.as_str().into_datum());
    let limit = section.run(
        &LIMIT,
        &[
            Some(identity),
            queue.into_datum(),
            Some(Datum::from(most)),
            Some(Datum::from(caller.role)),
        ],
    );
    let values = [limit.datum(0, 0), limit.datum(0, 1), limit.datum(0, 2)];
    drop(section);
    record(fcinfo, &values)
});

// jobs_unlimit(queue) -> whether it was limited
entry!(jobs_unlimit, pg_finfo_jobs_unlimit, |fcinfo| {
    let caller = Caller::current();
    let queue = callers_queue(fcinfo, 0, "jobs_unlimit('emails')", RESERVED_LIMIT);
    let section = Section::as_owner(fcinfo);
    let identity = Datum::from(caller.identity);
    refuse_if_slots_held(&section, identity, queue.as_str().into_datum());
    let unlimited = section.run(&UNLIMIT, &[Some(identity), queue.into_datum()]);
    Datum::from(unlimited.len() > 0)
});
