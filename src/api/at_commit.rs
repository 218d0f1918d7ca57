//! Work on shared memory done when the transaction commits: the counts of `metrics.rs` and
//! `queue_minutes.rs`, so that what a transaction rolled back is not counted. Kept by this backend
//! meanwhile with the nesting level of the (sub)transaction that asked for it, so that a rollback
//! to a savepoint drops what was asked after the savepoint, as it undoes the work counted.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;

use pgrx::pg_sys::{self, SubTransactionId, SubXactEvent, XactEvent};
use pgrx::prelude::*;

type Work = Box<dyn FnOnce()>;

thread_local! {
    static PENDING: RefCell<Vec<(i32, Work)>> = const { RefCell::new(Vec::new()) };
    static REGISTERED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `work` when the transaction commits, unless the (sub)transaction asking rolls back first.
pub(crate) fn at_commit(work: impl FnOnce() + 'static) {
    let level = unsafe { pg_sys::GetCurrentTransactionNestLevel() };
    PENDING.with(|pending| pending.borrow_mut().push((level, Box::new(work))));
    // Once per backend, for its life.
    if !REGISTERED.with(|registered| registered.replace(true)) {
        unsafe {
            pg_sys::RegisterXactCallback(Some(transaction_ended), std::ptr::null_mut());
            pg_sys::RegisterSubXactCallback(Some(subtransaction_ended), std::ptr::null_mut());
        }
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn transaction_ended(event: XactEvent::Type, _arg: *mut c_void) {
    match event {
        XactEvent::XACT_EVENT_COMMIT | XactEvent::XACT_EVENT_PARALLEL_COMMIT => {
            for (_, work) in PENDING.with(|pending| std::mem::take(&mut *pending.borrow_mut())) {
                work();
            }
        }
        // A prepared transaction's counts are lost: it may commit in another session.
        XactEvent::XACT_EVENT_ABORT
        | XactEvent::XACT_EVENT_PARALLEL_ABORT
        | XactEvent::XACT_EVENT_PREPARE => PENDING.with(|pending| pending.borrow_mut().clear()),
        _ => {}
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn subtransaction_ended(
    event: SubXactEvent::Type,
    _sub: SubTransactionId,
    _parent: SubTransactionId,
    _arg: *mut c_void,
) {
    // Called while the subtransaction ending is still the current one.
    let level = unsafe { pg_sys::GetCurrentTransactionNestLevel() };
    PENDING.with(|pending| {
        let mut pending = pending.borrow_mut();
        match event {
            SubXactEvent::SUBXACT_EVENT_ABORT_SUB => pending.retain(|(asked, _)| *asked < level),
            SubXactEvent::SUBXACT_EVENT_COMMIT_SUB => {
                for (asked, _) in pending.iter_mut().filter(|(asked, _)| *asked >= level) {
                    *asked = level - 1;
                }
            }
            _ => {}
        }
    });
}
