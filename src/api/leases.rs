//! When a lease may next run out, per database, in shared memory.
//!
//! `jobs` has no index on `locked_until`: an indexed column that a claim changes would make every
//! claim and heartbeat write a new index entry in each of the table's indexes instead of one HOT
//! version of the row (sql/030_queue.sql). Expired leases are found by a scan of the table
//! instead, and only when this word says one may have expired:
//!
//! - every lease set, renewed shorter or cut short is noted when its transaction commits, which
//!   is after the lease became visible to other transactions: `note` lowers the word to it;
//! - a rescue (`_rescue_expired`) first raises the word to now + RESCAN, then scans, requeues what
//!   expired and notes the earliest lease left, read by a statement that starts after the raise.
//!   A lease committed before that statement's snapshot is read by it; one committed after is
//!   noted after the raise; if the rescue rolls back, the word is made due. So the word is never
//!   later than a committed lease's end, except for a rescue run inside a REPEATABLE READ
//!   transaction (its snapshot may predate the raise), a lease taken in a prepared transaction
//!   (noted when its backend next commits) and databases that share a word (below): RESCAN
//!   bounds how late such a lease is found.
//!
//! The words start at 0 (due), so after a restart the first look scans. Each database takes a
//! word of its own, as for metrics; past DATABASES of them, the others share one, so they see
//! each other's leases as due (a scan too many) and may raise past each other's (found within
//! RESCAN).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use pgrx::prelude::*;

/// Databases with a word of their own: its oid, then when a lease may next run out.
const DATABASES: usize = 64;
/// The longest a rescue's raise leaves the word: a scan at least this often while leases are out.
const RESCAN_MICROS: u64 = 60_000_000;

static NEXT_EXPIRY: pgrx::PgAtomic<[AtomicU64; 2 * DATABASES + 1]> =
    unsafe { pgrx::PgAtomic::new(c"pg_jobs lease expiries") };

pub(crate) fn init_lease_expiries() {
    pgrx::pg_shmem_init!(NEXT_EXPIRY = std::array::from_fn(|_| AtomicU64::new(0)));
}

fn word() -> &'static AtomicU64 {
    let all = NEXT_EXPIRY.get();
    match super::metrics::database_words(&all[..2 * DATABASES], 2, true) {
        Some(words) => &words[1],
        None => &all[2 * DATABASES],
    }
}

/// A timestamp as the word holds it: microseconds since 2000, none before.
fn micros(at: pg_sys::TimestampTz) -> u64 {
    at.max(0) as u64
}

fn now() -> u64 {
    micros(unsafe { pg_sys::GetCurrentTimestamp() })
}

thread_local! {
    /// The earliest lease this transaction set, noted when it commits (u64::MAX: none).
    static PENDING: Cell<u64> = const { Cell::new(u64::MAX) };
}

/// Notes a lease that ends at `until` (or is cut short to it) when this transaction commits.
pub(crate) fn note(until: pg_sys::TimestampTz) {
    let previous = PENDING.with(|pending| pending.replace(pending.get().min(micros(until))));
    if previous == u64::MAX {
        pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Commit, || {
            word().fetch_min(
                PENDING.with(|pending| pending.replace(u64::MAX)),
                Ordering::AcqRel,
            );
        });
        pgrx::register_xact_callback(pgrx::PgXactCallbackEvent::Abort, || {
            PENDING.with(|pending| pending.set(u64::MAX));
        });
    }
}

/// Whether a lease may have run out; if so, the caller is the one to rescue (the word is raised,
/// so that the looks of other backends meanwhile do not scan too).
pub(crate) fn take_due() -> bool {
    let word = word();
    let now = now();
    let seen = word.load(Ordering::Acquire);
    seen <= now
        && word
            .compare_exchange(
                seen,
                now + RESCAN_MICROS,
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
}

/// A new lease token, for the claims' statements: a version 4 UUID from the backend's block of
/// strong random bytes (`crate::strong_random`), where `gen_random_uuid()` asks the server's
/// source for every token, 8,500 instructions each: 14 % of a claim of 100 jobs.
#[pg_extern(volatile, parallel_safe)]
fn _lease_token() -> pgrx::Uuid {
    let mut bytes = [0u8; 16];
    crate::strong_random(&mut bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    pgrx::Uuid::from_bytes(bytes)
}

/// For SQL statements that set a lease: `_leases_note(locked_until)`, when they commit.
#[pg_extern(volatile, parallel_unsafe)]
fn _leases_note(until: Option<TimestampWithTimeZone>) {
    if let Some(until) = until {
        note(until.into_inner());
    }
}

/// For a rescue, before its scan: the word raised to now + RESCAN. If the rescue's
/// (sub)transaction rolls back, so do its requeues, and the leases it found expired are due again
/// at once: a claim's rescue rolled back (a worker killed mid-claim, a member's ROLLBACK) left
/// them to the next scan a minute later.
pub(crate) fn rescanning() {
    word().store(now() + RESCAN_MICROS, Ordering::Release);
    super::at_commit::at_rollback(|| {
        word().fetch_min(0, Ordering::AcqRel);
    });
}

/// For a rescue, after its scan: the earliest lease left (None: none).
pub(crate) fn found(earliest: Option<pg_sys::TimestampTz>) {
    if let Some(earliest) = earliest {
        word().fetch_min(micros(earliest), Ordering::AcqRel);
    }
}

/// For tests that make a lease look expired: the next look rescues.
#[pg_extern(volatile, parallel_unsafe)]
fn _leases_found(earliest: Option<TimestampWithTimeZone>) {
    found(earliest.map(TimestampWithTimeZone::into_inner));
}

/// When a lease may next run out, for the launcher's sleep: at most now + RESCAN.
pub(crate) fn next() -> pg_sys::Datum {
    pg_sys::Datum::from(word().load(Ordering::Acquire) as pg_sys::TimestampTz)
}

#[pg_extern(stable, parallel_safe)]
fn _leases_next() -> TimestampWithTimeZone {
    TimestampWithTimeZone::try_from(next().value() as pg_sys::TimestampTz).expect("a finite time")
}
