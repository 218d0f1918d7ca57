//! Tables whose rows every backend keeps in a cache: `proxies` (identity.rs), the flow control of
//! queues (flow.rs), the installation's secrets (`secret`: the keys of opaque ids, and of ready
//! signals and advisory locks, keyed.rs) and whether any history rule was set (`holds_rows`,
//! history.rs). A trigger on each, `_cached_table_changed`, asks at
//! every change for an invalidation of the table's relcache entry, which PostgreSQL sends to
//! every backend once the change has committed (and processes in the backend that made it at its
//! next command); each cache's callback then forgets what it kept. A backend takes in the
//! invalidations sent to it (`AcceptInvalidationMessages`) before it reads its cache, so it never
//! answers from a cache older than a change whose commit returned before it asked.

use std::cell::{Cell, RefCell};
use std::ffi::CStr;
use std::thread::LocalKey;

use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::prelude::*;

use super::call::{trigger_data, Section, Statement};
use crate::entry;

entry!(_cached_table_changed, |fcinfo, _| {
    let trigger = trigger_data(fcinfo, "_cached_table_changed");
    pg_sys::CacheInvalidateRelcache((*trigger).tg_relation);
    Datum::from(0)
});

/// A callback PostgreSQL calls with the relation whose relcache entry was invalidated, or
/// `InvalidOid` when every entry was (a backend that fell behind the invalidation queue).
pub(crate) type Forget = unsafe extern "C-unwind" fn(Datum, Oid);

/// Registers `forget` for relcache invalidations, once per backend (`registered` says whether it
/// was), then takes in the invalidations sent so far.
pub(crate) fn watch(registered: &'static LocalKey<Cell<bool>>, forget: Forget) {
    unsafe {
        if !registered.get() {
            pg_sys::CacheRegisterRelcacheCallback(Some(forget), Datum::from(0));
            registered.set(true);
        }
        pg_sys::AcceptInvalidationMessages();
    }
}

/// The oid of a relation of the extension's schema, which must exist.
pub(crate) fn relation(name: &CStr) -> Oid {
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

/// Whether what a call reads may be kept for later calls, as far as its transaction goes: under
/// read committed. A repeatable read reads with a snapshot from before the call, which may miss a
/// change whose invalidation was taken in already. (Each cache also drops an answer read while an
/// invalidation came in.)
pub(crate) fn reads_may_be_kept() -> bool {
    unsafe { pg_sys::XactIsoLevel < pg_sys::XACT_REPEATABLE_READ as i32 }
}

/// What a backend keeps of each of the extension's tables it read, by the table's name (found so
/// on every call, without a catalog lookup) and its oid (what an invalidation names).
struct ByTable<T> {
    kept: Vec<(&'static CStr, Oid, T)>,
    /// Counts the invalidations that forgot what was kept: an answer read before one may be older
    /// than a change.
    forgotten: u64,
}

impl<T: Clone> ByTable<T> {
    const fn new() -> Self {
        ByTable {
            kept: Vec::new(),
            forgotten: 0,
        }
    }

    fn get(&self, table: &CStr) -> Option<T> {
        self.kept
            .iter()
            .find(|(name, _, _)| *name == table)
            .map(|(_, _, value)| value.clone())
    }

    /// After an invalidation of `relid` (`InvalidOid`: of every relation).
    fn forget(&mut self, relid: Oid) {
        self.kept
            .retain(|&(_, table, _)| relid != pg_sys::InvalidOid && table != relid);
        self.forgotten += 1;
    }
}

thread_local! {
    /// The secrets read (`secret`).
    static SECRETS: RefCell<ByTable<Vec<u8>>> = const { RefCell::new(ByTable::new()) };
    static WATCHING_SECRETS: Cell<bool> = const { Cell::new(false) };
    /// Whether each table read by `holds_rows` holds a row.
    static HOLDING: RefCell<ByTable<bool>> = const { RefCell::new(ByTable::new()) };
    static WATCHING_HOLDING: Cell<bool> = const { Cell::new(false) };
}

unsafe extern "C-unwind" fn forget_secrets(_arg: Datum, relid: Oid) {
    SECRETS.with(|secrets| secrets.borrow_mut().forget(relid));
}

unsafe extern "C-unwind" fn forget_holding(_arg: Datum, relid: Oid) {
    HOLDING.with(|holding| holding.borrow_mut().forget(relid));
}

/// A secret the installation made, kept in the extension's table `table`: read by `statement`
/// when this backend does not know it, as the current user, who must be the extension's owner (a
/// member's call reads it inside its `Section::as_owner`); forgotten when the table changes (its
/// trigger) or goes. Called for every opaque id a view shows, every ready signal and every
/// advisory lock key, which read it once a backend this way.
pub(crate) fn secret(table: &'static CStr, statement: &'static Statement) -> Vec<u8> {
    watch(&WATCHING_SECRETS, forget_secrets);
    if let Some(secret) = SECRETS.with(|secrets| secrets.borrow().get(table)) {
        return secret;
    }
    let table_oid = relation(table);
    let section = Section::as_current_user();
    let secret = section
        .run(statement, &[])
        .get::<Vec<u8>>(0, 0)
        .unwrap_or_else(|| error!("pg_jobs: {} holds no key", table.to_string_lossy()));
    SECRETS.with(|secrets| {
        secrets
            .borrow_mut()
            .kept
            .push((table, table_oid, secret.clone()))
    });
    secret
}

/// Whether the extension's table `table` holds any row, as `statement` (one boolean) reads it in
/// `section`: every change committed before the call is seen. Read when this backend does not
/// know, and kept where nothing can have changed unseen since (as flow.rs keeps flows): where
/// `reads_may_be_kept`, and with no invalidation taken in while it was read.
pub(crate) fn holds_rows(
    section: &Section,
    table: &'static CStr,
    statement: &'static Statement,
) -> bool {
    watch(&WATCHING_HOLDING, forget_holding);
    if let Some(holds) = HOLDING.with(|holding| holding.borrow().get(table)) {
        return holds;
    }
    let table_oid = relation(table);
    let forgotten = HOLDING.with(|holding| holding.borrow().forgotten);
    let holds = section.run(statement, &[]).get::<bool>(0, 0) == Some(true);
    HOLDING.with(|holding| {
        let mut holding = holding.borrow_mut();
        if reads_may_be_kept() && holding.forgotten == forgotten {
            holding.kept.push((table, table_oid, holds));
        }
    });
    holds
}
