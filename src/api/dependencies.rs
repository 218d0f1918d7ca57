//! Queue jobs that wait for jobs (`job_dependencies`, sql/030_queue.sql): what an add says a
//! job depends on, the release of its dependents when a job completes, `jobs_unblock` and
//! `jobs_dependency_results`. The batch store's dependencies (src/api/batch_waits.rs) keep their
//! waits in the same table and are released by the same statements (`released_dependents`).
//! Statements in `dependencies.sql`.
//!
//! A job depends only on jobs that existed before the call that adds it (by id) or on earlier
//! jobs of the same call (by position), so no add can close a cycle.

use std::collections::{HashMap, HashSet};

use pgrx::pg_sys::{Datum, Oid, BOOLOID, INT8OID};
use pgrx::prelude::*;

use super::call::{
    invalid, materialize, refuse, required, Caller, Planning, Rows, Section, Statement,
};
use super::datum::{array, int8_array};
use super::queue::{abort_waiting, acting_on, lease_error, missing_job, placed, wake_placed};
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("dependencies.sql"));

/// The jobs found by their ids, a probe each (see call.rs's Planning).
const fn probes(name: &'static str) -> Statement {
    Statement::new(STATEMENTS, name, Planning::Probes)
}

static KEY_HOLDERS: Statement = statement("key_holders");
static MARK_WAITED_ON: Statement = probes("mark_waited_on");
static FINISHED_DEPENDENCIES: Statement = statement("finished_dependencies");
static HOLD: Statement = probes("hold");
static RELEASE_WAITS: Statement = statement("release_waits");
static TOUCH_WAITING: Statement = probes("touch_waiting");
static MAKE_DUE: Statement = probes("make_due");
static FORGET_WAITS: Statement = statement("forget_waits");
static DEPENDENTS: Statement = statement("dependents");
static TO_SKIP: Statement = statement("to_skip");
static UNBLOCK: Statement = statement("unblock");
static LIVE_QUEUE_JOB: Statement = statement("live_queue_job");
static DEPENDENCY_RESULTS: Statement = statement("dependency_results");

/// The most jobs one job may depend on.
const MOST: usize = 1000;

/// What one job to add depends on: jobs that exist, by id (`ids`) or by the idempotency key
/// they hold (`keys`), and jobs of the same call before it (`after`, positions from 1); `skip`:
/// it ends (aborted) rather than waits, blocked, when one of them does not complete.
#[derive(Default)]
pub(crate) struct Needs {
    pub(crate) ids: Vec<i64>,
    pub(crate) keys: Vec<String>,
    pub(crate) after: Vec<i64>,
    pub(crate) skip: bool,
}

/// What jobs_add's on_dependency_failure may say: block (the default) or skip.
pub(crate) fn skips(on_dependency_failure: Option<String>) -> bool {
    match on_dependency_failure.as_deref() {
        None | Some("block") => false,
        Some("skip") => true,
        Some(other) => invalid(
            format!("on_dependency_failure must be block or skip, not {other}"),
            Some("block: the job waits, blocked, until unblocked or aborted; skip: it ends as aborted."),
        ),
    }
}

impl Needs {
    pub(crate) fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.keys.is_empty() && self.after.is_empty()
    }

    /// Refuses what the job at `position` (from 1) of a call cannot depend on; `keyed`: it has
    /// an idempotency key.
    pub(crate) fn check(&self, position: usize, keyed: bool, in_batch: bool) {
        if self.is_empty() {
            return;
        }
        let of_batch = if in_batch {
            format!(" (job {position} of the batch)")
        } else {
            String::new()
        };
        if keyed {
            invalid(
                format!("a job with dependencies cannot have a key{of_batch}"),
                Some("Add it without a key: a key's holder may be a job that waits for other jobs already."),
            );
        }
        if self.ids.len() + self.keys.len() + self.after.len() > MOST {
            invalid(
                format!("a job may depend on at most {MOST} jobs{of_batch}"),
                Some("Let a join step depend on fewer jobs, or add a step between."),
            );
        }
        if let Some(bad) = self.after.iter().find(|&&p| p < 1 || p >= position as i64) {
            invalid(
                format!("after must name earlier jobs of the batch, from 1, not {bad}{of_batch}"),
                Some("\"after\": [1, 2] makes a job wait for the first two jobs of the same call."),
            );
        }
    }
}

/// After an add: jobs `ids` (in the order of `needs`) depend on what they need. The live
/// dependencies are marked (see mark_waited_on) before the finished ones are read, so one that
/// finishes meanwhile is either read as finished or releases these jobs itself.
pub(crate) fn hold(section: &Section, owner: Oid, ids: &[i64], needs: &[Needs]) {
    let new: HashSet<i64> = ids.iter().copied().collect();
    let holders = key_holders(section, owner, needs);
    // (job, what it depends on, whether it is skipped if that does not complete)
    let mut pairs: Vec<(i64, i64, bool)> = Vec::new();
    for (n, need) in needs.iter().enumerate() {
        let job = ids[n];
        pairs.extend(need.keys.iter().map(|key| (job, holders[key], need.skip)));
        if let Some(own) = need.ids.iter().find(|id| new.contains(id)) {
            invalid(
                format!("job {own} is added by this same call: name it by its place, with after"),
                None,
            );
        }
        pairs.extend(need.ids.iter().map(|&on| (job, on, need.skip)));
        pairs.extend(
            need.after
                .iter()
                .map(|&p| (job, ids[p as usize - 1], need.skip)),
        );
    }
    if pairs.is_empty() {
        return;
    }
    let mut on: Vec<i64> = pairs.iter().map(|&(_, on, _)| on).collect();
    on.sort_unstable();
    on.dedup();
    let owner = Some(Datum::from(owner));
    let marked = section.run(
        &MARK_WAITED_ON,
        parameters! { ids: Some(int8_array(on.iter().copied())), owner },
    );
    let live: HashSet<i64> = (0..marked.len())
        .filter_map(|row| marked.get(row, 0))
        .collect();
    let rest: Vec<i64> = on.into_iter().filter(|id| !live.contains(id)).collect();
    let mut completed = HashSet::new();
    if !rest.is_empty() {
        let finished = section.run(
            &FINISHED_DEPENDENCIES,
            parameters! { ids: Some(int8_array(rest.iter().copied())), owner },
        );
        let mut known = HashSet::new();
        for row in 0..finished.len() {
            let Some(id) = finished.get::<i64>(row, 0) else {
                continue;
            };
            known.insert(id);
            if finished.get::<bool>(row, 1) == Some(true) {
                completed.insert(id);
            }
        }
        // Said alike of a job that does not exist and of another owner's.
        if let Some(stranger) = rest.iter().find(|id| !known.contains(id)) {
            refuse(
                PgSqlErrorCode::ERRCODE_FOREIGN_KEY_VIOLATION,
                format!("job {stranger} is not one of your queue jobs"),
                Some("A job can depend only on its owner's jobs in the owner's queues (not SQL or batch jobs), live or kept in job_history."),
            );
        }
    }
    let waits: Vec<Option<Datum>> = pairs
        .iter()
        .map(|(_, on, _)| Some(Datum::from(!completed.contains(on))))
        .collect();
    let skip: Vec<Option<Datum>> = pairs
        .iter()
        .map(|&(_, _, skip)| Some(Datum::from(skip)))
        .collect();
    section.run(
        &HOLD,
        parameters! {
            job_ids: Some(int8_array(pairs.iter().map(|&(job, ..)| job))),
            on_jobs: Some(int8_array(pairs.iter().map(|&(_, on, _)| on))),
            owner,
            waits: Some(array(BOOLOID, &waits)),
            skips: Some(array(BOOLOID, &skip)),
        },
    );
    // Those to be skipped for a dependency that has ended without completing end now.
    let ended: Vec<i64> = rest
        .into_iter()
        .filter(|id| !completed.contains(id))
        .collect();
    if needs.iter().any(|need| need.skip) && !ended.is_empty() {
        skip_dependents(section, &ended);
    }
}

/// The jobs that wait for jobs `failed` (which ended without completing) and were added to be
/// skipped then: ended as aborted, each with why, which in turn skips or blocks those that wait
/// for them.
fn skip_dependents(section: &Section, failed: &[i64]) {
    let skipped = section.run(
        &TO_SKIP,
        parameters! { failed: Some(int8_array(failed.iter().copied())) },
    );
    if skipped.len() == 0 {
        return;
    }
    let column = |c| {
        (0..skipped.len())
            .map(|row| skipped.datum(row, c))
            .collect::<Vec<_>>()
    };
    abort_waiting(
        section,
        array(INT8OID, &column(0)),
        None,
        Some(array(pg_sys::TEXTOID, &column(1))),
    );
}

/// The job each key of `needs` names (a live job or one kept in job_history, whose `skip` key
/// outlives it); a key that names none of the owner's is refused.
fn key_holders(section: &Section, owner: Oid, needs: &[Needs]) -> HashMap<String, i64> {
    let keys: Vec<Option<Datum>> = needs
        .iter()
        .flat_map(|need| need.keys.iter().map(|key| key.as_str().into_datum()))
        .collect();
    if keys.is_empty() {
        return HashMap::new();
    }
    let found = section.run(
        &KEY_HOLDERS,
        parameters! {
            owner: Some(Datum::from(owner)),
            keys: Some(array(pg_sys::TEXTOID, &keys)),
        },
    );
    let holders: HashMap<String, i64> = (0..found.len())
        .filter_map(|row| Some((found.get(row, 0)?, found.get(row, 1)?)))
        .collect();
    if let Some(key) = needs
        .iter()
        .flat_map(|need| &need.keys)
        .find(|key| !holders.contains_key(*key))
    {
        refuse(
            PgSqlErrorCode::ERRCODE_FOREIGN_KEY_VIOLATION,
            format!("no job of yours holds key {key}"),
            Some("A key names the job that holds it now: a replace key is given up when its job finishes."),
        );
    }
    holders
}

/// After a finish, from its rows (columns `[id, completed and waited on, was waiting, ended
/// otherwise and waited on]`): jobs that completed release the jobs waiting for them, those that
/// failed or were aborted wake the jobs_wait callers of the jobs they block, and a job that ended
/// while it waited (aborted) has its waits removed. Nothing runs for a finish of jobs nobody waits
/// for.
pub(crate) fn finished(section: &Section, rows: &Rows, [id, releases, waited, blocks]: [usize; 4]) {
    let where_true = |column| -> Vec<i64> {
        (0..rows.len())
            .filter(|&row| rows.get::<bool>(row, column) == Some(true))
            .filter_map(|row| rows.get(row, id))
            .collect()
    };
    let completed = where_true(releases);
    if !completed.is_empty() {
        release(section, int8_array(completed));
    }
    let failed = where_true(blocks);
    if !failed.is_empty() {
        skip_dependents(section, &failed);
        if super::waits::anyone_waiting() {
            let blocked = section.run(
                &DEPENDENTS,
                parameters! { on_jobs: Some(int8_array(failed)) },
            );
            super::waits::finished((0..blocked.len()).filter_map(|row| blocked.get(row, 0)));
        }
    }
    let ended_waiting = where_true(waited);
    if !ended_waiting.is_empty() {
        section.run(
            &FORGET_WAITS,
            parameters! { job_ids: Some(int8_array(ended_waiting)) },
        );
    }
}

/// The jobs that waited for jobs `completed` (an array) and wait for nothing more: due, and their
/// queues' workers woken. In the completing transaction.
fn release(section: &Section, completed: Datum) {
    let Some(dependents) = released_dependents(section, completed) else {
        return;
    };
    let due = section.run(&MAKE_DUE, parameters! { ids: Some(dependents) });
    made_due(&due);
}

/// The waits on jobs `completed` (an array) removed, and the jobs that had them locked in turn
/// with any other completion of their dependencies (see touch_waiting): those jobs, as an array,
/// or None. For queue and batch jobs alike.
pub(super) fn released_dependents(section: &Section, completed: Datum) -> Option<Datum> {
    let waited = section.run(&RELEASE_WAITS, parameters! { completed: Some(completed) });
    // Columns: every job that waited for them, and those that wait for another job too.
    let any = |column| {
        !waited
            .get::<Vec<i64>>(0, column)
            .unwrap_or_default()
            .is_empty()
    };
    if !any(0) {
        return None;
    }
    if any(1) {
        section.run(&TOUCH_WAITING, parameters! { ids: waited.datum(0, 1) });
    }
    waited.datum(0, 0)
}

/// Jobs made due (MAKE_DUE's or UNBLOCK's rows): their queues' claims start below them, and
/// workers asleep are woken.
fn made_due(due: &Rows) {
    let jobs: Vec<(i64, Oid, String)> = (0..due.len())
        .filter_map(|row| placed(due, row, [0, 1, 2, 3, 4]))
        .collect();
    wake_placed(&jobs);
}

// jobs_unblock(id): the caller's job stops waiting for its dependencies; returns when it is due
// (also for one they released already).
entry!(jobs_unblock, |fcinfo, arguments| {
    let caller = Caller::current();
    let Some(job) = arguments.id.datum() else {
        required("job id")
    };
    let owner = acting_on(&caller);
    let section = Section::as_owner(fcinfo);
    let due = section.run(&UNBLOCK, parameters! { id: Some(job), owner });
    if due.len() == 0 {
        let id = job.value() as i64;
        let live = section.run(&LIVE_QUEUE_JOB, parameters! { id: Some(job), owner });
        if live.len() == 0 {
            missing_job(id);
        }
        // Released by its dependencies already (a completion that committed first).
        if live.get::<bool>(0, 0) == Some(true) {
            return live.datum(0, 1).expect("a job's run_at");
        }
        refuse(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("job {id} does not wait for dependencies"),
            Some("Only a waiting job added with depends_on or after, blocked or not, can be unblocked."),
        );
    }
    made_due(&due);
    due.datum(0, 4).expect("a job's run_at")
});

// jobs_dependency_results(id, token): what the job held with that token depends on, and how
// each ended.
entry!(jobs_dependency_results, |fcinfo, arguments| {
    let caller = Caller::current();
    let (job, token) = (arguments.id.datum(), arguments.token.datum());
    let owner = acting_on(&caller);
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    let results = section.run(
        &DEPENDENCY_RESULTS,
        parameters! { id: job, lease_token: token, owner },
    );
    if results.len() == 0 {
        lease_error(
            &section,
            job.map(|j| j.value() as i64),
            arguments.token.get(),
            owner,
        );
    }
    // A job that depends on nothing has its row of nulls.
    if results.datum(0, 0).is_some() {
        results.return_all(fcinfo);
    }
    Datum::from(0)
});
