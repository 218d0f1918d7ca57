//! Who is calling.
//!
//! The API's SECURITY DEFINER functions run as the extension's owner and cannot see who called
//! them, and trusting the session's role would let any other SECURITY DEFINER function act for
//! whoever calls it. So each public function is a SECURITY INVOKER wrapper that passes a ticket
//! to its definer: `_ticket()` remembers the current user in this backend under a random number,
//! and the definer `_redeem`s it once. A ticket can only name the role that made it, so minting
//! one by hand gains nothing.

use std::cell::RefCell;
use std::collections::HashMap;

use pgrx::prelude::*;

// Tickets are redeemed by the statement that made them; a statement that failed in between
// leaves one behind, so the map is emptied now and then rather than allowed to grow.
const MAX_OUTSTANDING: usize = 1024;

thread_local! {
    static TICKETS: RefCell<HashMap<i64, pg_sys::Oid>> = RefCell::new(HashMap::new());
}

#[pg_extern(volatile, parallel_unsafe)]
fn _ticket() -> i64 {
    let mut bytes = [0u8; 8];
    if !unsafe { pg_sys::pg_strong_random(bytes.as_mut_ptr().cast(), bytes.len()) } {
        error!("pg_jobs: no strong random numbers available");
    }
    let ticket = i64::from_ne_bytes(bytes);
    let caller = unsafe { pg_sys::GetUserId() };
    TICKETS.with(|tickets| {
        let mut tickets = tickets.borrow_mut();
        if tickets.len() >= MAX_OUTSTANDING {
            tickets.clear();
        }
        tickets.insert(ticket, caller);
    });
    ticket
}

#[pg_extern(volatile, parallel_unsafe)]
fn _redeem(ticket: i64) -> pg_sys::Oid {
    TICKETS.with(|tickets| tickets.borrow_mut().remove(&ticket)).unwrap_or_else(|| {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_INSUFFICIENT_PRIVILEGE,
            "unknown caller ticket",
            "Call the public pgjobs functions; the ones whose names start with _jobs_ take a ticket from _ticket()."
        );
    })
}

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
