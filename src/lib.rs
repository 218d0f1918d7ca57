//! pg_jobs: the database is the job system.
//!
//! The schema and the queue's statements are SQL in `sql/`, loaded in file order; this crate
//! adds the settings, the load-time checks, the background workers, and the schedule and retry
//! arithmetic that lives in `pg_jobs_core`.

use pgrx::prelude::*;

mod bgworker;
mod gucs;
mod identity;
mod queue;
mod schedules;

::pgrx::pg_module_magic!(name, version);

// The policies call identity() and _current_role().
extension_sql_file!(
    "../sql/001_schema.sql",
    name = "schema",
    requires = [
        identity::_current_role,
        identity::identity,
        identity::_identity_of,
        identity::_forget_identities,
        queue::_opaque_id,
        queue::_live_slice_ok,
        queue::_finished_status_ok
    ]
);
// The wrappers' SQL-standard bodies are bound when created, so the Rust functions they call come first.
extension_sql_file!(
    "../sql/002_queue.sql",
    name = "queue",
    requires = ["schema", identity::_ticket, identity::_redeem, identity::_is_admin]
);
extension_sql_file!("../sql/004_compute.sql", name = "compute", requires = ["queue"]);
// Last: its SQL-standard functions call the Rust functions of `schedules`, and it grants.
extension_sql_file!("../sql/003_scheduler.sql", name = "scheduler", finalize);

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
    queue::init_ready_state();
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
    fn settings_have_the_documented_defaults() {
        for (name, expected) in [
            ("pg_jobs.lease", "60"),
            ("pg_jobs.max_attempts", "3"),
            ("pg_jobs.backoff", "10"),
            ("pg_jobs.max_backoff", "3600"),
            ("pg_jobs.poll_interval", "2"),
        ] {
            let setting = Spi::get_one_with_args::<String>(
                "SELECT setting FROM pg_settings WHERE name = $1",
                &[name.into()],
            )
            .unwrap();
            assert_eq!(setting.as_deref(), Some(expected), "{name}");
        }
    }

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

    #[pg_test]
    fn a_job_goes_from_add_to_claim_to_complete() {
        let id = Spi::get_one::<i64>("SELECT pgjobs.jobs_add('pg_test.roundtrip', '{\"n\": 1}')")
            .unwrap()
            .unwrap();
        let token = Spi::get_one::<pgrx::Uuid>(
            "SELECT lease_token FROM pgjobs.jobs_claim('pg_test', ARRAY['default'], 1)",
        )
        .unwrap()
        .unwrap();
        Spi::run_with_args(
            "SELECT pgjobs.jobs_complete($1, $2, '{\"ok\": true}')",
            &[id.into(), token.into()],
        )
        .unwrap();
        let status = Spi::get_one_with_args::<String>(
            "SELECT status::text FROM pgjobs.job_history WHERE id = $1",
            &[id.into()],
        )
        .unwrap();
        assert_eq!(status.as_deref(), Some("completed"));
    }

    #[pg_test]
    fn a_stale_token_cannot_complete() {
        let id = Spi::get_one::<i64>("SELECT pgjobs.jobs_add('pg_test.stale')").unwrap().unwrap();
        Spi::run("SELECT * FROM pgjobs.jobs_claim('pg_test', ARRAY['default'], 1)").unwrap();
        Spi::run(&format!(
            "DO $$ BEGIN
                PERFORM pgjobs.jobs_complete({id}, gen_random_uuid(), '{{}}');
                RAISE EXCEPTION 'a stale token completed job {id}';
             EXCEPTION WHEN object_not_in_prerequisite_state THEN NULL;
             END $$"
        ))
        .unwrap();
        let live = Spi::get_one_with_args::<String>(
            "SELECT status::text FROM pgjobs.slices WHERE job_id = $1",
            &[id.into()],
        )
        .unwrap();
        assert_eq!(live.as_deref(), Some("started"));
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
