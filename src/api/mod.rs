//! The API by domain: the boundary every public function crosses (call), identities, the queue
//! and when it wakes workers (ready), and cron schedules.

pub mod call;
pub mod identity;
pub mod queue;
pub mod ready;
pub mod schedules;
pub mod ticket;
