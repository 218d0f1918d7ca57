//! Tables whose rows every backend keeps in a cache: `proxies` (identity.rs) and the flow control
//! of queues (flow.rs). A trigger on each, `_cached_table_changed`, asks at every change for an
//! invalidation of the table's relcache entry, which PostgreSQL sends to every backend once the
//! change has committed (and processes in the backend that made it at its next command); each
//! cache's callback then forgets what it kept. A backend takes in the invalidations sent to it
//! (`AcceptInvalidationMessages`) before it reads its cache, so it never answers from a cache
//! older than a change whose commit returned before it asked.

use std::cell::Cell;
use std::ffi::CStr;
use std::thread::LocalKey;

use pgrx::pg_sys::{self, Datum, Oid};
use pgrx::prelude::*;

use crate::entry;

entry!(
    _cached_table_changed,
    pg_finfo__cached_table_changed,
    |fcinfo| {
        let trigger = (*fcinfo).context as *mut pg_sys::TriggerData;
        if trigger.is_null() || (*trigger).type_ != pg_sys::NodeTag::T_TriggerData {
            error!("pg_jobs: _cached_table_changed runs only as a trigger");
        }
        pg_sys::CacheInvalidateRelcache((*trigger).tg_relation);
        Datum::from(0)
    }
);

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
