//! The parts of pg_jobs that need no PostgreSQL, so they are tested with plain `cargo test`.

pub mod batch;
pub mod compute;
pub mod eth;
pub mod literal;
pub mod mask;
pub mod metrics;
pub mod opaque_id;
pub mod retry;
pub mod routine;
pub mod schedule;
pub mod statements;
pub mod status;
