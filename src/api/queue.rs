//! The queue's arithmetic, exposed to the SQL in `sql/030_queue.sql` and `sql/040_history.sql`.

use pgrx::prelude::*;

/// Seconds to wait after failed attempt `attempt` before the next one: `backoff × 2^(attempt-1)`,
/// capped at `max_backoff`, saturating rather than overflowing.
#[pg_extern(immutable, strict, parallel_safe)]
fn retry_delay_seconds(attempt: i32, backoff_seconds: f64, max_backoff_seconds: f64) -> f64 {
    pg_jobs_core::retry::retry_delay_seconds(attempt, backoff_seconds, max_backoff_seconds)
}

/// A new opaque id (see pg_jobs_core::opaque_id).
#[pg_extern(volatile, parallel_safe)]
fn _opaque_id() -> pgrx::Uuid {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_millis() as u64);
    let mut random = [0u8; 10];
    crate::strong_random(&mut random);
    pgrx::Uuid::from_bytes(pg_jobs_core::opaque_id::time_ordered_uuid(millis, random))
}

/// The rule of a live job (see pg_jobs_core::status), checked by a CHECK constraint of `jobs`.
/// This and `_finished_status_ok` are functions rather than the same rules in SQL because
/// PostgreSQL parses a table's CHECK expressions from their text at every statement that writes
/// the table: the SQL form was a fifth of the work of a lease renewal.
#[pg_extern(immutable, parallel_safe)]
fn _live_job_ok(
    status: &str,
    lease_token: Option<pgrx::Uuid>,
    has_key: bool,
    has_key_rule: bool,
) -> bool {
    pg_jobs_core::status::live_job_ok(status, lease_token.is_some(), has_key, has_key_rule)
}

/// The rule of `job_history`'s status, checked by a CHECK constraint.
#[pg_extern(immutable, strict, parallel_safe)]
fn _finished_status_ok(status: &str) -> bool {
    pg_jobs_core::status::finished_status_ok(status)
}
