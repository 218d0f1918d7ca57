//! One line per event on stderr: a JSON object by default
//! (`{"ts":"2026-12-01T03:04:05.678Z","event":"claimed","job":12,...}`), or `ts event key=value ...`.

use crate::args::LogFormat;
use serde_json::Value;
use std::io::Write;
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

static FORMAT: OnceLock<LogFormat> = OnceLock::new();

pub fn init(format: LogFormat) {
    let _ = FORMAT.set(format);
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// RFC 3339 in UTC with milliseconds.
pub fn timestamp(millis_since_epoch: i64) -> String {
    let days = millis_since_epoch.div_euclid(86_400_000);
    let ms = millis_since_epoch.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        ms / 3_600_000,
        ms / 60_000 % 60,
        ms / 1000 % 60,
        ms % 1000
    )
}

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The line for an event, without its newline.
pub fn line(format: LogFormat, ts: &str, event: &str, fields: &[(&str, Value)]) -> String {
    match format {
        LogFormat::Json => {
            // Written by hand to keep the order: ts, event, then the fields as given.
            let mut out = format!(
                "{{\"ts\":{},\"event\":{}",
                Value::from(ts),
                Value::from(event)
            );
            for (key, value) in fields {
                out.push_str(&format!(",{}:{}", Value::from(*key), value));
            }
            out.push('}');
            out
        }
        LogFormat::Text => {
            let mut out = format!("{ts} {event}");
            for (key, value) in fields {
                let text = match value {
                    Value::String(s)
                        if !s.is_empty()
                            && !s.contains(|c: char| c.is_whitespace() || c == '"' || c == '=') =>
                    {
                        s.clone()
                    }
                    other => other.to_string(),
                };
                out.push_str(&format!(" {key}={text}"));
            }
            out
        }
    }
}

/// Writes one event line to stderr, whole (one write under the lock).
pub fn event(event: &str, fields: &[(&str, Value)]) {
    let format = *FORMAT.get().unwrap_or(&LogFormat::Json);
    let mut text = line(format, &timestamp(now_millis()), event, fields);
    text.push('\n');
    let stderr = std::io::stderr();
    let mut lock = stderr.lock();
    let _ = lock.write_all(text.as_bytes());
    let _ = lock.flush();
}

/// `log!("claimed", job = 12, computer = "alpha")`: an event with its fields.
#[macro_export]
macro_rules! log {
    ($event:expr $(, $key:ident = $value:expr)* $(,)?) => {
        $crate::log::event($event, &[$((stringify!($key), serde_json::json!($value))),*])
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_788), (2026, 12, 1));
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(1_796_094_245_678), "2026-12-01T03:04:05.678Z");
        assert_eq!(timestamp(951_782_399_999), "2000-02-28T23:59:59.999Z");
    }

    #[test]
    fn json_lines() {
        let l = line(
            LogFormat::Json,
            "T",
            "claimed",
            &[("job", json!(12)), ("computer", json!("alpha"))],
        );
        assert_eq!(
            l,
            r#"{"ts":"T","event":"claimed","job":12,"computer":"alpha"}"#
        );
        let v: Value = serde_json::from_str(&line(
            LogFormat::Json,
            "T",
            "error",
            &[("message", json!("a \"quoted\"\nline"))],
        ))
        .unwrap();
        assert_eq!(v["message"], "a \"quoted\"\nline");
    }

    #[test]
    fn text_lines() {
        let l = line(
            LogFormat::Text,
            "T",
            "finished",
            &[
                ("job", json!(3)),
                ("status", json!("COMPLETED")),
                ("error", json!("exit code 1")),
            ],
        );
        assert_eq!(
            l,
            r#"T finished job=3 status=COMPLETED error="exit code 1""#
        );
    }
}
