//! Counts of the queue's work for `pgjobs.metrics`: claims, completions, failures, rescued
//! leases and copies of failed jobs sent to dead-letter queues, in total since the server started and in the last minute (pg_jobs_core::metrics),
//! per database. Shared memory, so that counting costs a hot path no write of a row; counted
//! when the transaction that did the work commits, so a rolled-back completion is not counted.

use std::sync::atomic::{AtomicU64, Ordering};

use pg_jobs_core::metrics::{self, SECONDS};
use pgrx::prelude::*;

use super::at_commit::at_commit;

#[derive(Clone, Copy)]
pub(crate) enum Counter {
    Claims,
    Completions,
    Failures,
    Rescued,
    DeadLettered,
}

const NAMES: [&str; COUNTERS] = [
    "claims",
    "completions",
    "failures",
    "rescued",
    "dead_lettered",
];
const COUNTERS: usize = 5;
/// Databases of a cluster that can count; a database past them counts nothing (README).
const DATABASES: usize = 64;
/// A database's words: its oid, then per counter its total and its minute.
const COUNTER_WORDS: usize = 1 + SECONDS;
const DATABASE_WORDS: usize = 1 + COUNTERS * COUNTER_WORDS;

static METRICS: pgrx::PgAtomic<[AtomicU64; DATABASES * DATABASE_WORDS]> =
    unsafe { pgrx::PgAtomic::new(c"pg_jobs metrics") };

pub(crate) fn init_metrics() {
    pgrx::pg_shmem_init!(METRICS = std::array::from_fn(|_| AtomicU64::new(0)));
}

/// Counts `n` of `counter` when this transaction commits.
pub(crate) fn count(counter: Counter, n: usize) {
    if n == 0 {
        return;
    }
    at_commit(move || {
        if let Some(words) = database_words(METRICS.get(), DATABASE_WORDS, true) {
            let (total, minute) = counter_words(words, counter as usize);
            total.fetch_add(n as u64, Ordering::Relaxed);
            metrics::add(minute, now(), u32::try_from(n).unwrap_or(u32::MAX));
        }
    });
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// This database's words of `all`, in which each database has `width` words, the first its oid;
/// with `claim`, a free place is taken for it if it has none.
pub(crate) fn database_words(
    all: &'static [AtomicU64],
    width: usize,
    claim: bool,
) -> Option<&'static [AtomicU64]> {
    let database = u64::from(unsafe { pg_sys::MyDatabaseId }.to_u32());
    for words in all.chunks(width) {
        match words[0].load(Ordering::Acquire) {
            found if found == database => return Some(words),
            0 if claim => {
                match words[0].compare_exchange(0, database, Ordering::AcqRel, Ordering::Acquire) {
                    Ok(_) => return Some(words),
                    // Another database took it meanwhile, or this one did in another backend.
                    Err(found) if found == database => return Some(words),
                    Err(_) => continue,
                }
            }
            0 => return None,
            _ => continue,
        }
    }
    None
}

fn counter_words(words: &[AtomicU64], counter: usize) -> (&AtomicU64, &[AtomicU64; SECONDS]) {
    let first = 1 + counter * COUNTER_WORDS;
    let minute = words[first + 1..first + COUNTER_WORDS]
        .try_into()
        .expect("SECONDS words");
    (&words[first], minute)
}

/// Each counter of this database: its total since the server started and its last minute.
#[pg_extern(volatile, parallel_safe)]
fn _metrics_counters() -> TableIterator<
    'static,
    (
        name!(counter, &'static str),
        name!(total, i64),
        name!(last_minute, i64),
    ),
> {
    let words = database_words(METRICS.get(), DATABASE_WORDS, false);
    let now = now();
    TableIterator::new((0..COUNTERS).map(move |counter| match words {
        Some(words) => {
            let (total, minute) = counter_words(words, counter);
            (
                NAMES[counter],
                total.load(Ordering::Relaxed) as i64,
                metrics::last_minute(minute, now) as i64,
            )
        }
        None => (NAMES[counter], 0, 0),
    }))
}
