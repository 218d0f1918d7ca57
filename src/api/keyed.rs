//! What only the installation can compute: hashes keyed by its secret (`installation_key`,
//! sql/010_types.sql), which no member can read. The ready signals (ready.rs) and the keys of the
//! advisory locks the extension takes (`_lock_key`) are such hashes, since any role may LISTEN on
//! any channel and take any advisory lock. Statements in `keyed.sql`.

use std::ffi::CStr;

use pgrx::pg_sys::{self, Datum};
use pgrx::{direct_function_call_as_datum, FromDatum};
use sha2::{Digest, Sha256};

use super::cached::secret;
use super::call::Statement;
use crate::{entry, named_statements};

named_statements!(include_str!("keyed.sql"));

static INSTALLATION_KEY: Statement = statement("installation_key");

unsafe extern "C-unwind" {
    /// An enum's output function, to call with DirectFunctionCall (pgrx's pg_sys binds it as a
    /// Rust function, which it takes no pointer to).
    #[link_name = "enum_out"]
    fn postgres_enum_out(fcinfo: pg_sys::FunctionCallInfo) -> Datum;
}

/// The SHA-256 of `bytes`, as SQL's sha256() gives it. By the sha2 crate: PostgreSQL's sets up
/// an OpenSSL digest on every call (36,000 instructions), which a batch post of 1,000 commands
/// (batch_post.rs) paid for each.
pub(crate) fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

/// The first 8 bytes of the SHA-256 of the installation's secret followed by `text`; the secret
/// is read once a backend, as the current user, who must be the extension's owner
/// (cached::secret).
pub(crate) fn keyed_hash(text: &str) -> [u8; 8] {
    let mut message = secret(c"installation_key", &INSTALLATION_KEY);
    message.extend_from_slice(text.as_bytes());
    sha256(&message)[..8]
        .try_into()
        .expect("a digest of 32 bytes")
}

// _lock_key(class, object): the key of the advisory lock of `object` in `class` (a lock_class,
// sql/010_types.sql), `class/object` hashed with the installation's secret, for the extension's
// statements (its owner's only).
entry!(_lock_key, |fcinfo, arguments| {
    let class = arguments.class.datum().expect("strict");
    let class = pg_sys::DirectFunctionCall1Coll(Some(postgres_enum_out), pg_sys::InvalidOid, class);
    let object: String = arguments.object.get().expect("strict");
    Datum::from(lock_key(
        &CStr::from_ptr(class.cast_mut_ptr()).to_string_lossy(),
        &object,
    ))
});

/// The key of the advisory lock of `object` in `class` (a lock_class's label), as _lock_key.
pub(crate) fn lock_key(class: &str, object: &str) -> i64 {
    i64::from_be_bytes(keyed_hash(&format!("{class}/{object}")))
}

/// One of PostgreSQL's advisory lock functions of a bigint key (`pg_advisory_xact_lock_shared_int8`,
/// `pg_try_advisory_lock_int8`, ...), called directly: a statement to take a lock costs more than
/// what it serializes.
pub(crate) fn advisory(function: unsafe fn(pg_sys::FunctionCallInfo) -> Datum, key: i64) -> Datum {
    // SAFETY: each takes one bigint and returns void or a bool, never null.
    unsafe { direct_function_call_as_datum(function, &[Some(Datum::from(key))]) }.expect("not null")
}

/// Whether advisory lock `key` was taken by `function`, one of the `pg_try_advisory_*_int8`
/// (which never wait).
pub(crate) fn tried(function: unsafe fn(pg_sys::FunctionCallInfo) -> Datum, key: i64) -> bool {
    // SAFETY: a bool's Datum.
    let taken = unsafe { bool::from_datum(advisory(function, key), false) };
    taken == Some(true)
}
