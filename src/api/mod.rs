//! The functions SQL calls, by domain: identities and the callers' tickets, the queue's rules and
//! arithmetic, SQL jobs, and cron schedules.

pub mod call;
pub mod identity;
pub mod queue;
pub mod schedules;
pub mod sql_jobs;
pub mod ticket;
