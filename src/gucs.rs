//! Every `pg_jobs.*` setting, defined once from `_PG_init`.
//!
//! The queue's SQL reads them with `current_setting('pg_jobs.<name>')`, so a session or a role
//! can override a default with `SET` or `ALTER ROLE ... SET` like any other setting.

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

pub static LEASE: GucSetting<i32> = GucSetting::<i32>::new(60);
pub static MAX_ATTEMPTS: GucSetting<i32> = GucSetting::<i32>::new(3);
pub static BACKOFF: GucSetting<i32> = GucSetting::<i32>::new(10);
pub static MAX_BACKOFF: GucSetting<i32> = GucSetting::<i32>::new(3600);
pub static POLL_INTERVAL: GucSetting<i32> = GucSetting::<i32>::new(2);

const ONE_DAY: i32 = 86_400;

pub fn init() {
    GucRegistry::define_int_guc(
        c"pg_jobs.lease",
        c"Seconds a worker holds a claimed job without renewing its lease.",
        c"After a worker dies its job is claimable again after at most this long.",
        &LEASE,
        1,
        ONE_DAY,
        GucContext::Userset,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.max_attempts",
        c"Attempts before a job is marked failed.",
        c"",
        &MAX_ATTEMPTS,
        1,
        i32::MAX,
        GucContext::Userset,
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.backoff",
        c"Seconds before the first retry; doubles with every further attempt.",
        c"",
        &BACKOFF,
        0,
        i32::MAX,
        GucContext::Userset,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.max_backoff",
        c"Longest wait between two attempts.",
        c"",
        &MAX_BACKOFF,
        0,
        i32::MAX,
        GucContext::Userset,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"pg_jobs.poll_interval",
        c"Seconds between looks at an empty queue by workers that do not LISTEN.",
        c"Workers read it to pace their polling; NOTIFY on channel pgjobs_ready wakes them sooner.",
        &POLL_INTERVAL,
        1,
        ONE_DAY,
        GucContext::Userset,
        GucFlags::UNIT_S,
    );
}
