//! Batch jobs, the agent's side (`sql/085_batch.sql`): registering a computer, its signals, and
//! claiming, starting, renewing, finishing and handing back jobs (statements in
//! `batch_agent.sql`). Every call checks that the computer it names belongs to the caller's
//! identity (a superuser may act for any); the reports about jobs read that through
//! `_batch_held`, which never waits for a job's row another transaction holds.

use pgrx::pg_sys::{
    self, Datum, Oid, INT4OID, INT8ARRAYOID, INT8OID, INTERVALOID, JSONBOID, OIDOID, TEXTARRAYOID,
    TEXTOID, UUIDARRAYOID, UUIDOID,
};
use pgrx::prelude::*;
use pgrx::IntoDatum;

use super::batch::tally;
use super::batch_waits::{release_dependents, wake};
use super::call::{
    argument, invalid, materialize, refuse, return_row, value, Caller, Section, Statement,
};
use super::datum::{
    array, array_length, elements, int8_array, interval_span, interval_text, literal_or_null,
};
use super::identity::{_identity_of, _is_admin};
use super::leases;
use crate::{entry, gucs, named_statements};

named_statements!(include_str!("batch_agent.sql"));

static FORGET_COMPUTER: Statement = statement("forget_computer", &[TEXTOID]);
static AGENT_OF: Statement = statement("agent_of", &[TEXTOID]);
static REGISTER: Statement = statement("register", &[TEXTOID, OIDOID, INT4OID, JSONBOID]);
static REGISTERED_AGAIN: Statement = statement("registered_again", &[TEXTOID, INT4OID, JSONBOID]);
static READY_SIGNALS: Statement = statement("ready_signals", &[TEXTOID]);
static CANCEL_SIGNAL: Statement = statement("cancel_signal", &[TEXTOID]);
static SEEN: Statement = statement("seen", &[TEXTOID]);
static CLAIM: Statement = statement("claim", &[TEXTOID, INT4OID]);
static CLAIMED: Statement = statement("claimed", &[INT8ARRAYOID]);
static STARTED: Statement = statement("started", &[INT8OID, UUIDOID, INT4OID]);
static RENEW: Statement = statement(
    "renew",
    &[INT8ARRAYOID, INT8ARRAYOID, TEXTARRAYOID, TEXTARRAYOID],
);
static UNCANCEL: Statement = statement("uncancel", &[INT8OID]);
static FINISH: Statement = statement(
    "finish",
    &[
        INT8OID,
        UUIDOID,
        TEXTOID,
        INT4OID,
        INTERVALOID,
        TEXTOID,
        TEXTOID,
        TEXTOID,
    ],
);
static HELD: Statement = statement("held", &[OIDOID, INT8ARRAYOID, UUIDARRAYOID]);
static HAND_BACK: Statement = statement("hand_back", &[INT8ARRAYOID]);
static END_CANCELLED: Statement = statement("end_cancelled", &[INT8ARRAYOID]);

/// The computer named by argument `n`, which must be the caller's (an administrator's: any).
fn computer_of(section: &Section, role: Oid, fcinfo: pg_sys::FunctionCallInfo, n: usize) -> Datum {
    let computer = value::<String>(fcinfo, n).unwrap_or_default();
    let agent = section.run(&AGENT_OF, &[argument(fcinfo, n)]);
    let Some(agent) = agent.get::<Oid>(0, 0) else {
        refuse(
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            format!("unknown computer \"{computer}\""),
            Some("An agent registers its computer with batch_register first."),
        )
    };
    if agent != _identity_of(role) && !_is_admin(role) {
        refuse(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!("computer \"{computer}\" belongs to another agent"),
            Some("Each computer name is bound to the agent role that registered it first."),
        );
    }
    argument(fcinfo, n).expect("a computer")
}

/// A computer's name: 1 to 63 letters, digits, dots, dashes or underscores, and not ANY.
fn computer_name_ok(name: &str) -> bool {
    (1..=63).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        && name != "ANY"
}

// batch_forget_computer(computer): a computer's registration gone, run as the caller (so as far
// as its rights go), and refused as unknown when there was none.
entry!(batch_forget_computer, pg_finfo_batch_forget_computer, |fcinfo| {
    let section = Section::as_current_user();
    if section.run(&FORGET_COMPUTER, &[argument(fcinfo, 0)]).len() == 0 {
        refuse(
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            format!("unknown computer \"{}\"", value::<String>(fcinfo, 0).unwrap_or_default()),
            None,
        );
    }
    Datum::from(0)
});

// batch_register(computer, capacity, info)
entry!(batch_register, pg_finfo_batch_register, |fcinfo| {
    let computer: Option<String> = value(fcinfo, 0);
    if !computer.as_deref().is_some_and(computer_name_ok) {
        invalid(
            format!("invalid computer name {}", literal_or_null(computer.as_deref())),
            Some("A computer name is 1 to 63 letters, digits, dots, dashes or underscores, and not ANY."),
        );
    }
    let capacity = value::<i32>(fcinfo, 1).filter(|&c| c >= 1);
    if capacity.is_none() {
        invalid(
            format!(
                "capacity must be at least 1, not {}",
                value::<i32>(fcinfo, 1).map_or("null".into(), |c| c.to_string())
            ),
            None,
        );
    }
    let role = Caller::current().role;
    let section = Section::as_owner(fcinfo);
    section.run(
        &REGISTER,
        &[
            argument(fcinfo, 0),
            Some(Datum::from(_identity_of(role))),
            argument(fcinfo, 1),
            argument(fcinfo, 2),
        ],
    );
    computer_of(&section, role, fcinfo, 0);
    section.run(
        &REGISTERED_AGAIN,
        &[
            argument(fcinfo, 0),
            argument(fcinfo, 1),
            argument(fcinfo, 2),
        ],
    );
    Datum::from(0)
});

/// The first column of the first row of a statement about the computer of argument 0.
fn about_computer(
    fcinfo: pg_sys::FunctionCallInfo,
    statement: &'static Statement,
    type_oid: Oid,
) -> Datum {
    let role = Caller::current().role;
    let section = Section::as_owner(fcinfo);
    let computer = computer_of(&section, role, fcinfo, 0);
    let answer = section.run(statement, &[Some(computer)]).datum(0, 0);
    section.keep(answer.expect("an answer"), type_oid)
}

entry!(
    batch_ready_signals,
    pg_finfo_batch_ready_signals,
    |fcinfo| { about_computer(fcinfo, &READY_SIGNALS, TEXTARRAYOID) }
);

entry!(
    batch_cancel_signal,
    pg_finfo_batch_cancel_signal,
    |fcinfo| { about_computer(fcinfo, &CANCEL_SIGNAL, TEXTOID) }
);

// batch_claim(computer, n): up to n jobs for this computer or for ANY.
entry!(batch_claim, pg_finfo_batch_claim, |fcinfo| {
    let role = Caller::current().role;
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    let computer = computer_of(&section, role, fcinfo, 0);
    let n = value::<i32>(fcinfo, 1);
    if !n.is_some_and(|n| (1..=1000).contains(&n)) {
        invalid(
            format!(
                "n must be from 1 to 1000, not {}",
                n.map_or("null".into(), |n| n.to_string())
            ),
            None,
        );
    }
    section.run(&SEEN, &[Some(computer)]);
    let taken = section
        .run(&CLAIM, &[Some(computer), argument(fcinfo, 1)])
        .datum(0, 0);
    if let Some(taken) = taken {
        // Taken: no longer waiting or due.
        tally(&section, taken, -1, true);
        section.run(&CLAIMED, &[Some(taken)]).return_all(fcinfo);
    }
    Datum::from(0)
});

/// A report about a job whose row another transaction holds: the agent tries again later.
fn busy(job: i64) -> ! {
    refuse(
        PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
        format!("batch job {job} is being changed by another transaction"),
        Some("Report it again in a moment; nothing was changed."),
    )
}

/// The status of job `job` (token `token`) as the caller's computers hold it: None when they do
/// not hold it (lost); refused when its row is busy.
fn held_one(
    section: &Section,
    role: Oid,
    job: Option<Datum>,
    token: Option<Datum>,
) -> Option<String> {
    let held = held(
        section,
        role,
        Some(array(INT8OID, &[job])),
        Some(array(UUIDOID, &[token])),
    );
    let only = held.first()?;
    if only.busy {
        busy(job.map_or(0, |job| job.value() as i64));
    }
    only.status.clone()
}

/// A job a report names, as the caller's computers hold it.
struct Held {
    /// Its place in the report's arrays, from 1.
    ord: i64,
    id: i64,
    /// None when busy.
    status: Option<String>,
    busy: bool,
}

/// The jobs of `ids` (with `tokens`) that the caller's computers hold, each locked, or busy.
fn held(section: &Section, role: Oid, ids: Option<Datum>, tokens: Option<Datum>) -> Vec<Held> {
    let rows = section.run(&HELD, &[Some(Datum::from(role)), ids, tokens]);
    (0..rows.len())
        .map(|row| Held {
            ord: rows.get(row, 0).expect("a place"),
            id: rows.get(row, 1).expect("an id"),
            status: rows.get(row, 2),
            busy: rows.get::<bool>(row, 3) == Some(true),
        })
        .collect()
}

// batch_started(id, token, pid): the job's process runs (RUNNING); returns the lease state.
entry!(batch_started, pg_finfo_batch_started, |fcinfo| {
    let role = Caller::current().role;
    let section = Section::as_owner(fcinfo);
    let held = held_one(&section, role, argument(fcinfo, 0), argument(fcinfo, 1));
    if held.is_some() {
        let started = section.run(
            &STARTED,
            &[
                argument(fcinfo, 0),
                argument(fcinfo, 1),
                argument(fcinfo, 2),
            ],
        );
        if let Some(until) = started.datum(0, 0) {
            leases::note(until.value() as pg_sys::TimestampTz);
        }
    }
    section.text(pg_jobs_core::status::lease_state(held.as_deref()))
});

// batch_heartbeat(ids, tokens, stderr, stdout): one lease state per job.
entry!(batch_heartbeat, pg_finfo_batch_heartbeat, |fcinfo| {
    let length = |n| argument(fcinfo, n).map(array_length);
    let ids = length(0);
    if ids != length(1)
        || length(2).is_some_and(|n| Some(n) != ids)
        || length(3).is_some_and(|n| Some(n) != ids)
    {
        invalid(
            "ids, tokens, stderr and stdout must be arrays of one length",
            Some("Pass null for stderr or stdout to leave the tails as they are."),
        );
    }
    let role = Caller::current().role;
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    leases::note(pg_sys::GetCurrentStatementStartTimestamp() + silence_micros());
    let held = held(&section, role, argument(fcinfo, 0), argument(fcinfo, 1));
    // A busy job is held still; its lease is renewed by a later heartbeat.
    let renewed: Vec<&Held> = held.iter().filter(|h| !h.busy).collect();
    if !renewed.is_empty() {
        section.run(
            &RENEW,
            &[
                Some(int8_array(renewed.iter().map(|h| h.id))),
                Some(int8_array(renewed.iter().map(|h| h.ord))),
                argument(fcinfo, 2),
                argument(fcinfo, 3),
            ],
        );
    }
    let ids = argument(fcinfo, 0).map_or_else(Vec::new, elements);
    for (n, id) in ids.into_iter().enumerate() {
        let state = match held.iter().find(|h| h.ord == n as i64 + 1) {
            Some(h) if h.busy => "held",
            Some(h) => pg_jobs_core::status::lease_state(h.status.as_deref()),
            None => pg_jobs_core::status::lease_state(None),
        };
        return_row(
            fcinfo,
            &mut [id.unwrap_or(Datum::from(0)), section.text(state)],
            &mut [id.is_none(), false],
        );
    }
    Datum::from(0)
});

fn silence_micros() -> i64 {
    i64::from(gucs::BATCH_SILENCE.get()) * 1_000_000
}

/// 100 years, as PostgreSQL compares intervals (a month is 30 days), in microseconds.
const CENTURY: i128 = 100 * 12 * 30 * 86_400_000_000;

/// What a failed job's error says: the end of what it wrote to stderr, or how it ended.
fn failure(stderr: Option<&str>, exit_code: Option<i32>) -> String {
    let said = stderr
        .map(|s| s.trim_matches([' ', '\n', '\t']))
        .unwrap_or("");
    let tail: String = {
        let chars: Vec<char> = said.chars().collect();
        chars[chars.len().saturating_sub(2000)..].iter().collect()
    };
    if !tail.is_empty() {
        return tail;
    }
    match exit_code {
        None => "killed by a signal".into(),
        Some(code) => format!("exit code {code}"),
    }
}

// batch_finish(id, token, exit_code, run_time, stderr, stdout, cancelled): how the job's process
// ended; returns its status, or lost.
entry!(batch_finish, pg_finfo_batch_finish, |fcinfo| {
    let run_time = argument(fcinfo, 3);
    if run_time.is_some_and(|t| !(0..=CENTURY).contains(&interval_span(t))) {
        invalid(
            format!(
                "run_time must be from 0 to 100 years, not {}",
                interval_text(run_time)
            ),
            Some("The time the job's process ran, as the agent measured it."),
        );
    }
    let role = Caller::current().role;
    let section = Section::as_owner(fcinfo);
    let Some(held) = held_one(&section, role, argument(fcinfo, 0), argument(fcinfo, 1)) else {
        return section.text("lost");
    };
    let exit_code = value::<i32>(fcinfo, 2);
    let outcome = if value::<bool>(fcinfo, 6).unwrap_or(false) {
        "aborted"
    } else if exit_code == Some(0) {
        "completed"
    } else {
        "failed"
    };
    if held == "aborted" && outcome != "aborted" {
        section.run(&UNCANCEL, &[argument(fcinfo, 0)]);
    }
    let error =
        (outcome == "failed").then(|| failure(value::<String>(fcinfo, 4).as_deref(), exit_code));
    section.run(
        &FINISH,
        &[
            argument(fcinfo, 0),
            argument(fcinfo, 1),
            outcome.into_datum(),
            argument(fcinfo, 2),
            run_time,
            argument(fcinfo, 4),
            argument(fcinfo, 5),
            error.as_deref().into_datum(),
        ],
    );
    if outcome == "completed" {
        release_dependents(&section, array(INT8OID, &[argument(fcinfo, 0)]));
    }
    section.text(
        pg_jobs_core::batch::status_word(outcome, true, false, false).expect("a finished status"),
    )
});

// batch_hand_back(ids, tokens): jobs the agent will not finish (it is stopping), pending again
// with no attempt counted; a cancelled one ends as CANCEL. A busy job is not handed back: its
// lease runs out instead. Returns how many.
entry!(batch_hand_back, pg_finfo_batch_hand_back, |fcinfo| {
    if argument(fcinfo, 0).map(array_length) != argument(fcinfo, 1).map(array_length) {
        invalid("ids and tokens must be arrays of one length", None);
    }
    let role = Caller::current().role;
    let section = Section::as_owner(fcinfo);
    let held = held(&section, role, argument(fcinfo, 0), argument(fcinfo, 1));
    let with_status = |status: &str| {
        let ids: Vec<i64> = held
            .iter()
            .filter(|h| h.status.as_deref() == Some(status))
            .map(|h| h.id)
            .collect();
        (!ids.is_empty()).then(|| int8_array(ids))
    };
    // A busy job is not handed back: its lease runs out instead.
    let (back, cancelled) = (with_status("started"), with_status("aborted"));
    if let Some(back) = back {
        section.run(&HAND_BACK, &[Some(back)]);
        tally(&section, back, 1, false);
        wake(&section, back);
    }
    if let Some(cancelled) = cancelled {
        section.run(&END_CANCELLED, &[Some(cancelled)]);
    }
    Datum::from((back.map_or(0, array_length) + cancelled.map_or(0, array_length)) as i32)
});
