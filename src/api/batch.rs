//! Batch jobs (`sql/085_batch.sql`): the poster's side (post, cancel, release; statements in
//! `batch.sql`), the counts' service, and the status words (`pg_jobs_core::batch`) and the
//! masked secrets (`pg_jobs_core::mask`) their views show. The agent's side is batch_agent.rs.

use pgrx::pg_sys::{self, Datum, Oid, INT8OID, TEXTOID};
use pgrx::prelude::*;
use pgrx::{FromDatum, IntoDatum, JsonB};

use super::batch_waits::{check_cycle, make_due};
use super::call::{
    invalid, materialize, refuse, required, return_row, Caller, Planning, Section, Statement,
};
use super::datum::{array, elements, int8_array, literal_or_null, seconds};
use super::identity::{_identity_of, _is_admin};
use super::queue::{add, check_all, Field, Spec};
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
static COMPUTER_KNOWN: Statement = statement("computer_known");
static JOB_OF_HASH: Statement = statement("job_of_hash");
static LOCK_DEPENDENCIES: Statement = statement("lock_dependencies");
static WAITING_FOR: Statement = statement("waiting_for");
static SPEC: Statement = statement("spec");
static TRY_TURN: Statement = statement("try_turn");
static SHORTEN_LOCK_WAITS: Statement = statement("shorten_lock_waits");
static RESTORE_LOCK_WAITS: Statement = statement("restore_lock_waits");
static TAKE_TURN: Statement = statement("take_turn");
/// A job found by its key's row, by primary keys only: found through the indexes of jobs, the
/// plan, before ANALYZE had seen the jobs, read the owner's index (alone, or in a bitmap AND with
/// the key's), which is every job of the poster on every post (0.5 ms a post with 2,000 posted,
/// growing with them).
static WAITING_JOB: Statement = Statement::new(STATEMENTS, "waiting_job", Planning::Probes);
static WAITING_JOB_NOWAIT: Statement =
    Statement::new(STATEMENTS, "waiting_job_nowait", Planning::Probes);
static LOCK_TALLY: Statement = statement("lock_tally");
static COUNT_TALLY: Statement = statement("count_tally");
static MADE_NOW: Statement = statement("made_now");
static STILL_WAITING: Statement = statement("still_waiting");
static CLEAR_WAITS: Statement = statement("clear_waits");
static ADD_WAITS: Statement = statement("add_waits");
/// The jobs found by their ids, one probe of the primary key each: with `id = ANY ($ids)`, or a
/// join the planner may flatten, the plan read every batch job through the index whose
/// predicate the statement repeats, which the planner, before ANALYZE had seen the jobs, took
/// for one row (0.5 to 1 ms a call with 2,000 jobs waiting, most of a post's time).
static TALLY: Statement = Statement::new(STATEMENTS, "tally", Planning::Probes);

/// The batch store's counts: the deltas of each key folded into one row (`_batch_tally_fold`).
pub(crate) static COUNTS: Service = Service {
    name: "batch counts",
    work: |section, _| {
        section.run(&FOLD_COUNTS, &[]);
    },
    next: no_wish,
};

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

/// A post's arguments, as batch_post and _batch_post name them.
struct Post {
    command: Option<Datum>,
    args: Option<Datum>,
    computer: Option<Datum>,
    kind: Option<Datum>,
    routine: Option<Datum>,
    cwd: Option<Datum>,
    shell: Option<Datum>,
    depends_on: Option<Datum>,
    run_at: Option<Datum>,
    max_attempts: Option<Datum>,
    priority: Option<Datum>,
    revision: Option<Datum>,
    env: Option<Datum>,
    extra: Option<Datum>,
}

/// The [`Post`] of a call's arguments (batch_post's or _batch_post's).
macro_rules! post_of {
    ($arguments:expr) => {{
        let arguments = &$arguments;
        Post {
            command: arguments.command.datum(),
            args: arguments.args.datum(),
            computer: arguments.computer.datum(),
            kind: arguments.kind.datum(),
            routine: arguments.routine.datum(),
            cwd: arguments.cwd.datum(),
            shell: arguments.shell.datum(),
            depends_on: arguments.depends_on.datum(),
            run_at: arguments.run_at.datum(),
            max_attempts: arguments.max_attempts.datum(),
            priority: arguments.priority.datum(),
            revision: arguments.revision.datum(),
            env: arguments.env.datum(),
            extra: arguments.extra.datum(),
        }
    }};
}

fn text(datum: Option<Datum>) -> Option<String> {
    datum.and_then(|d| unsafe { String::from_datum(d, false) })
}

/// Refuses a post's bad arguments, with nothing written.
fn check_post(post: &Post) -> (String, String) {
    let kind = text(post.kind);
    if !matches!(kind.as_deref(), Some("batch" | "routine" | "kill")) {
        invalid(
            format!("unknown job kind {}", literal_or_null(kind.as_deref())),
            Some("A batch job's kind is batch, routine or kill."),
        );
    }
    let kind = kind.expect("checked");
    let computer = text(post.computer);
    if kind == "kill" {
        let routine = text(post.routine);
        if routine.as_deref().is_none_or(str::is_empty)
            || computer.as_deref().is_none_or(|c| c == "ANY")
        {
            invalid(
                "a kill job names the routine to end and its computer",
                Some("For example batch_post('', kind => 'kill', routine => 'reports', computer => 'alpha')."),
            );
        }
    } else if text(post.command).is_none_or(|c| c.trim_matches(' ').is_empty()) {
        invalid(
            "command must not be empty",
            Some("Name the program to run, for example batch_post('backup', ARRAY['--full'])."),
        );
    }
    if post
        .args
        .is_none_or(|args| elements(args).iter().any(Option::is_none))
    {
        invalid(
            "args must be an array of text without nulls",
            Some("Pass '{}' for no arguments."),
        );
    }
    let env = post
        .env
        .and_then(|env| unsafe { JsonB::from_datum(env, false) })
        .map(|env| env.0);
    if !env
        .as_ref()
        .and_then(serde_json::Value::as_object)
        .is_some_and(|env| env.values().all(serde_json::Value::is_string))
    {
        invalid(
            "env must be an object of strings",
            Some(r#"For example '{"LANG": "C.UTF-8"}'."#),
        );
    }
    let Some(computer) = computer else {
        required("computer")
    };
    (kind, computer)
}

/// The ids of a post's dependencies: job ids, or command hashes (the latest job with that hash).
fn dependencies(section: &Section, poster: Oid, given: Option<Datum>) -> Vec<i64> {
    let given: Vec<Option<String>> = given.map_or_else(Vec::new, |given| {
        elements(given).into_iter().map(|d| text(d)).collect()
    });
    given
        .into_iter()
        .map(|given| match given {
            Some(id) if (1..=18).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_digit()) => {
                id.parse().expect("digits")
            }
            Some(hash)
                if hash.len() == 64
                    && hash.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) =>
            {
                section
                    .run(
                        &JOB_OF_HASH,
                        parameters! {
                            owner: Some(Datum::from(poster)),
                            hash: hash.as_str().into_datum(),
                        },
                    )
                    .get::<i64>(0, 0)
                    .unwrap_or_else(|| {
                        refuse(
                            PgSqlErrorCode::ERRCODE_FOREIGN_KEY_VIOLATION,
                            format!("no job of yours has the command hash {hash}"),
                            None,
                        )
                    })
            }
            other => invalid(
                format!("malformed dependency {}", literal_or_null(other.as_deref())),
                Some(
                    "A dependency is a job id or a command hash (64 lowercase hexadecimal digits).",
                ),
            ),
        })
        .collect()
}

/// Posts a command for `poster`; returns the job's id. Posting a command again while its job
/// still waits replaces that job (same id).
///
/// Posts of one command take turns on the row of its waiting job, locked before anything about
/// it is read, as the replace's update would lock it: what it counted in batch_tally is
/// subtracted, and what it counts once posted added. A post that sees no such job adds one with
/// rule skip: if a post of the same command made one meanwhile, the key's unique index has this
/// post wait for that post's transaction (the same identity's), and gives it that job, which it
/// then locks and replaces here. No lock per command is held to the end of the transaction: one
/// transaction posting 14,000 commands filled the server's lock table.
///
/// Every post holds, shared, one of 16 advisory locks of its poster (by the first digit of the
/// hash; so at most 16 per transaction, and posts never wait for each other there). `nowait` is
/// the scheduler posting a routine's run, which must not wait for a transaction of the routine's
/// owner that posts the same command: it tries the lock alone for an instant, and a poster's
/// open transaction in that sixteenth makes it fail with 55P03 (tried again at the next round;
/// only that owner's commands are passed over); so does the job's row held.
fn post(section: &Section, poster: Oid, post: &Post, nowait: bool) -> i64 {
    let (kind, computer) = check_post(post);
    if computer != "ANY"
        && section
            .run(&COMPUTER_KNOWN, parameters! { computer: post.computer })
            .get::<bool>(0, 0)
            != Some(true)
    {
        refuse(
            PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
            format!("unknown computer \"{computer}\""),
            Some("A computer is known once its agent has registered; see pgjobs.batch_computer_list, or post for ANY."),
        );
    }
    let poster_datum = Some(Datum::from(poster));
    let dependencies = dependencies(section, poster, post.depends_on);
    let mut waiting_for = Vec::new();
    if !dependencies.is_empty() {
        section.run(
            &LOCK_DEPENDENCIES,
            parameters! {
                dependencies: Some(int8_array(dependencies.iter().copied())),
                owner: poster_datum,
            },
        );
        let found = section.run(
            &WAITING_FOR,
            parameters! {
                dependencies: Some(int8_array(dependencies.iter().copied())),
                owner: poster_datum,
            },
        );
        waiting_for = found.get::<Vec<i64>>(0, 0).unwrap_or_default();
        if let Some(stranger) = found.get::<i64>(0, 1) {
            refuse(
                PgSqlErrorCode::ERRCODE_FOREIGN_KEY_VIOLATION,
                format!("job {stranger} is not one of your jobs"),
                Some("A batch job can depend only on jobs of its own owner."),
            );
        }
    }
    let command = if kind == "kill" {
        text(post.command).unwrap_or_default().as_str().into_datum()
    } else {
        post.command
    };
    let spec = section.run(
        &SPEC,
        parameters! {
            kind: post.kind,
            computer: post.computer,
            routine: post.routine,
            command,
            args: post.args,
            cwd: post.cwd,
            shell: post.shell,
            env: post.env,
            poster: poster_datum,
            revision: post.revision,
            extra: post.extra,
            depends_on: Some(int8_array(dependencies.iter().copied())),
            run_at: post.run_at,
        },
    );
    let hash = spec.datum(0, 1).expect("a hash");
    let turn = spec.datum(0, 2);
    let payload = spec.datum(0, 3);
    let mut lock_wait = None;
    if nowait {
        if section
            .run(&TRY_TURN, parameters! { lock_key: turn })
            .get::<bool>(0, 0)
            != Some(true)
        {
            refuse(
                PgSqlErrorCode::ERRCODE_LOCK_NOT_AVAILABLE,
                format!(
                    "a transaction of {} is posting batch jobs",
                    super::datum::output(Datum::from(poster), pg_sys::REGROLEOID)
                ),
                Some("Posted again once it has ended."),
            );
        }
        // A post that begins in between would still be waited for: not long.
        lock_wait = section.run(&SHORTEN_LOCK_WAITS, &[]).datum(0, 0);
    }
    section.run(&TAKE_TURN, parameters! { lock_key: turn });
    let mut job_spec = Spec::empty();
    job_spec.set(Field::Task, post.kind);
    job_spec.set(Field::Payload, payload);
    job_spec.set(
        Field::Queue,
        format!("pg_jobs.batch:{computer}").into_datum(),
    );
    job_spec.set(Field::Priority, post.priority.or(Some(Datum::from(0i32))));
    job_spec.set(Field::RunAt, post.run_at);
    job_spec.set(
        Field::MaxAttempts,
        post.max_attempts.or(Some(Datum::from(1i32))),
    );
    job_spec.set(Field::Lease, Some(seconds(gucs::BATCH_SILENCE.get())));
    job_spec.set(Field::Key, Some(hash));
    let job = loop {
        let waiting = if nowait {
            &WAITING_JOB_NOWAIT
        } else {
            &WAITING_JOB
        };
        let replaced = section
            .run(
                waiting,
                parameters! { owner: poster_datum, hash: Some(hash) },
            )
            .datum(0, 0);
        if let Some(replaced) = replaced {
            tally(section, array(INT8OID, &[Some(replaced)]), -1, false);
            // It must not come to wait for itself.
            check_cycle(section, replaced.value() as i64, &waiting_for);
        }
        let rule = if replaced.is_some() {
            "replace"
        } else {
            "skip"
        };
        job_spec.set(Field::OnConflict, rule.into_datum());
        check_all(&[job_spec], true, false);
        let job = add(section, poster, &[job_spec])[0];
        if replaced.is_none()
            && section
                .run(&MADE_NOW, parameters! { job: Some(Datum::from(job)) })
                .len()
                > 0
        {
            break job;
        }
        // Done too: replaced, or this command's job is taken by an agent (it stays as it is).
        let waiting = section.run(&STILL_WAITING, parameters! { job: Some(Datum::from(job)) });
        if replaced.is_some() || waiting.get::<bool>(0, 0) != Some(true) {
            break job;
        }
        // A waiting job of this command was added, and committed, while this post waited for
        // its key: once more, to lock and replace it, seen now in the statement's new snapshot.
        // (Where the snapshot is the transaction's, repeatable read, the key's insert refuses
        // with 40001 instead.)
    };
    if let Some(lock_wait) = lock_wait {
        section.run(
            &RESTORE_LOCK_WAITS,
            parameters! { lock_timeout: Some(lock_wait) },
        );
    }
    // A new job, or the waiting one it replaced, waits for its unfinished dependencies; a job
    // already taken by an agent keeps its own.
    let job_datum = Some(Datum::from(job));
    if section
        .run(&STILL_WAITING, parameters! { job: job_datum })
        .get::<bool>(0, 0)
        == Some(true)
    {
        section.run(&CLEAR_WAITS, parameters! { job: job_datum });
        if !waiting_for.is_empty() {
            section.run(
                &ADD_WAITS,
                parameters! {
                    job: job_datum,
                    owner: poster_datum,
                    dependencies: Some(int8_array(waiting_for.iter().copied())),
                },
            );
        }
    }
    tally(section, array(INT8OID, &[job_datum]), 1, false);
    job
}

entry!(batch_post, |fcinfo, arguments| {
    let poster = Caller::current().identity;
    let section = Section::as_owner(fcinfo);
    Datum::from(post(&section, poster, &post_of!(arguments), false))
});

// The routines' scheduler posting a run for a schedule's owner (routine_rounds.rs's post):
// _batch_post(owner, the arguments of batch_post, nowait).
entry!(_batch_post, |fcinfo, arguments| {
    let owner = arguments.owner.required();
    let nowait = arguments.nowait.get().unwrap_or(false);
    let section = Section::as_current_user();
    Datum::from(post(
        &section,
        _identity_of(owner),
        &post_of!(arguments),
        nowait,
    ))
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
            &mut [Datum::from(job), status.unwrap_or(Datum::from(0))],
            &mut [false, status.is_none()],
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

/// A job's payload as shown: a batch job's arguments and environment masked (job_list shows
/// every job).
#[pg_extern(immutable, strict, parallel_safe)]
fn _mask_payload(payload: pgrx::JsonB) -> pgrx::JsonB {
    let mut payload = payload.0;
    if let Some(serde_json::Value::Array(args)) = payload.get_mut("args") {
        let given: Vec<Option<String>> = args
            .iter()
            .map(|a| a.as_str().map(str::to_string))
            .collect();
        for (arg, shown) in args.iter_mut().zip(pg_jobs_core::mask::mask_args(&given)) {
            if let Some(shown) = shown {
                *arg = serde_json::Value::String(shown);
            }
        }
    }
    if let Some(serde_json::Value::Object(env)) = payload.get_mut("env") {
        for (name, value) in env.iter_mut() {
            if let Some(given) = value.as_str() {
                *value = serde_json::Value::String(pg_jobs_core::mask::mask_env(name, given));
            }
        }
    }
    pgrx::JsonB(payload)
}

/// The lease of batch jobs: pg_jobs.batch_silence.
#[pg_extern(stable, parallel_safe)]
fn _batch_silence() -> pgrx::datum::Interval {
    pgrx::datum::Interval::new(0, 0, i64::from(gucs::BATCH_SILENCE.get()) * 1_000_000)
        .expect("a setting of at most a day is an interval")
}
