//! What owners set up for the compute scheduler besides jobs (`sql/080_compute_tables.sql`): join
//! secrets and their check, the rows members delete through functions (a table-level DELETE grant
//! would also let them LOCK the table), and the public and shared reads of groups. Statements in
//! `compute_settings.sql`.

use std::sync::atomic::{AtomicU64, Ordering};

use pgrx::pg_sys::{self, Datum, INT8OID, UUIDOID};
use pgrx::prelude::*;

use super::arguments::Arg;
use super::call::{invalid, materialize, refuse, without_nulls, Caller, Section, Statement};
use super::compute_origins::ORIGIN_TYPES;
use super::datum::{output, quote_literal};
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("compute_settings.sql"));

static REMOVE_ORIGIN: Statement = statement("remove_origin");
static REMOVE_WORKER: Statement = statement("remove_worker");
static REMOVE_CONFIG_VALUE: Statement = statement("remove_config_value");
static REMOVE_WORKER_CREDS: Statement = statement("remove_worker_creds");
static REMOVE_APP_CONFIG: Statement = statement("remove_app_config");
static REMOVE_CREDS_LIST: Statement = statement("remove_creds_list");
static REMOVE_CREDENTIAL: Statement = statement("remove_credential");
static REMOVE_NOTIFICATION: Statement = statement("remove_notification");
static REMOVE_DIRECTIVE: Statement = statement("remove_directive");
static OWN_GROUP_LOCKED: Statement = statement("own_group_locked");
static SET_SECRET: Statement = statement("set_secret");
static JOIN_CHECK: Statement = statement("join_check");
static GROUP_PUBLIC: Statement = statement("group_public");
static GROUPS_JOBS_BY_JOB: Statement = statement("groups_jobs_by_job");
static BUDGET_ROW: Statement = statement("budget_row");
static BUDGET_ROOM: Statement = statement("budget_room");
static GRANT_BUDGET: Statement = statement("grant_budget");
static UNBUDGET: Statement = statement("unbudget");
static BUDGETS: Statement = statement("budgets");

/// Runs a delete of the caller's rows (`arguments` besides its identity, `owner`) and returns how
/// many went.
fn remove(
    fcinfo: pg_sys::FunctionCallInfo,
    statement: &'static Statement,
    arguments: &[(&str, Option<Datum>)],
) -> Datum {
    let caller = Caller::current();
    let section = Section::as_owner(fcinfo);
    let mut all = vec![("owner", Some(Datum::from(caller.identity)))];
    all.extend_from_slice(arguments);
    Datum::from(section.run(statement, &all).len() as i32)
}

/// A row of one of the tables members delete by id.
fn remove_by_id(
    fcinfo: pg_sys::FunctionCallInfo,
    id: Arg<i64>,
    statement: &'static Statement,
) -> Datum {
    remove(fcinfo, statement, parameters! { id: Some(id.given()) })
}

// compute_group_remove_origin(group_id, origin, type)
entry!(compute_group_remove_origin, |fcinfo, arguments| {
    let group = Some(arguments.group_id.given());
    let origin = Some(arguments.origin.given());
    let kind = arguments.r#type.get();
    if let Some(kind) = kind.as_deref().filter(|kind| !ORIGIN_TYPES.contains(kind)) {
        invalid(
            format!("unknown origin type {}", quote_literal(kind)),
            Some(&format!(
                "Use one of {}, or null for every type.",
                ORIGIN_TYPES.join(", ")
            )),
        );
    }
    remove(
        fcinfo,
        &REMOVE_ORIGIN,
        parameters! { group_id: group, origin, origin_type: arguments.r#type.datum() },
    )
});

// worker_remove(worker)
entry!(worker_remove, |fcinfo, arguments| remove(
    fcinfo,
    &REMOVE_WORKER,
    parameters! { worker: Some(arguments.worker.given()) }
));

// worker_config_remove(key_path, worker, type)
entry!(worker_config_remove, |fcinfo, arguments| {
    let path = Some(arguments.key_path.given());
    let kind = arguments.r#type.required();
    if kind != "active" && kind != "template" {
        invalid(
            format!("unknown config type {}", quote_literal(&kind)),
            Some("Use active or template."),
        );
    }
    remove(
        fcinfo,
        &REMOVE_CONFIG_VALUE,
        parameters! {
            key_path: path,
            worker: arguments.worker.datum(),
            config_type: arguments.r#type.datum(),
        },
    )
});

// worker_creds_remove(worker, creds_list_id)
entry!(worker_creds_remove, |fcinfo, arguments| {
    let worker = Some(arguments.worker.given());
    let list = Some(arguments.creds_list_id.given());
    remove(
        fcinfo,
        &REMOVE_WORKER_CREDS,
        parameters! { worker, creds_list_id: list },
    )
});

entry!(worker_app_config_remove, |fcinfo, arguments| remove_by_id(
    fcinfo,
    arguments.id,
    &REMOVE_APP_CONFIG
));
entry!(creds_list_remove, |fcinfo, arguments| remove_by_id(
    fcinfo,
    arguments.id,
    &REMOVE_CREDS_LIST
));
entry!(credential_remove, |fcinfo, arguments| remove_by_id(
    fcinfo,
    arguments.id,
    &REMOVE_CREDENTIAL
));
entry!(
    worker_notification_remove,
    |fcinfo, arguments| remove_by_id(fcinfo, arguments.id, &REMOVE_NOTIFICATION)
);
entry!(register_worker_directive_remove, |fcinfo, arguments| {
    remove_by_id(fcinfo, arguments.id, &REMOVE_DIRECTIVE)
});

// compute_group_set_secret(group_opaque_id, secret): only its salted hash is kept; null removes it.
entry!(compute_group_set_secret, |fcinfo, arguments| {
    let caller = Caller::current();
    let group = arguments.group_opaque_id.datum();
    let secret = arguments.secret.get();
    let section = Section::as_owner(fcinfo);
    // Another owner's group gets the same answer as no group, so ids cannot be probed.
    let Some(id) = section
        .run(
            &OWN_GROUP_LOCKED,
            parameters! { owner: Some(Datum::from(caller.identity)), group_opaque_id: group },
        )
        .get::<i64>(0, 0)
    else {
        refuse(
            PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
            format!(
                "compute group {} does not exist",
                group.map_or_else(|| "null".into(), |group| output(group, UUIDOID))
            ),
            None,
        )
    };
    // Anyone may try join secrets, hundreds a second: a short one would be found.
    if let Some(length) = secret
        .as_ref()
        .map(|s| s.chars().count())
        .filter(|&n| n < 16)
    {
        invalid(
            format!("a join secret must be at least 16 characters long, not {length}"),
            Some("Use a random one, such as encode(gen_random_bytes(16), 'hex'); null removes the secret."),
        );
    }
    section.run(
        &SET_SECRET,
        parameters! { group_id: Some(Datum::from(id)), secret: arguments.secret.datum() },
    );
    Datum::from(0)
});

// compute_group_budget(group_id, cpu_time, gpu_time, jobs, in_data_size, out_data_size): more of
// the caller's group's budgets; its budgets as they are then.
entry!(compute_group_budget, |fcinfo, arguments| {
    let caller = Caller::current();
    let group = arguments.group_id.given();
    let amounts = [
        (arguments.cpu_time.name, arguments.cpu_time.get()),
        (arguments.gpu_time.name, arguments.gpu_time.get()),
        (arguments.jobs.name, arguments.jobs.get().map(i64::from)),
        (arguments.in_data_size.name, arguments.in_data_size.get()),
        (arguments.out_data_size.name, arguments.out_data_size.get()),
    ];
    for (name, amount) in amounts {
        if let Some(amount) = amount.filter(|amount| *amount < 0) {
            invalid(
                format!("{name} must not be negative, not {amount}"),
                Some("A grant adds to a budget; null leaves it as it is."),
            );
        }
    }
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    hold_budgets(&section, &caller, group);
    let room = section.run(&BUDGET_ROOM, parameters! { group_id: Some(group) });
    for (column, (name, amount)) in amounts.into_iter().enumerate() {
        let left = room.get::<i64>(0, column).unwrap_or(0);
        if let Some(amount) = amount.filter(|amount| *amount > left) {
            invalid(
                format!("{name} of {amount} would take the budget past its largest amount: {left} more at most"),
                Some("Grant less; compute_group_unbudget makes a budget unlimited."),
            );
        }
    }
    section.run(
        &GRANT_BUDGET,
        parameters! {
            group_id: Some(group),
            cpu_time: arguments.cpu_time.datum(),
            gpu_time: arguments.gpu_time.datum(),
            jobs: arguments.jobs.datum(),
            in_data_size: arguments.in_data_size.datum(),
            out_data_size: arguments.out_data_size.datum(),
        },
    );
    section
        .run(&BUDGETS, parameters! { group_id: Some(group) })
        .return_all(fcinfo);
    Datum::from(0)
});

/// Takes the budgets' row of the caller's group `group` for this transaction (if it has one: a
/// group without is unlimited in every budget), refusing a group that is not the caller's and a
/// row another transaction holds (tried, not waited for: a deployment into the group, or another
/// grant, may hold it in a transaction left open).
fn hold_budgets(section: &Section, caller: &Caller, group: Datum) {
    let row = section.run(
        &BUDGET_ROW,
        parameters! { owner: Some(Datum::from(caller.identity)), group_id: Some(group) },
    );
    // Another owner's group gets the same answer as no group, so ids cannot be probed.
    if row.get::<bool>(0, 0) != Some(true) {
        refuse(
            PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
            format!("compute group {} does not exist", output(group, INT8OID)),
            None,
        );
    }
    if row.get::<bool>(0, 1) == Some(true) && row.get::<bool>(0, 2) != Some(true) {
        refuse(
            PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
            format!(
                "the budgets of compute group {} are held by another transaction",
                output(group, INT8OID)
            ),
            Some("A deployment into the group, or another grant, is under way: try again."),
        );
    }
}

/// The budgets compute_group_unbudget names, as compute_group_budget's arguments do.
const BUDGET_NAMES: [&str; 5] = [
    "cpu_time",
    "gpu_time",
    "jobs",
    "in_data_size",
    "out_data_size",
];

// compute_group_unbudget(group_id, budgets): the caller's group's named budgets unlimited again;
// its budgets as they are then.
entry!(compute_group_unbudget, |fcinfo, arguments| {
    let caller = Caller::current();
    let group = arguments.group_id.given();
    let names = without_nulls(arguments.budgets.get(), "budgets");
    const HINT: &str =
        "Name one or more of cpu_time, gpu_time, jobs, in_data_size and out_data_size.";
    if names.is_empty() {
        invalid("budgets must name at least one budget", Some(HINT));
    }
    if let Some(unknown) = names
        .iter()
        .find(|name| !BUDGET_NAMES.contains(&name.as_str()))
    {
        invalid(
            format!("unknown budget {}", quote_literal(unknown)),
            Some(HINT),
        );
    }
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    hold_budgets(&section, &caller, group);
    section.run(
        &UNBUDGET,
        parameters! { group_id: Some(group), budgets: arguments.budgets.datum() },
    );
    section
        .run(&BUDGETS, parameters! { group_id: Some(group) })
        .return_all(fcinfo);
    Datum::from(0)
});

/// The group whose join key and secret these are, or None; every way in (a check, a join, a
/// deployment into a group that takes joiners') goes through here. A wrong one counts against the
/// caller's identity (`join_failed`), and past its budget the identity is refused before anything
/// is compared.
pub(crate) fn join_check(
    section: &Section,
    identity: pg_sys::Oid,
    group: Option<Datum>,
    key: Option<Datum>,
    secret: Option<Datum>,
) -> Option<i64> {
    join_budget(identity);
    let found = section.run(
        &JOIN_CHECK,
        parameters! { group_opaque_id: group, join_key: key, secret },
    );
    if found.get::<bool>(0, 1) == Some(true) {
        return found.get::<i64>(0, 0);
    }
    join_failed(identity);
    None
}

// compute_group_check_secret(group_opaque_id, join_key, secret): whether they are the group's
// join credentials (read as the extension's owner: members cannot read the hash).
entry!(compute_group_check_secret, |fcinfo, arguments| {
    let caller = Caller::current();
    let section = Section::as_owner(fcinfo);
    let group = join_check(
        &section,
        caller.identity,
        arguments.group_opaque_id.datum(),
        arguments.join_key.datum(),
        arguments.secret.datum(),
    );
    Datum::from(group.is_some())
});

// _join_check(caller_role, group_opaque_id, key, secret): join_check for the scheduler's SQL
// (a worker's join, a deployment into others' groups), which runs as the extension's owner.
entry!(_join_check, |fcinfo, arguments| {
    let role = arguments.caller_role.required();
    let identity = super::identity::_identity_of(role);
    let section = Section::as_current_user();
    match join_check(
        &section,
        identity,
        arguments.group_opaque_id.datum(),
        arguments.key.datum(),
        arguments.secret.datum(),
    ) {
        Some(group) => Datum::from(group),
        None => super::call::null(fcinfo),
    }
});

// compute_group_public(opaque_id): any group by its opaque id, listed or not, its public fields
// only (read as the extension's owner, whoever calls).
entry!(compute_group_public, |fcinfo, arguments| {
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    section
        .run(
            &GROUP_PUBLIC,
            parameters! { opaque_id: arguments.opaque_id.datum() },
        )
        .return_all(fcinfo);
    Datum::from(0)
});

// The rows of the view compute_groups_jobs_by_job: the caller's jobs' groups, read as the
// extension's owner (a job's owner does not own the groups its jobs are in).
entry!(_caller_compute_groups_jobs_by_job, |fcinfo, _| {
    let caller = Caller::current();
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    section
        .run(
            &GROUPS_JOBS_BY_JOB,
            parameters! { job_owner: Some(Datum::from(caller.identity)) },
        )
        .return_all(fcinfo);
    Datum::from(0)
});

// Join secrets can be tried by anyone, hundreds a second. Each identity may get JOIN_FAILURES_ALLOWED
// wrong in the current and the previous window of JOIN_WINDOW_SECS (so in the last 10 to 20
// minutes); past that its attempts are refused until enough of them are two windows old. The
// count is in shared memory, not a table: a failed attempt's transaction is rolled back (or the
// caller rolls it back), and a count that went with it would limit nothing.
//
// Each slot holds an identity's oid (high 32 bits), the window it counts in (16 bits) and its
// failures (16 bits). An identity's slots are among JOIN_PROBES from its hash, and its count is
// the sum of those of the two windows (two backends may claim two slots at once). A slot of an
// older window is free; with none free, the slot with the fewest failures is taken over: what an
// identity that guesses hard has counted is the last to go.
const JOIN_SLOTS: usize = 1024;
const JOIN_PROBES: usize = 8;
const JOIN_WINDOW_SECS: u64 = 600;
/// Wrong join secrets an identity may give in two windows.
const JOIN_FAILURES_ALLOWED: i32 = 20;

static JOIN_FAILURES: pgrx::PgAtomic<[AtomicU64; JOIN_SLOTS]> =
    unsafe { pgrx::PgAtomic::new(c"pg_jobs join failures") };

pub(crate) fn init_join_failures() {
    pgrx::pg_shmem_init!(JOIN_FAILURES = std::array::from_fn(|_| AtomicU64::new(0)));
}

fn join_window() -> u64 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    (secs / JOIN_WINDOW_SECS) & 0xffff
}

fn join_slots(identity: u32) -> impl Iterator<Item = usize> {
    let start = (u64::from(identity).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as usize;
    (0..JOIN_PROBES).map(move |k| (start + k) % JOIN_SLOTS)
}

fn join_word(identity: u32, window: u64, failures: u64) -> u64 {
    (u64::from(identity) << 32) | (window << 16) | failures.min(0xffff)
}

/// Whether a slot's word counts failures of `window` (the current one) or the one before.
fn join_counts(word: u64, window: u64) -> bool {
    let of = (word >> 16) & 0xffff;
    word & 0xffff > 0 && (of == window || of == (window + 0xffff) & 0xffff)
}

/// Refuses `identity` another try at a join secret once it has used up its failures.
pub(crate) fn join_budget(identity: pg_sys::Oid) {
    if join_failures(identity) >= JOIN_FAILURES_ALLOWED {
        pgrx::pg_sys::panic::ErrorReport::new(
            PgSqlErrorCode::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            format!(
                "too many wrong join secrets: {JOIN_FAILURES_ALLOWED} in {} minutes",
                2 * JOIN_WINDOW_SECS / 60
            ),
            "join_budget",
        )
        .set_hint(format!(
            "Join attempts of this identity are refused for up to {} minutes.",
            2 * JOIN_WINDOW_SECS / 60
        ))
        .report(PgLogLevel::ERROR);
    }
}

/// The wrong join secrets `identity` gave in the current and the previous window.
fn join_failures(identity: pg_sys::Oid) -> i32 {
    let (slots, window) = (JOIN_FAILURES.get(), join_window());
    let identity = identity.to_u32();
    join_slots(identity)
        .map(|k| slots[k].load(Ordering::SeqCst))
        .filter(|&word| (word >> 32) as u32 == identity && join_counts(word, window))
        .map(|word| (word & 0xffff) as i32)
        .sum()
}

/// Counts a wrong join secret of `identity`, whatever becomes of the transaction.
pub(crate) fn join_failed(identity: pg_sys::Oid) {
    let (slots, window) = (JOIN_FAILURES.get(), join_window());
    let id = identity.to_u32();
    let this_window = |word: u64| {
        (word >> 32) as u32 == id && (word >> 16) & 0xffff == window && word & 0xffff > 0
    };
    loop {
        let words: Vec<(usize, u64)> = join_slots(id)
            .map(|k| (k, slots[k].load(Ordering::SeqCst)))
            .collect();
        let Some(&(k, word)) = words
            .iter()
            .find(|(_, word)| this_window(*word))
            .or_else(|| words.iter().find(|(_, word)| !join_counts(*word, window)))
            .or_else(|| words.iter().min_by_key(|(_, word)| word & 0xffff))
        else {
            unreachable!("JOIN_PROBES > 0")
        };
        let failures = if this_window(word) {
            (word & 0xffff) + 1
        } else {
            1
        };
        if slots[k]
            .compare_exchange(
                word,
                join_word(id, window, failures),
                Ordering::SeqCst,
                Ordering::SeqCst,
            )
            .is_ok()
        {
            return;
        }
    }
}
