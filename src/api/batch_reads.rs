//! The SCHED page's reads of batch jobs that are Rust (`sql/085_batch.sql` has the others): a
//! command's latest job, the check of a reading's grouping, statuses and counts, and the months
//! of finished jobs outside every month's partition. Run as the caller, through row-level
//! security. Statements in `batch_reads.sql`.

use pg_jobs_core::batch::status_rank;
use pgrx::pg_sys::{Datum, TEXTOID, TIMESTAMPTZOID};

use super::call::{argument, invalid, materialize, value, Section, Statement};
use super::datum::{elements, output, quote_literal};
use crate::{entry, named_statements};

named_statements!(include_str!("batch_reads.sql"));

static LATEST_OF_HASH: Statement = statement("latest_of_hash", &[TEXTOID]);
static HISTORY_GAPS: Statement = statement("history_gaps", &[]);
static MONTHS_BETWEEN: Statement = statement("months_between", &[TIMESTAMPTZOID, TIMESTAMPTZOID]);

// batch_get(hash): the caller's latest batch job with this command hash.
entry!(batch_get, pg_finfo_batch_get, |fcinfo| {
    let hash = value::<String>(fcinfo, 0);
    let well_formed = hash.as_deref().is_some_and(|hash| {
        hash.len() == 64
            && hash
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    });
    if !well_formed {
        invalid(
            format!(
                "malformed hash {}",
                hash.as_deref().map_or("null".into(), quote_literal)
            ),
            Some("A command hash is 64 lowercase hexadecimal digits, as batch_jobs.hash shows."),
        );
    }
    materialize(fcinfo);
    let section = Section::as_current_user();
    section
        .run(&LATEST_OF_HASH, &[argument(fcinfo, 0)])
        .return_all(fcinfo);
    Datum::from(0)
});

// _batch_check_reading(by, statuses, limit_rows, offset_rows): refuses a grouping, a status word
// or a count of rows that the page's reads do not know.
entry!(
    _batch_check_reading,
    pg_finfo__batch_check_reading,
    |fcinfo| {
        let by = value::<String>(fcinfo, 0);
        if !by
            .as_deref()
            .is_some_and(|by| ["time", "routine", "status", "computer"].contains(&by))
        {
            invalid(
                format!(
                    "unknown grouping {}",
                    by.as_deref().map_or("null".into(), quote_literal)
                ),
                Some("Group by time, routine, status or computer."),
            );
        }
        for word in argument(fcinfo, 1).map(elements).unwrap_or_default() {
            let word = word.map(|word| output(word, TEXTOID));
            if word.as_deref().and_then(status_rank).is_none() {
                invalid(
                format!("unknown status {}", word.as_deref().map_or("null".into(), quote_literal)),
                Some("Statuses are NEW, WAITING, BLOCKED, PENDING, FETCHED, RUNNING, COMPLETED, ERROR and CANCEL."),
            );
            }
        }
        for (n, name) in [(2, "limit_rows"), (3, "offset_rows")] {
            if value::<i32>(fcinfo, n).is_some_and(|rows| rows < 0) {
                invalid(format!("{name} must not be negative"), None);
            }
        }
        Datum::from(0)
    }
);

// _batch_unpartitioned_months(): the months of the caller's batch jobs in job_history_other,
// which holds the finished jobs of months without a partition (due before the oldest month
// made, or far ahead): read range by range of due_at that no month's partition covers, so that
// only that partition is read.
entry!(
    _batch_unpartitioned_months,
    pg_finfo__batch_unpartitioned_months,
    |fcinfo| {
        materialize(fcinfo);
        let section = Section::as_current_user();
        let gaps = section.run(&HISTORY_GAPS, &[]);
        for gap in 0..gaps.len() {
            section
                .run(&MONTHS_BETWEEN, &[gaps.datum(gap, 0), gaps.datum(gap, 1)])
                .return_all(fcinfo);
        }
        Datum::from(0)
    }
);
