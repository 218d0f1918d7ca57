//! Whether an add should wake a worker.
//!
//! An add sends NOTIFY pgjobs_ready only where a worker may be asleep, as NOTIFY serialises the
//! commits of every notifying transaction in the cluster. It used to find that out by reading the
//! queue (was any job ready?), and that read went through every dead index entry a long
//! transaction's snapshot kept, so a pinned snapshot slowed every add. Now it reads one word of
//! shared memory per queue instead, which no snapshot can make slow:
//!
//! - a claim marks its queues "looked at" before it reads them: its worker may go to sleep on
//!   what it finds;
//! - an add of ready work notifies a queue unless its slot says "notified" less than
//!   READY_QUIET_MS ago, and its commit marks the queue notified: every listener gets that
//!   notification after the mark, so the adds after it need not notify until a worker looks
//!   again. The mark lapses after READY_QUIET_MS so that a worker that starts listening without
//!   claiming first is woken within that time, and a queue nobody claims from gets at most one
//!   notification per READY_QUIET_MS.
//!
//! So a queue gets at most one notification per claim that looked at it, plus one per
//! READY_QUIET_MS. Each slot holds a queue's tag (a hash of database, identity and queue) in its
//! high 32 bits and, in its low 32, 0 for "looked at" or when it was notified (milliseconds,
//! wrapping, never 0). Queues whose hashes share a slot overwrite each other, and a tag that is
//! not the queue's own counts as "looked at": a collision costs a notification, never a missed
//! wakeup. The slots start empty, so after a restart the first add to each queue notifies.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};

use pg_jobs_core::hex;
use pgrx::pg_sys::Oid;
use pgrx::prelude::*;
use pgrx::IntoDatum;

use super::keyed::keyed_hash;
use crate::entry;

const READY_SLOTS: usize = 4096;
const READY_QUIET_MS: u32 = 1000;

pub(crate) static READY_STATE: pgrx::PgAtomic<[AtomicU64; READY_SLOTS]> =
    unsafe { pgrx::PgAtomic::new(c"pg_jobs ready state") };

pub(crate) fn init_ready_state() {
    pgrx::pg_shmem_init!(READY_STATE = std::array::from_fn(|_| AtomicU64::new(0)));
}

/// A queue's hash, of its database, who claims it and its name: FNV-1a, the same in every
/// backend (the slots of queues in shared memory, here and in src/api/heads.rs).
pub(crate) fn queue_hash(claimable_by: pg_sys::Oid, queue: &str) -> u64 {
    let mut hash: u64 = 0xcbf29ce484222325;
    let database = unsafe { pg_sys::MyDatabaseId }.to_u32();
    for byte in database
        .to_le_bytes()
        .iter()
        .chain(claimable_by.to_u32().to_le_bytes().iter())
        .chain(queue.as_bytes())
    {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x100000001b3);
    }
    hash
}

/// The slot of a queue and its tag (shifted into the high 32 bits, never 0: 0 is an empty slot).
fn ready_slot(claimable_by: pg_sys::Oid, queue: &str) -> (usize, u64) {
    let hash = queue_hash(claimable_by, queue);
    let tag = (hash >> 32).max(1) << 32;
    ((hash as u32 as usize) % READY_SLOTS, tag)
}

/// Milliseconds of the wall clock, wrapping, never 0 (the same clock in every backend).
fn ready_now() -> u64 {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis());
    u64::from((millis as u32).max(1))
}

thread_local! {
    /// Slots this transaction's commit marks notified, and whether the commit callback is set.
    static TO_MARK: RefCell<Vec<(usize, u64)>> = const { RefCell::new(Vec::new()) };
    static CALLBACK_SET: Cell<bool> = const { Cell::new(false) };
}

/// Called by a claim before it reads `queues`: its worker may sleep on what it finds.
pub(crate) fn looking(claimable_by: pg_sys::Oid, queues: &[Option<String>]) {
    let slots = READY_STATE.get();
    for queue in queues.iter().flatten() {
        let (slot, tag) = ready_slot(claimable_by, queue);
        // A plain load first: a busy queue is claimed all the time, and a store on every claim
        // would make the slot's cache line bounce between the workers' CPUs.
        if slots[slot].load(Ordering::Relaxed) != tag {
            slots[slot].store(tag, Ordering::SeqCst);
        }
    }
}

/// Called by an add of work ready now: whether to notify the queue, which this transaction's
/// commit then marks notified.
pub(crate) fn wanted(claimable_by: pg_sys::Oid, queue: &str) -> bool {
    let (slot, tag) = ready_slot(claimable_by, queue);
    let state = READY_STATE.get()[slot].load(Ordering::SeqCst);
    let notified_at = (state & 0xffff_ffff) as u32;
    if state & !0xffff_ffff == tag
        && notified_at != 0
        && (ready_now() as u32).wrapping_sub(notified_at) < READY_QUIET_MS
    {
        return false;
    }
    TO_MARK.with(|marks| marks.borrow_mut().push((slot, tag)));
    if !CALLBACK_SET.with(|set| set.replace(true)) {
        pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, || {
            let slots = READY_STATE.get();
            let now = ready_now();
            for (slot, tag) in TO_MARK.with(|marks| std::mem::take(&mut *marks.borrow_mut())) {
                slots[slot].store(tag | now, Ordering::SeqCst);
            }
            CALLBACK_SET.with(|set| set.set(false));
        });
        pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Abort, || {
            TO_MARK.with(|marks| marks.borrow_mut().clear());
            CALLBACK_SET.with(|set| set.set(false));
        });
    }
    true
}

unsafe extern "C-unwind" {
    /// SQL's pg_notify(text, text), to call with DirectFunctionCall (pgrx's pg_sys binds it as a
    /// Rust function, which it takes no pointer to).
    #[link_name = "pg_notify"]
    fn postgres_pg_notify(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum;
}

/// The payload of NOTIFY pgjobs_ready that wakes the workers of `claimable_by`'s queue `queue`:
/// `claimable_by/queue` hashed with the installation's secret, in 16 hex digits (keyed.rs), so
/// that only the queue's identity can ask for it (jobs_ready_signal) and no member can wake, or
/// listen for, another's workers. Computed here for every caller, SQL's (`_ready_signal`) too,
/// with the key read once a backend: a statement for it read the key at every add that woke a
/// worker (README: the pickup latency). As the extension's owner.
pub(crate) fn signal(claimable_by: Oid, queue: &str) -> String {
    hex(&keyed_hash(&format!("{}/{queue}", claimable_by.to_u32())))
}

/// Sends NOTIFY pgjobs_ready with `signal` when this transaction commits.
pub(crate) fn notify(signal: &str) {
    unsafe {
        pg_sys::DirectFunctionCall2Coll(
            Some(postgres_pg_notify),
            pg_sys::InvalidOid,
            "pgjobs_ready".into_datum().expect("a text"),
            signal.into_datum().expect("a text"),
        );
    }
}

// _ready_signal(claimable_by, queue): `signal`, for the extension's statements (its owner's only).
entry!(_ready_signal, |fcinfo, arguments| {
    let claimable_by = arguments.claimable_by.get().expect("strict");
    let queue = arguments.queue.get().expect("strict");
    signal(claimable_by, &queue).into_datum().expect("a text")
});
