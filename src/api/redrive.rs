//! Second chances for the lease queue's jobs: `jobs_retry(ids)` and `jobs_retry_where(queue,
//! ...)` bring failed and aborted jobs back from job_history (pgmq's and pg-boss's redrive,
//! River's and Oban's retry of a discarded job), and `jobs_dead_letter(queue, dead_letter_queue)`
//! names where a queue's jobs go after their last attempt (copied by `queue.sql`'s finish);
//! `jobs_reschedule(ids, run_at)` makes waiting jobs due at another time, "run now" for one that
//! waits for its time or its next attempt (graphile-worker's `reschedule_jobs`, River's and
//! Oban's retry of a scheduled job), and `jobs_delete(ids)` removes waiting jobs without a trace
//! (River's and Oban's delete). Statements in `redrive.sql`.

use pgrx::pg_sys::Datum;
use pgrx::prelude::*;
use pgrx::IntoDatum;

use super::call::{invalid, materialize, return_row, Caller, Section, Statement};
use super::datum::{int8_array, seconds};
use super::dependencies::{self, Needs};
use super::queue::{
    abort_waiting, acting_on, callers_queue, job_ids, placed, queue_too_long, return_ids,
    run_at_refused, wake_placed, QUEUE_BYTES,
};
use super::refusals::finite_date;
use crate::{entry, gucs, named_statements, parameters};

named_statements!(include_str!("redrive.sql"));

static SET_DEAD_LETTER: Statement = statement("set_dead_letter");
static REMOVE_DEAD_LETTER: Statement = statement("remove_dead_letter");
static RETRY: Statement = statement("retry");
static RESCHEDULE: Statement = statement("reschedule");
static DELETABLE: Statement = statement("deletable");
static FORGET_DELETED: Statement = statement("forget_deleted");
static RETRY_CHOSEN: Statement = statement("retry_chosen");

/// The most jobs one call brings back by filter.
const MOST_BY_FILTER: i32 = 10_000;

/// What the extension's queues have instead.
const RESERVED: (&str, &str) = (
    "keeps its own failures",
    "Batch jobs are posted again with batch_post; SQL jobs and schedules run again at their next slot.",
);

/// Brings back owner `owner`'s (any when None) failed and aborted jobs `ids` (an int8[]); their
/// queues' claims start below them and their sleeping workers are woken once this commits.
fn retry(section: &Section, ids: Datum, owner: Option<Datum>) -> Vec<i64> {
    let retried = section.run(
        &RETRY,
        parameters! {
            ids: Some(ids),
            owner,
            default_backoff: Some(seconds(gucs::BACKOFF.get())),
            default_max_backoff: Some(seconds(gucs::MAX_BACKOFF.get())),
            default_lease: Some(seconds(gucs::LEASE.get())),
        },
    );
    // A job added with dependencies waits again for those that have not completed (an abort
    // while it waited removed its waits).
    for row in 0..retried.len() {
        if let (Some(id), Some(owner), Some(on)) = (
            retried.get::<i64>(row, 0),
            retried.get::<pg_sys::Oid>(row, 5),
            retried.get::<Vec<i64>>(row, 6),
        ) {
            let needs = Needs {
                ids: on,
                ..Needs::default()
            };
            dependencies::hold(section, owner, &[id], &[needs]);
        }
    }
    let placed: Vec<(i64, pg_sys::Oid, String)> = (0..retried.len())
        .filter_map(|row| placed(&retried, row, [0, 1, 2, 3, 4]))
        .collect();
    wake_placed(&placed);
    let mut ids: Vec<i64> = placed.into_iter().map(|(id, ..)| id).collect();
    ids.sort_unstable();
    ids
}

// jobs_retry(ids) -> the ids brought back
entry!(jobs_retry, |fcinfo, arguments| {
    let caller = Caller::current();
    let (ids, _) = job_ids(
        arguments.ids,
        Some(
            "jobs_retry_where(queue, ...) retries the failed jobs of a queue, up to 10,000 a call.",
        ),
    );
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    let retried = retry(&section, ids, acting_on(&caller));
    drop(section);
    return_ids(fcinfo, &retried);
    Datum::from(0)
});

// jobs_retry_where(queue, task, month, error, max_jobs) -> the ids brought back
entry!(jobs_retry_where, |fcinfo, arguments| {
    let caller = Caller::current();
    callers_queue(
        arguments.queue,
        "jobs_retry_where('emails', error => 'timeout')",
        RESERVED,
    );
    finite_date(arguments.month.datum(), "month");
    let most = arguments.max_jobs.get();
    if !most.is_some_and(|most| (1..=MOST_BY_FILTER).contains(&most)) {
        invalid(
            format!(
                "max_jobs must be from 1 to {MOST_BY_FILTER}, not {}",
                most.map_or("null".into(), |most| most.to_string())
            ),
            Some("Call again for the next ones: each call retries the oldest that match."),
        );
    }
    materialize(fcinfo);
    let owner = acting_on(&caller);
    let section = Section::as_owner(fcinfo);
    let chosen = section
        .run(
            &RETRY_CHOSEN,
            parameters! {
                owner,
                queue: arguments.queue.datum(),
                task: arguments.task.datum(),
                month: arguments.month.datum(),
                error: arguments.error.datum(),
                max_jobs: arguments.max_jobs.datum(),
            },
        )
        .datum(0, 0);
    let retried = chosen.map_or_else(Vec::new, |ids| retry(&section, ids, owner));
    drop(section);
    return_ids(fcinfo, &retried);
    Datum::from(0)
});

// jobs_reschedule(ids, run_at) -> (id, due) of each job moved
entry!(jobs_reschedule, |fcinfo, arguments| {
    let caller = Caller::current();
    let (ids, _) = job_ids(arguments.ids, None);
    let run_at = arguments.run_at.datum();
    if let Some(refusal) = run_at.and_then(run_at_refused) {
        invalid(refusal, Some("Leave it out (null) for now."));
    }
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    let moved = section.run(
        &RESCHEDULE,
        parameters! { ids: Some(ids), owner: acting_on(&caller), run_at },
    );
    // Due earlier, a job's queue's claims start below it; due now, its sleeping workers wake.
    let jobs: Vec<(i64, pg_sys::Oid, String)> = (0..moved.len())
        .filter_map(|row| placed(&moved, row, [0, 2, 3, 4, 1]))
        .collect();
    wake_placed(&jobs);
    let due: Vec<(Datum, Datum)> = (0..moved.len())
        .filter_map(|row| Some((moved.datum(row, 0)?, moved.datum(row, 1)?)))
        .collect();
    drop(section);
    for (id, at) in due {
        return_row(fcinfo, &[id, at], &[false, false]);
    }
    Datum::from(0)
});

// jobs_delete(ids) -> the ids deleted
entry!(jobs_delete, |fcinfo, arguments| {
    let caller = Caller::current();
    let (ids, _) = job_ids(arguments.ids, None);
    materialize(fcinfo);
    let owner = acting_on(&caller);
    let section = Section::as_owner(fcinfo);
    let chosen = section.run(&DELETABLE, parameters! { ids: Some(ids), owner });
    let mut deleted: Vec<i64> = Vec::new();
    if let Some(chosen_ids) = chosen.datum(0, 0) {
        // Ended as an abort ends them, so that the jobs that depend on them follow their rule
        // and waiters wake; then forgotten.
        let aborted = abort_waiting(&section, chosen_ids, owner, None);
        deleted = (0..aborted.len())
            .filter_map(|row| aborted.get(row, 0))
            .collect();
        deleted.sort_unstable();
        section.run(
            &FORGET_DELETED,
            parameters! {
                aborted: Some(int8_array(deleted.iter().copied())),
                chosen_ids: Some(chosen_ids),
                chosen_owners: chosen.datum(0, 1),
                chosen_keys: chosen.datum(0, 2),
            },
        );
    }
    drop(section);
    return_ids(fcinfo, &deleted);
    Datum::from(0)
});

// jobs_dead_letter(queue, dead_letter_queue)
entry!(jobs_dead_letter, |fcinfo, arguments| {
    let caller = Caller::current();
    let queue = callers_queue(
        arguments.queue,
        "jobs_dead_letter('emails', 'emails.failed')",
        RESERVED,
    );
    let dead_letter_queue = arguments.dead_letter_queue.get();
    match dead_letter_queue.as_deref() {
        Some("") => invalid("dead_letter_queue must not be empty", None),
        Some(to) if to.len() > QUEUE_BYTES => queue_too_long("dead_letter_queue", to).raise(None),
        Some(to) if to == queue => invalid(
            format!("queue {queue} cannot be its own dead-letter queue"),
            Some("A failed job is retried in its queue by max_attempts; name another queue."),
        ),
        Some(to) if super::queue::is_reserved_queue(to) => invalid(
            format!("dead_letter_queue {to} is the extension's"),
            Some("Name a queue of your own, for example emails.failed."),
        ),
        _ => {}
    }
    let section = Section::as_owner(fcinfo);
    let identity = Some(Datum::from(caller.identity));
    match dead_letter_queue {
        Some(to) => section.run(
            &SET_DEAD_LETTER,
            parameters! {
                owner: identity,
                queue: queue.into_datum(),
                dead_letter_queue: to.into_datum(),
                set_by: Some(Datum::from(caller.role)),
            },
        ),
        None => section.run(
            &REMOVE_DEAD_LETTER,
            parameters! { owner: identity, queue: queue.into_datum() },
        ),
    };
    Datum::from(0)
});
