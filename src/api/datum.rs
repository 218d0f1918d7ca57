//! Values across the boundary: PostgreSQL's own input and output functions, arrays, intervals
//! and times, for the domains' calls.

use chrono::{DateTime, Utc};
use pgrx::pg_sys::{self, Datum, Oid, INTERVALOID};
use pgrx::prelude::*;
use pgrx::IntoDatum;

use super::call::invalid;

/// An interval's length as PostgreSQL compares intervals.
pub(crate) fn interval_span(datum: Datum) -> i128 {
    let interval = unsafe { &*datum.cast_mut_ptr::<pg_sys::Interval>() };
    i128::from(interval.month) * 30 * 86_400_000_000
        + i128::from(interval.day) * 86_400_000_000
        + i128::from(interval.time)
}

/// An interval as PostgreSQL prints it.
pub(crate) fn interval_text(datum: Option<Datum>) -> String {
    datum.map_or_else(|| "null".into(), |datum| output(datum, INTERVALOID))
}

/// A value as its type's output function prints it.
pub(crate) fn output(datum: Datum, type_oid: Oid) -> String {
    unsafe {
        let mut function = pg_sys::InvalidOid;
        let mut varlena = false;
        pg_sys::getTypeOutputInfo(type_oid, &mut function, &mut varlena);
        let text = pg_sys::OidOutputFunctionCall(function, datum);
        std::ffi::CStr::from_ptr(text)
            .to_string_lossy()
            .into_owned()
    }
}

/// A value of a type from its text, by the type's input function.
pub(crate) fn input(text: impl AsRef<[u8]>, type_oid: Oid) -> Datum {
    let text = std::ffi::CString::new(text.as_ref())
        .unwrap_or_else(|_| invalid("text must not contain NUL", None));
    unsafe {
        let mut function = pg_sys::InvalidOid;
        let mut parameter = pg_sys::InvalidOid;
        pg_sys::getTypeInputInfo(type_oid, &mut function, &mut parameter);
        pg_sys::OidInputFunctionCall(function, text.as_ptr().cast_mut(), parameter, -1)
    }
}

/// A one-dimensional array of `values` of a type.
pub(crate) fn array(type_oid: Oid, values: &[Option<Datum>]) -> Datum {
    unsafe {
        let mut length: i16 = 0;
        let mut by_value = false;
        let mut align: std::ffi::c_char = 0;
        pg_sys::get_typlenbyvalalign(type_oid, &mut length, &mut by_value, &mut align);
        let mut elements: Vec<Datum> = values.iter().map(|v| v.unwrap_or(Datum::from(0))).collect();
        let mut nulls: Vec<bool> = values.iter().map(Option::is_none).collect();
        let mut dimensions = [values.len() as std::ffi::c_int];
        let mut lower_bounds = [1 as std::ffi::c_int];
        Datum::from(pg_sys::construct_md_array(
            elements.as_mut_ptr(),
            nulls.as_mut_ptr(),
            1,
            dimensions.as_mut_ptr(),
            lower_bounds.as_mut_ptr(),
            type_oid,
            length.into(),
            by_value,
            align,
        ))
    }
}

/// A one-dimensional array of `values`, of the type `type_oid` (each value's own, or one with its
/// representation: a timestamptz of an i64).
pub(crate) fn array_of<T: IntoDatum>(type_oid: Oid, values: impl IntoIterator<Item = T>) -> Datum {
    let values: Vec<Option<Datum>> = values.into_iter().map(T::into_datum).collect();
    array(type_oid, &values)
}

/// A bigint[] of `values`.
pub(crate) fn int8_array(values: impl IntoIterator<Item = i64>) -> Datum {
    array_of(pg_sys::INT8OID, values)
}

/// PostgreSQL's epoch, 2000-01-01, in Unix microseconds.
const POSTGRES_EPOCH: i64 = 946_684_800_000_000;

/// A timestamptz as UTC; None for ±infinity.
pub(crate) fn utc(at: TimestampWithTimeZone) -> Option<DateTime<Utc>> {
    if !at.is_finite() {
        return None;
    }
    DateTime::from_timestamp_micros(at.into_inner() + POSTGRES_EPOCH)
}

/// A UTC time as a timestamptz; None past PostgreSQL's range.
pub(crate) fn timestamptz(at: DateTime<Utc>) -> Option<TimestampWithTimeZone> {
    TimestampWithTimeZone::try_from(at.timestamp_micros() - POSTGRES_EPOCH).ok()
}

/// An interval of whole seconds.
pub(crate) fn seconds(seconds: i32) -> Datum {
    pgrx::datum::Interval::new(0, 0, i64::from(seconds) * 1_000_000)
        .unwrap_or_else(|_| error!("pg_jobs: interval out of range"))
        .into_datum()
        .expect("an interval")
}

/// The elements of a one-dimensional array, None for null.
pub(crate) fn elements(datum: Datum) -> Vec<Option<Datum>> {
    unsafe {
        let array = pg_sys::pg_detoast_datum(datum.cast_mut_ptr()).cast::<pg_sys::ArrayType>();
        let element_type = (*array).elemtype;
        let mut length: i16 = 0;
        let mut by_value = false;
        let mut align: std::ffi::c_char = 0;
        pg_sys::get_typlenbyvalalign(element_type, &mut length, &mut by_value, &mut align);
        let mut values: *mut Datum = std::ptr::null_mut();
        let mut nulls: *mut bool = std::ptr::null_mut();
        let mut count: std::ffi::c_int = 0;
        pg_sys::deconstruct_array(
            array,
            element_type,
            length.into(),
            by_value,
            align,
            &mut values,
            &mut nulls,
            &mut count,
        );
        (0..count as usize)
            .map(|n| (!*nulls.add(n)).then(|| *values.add(n)))
            .collect()
    }
}

/// Field `n` (from 0) of a composite value, None for null.
pub(crate) fn field(record: Datum, n: usize) -> Option<Datum> {
    unsafe {
        let record =
            pg_sys::pg_detoast_datum(record.cast_mut_ptr()).cast::<pg_sys::HeapTupleHeaderData>();
        let mut is_null = false;
        let value = pg_sys::GetAttributeByNum(record, (n + 1) as pg_sys::AttrNumber, &mut is_null);
        (!is_null).then_some(value)
    }
}

/// Text as a SQL literal, as PostgreSQL's quote_literal writes it (E'...' where it has a
/// backslash).
pub(crate) fn quote_literal(text: &str) -> String {
    let quoted = text.replace('\'', "''");
    if text.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

/// As `coalesce(quote_literal(text), 'null')` writes it, for messages naming a value given.
pub(crate) fn literal_or_null(text: Option<&str>) -> String {
    text.map_or_else(|| "null".into(), quote_literal)
}

pub(crate) fn array_length(datum: Datum) -> usize {
    unsafe {
        let array = pg_sys::pg_detoast_datum(datum.cast_mut_ptr()).cast::<pg_sys::ArrayType>();
        // The dimensions follow the header (ARR_DIMS).
        let dimensions = array.add(1).cast::<std::ffi::c_int>();
        pg_sys::ArrayGetNItems((*array).ndim, dimensions) as usize
    }
}

/// A jsonb value as serde_json holds it; refused (22023, naming it `name`) where serde_json cannot
/// hold it: a number past a double's range, nesting deeper than 128 levels. (pgrx's JsonB panics
/// there: an internal error, XX000, and a backtrace.)
pub(crate) fn json_value(name: &str, datum: Datum) -> serde_json::Value {
    serde_json::from_str(&output(datum, pg_sys::JSONBOID)).unwrap_or_else(|error| {
        invalid(
            format!("{name} cannot be read: {error}"),
            Some("Numbers must be within a double's range (about ±1.8e308), and values nested at most 128 levels deep."),
        )
    })
}

/// The root container of a jsonb value, where it lies (detoasted): read with PostgreSQL's own
/// iterator ([`JsonbLevel`]) or lookups, no trip through text.
pub(crate) fn jsonb_root(jsonb: Datum) -> *mut pg_sys::JsonbContainer {
    unsafe { &mut (*pg_sys::pg_detoast_datum(jsonb.cast_mut_ptr()).cast::<pg_sys::Jsonb>()).root }
}

/// Whether a jsonb container is an object.
pub(crate) fn is_jsonb_object(container: *mut pg_sys::JsonbContainer) -> bool {
    unsafe { (*container).header & pg_sys::JB_FOBJECT != 0 }
}

/// One level of a container's tokens and values (a nested container is one jbvBinary value).
pub(crate) struct JsonbLevel(*mut pg_sys::JsonbIterator);

impl JsonbLevel {
    pub(crate) unsafe fn of(container: *mut pg_sys::JsonbContainer) -> JsonbLevel {
        JsonbLevel(unsafe { pg_sys::JsonbIteratorInit(container) })
    }

    pub(crate) fn next(&mut self) -> (pg_sys::JsonbIteratorToken::Type, pg_sys::JsonbValue) {
        let mut value: pg_sys::JsonbValue = unsafe { std::mem::zeroed() };
        let token = unsafe { pg_sys::JsonbIteratorNext(&mut self.0, &mut value, true) };
        (token, value)
    }
}

/// The bytes of a string value (a key, or a JSON string).
pub(crate) fn jsonb_string(value: &pg_sys::JsonbValue) -> &[u8] {
    unsafe {
        std::slice::from_raw_parts(
            value.val.string.val.cast::<u8>(),
            value.val.string.len as usize,
        )
    }
}

/// The members of a jsonb object, one level: each key, with its value's text where that is a JSON
/// string (other values are not read, so they may hold what serde_json cannot); None for any other
/// JSON value.
pub(crate) fn object_members(jsonb: Datum) -> Option<Vec<(String, Option<String>)>> {
    let root = jsonb_root(jsonb);
    if !is_jsonb_object(root) {
        return None;
    }
    let text =
        |value: &pg_sys::JsonbValue| String::from_utf8_lossy(jsonb_string(value)).into_owned();
    let mut level = unsafe { JsonbLevel::of(root) };
    let mut members = Vec::new();
    loop {
        match level.next() {
            (pg_sys::JsonbIteratorToken::WJB_KEY, key) => members.push((text(&key), None)),
            (pg_sys::JsonbIteratorToken::WJB_VALUE, value)
                if value.type_ == pg_sys::jbvType::jbvString =>
            {
                if let Some((_, string)) = members.last_mut() {
                    *string = Some(text(&value));
                }
            }
            (pg_sys::JsonbIteratorToken::WJB_DONE, _) => return Some(members),
            _ => {}
        }
    }
}

/// A JSON value as `->>` reads it: null for JSON null, a string's text, any other value's JSON.
pub(crate) fn text_of(value: &serde_json::Value) -> Option<String> {
    match value {
        serde_json::Value::Null => None,
        serde_json::Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// A jsonb value made by the server's own builder (`pushJsonbValue`), piece by piece: the
/// payload of a batch post, where parsing its text with jsonb_in took 6 µs a post. Keys may come
/// in any order (the builder sorts them, and the last of a repeated key wins, as jsonb_in does).
pub(crate) struct JsonbBuilder {
    state: *mut pg_sys::JsonbParseState,
    /// For each container open, whether it is an array (its values are elements).
    open: Vec<bool>,
    built: *mut pg_sys::JsonbValue,
}

impl JsonbBuilder {
    pub(crate) fn object() -> JsonbBuilder {
        let mut builder = JsonbBuilder {
            state: std::ptr::null_mut(),
            open: Vec::new(),
            built: std::ptr::null_mut(),
        };
        builder.begin(false);
        builder
    }

    fn push(&mut self, token: pg_sys::JsonbIteratorToken::Type, value: *mut pg_sys::JsonbValue) {
        self.built = unsafe { pg_sys::pushJsonbValue(&mut self.state, token, value) };
    }

    fn value(
        &mut self,
        type_: pg_sys::jbvType::Type,
        val: pg_sys::JsonbValue__bindgen_ty_1,
    ) -> &mut Self {
        let mut value = pg_sys::JsonbValue { type_, val };
        let token = if self.open.last() == Some(&true) {
            pg_sys::JsonbIteratorToken::WJB_ELEM
        } else {
            pg_sys::JsonbIteratorToken::WJB_VALUE
        };
        self.push(token, &mut value);
        self
    }

    fn begin(&mut self, array: bool) -> &mut Self {
        self.open.push(array);
        let token = if array {
            pg_sys::JsonbIteratorToken::WJB_BEGIN_ARRAY
        } else {
            pg_sys::JsonbIteratorToken::WJB_BEGIN_OBJECT
        };
        self.push(token, std::ptr::null_mut());
        self
    }

    pub(crate) fn begin_array(&mut self) -> &mut Self {
        self.begin(true)
    }

    pub(crate) fn begin_object(&mut self) -> &mut Self {
        self.begin(false)
    }

    pub(crate) fn end(&mut self) -> &mut Self {
        let token = if self.open.pop().expect("a container open") {
            pg_sys::JsonbIteratorToken::WJB_END_ARRAY
        } else {
            pg_sys::JsonbIteratorToken::WJB_END_OBJECT
        };
        self.push(token, std::ptr::null_mut());
        self
    }

    pub(crate) fn key(&mut self, key: &str) -> &mut Self {
        let mut value = pg_sys::JsonbValue {
            type_: pg_sys::jbvType::jbvString,
            val: pg_sys::JsonbValue__bindgen_ty_1 {
                string: Self::copy(key),
            },
        };
        self.push(pg_sys::JsonbIteratorToken::WJB_KEY, &mut value);
        self
    }

    fn copy(text: &str) -> pg_sys::JsonbValue__bindgen_ty_1__bindgen_ty_1 {
        pg_sys::JsonbValue__bindgen_ty_1__bindgen_ty_1 {
            len: i32::try_from(text.len()).expect("a string under 1 GB"),
            val: unsafe { pg_sys::pnstrdup(text.as_ptr().cast(), text.len()) },
        }
    }

    /// A string, or null.
    pub(crate) fn string(&mut self, text: Option<&str>) -> &mut Self {
        match text {
            Some(text) => self.value(
                pg_sys::jbvType::jbvString,
                pg_sys::JsonbValue__bindgen_ty_1 {
                    string: Self::copy(text),
                },
            ),
            None => self.null(),
        }
    }

    pub(crate) fn null(&mut self) -> &mut Self {
        self.value(
            pg_sys::jbvType::jbvNull,
            pg_sys::JsonbValue__bindgen_ty_1 { boolean: false },
        )
    }

    pub(crate) fn boolean(&mut self, value: bool) -> &mut Self {
        self.value(
            pg_sys::jbvType::jbvBool,
            pg_sys::JsonbValue__bindgen_ty_1 { boolean: value },
        )
    }

    pub(crate) fn number(&mut self, value: i64) -> &mut Self {
        let numeric = unsafe { pg_sys::int64_to_numeric(value) };
        self.value(
            pg_sys::jbvType::jbvNumeric,
            pg_sys::JsonbValue__bindgen_ty_1 { numeric },
        )
    }

    /// A jsonb value (its containers copied in), or null.
    pub(crate) fn jsonb(&mut self, value: Option<Datum>) -> &mut Self {
        let Some(value) = value else {
            return self.null();
        };
        let jsonb =
            unsafe { pg_sys::pg_detoast_datum(value.cast_mut_ptr()).cast::<pg_sys::Jsonb>() };
        let binary = pg_sys::JsonbValue__bindgen_ty_1__bindgen_ty_4 {
            len: unsafe { pgrx::varlena::varsize_any_exhdr(jsonb.cast()) } as i32,
            data: unsafe { &mut (*jsonb).root },
        };
        self.value(
            pg_sys::jbvType::jbvBinary,
            pg_sys::JsonbValue__bindgen_ty_1 { binary },
        )
    }

    /// The object, once every container is closed.
    pub(crate) fn finish(mut self) -> Datum {
        self.end();
        assert!(self.open.is_empty(), "every container closed");
        Datum::from(unsafe { pg_sys::JsonbValueToJsonb(self.built) })
    }
}
