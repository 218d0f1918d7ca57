//! A batch job's dependencies (`job_dependencies`, sql/030_queue.sql): the check that a replace closes
//! no cycle, the release of a completed job's dependents, and jobs made due with their agents
//! woken. Statements in `batch_waits.sql`.

use pgrx::pg_sys::Datum;
use pgrx::prelude::*;

use super::batch::tally;
use super::call::{invalid, refuse_with_detail, Planning, Section, Statement};
use super::datum::int8_array;
use super::dependencies::released_dependents;
use crate::{named_statements, parameters};

named_statements!(include_str!("batch_waits.sql"));

/// The jobs found by their ids, a probe each (see batch.rs's TALLY).
const fn probes(name: &'static str) -> Statement {
    Statement::new(STATEMENTS, name, Planning::Probes)
}

static UPSTREAM: Statement = statement("upstream");
static STEP_BACK: Statement = statement("step_back");
static UNWAITED: Statement = probes("unwaited");
static LOCK_WAITING: Statement = probes("lock_waiting");
static DUE_NOW: Statement = probes("due_now");
static WAKE: Statement = probes("wake");

/// The most jobs a replace's cycle check follows upstream of its new dependencies.
const UPSTREAM_LIMIT: usize = 10_000;

/// Refuses to let the waiting job `replaced` wait for `waiting_for` if one of them waits, through
/// job_dependencies, for it. A lattice of 21 levels, each job waiting for both of the level below,
/// took 15 s when every path was followed, twice that with each level more; each job upstream is
/// visited once now. Past UPSTREAM_LIMIT jobs it stops.
pub(super) fn check_cycle(section: &Section, replaced: i64, waiting_for: &[i64]) {
    if waiting_for.is_empty() {
        return;
    }
    let reached: Vec<i64> = section
        .run(
            &UPSTREAM,
            parameters! {
                ids: Some(int8_array(waiting_for.iter().copied())),
                at_most: Some(Datum::from(UPSTREAM_LIMIT as i32 + 1)),
            },
        )
        .get(0, 0)
        .unwrap_or_default();
    if reached.contains(&replaced) {
        // A path back from it to a new dependency: every job reached but those given was reached
        // from one reached before it, so each step back finds one.
        let mut path = vec![replaced];
        while !waiting_for.contains(&path[0]) && path.len() <= reached.len() {
            let step = section.run(
                &STEP_BACK,
                parameters! {
                    job: Some(Datum::from(path[0])),
                    reached: Some(int8_array(reached.iter().copied())),
                    path: Some(int8_array(path.iter().copied())),
                },
            );
            let Some(step) = step.get::<i64>(0, 0) else {
                break;
            };
            path.insert(0, step);
        }
        let cycle: Vec<String> = std::iter::once(replaced)
            .chain(path)
            .map(|job| job.to_string())
            .collect();
        invalid(
            format!("dependency cycle: job {replaced} would wait for itself ({})", cycle.join(" → ")),
            Some("The job with this command is still waiting; post it without the dependency that leads back to it."),
        );
    }
    if reached.len() > UPSTREAM_LIMIT {
        refuse_with_detail(
            PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!("job {replaced} would wait, through its dependencies, for more than {UPSTREAM_LIMIT} waiting jobs"),
            Some("Replacing a waiting job checks every job it would come to wait for, to refuse a dependency cycle.".into()),
            Some("Cancel the waiting job and post the command again (a new job cannot close a cycle), or depend on fewer jobs."),
        );
    }
}

/// Dependents of jobs `completed` (an array): their waits on them go, and a job with no wait left
/// is due (at the time it was posted for, if later). In the completing transaction, as a queue
/// job's (src/api/dependencies.rs).
pub(super) fn release_dependents(section: &Section, completed: Datum) {
    let Some(waited) = released_dependents(section, completed) else {
        return;
    };
    let unwaited = section.run(&UNWAITED, parameters! { ids: Some(waited) });
    let freed: Vec<i64> = unwaited.get(0, 0).unwrap_or_default();
    if !freed.is_empty() {
        make_due(section, unwaited.datum(0, 0).expect("an array"));
    }
}

/// Jobs `ids` (an array) that still wait to run wait for nothing any more: locked, their counts
/// moved, due now or at the time they were posted for, and their agents woken.
pub(super) fn make_due(section: &Section, ids: Datum) {
    let ids_given = Some(ids);
    section.run(&LOCK_WAITING, parameters! { ids: ids_given });
    tally(section, ids, -1, false);
    section.run(&DUE_NOW, parameters! { ids: ids_given });
    tally(section, ids, 1, false);
    wake(section, ids);
}

/// Wakes the agents of the queues of jobs `ids` (an array), pending again.
pub(super) fn wake(section: &Section, ids: Datum) {
    section.run(&WAKE, parameters! { ids: Some(ids) });
}
