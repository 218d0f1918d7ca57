//! The jobs of jobs_add_batch's array, read from the jsonb where it lies: each value becomes its
//! field's datum without a trip through text, and a payload is its container copied as it is.
//! (Read as text into serde_json's values, with each payload printed and parsed again, an add of
//! 100 jobs with a payload of 130 bytes spent half of its instructions on the JSON.) Errors read
//! as serde's did: `invalid type: string "high", expected an integer (job 1 of the batch)`.

use super::call::invalid;
use super::datum::{input, jsonb_root, jsonb_string, output, JsonbLevel};
use super::dependencies::{self, Needs};
use super::queue::{Spec, FIELD_NAMES, FIELD_TYPES};
use pgrx::pg_sys::{self, Datum, JsonbIteratorToken as Token, JsonbValue, Oid};

const BATCH_HINT: &str =
    "Each object takes the parameters of jobs_add: [{\"task\": \"t\", \"payload\": {}}, ...].";

/// The keys a job may have besides its fields (queue.rs's FIELD_NAMES): what it needs.
const NEEDS: [&str; 4] = [
    "depends_on",
    "depends_on_keys",
    "after",
    "on_dependency_failure",
];

/// The specs of jobs_add_batch's argument, and what each depends on.
pub(crate) fn specs_of_batch(jobs: Option<Datum>) -> (Vec<Spec>, Vec<Needs>) {
    let not_an_array =
        || -> ! { invalid("jobs must be a JSON array of objects", Some(BATCH_HINT)) };
    let Some(jobs) = jobs else { not_an_array() };
    let mut values = unsafe { JsonbLevel::of(jsonb_root(jobs)) };
    match values.next() {
        (Token::WJB_BEGIN_ARRAY, array) if !unsafe { array.val.array.rawScalar } => {}
        _ => not_an_array(),
    }
    let mut specs = (Vec::new(), Vec::new());
    while let (Token::WJB_ELEM, job) = values.next() {
        let (spec, needs) = job_of(&job).unwrap_or_else(|error| {
            invalid(
                format!("{error} (job {} of the batch)", specs.0.len() + 1),
                Some(BATCH_HINT),
            )
        });
        specs.0.push(spec);
        specs.1.push(needs);
    }
    specs
}

/// A job's object: its spec and needs, or what was wrong.
fn job_of(job: &JsonbValue) -> Result<(Spec, Needs), String> {
    let Some(object) = container(job, pg_sys::JB_FOBJECT) else {
        return Err(unexpected(job, "an object"));
    };
    let mut spec = Spec::empty();
    let mut needs = Needs::default();
    let mut values = unsafe { JsonbLevel::of(object) };
    values.next();
    while let (Token::WJB_KEY, key) = values.next() {
        let (_, value) = values.next();
        let key = jsonb_string(&key);
        match (
            FIELD_NAMES.iter().position(|known| known.as_bytes() == key),
            key,
        ) {
            (Some(field), _) => spec.0[field] = datum(FIELD_TYPES[field], &value)?,
            (None, b"depends_on") => needs.ids = elements(&value, integer)?,
            (None, b"after") => needs.after = elements(&value, integer)?,
            (None, b"depends_on_keys") => needs.keys = elements(&value, |v| string(v).map(lossy))?,
            (None, b"on_dependency_failure") => {
                needs.skip = dependencies::skips(string_or_null(&value)?.map(lossy))
            }
            (None, _) => {
                let expected: Vec<String> = FIELD_NAMES
                    .iter()
                    .chain(&NEEDS)
                    .map(|key| format!("`{key}`"))
                    .collect();
                let expected = expected.join(", ");
                return Err(format!(
                    "unknown field `{}`, expected one of {expected}",
                    lossy(key)
                ));
            }
        }
    }
    Ok((spec, needs))
}

/// A field's datum, of its type, from its value; JSON null leaves the field out.
fn datum(type_oid: Oid, value: &JsonbValue) -> Result<Option<Datum>, String> {
    if value.type_ == pg_sys::jbvType::jbvNull {
        return Ok(None);
    }
    Ok(Some(match type_oid {
        pg_sys::JSONBOID => Datum::from(unsafe {
            pg_sys::JsonbValueToJsonb(value as *const JsonbValue as *mut JsonbValue)
        }),
        pg_sys::INT4OID => Datum::from(i32::try_from(integer(value)?).map_err(|_| {
            format!(
                "invalid value: integer `{}`, expected an integer",
                number_text(value)
            )
        })?),
        pg_sys::TEXTOID => {
            let text = string(value)?;
            Datum::from(unsafe {
                pg_sys::cstring_to_text_with_len(text.as_ptr().cast(), text.len() as i32)
            })
        }
        _ => input(string(value)?, type_oid),
    }))
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The container a value holds, if it holds one with flag `kind` (JB_FOBJECT, JB_FARRAY).
fn container(value: &JsonbValue, kind: u32) -> Option<*mut pg_sys::JsonbContainer> {
    // Lazily: the union's binary member is read only for a binary value.
    #[allow(clippy::unnecessary_lazy_evaluations)]
    (value.type_ == pg_sys::jbvType::jbvBinary)
        .then(|| unsafe { value.val.binary.data })
        .filter(|&data| unsafe { (*data).header } & kind != 0)
}

fn string(value: &JsonbValue) -> Result<&[u8], String> {
    if value.type_ == pg_sys::jbvType::jbvString {
        Ok(jsonb_string(value))
    } else {
        Err(unexpected(value, "a string"))
    }
}

fn string_or_null(value: &JsonbValue) -> Result<Option<&[u8]>, String> {
    if value.type_ == pg_sys::jbvType::jbvNull {
        Ok(None)
    } else {
        string(value).map(Some)
    }
}

/// A number's text, as numeric_out writes it.
fn number_text(value: &JsonbValue) -> String {
    output(
        Datum::from(unsafe { value.val.numeric }),
        pg_sys::NUMERICOID,
    )
}

fn is_integral(text: &str) -> bool {
    !text.contains(['.', 'e', 'E', 'N', 'I'])
}

fn integer(value: &JsonbValue) -> Result<i64, String> {
    if value.type_ != pg_sys::jbvType::jbvNumeric {
        return Err(unexpected(value, "an integer"));
    }
    let text = number_text(value);
    if !is_integral(&text) {
        return Err(unexpected(value, "an integer"));
    }
    text.parse()
        .map_err(|_| format!("invalid value: integer `{text}`, expected an integer"))
}

/// The elements of an array value, each read by `element`; JSON null is no elements.
fn elements<T>(
    value: &JsonbValue,
    element: impl Fn(&JsonbValue) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    if value.type_ == pg_sys::jbvType::jbvNull {
        return Ok(Vec::new());
    }
    let Some(array) = container(value, pg_sys::JB_FARRAY) else {
        return Err(unexpected(value, "a sequence"));
    };
    let mut values = unsafe { JsonbLevel::of(array) };
    values.next();
    let mut read = Vec::new();
    while let (Token::WJB_ELEM, value) = values.next() {
        read.push(element(&value)?);
    }
    Ok(read)
}

/// `invalid type: <what the value is>, expected <expected>`, in serde's words.
fn unexpected(value: &JsonbValue, expected: &str) -> String {
    let what = match value.type_ {
        pg_sys::jbvType::jbvNull => "null".to_owned(),
        pg_sys::jbvType::jbvBool => format!("boolean `{}`", unsafe { value.val.boolean }),
        pg_sys::jbvType::jbvString => format!("string {:?}", lossy(jsonb_string(value))),
        pg_sys::jbvType::jbvNumeric => {
            let text = number_text(value);
            if is_integral(&text) {
                format!("integer `{text}`")
            } else {
                format!("floating point `{text}`")
            }
        }
        _ if container(value, pg_sys::JB_FARRAY).is_some() => "sequence".to_owned(),
        _ => "map".to_owned(),
    };
    format!("invalid type: {what}, expected {expected}")
}
