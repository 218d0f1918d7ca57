//! Literals as PostgreSQL's input functions read them, for text that a call checks before it
//! hands it to SQL: refused with the call's own message rather than the cast's error.

/// Whether `text` is a number as `numeric` reads one: digits with a point or not, an exponent or
/// not, a sign or not, blanks around it; or NaN or Infinity (which are numeric values too).
pub fn is_numeric(text: &str) -> bool {
    let text = text.trim_matches(|c: char| c.is_ascii_whitespace());
    let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
    if text.eq_ignore_ascii_case("nan")
        || ["infinity", "inf"].contains(&unsigned.to_ascii_lowercase().as_str())
    {
        return true;
    }
    let digits = digits_only;
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (&unsigned[..at], Some(&unsigned[at + 1..])),
        None => (unsigned, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let exponent_ok = exponent.is_none_or(|exponent| {
        let exponent = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        !exponent.is_empty() && digits(exponent)
    });
    !(whole.is_empty() && fraction.is_empty()) && digits(whole) && digits(fraction) && exponent_ok
}

/// Whether a numeric, as `numeric_out` prints it (no exponent, every decimal of its scale), is an
/// amount of DCC: finite, from 0 to below 1e10, with at most 18 decimals (the smallest unit is
/// 1e-18 DCC).
pub fn is_money(numeric: &str) -> bool {
    let (whole, fraction) = numeric.split_once('.').unwrap_or((numeric, ""));
    !whole.is_empty()
        && whole.len() <= 10
        && digits_only(whole)
        && fraction.len() <= 18
        && digits_only(fraction)
}

fn digits_only(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_digit())
}

/// The bytes of a uuid as `uuid_in` reads one: 32 hex digits, a hyphen allowed after any group of
/// four but the last, the whole in braces or not.
pub fn uuid_bytes(text: &str) -> Option<[u8; 16]> {
    let text = text.as_bytes();
    let (mut rest, braces) = match text.strip_prefix(b"{") {
        Some(inner) => (inner, true),
        None => (text, false),
    };
    let mut bytes = [0u8; 16];
    for (n, byte) in bytes.iter_mut().enumerate() {
        let pair = rest.get(..2)?;
        if !pair.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;
        rest = &rest[2..];
        if n % 2 == 1 && n < 15 {
            rest = rest.strip_prefix(b"-").unwrap_or(rest);
        }
    }
    let end: &[u8] = if braces { b"}" } else { b"" };
    (rest == end).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_numeric_reads_them() {
        for number in [
            "1",
            "-1",
            "+1.5",
            " 12 ",
            "1.",
            ".5",
            "1e3",
            "1E-3",
            "NaN",
            "-Infinity",
            "inf",
            "007",
        ] {
            assert!(is_numeric(number), "{number}");
        }
        for not_one in [
            "", " ", ".", "-", "-NaN", "1e", "e3", "1.2.3", "one", "1,5", "0x10", "1_000", "{}",
            "--1",
        ] {
            assert!(!is_numeric(not_one), "{not_one}");
        }
    }

    #[test]
    fn money() {
        for amount in [
            "0",
            "0.000000000000000001",
            "9999999999.999999999999999999",
            "2.50",
        ] {
            assert!(is_money(amount), "{amount}");
        }
        for not_money in [
            "NaN",
            "Infinity",
            "-Infinity",
            "-1",
            "-0.5",
            "10000000000",
            "0.0000000000000000001",
            "",
        ] {
            assert!(!is_money(not_money), "{not_money}");
        }
    }

    #[test]
    fn uuids_as_uuid_in_reads_them() {
        let bytes = [
            0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc,
            0xde, 0xf0,
        ];
        for uuid in [
            "12345678-9abc-def0-1234-56789abcdef0",
            "123456789ABCDEF0123456789ABCDEF0",
            "{12345678-9abc-def0-1234-56789abcdef0}",
            "1234-5678-9abc-def0-1234-5678-9abc-def0",
        ] {
            assert_eq!(uuid_bytes(uuid), Some(bytes), "{uuid}");
        }
        for not_one in [
            "",
            "12345678-9abc-def0-1234-56789abcdef",
            "12345678-9abc-def0-1234-56789abcdef0-",
            "{12345678-9abc-def0-1234-56789abcdef0",
            "12345678-9abc-def0-1234-56789abcdef0}",
            "1-2345678-9abc-def0-1234-56789abcdef0",
            "12345678-9abc-def0-1234-56789abcdeg0",
            " 12345678-9abc-def0-1234-56789abcdef0",
        ] {
            assert_eq!(uuid_bytes(not_one), None, "{not_one}");
        }
    }
}
