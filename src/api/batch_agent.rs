//! Batch jobs, the agent's side (`sql/085_batch.sql`): registering a computer, its signals, and
//! claiming, starting, renewing, finishing and handing back jobs (statements in
//! `batch_agent.sql`). Every call checks that the computer it names belongs to the caller's
//! identity (a superuser may act for any); the reports about jobs read that through
//! `_batch_held`, which never waits for a job's row another transaction holds.

use pgrx::pg_sys::{
    self, Datum, Oid, INT4OID, INT8OID, INTERVALOID, TEXTARRAYOID, TEXTOID, UUIDOID,
};
use pgrx::prelude::*;
use pgrx::{FromDatum, IntoDatum};

use super::arguments::Arg;
use super::batch::{batch_queue, silence, tally};
use super::batch_waits::{release_dependents, wake};
use super::call::{
    in_subtransaction, invalid, materialize, refuse, return_row, Caller, LockTimeout, Rows,
    Section, Statement,
};
use super::datum::{
    array, array_length, elements, int8_array, interval_span, interval_text, literal_or_null,
    output,
};
use super::identity::{_identity_of, _is_admin};
use super::leases;
use super::queue::{claim_from, EXTENSION_CLAIMANT};
use crate::{entry, gucs, named_statements, parameters};

named_statements!(include_str!("batch_agent.sql"));

static FORGET_COMPUTER: Statement = statement("forget_computer");
static AGENT_OF: Statement = statement("agent_of");
static REGISTER: Statement = statement("register");
static REGISTERED_AGAIN: Statement = statement("registered_again");
static READY_SIGNALS: Statement = statement("ready_signals");
static CANCEL_SIGNAL: Statement = statement("cancel_signal");
static SEEN: Statement = statement("seen");
static CLAIMED: Statement = statement("claimed");
static STARTED: Statement = statement("started");
static RENEW: Statement = statement("renew");
static UNCANCEL: Statement = statement("uncancel");
static FINISH: Statement = statement("finish");
static HELD: Statement = statement("held");
static HAND_BACK: Statement = statement("hand_back");
static END_CANCELLED: Statement = statement("end_cancelled");

/// The computer named `computer`, which must be the caller's (an administrator's: any).
fn computer_of(section: &Section, role: Oid, computer: Arg<String>) -> Datum {
    let given = computer.datum();
    let computer = computer.get().unwrap_or_default();
    let agent = section.run(&AGENT_OF, parameters! { computer: given });
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
    given.expect("a computer")
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
entry!(batch_forget_computer, |fcinfo, arguments| {
    let section = Section::as_current_user();
    if section
        .run(
            &FORGET_COMPUTER,
            parameters! { computer: arguments.computer.datum() },
        )
        .len()
        == 0
    {
        refuse(
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            format!(
                "unknown computer \"{}\"",
                arguments.computer.get().unwrap_or_default()
            ),
            None,
        );
    }
    Datum::from(0)
});

// batch_register(computer, capacity, info)
entry!(batch_register, |fcinfo, arguments| {
    let computer: Option<String> = arguments.computer.get();
    if !computer.as_deref().is_some_and(computer_name_ok) {
        invalid(
            format!("invalid computer name {}", literal_or_null(computer.as_deref())),
            Some("A computer name is 1 to 63 letters, digits, dots, dashes or underscores, and not ANY."),
        );
    }
    let capacity = arguments.capacity.get().filter(|&c| c >= 1);
    if capacity.is_none() {
        invalid(
            format!(
                "capacity must be at least 1, not {}",
                arguments
                    .capacity
                    .get()
                    .map_or("null".into(), |c| c.to_string())
            ),
            None,
        );
    }
    let role = Caller::current().role;
    let section = Section::as_owner(fcinfo);
    section.run(
        &REGISTER,
        parameters! {
            computer: arguments.computer.datum(),
            agent: Some(Datum::from(_identity_of(role))),
            capacity: arguments.capacity.datum(),
            info: arguments.info.datum(),
        },
    );
    computer_of(&section, role, arguments.computer);
    section.run(
        &REGISTERED_AGAIN,
        parameters! {
            computer: arguments.computer.datum(),
            capacity: arguments.capacity.datum(),
            info: arguments.info.datum(),
        },
    );
    Datum::from(0)
});

/// The first column of the first row of a statement about a computer (its one parameter,
/// `$computer`).
fn about_computer(
    fcinfo: pg_sys::FunctionCallInfo,
    computer: Arg<String>,
    statement: &'static Statement,
    type_oid: Oid,
) -> Datum {
    let role = Caller::current().role;
    let section = Section::as_owner(fcinfo);
    let computer = computer_of(&section, role, computer);
    let answer = section
        .run(statement, parameters! { computer: Some(computer) })
        .datum(0, 0);
    section.keep(answer.expect("an answer"), type_oid)
}

entry!(batch_ready_signals, |fcinfo, arguments| {
    about_computer(fcinfo, arguments.computer, &READY_SIGNALS, TEXTARRAYOID)
});

entry!(batch_cancel_signal, |fcinfo, arguments| about_computer(
    fcinfo,
    arguments.computer,
    &CANCEL_SIGNAL,
    TEXTOID
));

// batch_claim(computer, n): up to n jobs for this computer or for ANY.
entry!(batch_claim, |fcinfo, arguments| {
    let role = Caller::current().role;
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    let computer = computer_of(&section, role, arguments.computer);
    let n = claim_count(arguments.n, 1);
    if let Some(claimed) = claim(&section, computer, n) {
        claimed.return_all(fcinfo);
    }
    Datum::from(0)
});

/// How many jobs to claim: from `least` to 1000.
fn claim_count(n: Arg<i32>, least: i32) -> i32 {
    match n.get() {
        Some(count) if (least..=1000).contains(&count) => count,
        count => invalid(
            format!(
                "n must be from {least} to 1000, not {}",
                count.map_or("null".into(), |n| n.to_string())
            ),
            None,
        ),
    }
}

/// Up to `n` jobs claimed for `computer` or for ANY, leased for pg_jobs.batch_silence, in the
/// columns of batch_claim; None when there were none. Expired leases are requeued first even
/// where the launcher does: a batch job's lease is the silence its agent is allowed, and another
/// agent polling finds a silent one's job at once rather than up to a launcher round later.
fn claim(section: &Section, computer: Datum, n: i32) -> Option<Rows> {
    section.run(&SEEN, parameters! { computer: Some(computer) });
    let name = unsafe { String::from_datum(computer, false) }.expect("a computer");
    let claimed = claim_from(
        section,
        true,
        EXTENSION_CLAIMANT,
        &[Some(batch_queue(&name)), Some(batch_queue("ANY"))],
        Some(Datum::from(n)),
        Some(silence()),
        Some(computer),
    );
    if claimed.len() == 0 {
        return None;
    }
    let taken = int8_array((0..claimed.len()).filter_map(|row| claimed.get::<i64>(row, 0)));
    // Taken: no longer waiting or due.
    tally(section, taken, -1, true);
    Some(section.run(&CLAIMED, parameters! { ids: Some(taken) }))
}

/// A report about a job whose row another transaction holds: the agent tries again later.
fn busy(job: i64) -> ! {
    refuse(
        PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
        format!("batch job {job} is being changed by another transaction"),
        Some("Report it again in a moment; nothing was changed."),
    )
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
    let rows = section.run(
        &HELD,
        parameters! { role: Some(Datum::from(role)), ids, tokens },
    );
    (0..rows.len())
        .map(|row| Held {
            ord: rows.get(row, 0).expect("a place"),
            id: rows.get(row, 1).expect("an id"),
            status: rows.get(row, 2),
            busy: rows.get::<bool>(row, 3) == Some(true),
        })
        .collect()
}

/// What a report made of each place of its arrays: the job's lease state or status, or busy
/// (its row held by another transaction: nothing changed, the agent says it again).
#[derive(Clone, Copy, PartialEq)]
enum Said {
    Busy,
    Is(&'static str),
}

/// What each of a report's `places` became, from the jobs of it that are held: `state` of a job
/// held, lost for one not.
fn said(held: &[Held], places: usize, state: impl Fn(&Held) -> &'static str) -> Vec<Said> {
    (1..=places as i64)
        .map(|ord| match held.iter().find(|h| h.ord == ord) {
            Some(h) if h.busy => Said::Busy,
            Some(h) => Said::Is(state(h)),
            None => Said::Is(pg_jobs_core::status::lease_state(None)),
        })
        .collect()
}

/// What a report of one job made of it; refused when its row is busy.
fn only(said: Vec<Said>, job: Option<Datum>) -> &'static str {
    match said[0] {
        Said::Is(state) => state,
        Said::Busy => busy(job.map_or(0, |job| job.value() as i64)),
    }
}

/// The jobs `ids` (with `tokens`) whose processes `pids` run: RUNNING, their leases renewed.
fn start(section: &Section, role: Oid, ids: Datum, tokens: Datum, pids: Datum) -> Vec<Said> {
    let held = held(section, role, Some(ids), Some(tokens));
    let running: Vec<&Held> = held.iter().filter(|h| !h.busy).collect();
    if !running.is_empty() {
        let until = section
            .run(
                &STARTED,
                parameters! {
                    ids: Some(int8_array(running.iter().map(|h| h.id))),
                    places: Some(int8_array(running.iter().map(|h| h.ord))),
                    tokens: Some(tokens),
                    pids: Some(pids),
                },
            )
            .datum(0, 0);
        if let Some(until) = until {
            leases::note(until.value() as pg_sys::TimestampTz);
        }
    }
    said(&held, array_length(ids), |h| {
        pg_jobs_core::status::lease_state(h.status.as_deref())
    })
}

// batch_started(id, token, pid): the job's process runs (RUNNING); returns the lease state.
entry!(batch_started, |fcinfo, arguments| {
    let role = Caller::current().role;
    let section = Section::as_owner(fcinfo);
    let said = start(
        &section,
        role,
        array(INT8OID, &[arguments.id.datum()]),
        array(UUIDOID, &[arguments.token.datum()]),
        array(INT4OID, &[arguments.pid.datum()]),
    );
    section.text(only(said, arguments.id.datum()))
});

// batch_heartbeat(ids, tokens, stderr, stdout): one lease state per job.
entry!(batch_heartbeat, |fcinfo, arguments| {
    let length = |array: Option<Datum>| array.map(array_length);
    let ids = length(arguments.ids.datum());
    if ids != length(arguments.tokens.datum())
        || length(arguments.stderr.datum()).is_some_and(|n| Some(n) != ids)
        || length(arguments.stdout.datum()).is_some_and(|n| Some(n) != ids)
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
    let held = held(
        &section,
        role,
        arguments.ids.datum(),
        arguments.tokens.datum(),
    );
    // A busy job is held still; its lease is renewed by a later heartbeat.
    let renewed: Vec<&Held> = held.iter().filter(|h| !h.busy).collect();
    if !renewed.is_empty() {
        section.run(
            &RENEW,
            parameters! {
                ids: Some(int8_array(renewed.iter().map(|h| h.id))),
                places: Some(int8_array(renewed.iter().map(|h| h.ord))),
                stderr: arguments.stderr.datum(),
                stdout: arguments.stdout.datum(),
            },
        );
    }
    let ids = arguments.ids.datum().map_or_else(Vec::new, elements);
    let said = said(&held, ids.len(), |h| {
        pg_jobs_core::status::lease_state(h.status.as_deref())
    });
    for (id, said) in ids.into_iter().zip(said) {
        let state = match said {
            Said::Busy => "held",
            Said::Is(state) => state,
        };
        return_row(
            fcinfo,
            &[id.unwrap_or(Datum::from(0)), section.text(state)],
            &[id.is_none(), false],
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

/// Finished jobs' reports: each array holds one element a job, in the order of `ids`; an
/// array left out (stderr, stdout, cancelled) is null for every job.
struct Reports {
    ids: Datum,
    tokens: Datum,
    exit_codes: Vec<Option<Datum>>,
    run_times: Vec<Option<Datum>>,
    stderr: Vec<Option<Datum>>,
    stdout: Vec<Option<Datum>>,
    cancelled: Vec<Option<Datum>>,
}

impl Reports {
    /// The reports given as `[ids, tokens, exit codes, run times, stderr, stdout, cancelled]`:
    /// arrays when `one` is false, one job's values when true.
    fn of(given: [Option<Datum>; 7], one: bool) -> Reports {
        let column = |n: usize| -> Vec<Option<Datum>> {
            match (one, given[n]) {
                (true, datum) => vec![datum],
                (false, datum) => datum.map_or_else(Vec::new, elements),
            }
        };
        let array_of = |n: usize, type_oid: Oid| match one {
            true => array(type_oid, &[given[n]]),
            false => given[n].unwrap_or_else(|| array(type_oid, &[])),
        };
        let reports = Reports {
            ids: array_of(0, INT8OID),
            tokens: array_of(1, UUIDOID),
            exit_codes: column(2),
            run_times: column(3),
            stderr: column(4),
            stdout: column(5),
            cancelled: column(6),
        };
        if let Some(&run_time) = reports
            .run_times
            .iter()
            .flatten()
            .find(|&&t| !(0..=CENTURY).contains(&interval_span(t)))
        {
            invalid(
                format!(
                    "run_time must be from 0 to 100 years, not {}",
                    interval_text(Some(run_time))
                ),
                Some("The time the job's process ran, as the agent measured it."),
            );
        }
        reports
    }

    fn len(&self) -> usize {
        array_length(self.ids)
    }

    /// Element `ord` (from 1) of `column`, null past its end.
    fn at(column: &[Option<Datum>], ord: i64) -> Option<Datum> {
        column.get(ord as usize - 1).copied().flatten()
    }

    /// How the job at `ord` ended: aborted when cancelled, else completed (exit code 0) or failed.
    fn outcome(&self, ord: i64) -> &'static str {
        if Self::at(&self.cancelled, ord).is_some_and(|c| c.value() != 0) {
            "aborted"
        } else if Self::at(&self.exit_codes, ord).map(|c| c.value() as i32) == Some(0) {
            "completed"
        } else {
            "failed"
        }
    }

    /// What the failed job at `ord` says: the end of its stderr, or how it ended.
    fn error(&self, ord: i64) -> Option<Datum> {
        let stderr = Self::at(&self.stderr, ord).map(|t| output(t, TEXTOID));
        let exit_code = Self::at(&self.exit_codes, ord).map(|c| c.value() as i32);
        failure(stderr.as_deref(), exit_code).into_datum()
    }
}

/// The reported jobs the caller's computers hold, ended as their reports say; what each report
/// made of its job.
fn finish(section: &Section, role: Oid, reports: &Reports) -> Vec<Said> {
    let held = held(section, role, Some(reports.ids), Some(reports.tokens));
    let ended: Vec<&Held> = held.iter().filter(|h| !h.busy).collect();
    let tokens = elements(reports.tokens);
    // A report replaces a cancel's mark: a job that ran to its end despite a cancel ended as it ended.
    let uncancelled: Vec<i64> = ended
        .iter()
        .filter(|h| h.status.as_deref() == Some("aborted") && reports.outcome(h.ord) != "aborted")
        .map(|h| h.id)
        .collect();
    if !uncancelled.is_empty() {
        section.run(
            &UNCANCEL,
            parameters! { ids: Some(int8_array(uncancelled)) },
        );
    }
    let mut late = Vec::new();
    for outcome in ["completed", "failed", "aborted"] {
        let jobs: Vec<&Held> = ended
            .iter()
            .copied()
            .filter(|h| reports.outcome(h.ord) == outcome)
            .collect();
        if jobs.is_empty() {
            continue;
        }
        if outcome != "completed" {
            end_jobs(section, reports, &tokens, outcome, &jobs);
            continue;
        }
        // A completion releases the jobs that wait for it, whose rows their owner may hold (a
        // cancel, a release or a post again, in a transaction left open): waited for
        // RELEASE_LOCK_WAIT_MS at most, then each job alone, and one whose dependents stay held
        // is busy, said again later. The agent's one call serves every owner of its computer.
        let ended_all = in_subtransaction(|| {
            let _bounded = LockTimeout::of(RELEASE_LOCK_WAIT_MS);
            end_jobs(section, reports, &tokens, outcome, &jobs);
        });
        if let Err(failure) = ended_all {
            if failure.code != PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE {
                failure.raise();
            }
            for job in jobs {
                let ended_one = in_subtransaction(|| {
                    let _bounded = LockTimeout::of(RELEASE_LOCK_WAIT_MS);
                    end_jobs(section, reports, &tokens, outcome, &[job]);
                });
                match ended_one {
                    Ok(()) => {}
                    Err(f) if f.code == PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE => {
                        late.push(job.ord)
                    }
                    Err(f) => f.raise(),
                }
            }
        }
    }
    said(&held, reports.len(), |h| {
        pg_jobs_core::batch::status_word(reports.outcome(h.ord), true, false, false)
            .expect("a finished status")
    })
    .into_iter()
    .enumerate()
    .map(|(place, said)| {
        if late.contains(&(place as i64 + 1)) {
            Said::Busy
        } else {
            said
        }
    })
    .collect()
}

/// How long a report of completed jobs waits at most for the jobs that wait for them.
const RELEASE_LOCK_WAIT_MS: i32 = 200;

/// Ends `jobs` (of a report's) as `outcome` says, and, when they completed, releases the jobs
/// that wait for them.
fn end_jobs(
    section: &Section,
    reports: &Reports,
    tokens: &[Option<Datum>],
    outcome: &str,
    jobs: &[&Held],
) {
    let pick = |column: &[Option<Datum>], type_oid: Oid| {
        let picked: Vec<Option<Datum>> = jobs.iter().map(|h| Reports::at(column, h.ord)).collect();
        Some(array(type_oid, &picked))
    };
    let errors: Vec<Option<Datum>> = jobs
        .iter()
        .map(|h| match outcome {
            "failed" => reports.error(h.ord),
            _ => None,
        })
        .collect();
    let ids = int8_array(jobs.iter().map(|h| h.id));
    section.run(
        &FINISH,
        parameters! {
            ids: Some(ids),
            tokens: pick(tokens, UUIDOID),
            outcome: outcome.into_datum(),
            exit_codes: pick(&reports.exit_codes, INT4OID),
            run_times: pick(&reports.run_times, INTERVALOID),
            stderr: pick(&reports.stderr, TEXTOID),
            stdout: pick(&reports.stdout, TEXTOID),
            errors: Some(array(TEXTOID, &errors)),
        },
    );
    if outcome == "completed" {
        release_dependents(section, ids);
    }
}

// batch_finish(id, token, exit_code, run_time, stderr, stdout, cancelled): how the job's process
// ended; returns its status, or lost.
entry!(batch_finish, |fcinfo, arguments| {
    let reports = Reports::of(
        [
            arguments.id.datum(),
            arguments.token.datum(),
            arguments.exit_code.datum(),
            arguments.run_time.datum(),
            arguments.stderr.datum(),
            arguments.stdout.datum(),
            arguments.cancelled.datum(),
        ],
        true,
    );
    let role = Caller::current().role;
    let section = Section::as_owner(fcinfo);
    let said = finish(&section, role, &reports);
    section.text(only(said, arguments.id.datum()))
});

/// Appends a row of batch_report_and_claim's result: its 14 columns, null past those given.
fn reported(fcinfo: pg_sys::FunctionCallInfo, columns: impl IntoIterator<Item = Option<Datum>>) {
    let mut values = [Datum::from(0); 14];
    let mut nulls = [true; 14];
    for (column, datum) in columns.into_iter().enumerate() {
        if let Some(datum) = datum {
            (values[column], nulls[column]) = (datum, false);
        }
    }
    return_row(fcinfo, &values, &nulls);
}

// batch_report_and_claim(computer, n, started_ids, started_tokens, started_pids, ids, tokens,
// exit_codes, run_times, stderr, stdout, cancelled): one turn of an agent's loop in one call and
// one transaction, with arrays: the jobs whose processes started (batch_started's), those that
// ended (batch_finish's) and up to n jobs claimed (batch_claim's, 0 for none). A row a job:
// report started (state: its lease state), finished (state: its status) or claimed (state held,
// and the job); a job whose row another transaction holds is reported busy, unchanged, to be said
// again, where the single calls refuse it.
entry!(batch_report_and_claim, |fcinfo, arguments| {
    let n = claim_count(arguments.n, 0);
    let length = |array: Option<Datum>| array.map_or(0, array_length);
    let started = length(arguments.started_ids.datum());
    if length(arguments.started_tokens.datum()) != started
        || length(arguments.started_pids.datum()) != started
    {
        invalid(
            "started_ids, started_tokens and started_pids must be arrays of one length",
            None,
        );
    }
    let finished = length(arguments.ids.datum());
    let given = [
        arguments.ids.datum(),
        arguments.tokens.datum(),
        arguments.exit_codes.datum(),
        arguments.run_times.datum(),
        arguments.stderr.datum(),
        arguments.stdout.datum(),
        arguments.cancelled.datum(),
    ];
    if given[1..4].iter().any(|&array| length(array) != finished)
        || given[4..]
            .iter()
            .any(|&array| array.is_some() && length(array) != finished)
    {
        invalid(
            "ids, tokens, exit_codes and run_times (and stderr, stdout and cancelled unless \
                 null) must be arrays of one length",
            None,
        );
    }
    let reports = Reports::of(given, false);
    let role = Caller::current().role;
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    let computer = computer_of(&section, role, arguments.computer);
    let report = |kind: &str, ids: Option<Datum>, said: Vec<Said>| {
        let ids = ids.map_or_else(Vec::new, elements);
        for (id, said) in ids.into_iter().zip(said) {
            let state = match said {
                Said::Busy => "busy",
                Said::Is(state) => state,
            };
            reported(fcinfo, [kind.into_datum(), id, state.into_datum()]);
        }
    };
    if started > 0 {
        let said = start(
            &section,
            role,
            arguments.started_ids.datum().expect("ids"),
            arguments.started_tokens.datum().expect("tokens"),
            arguments.started_pids.datum().expect("pids"),
        );
        report("started", arguments.started_ids.datum(), said);
    }
    if finished > 0 {
        let said = finish(&section, role, &reports);
        report("finished", arguments.ids.datum(), said);
    }
    if n > 0 {
        if let Some(claimed) = claim(&section, computer, n) {
            for row in 0..claimed.len() {
                let head = [
                    "claimed".into_datum(),
                    claimed.datum(row, 0),
                    "held".into_datum(),
                ];
                reported(
                    fcinfo,
                    head.into_iter()
                        .chain((1..12).map(|c| claimed.datum(row, c))),
                );
            }
        }
    }
    Datum::from(0)
});

// batch_hand_back(ids, tokens): jobs the agent will not finish (it is stopping), pending again
// with no attempt counted; a cancelled one ends as CANCEL. A busy job is not handed back: its
// lease runs out instead. Returns how many.
entry!(batch_hand_back, |fcinfo, arguments| {
    if arguments.ids.datum().map(array_length) != arguments.tokens.datum().map(array_length) {
        invalid("ids and tokens must be arrays of one length", None);
    }
    let role = Caller::current().role;
    let section = Section::as_owner(fcinfo);
    let held = held(
        &section,
        role,
        arguments.ids.datum(),
        arguments.tokens.datum(),
    );
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
        section.run(&HAND_BACK, parameters! { ids: Some(back) });
        tally(&section, back, 1, false);
        wake(&section, back);
    }
    if let Some(cancelled) = cancelled {
        section.run(&END_CANCELLED, parameters! { ids: Some(cancelled) });
    }
    Datum::from((back.map_or(0, array_length) + cancelled.map_or(0, array_length)) as i32)
});
