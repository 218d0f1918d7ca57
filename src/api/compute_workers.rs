//! A compute worker's calls (`sql/083_compute_work.sql`) but its fetch and its results: its
//! registration and its groups (register, join, leave), and what it says of a task it holds
//! (progress, return, reject). Statements in `compute_workers.sql`.

use pgrx::pg_sys::{
    self, Datum, FLOAT8OID, INT4ARRAYOID, INT4OID, INT8OID, JSONBOID, OIDOID, REGROLEOID, TEXTOID,
    UUIDOID,
};
use pgrx::prelude::*;
use pgrx::IntoDatum;

use super::call::{
    argument, given_argument, invalid, refuse, value, Caller, Section, Statement,
};
use super::compute_deploy::capability_bits;
use super::compute_settings::join_check;
use super::datum::output;
use crate::{entry, named_statements};

named_statements!(include_str!("compute_workers.sql"));

static REGISTER: Statement = statement("register", &[OIDOID, OIDOID, TEXTOID]);
static RUN_INFO: Statement = statement(
    "run_info",
    &[
        UUIDOID, OIDOID, INT4OID, JSONBOID, FLOAT8OID, FLOAT8OID, FLOAT8OID, JSONBOID,
    ],
);
static TASK_INFO: Statement = statement("task_info", &[UUIDOID, OIDOID]);
static WORKER_OF: Statement = statement("worker_of", &[OIDOID]);
static JOIN: Statement = statement("join", &[INT8OID, UUIDOID, OIDOID]);
static LEAVE: Statement = statement("leave", &[UUIDOID, UUIDOID]);
static PROGRESS: Statement = statement("progress", &[OIDOID, UUIDOID, INT4ARRAYOID]);
static HELD_TASK: Statement = statement("held_task", &[OIDOID, UUIDOID, INT4ARRAYOID]);
static GIVE_BACK: Statement = statement("give_back", &[OIDOID, UUIDOID, INT4ARRAYOID]);
static COUNT_RETURNS: Statement = statement("count_returns", &[INT8OID, INT4OID]);
static REJECT: Statement = statement(
    "reject",
    &[INT8OID, INT4OID, UUIDOID, TEXTOID, TEXTOID, INT4OID],
);

/// The worker the caller's role registered as: its opaque id and its owner; a role that
/// registered none is told to.
pub(super) fn worker_of(section: &Section, caller: &Caller) -> (Datum, Datum) {
    let worker = section.run(&WORKER_OF, &[Some(Datum::from(caller.role))]);
    match (worker.datum(0, 0), worker.datum(0, 1)) {
        (Some(id), Some(owner)) => (id, owner),
        _ => refuse(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "role {} is not a registered worker",
                output(Datum::from(caller.role), REGROLEOID)
            ),
            Some("Call compute_worker_register as this role first."),
        ),
    }
}

// compute_worker_register(label, capabilities, worktimes, cpu_cores, gpu_cores, max_sandboxes,
// run_info): the calling role as a worker of its identity, or its registration renewed; its
// opaque id.
entry!(
    compute_worker_register,
    pg_finfo_compute_worker_register,
    |fcinfo| {
        let caller = Caller::current();
        let section = Section::as_owner(fcinfo);
        let capabilities = value::<pgrx::JsonB>(fcinfo, 1).map(|names| names.0);
        let bits = Some(Datum::from(capability_bits(capabilities.as_ref())));
        if value::<pgrx::JsonB>(fcinfo, 2).is_some_and(|worktimes| !worktimes.0.is_object()) {
            invalid(
                "worktimes must be an object of worktime names and versions",
                Some("For example {\"map-basic\": \"1.4.2\"}."),
            );
        }
        // NaN is in no range (it sorts above every number in SQL), and a group's limits add these up.
        if (3..6).any(|n| value::<f64>(fcinfo, n).is_some_and(|x| !(0.0..=1e6).contains(&x))) {
            invalid(
                "cpu_cores, gpu_cores and max_sandboxes must be numbers from 0 to 1e6",
                Some("NaN and Infinity are not counts of cores."),
            );
        }
        let identity = Some(Datum::from(caller.identity));
        let worker = section
            .run(
                &REGISTER,
                &[
                    identity,
                    Some(Datum::from(caller.role)),
                    argument(fcinfo, 0),
                ],
            )
            .datum(0, 0);
        section.run(
            &RUN_INFO,
            &[
                worker,
                identity,
                bits,
                argument(fcinfo, 2),
                argument(fcinfo, 3),
                argument(fcinfo, 4),
                argument(fcinfo, 5),
                argument(fcinfo, 6),
            ],
        );
        section.run(&TASK_INFO, &[worker, identity]);
        section.keep(worker.expect("the worker's opaque id"), UUIDOID)
    }
);

// compute_worker_join(group_opaque_id, join_key, secret): the calling worker in the group, with
// its join credentials (28P01 if wrong, the same for a group that does not exist); the group's id.
entry!(
    compute_worker_join,
    pg_finfo_compute_worker_join,
    |fcinfo| {
        let caller = Caller::current();
        let section = Section::as_owner(fcinfo);
        let (worker, owner) = worker_of(&section, &caller);
        let group = argument(fcinfo, 0);
        let Some(group_id) = join_check(
            &section,
            caller.identity,
            group,
            argument(fcinfo, 1),
            argument(fcinfo, 2),
        ) else {
            refuse(
            PgSqlErrorCode::ERRCODE_INVALID_PASSWORD,
            format!(
                "wrong join key or secret for compute group {}",
                group.map_or_else(String::new, |group| output(group, UUIDOID))
            ),
            Some("The group's owner gives out its join key and secret (compute_group_set_secret)."),
        )
        };
        section.run(
            &JOIN,
            &[Some(Datum::from(group_id)), Some(worker), Some(owner)],
        );
        Datum::from(group_id)
    }
);

// compute_worker_leave(group_opaque_id): the calling worker out of the group; 1, or 0 if it was
// not in it.
entry!(
    compute_worker_leave,
    pg_finfo_compute_worker_leave,
    |fcinfo| {
        let caller = Caller::current();
        let section = Section::as_owner(fcinfo);
        let (worker, _) = worker_of(&section, &caller);
        Datum::from(
            section
                .run(&LEAVE, &[Some(worker), argument(fcinfo, 0)])
                .len() as i32,
        )
    }
);

// compute_progress(task_token, slice_numbers): the caller's copies of the task (those slices, or
// every one) at work now; how many.
entry!(compute_progress, pg_finfo_compute_progress, |fcinfo| {
    let caller = Caller::current();
    let token = Some(given_argument(fcinfo, 0, "task_token"));
    let section = Section::as_owner(fcinfo);
    let role = Some(Datum::from(caller.role));
    Datum::from(
        section
            .run(&PROGRESS, &[role, token, argument(fcinfo, 1)])
            .len() as i32,
    )
});

/// Gives back the caller's copies of task `token` (`slices`, or every one) unworked, to be sent
/// to someone else: counted in the job's return_count, or, with a `reason` (a rejection, of every
/// copy), recorded, and the worker gets none of the job's slices again. How many went back.
fn give_back(
    fcinfo: pg_sys::FunctionCallInfo,
    slices: Option<Datum>,
    reason: Option<(Datum, Option<Datum>, Option<Datum>)>,
) -> Datum {
    let caller = Caller::current();
    let token = Some(given_argument(fcinfo, 0, "task_token"));
    let section = Section::as_owner(fcinfo);
    let role = Some(Datum::from(caller.role));
    let held = section.run(&HELD_TASK, &[role, token, slices]);
    let Some(job) = held.datum(0, 0) else {
        return Datum::from(0);
    };
    let given_back = section.run(&GIVE_BACK, &[role, token, slices]).len() as i32;
    match reason {
        None => section.run(&COUNT_RETURNS, &[Some(job), Some(Datum::from(given_back))]),
        Some((reason, message, retries)) => section.run(
            &REJECT,
            &[
                Some(job),
                held.datum(0, 1),
                held.datum(0, 2),
                Some(reason),
                message,
                retries,
            ],
        ),
    };
    Datum::from(given_back)
}

// compute_return(task_token, slice_numbers)
entry!(compute_return, pg_finfo_compute_return, |fcinfo| {
    give_back(fcinfo, argument(fcinfo, 1), None)
});

// compute_reject(task_token, reason, message, retries): reason EWORKREJECT when null.
entry!(compute_reject, pg_finfo_compute_reject, |fcinfo| {
    let reason = argument(fcinfo, 1).unwrap_or_else(|| "EWORKREJECT".into_datum().unwrap());
    give_back(
        fcinfo,
        None,
        Some((reason, argument(fcinfo, 2), argument(fcinfo, 3))),
    )
});
