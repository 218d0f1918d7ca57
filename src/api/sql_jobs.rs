//! SQL jobs: added here, run by the launcher's executors (`src/bgworker/executor.rs`), recorded
//! in `job_runs` (`sql/050_sql_jobs.sql`).

use pgrx::pg_sys::{self, Datum};
use pgrx::prelude::*;
use pgrx::IntoDatum;

use super::call::{in_subtransaction, Caller, LockTimeout, Section, Statement};
use super::datum::{input, interval_span, interval_text};
use super::queue::{add, check_all, claim_sql_jobs, Field, Spec, SQL_QUEUE};
use super::schedules::_wake_launcher;
use super::services::{no_wish, wished, Service};
use crate::{entry, gucs, named_statements, parameters};

named_statements!(include_str!("sql_jobs.sql"));

static READY: Statement = statement("ready");
static START: Statement = statement("start");
static SUCCEEDED: Statement = statement("succeeded");
static FAIL: Statement = statement("fail");
static FAILED: Statement = statement("failed");
static END_LOST_RUNS: Statement = statement("end_lost_runs");
static OVERDUE_RUNS_AT: Statement = statement("overdue_runs");
static END_RUN: Statement = statement("end_run");
static ABORT_JOB: Statement = statement("abort_job");
static FAIL_TIMED_OUT: Statement = statement("fail_timed_out");
static END_EXECUTOR: Statement = statement("end_executor");
static NEXT_RUN_EVENT: Statement = statement("next_run_event");
static FORGET_OLD_RUNS: Statement = statement("forget_old_runs");

/// The longest statement timeout PostgreSQL can hold (2^31 - 1 ms, a little under 25 days), in
/// the whole days a caller would write.
const LONGEST_TIMEOUT_DAYS: i128 = 24;

/// A SQL job's statement timeout: positive, and no more than a statement timeout can hold.
pub(crate) fn check_timeout(timeout: Option<Datum>) {
    if !timeout
        .is_some_and(|t| (1..=LONGEST_TIMEOUT_DAYS * 86_400_000_000).contains(&interval_span(t)))
    {
        super::call::invalid(
            format!(
                "timeout must be positive and at most 24 days, not {}",
                interval_text(timeout)
            ),
            None,
        );
    }
}

/// The job of a SQL job: its statements and timeout in the payload, in the reserved queue, with
/// a lease that outlives the statement timeout, so that a slow job is cancelled before anyone
/// else could take it.
pub(crate) fn sql_job_fields(spec: &mut Spec, sql: &str, timeout: Datum) {
    let span = interval_span(timeout);
    let payload = serde_json::json!({"sql": sql, "timeout_ms": (span + 500) / 1000});
    let timeout = unsafe { &*timeout.cast_mut_ptr::<pg_sys::Interval>() };
    let lease = pgrx::datum::Interval::new(timeout.month, timeout.day, timeout.time + 60_000_000)
        .unwrap_or_else(|_| error!("pg_jobs: interval out of range"));
    spec.set(Field::Task, "sql".into_datum());
    spec.set(
        Field::Payload,
        Some(input(payload.to_string(), pg_sys::JSONBOID)),
    );
    spec.set(Field::Queue, SQL_QUEUE.into_datum());
    spec.set(Field::Lease, lease.into_datum());
}

entry!(jobs_add_sql, |fcinfo, arguments| {
    let caller = Caller::current();
    let sql = arguments
        .sql
        .get()
        .filter(|sql| !sql.trim().is_empty())
        .unwrap_or_else(|| {
            super::call::refuse(
                PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
                "sql must not be empty",
                Some("Pass the statements the job runs, for example 'VACUUM ANALYZE orders'."),
            )
        });
    let timeout = arguments.timeout.datum();
    check_timeout(timeout);
    let mut spec = Spec::empty();
    for (field, given) in [
        (Field::RunAt, arguments.run_at.datum()),
        (Field::Priority, arguments.priority.datum()),
        (Field::MaxAttempts, arguments.max_attempts.datum()),
        (Field::Backoff, arguments.backoff.datum()),
        (Field::MaxBackoff, arguments.max_backoff.datum()),
        (Field::Key, arguments.key.datum()),
        (Field::OnConflict, arguments.on_conflict.datum()),
    ] {
        spec.set(field, given);
    }
    sql_job_fields(&mut spec, &sql, timeout.expect("checked"));
    check_all(&[spec], true, false);
    let section = Section::as_owner(fcinfo);
    let id = add(&section, caller.identity, &[spec])[0];
    _wake_launcher();
    Datum::from(id)
});

/// How many SQL jobs are ready to run, counted up to `limit`.
pub(crate) fn ready_sql_jobs(limit: i32) -> i64 {
    Section::as_current_user()
        .run(&READY, parameters! { limit: Some(Datum::from(limit)) })
        .get(0, 0)
        .unwrap_or(0)
}

/// One SQL job an executor holds: what it runs, as whom, for how long, and its run's row.
pub(crate) struct SqlJob {
    pub job: i64,
    pub token: pgrx::Uuid,
    pub sql: String,
    pub timeout_ms: i64,
    pub owner: pg_sys::Oid,
    pub run: i64,
}

/// Claims the next ready SQL job for the executor with process id `pid` (its lease held by
/// `worker`, the executor's name) and records its run; None when none is ready.
pub(crate) fn next_sql_job(worker: &str, pid: i32) -> Option<SqlJob> {
    let (job, token) = claim_sql_jobs(worker, 1).pop()?;
    let section = Section::as_current_user();
    let started = section.run(
        &START,
        parameters! { job_id: Some(Datum::from(job)), pid: Some(Datum::from(pid)) },
    );
    Some(SqlJob {
        job,
        token,
        sql: started.get(0, 0).expect("a SQL job's statements"),
        timeout_ms: started.get(0, 1).expect("a SQL job's timeout"),
        owner: started.get(0, 2).expect("a SQL job's owner"),
        run: started.get(0, 3).expect("a SQL job's run"),
    })
}

/// How long an executor's report of a job waits for the job's rows at most. Its owner can hold
/// them (an abort, or a heartbeat with the job's token, in a transaction left open), and the
/// executors are shared: a report that waited for that would hold one from every identity's SQL
/// jobs for as long. An abort that commits at once is waited for; past this the report fails,
/// the job's work is rolled back, and the job is left to its lease (or, when its run cannot be
/// ended either, the executor exits and the run is lost, as if it had been killed).
const REPORT_LOCK_WAIT_MS: i32 = 100;

impl SqlJob {
    /// Completes the job and ends its run, in the transaction its statements ran in.
    pub(crate) fn succeeded(&self) {
        let _bounded = LockTimeout::of(REPORT_LOCK_WAIT_MS);
        Section::as_current_user().run(
            &SUCCEEDED,
            parameters! {
                job_id: Some(Datum::from(self.job)),
                lease_token: self.token.into_datum(),
                run_id: Some(Datum::from(self.run)),
            },
        );
    }

    /// Reports the job's statements' error: its attempt fails (or ends aborted, when it was
    /// aborted), and its run says why. A report refused (the lease lost meanwhile) is said in
    /// the run's message; the job is then left to its lease.
    pub(crate) fn failed(&self, message: &str) {
        let _bounded = LockTimeout::of(REPORT_LOCK_WAIT_MS);
        let section = Section::as_current_user();
        let reported = in_subtransaction(|| {
            section.run(
                &FAIL,
                parameters! {
                    job_id: Some(Datum::from(self.job)),
                    lease_token: self.token.into_datum(),
                    error: message.into_datum(),
                },
            );
        });
        let message = match reported {
            Ok(()) => message.to_string(),
            Err(refusal) => format!("{message} (and the job could not be reported: {refusal})"),
        };
        section.run(
            &FAILED,
            parameters! {
                run_id: Some(Datum::from(self.run)),
                job_id: Some(Datum::from(self.job)),
                message: message.as_str().into_datum(),
            },
        );
    }
}

/// Runs whose executor died (a crash, kill -9) are `lost`, and their jobs' leases end now.
pub(crate) static LOST_RUNS: Service = Service {
    name: "lost runs",
    work: |section, at| {
        section.run(&END_LOST_RUNS, parameters! { at: Some(at) });
    },
    next: no_wish,
};

/// Runs still going at their deadline (their timeout, or an abort, plus pg_jobs.cancel_grace)
/// did not stop when cancelled (a job that catches query_canceled): each is recorded aborted
/// (its job was aborted) or timed out, its job finished as aborted or failed (the attempt
/// counts, as a timeout's does), and its executor's process ended. A report of the job after
/// this is fenced by its lease token. Wakes the launcher for the next deadline, and for the next
/// SQL job due.
pub(crate) static OVERDUE_RUNS: Service = Service {
    name: "overdue runs",
    work: stop_overdue_runs,
    next: |section, _| wished(section, &NEXT_RUN_EVENT, &[]),
};

fn stop_overdue_runs(section: &Section, at: Datum) {
    let overdue = section.run(&OVERDUE_RUNS_AT, parameters! { at: Some(at) });
    let grace = gucs::CANCEL_GRACE.get();
    for row in 0..overdue.len() {
        let (run, pid, job, token) = (
            overdue.datum(row, 0),
            overdue.datum(row, 1),
            overdue.datum(row, 2),
            overdue.datum(row, 3),
        );
        let aborted = overdue.get::<bool>(row, 4) == Some(true);
        let (outcome, cancelled_by) = if aborted {
            ("aborted", "abort")
        } else {
            ("timed out", "timeout")
        };
        let ended = in_subtransaction(|| {
            let message = format!(
                "did not stop within {grace} s of its {cancelled_by}; its process was ended"
            );
            section.run(
                &END_RUN,
                parameters! {
                    run_id: run,
                    outcome: outcome.into_datum(),
                    message: message.as_str().into_datum(),
                },
            );
            section.run(
                if aborted { &ABORT_JOB } else { &FAIL_TIMED_OUT },
                parameters! { job_id: job, lease_token: token },
            );
        });
        // One job that cannot be finished must not keep the others' executors running: its
        // process is ended all the same, and the rescue takes the job when its lease runs out.
        if let Err(problem) = ended {
            let message =
                format!("its process was ended; the job is left to its lease ({problem})");
            section.run(
                &END_RUN,
                parameters! {
                    run_id: run,
                    outcome: outcome.into_datum(),
                    message: message.as_str().into_datum(),
                },
            );
        }
        section.run(&END_EXECUTOR, parameters! { pid });
    }
}

/// Runs are kept pg_jobs.history_days days.
pub(crate) static RUN_HISTORY: Service = Service {
    name: "run history",
    work: |section, at| {
        section.run(
            &FORGET_OLD_RUNS,
            parameters! {
                at: Some(at),
                history_days: Some(Datum::from(gucs::HISTORY_DAYS.get())),
            },
        );
    },
    next: no_wish,
};
