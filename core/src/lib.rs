//! The parts of pg_jobs that need no PostgreSQL, so they are tested with plain `cargo test`.

pub mod batch;
pub mod compute;
pub mod eth;
pub mod literal;
pub mod mask;
pub mod metrics;
pub mod opaque_id;
pub mod retry;
pub mod routine;
pub mod schedule;
pub mod statements;
pub mod status;

/// `bytes` in lowercase hexadecimal, two digits a byte: the extension's hashes, tokens and
/// signals, and addresses (eth).
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(2 * bytes.len()), |mut hex, byte| {
            write!(hex, "{byte:02x}").expect("a string");
            hex
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex_is_two_lowercase_digits_a_byte() {
        assert_eq!(super::hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
        assert_eq!(super::hex(&[]), "");
    }
}
