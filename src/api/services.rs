//! The launcher's round (`_launcher_tick`): every maintenance service of every domain, each with
//! its work and the time it next wants a round.
//!
//! Each service's work, and its wish, runs on its own, in a subtransaction: an error in one (a
//! lock not had within the launcher's lock_timeout, a broken row) is a WARNING and the others
//! still run, this round and the next. No service waits for a row a member can lock: such rows
//! are taken with SKIP LOCKED and left for a later round.

use pgrx::pg_sys::Datum;
use pgrx::prelude::*;

use super::call::{in_subtransaction, Section, Statement};
use super::{
    batch, compute_fold, due, flow, history, queue, queue_minutes, routines, schedule_firing,
    sql_jobs,
};
use crate::{entry, gucs};

/// A maintenance service of a domain.
pub(crate) struct Service {
    /// As the warnings name it.
    pub name: &'static str,
    /// Its work in a round at a time.
    pub work: fn(&Section, Datum),
    /// When it next wants a round, after one at a time; None when it has nothing waiting.
    pub next: fn(&Section, Datum) -> Option<Datum>,
}

/// For a service that only ever works on the launcher's regular rounds.
pub(crate) fn no_wish(_: &Section, _: Datum) -> Option<Datum> {
    None
}

/// In the order a round runs them.
const SERVICES: [&Service; 12] = [
    &sql_jobs::LOST_RUNS,
    &sql_jobs::OVERDUE_RUNS,
    &queue::EXPIRED_LEASES,
    &due::JOBS_DUE_LATER,
    &flow::KEY_SLOTS,
    &schedule_firing::SCHEDULES,
    &routines::ROUTINES,
    &compute_fold::COMPUTE,
    &sql_jobs::RUN_HISTORY,
    &history::MONTHS,
    &batch::COUNTS,
    // Last: once a minute it reads jobs, a range of blocks a round, which the others should not
    // wait behind.
    &queue_minutes::MINUTES,
];

// One round of the launcher's work at `at`; returns when it wants to be woken next: the earliest
// time a service asks for, at most pg_jobs.refresh_interval after `at`.
entry!(_launcher_tick, |fcinfo, arguments| {
    let at = arguments.at.given();
    let section = Section::as_current_user();
    for service in SERVICES {
        if let Err(problem) = in_subtransaction(|| (service.work)(&section, at)) {
            warning!("pg_jobs launcher: {} failed: {problem}", service.name);
        }
    }
    // A timestamptz is microseconds, passed by value.
    let refresh = at.value() as i64 + i64::from(gucs::REFRESH_INTERVAL.get()) * 1_000_000;
    let next = SERVICES
        .iter()
        .filter_map(|service| {
            in_subtransaction(|| (service.next)(&section, at)).unwrap_or_else(|problem| {
                warning!("pg_jobs launcher: {} failed: {problem}", service.name);
                None
            })
        })
        .map(|wish| wish.value() as i64)
        .fold(refresh, i64::min);
    Datum::from(next)
});

/// A service's wish for its next round, from a statement that answers a time or null.
pub(crate) fn wished(
    section: &Section,
    statement: &'static Statement,
    parameters: &[(&str, Option<Datum>)],
) -> Option<Datum> {
    section.run(statement, parameters).datum(0, 0)
}
