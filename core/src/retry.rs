//! When a failed attempt is tried again.
//!
//! The delay before the retry that follows attempt `n` is `backoff × 2^(n-1)` seconds, capped at
//! `max_backoff`. The doubling saturates instead of overflowing, so a job with a thousand attempts
//! waits `max_backoff`, not an error or infinity.

/// Seconds to wait after failed attempt `attempt` (1-based) before the next one.
///
/// Non-finite or negative inputs are treated as zero, so the caller's checks, not this
/// arithmetic, decide what is valid.
pub fn retry_delay_seconds(attempt: i32, backoff: f64, max_backoff: f64) -> f64 {
    let backoff = sanitize(backoff);
    let cap = sanitize(max_backoff);
    let doublings = attempt.saturating_sub(1).max(0);
    // 2^1024 is infinite in f64; any exponent past the cap's is capped anyway.
    let factor = 2f64.powi(doublings.min(1023));
    (backoff * factor).min(cap)
}

fn sanitize(seconds: f64) -> f64 {
    if seconds.is_finite() && seconds > 0.0 {
        seconds
    } else {
        0.0
    }
}

#[cfg(test)]
mod tests {
    use super::retry_delay_seconds;

    #[test]
    fn doubles_from_the_backoff_until_the_cap() {
        let cases = [
            (1, 10.0),
            (2, 20.0),
            (3, 40.0),
            (4, 80.0),
            (9, 2560.0),
            (10, 3600.0),
            (11, 3600.0),
        ];
        for (attempt, expected) in cases {
            assert_eq!(
                retry_delay_seconds(attempt, 10.0, 3600.0),
                expected,
                "attempt {attempt}"
            );
        }
    }

    #[test]
    fn huge_attempt_counts_saturate_at_the_cap() {
        for attempt in [64, 1023, 1024, 5000, i32::MAX] {
            assert_eq!(
                retry_delay_seconds(attempt, 10.0, 3600.0),
                3600.0,
                "attempt {attempt}"
            );
        }
    }

    #[test]
    fn attempt_zero_or_negative_waits_the_plain_backoff() {
        assert_eq!(retry_delay_seconds(0, 10.0, 3600.0), 10.0);
        assert_eq!(retry_delay_seconds(i32::MIN, 10.0, 3600.0), 10.0);
    }

    #[test]
    fn backoff_above_the_cap_is_capped_from_the_first_retry() {
        assert_eq!(retry_delay_seconds(1, 100.0, 30.0), 30.0);
    }

    #[test]
    fn fractional_seconds_are_kept() {
        assert_eq!(retry_delay_seconds(3, 0.25, 3600.0), 1.0);
    }

    #[test]
    fn invalid_numbers_count_as_zero() {
        assert_eq!(retry_delay_seconds(3, f64::NAN, 3600.0), 0.0);
        assert_eq!(retry_delay_seconds(3, -5.0, 3600.0), 0.0);
        assert_eq!(retry_delay_seconds(3, 10.0, f64::INFINITY), 0.0);
        assert_eq!(retry_delay_seconds(3, f64::INFINITY, 100.0), 0.0);
    }
}
