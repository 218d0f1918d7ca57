//! The functions SQL calls, by domain: identities and the callers' tickets, the queue's rules and
//! arithmetic, SQL jobs, cron schedules, and the compute tables.

pub mod call;
pub mod compute;
pub mod identity;
pub mod queue;
pub mod schedules;
pub mod sql_jobs;
pub mod ticket;
