//! Firing the cron schedules: the launcher's round fires each slot a little ahead of it, its job
//! due at the slot (SCHEDULES), and a regression test calls `_fire_schedules` at a chosen time.
//! Statements in `schedule_firing.sql`.
//!
//! The jobs of all due schedules of one owner are added in one call, which is what lets thousands
//! of schedules fire within their second. Nothing one schedule holds stops the others: if the
//! slots of all cannot be computed together, each is computed alone, and if one owner's adds
//! fail, its schedules are fired one by one; a schedule that fails records its error in
//! `last_error` and is tried again at its next slot.

use pgrx::pg_sys::{self, Datum, TEXTOID, TIMESTAMPTZOID};
use pgrx::IntoDatum;

use super::call::{in_subtransaction, Section, Statement};
use super::datum::{array, elements, int8_array, seconds};
use super::queue::{add, check_all, Spec};
use super::services::{wished, Service};
use crate::{entry, gucs, named_statements, parameters};

named_statements!(include_str!("schedule_firing.sql"));

static DUE: Statement = statement("due");
static NEXT_SLOT: Statement = statement("next_slot");
static DUE_IDS: Statement = statement("due_ids");
static PASSED: Statement = statement("passed");

/// A due schedule: its latest slot, and the jobs of the slots its rule fires.
struct Due {
    schedule: i64,
    owner: pg_sys::Oid,
    latest_slot: Option<Datum>,
    specs: Vec<Spec>,
}

/// The due schedules at `at` (all, or only `one`), locked.
fn due(section: &Section, at: Datum, grace: Datum, one: Option<i64>) -> Vec<Due> {
    let rows = section.run(
        &DUE,
        parameters! { at: Some(at), grace: Some(grace), only_id: one.into_datum() },
    );
    (0..rows.len())
        .map(|row| Due {
            schedule: rows.get(row, 0).expect("a schedule's id"),
            owner: rows.get(row, 1).expect("a schedule's owner"),
            latest_slot: rows.datum(row, 2),
            specs: rows.datum(row, 3).map_or_else(Vec::new, |specs| {
                elements(specs)
                    .into_iter()
                    .map(|spec| spec.map_or(Spec::empty(), Spec::of_record))
                    .collect()
            }),
        })
        .collect()
}

/// Adds the jobs of `firing` (schedules of one owner): each schedule's last job (its latest
/// slot's), to be recorded with its slots.
fn fire(section: &Section, owner: pg_sys::Oid, firing: &[&Due]) -> Vec<(i64, i64)> {
    let specs: Vec<Spec> = firing
        .iter()
        .flat_map(|due| due.specs.iter().copied())
        .collect();
    check_all(&specs, true, true);
    let jobs = add(section, owner, &specs);
    let schedules = firing
        .iter()
        .flat_map(|due| std::iter::repeat_n(due.schedule, due.specs.len()));
    let mut last: Vec<(i64, i64)> = Vec::new();
    for (schedule, job) in schedules.zip(jobs) {
        match last.last_mut() {
            Some((previous, latest)) if *previous == schedule => *latest = job,
            _ => last.push((schedule, job)),
        }
    }
    last
}

/// How far ahead of its slot the launcher fires a schedule: the slot's job is added this long
/// before the slot and due at it (its run_at), so that it is committed and claimable when the slot
/// comes, and the wake-up of jobs due later (due.rs) wakes its queue's workers then. Firing at the
/// slot, a per-second schedule's job was visible only once the round had added the jobs of every
/// schedule due and committed: 1,000 of them, 65 ms after the slot (p50), 102 ms (p99).
const AHEAD_MICROS: i64 = 250_000;

/// The schedules: each fires its slots due by AHEAD_MICROS from now; wakes the launcher that long
/// before the next slot.
pub(crate) static SCHEDULES: Service = Service {
    name: "schedules",
    work: |section, at| {
        fire_due(section, Datum::from(at.value() as i64 + AHEAD_MICROS));
    },
    next: |section, _| {
        wished(section, &NEXT_SLOT, &[]).map(|slot| Datum::from(slot.value() as i64 - AHEAD_MICROS))
    },
};

entry!(_fire_schedules, |fcinfo, arguments| {
    let at = arguments.at.given();
    Datum::from(fire_due(&Section::as_current_user(), at) as i32)
});

/// Fires every schedule due at `at`; returns how many jobs it added.
fn fire_due(section: &Section, at: Datum) -> usize {
    let grace = seconds(gucs::REFRESH_INTERVAL.get());
    let mut failed: Vec<(i64, String)> = Vec::new();
    let dues = in_subtransaction(|| due(section, at, grace, None)).unwrap_or_else(|_| {
        let ids = section.run(&DUE_IDS, parameters! { at: Some(at) });
        let ids: Vec<i64> = (0..ids.len()).filter_map(|row| ids.get(row, 0)).collect();
        let mut dues = Vec::new();
        for id in ids {
            match in_subtransaction(|| due(section, at, grace, Some(id))) {
                Ok(one) => dues.extend(one),
                Err(failure) => failed.push((id, failure.message)),
            }
        }
        dues
    });
    let mut last_jobs: Vec<(i64, i64)> = Vec::new();
    let mut owners: Vec<pg_sys::Oid> = Vec::new();
    for due in &dues {
        if !owners.contains(&due.owner) {
            owners.push(due.owner);
        }
    }
    for owner in owners {
        let firing: Vec<&Due> = dues
            .iter()
            .filter(|due| due.owner == owner && !due.specs.is_empty())
            .collect();
        if firing.is_empty() {
            continue;
        }
        match in_subtransaction(|| fire(section, owner, &firing)) {
            Ok(last) => last_jobs.extend(last),
            Err(_) => {
                for due in firing {
                    match in_subtransaction(|| fire(section, owner, &[due])) {
                        Ok(last) => last_jobs.extend(last),
                        Err(failure) => failed.push((due.schedule, failure.message)),
                    }
                }
            }
        }
    }
    let fired: usize = dues
        .iter()
        .filter(|due| !failed.iter().any(|(id, _)| *id == due.schedule))
        .map(|due| due.specs.len())
        .sum();
    // Every due schedule passes its slots, and so do those whose slots could not be computed.
    let mut passed: Vec<(i64, Option<Datum>)> = dues
        .iter()
        .map(|due| (due.schedule, due.latest_slot))
        .collect();
    passed.extend(
        failed
            .iter()
            .filter(|(id, _)| !dues.iter().any(|due| due.schedule == *id))
            .map(|(id, _)| (*id, None)),
    );
    section.run(
        &PASSED,
        parameters! {
            at: Some(at),
            grace: Some(grace),
            passed_ids: Some(int8_array(passed.iter().map(|(id, _)| *id))),
            latest_slots: Some(array(
                TIMESTAMPTZOID,
                &passed.iter().map(|(_, slot)| *slot).collect::<Vec<_>>(),
            )),
            failed_ids: Some(int8_array(failed.iter().map(|(id, _)| *id))),
            errors: Some(array(
                TEXTOID,
                &failed
                    .iter()
                    .map(|(_, message)| message.as_str().into_datum())
                    .collect::<Vec<_>>(),
            )),
            fired_ids: Some(int8_array(last_jobs.iter().map(|pair| pair.0))),
            last_jobs: Some(int8_array(last_jobs.iter().map(|pair| pair.1))),
        },
    );
    fired
}
