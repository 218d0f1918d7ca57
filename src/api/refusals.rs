//! The checks that the SQL left in `sql/` calls on what a caller gave it (declared in
//! `sql/010_types.sql` and `sql/080_compute_tables.sql`): each refuses bad input with the call's
//! own message, as the Rust calls do, and returns the value it checked.

use pg_jobs_core::literal::{is_money, is_numeric};
use pgrx::pg_sys::{self, Datum, DATEOID, JSONBOID, NUMERICOID};
use pgrx::{direct_function_call, direct_function_call_as_datum};

use super::call::{invalid, null};
use super::datum::{input, output};
use crate::entry;

// _invalid(message, hint): refuses with invalid_parameter_value (22023), without a HINT line
// when hint is null.
entry!(_invalid, |fcinfo, arguments| {
    let message = arguments.message.get().unwrap_or_default();
    invalid(message, arguments.hint.get().as_deref())
});

// _row_count(n, name): a count of rows to take or skip (strict), refused when negative.
entry!(_row_count, |fcinfo, arguments| {
    let n = arguments.n.get();
    row_count(n, &arguments.name.get().unwrap_or_default());
    Datum::from(n.unwrap_or(0))
});

/// Refuses a count of rows to take or skip (None: left out), named `name`, when negative.
pub(super) fn row_count(n: Option<i32>, name: &str) {
    if n.is_some_and(|n| n < 0) {
        invalid(format!("{name} must not be negative"), None);
    }
}

// _finite_date(d, name): true for a date a caller gives (null: left out), refused when it is not
// finite: a month of 'infinity' named no month and found jobs all the same. Called in a WHERE
// clause without a column, so that the planner makes it a one-time filter, checked even where no
// row is read.
entry!(_finite_date, |fcinfo, arguments| {
    let name = arguments.name.get().unwrap_or_default();
    finite_date(arguments.d.datum(), &name);
    Datum::from(true)
});

/// The first date a timestamp cannot hold (294277-01-01), in days from 2000-01-01 as a date is
/// kept: a month past it failed its reads with 22008 where they compare it with times.
const TIMESTAMPS_END: i32 = 109_203_528 - 2_451_545;

/// Refuses a date (None: left out) that is not finite or that a timestamp cannot hold, named
/// `name`.
pub(super) fn finite_date(date: Option<Datum>, name: &str) {
    let days = date.map(|date| date.value() as i32);
    if let Some(date) = days.filter(|date| *date == i32::MIN || *date >= TIMESTAMPS_END) {
        invalid(
            format!(
                "{name} must be a finite date up to 294276-12-31, not {}",
                output(Datum::from(date), DATEOID)
            ),
            Some("Give a day of the month, for example date_trunc('month', now())::date."),
        );
    }
}

/// `amount` (a numeric) if it is an amount of DCC; refused, named `name`, if not.
fn money(amount: Datum, name: &str) -> Datum {
    let text = output(amount, NUMERICOID);
    if !is_money(&text) {
        let shown = if text.len() > 40 {
            format!("{}...", &text[..20])
        } else {
            text
        };
        invalid(
            format!("{name} must be a finite amount of DCC from 0 to below 1e10, not {shown}"),
            Some("At most 18 decimals: the smallest unit is 1e-18 DCC."),
        );
    }
    amount
}

// _money(amount, name) (strict): an amount of DCC: finite, from 0 to below 1e10, at most 18
// decimals.
entry!(_money, |fcinfo, arguments| {
    let amount = arguments.amount.datum().expect("strict");
    money(amount, &arguments.name.get().unwrap_or_default())
});

// _amount(spec, field) (strict): an amount of DCC from a deployment's JSON, a number or a string
// of one; null when the field is missing or null.
entry!(_amount, |fcinfo, arguments| {
    let (spec, field) = (arguments.spec.datum(), arguments.field.datum());
    let given = direct_function_call_as_datum(pg_sys::jsonb_object_field, &[spec, field]);
    let Some(given) = given.filter(|given| output(*given, JSONBOID) != "null") else {
        return null(fcinfo);
    };
    let name = arguments.field.get().unwrap_or_default();
    let text: String = direct_function_call(pg_sys::jsonb_object_field_text, &[spec, field])
        .expect("a field that is not null");
    if !is_numeric(&text) {
        invalid(
            format!(
                "{name} must be an amount of DCC, not {}",
                output(given, JSONBOID)
            ),
            None,
        );
    }
    money(input(&text, NUMERICOID), &name)
});
