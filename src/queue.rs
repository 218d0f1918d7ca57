//! The queue's arithmetic, exposed to the SQL in `sql/002_queue.sql`.

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
