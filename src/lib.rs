//! pg_jobs: the database is the job system.
//!
//! The schema and the queue's statements are SQL in `sql/`, loaded in file order; this crate
//! adds the settings, the load-time checks, the background workers, and the schedule and retry
//! arithmetic that lives in `pg_jobs_core`.

use pgrx::prelude::*;

mod api;
mod bgworker;
mod estimates;
mod gucs;

::pgrx::pg_module_magic!(name, version);

// The schema and the SQL API, one file per domain in load order. A file names the Rust functions
// its SQL-standard bodies, policies, defaults and constraints call: those are bound when created.
extension_sql_file!("../sql/010_types.sql", name = "types");
extension_sql_file!(
    "../sql/020_identity.sql",
    name = "identity",
    requires = [
        "types",
        api::identity::identity,
        api::identity::_current_role,
        api::identity::_identity_of,
        api::identity::_is_admin
    ]
);
extension_sql_file!(
    "../sql/030_queue.sql",
    name = "queue",
    requires = [
        "identity",
        api::queue::_reserved_queue,
        api::queue::_sql_queue
    ]
);
extension_sql_file!(
    "../sql/040_history.sql",
    name = "history",
    requires = ["queue", api::queue_minutes::_queue_minute_counts]
);
extension_sql_file!(
    "../sql/050_sql_jobs.sql",
    name = "sql_jobs",
    requires = ["history"]
);
extension_sql_file!(
    "../sql/060_schedules.sql",
    name = "schedules",
    requires = [
        "sql_jobs",
        api::schedules::schedule_next_slot,
        api::schedules::_schedule_slots
    ]
);
extension_sql_file!(
    "../sql/070_launcher.sql",
    name = "launcher",
    requires = ["schedules", api::leases::_leases_note]
);
extension_sql_file!(
    "../sql/080_compute_tables.sql",
    name = "compute",
    requires = [
        "launcher",
        api::opaque_ids::_opaque_id,
        api::compute::job_flag_names,
        api::compute::capability_names,
        api::compute::worker_flag_names
    ]
);
extension_sql_file!(
    "../sql/083_compute_work.sql",
    name = "compute_work",
    requires = ["compute"]
);
extension_sql_file!(
    "../sql/085_batch.sql",
    name = "batch",
    requires = [
        "compute_work",
        api::batch::_batch_status,
        api::batch::_batch_status_rank,
        api::batch::_batch_status_word,
        api::batch::_mask_args,
        api::batch::_mask_text,
        api::batch::_batch_silence
    ]
);
extension_sql_file!(
    "../sql/087_routines.sql",
    name = "routines",
    requires = [
        "batch",
        api::routine_rules::_routine_minutes,
        api::routine_rules::_routine_shown_args,
        api::routine_rules::_routine_is_scheduler,
        api::routine_rules::_routine_failing,
        api::routine_rules::_routine_line_level,
        api::routine_rules::_routine_decide
    ]
);
extension_sql_file!(
    "../sql/089_metrics.sql",
    name = "metrics",
    requires = ["routines", api::metrics::_metrics_counters]
);
// Last: it grants every function, Rust's included, and marks the tables for pg_dump.
extension_sql_file!("../sql/090_grants.sql", name = "grants", finalize);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    // Settings and, next, the background worker must exist in every backend from the start,
    // which only a preloaded library guarantees.
    if unsafe { !pg_sys::process_shared_preload_libraries_in_progress } {
        pgrx::pg_sys::panic::ErrorReport::new(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "pg_jobs must be loaded via shared_preload_libraries",
            "_PG_init",
        )
        .set_hint(
            "Add pg_jobs to shared_preload_libraries in postgresql.conf \
             (shared_preload_libraries = 'pg_jobs') and restart the server.",
        )
        .report(PgLogLevel::ERROR);
    }
    gucs::init();
    estimates::init();
    api::ready::init_ready_state();
    api::flow::init_slot_waiters();
    api::waits::init_waits();
    api::metrics::init_metrics();
    api::queue_minutes::init_queue_counts();
    api::leases::init_lease_expiries();
    api::heads::init_heads();
    api::due::init_due_queues();
    api::compute_settings::init_join_failures();
    api::compute_fetch::init_fetch_fronts();
    bgworker::init_shared_state();
    bgworker::register_launcher();
}

/// Strong random bytes drawn from the server's source a block at a time: each draw costs about
/// 8,500 instructions however few bytes it gives, and every add and claim takes 8 to 18 bytes.
/// The block belongs to the process that drew it; a process forked after a draw draws its own.
const RANDOM_BLOCK: usize = 4096;

struct RandomBlock {
    pid: u32,
    bytes: [u8; RANDOM_BLOCK],
    used: usize,
}

thread_local! {
    static RANDOM: std::cell::RefCell<RandomBlock> =
        const { std::cell::RefCell::new(RandomBlock { pid: 0, bytes: [0; RANDOM_BLOCK], used: RANDOM_BLOCK }) };
}

/// Fills `bytes` with strong random numbers (tickets, opaque ids).
fn strong_random(bytes: &mut [u8]) {
    RANDOM.with(|block| {
        let mut block = block.borrow_mut();
        let pid = std::process::id();
        if block.pid != pid || block.used + bytes.len() > block.bytes.len() {
            let buffer = &mut block.bytes;
            if !unsafe { pg_sys::pg_strong_random(buffer.as_mut_ptr().cast(), buffer.len()) } {
                error!("pg_jobs: no strong random numbers available");
            }
            block.pid = pid;
            block.used = 0;
        }
        let start = block.used;
        bytes.copy_from_slice(&block.bytes[start..start + bytes.len()]);
        // Bytes handed out are not kept where a later reader of this memory could find them.
        block.bytes[start..start + bytes.len()].fill(0);
        block.used += bytes.len();
    });
}

#[cfg(any(test, feature = "pg_test"))]
#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    #[pg_test]
    fn strong_random_never_repeats_across_blocks() {
        // 10 bytes at a time, as an opaque id takes them: 1,000 draws cross at least two refills
        // (4,096 is no multiple of 10, so each refill drops a tail), and a wrong one shows up as
        // a repeat or as zeros.
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let mut bytes = [0u8; 10];
            crate::strong_random(&mut bytes);
            assert_ne!(bytes, [0u8; 10]);
            assert!(seen.insert(bytes), "repeated random bytes {bytes:?}");
        }
    }
}

/// Required by `cargo pgrx test`.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    #[must_use]
    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["shared_preload_libraries = 'pg_jobs'"]
    }
}
