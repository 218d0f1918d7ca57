//! Tickets: going away (issue 12), while the functions that take them are converted.
use std::cell::RefCell; use std::collections::HashMap; use pgrx::prelude::*;


// Tickets are redeemed by the statement that made them; a statement that failed in between
// leaves one behind, so the map is emptied now and then rather than allowed to grow.
const MAX_OUTSTANDING: usize = 1024;

thread_local! {
    static TICKETS: RefCell<HashMap<i64, pg_sys::Oid>> = RefCell::new(HashMap::new());
}

#[pg_extern(volatile, parallel_unsafe)]
fn _ticket() -> i64 {
    let mut bytes = [0u8; 8];
    crate::strong_random(&mut bytes);
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
