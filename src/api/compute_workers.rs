//! A compute worker's calls (`sql/083_compute_work.sql`) but its fetch and its results: its
//! registration and its groups (register, join, leave), and what it says of a task it holds
//! (progress, return, reject). Statements in `compute_workers.sql`.

use pgrx::pg_sys::{self, Datum, REGROLEOID, UUIDOID};
use pgrx::prelude::*;
use pgrx::IntoDatum;

use pg_jobs_core::eth;

use super::arguments::Arg;
use super::call::{
    invalid, record, refuse, Caller, LockTimeout, Section, Statement, CALL_LOCK_WAIT_MS,
};
use super::compute_deploy::capability_bits;
use super::compute_settings::{join_budget, join_check, join_failed};
use super::datum::output;
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("compute_workers.sql"));

static REGISTER: Statement = statement("register");
static RUN_INFO: Statement = statement("run_info");
static TASK_INFO: Statement = statement("task_info");
static WORKER_OF: Statement = statement("worker_of");
static JOIN: Statement = statement("join");
static LEAVE: Statement = statement("leave");
static PRUNE_CHALLENGES: Statement = statement("prune_challenges");
static ISSUE_CHALLENGE: Statement = statement("issue_challenge");
static TAKE_CHALLENGE: Statement = statement("take_challenge");
static GROUP_OF_ADDRESS: Statement = statement("group_of_address");
static PROGRESS: Statement = statement("progress");
static HELD_TASK: Statement = statement("held_task");
static GIVE_BACK: Statement = statement("give_back");
static COUNT_RETURNS: Statement = statement("count_returns");
static REJECT: Statement = statement("reject");

/// The worker the caller's role registered as: its opaque id and its owner; a role that
/// registered none is told to.
pub(super) fn worker_of(section: &Section, caller: &Caller) -> (Datum, Datum) {
    let worker = section.run(
        &WORKER_OF,
        parameters! { role: Some(Datum::from(caller.role)) },
    );
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
entry!(compute_worker_register, |fcinfo, arguments| {
    let caller = Caller::current();
    let section = Section::as_owner(fcinfo);
    let capabilities = arguments.capabilities.get().map(|names| names.0);
    let bits = Some(Datum::from(capability_bits(capabilities.as_ref())));
    if arguments
        .worktimes
        .get()
        .is_some_and(|worktimes| !worktimes.0.is_object())
    {
        invalid(
            "worktimes must be an object of worktime names and versions",
            Some("For example {\"map-basic\": \"1.4.2\"}."),
        );
    }
    // NaN is in no range (it sorts above every number in SQL), and a group's limits add these up.
    let counts = [
        arguments.cpu_cores,
        arguments.gpu_cores,
        arguments.max_sandboxes,
    ];
    if counts
        .iter()
        .any(|count| count.get().is_some_and(|x| !(0.0..=1e6).contains(&x)))
    {
        invalid(
            "cpu_cores, gpu_cores and max_sandboxes must be numbers from 0 to 1e6",
            Some("NaN and Infinity are not counts of cores."),
        );
    }
    let identity = Some(Datum::from(caller.identity));
    let worker = section
        .run(
            &REGISTER,
            parameters! {
                owner: identity,
                role: Some(Datum::from(caller.role)),
                label: arguments.label.datum(),
            },
        )
        .datum(0, 0);
    section.run(
        &RUN_INFO,
        parameters! {
            worker,
            owner: identity,
            capabilities: bits,
            worktimes: arguments.worktimes.datum(),
            cpu_cores: arguments.cpu_cores.datum(),
            gpu_cores: arguments.gpu_cores.datum(),
            max_sandboxes: arguments.max_sandboxes.datum(),
            run_info: arguments.run_info.datum(),
        },
    );
    section.run(&TASK_INFO, parameters! { worker, owner: identity });
    section.keep(worker.expect("the worker's opaque id"), UUIDOID)
});

/// The worker (of `owner`) in group `group_id`, once it has shown it may join; the group's id.
/// Refused (55P03) while the group's owner holds its row, which is not waited for.
fn join(section: &Section, group_id: i64, worker: Datum, owner: Datum) -> Datum {
    let free = section
        .run(
            &JOIN,
            parameters! {
                group_id: Some(Datum::from(group_id)),
                worker: Some(worker),
                owner: Some(owner),
            },
        )
        .get::<bool>(0, 0);
    if free != Some(true) {
        refuse(
            PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
            "the owner of the compute group is changing it",
            Some("Join again once that transaction has ended."),
        );
    }
    Datum::from(group_id)
}

// compute_worker_join(group_opaque_id, join_key, secret): the calling worker in the group, with
// its join credentials (28P01 if wrong, the same for a group that does not exist); the group's id.
entry!(compute_worker_join, |fcinfo, arguments| {
    let caller = Caller::current();
    let section = Section::as_owner(fcinfo);
    let (worker, owner) = worker_of(&section, &caller);
    let group = arguments.group_opaque_id.datum();
    let Some(group_id) = join_check(
        &section,
        caller.identity,
        group,
        arguments.join_key.datum(),
        arguments.secret.datum(),
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
    join(&section, group_id, worker, owner)
});

/// The join challenges a worker may hold at once, each for another group: a worker asking for
/// challenges of made-up group ids cannot fill the table.
const CHALLENGES_HELD: i32 = 16;

// compute_worker_join_challenge(group_opaque_id) -> (challenge, expires_at): a new challenge for
// the calling worker to sign with the key of the group's join address. Issued for any group id,
// as a join secret is checked for any: it says nothing of whether the group exists.
entry!(compute_worker_join_challenge, |fcinfo, arguments| {
    let caller = Caller::current();
    let group = arguments.group_opaque_id.given();
    let section = Section::as_owner(fcinfo);
    let (worker, _) = worker_of(&section, &caller);
    section.run(&PRUNE_CHALLENGES, parameters! { worker: Some(worker) });
    let issued = section.run(
        &ISSUE_CHALLENGE,
        parameters! {
            worker: Some(worker),
            worker_identity: Some(Datum::from(caller.identity)),
            group_opaque_id: Some(group),
            max_challenges: Some(Datum::from(CHALLENGES_HELD)),
        },
    );
    let Some(challenge) = issued.get::<String>(0, 0) else {
        refuse(
            PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!(
                "a worker holds at most {CHALLENGES_HELD} join challenges, each for another group"
            ),
            Some("Use them, or wait until they expire: each is valid for 5 minutes."),
        )
    };
    let expires_at = issued.datum(0, 1);
    drop(section);
    record(fcinfo, &[challenge.into_datum(), expires_at])
});

// compute_worker_join_signed(group_opaque_id, challenge, signature): the calling worker in the
// group, by its challenge signed with the key of the group's join address; the group's id. The
// challenge is used up by the join; a refused join leaves it (the error undoes its use), and a
// wrong signature counts against the identity as a wrong secret does.
entry!(compute_worker_join_signed, |fcinfo, arguments| {
    let caller = Caller::current();
    let group = arguments.group_opaque_id.given();
    let challenge = arguments.challenge.required();
    let signature = arguments.signature.required();
    let signer = eth::signer(challenge.as_bytes(), &signature).unwrap_or_else(|refusal| {
        invalid(
            format!("the signature is malformed: {}", refusal.message()),
            Some("Sign the challenge's text as a wallet signs text (personal_sign, EIP-191)."),
        )
    });
    join_budget(caller.identity);
    let section = Section::as_owner(fcinfo);
    let (worker, owner) = worker_of(&section, &caller);
    let taken = section.run(
        &TAKE_CHALLENGE,
        parameters! {
            worker: Some(worker),
            group_opaque_id: Some(group),
            challenge: challenge.as_str().into_datum(),
        },
    );
    if taken.len() == 0 {
        refuse(
            PgSqlErrorCode::ERRCODE_INVALID_PASSWORD,
            "no such join challenge: it was used, it expired, or it was issued for another group or worker",
            Some("Ask compute_worker_join_challenge for a new one: each is valid once, for 5 minutes."),
        );
    }
    let joined = signer.and_then(|address| {
        section
            .run(
                &GROUP_OF_ADDRESS,
                parameters! {
                    group_opaque_id: Some(group),
                    join_address: eth::address_hex(&address).into_datum(),
                },
            )
            .get::<i64>(0, 0)
    });
    let Some(group_id) = joined else {
        join_failed(caller.identity);
        refuse(
            PgSqlErrorCode::ERRCODE_INVALID_PASSWORD,
            format!(
                "the challenge was not signed by the join address of compute group {}",
                output(group, UUIDOID)
            ),
            Some("Sign with the key of the address the group's owner set as its join_address."),
        )
    };
    join(&section, group_id, worker, owner)
});

// _join_address_ok(address): true for an address a group may have as its join_address, else
// 22023 saying what is wrong with it (a CHECK of compute_groups).
entry!(_join_address_ok, |fcinfo, arguments| {
    let address = arguments.address.required();
    if let Err(refusal) = eth::parse_address(&address) {
        invalid(
            format!("join_address is not an address: {}", refusal.message()),
            Some("For example 0x2c7536E3605D9C16a7a3D7b1898e529396a65c23, as a wallet shows it, or null for none."),
        );
    }
    Datum::from(true)
});

// compute_worker_leave(group_opaque_id): the calling worker out of the group; 1, or 0 if it was
// not in it.
entry!(compute_worker_leave, |fcinfo, arguments| {
    let caller = Caller::current();
    let section = Section::as_owner(fcinfo);
    let (worker, _) = worker_of(&section, &caller);
    Datum::from(
        section
            .run(
                &LEAVE,
                parameters! {
                    worker: Some(worker),
                    group_opaque_id: arguments.group_opaque_id.datum(),
                },
            )
            .len() as i32,
    )
});

// compute_progress(task_token, slice_numbers): the caller's copies of the task (those slices, or
// every one) at work now; how many.
entry!(compute_progress, |fcinfo, arguments| {
    let caller = Caller::current();
    let token = Some(arguments.task_token.given());
    let section = Section::as_owner(fcinfo);
    let role = Some(Datum::from(caller.role));
    Datum::from(
        section
            .run(
                &PROGRESS,
                parameters! {
                    role,
                    task_token: token,
                    slice_numbers: arguments.slice_numbers.datum(),
                },
            )
            .len() as i32,
    )
});

/// Gives back the caller's copies of task `token` (`slices`, or every one) unworked, to be sent
/// to someone else: counted in the job's return_count, or, with a `reason` (a rejection, of every
/// copy), recorded, and the worker gets none of the job's slices again. How many went back.
fn give_back(
    fcinfo: pg_sys::FunctionCallInfo,
    token: Arg<pgrx::Uuid>,
    slices: Option<Datum>,
    reason: Option<(Datum, Option<Datum>, Option<Datum>)>,
) -> Datum {
    let caller = Caller::current();
    let token = Some(token.given());
    let section = Section::as_owner(fcinfo);
    let role = Some(Datum::from(caller.role));
    let held = section.run(
        &HELD_TASK,
        parameters! { role, task_token: token, slice_numbers: slices },
    );
    let Some(job) = held.datum(0, 0) else {
        return Datum::from(0);
    };
    let given_back = section
        .run(
            &GIVE_BACK,
            parameters! { role, task_token: token, slice_numbers: slices },
        )
        .len() as i32;
    match reason {
        None => section.run(
            &COUNT_RETURNS,
            parameters! { job: Some(job), returned: Some(Datum::from(given_back)) },
        ),
        Some((reason, message, retries)) => section.run(
            &REJECT,
            parameters! {
                job: Some(job),
                slice_number: held.datum(0, 1),
                worker: held.datum(0, 2),
                reason: Some(reason),
                message,
                retries,
            },
        ),
    };
    Datum::from(given_back)
}

// compute_return(task_token, slice_numbers)
entry!(compute_return, |fcinfo, arguments| {
    let _bounded = LockTimeout::of(CALL_LOCK_WAIT_MS);
    give_back(
        fcinfo,
        arguments.task_token,
        arguments.slice_numbers.datum(),
        None,
    )
});

// compute_reject(task_token, reason, message, retries): reason EWORKREJECT when null.
entry!(compute_reject, |fcinfo, arguments| {
    let _bounded = LockTimeout::of(CALL_LOCK_WAIT_MS);
    let reason = arguments
        .reason
        .datum()
        .unwrap_or_else(|| "EWORKREJECT".into_datum().unwrap());
    give_back(
        fcinfo,
        arguments.task_token,
        None,
        Some((reason, arguments.message.datum(), arguments.retries.datum())),
    )
});
