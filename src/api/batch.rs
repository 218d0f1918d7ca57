//! Batch jobs (`sql/085_batch.sql`): the public functions of posters and agents, and the status
//! words (`pg_jobs_core::batch`) and the masked secrets (`pg_jobs_core::mask`) their views show.

use pgrx::prelude::*;

use super::call::Statement;
use super::services::{no_wish, Service};
use crate::{gucs, named_statements, owner_call};

named_statements!(include_str!("batch.sql"));

static FOLD_COUNTS: Statement = statement("fold_counts", &[]);

/// The batch store's counts: the deltas of each key folded into one row (`_batch_tally_fold`).
pub(crate) static COUNTS: Service = Service {
    name: "batch counts",
    work: |section, _| {
        section.run(&FOLD_COUNTS, &[]);
    },
    next: no_wish,
};

owner_call!(batch_post, pg_finfo_batch_post, STATEMENTS, "post");
owner_call!(batch_cancel, pg_finfo_batch_cancel, STATEMENTS, "cancel");
owner_call!(
    batch_cancel_where,
    pg_finfo_batch_cancel_where,
    STATEMENTS,
    "cancel_where"
);
owner_call!(batch_release, pg_finfo_batch_release, STATEMENTS, "release");

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

/// A heartbeat's answer for a job's status (see `pg_jobs_core::status::lease_state`).
#[pg_extern(immutable, parallel_safe)]
fn _lease_state(status: Option<&str>) -> &'static str {
    pg_jobs_core::status::lease_state(status)
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
