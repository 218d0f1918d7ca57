//! SQL jobs' public function (`sql/050_sql_jobs.sql`); the background worker runs the jobs
//! (`src/bgworker.rs`).

use super::call::{call_as_owner, Parameters, Planning, Statement};
use crate::entry;

const STATEMENTS: &str = include_str!("sql_jobs.sql");

static ADD_SQL: Statement =
    Statement::new(STATEMENTS, "add_sql", Parameters::CallerThenArguments, Planning::Default);

entry!(jobs_add_sql, pg_finfo_jobs_add_sql, |fcinfo| call_as_owner(fcinfo, &ADD_SQL));
