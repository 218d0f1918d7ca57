//! Where a queue's claims may start reading: a lower bound of its claimable jobs, in shared memory.
//!
//! The ready index holds every live job of a queue in claim order, and a finished job's entry
//! stays in it until VACUUM. A claim that reads from the start of its queue passes over every
//! job finished since the last vacuum (and, while a snapshot is held, visits each one's heap
//! tuple) and over every job the other workers hold: in a long drain most of a claim's time. So
//! each queue keeps the key (priority, run_at, id) of the last job a claim of it alone took, and
//! its next claims read only the jobs past it. That is sound as long as nothing claimable sorts
//! below the bound, which the writers keep so:
//!
//! - an add (or a retry, its job due again after the backoff) lowers its queue's bound to the key
//!   of its job when its transaction commits (after the job became visible), and the floor with
//!   it; a claim's raise may not pass the floor and gives up if another raise came since it
//!   looked, so it cannot raise the bound past a job that committed unseen by it;
//! - a release, a requeue of an expired lease and a key's replacement (jobs due again now, maybe
//!   below the bound) forget every bound at their commit; a claim that rolls back, or whose
//!   subtransaction does, forgets them at once (its jobs are claimable again, and other claims
//!   may have raised bounds past them, having skipped them as locked);
//! - a transaction's own claims start below the jobs it placed or made claimable again, which it
//!   sees before its commit moves the bound (an add and a claim in one transaction);
//! - what is left is found by the claims that read from the start, one of each queue every
//!   pg_jobs.claim_rescan_interval: a job a claim passed over because another transaction held
//!   its row (SKIP LOCKED says nothing of it), a job of a more urgent priority that became due
//!   after a claim passed over it, a job whose place a statement of its own changed (an UPDATE of
//!   run_at by hand).
//!
//! So a claimable job waits at most pg_jobs.claim_rescan_interval more than it would have, and a
//! claim reads from the bound on. Batch jobs are claimed from two queues at once and never use a
//! bound. Each slot is a seqlock over [version, tag, since, bound (3 words), epoch, generation,
//! floor (3 words)]: the version is odd while a writer changes the slot; `since` is when a claim
//! last took the turn to read the queue from the start; `epoch` is the count of forgettings when
//! the bound was set (a bound of another epoch is none); `generation` counts the raises, and
//! `floor` is the least job placed in the queue since the last one, which a claim's raise may
//! not pass (adds at the end of a busy queue do not stop the claims at its start from raising
//! the bound). Queues whose hashes share a slot overwrite each other's bound: a tag that is not
//! the queue's own is none.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use pgrx::prelude::*;

const HEAD_SLOTS: usize = 1024;
const WORDS: usize = 11;
/// How many times a writer tries for a slot that another writer holds.
const SPINS: usize = 10_000;

static HEADS: pgrx::PgAtomic<[AtomicU64; HEAD_SLOTS * WORDS + 1]> =
    unsafe { pgrx::PgAtomic::new(c"pg_jobs queue heads") };

/// The words of a floor past every job, as every slot's starts.
const NO_FLOOR: [u64; 3] = [
    Key::LAST.priority as i64 as u64,
    Key::LAST.run_at as u64,
    Key::LAST.id as u64,
];

pub(crate) fn init_heads() {
    // Every other word starts at 0: no bound.
    pgrx::pg_shmem_init!(
        HEADS = std::array::from_fn(|n| match (n < HEAD_SLOTS * WORDS, n % WORDS) {
            (true, word @ 8..=10) => AtomicU64::new(NO_FLOOR[word - 8]),
            _ => AtomicU64::new(0),
        })
    );
}

/// A job's place in its queue's claim order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Key {
    pub priority: i32,
    pub run_at: pg_sys::TimestampTz,
    pub id: i64,
}

impl Key {
    /// Before every job.
    pub const FIRST: Key = Key {
        priority: i32::MIN,
        run_at: i64::MIN,
        id: i64::MIN,
    };
    /// After every job.
    const LAST: Key = Key {
        priority: i32::MAX,
        run_at: i64::MAX,
        id: i64::MAX,
    };

    /// Just below the job at this key, as a bound: claims read past their bound.
    fn below(self) -> Key {
        Key {
            id: self.id - 1,
            ..self
        }
    }
}

/// What a claim saw of its queue's slot: where to start, and what lets it raise the bound after.
pub(crate) struct Look {
    slot: usize,
    tag: u64,
    epoch: u64,
    generation: u64,
    /// Whether this claim reads from the start of its queue.
    from_start: bool,
    pub from: Key,
}

fn words(slot: usize) -> &'static [AtomicU64] {
    &HEADS.get()[slot * WORDS..(slot + 1) * WORDS]
}

/// The epoch: raised by every forgetting, so that every bound set before is none.
fn forgotten() -> &'static AtomicU64 {
    &HEADS.get()[HEAD_SLOTS * WORDS]
}

/// The slot of a queue and its tag (never 0: 0 is an empty slot).
fn slot_of(claimable_by: pg_sys::Oid, queue: &str) -> (usize, u64) {
    let hash = super::ready::queue_hash(claimable_by, queue);
    ((hash % HEAD_SLOTS as u64) as usize, hash.max(1))
}

/// How often a queue's claims read it from its start, at least (pg_jobs.claim_rescan_interval).
fn rescan_ms() -> u64 {
    crate::gucs::CLAIM_RESCAN_INTERVAL.get().max(0) as u64
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as u64)
}

/// A slot's words as one consistent reading, or None while a writer holds it.
struct Slot {
    version: u64,
    tag: u64,
    since: u64,
    key: Key,
    epoch: u64,
    generation: u64,
    floor: Key,
}

fn key_at(words: &[AtomicU64], first: usize) -> Key {
    let word = |n: usize| words[first + n].load(Ordering::SeqCst);
    Key {
        priority: word(0) as i64 as i32,
        run_at: word(1) as i64,
        id: word(2) as i64,
    }
}

fn store_key(words: &[AtomicU64], first: usize, key: Key) {
    words[first].store(key.priority as i64 as u64, Ordering::SeqCst);
    words[first + 1].store(key.run_at as u64, Ordering::SeqCst);
    words[first + 2].store(key.id as u64, Ordering::SeqCst);
}

fn read(words: &[AtomicU64]) -> Option<Slot> {
    let version = words[0].load(Ordering::SeqCst);
    let word = |n: usize| words[n].load(Ordering::SeqCst);
    let slot = Slot {
        version,
        tag: word(1),
        since: word(2),
        key: key_at(words, 3),
        epoch: word(6),
        generation: word(7),
        floor: key_at(words, 8),
    };
    (version.is_multiple_of(2) && words[0].load(Ordering::SeqCst) == version).then_some(slot)
}

/// Holds the slot for a change (its version odd); false when another writer changed it since
/// `version`.
fn hold(words: &[AtomicU64], version: u64) -> bool {
    version.is_multiple_of(2)
        && words[0]
            .compare_exchange(version, version + 1, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
}

fn write(words: &[AtomicU64], slot: &Slot) {
    words[1].store(slot.tag, Ordering::SeqCst);
    words[2].store(slot.since, Ordering::SeqCst);
    store_key(words, 3, slot.key);
    words[6].store(slot.epoch, Ordering::SeqCst);
    words[7].store(slot.generation, Ordering::SeqCst);
    store_key(words, 8, slot.floor);
    words[0].store(slot.version + 2, Ordering::SeqCst);
}

/// Where a claim of `queue` starts reading: past its bound, or from the start when there is
/// none, or when pg_jobs.claim_rescan_interval passed since a claim last read from the start and
/// this claim is the one that takes the turn (it marks the time as it looks, so that the others
/// go on reading from the bound: under a long snapshot a read from the start passes every job
/// finished since, and when every claim that looked while one such read ran did the same, the
/// claims of a queue spent their time reading from the start and its backlog grew).
pub(crate) fn look(claimable_by: pg_sys::Oid, queue: &str) -> Look {
    let (slot, tag) = slot_of(claimable_by, queue);
    let epoch = forgotten().load(Ordering::SeqCst);
    let found = read(words(slot));
    let every = rescan_ms();
    let bound = found.as_ref().and_then(|found| {
        let own = found.tag == tag && found.epoch == epoch && every > 0;
        let rescan = own
            && now_ms().saturating_sub(found.since) >= every
            && mark_read(words(slot), found.version);
        (own && !rescan).then_some(found.key)
    });
    // This transaction's own adds and requeues move the bound only at its commit, but it sees
    // them already: its claims start below them.
    let bound = AT_COMMIT.with_borrow(|pending| match pending {
        Some((_, true)) => None,
        Some((placed, false)) => bound.map(|bound| {
            placed
                .get(&claimable_by)
                .and_then(|queues| queues.get(queue))
                .map_or(bound, |&least| bound.min(least.below()))
        }),
        None => bound,
    });
    Look {
        slot,
        tag,
        epoch,
        // A slot being written counts as a raise meanwhile: this claim's raise gives up.
        generation: found.map_or(u64::MAX, |found| found.generation),
        from_start: bound.is_none(),
        from: bound.unwrap_or(Key::FIRST),
    }
}

/// Sets the slot's `since` to now, unless another writer changed the slot since `version`: how a
/// claim takes its queue's turn to read from the start (the writer since may be another claim
/// taking it), and how it ends it.
fn mark_read(words: &[AtomicU64], version: u64) -> bool {
    if !hold(words, version) {
        return false;
    }
    words[2].store(now_ms(), Ordering::SeqCst);
    words[0].store(version + 2, Ordering::SeqCst);
    true
}

/// After a claim's statement, found something or not: if it read its queue from the start, the
/// next turn to do so comes a rescan interval after this read ended, not after it began. Under a
/// long snapshot such a read passes every job finished since and grows longer than the interval;
/// timed from their starts, several ran at once and the queue's claims did little else.
pub(crate) fn read_done(look: &Look) {
    if !look.from_start {
        return;
    }
    let words = words(look.slot);
    for _ in 0..SPINS {
        match read(words) {
            Some(slot) if slot.tag != look.tag => return,
            Some(slot) if mark_read(words, slot.version) => return,
            _ => std::hint::spin_loop(),
        }
    }
}

/// After a claim that took jobs up to `last`: the next claims start past it, or past the least
/// job placed in the queue since the last raise (the floor), if that is lower: a job the claim
/// could not see. Given up when another claim raised the bound since this one looked (the floor
/// then no longer holds what was placed since the look) or every bound was forgotten. A claim
/// from the start sets the bound and the time of its reading; one from the bound raises it
/// (never lowers: another claim may have raised it further).
pub(crate) fn raise(look: &Look, last: Key) {
    let words = words(look.slot);
    for _ in 0..SPINS {
        let Some(mut slot) = read(words) else {
            std::hint::spin_loop();
            continue;
        };
        if slot.generation != look.generation || forgotten().load(Ordering::SeqCst) != look.epoch {
            return;
        }
        if !hold(words, slot.version) {
            continue;
        }
        let to = last.min(slot.floor);
        if look.from_start {
            (slot.since, slot.key) = (now_ms(), to);
        } else if slot.tag == look.tag && slot.epoch == look.epoch {
            slot.key = slot.key.max(to);
        } else {
            // Another queue took the slot meanwhile: this one reads from the start next.
            words[0].store(slot.version + 2, Ordering::SeqCst);
            return;
        }
        (slot.tag, slot.epoch) = (look.tag, look.epoch);
        (slot.generation, slot.floor) = (slot.generation.wrapping_add(1), Key::LAST);
        write(words, &slot);
        return;
    }
}

/// Lowers the bound of a queue to just below the job at `key` if it is above, and the floor
/// with it (whichever queue holds the slot: a floor too low costs a claim's raise, never a job).
/// It waits for a writer that holds the slot (a few stores), since a lowering must not be lost.
fn lower(claimable_by: pg_sys::Oid, queue: &str, key: Key) {
    let (slot, tag) = slot_of(claimable_by, queue);
    let words = words(slot);
    let below = key.below();
    for _ in 0..SPINS {
        let Some(mut slot) = read(words) else {
            std::hint::spin_loop();
            continue;
        };
        if !hold(words, slot.version) {
            continue;
        }
        if slot.tag == tag {
            slot.key = slot.key.min(below);
        }
        slot.floor = slot.floor.min(below);
        write(words, &slot);
        return;
    }
    // Never held for longer than a few stores: a writer stopped in the middle. Every bound goes.
    forget();
}

/// Forgets every queue's bound: the next claim of each reads from the start.
fn forget() {
    forgotten().fetch_add(1, Ordering::SeqCst);
}

thread_local! {
    /// What this transaction's commit does to the bounds: the least key added to each queue,
    /// and whether to forget them all.
    static AT_COMMIT: RefCell<Option<(Placed, bool)>> =
        const { RefCell::new(None) };
}

/// The least job placed in each queue by this transaction, by who claims it, then its name (so
/// that an add of many jobs looks a queue up without making its name a String each time).
type Placed = HashMap<pg_sys::Oid, HashMap<String, Key>>;

fn at_commit(change: impl FnOnce(&mut (Placed, bool))) {
    AT_COMMIT.with(|pending| {
        let mut pending = pending.borrow_mut();
        if pending.is_none() {
            pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, || {
                if let Some((added, forget_all)) = AT_COMMIT.with(|p| p.borrow_mut().take()) {
                    if forget_all {
                        forget();
                    }
                    for (claimable_by, queues) in added {
                        for (queue, key) in queues {
                            lower(claimable_by, &queue, key);
                        }
                    }
                }
            });
            pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Abort, || {
                AT_COMMIT.with(|p| p.borrow_mut().take());
            });
        }
        change(pending.get_or_insert_with(|| (HashMap::new(), false)));
    });
}

/// A job placed in `queue` at `key` (added, or due again after a retry's backoff): its bound is
/// lowered to it when this transaction commits.
pub(crate) fn placed(claimable_by: pg_sys::Oid, queue: &str, key: Key) {
    at_commit(|(placed, _)| {
        let queues = placed.entry(claimable_by).or_default();
        match queues.get_mut(queue) {
            Some(least) => *least = (*least).min(key),
            None => {
                queues.insert(queue.to_owned(), key);
            }
        }
    });
}

/// Jobs made claimable again by other means than an add: every bound is forgotten when this
/// transaction commits.
pub(crate) fn requeued() {
    at_commit(|(_, forget_all)| *forget_all = true);
}

/// Called by every claim that took jobs: if the (sub)transaction it ran in rolls back, its jobs
/// are claimable again, maybe below a bound another claim raised past them (it skipped them as
/// locked), so every bound is forgotten.
pub(crate) fn claimed() {
    super::at_commit::at_rollback(forget);
}
