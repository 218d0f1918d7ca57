//! The monthly store of finished jobs (`sql/040_history.sql`): its months made, listed and
//! dropped, by an administrator or by the launcher (statements in `history.sql`).

use pgrx::pg_sys::{self, Datum, DATEOID};
use pgrx::prelude::*;
use pgrx::IntoDatum;

use super::cached;
use super::call::{in_subtransaction, invalid, materialize, return_row, Section, Statement};
use super::services::{no_wish, Service};
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("history.sql"));

static PREPARE_MONTHS: Statement = statement("prepare_months");
static PARTITIONS: Statement = statement("partitions");
static MONTHS_BEFORE: Statement = statement("months_before");
static MISSING_MONTHS: Statement = statement("missing_months");
static MADE: Statement = statement("made");
static WAIT_FOR_FINISHES: Statement = statement("wait_for_finishes");
static TAKE_WITHOUT_WAITING: Statement = statement("take_without_waiting");
static TAKE_CATCH_ALL_WITHOUT_WAITING: Statement = statement("take_catch_all_without_waiting");
static MONTH_STATEMENTS: Statement = statement("month_statements");
static MONTH_IS_PAST: Statement = statement("month_is_past");
static FORGET_KEYS_OF_MONTH: Statement = statement("forget_keys_of_month");
static ANY_RULE: Statement = statement("any_rule");

/// Whether any identity has set a rule for what job_history keeps of a queue
/// (`queue_history_rules`): where none has, every finished job is kept, and a finish is set up
/// without reading them (FINISH in queue.rs). Known to the backend once read (cached.rs).
pub(crate) fn any_rule(section: &Section) -> bool {
    cached::holds_rows(section, c"queue_history_rules", &ANY_RULE)
}

/// The months of `job_history`, from last month to twelve ahead.
pub(crate) static MONTHS: Service = Service {
    name: "history months",
    work: |section, _| {
        section.run(&PREPARE_MONTHS, &[]);
    },
    next: no_wish,
};

/// Runs a statement made of names and literals (DDL takes no parameters).
fn run_text(text: &str) {
    Spi::run(text).unwrap_or_else(|problem| error!("pg_jobs: {problem}"));
}

// jobs_history_months(): each month's partition and how many jobs it holds.
entry!(jobs_history_months, |fcinfo, _| {
    materialize(fcinfo);
    let section = Section::as_current_user();
    let partitions = section.run(&PARTITIONS, &[]);
    for row in 0..partitions.len() {
        let name: String = partitions.get(row, 0).expect("a partition");
        let jobs = Spi::get_one::<i64>(&format!("SELECT count(*) FROM {name}"))
            .unwrap_or_else(|problem| error!("pg_jobs: {problem}"))
            .unwrap_or(0);
        let month = partitions.datum(row, 2);
        return_row(
            fcinfo,
            &[
                month.unwrap_or(Datum::from(0)),
                partitions.datum(row, 1).expect("a partition's oid"),
                Datum::from(jobs),
            ],
            &[month.is_none(), false, false],
        );
    }
    Datum::from(0)
});

// The indexes of one month of job_history (or of its catch-all partition). Made on each
// partition, not on job_history: pg_dump writes a month (an ordinary table) and attaches it
// before it makes the month's indexes, and an index on the extension's job_history would make
// them at the attach, so that the restore failed on the dump's own.
fn index_history(partition: &str) {
    // By id; and an owner's jobs by status and queue, where a member's reads go (the policy
    // owner_reads): one index for both, not one by owner and one by status and queue, so that a
    // job's completion writes two entries, not three (an index entry is about 7,000 of the
    // 77,000 instructions of a completion at batch 100).
    for columns in ["id", "owner, status, queue"] {
        run_text(&format!("CREATE INDEX ON {partition} ({columns})"));
    }
    // A queue's jobs failed in the last hour (the Queues tab, at each reading): failures only, so
    // that the month's successes neither enter it nor are read for it.
    run_text(&format!(
        "CREATE INDEX ON {partition} (queue, end_time) WHERE status = 'failed'"
    ));
    // Whether a month holds finished batch jobs (the Jobs tab's months, _batch_month_list): batch
    // jobs only, so that a month of a million queue jobs is not read to find none (368 → 15 ms).
    run_text(&format!(
        "CREATE INDEX ON {partition} (due_at) WHERE pgjobs._is_batch_queue(queue)"
    ));
    // A finished job by its key (batch_get by command hash); jobs without a key never enter it.
    // By bytes, as jobs_key (sql/030_queue.sql): a schedule's jobs are a prefix of keys.
    run_text(&format!(
        "CREATE INDEX ON {partition} (idempotency_key text_pattern_ops) WHERE idempotency_key IS NOT NULL"
    ));
}

entry!(_index_history, |fcinfo, arguments| {
    let partition = arguments.part.given();
    let _section = Section::as_current_user();
    index_history(&super::datum::output(partition, pg_sys::REGCLASSOID));
    Datum::from(0)
});

// jobs_history_prepare(months_ahead, wait): makes the partitions of job_history from last month
// to months_ahead months ahead; returns those it made. wait false (the launcher): a month that
// cannot be attached at once is left for a later call. The attach locks job_history_other
// alone, and any open read of job_history holds it (a member's BEGIN; SELECT count(*) FROM
// pgjobs.job_history; left open made every round of the launcher wait a second and fail); the
// launcher makes the months a year ahead, so a reader would have to stay for most of a year
// before a month began without its partition.
entry!(jobs_history_prepare, |fcinfo, arguments| {
    let months_ahead = arguments
        .months_ahead
        .get()
        .filter(|m| (0..=120).contains(m));
    let Some(months_ahead) = months_ahead else {
        invalid("months_ahead must be between 0 and 120", None)
    };
    let wait = arguments.wait.get().unwrap_or(true);
    materialize(fcinfo);
    let section = Section::as_current_user();
    let missing = section.run(
        &MISSING_MONTHS,
        parameters! { months_ahead: Some(Datum::from(months_ahead)) },
    );
    for row in 0..missing.len() {
        let partition: String = missing.get(row, 0).expect("a partition's name");
        if wait {
            section.run(&WAIT_FOR_FINISHES, &[]);
        } else if let Err(problem) = in_subtransaction(|| {
            section.run(&TAKE_WITHOUT_WAITING, &[]);
            section.run(&TAKE_CATCH_ALL_WITHOUT_WAITING, &[]);
        }) {
            log!("pg_jobs: month {partition} of job_history not made yet: job_history is in use ({problem})");
            break;
        }
        if section
            .run(
                &MADE,
                parameters! { partition: partition.as_str().into_datum() },
            )
            .datum(0, 0)
            .is_some()
        {
            continue;
        }
        let made = section.run(
            &MONTH_STATEMENTS,
            parameters! {
                partition: partition.as_str().into_datum(),
                month_start: missing.datum(row, 1),
                next_month_start: missing.datum(row, 2),
            },
        );
        let [create, fill, attach] =
            [0, 1, 2].map(|n| made.get::<String>(0, n).expect("a statement"));
        run_text(&create);
        run_text(&fill);
        index_history(&partition);
        run_text(&attach);
        let oid = section
            .run(
                &MADE,
                parameters! { partition: partition.as_str().into_datum() },
            )
            .datum(0, 0);
        return_row(fcinfo, &[oid.expect("the month made")], &[false]);
    }
    Datum::from(0)
});

// jobs_history_drop(before): drops the months of job_history that end on or before `before`;
// returns the months dropped.
entry!(jobs_history_drop, |fcinfo, arguments| {
    let before = arguments.before.datum();
    // A date is days from 2000-01-01; ±infinity are the ends of i32.
    if before.is_some_and(|day| [i32::MIN, i32::MAX].contains(&(day.value() as i32))) {
        invalid(
            format!(
                "before must be a finite date, not {}",
                super::datum::output(before.expect("given"), DATEOID)
            ),
            Some("Give a day of the month, for example date_trunc('month', now())::date."),
        );
    }
    materialize(fcinfo);
    let section = Section::as_current_user();
    let past = before.map(|day| section.run(&MONTH_IS_PAST, parameters! { before: Some(day) }));
    let Some(before) =
        before.filter(|_| past.as_ref().and_then(|p| p.get::<bool>(0, 0)) == Some(true))
    else {
        let shown = past
            .and_then(|p| p.get::<String>(0, 1))
            .unwrap_or_else(|| "null".into());
        invalid(
            format!("cannot drop history before {shown}: it includes the current month"),
            Some(
                "Only months before the current one can be dropped, for example \
                  jobs_history_drop((now() - interval '6 months')::date).",
            ),
        )
    };
    let months = section.run(&MONTHS_BEFORE, parameters! { before: Some(before) });
    for row in 0..months.len() {
        let partition: String = months.get(row, 0).expect("a partition");
        let month = months.datum(row, 1).expect("a month");
        section.run(&FORGET_KEYS_OF_MONTH, parameters! { month: Some(month) });
        run_text(&format!("DROP TABLE {partition}"));
        return_row(fcinfo, &[month], &[false]);
    }
    Datum::from(0)
});
