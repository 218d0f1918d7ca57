//! The compute scheduler's public functions (`sql/080_compute_tables.sql`, `sql/083_compute_work.sql`):
//! join secrets, the deletes members make through functions, the rows of the view
//! `compute_groups_jobs_by_job`; deploying and controlling jobs; what workers call; and the rules
//! of `pg_jobs_core::compute` the scheduler's SQL calls.

use pg_jobs_core::compute::{self, Decision, Moving};
use std::sync::atomic::{AtomicU64, Ordering};

use pgrx::prelude::*;

use crate::{named_statements, owner_call};

use super::call::Statement;
use super::services::{wished, Service};

named_statements!(include_str!("compute.sql"));

static TICK: Statement = statement("tick", &[pg_sys::TIMESTAMPTZOID]);
static NEXT_LOOK: Statement = statement("next_look", &[pg_sys::TIMESTAMPTZOID]);

/// The compute scheduler's watchdog, fold and statistics (sql/083_compute_work.sql,
/// `_compute_tick`).
pub(crate) static COMPUTE: Service = Service {
    name: "compute",
    work: |section, at| {
        section.run(&TICK, &[Some(at)]);
    },
    next: |section, at| wished(section, &NEXT_LOOK, at),
};

// The view's rows: the caller's jobs' groups, read as the extension's owner (a job's owner does
// not own the groups its jobs are in).
owner_call!(
    _caller_compute_groups_jobs_by_job,
    pg_finfo__caller_compute_groups_jobs_by_job,
    STATEMENTS,
    "compute_groups_jobs_by_job"
);
owner_call!(
    compute_group_set_secret,
    pg_finfo_compute_group_set_secret,
    STATEMENTS,
    "compute_group_set_secret"
);
owner_call!(
    compute_group_remove_origin,
    pg_finfo_compute_group_remove_origin,
    STATEMENTS,
    "compute_group_remove_origin"
);
owner_call!(
    worker_remove,
    pg_finfo_worker_remove,
    STATEMENTS,
    "worker_remove"
);
owner_call!(
    worker_config_remove,
    pg_finfo_worker_config_remove,
    STATEMENTS,
    "worker_config_remove"
);
owner_call!(
    worker_creds_remove,
    pg_finfo_worker_creds_remove,
    STATEMENTS,
    "worker_creds_remove"
);
owner_call!(
    worker_app_config_remove,
    pg_finfo_worker_app_config_remove,
    STATEMENTS,
    "worker_app_config_remove"
);
owner_call!(
    creds_list_remove,
    pg_finfo_creds_list_remove,
    STATEMENTS,
    "creds_list_remove"
);
owner_call!(
    credential_remove,
    pg_finfo_credential_remove,
    STATEMENTS,
    "credential_remove"
);
owner_call!(
    worker_notification_remove,
    pg_finfo_worker_notification_remove,
    STATEMENTS,
    "worker_notification_remove"
);
owner_call!(
    register_worker_directive_remove,
    pg_finfo_register_worker_directive_remove,
    STATEMENTS,
    "register_worker_directive_remove"
);
// Read as the extension's owner, whoever calls: public fields of a group found by its opaque id,
// and whether join credentials match (members cannot read the hash).
owner_call!(
    compute_group_public,
    pg_finfo_compute_group_public,
    STATEMENTS,
    "compute_group_public"
);
owner_call!(
    compute_group_check_secret,
    pg_finfo_compute_group_check_secret,
    STATEMENTS,
    "compute_group_check_secret"
);

// Deploying and controlling jobs, as their owner.
owner_call!(compute_deploy, pg_finfo_compute_deploy, STATEMENTS, "compute_deploy");
owner_call!(
    compute_add_slices,
    pg_finfo_compute_add_slices,
    STATEMENTS,
    "compute_add_slices"
);
owner_call!(compute_pause, pg_finfo_compute_pause, STATEMENTS, "compute_pause");
owner_call!(compute_resume, pg_finfo_compute_resume, STATEMENTS, "compute_resume");
owner_call!(compute_close, pg_finfo_compute_close, STATEMENTS, "compute_close");
owner_call!(compute_cancel, pg_finfo_compute_cancel, STATEMENTS, "compute_cancel");
owner_call!(compute_fund, pg_finfo_compute_fund, STATEMENTS, "compute_fund");
// What a worker calls, as its own role.
owner_call!(
    compute_worker_register,
    pg_finfo_compute_worker_register,
    STATEMENTS,
    "compute_worker_register"
);
owner_call!(
    compute_worker_join,
    pg_finfo_compute_worker_join,
    STATEMENTS,
    "compute_worker_join"
);
owner_call!(
    compute_worker_leave,
    pg_finfo_compute_worker_leave,
    STATEMENTS,
    "compute_worker_leave"
);
owner_call!(compute_fetch, pg_finfo_compute_fetch, STATEMENTS, "compute_fetch");
owner_call!(
    compute_progress,
    pg_finfo_compute_progress,
    STATEMENTS,
    "compute_progress"
);
owner_call!(compute_return, pg_finfo_compute_return, STATEMENTS, "compute_return");
owner_call!(compute_reject, pg_finfo_compute_reject, STATEMENTS, "compute_reject");
owner_call!(compute_submit, pg_finfo_compute_submit, STATEMENTS, "compute_submit");

/// Copies of a slice sent under a duplication level (see `pg_jobs_core::compute::slice_copies`).
#[pg_extern(immutable, strict, parallel_safe)]
fn _slice_copies(job: i64, slice: i32, level: f64) -> i32 {
    compute::slice_copies(job, i64::from(slice), level)
}

/// What a consensus slice's results come to: wait, accept:<hash>, tiebreak or undecidable.
/// `identities[k]` reported `hashes[k]` (see `pg_jobs_core::compute::consensus`).
#[pg_extern(immutable, strict, parallel_safe)]
fn _consensus(hashes: Vec<String>, identities: Vec<i64>, copies_out: i32, tiebreakers_left: i32) -> String {
    let reports: Vec<(&str, i64)> = hashes.iter().map(String::as_str).zip(identities).collect();
    match compute::consensus(&reports, copies_out.max(0) as usize, tiebreakers_left.max(0) as u32) {
        Decision::Wait => "wait".into(),
        Decision::Accept(hash) => format!("accept:{hash}"),
        Decision::Tiebreak => "tiebreak".into(),
        Decision::Undecidable => "undecidable".into(),
    }
}

/// The weight of the `ordinal`-th measurement of a job of `total` slices.
#[pg_extern(immutable, strict, parallel_safe)]
fn _perf_alpha(ordinal: i64, total: i64) -> f64 {
    compute::alpha(ordinal, total)
}

/// Folds rows of measurements into moving averages. `state` holds the series' means, then their
/// variances (a null mean: not measured yet); `values` the rows one after the other, as many per
/// row as there are series; `alphas` each row's weight. Returns the new state.
#[pg_extern(immutable, parallel_safe)]
fn _moving_fold(
    state: Vec<Option<f64>>,
    values: Option<Vec<Option<f64>>>,
    alphas: Option<Vec<Option<f64>>>,
) -> Vec<Option<f64>> {
    let series = state.len() / 2;
    let mut moving: Vec<Moving> = (0..series)
        .map(|k| Moving {
            mean: state[k],
            variance: state[series + k].unwrap_or(0.0),
        })
        .collect();
    let (values, alphas) = (values.unwrap_or_default(), alphas.unwrap_or_default());
    for (row, alpha) in values.chunks(series.max(1)).zip(alphas) {
        for (m, x) in moving.iter_mut().zip(row) {
            if let (Some(x), Some(alpha)) = (x, alpha) {
                m.add(*x, alpha);
            }
        }
    }
    let means = moving.iter().map(|m| m.mean);
    let variances = moving.iter().map(|m| m.mean.map(|_| m.variance));
    means.chain(variances).collect()
}

/// Whether worktime `version` is in `range`.
#[pg_extern(immutable, strict, parallel_safe)]
fn _worktime_ok(range: &str, version: &str) -> bool {
    compute::worktime_ok(range, version)
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _worktime_range_ok(range: &str) -> bool {
    compute::worktime_range_ok(range)
}

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
#[pg_extern(volatile, strict, parallel_unsafe)]
fn _join_budget(identity: pg_sys::Oid) {
    if join_failures(identity) >= JOIN_FAILURES_ALLOWED {
        pgrx::pg_sys::panic::ErrorReport::new(
            PgSqlErrorCode::ERRCODE_CONFIGURATION_LIMIT_EXCEEDED,
            format!(
                "too many wrong join secrets: {JOIN_FAILURES_ALLOWED} in {} minutes",
                2 * JOIN_WINDOW_SECS / 60
            ),
            "_join_budget",
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
#[pg_extern(volatile, strict, parallel_unsafe)]
fn _join_failed(identity: pg_sys::Oid) {
    let (slots, window) = (JOIN_FAILURES.get(), join_window());
    let id = identity.to_u32();
    let this_window = |word: u64| (word >> 32) as u32 == id && (word >> 16) & 0xffff == window && word & 0xffff > 0;
    loop {
        let words: Vec<(usize, u64)> = join_slots(id).map(|k| (k, slots[k].load(Ordering::SeqCst))).collect();
        let Some(&(k, word)) = words
            .iter()
            .find(|(_, word)| this_window(*word))
            .or_else(|| words.iter().find(|(_, word)| !join_counts(*word, window)))
            .or_else(|| words.iter().min_by_key(|(_, word)| word & 0xffff))
        else {
            unreachable!("JOIN_PROBES > 0")
        };
        let failures = if this_window(word) { (word & 0xffff) + 1 } else { 1 };
        if slots[k]
            .compare_exchange(word, join_word(id, window, failures), Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            return;
        }
    }
}
