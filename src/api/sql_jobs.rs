//! SQL jobs' public function (`sql/050_sql_jobs.sql`); the background worker runs the jobs
//! (`src/bgworker.rs`).

use crate::owner_call;

const STATEMENTS: &str = include_str!("sql_jobs.sql");

owner_call!(jobs_add_sql, pg_finfo_jobs_add_sql, STATEMENTS, "add_sql");
