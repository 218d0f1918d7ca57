//! The SCHED page's reads of batch jobs that are Rust (`sql/085_batch.sql` has the others): a
//! command's latest job, the check of a reading's grouping, statuses and counts, and the months
//! of finished jobs outside every month's partition. Run as the caller, through row-level
//! security. Statements in `batch_reads.sql`.

use pg_jobs_core::batch::status_rank;
use pgrx::pg_sys::{Datum, JSONBOID, TEXTOID, TIMESTAMPTZOID};

use super::call::{invalid, materialize, null, Section, Statement};
use super::datum::{elements, literal_or_null, output};
use super::refusals::{finite_date, row_count};
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("batch_reads.sql"));

static LATEST_OF_HASH: Statement = statement("latest_of_hash");
static ACTIVE_IDS: Statement = statement("active_ids");
static ACTIVE_FOUND: Statement = statement("active_found");
static FOUND: Statement = statement("found");
static ACTIVE_GROUPS: Statement = statement("active_groups");
static GROUPS: Statement = statement("groups");
// A group's active jobs' ids.
static MINUTE_IDS: Statement = statement("minute_ids");
static ROUTINE_IDS: Statement = statement("routine_ids");
static COMPUTER_IDS: Statement = statement("computer_ids");
static PENDING_IDS: Statement = statement("pending_ids");
static WAITING_IDS: Statement = statement("waiting_ids");
static UNTALLIED_IDS: Statement = statement("untallied_ids");
static ACTIVE_ROWS: Statement = statement("active_rows");
static GROUP_ROWS: Statement = statement("group_rows");
static HISTORY_GAPS: Statement = statement("history_gaps");
static MONTHS_BETWEEN: Statement = statement("months_between");

// batch_get(hash): the caller's latest batch job with this command hash.
entry!(batch_get, |fcinfo, arguments| {
    let hash = arguments.hash.get();
    let well_formed = hash.as_deref().is_some_and(|hash| {
        hash.len() == 64
            && hash
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    if !well_formed {
        invalid(
            format!("malformed hash {}", literal_or_null(hash.as_deref())),
            Some("A command hash is 64 lowercase hexadecimal digits, as batch_jobs.hash shows."),
        );
    }
    materialize(fcinfo);
    let section = Section::as_current_user();
    section
        .run(
            &LATEST_OF_HASH,
            parameters! { hash: arguments.hash.datum() },
        )
        .return_all(fcinfo);
    Datum::from(0)
});

// _batch_check_reading(by, statuses, limit_rows, offset_rows): refuses a grouping, a status word
// or a count of rows that the page's reads do not know.
entry!(_batch_check_reading, |fcinfo, arguments| {
    let by = arguments.by.get();
    check_reading(
        by.as_deref(),
        arguments.statuses.datum(),
        arguments.limit_rows.get(),
        arguments.offset_rows.get(),
    );
    Datum::from(0)
});

/// Refuses a grouping `by`, a word of `statuses` (a text array) or a count of rows that the
/// page's reads do not know.
fn check_reading(
    by: Option<&str>,
    statuses: Option<Datum>,
    limit_rows: Option<i32>,
    offset_rows: Option<i32>,
) {
    if !by.is_some_and(|by| ["time", "routine", "status", "computer"].contains(&by)) {
        invalid(
            format!("unknown grouping {}", literal_or_null(by)),
            Some("Group by time, routine, status or computer."),
        );
    }
    for word in statuses.map(elements).unwrap_or_default() {
        let word = word.map(|word| output(word, TEXTOID));
        if word.as_deref().and_then(status_rank).is_none() {
            invalid(
                format!("unknown status {}", literal_or_null(word.as_deref())),
                Some("Statuses are NEW, WAITING, BLOCKED, PENDING, FETCHED, RUNNING, COMPLETED, ERROR and CANCEL."),
            );
        }
    }
    row_count(limit_rows, "limit_rows");
    row_count(offset_rows, "offset_rows");
}

// _batch_unpartitioned_months(): the months of the caller's batch jobs in job_history_other,
// which holds the finished jobs of months without a partition (due before the oldest month
// made, or far ahead): read range by range of due_at that no month's partition covers, so that
// only that partition is read.
entry!(_batch_unpartitioned_months, |fcinfo, _| {
    materialize(fcinfo);
    let section = Section::as_current_user();
    let gaps = section.run(&HISTORY_GAPS, &[]);
    for gap in 0..gaps.len() {
        section
            .run(
                &MONTHS_BETWEEN,
                parameters! { since: gaps.datum(gap, 0), until: gaps.datum(gap, 1) },
            )
            .return_all(fcinfo);
    }
    Datum::from(0)
});

/// The arguments every page read checks: a month (null: the active jobs), status words, a
/// text to search for, and a count of rows and where they start.
struct Reading {
    month: Option<Datum>,
    statuses: Option<Datum>,
    search: Option<Datum>,
    limit_rows: Option<Datum>,
    offset_rows: Option<Datum>,
}

impl Reading {
    /// Checks a reading of `by`.
    fn checked(self, by: Option<&str>) -> Self {
        let reading = self;
        finite_date(reading.month, "month");
        let rows = |datum: Option<Datum>| datum.map(|rows| rows.value() as i32);
        check_reading(
            by,
            reading.statuses,
            rows(reading.limit_rows),
            rows(reading.offset_rows),
        );
        reading
    }

    /// Whether it reads the active jobs without a search: then they are counted, not read.
    fn counted(&self) -> bool {
        self.month.is_none() && self.search.is_none()
    }
}

// batch_find(month, statuses, search, limit_rows, offset_rows): the caller's batch jobs of a
// month (active ones when month is null), by status words and text: {rows (newest first), total,
// counts (by status), months (that have jobs)}.
entry!(batch_find, |fcinfo, arguments| {
    let reading = Reading {
        month: arguments.month.datum(),
        statuses: arguments.statuses.datum(),
        search: arguments.search.datum(),
        limit_rows: arguments.limit_rows.datum(),
        offset_rows: arguments.offset_rows.datum(),
    }
    .checked(Some("time"));
    let section = Section::as_current_user();
    let found = if reading.counted() {
        // The active jobs, counted without reading them; the rows are the newest, their ids read
        // backwards from the jobs' columns until enough are found.
        let ids = if reading
            .limit_rows
            .is_some_and(|rows| rows.value() as i32 > 0)
        {
            section
                .run(
                    &ACTIVE_IDS,
                    parameters! {
                        statuses: reading.statuses,
                        limit_rows: reading.limit_rows,
                        offset_rows: reading.offset_rows,
                    },
                )
                .datum(0, 0)
        } else {
            None
        };
        section.run(
            &ACTIVE_FOUND,
            parameters! { statuses: reading.statuses, ids },
        )
    } else {
        section.run(
            &FOUND,
            parameters! {
                month: reading.month,
                statuses: reading.statuses,
                search: reading.search,
                limit_rows: reading.limit_rows,
                offset_rows: reading.offset_rows,
            },
        )
    };
    match found.datum(0, 0) {
        Some(found) => section.keep(found, JSONBOID),
        None => null(fcinfo),
    }
});

// batch_groups(by, month, statuses, search): the caller's batch jobs in groups (by time: the
// minute due and the routine; routine, status or computer), each with its most pressing status
// and its count per status.
entry!(batch_groups, |fcinfo, arguments| {
    let by = arguments.by.get();
    let reading = Reading {
        month: arguments.month.datum(),
        statuses: arguments.statuses.datum(),
        search: arguments.search.datum(),
        limit_rows: None,
        offset_rows: None,
    }
    .checked(by.as_deref());
    materialize(fcinfo);
    let section = Section::as_current_user();
    let by = arguments.by.datum();
    let groups = if reading.counted() {
        section.run(
            &ACTIVE_GROUPS,
            parameters! { by, statuses: reading.statuses },
        )
    } else {
        section.run(
            &GROUPS,
            parameters! {
                by,
                month: reading.month,
                statuses: reading.statuses,
                search: reading.search,
            },
        )
    };
    groups.return_all(fcinfo);
    Datum::from(0)
});

// batch_group_jobs(by, group_key, month, statuses, search, limit_rows, offset_rows): the jobs of
// one group of batch_groups, newest first.
entry!(batch_group_jobs, |fcinfo, arguments| {
    let by = arguments.by.get();
    let reading = Reading {
        month: arguments.month.datum(),
        statuses: arguments.statuses.datum(),
        search: arguments.search.datum(),
        limit_rows: arguments.limit_rows.datum(),
        offset_rows: arguments.offset_rows.datum(),
    }
    .checked(by.as_deref());
    materialize(fcinfo);
    let section = Section::as_current_user();
    let key = arguments.group_key.get();
    if !reading.counted() {
        section
            .run(
                &GROUP_ROWS,
                parameters! {
                    month: reading.month,
                    statuses: reading.statuses,
                    search: reading.search,
                    by: arguments.by.datum(),
                    group_key: arguments.group_key.datum(),
                    limit_rows: reading.limit_rows,
                    offset_rows: reading.offset_rows,
                },
            )
            .return_all(fcinfo);
        return Datum::from(0);
    }
    // The group's active jobs: the ids of its newest from the jobs' columns (an index range of
    // its routine and minute, or of its routine), then those rows of the view.
    let Some(key) = key else {
        return Datum::from(0);
    };
    let (statuses, limit_rows, offset_rows) =
        (reading.statuses, reading.limit_rows, reading.offset_rows);
    let ids = match by.as_deref() {
        Some("time") => {
            // "YYYY-MM-DD HH:MM routine": a key of another shape, or of no such minute, names no
            // group.
            let shaped = key.len() >= 17
                && key.bytes().take(17).enumerate().all(|(n, b)| match n {
                    4 | 7 => b == b'-',
                    10 | 16 => b == b' ',
                    13 => b == b':',
                    _ => b.is_ascii_digit(),
                });
            if !shaped
                || chrono::NaiveDateTime::parse_from_str(&key[..16], "%Y-%m-%d %H:%M").is_err()
            {
                return Datum::from(0);
            }
            let minute = super::datum::input(format!("{}+00", &key[..16]), TIMESTAMPTZOID);
            section.run(
                &MINUTE_IDS,
                parameters! {
                    label: Some(section.text(&key[17..])),
                    minute: Some(minute),
                    statuses,
                    limit_rows,
                    offset_rows,
                },
            )
        }
        Some("routine") => section.run(
            &ROUTINE_IDS,
            parameters! {
                label: Some(section.text(&key)),
                statuses,
                limit_rows,
                offset_rows,
            },
        ),
        Some("computer") => section.run(
            &COMPUTER_IDS,
            parameters! {
                computer: Some(section.text(&key)),
                statuses,
                limit_rows,
                offset_rows,
            },
        ),
        // A status word: the other words than PENDING and WAITING are the untallied jobs' (and
        // few).
        _ => {
            let statement = match key.as_str() {
                "PENDING" => &PENDING_IDS,
                "WAITING" => &WAITING_IDS,
                _ => &UNTALLIED_IDS,
            };
            section.run(
                statement,
                parameters! {
                    status: Some(section.text(&key)),
                    statuses,
                    limit_rows,
                    offset_rows,
                },
            )
        }
    }
    .datum(0, 0);
    section
        .run(&ACTIVE_ROWS, parameters! { ids })
        .return_all(fcinfo);
    Datum::from(0)
});
