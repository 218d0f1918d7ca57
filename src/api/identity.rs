//! Who is calling: identities, the cache every policy asks, and the proxies' functions.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use pgrx::pg_sys::REGROLEOID;
use pgrx::prelude::*;

use super::cached::{relation, watch};
use super::call::{invalid, refuse, Caller, Section, Statement};
use super::datum::output;
use crate::{entry, named_statements, parameters};

named_statements!(include_str!("identity.sql"));

static PROXY_STANDING: Statement = statement("proxy_standing");
static ADD_PROXY: Statement = statement("add_proxy");
static REMOVE_PROXY: Statement = statement("remove_proxy");

/// A role's name as `regrole` prints it (quoted where it must be).
pub(crate) fn role_name(role: pg_sys::Oid) -> String {
    output(pg_sys::Datum::from(role), REGROLEOID)
}

// Proxies: registered by their root (who must be a member of the proxy role, so that nobody
// takes over what another role creates) or by an administrator.
entry!(jobs_add_proxy, |fcinfo, arguments| {
    let Caller {
        role: caller_role,
        identity: caller,
    } = Caller::current();
    let admin = _is_admin(caller_role);
    let Some(proxy) = arguments.proxy.get() else {
        refuse(
            PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            "proxy must name a role",
            None,
        )
    };
    let root = arguments.root.get().unwrap_or(caller);
    if root != caller && !admin {
        refuse(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "only an administrator may register a proxy for another identity",
            None,
        );
    }
    if !admin && !pg_sys::is_member_of_role(caller_role, proxy) {
        refuse(
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            format!(
                "you must be a member of role {} to register it as your proxy",
                role_name(proxy)
            ),
            Some(&format!(
                "An administrator can run GRANT {} TO {}.",
                role_name(proxy),
                role_name(caller_role)
            )),
        );
    }
    let section = Section::as_owner(fcinfo);
    let standing = section.run(
        &PROXY_STANDING,
        parameters! { proxy: arguments.proxy.datum(), root: Some(pg_sys::Datum::from(root)) },
    );
    if proxy == root || standing.get::<bool>(0, 0) == Some(true) {
        invalid(
            format!(
                "{} cannot act for {}: a root identity cannot be a proxy",
                role_name(proxy),
                role_name(root)
            ),
            None,
        );
    }
    if _is_admin(proxy) || standing.get::<bool>(0, 1) == Some(true) {
        invalid(
            format!(
                "{} cannot be a proxy: it is a superuser or has proxies of its own",
                role_name(proxy)
            ),
            None,
        );
    }
    if standing
        .get::<pg_sys::Oid>(0, 2)
        .is_some_and(|current| current != root)
    {
        refuse(
            PgSqlErrorCode::ERRCODE_UNIQUE_VIOLATION,
            format!(
                "{} is already a proxy of another identity",
                role_name(proxy)
            ),
            Some("Its root (or an administrator) must remove it first."),
        );
    }
    section.run(
        &ADD_PROXY,
        parameters! {
            proxy: arguments.proxy.datum(),
            root: Some(pg_sys::Datum::from(root)),
            created_by: Some(pg_sys::Datum::from(caller_role)),
        },
    );
    pg_sys::Datum::from(0)
});

entry!(jobs_remove_proxy, |fcinfo, arguments| {
    let caller = Caller::current();
    let Some(proxy) = arguments.proxy.get() else {
        refuse(
            PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            "proxy must name a role",
            None,
        )
    };
    let section = Section::as_owner(fcinfo);
    let removed = section.run(
        &REMOVE_PROXY,
        parameters! {
            proxy: arguments.proxy.datum(),
            root: Some(pg_sys::Datum::from(caller.identity)),
            admin: Some(pg_sys::Datum::from(_is_admin(caller.role))),
        },
    );
    if removed.len() == 0 {
        refuse(
            PgSqlErrorCode::ERRCODE_NO_DATA_FOUND,
            format!("{} is not a proxy of yours", role_name(proxy)),
            None,
        );
    }
    pg_sys::Datum::from(0)
});

/// The current role, as `current_user` but without a catalog query.
#[pg_extern(stable, parallel_safe)]
fn _current_role() -> pg_sys::Oid {
    unsafe { pg_sys::GetUserId() }
}

/// Whether a role is a superuser: one syscache lookup, not a query of `pg_roles`.
#[pg_extern(stable, parallel_safe)]
pub(crate) fn _is_admin(role: pg_sys::Oid) -> bool {
    unsafe { pg_sys::superuser_arg(role) }
}

/// The identity of the current role: its root if it is a registered proxy, else itself.
#[pg_extern(stable, parallel_restricted)]
fn identity() -> pg_sys::Oid {
    _identity_of(unsafe { pg_sys::GetUserId() })
}

/// Roots of the roles this backend has asked about, and the table they came from. Cleared when
/// that table's relcache entry is invalidated: by any change of proxies (its trigger asks for
/// it, cached.rs), by DROP EXTENSION, or by a full cache reset.
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
/// in parallel workers, hence parallel restricted; nor in the leader of a parallel plan, which
/// evaluates its policies' `(SELECT identity())` for the workers: there the statement's
/// snapshot is read, and the answer not kept, since a change committed after that snapshot may
/// have sent its invalidation already.)
#[pg_extern(stable, parallel_restricted)]
pub(crate) fn _identity_of(role: pg_sys::Oid) -> pg_sys::Oid {
    watch(&WATCHING, forget_on_invalidation);
    let cached = IDENTITIES.with(|cache| {
        cache
            .borrow()
            .as_ref()
            .and_then(|c| c.roots.get(&role).copied())
    });
    if let Some(identity) = cached {
        return identity;
    }
    let parallel = unsafe { pg_sys::IsInParallelMode() };
    let (proxies, identity) = unsafe { look_up_root(role, parallel) };
    if parallel {
        return identity;
    }
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

/// (the oid of pgjobs.proxies, the root of `role` or `role` itself), read with the latest snapshot
/// or, in a parallel plan, the statement's.
unsafe fn look_up_root(role: pg_sys::Oid, parallel: bool) -> (pg_sys::Oid, pg_sys::Oid) {
    let proxies = relation(c"proxies");
    let proxies_pkey = relation(c"proxies_pkey");
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
            if parallel {
                pg_sys::GetActiveSnapshot()
            } else {
                pg_sys::GetLatestSnapshot()
            },
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
