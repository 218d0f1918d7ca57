//! Flow control of an identity's queues: when their jobs may be claimed. A pause stops every
//! claim of a queue (the claim statements read `queue_pauses`, `queue.sql`) until the queue is
//! resumed; statements in `flow.sql`.

use pgrx::pg_sys::{Datum, OIDOID, TEXTOID};
use pgrx::IntoDatum;

use super::call::{record, Caller, Section, Statement};
use super::queue::callers_queue;
use crate::{entry, named_statements};

named_statements!(include_str!("flow.sql"));

static PAUSE: Statement = statement("pause", &[OIDOID, TEXTOID, OIDOID]);
static RESUME: Statement = statement("resume", &[OIDOID, TEXTOID]);

/// What a pause refuses of the extension's queues.
const RESERVED: (&str, &str) = (
    "cannot be paused",
    "Stop batch jobs with batch_cancel, SQL jobs with jobs_abort, schedules with jobs_disable_schedule.",
);

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
