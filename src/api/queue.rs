//! The lease queue: add, claim, heartbeat, complete, fail, abort (statements in `queue.sql`),
//! and the queue's arithmetic and rules that the tables of `sql/030_queue.sql` and
//! `sql/040_history.sql` call.

use pgrx::pg_sys::{
    self, Datum, Oid, FLOAT8OID, INT4OID, INT8OID, INTERVALOID, JSONBOID, OIDOID, TEXTOID,
    TIMESTAMPTZOID, UUIDOID,
};
use pgrx::prelude::*;
use pgrx::{FromDatum, IntoDatum};

use super::arguments::Arg;
use super::call::{
    in_subtransaction, invalid, materialize, null, record, refuse, refuse_with_detail, required,
    return_row, without_nulls, Caller, Planning, Rows, Section, Statement,
};
use super::datum::{
    array, array_length, elements, field, input, int8_array, interval_span, interval_text, output,
    seconds,
};
use super::dependencies::{self, Needs};
use super::flow::{Flow, KeyLimit, Limits};
use super::job_specs::specs_of_batch;
use super::metrics::{self, Counter};
use super::services::Service;
use super::{due, heads, history, leases, queue_minutes, ready};
use crate::{entry, gucs, parameters};

/// Seconds to wait after failed attempt `attempt` before the next one: `backoff × 2^(attempt-1)`,
/// capped at `max_backoff`, saturating rather than overflowing.
#[pg_extern(immutable, strict, parallel_safe)]
fn retry_delay_seconds(attempt: i32, backoff_seconds: f64, max_backoff_seconds: f64) -> f64 {
    // The backoffs a job may have (BACKOFF_SPAN), in seconds; NaN is outside every range.
    let one_year = ONE_YEAR as f64 / 1e6;
    if !(0.0..=one_year).contains(&backoff_seconds)
        || !(0.0..=one_year).contains(&max_backoff_seconds)
    {
        // As PostgreSQL writes them (1e+300, Infinity), not as Rust does (300 digits, inf).
        let written = |seconds: f64| output(seconds.into_datum().expect("a float"), FLOAT8OID);
        invalid(
            format!(
                "backoff_seconds and max_backoff_seconds must be from 0 to {one_year} (1 year), not {} and {}",
                written(backoff_seconds),
                written(max_backoff_seconds)
            ),
            None,
        );
    }
    pg_jobs_core::retry::retry_delay_seconds(attempt, backoff_seconds, max_backoff_seconds)
}

// The rule of a live job (see pg_jobs_core::status), checked by a CHECK constraint of `jobs`;
// and who may claim it: its owner's workers, or the extension (members' reads find their jobs by
// that, sql/030_queue.sql's policy owner_reads). This and `_finished_status_ok` are functions
// rather than the same rules in SQL because PostgreSQL parses a table's CHECK expressions from
// their text at every statement that writes the table: the SQL form was a fifth of the work of a
// lease renewal, and a second CHECK for the claimant cost an add a quarter more. C functions of
// the status as it is stored (`status_label`), not `#[pg_extern]`s of its text: `status::text`
// looked its label up in the system cache for every row an add, a claim or a completion wrote.
entry!(_live_job_ok, |_fcinfo, arguments| {
    let claimable = arguments.claimable_by.get();
    let ok = arguments.status.datum().is_some_and(|status| {
        (claimable == arguments.owner.get() || claimable == Some(EXTENSION_CLAIMANT))
            && pg_jobs_core::status::live_job_ok(
                status_label(status),
                arguments.lease_token.datum().is_some(),
                arguments.has_key.get() == Some(true),
                arguments.has_key_rule.get() == Some(true),
            )
    });
    Datum::from(ok)
});

// The rule of `job_history`'s status, checked by a CHECK constraint.
entry!(_finished_status_ok, |_fcinfo, arguments| {
    Datum::from(pg_jobs_core::status::finished_status_ok(status_label(
        arguments.status.given(),
    )))
});

/// The label of a `job_status` value, which is the oid of the label's row of `pg_enum`: read from
/// the system cache once a backend for each label, then kept (a label is never renamed).
fn status_label(status: Datum) -> &'static str {
    thread_local! {
        static LABELS: std::cell::RefCell<Vec<(Datum, &'static str)>> = const {
            std::cell::RefCell::new(Vec::new())
        };
    }
    if let Some(label) = LABELS.with_borrow(|labels| {
        labels
            .iter()
            .find(|(value, _)| *value == status)
            .map(|(_, label)| *label)
    }) {
        return label;
    }
    let label = unsafe {
        let row = pg_sys::SearchSysCache1(pg_sys::SysCacheIdentifier::ENUMOID as i32, status);
        if row.is_null() {
            error!(
                "pg_jobs: job status {} is not a label of job_status",
                status.value()
            );
        }
        let stored = pg_sys::heap_tuple_get_struct::<pg_sys::FormData_pg_enum>(row);
        let text = std::ffi::CStr::from_ptr((*stored).enumlabel.data.as_ptr());
        let known = pg_jobs_core::status::JOB_STATUSES
            .iter()
            .find(|label| label.as_bytes() == text.to_bytes())
            .copied()
            .unwrap_or("");
        pg_sys::ReleaseSysCache(row);
        known
    };
    LABELS.with_borrow_mut(|labels| labels.push((status, label)));
    label
}

// --- the queue's API ---------------------------------------------------------------------------

const STATEMENTS: &str = include_str!("queue.sql");

const fn statement(name: &'static str, planning: Planning) -> Statement {
    Statement::new(STATEMENTS, name, planning)
}

/// The fields of an add without keys: the task to the lease, then the concurrency key.
const UNKEYED_FIELDS: [Field; 1 + Field::Key as usize] = [
    Field::Task,
    Field::Payload,
    Field::Queue,
    Field::Priority,
    Field::RunAt,
    Field::MaxAttempts,
    Field::Backoff,
    Field::MaxBackoff,
    Field::Lease,
    Field::ConcurrencyKey,
];
static ADD: Statement = statement("add", Planning::Default);
static ADD_ONE: Statement = statement("add_one", Planning::Default);
static ADD_KEYED: Statement = statement("add_keyed", Planning::Probes);
static ADD_KEYED_ONE: Statement = statement("add_keyed_one", Planning::Probes);
static KEY_HOLDERS: Statement = statement("key_holders", Planning::Probes);
static REPLACE: Statement = statement("replace", Planning::Default);
static REPLACE_TAKEN: Statement = statement("replace_taken", Planning::Default);
static FREE_EXPIRED_KEYS: Statement = statement("free_expired_keys", Planning::Probes);
static EXPIRED_LEASES_SCAN: Statement = statement("expired_leases", Planning::Default);
static REQUEUE_EXPIRED: Statement = statement("requeue_expired", Planning::Default);
static REQUEUE_EXPIRED_UNLOGGED: Statement =
    statement("requeue_expired", Planning::Default).without(&["log"]);
static NOTIFY_SIGNALS: Statement = statement("notify_signals", Planning::Default);
static FINISH_EXPIRED: Statement = statement("finish_expired", Planning::Default);
static CLAIM: Statement = statement("claim", Planning::Head);
static CLAIM_QUEUES: Statement = statement("claim_queues", Planning::Head);
static FREE_SLOTS: Statement = statement("free_slots", Planning::Probes);
/// A statement of key limits in its two forms, each key's limits found by its prefixes or given
/// for every key (flow.rs: Limits), taken by `usize::from(every_key.is_some())`.
const fn by_key_limits(name: &'static str) -> [Statement; 2] {
    [
        statement(name, Planning::Probes).without(&["every_key"]),
        statement(name, Planning::Probes).without(&["prefixes"]),
    ]
}
static KEY_CANDIDATES: [Statement; 2] = by_key_limits("key_candidates");
static NEXT_RATE_TOKEN: Statement = statement("next_rate_token", Planning::Probes);
static NEXT_KEY_RATE_TOKEN: [Statement; 2] = by_key_limits("next_key_rate_token");
const fn claim_limited_without(parts: &'static [&'static str]) -> Statement {
    statement("claim_limited", Planning::Head).without(parts)
}
/// claim_limited's forms, by whether the queue has a concurrency limit (1), a rate limit (2), key
/// limits (4) and key limits of which one has a rate (8, in place of 4), and for those by key,
/// with the key limit of every key given (8 more): only what it has is set up. (No limit at all is
/// claimed by `claim`.)
static CLAIM_LIMITED: [Statement; 20] = [
    claim_limited_without(&["slots", "rates", "keyed"]),
    claim_limited_without(&["rates", "keyed"]),
    claim_limited_without(&["slots", "keyed"]),
    claim_limited_without(&["keyed"]),
    claim_limited_without(&["slots", "rates", "unkeyed", "key_rates", "every_key"]),
    claim_limited_without(&["rates", "unkeyed", "key_rates", "every_key"]),
    claim_limited_without(&["slots", "unkeyed", "key_rates", "every_key"]),
    claim_limited_without(&["unkeyed", "key_rates", "every_key"]),
    claim_limited_without(&["slots", "rates", "unkeyed", "every_key"]),
    claim_limited_without(&["rates", "unkeyed", "every_key"]),
    claim_limited_without(&["slots", "unkeyed", "every_key"]),
    claim_limited_without(&["unkeyed", "every_key"]),
    claim_limited_without(&["slots", "rates", "unkeyed", "key_rates", "prefixes"]),
    claim_limited_without(&["rates", "unkeyed", "key_rates", "prefixes"]),
    claim_limited_without(&["slots", "unkeyed", "key_rates", "prefixes"]),
    claim_limited_without(&["unkeyed", "key_rates", "prefixes"]),
    claim_limited_without(&["slots", "rates", "unkeyed", "prefixes"]),
    claim_limited_without(&["rates", "unkeyed", "prefixes"]),
    claim_limited_without(&["slots", "unkeyed", "prefixes"]),
    claim_limited_without(&["unkeyed", "prefixes"]),
];
static FINISH: Statement = statement("finish", Planning::Probes);
/// FINISH for completions, which never copy a job into a dead-letter queue.
static COMPLETE: Statement = statement("finish", Planning::Probes).without(&["copies"]);
/// FINISH and COMPLETE where no identity has set a history rule (history::any_rule).
static FINISH_KEEPING_ALL: Statement = statement("finish", Planning::Probes).without(&["rules"]);
static COMPLETE_KEEPING_ALL: Statement =
    statement("finish", Planning::Probes).without(&["copies", "rules"]);
static FREE_REPLACED_KEYS: Statement = statement("free_replaced_keys", Planning::Probes);
static RETRY: Statement = statement("retry", Planning::Probes);
static RELEASE: Statement = statement("release", Planning::Probes);
static HEARTBEAT: Statement = statement("heartbeat", Planning::Default);
static PROGRESS: Statement = statement("progress", Planning::Default);
static SNOOZE: Statement = statement("snooze", Planning::Default);
static RESULT: Statement = statement("result", Planning::Default);
static LIVE_JOB: Statement = statement("live_job", Planning::Default);
static LOCK_LIVE_JOB: Statement = statement("lock_live_job", Planning::Default);
static FINISHED_JOB: Statement = statement("finished_job", Planning::Default);
static ABORT_LEASED: Statement = statement("abort_leased", Planning::Default);
static SET_HISTORY_RULE: Statement = statement("set_history_rule", Planning::Default);

/// The fields of one job to add, in the order of `job_spec` and of jobs_add's parameters, as
/// given (None where left out).
#[derive(Clone, Copy)]
pub(crate) enum Field {
    Task,
    Payload,
    Queue,
    Priority,
    RunAt,
    MaxAttempts,
    Backoff,
    MaxBackoff,
    Lease,
    Key,
    OnConflict,
    KeyWindow,
    ConcurrencyKey,
}

pub(crate) const FIELDS: usize = 13;
pub(crate) const FIELD_TYPES: [Oid; FIELDS] = [
    TEXTOID,
    pg_sys::JSONBOID,
    TEXTOID,
    INT4OID,
    pg_sys::TIMESTAMPTZOID,
    INT4OID,
    INTERVALOID,
    INTERVALOID,
    INTERVALOID,
    TEXTOID,
    TEXTOID,
    INTERVALOID,
    TEXTOID,
];

/// The fields' names, by field: jobs_add's arguments, the keys of jobs_add_batch's objects, and
/// the parameters of the statements that add (add, add_one, add_keyed, add_keyed_one in
/// queue.sql).
pub(crate) const FIELD_NAMES: [&str; FIELDS] = [
    "task",
    "payload",
    "queue",
    "priority",
    "run_at",
    "max_attempts",
    "backoff",
    "max_backoff",
    "lease",
    "key",
    "on_conflict",
    "key_window",
    "concurrency_key",
];

#[derive(Clone, Copy)]
pub(crate) struct Spec(pub(crate) [Option<Datum>; FIELDS]);

impl Spec {
    /// A job with every field left out.
    pub(crate) const fn empty() -> Self {
        Spec([None; FIELDS])
    }

    pub(crate) fn set(&mut self, field: Field, value: Option<Datum>) {
        self.0[field as usize] = value;
    }

    fn get(&self, field: Field) -> Option<Datum> {
        self.0[field as usize]
    }

    fn text(&self, field: Field) -> Option<String> {
        self.get(field)
            .and_then(|datum| unsafe { String::from_datum(datum, false) })
    }

    fn integer(&self, field: Field) -> Option<i32> {
        self.get(field).map(|datum| datum.value() as i32)
    }

    /// What is wrong with it, if anything. `sql_job`: it may be a SQL job (the reserved
    /// queues take only those); `scheduled`: it is a slot of a schedule, with the scheduler's key.
    fn problem(&self, sql_job: bool, scheduled: bool) -> Option<Problem> {
        let Some(task) = self.text(Field::Task) else {
            return Some(Problem::null(
                "task must not be null",
                Some("Name the task that a worker will run, for example 'send_email'."),
            ));
        };
        if task.is_empty() {
            return Some(Problem::invalid("task must not be empty", None));
        }
        if let Some(queue) = self.text(Field::Queue) {
            if queue.is_empty() {
                return Some(Problem::invalid(
                    "queue must not be empty",
                    Some("Leave it out to use the queue 'default'."),
                ));
            }
            if queue.len() > QUEUE_BYTES {
                return Some(queue_too_long("queue", &queue));
            }
            if is_reserved_queue(&queue) && !sql_job {
                return Some(Problem::invalid(
                    format!("queue {queue} is reserved for the extension"),
                    Some("Add SQL jobs with jobs_add_sql."),
                ));
            }
        }
        if let Some(refusal) = self.get(Field::RunAt).and_then(run_at_refused) {
            return Some(Problem::invalid(
                refusal,
                Some("Leave it out (null) for now, or give a time such as now() + interval '1 hour'."),
            ));
        }
        if let Some(attempts) = self.integer(Field::MaxAttempts).filter(|&a| a < 1) {
            return Some(Problem::invalid(
                format!("max_attempts must be at least 1, not {attempts}"),
                None,
            ));
        }
        if outside(self.get(Field::Backoff), BACKOFF_SPAN)
            || outside(self.get(Field::MaxBackoff), BACKOFF_SPAN)
        {
            return Some(Problem::invalid(
                "backoff and max_backoff must be from 0 to 1 year",
                None,
            ));
        }
        if outside(self.get(Field::Lease), LEASE_SPAN) {
            return Some(Problem::invalid(
                format!("lease must be positive and at most 1 year, not {}", interval_text(self.get(Field::Lease))),
                Some("A lease is how long a worker may hold the job without a heartbeat, for example '60 seconds'."),
            ));
        }
        let rule = self.text(Field::OnConflict);
        if let Some(rule) = rule.as_deref().filter(|r| !KEY_RULES.contains(r)) {
            return Some(Problem::invalid(
                format!("unknown conflict rule \"{rule}\""),
                Some("on_conflict is skip (keep the first job with the key), replace (the job still waiting takes the new work), debounce (the same, due key_window after the last add) or throttle (one job per key_window)."),
            ));
        }
        let windowed = matches!(rule.as_deref(), Some("debounce" | "throttle"));
        let window = self.get(Field::KeyWindow);
        if windowed && (window.is_none() || outside(window, LEASE_SPAN)) {
            return Some(Problem::invalid(
                format!(
                    "key_window must be positive and at most 1 year for {}, not {}",
                    rule.unwrap_or_default(),
                    interval_text(window)
                ),
                Some("For example on_conflict => 'debounce', key_window => '5 seconds'."),
            ));
        }
        if !windowed && window.is_some() {
            return Some(Problem::invalid(
                "key_window is for the rules debounce and throttle",
                Some("Leave it out (null), or say on_conflict => 'debounce' or 'throttle'."),
            ));
        }
        if rule.as_deref() == Some("debounce") && self.get(Field::RunAt).is_some() {
            return Some(Problem::invalid(
                "a debounced job is due key_window after the last add: run_at must be null",
                None,
            ));
        }
        if windowed && self.get(Field::Key).is_none() {
            return Some(Problem::invalid(
                format!("{} needs a key", rule.unwrap_or_default()),
                Some("Jobs are debounced or throttled per key: give key => 'what:it:is'."),
            ));
        }
        if let Some(key) = self.text(Field::Key) {
            if key.is_empty() {
                return Some(Problem::invalid(
                    "key must not be empty",
                    Some("Leave it out (null) for a job without a key."),
                ));
            }
            if key.len() > KEY_BYTES {
                return Some(Problem::invalid(
                    format!("key must be at most {KEY_BYTES} bytes, not {}", key.len()),
                    Some("A key is an entry of indexes: name what the job is about briefly, or by a hash of it."),
                ));
            }
            if key.starts_with("scheduled_job:") && !scheduled {
                return Some(Problem::invalid(
                    format!("key {key} is reserved for the scheduler"),
                    Some("Keys starting scheduled_job: name the slots of schedules; choose another prefix."),
                ));
            }
        }
        if let Some(key) = self.text(Field::ConcurrencyKey) {
            if key.is_empty() || key.len() > KEY_BYTES {
                return Some(Problem::invalid(
                    format!(
                        "concurrency_key must be 1 to {KEY_BYTES} bytes, not {}",
                        key.len()
                    ),
                    Some("Name what the key limit counts, such as 'customer:42' (jobs_key_limit)."),
                ));
            }
        }
        None
    }
}

/// The longest key, idempotency or concurrency: each is an entry of indexes (job_keys', the
/// months of job_history's, jobs_concurrency_key, the key limits' tables beside a queue), whose
/// entries PostgreSQL caps at 2,704 bytes.
pub(super) const KEY_BYTES: usize = 1000;

/// The longest queue name: a queue is an entry of indexes (each month of job_history's, the flow
/// tables' beside a concurrency key) and a place in shared memory (queue_places.rs). A job whose
/// queue no history index could hold was added, and then could never end: its completion failed,
/// and so did the launcher's rescue of every identity's expired leases with it.
pub(crate) const QUEUE_BYTES: usize = super::queue_places::NAME_BYTES;

/// The refusal of a queue name over [`QUEUE_BYTES`], given as argument `name`.
pub(crate) fn queue_too_long(name: &str, queue: &str) -> Problem {
    Problem::invalid(
        format!(
            "{name} must be at most {QUEUE_BYTES} bytes, not {}",
            queue.len()
        ),
        Some("Name a queue briefly, for example 'emails' or 'reports.daily'."),
    )
}

/// What `on_conflict` may say.
const KEY_RULES: [&str; 4] = ["skip", "replace", "debounce", "throttle"];

/// An error found in a job to add, raised with the job's place in its batch.
pub(crate) struct Problem {
    code: PgSqlErrorCode,
    message: String,
    hint: Option<&'static str>,
}

impl Problem {
    pub(crate) fn invalid(message: impl Into<String>, hint: Option<&'static str>) -> Self {
        Problem {
            code: PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            message: message.into(),
            hint,
        }
    }

    pub(crate) fn null(message: &str, hint: Option<&'static str>) -> Self {
        Problem {
            code: PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            message: message.into(),
            hint,
        }
    }

    pub(crate) fn raise(self, place: Option<usize>) -> ! {
        let message = match place {
            Some(n) => format!("{} (job {n} of the batch)", self.message),
            None => self.message,
        };
        refuse(self.code, message, self.hint)
    }
}

/// Refuses a batch at its first bad job.
pub(crate) fn check_all(specs: &[Spec], sql_jobs: bool, scheduled: bool) {
    for (n, spec) in specs.iter().enumerate() {
        if let Some(problem) = spec.problem(sql_jobs, scheduled) {
            problem.raise((specs.len() > 1).then_some(n + 1));
        }
    }
}

/// The queue of SQL jobs, which only the background worker claims.
pub(crate) const SQL_QUEUE: &str = "pg_jobs.sql";

/// Queues named pg_jobs.* are the extension's own.
pub(crate) fn is_reserved_queue(queue: &str) -> bool {
    queue.starts_with("pg_jobs.")
}

#[pg_extern(immutable, parallel_safe)]
fn _sql_queue() -> &'static str {
    SQL_QUEUE
}

#[pg_extern(immutable, strict, parallel_safe)]
fn _reserved_queue(queue: &str) -> bool {
    is_reserved_queue(queue)
}

/// Who may claim the extension's queues: its background workers, as no role (oid 0; SQL knows
/// it as `_extension_claimant()`).
pub(crate) const EXTENSION_CLAIMANT: Oid = pg_sys::InvalidOid;

/// One year as PostgreSQL compares intervals (a month is 30 days), in microseconds.
const ONE_YEAR: i128 = 12 * 30 * 86_400_000_000;

/// What a lease may be (positive, at most a year) and a backoff (0 to a year), in microseconds.
const LEASE_SPAN: std::ops::RangeInclusive<i128> = 1..=ONE_YEAR;
const BACKOFF_SPAN: std::ops::RangeInclusive<i128> = 0..=ONE_YEAR;

/// Whether a time a caller gives is finite and within 100 years of the transaction's start:
/// `-infinity` and times past what intervals and the history's months can hold are refused.
/// (The extension's own `infinity`, the run_at of a job waiting for its dependencies, is set
/// internally and never passes here.)
fn within_a_century(datum: Datum) -> bool {
    let at = datum.value() as i64;
    let now = unsafe { pg_sys::GetCurrentTransactionStartTimestamp() };
    // 100 years of 366 days, in microseconds.
    const CENTURY: u128 = 100 * 366 * 86_400_000_000;
    i128::from(at).abs_diff(i128::from(now)) <= CENTURY
}

/// Why a job's `run_at` given by a caller is refused (see [`within_a_century`]), if it is.
pub(crate) fn run_at_refused(run_at: Datum) -> Option<String> {
    (!within_a_century(run_at)).then(|| {
        format!(
            "run_at must be a finite time within 100 years of now, not {}",
            output(run_at, pg_sys::TIMESTAMPTZOID)
        )
    })
}

/// Whether an interval given (None: left out) is outside `span`.
pub(super) fn outside(datum: Option<Datum>, span: std::ops::RangeInclusive<i128>) -> bool {
    datum.is_some_and(|datum| !span.contains(&interval_span(datum)))
}

/// Whether a lease given to a claim or a heartbeat is refused.
fn check_lease(lease: Option<Datum>) {
    if outside(lease, LEASE_SPAN) {
        invalid(
            format!(
                "lease must be positive and at most 1 year, not {}",
                interval_text(lease)
            ),
            None,
        );
    }
}

/// Adds jobs for `owner`; returns each job's id in the batch's order, or the id of the job that
/// holds its key.
pub(crate) fn add(section: &Section, owner: Oid, specs: &[Spec]) -> Vec<i64> {
    let mut ids = add_free(section, owner, specs);
    if ids.iter().any(Option::is_none) {
        take_keys(section, owner, specs, &defaults(), &mut ids);
    }
    ids.into_iter().flatten().collect()
}

/// The values of the fields a spec leaves out: read once per add, not once per job.
fn defaults() -> [Option<Datum>; FIELDS] {
    [
        None,
        Some(input("{}", pg_sys::JSONBOID)),
        "default".into_datum(),
        Some(Datum::from(0i32)),
        None,
        Some(Datum::from(gucs::MAX_ATTEMPTS.get())),
        Some(seconds(gucs::BACKOFF.get())),
        Some(seconds(gucs::MAX_BACKOFF.get())),
        Some(seconds(gucs::LEASE.get())),
        None,
        None,
        None,
        None,
    ]
}

/// Adds the jobs of `specs` whose keys are free (or that have none) for `owner`; returns each
/// job's id in the batch's order, None where its key was taken: no rule of a taken key applied.
pub(crate) fn add_free(section: &Section, owner: Oid, specs: &[Spec]) -> Vec<Option<i64>> {
    let defaults = defaults();
    let keyed = specs.iter().any(|spec| spec.get(Field::Key).is_some());
    let one = specs.len() == 1;
    let skip = "skip".into_datum();
    let mut arguments = vec![("owner", Some(Datum::from(owner)))];
    let all_fields: Vec<usize> = (0..FIELDS).collect();
    let unkeyed_fields = UNKEYED_FIELDS.map(|field| field as usize);
    for &field in if keyed {
        &all_fields[..]
    } else {
        &unkeyed_fields[..]
    } {
        let values: Vec<Option<Datum>> = specs
            .iter()
            .map(|spec| match field {
                f if f == Field::OnConflict as usize => {
                    spec.get(Field::Key).and(spec.0[f].or(skip))
                }
                f => spec.0[f].or(defaults[f]),
            })
            .collect();
        arguments.push((
            FIELD_NAMES[field],
            if one {
                values[0]
            } else {
                Some(array(FIELD_TYPES[field], &values))
            },
        ));
    }
    // Only jobs with keys have rules: an add without one reads no rule.
    let throttled: Vec<Option<Datum>> = specs
        .iter()
        .filter(|spec| keyed && spec.text(Field::OnConflict).as_deref() == Some("throttle"))
        .map(|spec| spec.get(Field::Key))
        .collect();
    if !throttled.is_empty() {
        section.run(
            &FREE_EXPIRED_KEYS,
            parameters! {
                owner: Some(Datum::from(owner)),
                keys: Some(array(TEXTOID, &throttled)),
            },
        );
    }
    let statement = match (keyed, one) {
        (true, true) => &ADD_KEYED_ONE,
        (true, false) => &ADD_KEYED,
        (false, true) => &ADD_ONE,
        (false, false) => &ADD,
    };
    let added = section.run(statement, &arguments);
    // (id, claimable by, queue, ready now) of each job added; None where its key was taken (for
    // add_keyed_one, no row).
    let mut rows: Vec<Option<(i64, Oid, String, bool)>> = (0..specs.len())
        .map(|row| {
            let (id, claimable_by, queue) = placed(&added, row, [0, 1, 2, 4, 5])?;
            Some((id, claimable_by, queue, added.get(row, 3)?))
        })
        .collect();
    if !keyed {
        // Ids are drawn in the batch's order.
        rows.sort_by_key(|row| row.as_ref().map(|(id, ..)| *id));
    }
    wake(
        rows.iter()
            .flatten()
            .filter(|(.., ready)| *ready)
            .map(|(_, by, queue, _)| (*by, queue.as_str())),
    );
    rows.iter()
        .map(|row| row.as_ref().map(|(id, ..)| *id))
        .collect()
}

/// A job that row `row` of `rows` placed in its queue (added, or due again), from the columns
/// of its id, who may claim it, its queue, its priority and its run_at: its queue's claims start
/// below it once this transaction commits (src/api/heads.rs). None where the row has no job.
pub(crate) fn placed(
    rows: &Rows,
    row: usize,
    [id, by, queue, priority, run_at]: [usize; 5],
) -> Option<(i64, Oid, String)> {
    let (id, claimable_by, queue) = (
        rows.get(row, id)?,
        rows.get(row, by)?,
        rows.get::<String>(row, queue)?,
    );
    let key = heads::Key {
        priority: rows.get(row, priority)?,
        run_at: rows.datum(row, run_at)?.value() as pg_sys::TimestampTz,
        id,
    };
    heads::placed(claimable_by, &queue, key);
    due::note(claimable_by, &queue, key.run_at);
    Some((id, claimable_by, queue))
}

/// Sends NOTIFY pgjobs_ready for each queue that got ready work where a worker may be asleep:
/// a queue that a claim looked at since its last notification (see src/api/ready.rs). Where no
/// worker looked, workers are busy or already woken (and poll every pg_jobs.poll_interval
/// regardless).
pub(crate) fn wake<'a>(queues: impl Iterator<Item = (Oid, &'a str)>) {
    let mut woken: Vec<(Oid, &str)> = Vec::new();
    for (claimable_by, queue) in queues {
        if !woken.contains(&(claimable_by, queue)) && ready::wanted(claimable_by, queue) {
            ready::notify(&ready::signal(claimable_by, queue));
            woken.push((claimable_by, queue));
        }
    }
}

/// Wakes the workers of the queues of jobs placed (`placed`'s answers) where a worker may be asleep.
pub(crate) fn wake_placed(jobs: &[(i64, Oid, String)]) {
    wake(jobs.iter().map(|(_, by, queue)| (*by, queue.as_str())));
}

/// The jobs whose keys were taken (None in `ids`): each is the job that holds its key, and
/// `replace` and `debounce` give the holder the new work if it is still waiting, else make it a
/// new job that takes the key over.
fn take_keys(
    section: &Section,
    owner: Oid,
    specs: &[Spec],
    defaults: &[Option<Datum>; FIELDS],
    ids: &mut [Option<i64>],
) {
    let taken: Vec<usize> = (0..ids.len()).filter(|&n| ids[n].is_none()).collect();
    let keys: Vec<Option<Datum>> = taken.iter().map(|&n| specs[n].get(Field::Key)).collect();
    let holders = section.run(
        &KEY_HOLDERS,
        parameters! {
            owner: Some(Datum::from(owner)),
            keys: Some(array(TEXTOID, &keys)),
        },
    );
    let holder_of: std::collections::HashMap<String, i64> = (0..holders.len())
        .filter_map(|row| Some((holders.get::<String>(row, 0)?, holders.get::<i64>(row, 1)?)))
        .collect();
    for n in taken {
        let spec = &specs[n];
        let key = spec.text(Field::Key).unwrap_or_default();
        let Some(&holder) = holder_of.get(&key) else {
            error!("pg_jobs: the job holding key {key} is missing");
        };
        ids[n] = Some(holder);
        if !matches!(
            spec.text(Field::OnConflict).as_deref(),
            Some("replace" | "debounce")
        ) {
            continue;
        }
        let given = |field: Field| spec.get(field);
        let or_default = |field: Field| spec.get(field).or(defaults[field as usize]);
        heads::requeued();
        let replaced = section.run(
            &REPLACE,
            parameters! {
                holder: Some(Datum::from(holder)),
                owner: Some(Datum::from(owner)),
                task: given(Field::Task),
                payload: or_default(Field::Payload),
                queue: or_default(Field::Queue),
                priority: or_default(Field::Priority),
                run_at: given(Field::RunAt),
                max_attempts: given(Field::MaxAttempts),
                backoff: given(Field::Backoff),
                max_backoff: given(Field::MaxBackoff),
                lease: given(Field::Lease),
                key_window: given(Field::KeyWindow),
                concurrency_key: given(Field::ConcurrencyKey),
            },
        );
        if replaced.len() > 0 {
            continue;
        }
        let taken = section.run(
            &REPLACE_TAKEN,
            parameters! {
                holder: Some(Datum::from(holder)),
                owner: Some(Datum::from(owner)),
                key: given(Field::Key),
                task: or_default(Field::Task),
                payload: or_default(Field::Payload),
                queue: or_default(Field::Queue),
                priority: or_default(Field::Priority),
                run_at: or_default(Field::RunAt),
                max_attempts: or_default(Field::MaxAttempts),
                backoff: or_default(Field::Backoff),
                max_backoff: or_default(Field::MaxBackoff),
                lease: or_default(Field::Lease),
                on_conflict: given(Field::OnConflict),
                key_window: given(Field::KeyWindow),
                concurrency_key: given(Field::ConcurrencyKey),
            },
        );
        ids[n] = match placed(&taken, 0, [0, 1, 2, 4, 5]) {
            Some((id, claimable_by, queue)) => {
                if taken.get::<bool>(0, 3) == Some(true) {
                    wake(std::iter::once((claimable_by, queue.as_str())));
                }
                Some(id)
            }
            // The key changed hands, or its holder waits again, while this add looked: once more.
            None if !is_reserved_queue(&spec.text(Field::Queue).unwrap_or_default()) => {
                Some(add(section, owner, &[*spec])[0])
            }
            None => Some(holder),
        };
    }
}

/// The spec of each element of an array of job_spec.
fn specs_of_array(datum: Datum) -> Vec<Spec> {
    elements(datum)
        .into_iter()
        .map(|element| element.map_or(Spec::empty(), Spec::of_record))
        .collect()
}

impl Spec {
    /// The spec in a job_spec value.
    pub(crate) fn of_record(datum: Datum) -> Spec {
        Spec(std::array::from_fn(|n| field(datum, n)))
    }
}

/// Adds jobs for the caller, each waiting for what it needs (src/api/dependencies.rs).
fn add_needing(section: &Section, owner: Oid, specs: &[Spec], needs: &[Needs]) -> Vec<i64> {
    check_all(specs, false, false);
    for (n, (spec, need)) in specs.iter().zip(needs).enumerate() {
        need.check(n + 1, spec.get(Field::Key).is_some(), specs.len() > 1);
    }
    let ids = add(section, owner, specs);
    if needs.iter().any(|need| !need.is_empty()) {
        dependencies::hold(section, owner, &ids, needs);
    }
    ids
}

entry!(jobs_add, |fcinfo, arguments| {
    let caller = Caller::current();
    let mut spec = Spec::empty();
    for (field, given) in [
        (Field::Task, arguments.task.datum()),
        (Field::Payload, arguments.payload.datum()),
        (Field::Queue, arguments.queue.datum()),
        (Field::Priority, arguments.priority.datum()),
        (Field::RunAt, arguments.run_at.datum()),
        (Field::MaxAttempts, arguments.max_attempts.datum()),
        (Field::Backoff, arguments.backoff.datum()),
        (Field::MaxBackoff, arguments.max_backoff.datum()),
        (Field::Lease, arguments.lease.datum()),
        (Field::Key, arguments.key.datum()),
        (Field::OnConflict, arguments.on_conflict.datum()),
        (Field::KeyWindow, arguments.key_window.datum()),
        (Field::ConcurrencyKey, arguments.concurrency_key.datum()),
    ] {
        spec.set(field, given);
    }
    let needs = Needs {
        ids: without_nulls(arguments.depends_on.get(), "depends_on"),
        keys: without_nulls(arguments.depends_on_keys.get(), "depends_on_keys"),
        after: Vec::new(),
        skip: dependencies::skips(arguments.on_dependency_failure.get()),
    };
    let section = Section::as_owner(fcinfo);
    Datum::from(add_needing(&section, caller.identity, &[spec], &[needs])[0])
});

entry!(jobs_add_batch, |fcinfo, arguments| {
    let caller = Caller::current();
    let (specs, needs) = specs_of_batch(arguments.jobs.datum());
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    return_ids(
        fcinfo,
        &add_needing(&section, caller.identity, &specs, &needs),
    );
    Datum::from(0)
});

// Adds jobs for the extension's own callers (SQL jobs, the slots of schedules):
// _add(specs job_spec[], owner oid, sql_jobs boolean, scheduled boolean).
entry!(_add, |fcinfo, arguments| {
    let specs = arguments
        .specs
        .datum()
        .map(specs_of_array)
        .unwrap_or_default();
    let owner = arguments.owner.required();
    check_all(
        &specs,
        arguments.sql_jobs.get().unwrap_or(false),
        arguments.scheduled.get().unwrap_or(false),
    );
    materialize(fcinfo);
    let section = Section::as_current_user();
    return_ids(fcinfo, &add(&section, owner, &specs));
    Datum::from(0)
});

// Refuses a job a schedule would add: _check_spec(spec job_spec, sql_job boolean, scheduled boolean).
entry!(_check_spec, |fcinfo, arguments| {
    let spec = arguments
        .spec
        .datum()
        .map_or(Spec::empty(), Spec::of_record);
    if let Some(problem) = spec.problem(
        arguments.sql_job.get().unwrap_or(false),
        arguments.scheduled.get().unwrap_or(false),
    ) {
        problem.raise(None);
    }
    Datum::from(0)
});

/// Returns ids as the rows of a set-returning function.
pub(crate) fn return_ids(fcinfo: pg_sys::FunctionCallInfo, ids: &[i64]) {
    for &id in ids {
        return_row(fcinfo, &[Datum::from(id)], &[false]);
    }
}

/// The owner whose jobs a caller acts on: its identity, or None (any) for an administrator.
pub(crate) fn acting_on(caller: &Caller) -> Option<Datum> {
    (!caller.admin()).then(|| Datum::from(caller.identity))
}

/// A claim's arguments, as jobs_claim and jobs_complete_and_claim name them.
#[derive(Clone, Copy)]
struct ClaimArguments {
    worker: Arg<String>,
    queues: Arg<Vec<Option<String>>>,
    n: Arg<i32>,
    lease: Arg<Interval>,
}

/// The [`ClaimArguments`] of a call's arguments.
macro_rules! claim_arguments {
    ($arguments:expr) => {
        ClaimArguments {
            worker: $arguments.worker,
            queues: $arguments.queues,
            n: $arguments.n,
            lease: $arguments.lease,
        }
    };
}

/// The checks of a claim's arguments, and the queues' names.
fn check_claim(given: ClaimArguments) -> Vec<Option<String>> {
    if given.worker.get().is_none_or(|worker| worker.is_empty()) {
        invalid(
            "worker must name the claiming worker",
            Some("Use a name unique to the process, such as host:pid."),
        );
    }
    let queues = given.queues.get().unwrap_or_default();
    if queues.is_empty() {
        invalid("queues must name at least one queue", None);
    }
    if queues.iter().flatten().any(|q| is_reserved_queue(q)) {
        invalid(
            "queues named pg_jobs.* are run by the extension's background workers",
            Some("SQL jobs (jobs_add_sql) are claimed by pg_jobs itself."),
        );
    }
    match given.n.get() {
        Some(n) if n >= 1 => {}
        n => invalid(
            format!(
                "n must be at least 1, not {}",
                n.map_or("null".into(), |n| n.to_string())
            ),
            None,
        ),
    }
    check_lease(given.lease.datum());
    queues
}

/// The claim of jobs_claim and jobs_complete_and_claim.
fn claim(
    section: &Section,
    claimant: Oid,
    given: ClaimArguments,
    queues: &[Option<String>],
) -> Rows {
    claim_from(
        section,
        claims_rescue(),
        claimant,
        queues,
        given.n.datum(),
        given.lease.datum(),
        given.worker.datum(),
    )
}

/// Whether a claim requeues expired leases first: where the launcher does not.
fn claims_rescue() -> bool {
    !crate::bgworker::rescues_expired_leases_here()
}

/// Claims from `queues`, after requeuing expired leases if `rescue_first`.
pub(crate) fn claim_from(
    section: &Section,
    rescue_first: bool,
    claimant: Oid,
    queues: &[Option<String>],
    n: Option<Datum>,
    lease: Option<Datum>,
    worker: Option<Datum>,
) -> Rows {
    // Before the claim reads the queues (in a statement of its own, so before the claim's
    // snapshot): its worker may sleep on what it finds, so the next add notifies.
    ready::looking(claimant, queues);
    if rescue_first && leases::take_due() {
        rescue(section);
    }
    // Both statements return each job's place (priority, run_at) after the six columns that
    // jobs_claim returns: a result of six columns takes the first six of each row. `queue` is
    // claim's and claim_limited's (one queue given); claim_queues gives its queues in its place.
    let one_queue = match queues {
        [Some(queue)] => queue.as_str().into_datum(),
        _ => None,
    };
    let arguments = [
        ("claimant", Some(Datum::from(claimant))),
        ("queue", one_queue),
        ("n", n),
        ("lease", lease),
        ("worker", worker),
    ];
    let (claimed, look) = match queues {
        [Some(queue)] => {
            let look = heads::look(claimant, queue);
            let from = [
                ("after_priority", Some(Datum::from(look.from.priority))),
                ("after_run_at", Some(Datum::from(look.from.run_at))),
                ("after_id", Some(Datum::from(look.from.id))),
            ];
            let (claimed, by_key) = match super::flow::states(section, claimant, &[queue])[0] {
                Flow::Free => (
                    section.run(&CLAIM, &[&arguments[..], &from].concat()),
                    false,
                ),
                Flow::Paused => (Rows::none(), false),
                Flow::Limited(limits) => {
                    claim_limited(section, claimant, &arguments, queue, &from, limits)
                }
            };
            heads::read_done(&look);
            // A claim by key leaves jobs before the last it took (their keys' slots held): the
            // queue's claims must still start before them.
            (claimed, (!by_key).then_some(look))
        }
        _ => {
            let named: Vec<&str> = queues.iter().flatten().map(String::as_str).collect();
            let states = super::flow::states(section, claimant, &named);
            let free: Vec<&str> = named
                .iter()
                .zip(&states)
                .filter(|&(_, &state)| state == Flow::Free)
                .map(|(&queue, _)| queue)
                .collect();
            let claimed = if free.is_empty() {
                Rows::none()
            } else {
                let free = free
                    .iter()
                    .map(|queue| queue.into_datum())
                    .collect::<Vec<_>>();
                let free_arguments = [arguments[0], ("queues", Some(array(TEXTOID, &free)))];
                section.run(
                    &CLAIM_QUEUES,
                    &[&free_arguments[..], &arguments[2..]].concat(),
                )
            };
            let claimed = if claimed.len() > 0 {
                claimed
            } else {
                let limited: Vec<(&str, Limits)> = named
                    .iter()
                    .zip(&states)
                    .filter_map(|(&queue, &state)| match state {
                        Flow::Limited(limits) => Some((queue, limits)),
                        _ => None,
                    })
                    .collect();
                claim_limited_among(section, claimant, &arguments, &limited).unwrap_or(claimed)
            };
            (claimed, None)
        }
    };
    if claimed.len() > 0 {
        heads::claimed();
        if let Some(look) = look {
            let last = (0..claimed.len())
                .filter_map(|row| {
                    Some(heads::Key {
                        priority: claimed.get(row, 6)?,
                        run_at: claimed.datum(row, 7)?.value() as pg_sys::TimestampTz,
                        id: claimed.get(row, 0)?,
                    })
                })
                .max();
            if let Some(last) = last {
                heads::raise(&look, last);
            }
        }
    }
    metrics::count(Counter::Claims, claimed.len());
    note_leases(&claimed, 5);
    claimed
}

/// A claim of `queue`, which has `limits` (as its backend's cache says: flow.rs, states):
/// `arguments` are the claim's first five, by name (claimant, queue, n, lease, worker, in that
/// order), `from` where it starts (after_priority, after_run_at, after_id). With a concurrency
/// limit, in two statements, free_slots and claim_limited: slots taken by claims that committed
/// after the first one's snapshot are checked again by the second, under a snapshot taken once the
/// first held them; with key limits, key_candidates takes the keys' gates likewise. The jobs
/// claimed, and whether by key (a key limit). Limits lifted since the cache was read leave this
/// claim with no slot or gate to take (nothing claimed), and the next claim reads them anew.
fn claim_limited(
    section: &Section,
    claimant: Oid,
    arguments: &[(&str, Option<Datum>)],
    queue: &str,
    from: &[(&str, Option<Datum>)],
    limits: Limits,
) -> (Rows, bool) {
    let n = arguments[2].1;
    let asked = n.map_or(0, |n| n.value() as i32 as usize);
    // Null when the queue has no concurrency limit.
    let slots = if limits.slots {
        let free = section.run(
            &FREE_SLOTS,
            parameters! {
                claimant: arguments[0].1,
                queue: queue.into_datum(),
                n,
            },
        );
        let found = free.get::<Vec<i32>>(0, 0).map_or(0, |found| found.len());
        if found < asked {
            super::flow::waiting_for_slots(claimant, queue);
        }
        if found == 0 {
            return (Rows::none(), limits.keys);
        }
        free.datum(0, 0)
    } else {
        None
    };
    // Null when the queue has no key limit.
    let keys = if limits.keys {
        let keys: Vec<String> = key_candidates(section, claimant, queue, n, limits.every_key);
        if keys.len() < asked {
            super::flow::waiting_for_slots(claimant, queue);
        }
        Some(array(
            TEXTOID,
            &keys
                .iter()
                .map(|key| key.as_str().into_datum())
                .collect::<Vec<_>>(),
        ))
    } else {
        None
    };
    let given = [arguments[0], ("queue", queue.into_datum())];
    let form = usize::from(limits.slots)
        | usize::from(limits.rated) << 1
        | (usize::from(limits.keys) + usize::from(limits.keys && limits.key_rates)) << 2
        | usize::from(limits.every_key.is_some()) << 3;
    let claimed = section.run(
        &CLAIM_LIMITED[form],
        &[
            &given[..],
            &arguments[2..],
            from,
            &[("slots", slots), ("keys", keys)],
            &KeyLimit::parameters(limits.every_key),
        ]
        .concat(),
    );
    // A claim that found the queue's rate, or a waiting key's, spent: its workers are woken when
    // a token is free again, as when a job due later comes due, rather than at their next poll.
    if claimed.len() < asked {
        let rates = [
            limits.rated.then(|| section.run(&NEXT_RATE_TOKEN, &given)),
            (limits.keys && limits.key_rates).then(|| {
                section.run(
                    &NEXT_KEY_RATE_TOKEN[usize::from(limits.every_key.is_some())],
                    &[&given[..], &KeyLimit::parameters(limits.every_key)].concat(),
                )
            }),
        ];
        for free_at in rates
            .iter()
            .flatten()
            .filter_map(|rows| rows.get::<TimestampWithTimeZone>(0, 0))
        {
            due::note(claimant, queue, free_at.into_inner());
        }
    }
    (claimed, limits.keys)
}

thread_local! {
    /// Where this backend's next claim of a key-limited queue starts its round of the keys, by
    /// (claimant, queue): after the last key its previous claim looked at.
    static KEY_ROUNDS: std::cell::RefCell<std::collections::HashMap<(u32, String), String>> =
        std::cell::RefCell::new(std::collections::HashMap::new());
}

/// The keys of key-limited `queue` a claim of `n` jobs takes (key_candidates), their gates held;
/// the round moves on past them.
fn key_candidates(
    section: &Section,
    claimant: Oid,
    queue: &str,
    n: Option<Datum>,
    every_key: Option<KeyLimit>,
) -> Vec<String> {
    let round = (claimant.to_u32(), queue.to_owned());
    let after = KEY_ROUNDS.with(|rounds| rounds.borrow().get(&round).cloned().unwrap_or_default());
    let keys: Vec<String> = section
        .run(
            &KEY_CANDIDATES[usize::from(every_key.is_some())],
            &[
                &parameters! {
                    claimant: Some(Datum::from(claimant)),
                    queue: queue.into_datum(),
                    n,
                    cursor: after.as_str().into_datum(),
                }[..],
                &KeyLimit::parameters(every_key),
            ]
            .concat(),
        )
        .get(0, 0)
        .unwrap_or_default();
    if let Some(last) = keys.last() {
        KEY_ROUNDS.with(|rounds| rounds.borrow_mut().insert(round, last.clone()));
    }
    keys
}

/// A claim of several queues that took nothing from those without a limit: from the first of the
/// `limited` ones, in the order given, that has a free slot or token and a job ready.
fn claim_limited_among(
    section: &Section,
    claimant: Oid,
    arguments: &[(&str, Option<Datum>)],
    limited: &[(&str, Limits)],
) -> Option<Rows> {
    let start = [
        (
            "after_priority",
            Some(Datum::from(heads::Key::FIRST.priority)),
        ),
        ("after_run_at", Some(Datum::from(heads::Key::FIRST.run_at))),
        ("after_id", Some(Datum::from(heads::Key::FIRST.id))),
    ];
    limited
        .iter()
        .map(|&(queue, limits)| {
            claim_limited(section, claimant, arguments, queue, &start, limits).0
        })
        .find(|claimed| claimed.len() > 0)
}

/// Notes the earliest of the leases in column `column` of `rows` (src/api/leases.rs).
fn note_leases(rows: &Rows, column: usize) {
    if let Some(earliest) = (0..rows.len())
        .filter_map(|row| rows.get::<TimestampWithTimeZone>(row, column))
        .map(TimestampWithTimeZone::into_inner)
        .min()
    {
        leases::note(earliest);
    }
}

/// Runs FINISH (COMPLETE for completions) with `arguments`, its parameters by name, counting the
/// jobs it completed and failed; wakes the workers of dead-letter queues that got copies of
/// failed jobs; frees the keys of finished jobs that an add may replace; releases their
/// dependents.
fn finish(section: &Section, arguments: &[(&str, Option<Datum>)]) -> Rows {
    let outcome = arguments
        .iter()
        .find(|(name, _)| *name == "outcome")
        .and_then(|&(_, outcome)| outcome)
        .and_then(|datum| unsafe { String::from_datum(datum, false) });
    let statement = match (outcome.as_deref(), history::any_rule(section)) {
        (Some("completed"), true) => &COMPLETE,
        (Some("completed"), false) => &COMPLETE_KEEPING_ALL,
        (_, true) => &FINISH,
        (_, false) => &FINISH_KEEPING_ALL,
    };
    let finished = section.run(statement, arguments);
    let ended = |column| {
        (0..finished.len())
            .filter(|&row| finished.get::<bool>(row, column) == Some(true))
            .count()
    };
    metrics::count(Counter::Completions, ended(2));
    let failures = ended(3);
    metrics::count(Counter::Failures, failures);
    queue_minutes::count_rows(&finished, 9, 5, |row| {
        let outcome = |column| u32::from(finished.get::<bool>(row, column) == Some(true));
        (outcome(2), outcome(3))
    });
    if failures > 0 {
        let copies: Vec<(i64, Oid, String)> = (0..finished.len())
            .filter_map(|row| placed(&finished, row, [11, 4, 12, 13, 14]))
            .collect();
        metrics::count(Counter::DeadLettered, copies.len());
        wake_placed(&copies);
    }
    let replaced: Vec<usize> = (0..finished.len())
        .filter(|&row| finished.datum(row, 10).is_some())
        .collect();
    if !replaced.is_empty() {
        let column = |type_oid, column| {
            let values: Vec<_> = replaced
                .iter()
                .map(|&row| finished.datum(row, column))
                .collect();
            Some(array(type_oid, &values))
        };
        section.run(
            &FREE_REPLACED_KEYS,
            parameters! {
                owners: column(OIDOID, 9),
                keys: column(TEXTOID, 10),
                ids: column(INT8OID, 0),
            },
        );
    }
    leases_ended(&finished, [4, 5]);
    dependencies::finished(section, &finished, [0, 6, 7, 8]);
    super::waits::finished((0..finished.len()).filter_map(|row| finished.get::<i64>(row, 0)));
    finished
}

/// Ends waiting jobs `ids` (an array) of owner `owner` (any when None) as aborted, each with its
/// error (`errors`, an array), if given: FINISH's rows.
pub(crate) fn abort_waiting(
    section: &Section,
    ids: Datum,
    owner: Option<Datum>,
    errors: Option<Datum>,
) -> Rows {
    finish(
        section,
        parameters! {
            ids: Some(ids),
            tokens: None,
            statuses: Some(array(TEXTOID, &["created".into_datum()])),
            outcome: "aborted".into_datum(),
            owner,
            results: None,
            errors,
        },
    )
}

/// Wakes the workers of limited queues that wait for a slot, of `rows`' jobs, whose leases ended:
/// columns `[claimable_by, queue]` (src/api/flow.rs). Nothing is read while no claim waits.
fn leases_ended(rows: &Rows, [by, queue]: [usize; 2]) {
    if !super::flow::any_waiting_for_slots() {
        return;
    }
    let ended: Vec<(Oid, String)> = (0..rows.len())
        .filter_map(|row| Some((rows.get(row, by)?, rows.get(row, queue)?)))
        .collect();
    let freed = super::flow::slots_freed(ended.iter().map(|(by, queue)| (*by, queue.as_str())));
    wake(freed.into_iter());
}

entry!(jobs_claim, |fcinfo, arguments| {
    let caller = Caller::current();
    let given = claim_arguments!(arguments);
    let queues = check_claim(given);
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    claim(&section, caller.identity, given, &queues).return_all(fcinfo);
    Datum::from(0)
});

/// Claims up to `n` SQL jobs for the background worker: (id, lease token) of each.
pub(crate) fn claim_sql_jobs(worker: &str, n: i32) -> Vec<(i64, pgrx::Uuid)> {
    let section = Section::as_current_user();
    let rows = claim_from(
        &section,
        claims_rescue(),
        EXTENSION_CLAIMANT,
        &[Some(SQL_QUEUE.to_string())],
        Some(Datum::from(n)),
        None,
        worker.into_datum(),
    );
    (0..rows.len())
        .filter_map(|row| Some((rows.get(row, 0)?, rows.get(row, 2)?)))
        .collect()
}

/// A batch report's arguments: ids, tokens and what was said of each job (results or errors;
/// None for a release, or results left out).
#[derive(Clone, Copy)]
struct Report {
    ids: Arg<Vec<Option<i64>>>,
    tokens: Arg<Vec<Option<pgrx::Uuid>>>,
    said: Option<Datum>,
}

/// A batch report's arrays, refused when null (what was said may be) or not of one length.
/// Returns the ids.
fn check_report(report: Report) -> Vec<Option<i64>> {
    let ids = report.ids.required();
    let tokens = array_length(report.tokens.given());
    let said = report.said.map(array_length);
    if tokens != ids.len() || said.is_some_and(|said| said != ids.len()) {
        invalid(
            "ids, tokens and results (or errors) must be arrays of one length",
            Some("Pass the i-th job's id, lease token and result at position i of each array."),
        );
    }
    ids
}

/// The most jobs a call takes by id (jobs_wait, jobs_retry).
const MOST_IDS: usize = 1000;

/// An array of 1 to MOST_IDS job ids, none null (refused otherwise, with `hint` for a count out
/// of bounds): the array, and its ids.
pub(crate) fn job_ids(ids: Arg<Vec<Option<i64>>>, hint: Option<&str>) -> (Datum, Vec<i64>) {
    let Some(given) = ids.datum() else {
        required("job ids")
    };
    let ids: Vec<i64> = elements(given)
        .into_iter()
        .map(|id| id.map_or_else(|| required("job id"), |id| id.value() as i64))
        .collect();
    if ids.is_empty() || ids.len() > MOST_IDS {
        invalid(
            format!("ids must name 1 to {MOST_IDS} jobs, not {}", ids.len()),
            hint,
        );
    }
    (given, ids)
}

/// The ids a finish or a retry returned.
fn ids_of(rows: &Rows) -> Vec<i64> {
    (0..rows.len()).filter_map(|row| rows.get(row, 0)).collect()
}

/// Completes jobs: ids, tokens and results as arrays. Returns the jobs it applied to.
fn complete(
    section: &Section,
    caller: &Caller,
    ids: Datum,
    tokens: Option<Datum>,
    results: Option<Datum>,
) -> Vec<i64> {
    ids_of(&finish(
        section,
        parameters! {
            ids: Some(ids),
            tokens,
            statuses: Some(array(TEXTOID, &["started".into_datum()])),
            outcome: "completed".into_datum(),
            owner: acting_on(caller),
            results,
            errors: None,
        },
    ))
}

/// Runs `act` (`complete`, `fail`, `release`: given the ids, tokens and what was said of each job,
/// the jobs it applied to) for a batch report whose `ids` check_report returned; the error of the
/// first job it did not apply to.
fn apply_report(
    section: &Section,
    caller: &Caller,
    report: Report,
    ids: &[Option<i64>],
    act: impl FnOnce(&Section, &Caller, Datum, Option<Datum>, Option<Datum>) -> Vec<i64>,
) {
    let reported = act(
        section,
        caller,
        report.ids.given(),
        report.tokens.datum(),
        report.said,
    );
    all_reported(section, caller, report.tokens, ids, &reported);
}

entry!(jobs_complete, |fcinfo, arguments| report_all(
    fcinfo,
    Report {
        ids: arguments.ids,
        tokens: arguments.tokens,
        said: arguments.results.datum(),
    },
    complete
));

// jobs_complete(id bigint, token uuid, result jsonb): one job.
entry!(jobs_complete_one, |fcinfo, arguments| {
    let result = Some(array(pg_sys::JSONBOID, &[arguments.result.datum()]));
    report_one(
        fcinfo,
        (arguments.id, arguments.token),
        |section, caller, ids, tokens| complete(section, caller, ids, tokens, result),
    )
});

entry!(jobs_complete_and_claim, |fcinfo, arguments| {
    let caller = Caller::current();
    let report = Report {
        ids: arguments.ids,
        tokens: arguments.tokens,
        said: arguments.results.datum(),
    };
    let ids = check_report(report);
    let given = claim_arguments!(arguments);
    let queues = check_claim(given);
    materialize(fcinfo);
    let section = Section::as_owner(fcinfo);
    apply_report(&section, &caller, report, &ids, complete);
    claim(&section, caller.identity, given, &queues).return_all(fcinfo);
    Datum::from(0)
});

/// Reports failed attempts: ids, tokens and errors as arrays.
/// Returns the jobs it applied to.
fn fail(
    section: &Section,
    caller: &Caller,
    ids: Datum,
    tokens: Option<Datum>,
    errors: Option<Datum>,
) -> Vec<i64> {
    let retried = section.run(
        &RETRY,
        parameters! {
            ids: Some(ids),
            tokens,
            errors,
            owner: acting_on(caller),
        },
    );
    metrics::count(Counter::Failures, retried.len());
    queue_minutes::count_rows(&retried, 5, 2, |_| (0, 1));
    leases_ended(&retried, [1, 2]);
    // Due again after their backoff: their queues' claims start below them once this commits.
    for row in 0..retried.len() {
        placed(&retried, row, [0, 1, 2, 3, 4]);
    }
    // Last attempt used, or aborted meanwhile: finished. (The retried are no longer leased.)
    let finished = finish(
        section,
        parameters! {
            ids: Some(ids),
            tokens,
            statuses: Some(array(
                TEXTOID,
                &["started".into_datum(), "aborted".into_datum()],
            )),
            outcome: "failed".into_datum(),
            owner: acting_on(caller),
            results: None,
            errors,
        },
    );
    let mut reported = ids_of(&retried);
    reported.extend(ids_of(&finished));
    reported
}

entry!(jobs_fail, |fcinfo, arguments| report_all(
    fcinfo,
    Report {
        ids: arguments.ids,
        tokens: arguments.tokens,
        said: arguments.errors.datum(),
    },
    fail
));

// jobs_fail(id bigint, token uuid, error text): one job.
entry!(jobs_fail_one, |fcinfo, arguments| {
    let error = Some(array(TEXTOID, &[arguments.error.datum()]));
    report_one(
        fcinfo,
        (arguments.id, arguments.token),
        |section, caller, ids, tokens| fail(section, caller, ids, tokens, error),
    )
});

/// Gives leased jobs back unworked: ids and tokens as arrays. Returns the jobs it applied to.
fn release(section: &Section, caller: &Caller, ids: Datum, tokens: Option<Datum>) -> Vec<i64> {
    let released = section.run(
        &RELEASE,
        parameters! {
            ids: Some(ids),
            tokens,
            owner: acting_on(caller),
        },
    );
    if released.len() > 0 {
        // Due now, maybe below where its queue's claims start.
        heads::requeued();
    }
    // Aborted meanwhile: given back, it has ended, as it would by its worker's failure.
    let ended = finish(
        section,
        parameters! {
            ids: Some(ids),
            tokens,
            statuses: Some(array(TEXTOID, &["aborted".into_datum()])),
            outcome: "aborted".into_datum(),
            owner: acting_on(caller),
            results: None,
            errors: None,
        },
    );
    let queues: Vec<(Oid, String)> = (0..released.len())
        .filter_map(|row| Some((released.get(row, 1)?, released.get(row, 2)?)))
        .collect();
    wake(queues.iter().map(|(by, queue)| (*by, queue.as_str())));
    let mut reported = ids_of(&released);
    reported.extend(ids_of(&ended));
    reported
}

entry!(jobs_release, |fcinfo, arguments| report_all(
    fcinfo,
    Report {
        ids: arguments.ids,
        tokens: arguments.tokens,
        said: None,
    },
    |section, caller, ids, tokens, _| release(section, caller, ids, tokens)
));

// jobs_release(id bigint, token uuid): one job.
entry!(jobs_release_one, |fcinfo, arguments| report_one(
    fcinfo,
    (arguments.id, arguments.token),
    release
));

/// A batch report, refused unless its arrays are of one length, applied by `act` (see
/// [`apply_report`]).
fn report_all(
    fcinfo: pg_sys::FunctionCallInfo,
    report: Report,
    act: impl FnOnce(&Section, &Caller, Datum, Option<Datum>, Option<Datum>) -> Vec<i64>,
) -> Datum {
    let caller = Caller::current();
    let ids = check_report(report);
    let section = Section::as_owner(fcinfo);
    apply_report(&section, &caller, report, &ids, act);
    Datum::from(0)
}

/// A report of one job (`id`, `token`): `act` runs with one-element arrays of them and returns
/// the jobs it applied to; the lease error unless that is the job.
fn report_one(
    fcinfo: pg_sys::FunctionCallInfo,
    (id, token): (Arg<i64>, Arg<pgrx::Uuid>),
    act: impl FnOnce(&Section, &Caller, Datum, Option<Datum>) -> Vec<i64>,
) -> Datum {
    let caller = Caller::current();
    let section = Section::as_owner(fcinfo);
    let ids = array(INT8OID, &[id.datum()]);
    let reported = act(
        &section,
        &caller,
        ids,
        Some(array(UUIDOID, &[token.datum()])),
    );
    if reported.len() != 1 {
        lease_error(&section, id.get(), token.get(), acting_on(&caller));
    }
    Datum::from(0)
}

/// Raises the error of a batch report (its `ids`, checked, and `tokens`) that did not apply to
/// every job it named (`reported` are those it did apply to): a repeated id, else the first job
/// whose lease the token does not hold. Looked for only then, so that a report that applies pays
/// for no checks.
fn all_reported(
    section: &Section,
    caller: &Caller,
    tokens: Arg<Vec<Option<pgrx::Uuid>>>,
    ids: &[Option<i64>],
    reported: &[i64],
) {
    if reported.len() == ids.len() {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    if ids.iter().flatten().any(|id| !seen.insert(*id)) {
        invalid("ids must not repeat a job", None);
    }
    let tokens = tokens.get().unwrap_or_default();
    let stale = (0..ids.len())
        .find(|&n| ids[n].is_none_or(|id| !reported.contains(&id)))
        .unwrap_or(0);
    lease_error(
        section,
        ids[stale],
        tokens.get(stale).copied().flatten(),
        acting_on(caller),
    )
}

/// Raises the error that explains why `token` does not hold the lease on `job`. A job the
/// caller may not act on (`owner`: None for any) is reported as missing, so that nobody learns
/// others' job ids.
pub(crate) fn lease_error(
    section: &Section,
    job: Option<i64>,
    token: Option<pgrx::Uuid>,
    owner: Option<Datum>,
) -> ! {
    let (Some(job), Some(token)) = (job, token) else {
        refuse(
            PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            "job id and lease token must not be null",
            None,
        );
    };
    let live = section.run(
        &LIVE_JOB,
        parameters! {
            id: Some(Datum::from(job)),
            owner,
        },
    );
    if live.len() > 0 {
        let status: String = live.get(0, 0).unwrap_or_default();
        if status == "aborted" && live.get::<pgrx::Uuid>(0, 1) == Some(token) {
            refuse(
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("job {job} was aborted"),
                Some("Roll back the job's work and report it with jobs_fail, or let the lease run out."),
            );
        }
        let attempt: i32 = live.get(0, 2).unwrap_or_default();
        let claimed_by = live
            .get::<String>(0, 3)
            .map_or(String::new(), |w| format!(", last claimed by {w}"));
        refuse_with_detail(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("lease on job {job} is not held by this token"),
            Some(format!("The job is {status}, attempt {attempt} of it{claimed_by}.")),
            Some("The lease may have run out and the job been requeued; roll back this attempt's work."),
        );
    }
    let finished = section.run(
        &FINISHED_JOB,
        parameters! {
            id: Some(Datum::from(job)),
            owner,
        },
    );
    if finished.len() > 0 {
        let status: String = finished.get(0, 1).unwrap_or_default();
        let attempts: i32 = finished.get(0, 2).unwrap_or_default();
        refuse_with_detail(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("lease on job {job} is not held by this token"),
            Some(format!(
                "The job has finished: {status} after {attempts} attempts."
            )),
            Some("Roll back this attempt's work; the job needs nothing more."),
        );
    }
    missing_job(job)
}

/// The error of a job that does not exist, or that the caller may not act on.
pub(crate) fn missing_job(job: i64) -> ! {
    refuse(
        PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
        format!("job {job} does not exist"),
        None,
    )
}

// The SQL job executor's check of its lease: _lease_error(job bigint, token uuid, caller oid).
entry!(_lease_error, |fcinfo, arguments| {
    let section = Section::as_current_user();
    lease_error(
        &section,
        arguments.job.get(),
        arguments.token.get(),
        arguments.caller.datum(),
    )
});

// Finishes jobs for the extension's maintenance (returns how many):
// _finish(ids bigint[], tokens uuid[], expected text[], outcome text, caller oid,
//         results jsonb[], errors text[]).
entry!(_finish, |_fcinfo, arguments| {
    let section = Section::as_current_user();
    let finished = finish(
        &section,
        parameters! {
            ids: arguments.ids.datum(),
            tokens: arguments.tokens.datum(),
            statuses: arguments.expected.datum(),
            outcome: arguments.outcome.datum(),
            owner: arguments.caller.datum(),
            results: arguments.results.datum(),
            errors: arguments.errors.datum(),
        },
    );
    Datum::from(finished.len() as i32)
});

entry!(jobs_heartbeat, |fcinfo, arguments| {
    let caller = Caller::current();
    let lease = arguments.lease.datum();
    check_lease(lease);
    let (job, token) = (arguments.id.datum(), arguments.token.datum());
    let section = Section::as_owner(fcinfo);
    let renewed = section.run(
        &HEARTBEAT,
        parameters! {
            id: job,
            token,
            owner: acting_on(&caller),
            lease,
        },
    );
    lease_renewed(
        fcinfo,
        &caller,
        (arguments.id, arguments.token),
        section,
        &renewed,
    )
});

/// The largest progress a worker may record, in bytes of its text: a person's reading, kept in
/// the job's row.
const PROGRESS_BYTES: usize = 8192;

// jobs_progress(id, token, progress, lease): a heartbeat that keeps the attempt's progress.
entry!(jobs_progress, |fcinfo, arguments| {
    let caller = Caller::current();
    let lease = arguments.lease.datum();
    check_lease(lease);
    let Some(progress) = arguments.progress.datum() else {
        required("progress")
    };
    let size = output(progress, JSONBOID).len();
    if size > PROGRESS_BYTES {
        refuse(
            PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
            format!("progress must be at most {PROGRESS_BYTES} bytes as text, not {size}"),
            Some("Keep a summary in progress and the rest in the job's result."),
        );
    }
    let (job, token) = (arguments.id.datum(), arguments.token.datum());
    let section = Section::as_owner(fcinfo);
    let renewed = section.run(
        &PROGRESS,
        parameters! {
            id: job,
            token,
            owner: acting_on(&caller),
            lease,
            progress: Some(progress),
        },
    );
    lease_renewed(
        fcinfo,
        &caller,
        (arguments.id, arguments.token),
        section,
        &renewed,
    )
});

/// What a heartbeat answers once it ran (`renewed`: its job's status and lease's end, or no
/// row): the lease's state and end; a job that never existed, or that the caller may not act
/// on, is refused.
fn lease_renewed(
    fcinfo: pg_sys::FunctionCallInfo,
    caller: &Caller,
    (id, token): (Arg<i64>, Arg<pgrx::Uuid>),
    section: Section,
    renewed: &Rows,
) -> Datum {
    let (job, token) = (id.datum(), token.datum());
    note_leases(renewed, 1);
    let (state, until) = if renewed.len() > 0 {
        let status: Option<String> = renewed.get(0, 0);
        (
            pg_jobs_core::status::lease_state(status.as_deref()),
            renewed.datum(0, 1),
        )
    } else {
        if job.is_none() || token.is_none() {
            lease_error(&section, None, None, None);
        }
        let owner = acting_on(caller);
        if section.run(&LIVE_JOB, parameters! { id: job, owner }).len() == 0
            && section
                .run(&FINISHED_JOB, parameters! { id: job, owner })
                .len()
                == 0
        {
            missing_job(id.get().expect("checked"));
        }
        (pg_jobs_core::status::lease_state(None), None)
    };
    drop(section);
    record(fcinfo, &[state.into_datum(), until])
}

// jobs_result(id): one of the caller's jobs, live or finished, as a caller waiting for it reads it.
entry!(jobs_result, |fcinfo, arguments| {
    let caller = Caller::current();
    let Some(job) = arguments.id.get() else {
        required("job id")
    };
    let section = Section::as_owner(fcinfo);
    let found = section.run(
        &RESULT,
        parameters! {
            id: Some(Datum::from(job)),
            owner: acting_on(&caller),
        },
    );
    if found.len() == 0 {
        missing_job(job);
    }
    const TYPES: [Oid; 6] = [
        TEXTOID,
        JSONBOID,
        TEXTOID,
        INT4OID,
        JSONBOID,
        TIMESTAMPTZOID,
    ];
    let columns: Vec<Option<Datum>> = TYPES
        .iter()
        .enumerate()
        .map(|(column, &type_oid)| {
            found
                .datum(0, column)
                .map(|datum| section.keep(datum, type_oid))
        })
        .collect();
    drop(section);
    record(fcinfo, &columns)
});

// jobs_snooze(id, token, delay): the leased job back to waiting until delay from now, its attempt
// not counted; when it is due.
entry!(jobs_snooze, |fcinfo, arguments| {
    let caller = Caller::current();
    let Some(delay) = arguments.delay.datum() else {
        required("delay")
    };
    if outside(Some(delay), BACKOFF_SPAN) {
        invalid(
            format!(
                "delay must be from 0 to 1 year, not {}",
                interval_text(Some(delay))
            ),
            None,
        );
    }
    let section = Section::as_owner(fcinfo);
    let owner = acting_on(&caller);
    let snoozed = section.run(
        &SNOOZE,
        parameters! {
            id: arguments.id.datum(),
            token: arguments.token.datum(),
            owner,
            delay: Some(delay),
        },
    );
    if snoozed.len() == 0 {
        lease_error(&section, arguments.id.get(), arguments.token.get(), owner);
    }
    // Due again after the delay: its queue's claims start below it once this commits.
    placed(&snoozed, 0, [0, 1, 2, 3, 4]);
    leases_ended(&snoozed, [1, 2]);
    snoozed.datum(0, 4).expect("a job's run_at")
});

entry!(jobs_abort, |fcinfo, arguments| {
    let caller = Caller::current();
    let Some(job) = arguments.id.datum() else {
        required("job id")
    };
    let owner = acting_on(&caller);
    let section = Section::as_owner(fcinfo);
    let live = section.run(&LOCK_LIVE_JOB, parameters! { id: Some(job), owner });
    if live.get::<bool>(0, 2) == Some(true) {
        // Its row in jobs only names it: aborting that row ended it in job_history while the
        // compute scheduler went on handing out and paying for its slices.
        refuse(
            PgSqlErrorCode::ERRCODE_WRONG_OBJECT_TYPE,
            format!("job {} is a compute job", job.value() as i64),
            Some("compute_cancel cancels it."),
        );
    }
    let status = if live.len() == 0 {
        section
            .run(&FINISHED_JOB, parameters! { id: Some(job), owner })
            .datum(0, 0)
    } else if live.get::<String>(0, 0).as_deref() == Some("created") {
        if live.get::<bool>(0, 1) == Some(true) {
            // A waiting batch job that the abort ends leaves the counts of the SCHED page's
            // Jobs tab.
            super::batch::tally_one(&section, job, -1, false);
        }
        abort_waiting(&section, array(INT8OID, &[Some(job)]), owner, None).datum(0, 1)
    } else {
        section
            .run(&ABORT_LEASED, parameters! { id: Some(job) })
            .datum(0, 0)
    };
    // A job_status is passed by value.
    status.unwrap_or_else(|| missing_job(job.value() as i64))
});

entry!(jobs_ready_signal, |fcinfo, arguments| {
    let caller = Caller::current();
    let Some(queue) = arguments.queue.get() else {
        return null(fcinfo);
    };
    let section = Section::as_owner(fcinfo);
    section.text(&ready::signal(caller.identity, &queue))
});

/// What `jobs_queue_history`'s `keep` may say (the labels of `history_keep`).
const HISTORY_RULES: [&str; 3] = ["all", "failures", "none"];

/// A queue of the caller's own to set a rule of: refused when null, empty or the extension's,
/// which keeps its own rules (`reserved`: what the extension's queue does instead, and a hint).
pub(crate) fn callers_queue(queue: Arg<String>, example: &str, reserved: (&str, &str)) -> String {
    match queue.get() {
        None => invalid(
            "queue must name one of the caller's queues",
            Some(&format!("For example {example}.")),
        ),
        Some(queue) if queue.is_empty() => invalid("queue must not be empty", None),
        Some(queue) if queue.len() > QUEUE_BYTES => queue_too_long("queue", &queue).raise(None),
        Some(queue) if is_reserved_queue(&queue) => invalid(
            format!("queue {queue} is the extension's and {}", reserved.0),
            Some(reserved.1),
        ),
        Some(queue) => queue,
    }
}

entry!(jobs_queue_history, |fcinfo, arguments| {
    let caller = Caller::current();
    callers_queue(arguments.queue,
        "jobs_queue_history('emails', 'failures')",
        (
            "keeps every finished job",
            "Batch jobs, SQL jobs and compute jobs are read from job_history; their history is dropped by month with jobs_history_drop.",
        ),
    );
    let keep: Option<String> = arguments.keep.get();
    if keep
        .as_deref()
        .is_none_or(|keep| !HISTORY_RULES.contains(&keep))
    {
        invalid(
            format!(
                "unknown history rule {}",
                keep.map_or("null".into(), |keep| format!("\"{keep}\""))
            ),
            Some("keep is all (every finished job), failures (failed and aborted ones) or none."),
        );
    }
    let section = Section::as_owner(fcinfo);
    section.run(
        &SET_HISTORY_RULE,
        parameters! {
            owner: Some(Datum::from(caller.identity)),
            queue: arguments.queue.datum(),
            keep: arguments.keep.datum(),
        },
    );
    Datum::from(0)
});

/// Expired leases: requeued, or finished on their last attempt, when one may have run out (see
/// leases.rs); wakes the launcher when the earliest lease ends.
pub(crate) static EXPIRED_LEASES: Service = Service {
    name: "expired leases",
    work: |section, _| {
        if leases::take_due() {
            rescue(section);
        }
    },
    next: |_, _| Some(leases::next()),
};

/// Requeues the jobs whose leases ran out, or finishes those on their last attempt (or aborted);
/// returns how many. Locked rows are skipped, so a worker completing right now is never
/// overwritten, and an owner holding its job's row (a change of its public fields in an open
/// transaction) delays only that job's rescue, not everyone's: it is looked at again 10 seconds
/// later. The callers run this only when leases.rs says a lease may have run out; it tells
/// leases.rs when the earliest lease left runs out, after raising it for the scan (see there).
fn rescue(section: &Section) -> i32 {
    leases::rescanning();
    let scan = section.run(&EXPIRED_LEASES_SCAN, &[]);
    let (to_requeue, to_finish) = (scan.datum(0, 0), scan.datum(0, 1));
    let expired = to_requeue.map_or(0, array_length) + to_finish.map_or(0, array_length);
    let mut rescued = 0;
    if let Some(ids) = to_requeue {
        let without_log = |id: i64| {
            // Its log, which a member's failures can fill to jsonb's limit, cannot take the
            // lease's end: requeued without it, rather than left leased for good.
            let requeued = requeue_expired(section, &REQUEUE_EXPIRED_UNLOGGED, int8_array([id]));
            warning!("pg_jobs: job {id} was requeued without its expired lease in its log of errors, which is full");
            requeued
        };
        rescued += each_alone_on_failure(
            ids,
            "requeue",
            |ids| requeue_expired(section, &REQUEUE_EXPIRED, ids),
            Some(&without_log),
        );
    }
    if let Some(ids) = to_finish {
        rescued += each_alone_on_failure(ids, "end", |ids| finish_expired(section, ids), None);
    }
    metrics::count(Counter::Rescued, rescued as usize);
    let held = (rescued as usize) < expired;
    let look_again =
        held.then(|| unsafe { pg_sys::GetCurrentStatementStartTimestamp() } + 10_000_000);
    let earliest = scan.datum(0, 2).map(|at| at.value() as pg_sys::TimestampTz);
    leases::found(earliest.into_iter().chain(look_again).min());
    rescued
}

/// Requeues the expired jobs `ids` by `statement` (requeue_expired, with or without its log);
/// returns how many.
fn requeue_expired(section: &Section, statement: &'static Statement, ids: Datum) -> i32 {
    let requeued = section.run(statement, parameters! { ids: Some(ids) });
    let count = requeued.get::<i32>(0, 0).unwrap_or(0);
    if count > 0 {
        // Due now, maybe below where their queues' claims start.
        heads::requeued();
    }
    if let Some(batch_jobs) = requeued.datum(0, 2) {
        // Requeued batch jobs are due again: counted for the Jobs tab.
        super::batch::tally(section, batch_jobs, 1, false);
    }
    if let Some(signals) = requeued.datum(0, 1) {
        section.run(&NOTIFY_SIGNALS, parameters! { signals: Some(signals) });
    }
    count
}

/// Finishes the expired jobs `ids` on their last attempt (into job_history); returns how many.
fn finish_expired(section: &Section, ids: Datum) -> i32 {
    section
        .run(&FINISH_EXPIRED, parameters! { ids: Some(ids) })
        .get::<i32>(0, 0)
        .unwrap_or(0)
}

/// `all` of the expired jobs `ids` (a bigint[]) at once; if that fails, `all` of each alone, and
/// `instead` of one that fails alone too; one that still fails is left (a WARNING names it; it is
/// looked at again with the held ones). So one member's job holds back no other identity's: both
/// statements once failed for every identity's expired leases, at every round, on one member's
/// job (finish_expired on a queue name no history index could hold, requeue_expired on a log of
/// errors past jsonb's limit).
fn each_alone_on_failure(
    ids: Datum,
    what: &str,
    all: impl Fn(Datum) -> i32,
    instead: Option<&dyn Fn(i64) -> i32>,
) -> i32 {
    in_subtransaction(|| all(ids)).unwrap_or_else(|failure| {
        failure.unless_cancelled();
        elements(ids)
            .into_iter()
            .flatten()
            .map(|id| {
                let id = id.value() as i64;
                in_subtransaction(|| all(int8_array([id])))
                    .or_else(|failure| {
                        let failure = failure.unless_cancelled();
                        match instead {
                            Some(instead) => in_subtransaction(|| instead(id)).map_err(|_| failure),
                            None => Err(failure),
                        }
                    })
                    .unwrap_or_else(|failure| {
                        let failure = failure.unless_cancelled();
                        warning!(
                            "pg_jobs: the expired lease of job {id} could not {what} it: {failure}"
                        );
                        0
                    })
            })
            .sum()
    })
}

// The rescue, for tests that drive it: _rescue_expired() returns how many jobs it requeued or
// finished.
entry!(_rescue_expired, |_fcinfo, _| {
    Datum::from(rescue(&Section::as_current_user()))
});
