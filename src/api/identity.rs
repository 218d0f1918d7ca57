//! Who is calling: identities, the cache every policy asks, and the proxies' functions.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use pgrx::prelude::*;

use crate::owner_call;

const STATEMENTS: &str = include_str!("identity.sql");

owner_call!(
    jobs_add_proxy,
    pg_finfo_jobs_add_proxy,
    STATEMENTS,
    "add_proxy"
);
owner_call!(
    jobs_remove_proxy,
    pg_finfo_jobs_remove_proxy,
    STATEMENTS,
    "remove_proxy"
);

/// The current role, as `current_user` but without a catalog query.
#[pg_extern(stable, parallel_safe)]
fn _current_role() -> pg_sys::Oid {
    unsafe { pg_sys::GetUserId() }
}

/// Whether a role is a superuser: one syscache lookup, not a query of `pg_roles`.
#[pg_extern(stable, parallel_safe)]
fn _is_admin(role: pg_sys::Oid) -> bool {
    unsafe { pg_sys::superuser_arg(role) }
}

/// The identity of the current role: its root if it is a registered proxy, else itself.
#[pg_extern(stable, parallel_restricted)]
fn identity() -> pg_sys::Oid {
    _identity_of(unsafe { pg_sys::GetUserId() })
}

/// Roots of the roles this backend has asked about, and the table they came from. Cleared when
/// that table's relcache entry is invalidated: by any change of proxies (its trigger asks for
/// it), by DROP EXTENSION, or by a full cache reset.
struct Identities {
    proxies: pg_sys::Oid,
    roots: HashMap<pg_sys::Oid, pg_sys::Oid>,
}

thread_local! {
    static IDENTITIES: RefCell<Option<Identities>> = const { RefCell::new(None) };
    static WATCHING: Cell<bool> = const { Cell::new(false) };
}

unsafe extern "C-unwind" fn forget_on_invalidation(_arg: pg_sys::Datum, relid: pg_sys::Oid) {
    IDENTITIES.with(|cache| {
        let mut cache = cache.borrow_mut();
        if relid == pg_sys::InvalidOid || cache.as_ref().is_some_and(|c| c.proxies == relid) {
            *cache = None;
        }
    });
}

/// The identity of a role. Every policy asks this once per statement, so it is answered from a
/// per-backend cache; as SQL it needed a subquery, which the planner never inlines, and
/// PostgreSQL 15 plans a SQL function's body anew on every call, several times the cost of the
/// query it guards.
///
/// Invalidations are taken in first, so a statement sees every proxy change committed before
/// it started (removing a proxy takes effect at its next statement, even inside a transaction).
/// A miss reads the proxies' primary key with the latest snapshot: any change it does not see
/// commits later and its invalidation clears the entry. (The latest snapshot is not available
/// in parallel workers, hence parallel restricted.)
#[pg_extern(stable, parallel_restricted)]
pub(crate) fn _identity_of(role: pg_sys::Oid) -> pg_sys::Oid {
    unsafe {
        if !WATCHING.get() {
            pg_sys::CacheRegisterRelcacheCallback(
                Some(forget_on_invalidation),
                pg_sys::Datum::from(0),
            );
            WATCHING.set(true);
        }
        pg_sys::AcceptInvalidationMessages();
    }
    let cached = IDENTITIES.with(|cache| {
        cache
            .borrow()
            .as_ref()
            .and_then(|c| c.roots.get(&role).copied())
    });
    if let Some(identity) = cached {
        return identity;
    }
    let (proxies, identity) = unsafe { look_up_root(role) };
    IDENTITIES.with(|cache| {
        let mut cache = cache.borrow_mut();
        let entry = cache.get_or_insert_with(|| Identities {
            proxies,
            roots: HashMap::new(),
        });
        if entry.proxies == proxies {
            entry.roots.insert(role, identity);
        }
    });
    identity
}

/// The oid of a relation of the extension's schema, which must exist.
fn pgjobs_relation(name: &std::ffi::CStr) -> pg_sys::Oid {
    let relation = unsafe {
        let schema = pg_sys::get_namespace_oid(c"pgjobs".as_ptr(), false);
        pg_sys::get_relname_relid(name.as_ptr(), schema)
    };
    if relation == pg_sys::InvalidOid {
        error!(
            "pg_jobs: relation pgjobs.{} is missing",
            name.to_string_lossy()
        );
    }
    relation
}

/// (the oid of pgjobs.proxies, the root of `role` or `role` itself)
unsafe fn look_up_root(role: pg_sys::Oid) -> (pg_sys::Oid, pg_sys::Oid) {
    let proxies = pgjobs_relation(c"proxies");
    let proxies_pkey = pgjobs_relation(c"proxies_pkey");
    unsafe {
        let table = pg_sys::table_open(proxies, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        let mut key: pg_sys::ScanKeyData = std::mem::zeroed();
        pg_sys::ScanKeyInit(
            &mut key,
            1, // proxies.proxy
            pg_sys::BTEqualStrategyNumber as pg_sys::StrategyNumber,
            pg_sys::Oid::from(pg_sys::F_OIDEQ),
            role.into(),
        );
        let scan = pg_sys::systable_beginscan(
            table,
            proxies_pkey,
            true,
            pg_sys::GetLatestSnapshot(),
            1,
            &mut key,
        );
        let tuple = pg_sys::systable_getnext(scan);
        let mut root = role;
        if !tuple.is_null() {
            let mut is_null = false;
            let datum = pg_sys::heap_getattr(tuple, 2, (*table).rd_att, &mut is_null); // proxies.root
            if !is_null {
                root = pg_sys::Oid::from_datum(datum, false).unwrap_or(role);
            }
        }
        pg_sys::systable_endscan(scan);
        pg_sys::table_close(table, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        (proxies, root)
    }
}

/// Called by the trigger on proxies: every backend's cache of identities is cleared when the
/// change commits (and this backend's at its next command).
#[pg_extern(volatile, parallel_unsafe)]
fn _forget_identities() {
    unsafe { pg_sys::CacheInvalidateRelcacheByRelid(pgjobs_relation(c"proxies")) };
}
