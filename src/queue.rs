//! The queue's arithmetic, exposed to the SQL in `sql/002_queue.sql`.

use pgrx::prelude::*;

/// Seconds to wait after failed attempt `attempt` before the next one: `backoff × 2^(attempt-1)`,
/// capped at `max_backoff`, saturating rather than overflowing.
#[pg_extern(immutable, strict, parallel_safe)]
fn retry_delay_seconds(attempt: i32, backoff_seconds: f64, max_backoff_seconds: f64) -> f64 {
    pg_jobs_core::retry::retry_delay_seconds(attempt, backoff_seconds, max_backoff_seconds)
}
