//! Each queue's minutes (`queue_minutes`, sql/040_history.sql): the completions and failed
//! attempts of the minute and its depth at the minute's end, kept a day, for the SCHED page's
//! charts and for its counts where counting the live jobs at each reading would take too long.
//!
//! Completions and failures are counted in shared memory when the transaction that did them
//! commits, as `metrics.rs` counts them, by (owner, queue): a row per transition would be one
//! more write where the queue works hardest to write less (issue 26). The launcher's service
//! takes them at each minute's end, counts the live jobs by queue once, and writes a row per
//! queue. It counts `BLOCKS` blocks of `jobs` a round, and asks for the next round at once until
//! it has read them all: counted in one statement, a million live jobs held the launcher's round
//! for 0.2 s (and a per-second schedule's firing with it) each minute. A job moved to another
//! block meanwhile (an update that is not HOT) may be counted twice or not at all: these are a
//! chart's counts; `jobs_queues` counts exactly. A crash or an immediate stop loses the minute
//! under way, as it loses `metrics`. Statements in `queue_minutes.sql`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::prelude::*;
use pgrx::{IntoDatum, PgLwLock};

use super::at_commit::at_commit;
use super::call::{Caller, Rows, Section, Statement};
use super::datum::array;
use super::queue_places::{database, place_of, QueuePlace, NAME_BYTES};
use super::services::Service;
use crate::{named_statements, parameters};

named_statements!(include_str!("queue_minutes.sql"));

static WRITE_MINUTE: Statement = statement("write_minute");
static COUNT_BLOCKS: Statement = statement("count_blocks");
static JOBS_BLOCKS: Statement = statement("jobs_blocks");
static SOON: Statement = statement("soon");
static NEXT_MINUTE: Statement = statement("next_minute");

/// Queues counted at once; the counts of a queue past them are lost until the minute's end frees
/// the places (README).
const PLACES: usize = 1024;

/// A queue's completions and failed attempts of the minute under way.
#[derive(Clone, Copy)]
struct Counts {
    completed: u32,
    failed: u32,
}

const NONE: Counts = Counts {
    completed: 0,
    failed: 0,
};

#[derive(Clone, Copy)]
struct QueueCounts {
    places: [QueuePlace<Counts>; PLACES],
}

unsafe impl pgrx::PGRXSharedMemory for QueueCounts {}

/// Of every database; the launcher writes down its own database's (the places of a database
/// without one stay taken until the server restarts: README).
static QUEUE_COUNTS: PgLwLock<QueueCounts> = unsafe { PgLwLock::new(c"pg_jobs queue minutes") };

pub(crate) fn init_queue_counts() {
    pgrx::pg_shmem_init!(
        QUEUE_COUNTS = QueueCounts {
            places: [QueuePlace::free(NONE); PLACES]
        }
    );
}

/// Blocks of `jobs` a round counts (16 MB, about 35,000 jobs; 8 ms here).
const BLOCKS: i64 = 2048;

/// A queue's live jobs as `_queue_live_counts` counts them: ready, scheduled, waiting and running,
/// and the oldest ready job's run_at.
#[derive(Default)]
struct Live {
    counts: [i64; 4],
    oldest_ready_at: Option<i64>,
}

/// The minute being written down: the round that began it, the completions and failures it
/// took from shared memory, the live jobs counted so far by (owner, queue), and the next block.
struct Counting {
    at: Datum,
    taken: Vec<(Oid, String, i64, i64)>,
    live: HashMap<(Oid, String), Live>,
    next_block: i64,
}

thread_local! {
    /// The minute the launcher last began to write down (in this process: the launcher's).
    static WRITTEN: Cell<i64> = const { Cell::new(0) };
    /// The minute it is writing down, while it has blocks of jobs left to count.
    static COUNTING: RefCell<Option<Counting>> = const { RefCell::new(None) };
}

/// Counts the completions and failed attempts of `rows` (`outcome` of a row: how many of each),
/// by the owner and queue in their columns `owner` and `queue`, when this transaction commits.
pub(crate) fn count_rows(
    rows: &Rows,
    owner: usize,
    queue: usize,
    outcome: impl Fn(usize) -> (u32, u32),
) {
    let mut counts: Vec<(u32, String, u32, u32)> = Vec::new();
    for row in 0..rows.len() {
        let (completed, failed) = outcome(row);
        let (Some(owner), Some(queue)) =
            (rows.get::<Oid>(row, owner), rows.get::<String>(row, queue))
        else {
            continue;
        };
        if completed + failed == 0 || queue.len() > NAME_BYTES {
            continue;
        }
        match counts
            .iter_mut()
            .find(|c| c.0 == owner.to_u32() && c.1 == queue)
        {
            Some(found) => {
                found.2 += completed;
                found.3 += failed;
            }
            None => counts.push((owner.to_u32(), queue, completed, failed)),
        }
    }
    if counts.is_empty() {
        return;
    }
    at_commit(move || {
        let mut shared = QUEUE_COUNTS.exclusive();
        for (owner, queue, completed, failed) in counts {
            if let Some(place) = place_of(&mut shared.places, owner, &queue, NONE) {
                place.kept.completed = place.kept.completed.saturating_add(completed);
                place.kept.failed = place.kept.failed.saturating_add(failed);
            }
        }
    });
}

/// This database's counts of the minute under way, their places freed with `take`.
fn counted(take: bool) -> Vec<(Oid, String, i64, i64)> {
    let database = database();
    let ours = move |p: &&QueuePlace<Counts>| p.taken() && p.database == database;
    let read = |place: &QueuePlace<Counts>| {
        (
            Oid::from(place.owner),
            place.queue(),
            i64::from(place.kept.completed),
            i64::from(place.kept.failed),
        )
    };
    if take {
        let mut counts = QUEUE_COUNTS.exclusive();
        let taken = counts.places.iter().filter(ours).map(read).collect();
        for place in counts.places.iter_mut().filter(|p| p.database == database) {
            *place = QueuePlace::free(NONE);
        }
        taken
    } else {
        let counts = QUEUE_COUNTS.share();
        counts.places.iter().filter(ours).map(read).collect()
    }
}

/// At each minute's end the launcher writes down the minute of every queue (write_minute), once
/// it has counted every block of jobs, `BLOCKS` a round.
pub(crate) static MINUTES: Service = Service {
    name: "queue minutes",
    work: |section, at| {
        // Taken out: a round that fails drops the minute rather than count its blocks again.
        let Some(mut counting) = COUNTING.with(RefCell::take).or_else(|| begin(at)) else {
            return;
        };
        let blocks = section.run(&JOBS_BLOCKS, &[]).get::<i64>(0, 0).unwrap_or(0);
        if counting.next_block < blocks {
            count(section, &mut counting);
        }
        if counting.next_block < blocks {
            COUNTING.with(|kept| kept.replace(Some(counting)));
        } else {
            write(section, &counting);
        }
    },
    next: |section, at| {
        if COUNTING.with(|counting| counting.borrow().is_some()) {
            section.run(&SOON, &[]).datum(0, 0)
        } else {
            super::services::wished(section, &NEXT_MINUTE, parameters! { at: Some(at) })
        }
    },
};

/// The minute that ended before `at`, if the launcher has not begun it: the completions and
/// failures it took from shared memory, no live job counted yet.
fn begin(at: Datum) -> Option<Counting> {
    let minute = unsafe { TimestampWithTimeZone::from_datum(at, false) }
        .map_or(0, |at| at.into_inner() / 60_000_000);
    if WRITTEN.with(|written| written.replace(minute)) == minute {
        return None;
    }
    Some(Counting {
        at,
        taken: counted(true),
        live: HashMap::new(),
        next_block: 0,
    })
}

/// Counts the live jobs of the next `BLOCKS` blocks of jobs into `counting`.
fn count(section: &Section, counting: &mut Counting) {
    let to = counting.next_block + BLOCKS;
    let rows = section.run(
        &COUNT_BLOCKS,
        parameters! {
            from_block: counting.next_block.into_datum(),
            to_block: to.into_datum(),
            at: Some(counting.at),
        },
    );
    for row in 0..rows.len() {
        let (Some(owner), Some(queue)) = (rows.get::<Oid>(row, 0), rows.get::<String>(row, 1))
        else {
            continue;
        };
        let live = counting.live.entry((owner, queue)).or_default();
        for (n, count) in live.counts.iter_mut().enumerate() {
            *count += rows.get::<i64>(row, n + 2).unwrap_or(0);
        }
        if let Some(oldest) = rows.datum(row, 6).map(|d| d.value() as i64) {
            live.oldest_ready_at = Some(live.oldest_ready_at.map_or(oldest, |o| o.min(oldest)));
        }
    }
    counting.next_block = to;
}

/// Writes the minute `counting` has counted.
fn write(section: &Section, counting: &Counting) {
    let column = |type_oid, values: Vec<Option<Datum>>| Some(array(type_oid, &values));
    let taken = &counting.taken;
    let live: Vec<(&(Oid, String), &Live)> = counting.live.iter().collect();
    let live_count = |n: usize| {
        column(
            pg_sys::INT8OID,
            live.iter().map(|l| l.1.counts[n].into_datum()).collect(),
        )
    };
    section.run(
        &WRITE_MINUTE,
        parameters! {
            at: Some(counting.at),
            counted_owners: column(
                pg_sys::OIDOID,
                taken.iter().map(|c| Some(Datum::from(c.0))).collect(),
            ),
            counted_queues: column(
                pg_sys::TEXTOID,
                taken.iter().map(|c| c.1.as_str().into_datum()).collect(),
            ),
            completed: column(
                pg_sys::INT8OID,
                taken.iter().map(|c| c.2.into_datum()).collect(),
            ),
            failed: column(
                pg_sys::INT8OID,
                taken.iter().map(|c| c.3.into_datum()).collect(),
            ),
            live_owners: column(
                pg_sys::OIDOID,
                live.iter().map(|l| Some(Datum::from(l.0 .0))).collect(),
            ),
            live_queues: column(
                pg_sys::TEXTOID,
                live.iter().map(|l| l.0 .1.as_str().into_datum()).collect(),
            ),
            ready: live_count(0),
            scheduled: live_count(1),
            waiting: live_count(2),
            running: live_count(3),
            oldest_ready_at: column(
                pg_sys::TIMESTAMPTZOID,
                live.iter()
                    .map(|l| l.1.oldest_ready_at.map(Datum::from))
                    .collect(),
            ),
        },
    );
}

/// The completions and failed attempts of the minute under way by queue, of the caller's identity
/// (every identity's for an administrator): the last point of `jobs_queue_minutes`.
#[pg_extern(volatile, parallel_safe)]
fn _queue_minute_counts() -> TableIterator<
    'static,
    (
        name!(owner, pg_sys::Oid),
        name!(queue, String),
        name!(completed, i64),
        name!(failed, i64),
    ),
> {
    let caller = Caller::current();
    let all = caller.admin();
    TableIterator::new(
        counted(false)
            .into_iter()
            .filter(move |c| all || c.0 == caller.identity),
    )
}
