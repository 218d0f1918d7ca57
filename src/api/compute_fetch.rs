//! A compute worker's fetch (`sql/083_compute_work.sql`): `compute_fetch`, which hands the caller
//! a task of slices of one job of the groups it joined. Statements in `compute_fetch.sql`.
//!
//! A fetch never waits for a lock: a lock a member can hold (a job's row, which its owner may
//! lock) or another fetch holds is tried, and what it guards passed over this time. Waited for,
//! group by group, a fetch holding a job from one group waited for another group's lock held by a
//! fetch waiting for that job: a deadlock, found by the simulation in sim/.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use pg_jobs_core::compute::job_flag;
use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::prelude::*;
use pgrx::{IntoDatum, Uuid};

use super::call::{invalid, materialize, refuse, Caller, Section, Statement};
use super::compute_results;
use super::compute_workers::worker_of;
use super::datum::{elements, output};
use crate::{entry, gucs, named_statements, parameters};

named_statements!(include_str!("compute_fetch.sql"));

static WORKER: Statement = statement("worker");
static GROUPS: Statement = statement("groups");
static JOB: Statement = statement("job");
static TAKE_JOB: Statement = statement("take_job");
static GROUP_ROOM: Statement = statement("group_room");
static PAID_SLICES: Statement = statement("paid_slices");
static PAUSE_UNFUNDED: Statement = statement("pause_unfunded");
/// `hand` for a job that sends each slice once or not, and a worker in one group or several:
/// [once, one group], [once, several], [copies, one group], [copies, several].
static HAND: [Statement; 4] = [
    statement("hand").without(&["copies", "several_groups"]),
    statement("hand").without(&["copies"]),
    statement("hand").without(&["once", "several_groups"]),
    statement("hand").without(&["once"]),
];
static START: Statement = statement("start");
static ESTIMATION_LEFT: Statement = statement("estimation_left");
static NOTHING_IN: Statement = statement("nothing_in");
static FETCHED_NOTHING: Statement = statement("fetched_nothing");

/// A job as a fetch sees it (the statement `job`).
struct Job {
    status: String,
    /// Running, with funds for every connection fetching its largest task at once: its fetches
    /// hold its advisory lock shared. Any other job is fetched from alone, holding its lock and
    /// its row, so that its funds and its estimation slices are counted exactly.
    ample: bool,
    max_slices_per_task: i32,
    /// Copies of a slice it sends at most (the duplication level rounded up).
    copies: i32,
    paying: bool,
    /// Not only its estimation slices may go out.
    all_slices: bool,
    /// What a slice pays (numeric), valid while the section is.
    payment: Option<Datum>,
    /// Whether this fetch shares it (its locks taken), unless it was to take it alone: then None.
    shared: Option<bool>,
    /// What a submit of a task of it reads; also whether it sends each slice once.
    submitted: compute_results::Job,
}

/// Job `job` read, and shared with other fetches if it may be, unless the fetch takes it `alone`
/// anyway; None if it is gone.
fn read_job(section: &Section, caller: &Caller, job: i64, alone: bool) -> Option<Job> {
    let row = section.run(
        &JOB,
        parameters! {
            job: Some(Datum::from(job)),
            greedy_estimation: Some(Datum::from(job_flag::GREEDY_ESTIMATION)),
            alone: Some(Datum::from(alone)),
            identity: Some(Datum::from(caller.identity)),
        },
    );
    Some(Job {
        status: row.get(0, 0)?,
        ample: row.get(0, 1).unwrap_or(false),
        max_slices_per_task: row.get(0, 2)?,
        copies: row.get(0, 3)?,
        paying: row.get(0, 5)?,
        all_slices: row.get(0, 6)?,
        payment: row.datum(0, 7),
        shared: row.get(0, 8),
        submitted: compute_results::Job {
            id: job,
            owner: row.datum(0, 9)?,
            duplication_level: row.get(0, 10)?,
            race: row.get(0, 11).unwrap_or(false),
            estimation_slices: row.get(0, 12)?,
            once: row.get(0, 4)?,
            result_pattern: row.get(0, 13),
        },
    })
}

thread_local! {
    /// Where this backend's fetches of a job for a role start reading its slices, by (role, job):
    /// past the last slice they handed out, and when they last read from the first slice. The
    /// copies handed out leave dead entries in the ready index until VACUUM, and a fetch that
    /// read from the first slice each time passed over all of them (a job of a million slices
    /// half drained: 3 ms and a thousand pages a fetch, a third of the drain's time). A copy that
    /// comes back below the start (returned, overdue, a tiebreaker, or passed over while another
    /// fetch held it) is found by the next read from the first slice: at most
    /// pg_jobs.claim_rescan_interval later, as for the queue's claims (src/api/heads.rs).
    static FETCH_STARTS: RefCell<HashMap<(u32, i64), (i32, Instant)>> = RefCell::new(HashMap::new());
}

/// Where the next fetch of a job that sends each slice once starts: past the slices every
/// backend's fetches of it took or reserved. A backend's own start lagged behind the slices the
/// others had taken since its last fetch, and fetches at once started at one place: each read
/// the slices the others held or had just handed out and passed over them one by one. Each fetch
/// now reserves its task's slices from the front before it reads (8 workers at tasks of 100: the
/// fetch's statement 5.6 → 4.9 ms, 2,581 → 2,314 pages read). Not for a job whose slices go to
/// several identities: a slice one of them took has copies left for the others. One word a slot,
/// a tag of the database and job (high 32 bits) and the slice (low 32); jobs whose hashes share
/// a slot overwrite each other's front, and a tag not the job's own is none. As for a backend's
/// start, what is left below the front (given back, or reserved by a fetch that rolled back) is
/// found by each backend's read from the first slice, every pg_jobs.claim_rescan_interval.
const FRONT_SLOTS: usize = 1024;

static FETCH_FRONTS: pgrx::PgAtomic<[AtomicU64; FRONT_SLOTS]> =
    unsafe { pgrx::PgAtomic::new(c"pg_jobs compute fetch fronts") };

pub(crate) fn init_fetch_fronts() {
    pgrx::pg_shmem_init!(FETCH_FRONTS = std::array::from_fn(|_| AtomicU64::new(0)));
}

/// The slot of `job` of this database and its tag (never 0, an empty slot's).
fn front_slot(job: i64) -> (&'static AtomicU64, u64) {
    let database = u64::from(unsafe { pg_sys::MyDatabaseId }.to_u32());
    // splitmix64's finalizer: the slot and the tag from independent bits of the hash.
    let mut hash = (job as u64) ^ database.rotate_left(32);
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d049bb133111eb);
    hash ^= hash >> 31;
    let slot = &FETCH_FRONTS.get()[(hash as usize) % FRONT_SLOTS];
    (slot, (hash >> 32) | 1)
}

/// Reserves the next `n` slices of `job` from its front, at `at_least` or past it: where this
/// fetch starts reading. Fetches at once then read apart rather than each pass over the slices
/// the others hold. With `n` 0, raises the front to `at_least` (past the slices a fetch handed
/// out).
fn reserve_front(job: i64, n: i32, at_least: i32) -> i32 {
    let (slot, tag) = front_slot(job);
    let mut word = slot.load(Ordering::Relaxed);
    loop {
        let front = if word >> 32 == tag {
            (word as u32 as i32).max(at_least)
        } else {
            at_least
        };
        let reserved = tag << 32 | u64::from(front.saturating_add(n) as u32);
        match slot.compare_exchange_weak(word, reserved, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return front,
            Err(now) => word = now,
        }
    }
}

/// Where a fetch of `n` slices of `job` for `role` starts reading them: past the last slice this
/// backend's fetches handed out, and for a job that sends each slice once past every backend's,
/// where it reserves them (reserve_front); from the first slice when this backend last read from
/// there longer ago than pg_jobs.claim_rescan_interval, or never did.
fn slices_from(role: Oid, job: i64, once: bool, n: i32) -> i32 {
    let interval = Duration::from_millis(gucs::CLAIM_RESCAN_INTERVAL.get().max(0) as u64);
    FETCH_STARTS.with(|starts| match starts.borrow().get(&(role.to_u32(), job)) {
        Some((next, since)) if since.elapsed() < interval => {
            if once {
                reserve_front(job, n, *next)
            } else {
                *next
            }
        }
        _ => 1,
    })
}

/// A fetch of `job` for `role` from slice `from` handed out slices up to `last` (None: none).
fn fetched_from(role: Oid, job: i64, once: bool, from: i32, last: Option<i32>) {
    FETCH_STARTS.with(|starts| {
        let mut starts = starts.borrow_mut();
        if starts.len() > 1000 {
            // Jobs long finished: forgotten, so that the map stays small.
            starts.clear();
        }
        let key = (role.to_u32(), job);
        let since = match starts.get(&key) {
            Some((_, since)) if from > 1 => *since,
            _ => Instant::now(),
        };
        // Past the last slice handed out; a fetch that found nothing reads from the first again.
        let next = last.map_or(1, |last| last.saturating_add(1));
        starts.insert(key, (next, since));
        if once && last.is_some() {
            reserve_front(job, 0, next);
        }
    });
}

/// A task's token: a random (version 4) uuid from the strong random source.
fn new_token() -> Datum {
    let mut bytes = [0u8; 16];
    crate::strong_random(&mut bytes);
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    Uuid::from_bytes(bytes).into_datum().expect("a uuid")
}

// compute_fetch(max_slices): a task for the calling worker: up to max_slices (and the job's
// max_slices_per_task) slices of one job of the groups it joined, within the groups' limits.
// Groups take turns (the least recently served first), and so do a group's jobs: each fetch of a
// worker starts one job further along the group's list. No rows when there is nothing to do.
entry!(compute_fetch, |fcinfo, arguments| {
    let caller = Caller::current();
    let max_slices = arguments.max_slices.get();
    if let Some(max) = max_slices.filter(|max| *max < 1) {
        invalid(format!("max_slices must be at least 1, not {max}"), None);
    }
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    let worker = section.run(
        &WORKER,
        parameters! { role: Some(Datum::from(caller.role)) },
    );
    let Some(worker_id) = worker.datum(0, 0) else {
        worker_of(&section, &caller);
        // Registered by its owner in workers, but it never said what it runs.
        refuse(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!(
                "worker {} has not registered what it runs",
                output(Datum::from(caller.role), pg_sys::REGROLEOID)
            ),
            Some("Call compute_worker_register as this role first."),
        );
    };
    let capabilities = worker.datum(0, 1);
    let worktimes = worker.datum(0, 2);
    // Past 2^31 fetches the turn goes on from 0.
    let serial = i64::from(worker.get::<i32>(0, 3).unwrap_or(0));
    let several_groups = worker.get::<i64>(0, 4).unwrap_or(0) > 1;
    let worker_row = worker;
    let worker = Some(worker_id);
    let token = new_token();
    let task_token = Some(token);
    // The locks of all the worker's limited groups, taken before anything else (by the statement
    // that read the worker), so that two fetches through one limited group take turns and
    // neither counts before the other wrote.
    let held_groups: Vec<i64> = worker_row.get(0, 5).unwrap_or_default();
    let groups = section.run(&GROUPS, parameters! { worker, capabilities, worktimes });
    for row in 0..groups.len() {
        let group: i64 = groups.get(row, 0).expect("a group's id");
        let limited = groups.get::<bool>(row, 1) == Some(true);
        let Some(eligible_datum) = groups.datum(row, 2) else {
            continue;
        };
        if limited && !held_groups.contains(&group) {
            continue;
        }
        let eligible: Vec<i64> = elements(eligible_datum)
            .into_iter()
            .flatten()
            .map(|id| id.value() as i64)
            .collect();
        let group_datum = Some(Datum::from(group));
        for k in 0..eligible.len() {
            let id = eligible[((serial + k as i64) % eligible.len() as i64) as usize];
            let id_datum = Some(Datum::from(id));
            let Some(mut job) = read_job(&section, &caller, id, limited) else {
                continue;
            };
            let alone = limited || !job.ample;
            if alone {
                if section
                    .run(&TAKE_JOB, parameters! { job: id_datum })
                    .get::<bool>(0, 0)
                    != Some(true)
                {
                    continue;
                }
                // As it is now that it is this fetch's.
                match read_job(&section, &caller, id, true) {
                    Some(locked) => job = locked,
                    None => continue,
                }
            } else if job.shared != Some(true) {
                continue;
            }
            if !["new", "estimation", "running"].contains(&job.status.as_str()) {
                continue;
            }
            let mut n = i64::from(job.max_slices_per_task.min(max_slices.unwrap_or(i32::MAX)));
            if limited {
                let room = section.run(
                    &GROUP_ROOM,
                    parameters! {
                        group_id: group_datum,
                        worker,
                        job: id_datum,
                        slice_payment: job.payment,
                    },
                );
                if let Some(room) = room.get::<i64>(0, 0) {
                    n = n.min(room);
                }
                if n < 1 {
                    continue;
                }
            }
            if alone && job.paying {
                let paid = section
                    .run(&PAID_SLICES, parameters! { job: id_datum })
                    .get::<i32>(0, 0)
                    .unwrap_or(0);
                n = n.min(i64::from(paid));
                if n < 1 {
                    section.run(
                        &PAUSE_UNFUNDED,
                        parameters! { job: id_datum, nsf: Some(Datum::from(job_flag::NSF)) },
                    );
                    continue;
                }
            }
            let n = n as i32;
            let once = job.submitted.once;
            let hand = |from: i32| {
                section.run(
                    &HAND[usize::from(!once) * 2 + usize::from(several_groups)],
                    parameters! {
                        job: id_datum,
                        task_token,
                        slices: Some(Datum::from(n)),
                        candidates: Some(Datum::from(n.saturating_mul(job.copies))),
                        group_id: group_datum,
                        worker,
                        role: Some(Datum::from(caller.role)),
                        root: Some(Datum::from(caller.identity)),
                        eligible: Some(eligible_datum),
                        all_slices: Some(Datum::from(job.all_slices)),
                        from_slice: Some(Datum::from(from)),
                    },
                )
            };
            let from = slices_from(caller.role, id, once, n);
            let mut task = hand(from);
            let mut read_from = from;
            if task.len() == 0 && from > 1 {
                // Nothing past where this backend's fetches had got to: from the first slice.
                read_from = 1;
                task = hand(read_from);
            }
            let last = task
                .len()
                .checked_sub(1)
                .and_then(|row| task.get::<i32>(row, 2));
            fetched_from(caller.role, id, once, read_from, last);
            if task.len() == 0 {
                continue;
            }
            task.return_all(fcinfo);
            compute_results::handed(token, job.submitted);
            if job.status == "new" {
                section.run(&START, parameters! { job: id_datum });
            }
            if (0..task.len()).any(|row| task.get::<bool>(row, 8) == Some(true)) {
                section.run(&ESTIMATION_LEFT, parameters! { job: id_datum });
            }
            return Datum::from(0);
        }
        section.run(
            &NOTHING_IN,
            parameters! { worker, group_id: group_datum, eligible: Some(eligible_datum) },
        );
    }
    section.run(&FETCHED_NOTHING, parameters! { worker });
    Datum::from(0)
});
