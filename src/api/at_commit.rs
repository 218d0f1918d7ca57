//! Work on shared memory tied to the transaction's end: done when it commits (the counts of
//! `metrics.rs` and `queue_minutes.rs`, so that what a transaction rolled back is not counted), or
//! when it rolls back (`leases.rs`: a rescue's raise of when leases next run out, which must not
//! outlive the requeues it stood for; `heads.rs`: a claim's jobs, claimable again, maybe below
//! where other claims start). Kept by this backend meanwhile with the nesting level of
//! the (sub)transaction that asked for it, so that a rollback to a savepoint drops, or does, what
//! was asked after the savepoint, as it undoes the work done there.

use std::cell::{Cell, RefCell};
use std::ffi::c_void;

use pgrx::pg_sys::{self, SubTransactionId, SubXactEvent, XactEvent};
use pgrx::prelude::*;

type Work = Box<dyn FnOnce()>;

/// When a piece of work runs: at the commit of the transaction that asked, or at the rollback of
/// the (sub)transaction that asked or of one around it.
#[derive(Clone, Copy, PartialEq)]
enum End {
    Commit,
    Rollback,
}

thread_local! {
    static PENDING: RefCell<Vec<(i32, End, Work)>> = const { RefCell::new(Vec::new()) };
    static REGISTERED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `work` when the transaction commits, unless the (sub)transaction asking rolls back first.
pub(crate) fn at_commit(work: impl FnOnce() + 'static) {
    pending(End::Commit, Box::new(work));
}

/// Runs `work` if the (sub)transaction asking rolls back (or is prepared: it may yet roll back,
/// in another session). Work that must not fail: it runs while the rollback cleans up.
pub(crate) fn at_rollback(work: impl FnOnce() + 'static) {
    pending(End::Rollback, Box::new(work));
}

fn pending(end: End, work: Work) {
    let level = unsafe { pg_sys::GetCurrentTransactionNestLevel() };
    PENDING.with(|pending| pending.borrow_mut().push((level, end, work)));
    // Once per backend, for its life.
    if !REGISTERED.with(|registered| registered.replace(true)) {
        unsafe {
            pg_sys::RegisterXactCallback(Some(transaction_ended), std::ptr::null_mut());
            pg_sys::RegisterSubXactCallback(Some(subtransaction_ended), std::ptr::null_mut());
        }
    }
}

/// Takes the pending work asked at `level` or deeper; runs the part that runs at `end` and drops
/// the rest.
fn finish(level: i32, end: End) {
    let ended: Vec<(End, Work)> = PENDING.with(|pending| {
        let mut pending = pending.borrow_mut();
        let (ended, kept) = std::mem::take(&mut *pending)
            .into_iter()
            .partition::<Vec<_>, _>(|(asked, _, _)| *asked >= level);
        *pending = kept;
        ended
            .into_iter()
            .map(|(_, when, work)| (when, work))
            .collect()
    });
    for (when, work) in ended {
        if when == end {
            work();
        }
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn transaction_ended(event: XactEvent::Type, _arg: *mut c_void) {
    match event {
        XactEvent::XACT_EVENT_COMMIT | XactEvent::XACT_EVENT_PARALLEL_COMMIT => {
            finish(0, End::Commit)
        }
        // A prepared transaction's counts are lost (it may commit in another session), and what
        // would be undone by its rollback is undone (it may roll back there).
        XactEvent::XACT_EVENT_ABORT
        | XactEvent::XACT_EVENT_PARALLEL_ABORT
        | XactEvent::XACT_EVENT_PREPARE => finish(0, End::Rollback),
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
    match event {
        SubXactEvent::SUBXACT_EVENT_ABORT_SUB => finish(level, End::Rollback),
        SubXactEvent::SUBXACT_EVENT_COMMIT_SUB => PENDING.with(|pending| {
            for (asked, _, _) in pending
                .borrow_mut()
                .iter_mut()
                .filter(|(asked, _, _)| *asked >= level)
            {
                *asked = level - 1;
            }
        }),
        _ => {}
    }
}
