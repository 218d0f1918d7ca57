//! The monthly store of finished jobs (`sql/040_history.sql`): the launcher keeps its months made.

use super::call::{Parameters, Planning, Statement};
use super::services::{no_wish, Service};

const STATEMENTS: &str = include_str!("history.sql");

static PREPARE_MONTHS: Statement =
    Statement::new(STATEMENTS, "prepare_months", Parameters::Of(&[]), Planning::Default);

/// The months of `job_history`, from last month to twelve ahead.
pub(crate) static MONTHS: Service = Service {
    name: "history months",
    work: |section, _| {
        section.run(&PREPARE_MONTHS, &[]);
    },
    next: no_wish,
};
