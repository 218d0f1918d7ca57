//! Every C function's arguments, by the names and types its declaration in sql/ gives them:
//! build.rs reads the declarations and writes a module per function's symbol, whose `Arguments`
//! its entry point reads (`entry!(jobs_claim, |fcinfo, arguments| ...)` gives it
//! `arguments.worker`, `arguments.queues`, ...). An entry point without a declaration does not
//! compile.

use std::marker::PhantomData;

#[allow(unused_imports)]
use pgrx::datum::{AnyNumeric, Date, Interval, TimestampWithTimeZone, Uuid};
use pgrx::pg_sys::{self, Datum, FunctionCallInfo, Oid};
use pgrx::{FromDatum, JsonB};

use super::call::required;
use super::datum::json_value;

/// An argument of a call: its datum, read as its declared type only when asked.
pub struct Arg<T> {
    datum: Option<Datum>,
    pub name: &'static str,
    declared: PhantomData<fn() -> T>,
}

impl<T> Clone for Arg<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Arg<T> {}

/// The type of an argument whose value the calls pass on as it came (a composite, an enum,
/// `anyelement`).
pub enum Untyped {}

impl<T> Arg<T> {
    pub fn read(fcinfo: FunctionCallInfo, position: usize, name: &'static str) -> Self {
        let datum = unsafe {
            let argument = (*fcinfo).args.as_slice((*fcinfo).nargs as usize)[position];
            (!argument.isnull).then_some(argument.value)
        };
        Arg {
            datum,
            name,
            declared: PhantomData,
        }
    }

    /// Its datum, None for null.
    pub fn datum(&self) -> Option<Datum> {
        self.datum
    }

    /// Its datum; null is refused (22004, "<name> must not be null").
    pub fn given(&self) -> Datum {
        self.datum.unwrap_or_else(|| required(self.name))
    }
}

impl<T: FromDatum> Arg<T> {
    /// Its value, None for null.
    pub fn get(&self) -> Option<T> {
        self.datum
            .and_then(|datum| unsafe { T::from_datum(datum, false) })
    }

    /// Its value; null is refused (22004, "<name> must not be null").
    pub fn required(&self) -> T {
        self.get().unwrap_or_else(|| required(self.name))
    }
}

/// The type of a `jsonb` argument: read as serde_json's values by [`json_value`], which refuses
/// what they cannot hold, naming the argument (pgrx's JsonB panics there).
pub enum Json {}

impl Arg<Json> {
    /// Its value, None for null.
    pub fn get(&self) -> Option<JsonB> {
        self.datum.map(|datum| JsonB(json_value(self.name, datum)))
    }
}

const VERSION_1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };

include!(concat!(env!("OUT_DIR"), "/arguments.rs"));
