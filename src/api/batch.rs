//! Batch jobs (`sql/085_batch.sql`): the poster's side but posting (cancel, release; statements
//! in `batch.sql`), the counts and their service, and the status words (`pg_jobs_core::batch`)
//! and the masked secrets (`pg_jobs_core::mask`) their views show. Posting is batch_post.rs, the
//! agent's side batch_agent.rs.

use pgrx::direct_function_call_as_datum;
use pgrx::pg_sys::{self, Datum, Oid, INT8OID, TEXTOID, TIMESTAMPTZOID};
use pgrx::prelude::*;
use serde_json::Value;

use super::batch_waits::make_due;
use super::call::{invalid, materialize, refuse, return_row, Caller, Planning, Section, Statement};
use super::datum::{array, elements, input, is_jsonb_object, jsonb_root, output, seconds};
use super::identity::{_identity_of, _is_admin};
use super::services::{no_wish, Service};
use crate::{entry, gucs, named_statements, parameters};

named_statements!(include_str!("batch.sql"));

static FOLD_COUNTS: Statement = statement("fold_counts");
static MISSING: Statement = statement("missing");
static ABORT: Statement = statement("abort");
static TELL_AGENT: Statement = statement("tell_agent");
static STATUS: Statement = statement("status");
static CHECK_SELECTION: Statement = statement("check_selection");
static SELECTED: Statement = statement("selected");
static LOCK_WAITING: Statement = statement("lock_waiting");
static LOCK_TALLY: Statement = statement("lock_tally");
static COUNT_TALLY: Statement = statement("count_tally");
/// The jobs found by their ids, one probe of the primary key each: with `id = ANY ($ids)`, or a
/// join the planner may flatten, the plan read every batch job through the index whose
/// predicate the statement repeats, which the planner, before ANALYZE had seen the jobs, took
/// for one row (0.5 to 1 ms a call with 2,000 jobs waiting, most of a post's time).
static TALLY: Statement = Statement::new(STATEMENTS, "tally", Planning::Probes);
static TALLY_ONE: Statement = Statement::new(STATEMENTS, "tally_one", Planning::Probes);
static TALLY_ADDED: Statement = statement("tally_added");
static TALLY_ADDED_MANY: Statement = statement("tally_added_many");

/// The batch store's counts: the deltas of each key folded into one row (`_batch_tally_fold`).
pub(crate) static COUNTS: Service = Service {
    name: "batch counts",
    work: |section, _| {
        section.run(&FOLD_COUNTS, &[]);
    },
    next: no_wish,
};

/// The lease of batch jobs: pg_jobs.batch_silence, the silence an agent is allowed.
pub(crate) fn silence() -> Datum {
    seconds(gucs::BATCH_SILENCE.get())
}

/// The queue of a computer's batch jobs (`_batch_queue`, sql/085_batch.sql).
pub(crate) fn batch_queue(computer: &str) -> String {
    format!("pg_jobs.batch:{computer}")
}

/// Adds (`sign` 1) or subtracts (-1) what the jobs `ids` count in batch_tally, the counts of the
/// SCHED page's Jobs tab, as they are now; `as_created`: as they were before a claim took them.
/// The caller holds the jobs' rows locked, so nothing changes them between its two calls.
pub(crate) fn tally(section: &Section, ids: Datum, sign: i32, as_created: bool) {
    section.run(
        &TALLY,
        parameters! {
            ids: Some(ids),
            sign: Some(Datum::from(sign)),
            as_created: Some(Datum::from(as_created)),
        },
    );
}

/// [`tally`] for the one job `id`.
pub(crate) fn tally_one(section: &Section, id: Datum, sign: i32, as_created: bool) {
    section.run(
        &TALLY_ONE,
        parameters! {
            id: Some(id),
            sign: Some(Datum::from(sign)),
            as_created: Some(Datum::from(as_created)),
        },
    );
}

/// A job that a post just added and that waits for no other job, as the post gave it: its label
/// (routine or command), computer and run_at (none: now).
pub(crate) struct Added<'a> {
    pub(crate) label: Option<&'a str>,
    pub(crate) computer: &'a str,
    pub(crate) run_at: Option<Datum>,
}

/// Counts jobs that posts of `owner` just added, as [`tally`] would, from what the posts gave:
/// one job by a row of values, more in a set (the set's unnest and grouping, for one job: 110,000
/// instructions a post against the row's 40,000, callgrind, 2026-12-07).
pub(crate) fn tally_added(section: &Section, owner: Oid, added: &[Added]) {
    let owner = Some(Datum::from(owner));
    let (statement, given) = match added {
        [] => return,
        [one] => (
            &TALLY_ADDED,
            parameters! {
                owner,
                label: one.label.into_datum(),
                computer: one.computer.into_datum(),
                run_at: one.run_at,
            },
        ),
        _ => {
            let column = |oid, value: fn(&Added) -> Option<Datum>| {
                Some(array(oid, &added.iter().map(value).collect::<Vec<_>>()))
            };
            (
                &TALLY_ADDED_MANY,
                parameters! {
                    owner,
                    labels: column(TEXTOID, |a| a.label.into_datum()),
                    computers: column(TEXTOID, |a| a.computer.into_datum()),
                    run_ats: column(TIMESTAMPTZOID, |a| a.run_at),
                },
            )
        }
    };
    section.run(statement, given);
}

// The same for the SQL of sql/085_batch.sql: _batch_tally(ids, sign, as_created).
entry!(_batch_tally, |fcinfo, arguments| {
    let Some(ids) = arguments.ids.datum() else {
        return Datum::from(0);
    };
    let sign = arguments.sign.required();
    let as_created = arguments.as_created.get().unwrap_or(false);
    tally(&Section::as_current_user(), ids, sign, as_created);
    Datum::from(0)
});

// _batch_tally_rebuild(): counts the tallied jobs afresh, for jobs written behind the batch
// functions' back (bench/sched.py adds a million through _add) or a repair.
entry!(_batch_tally_rebuild, |_fcinfo, _| {
    let section = Section::as_current_user();
    section.run(&LOCK_TALLY, &[]);
    section.run(&COUNT_TALLY, &[]);
    Datum::from(0)
});

/// The owner whose batch jobs a caller acts on: its identity, or None (any) for a superuser.
fn acting_for(role: Oid) -> Option<Datum> {
    (!_is_admin(role)).then(|| Datum::from(_identity_of(role)))
}

/// Cancels batch jobs of the owner `acting_for` (any, when None): a waiting job ends as CANCEL at
/// once; a running one is marked, its agent told (NOTIFY pgjobs_batch_cancel, and its next
/// heartbeat), and the agent's report replaces the mark. Returns each job's status afterwards.
fn cancel(
    fcinfo: pg_sys::FunctionCallInfo,
    section: &Section,
    acting_for: Option<Datum>,
    ids: Datum,
) {
    let missing = section.run(&MISSING, parameters! { ids: Some(ids), owner: acting_for });
    if missing.len() > 0 {
        refuse(
            PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
            format!(
                "batch job {} does not exist",
                missing
                    .get::<i64>(0, 0)
                    .map_or("null".into(), |id| id.to_string())
            ),
            Some(
                "Nothing was cancelled. Cancel only your own batch jobs, as batch_jobs lists them.",
            ),
        );
    }
    let mut jobs: Vec<i64> = elements(ids)
        .into_iter()
        .flatten()
        .map(|id| id.value() as i64)
        .collect();
    jobs.sort_unstable();
    jobs.dedup();
    for job in jobs {
        let job_datum = Some(Datum::from(job));
        let after = section
            .run(&ABORT, parameters! { job: job_datum })
            .get::<String>(0, 0);
        if after.as_deref() == Some("aborted") {
            section.run(&TELL_AGENT, parameters! { job: job_datum });
        }
        let status = section
            .run(&STATUS, parameters! { job: job_datum })
            .datum(0, 0);
        return_row(
            fcinfo,
            &[Datum::from(job), status.unwrap_or(Datum::from(0))],
            &[false, status.is_none()],
        );
    }
}

entry!(batch_cancel, |fcinfo, arguments| {
    let role = Caller::current().role;
    let ids = arguments.ids.given();
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    cancel(fcinfo, &section, acting_for(role), ids);
    Datum::from(0)
});

// batch_cancel_where(month, statuses, search, by, group_key): the caller's active batch jobs that
// batch_find (or, with by and group_key, one group of batch_groups) selects.
entry!(batch_cancel_where, |fcinfo, arguments| {
    let role = Caller::current().role;
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    section.run(
        &CHECK_SELECTION,
        parameters! {
            month: arguments.month.datum(),
            by: arguments.by.datum(),
            statuses: arguments.statuses.datum(),
        },
    );
    if arguments.by.datum().is_none() != arguments.group_key.datum().is_none() {
        invalid(
            "by and group_key go together",
            Some("Name both to cancel one group, or neither."),
        );
    }
    let acting_for = acting_for(role);
    let chosen = section
        .run(
            &SELECTED,
            parameters! {
                month: arguments.month.datum(),
                statuses: arguments.statuses.datum(),
                search: arguments.search.datum(),
                by: arguments.by.datum(),
                group_key: arguments.group_key.datum(),
                owner: acting_for,
            },
        )
        .datum(0, 0)
        .unwrap_or_else(|| array(INT8OID, &[]));
    cancel(fcinfo, &section, acting_for, chosen);
    Datum::from(0)
});

// batch_release(id): a blocked (or waiting) job of the caller stops waiting for its
// dependencies; returns its status.
entry!(batch_release, |fcinfo, arguments| {
    let role = Caller::current().role;
    let section = Section::as_owner(fcinfo);
    let job = arguments.id.datum();
    let waiting = section.run(&LOCK_WAITING, parameters! { job, owner: acting_for(role) });
    if waiting.len() == 0 {
        refuse(
            PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
            format!(
                "batch job {} is not waiting for dependencies",
                job.map_or("null".into(), |job| (job.value() as i64).to_string())
            ),
            Some("Only a waiting or blocked batch job of your own can be released."),
        );
    }
    make_due(&section, array(INT8OID, &[job]));
    match section.run(&STATUS, parameters! { job }).datum(0, 0) {
        Some(status) => section.keep(status, TEXTOID),
        None => super::call::null(fcinfo),
    }
});

/// The status word of a batch job (see `pg_jobs_core::batch::status_word`).
#[pg_extern(immutable, parallel_safe)]
fn _batch_status(
    status: &str,
    due: bool,
    blocked: bool,
    running: Option<bool>,
) -> Option<&'static str> {
    pg_jobs_core::batch::status_word(status, due, blocked, running.unwrap_or(false))
}

/// How pressing a status word is (0 most); null for a word that is not a status.
#[pg_extern(immutable, strict, parallel_safe)]
fn _batch_status_rank(word: &str) -> Option<i32> {
    pg_jobs_core::batch::status_rank(word)
}

/// The status word of a rank.
#[pg_extern(immutable, strict, parallel_safe)]
fn _batch_status_word(rank: i32) -> Option<&'static str> {
    pg_jobs_core::batch::STATUS_WORDS
        .get(usize::try_from(rank).ok()?)
        .copied()
}

/// Arguments as shown (`pg_jobs_core::mask`, the one rule of what is masked).
#[pg_extern(immutable, strict, parallel_safe)]
fn _mask_args(args: Vec<Option<String>>) -> Vec<Option<String>> {
    pg_jobs_core::mask::mask_args(&args)
}

/// Text as shown: an output tail, an error, a message, a command (`pg_jobs_core::mask`).
#[pg_extern(immutable, strict, parallel_safe)]
fn _mask_text(text: &str) -> String {
    pg_jobs_core::mask::mask_text(text)
}

// _mask_payload(payload): a batch job's payload as shown (job_list shows every job), its
// arguments and environment masked. Only those two members are read, and replaced; the rest (a
// post's revision and extra, any JSON) is left as it lies: read whole as serde_json's values, a
// number past a double's range or nesting deeper than 128 levels there made every read of the
// job fail (XX000).
entry!(_mask_payload, |_fcinfo, arguments| {
    let payload = arguments.payload.given();
    let root = jsonb_root(payload);
    let mut masked = serde_json::Map::new();
    for (name, mask) in [("args", masked_args as fn(&mut Value)), ("env", masked_env)] {
        if let Some(value) = member(root, name) {
            // What cannot be read cannot be masked, and is not shown.
            masked.insert(
                name.into(),
                value.map_or(Value::Null, |mut value| {
                    mask(&mut value);
                    value
                }),
            );
        }
    }
    if masked.is_empty() {
        return payload;
    }
    let masked = input(Value::Object(masked).to_string(), pg_sys::JSONBOID);
    // jsonb_concat takes two jsonb values and returns one, never null.
    direct_function_call_as_datum(pg_sys::jsonb_concat, &[Some(payload), Some(masked)])
        .expect("not null")
});

/// A payload's arguments (an array of strings) masked.
fn masked_args(args: &mut Value) {
    if let Value::Array(args) = args {
        let given: Vec<Option<String>> = args
            .iter()
            .map(|a| a.as_str().map(str::to_string))
            .collect();
        for (arg, shown) in args.iter_mut().zip(pg_jobs_core::mask::mask_args(&given)) {
            if let Some(shown) = shown {
                *arg = Value::String(shown);
            }
        }
    }
}

/// A payload's environment (an object of strings) masked.
fn masked_env(env: &mut Value) {
    if let Value::Object(env) = env {
        for (name, value) in env.iter_mut() {
            if let Some(given) = value.as_str() {
                *value = Value::String(pg_jobs_core::mask::mask_env(name, given));
            }
        }
    }
}

/// Member `name` of a jsonb container: None where it has none (or is no object); Some(None) where
/// serde_json cannot read the member.
fn member(container: *mut pg_sys::JsonbContainer, name: &str) -> Option<Option<Value>> {
    if !is_jsonb_object(container) {
        return None;
    }
    unsafe {
        let mut value: pg_sys::JsonbValue = std::mem::zeroed();
        let found = pg_sys::getKeyJsonValueFromContainer(
            container,
            name.as_ptr().cast(),
            name.len() as i32,
            &mut value,
        );
        if found.is_null() {
            return None;
        }
        let text = output(
            Datum::from(pg_sys::JsonbValueToJsonb(found)),
            pg_sys::JSONBOID,
        );
        Some(serde_json::from_str(&text).ok())
    }
}

/// The lease of batch jobs: pg_jobs.batch_silence.
#[pg_extern(stable, parallel_safe)]
fn _batch_silence() -> pgrx::datum::Interval {
    pgrx::datum::Interval::new(0, 0, i64::from(gucs::BATCH_SILENCE.get()) * 1_000_000)
        .expect("a setting of at most a day is an interval")
}
