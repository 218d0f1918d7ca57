//! Reconnection delays: 0.5 s doubling to 30 s, each jittered so that agents that lost the same
//! server do not all come back in the same instant.

use std::time::Duration;

pub const FIRST: Duration = Duration::from_millis(500);
pub const MAX: Duration = Duration::from_secs(30);

#[derive(Debug)]
pub struct Backoff {
    attempt: u32,
    rng: u64,
}

impl Backoff {
    pub fn new(seed: u64) -> Backoff {
        Backoff {
            attempt: 0,
            rng: seed | 1,
        }
    }

    /// A seed from the clock and the process id.
    pub fn seeded() -> Backoff {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        Backoff::new(nanos ^ ((std::process::id() as u64) << 32) ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The delay before the next attempt, without jitter.
    pub fn base(&self) -> Duration {
        let factor = 1u64 << self.attempt.min(16);
        (FIRST * factor as u32).min(MAX)
    }

    /// xorshift64*: enough randomness for jitter, no dependency.
    fn random(&mut self) -> f64 {
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        (self.rng.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The next delay: the base, between 75 % and 125 % of it (never over MAX), then doubles.
    pub fn next_delay(&mut self) -> Duration {
        let base = self.base();
        let factor = 0.75 + 0.5 * self.random();
        self.attempt = self.attempt.saturating_add(1);
        base.mul_f64(factor).min(MAX)
    }

    pub fn reset(&mut self) {
        self.attempt = 0;
    }

    pub fn attempts(&self) -> u32 {
        self.attempt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_half_a_second_to_thirty() {
        let mut b = Backoff::new(42);
        let bases: Vec<u64> = (0..10)
            .map(|_| {
                let base = b.base().as_millis() as u64;
                b.next_delay();
                base
            })
            .collect();
        assert_eq!(
            bases,
            vec![500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000, 30000]
        );
        for _ in 0..100 {
            b.next_delay();
        }
        assert_eq!(b.base(), MAX);
    }

    #[test]
    fn jitter_stays_within_a_quarter_and_varies() {
        let mut seen = std::collections::HashSet::new();
        for seed in 0..200u64 {
            let mut b = Backoff::new(seed.wrapping_mul(7919));
            for _ in 0..12 {
                let base = b.base();
                let d = b.next_delay();
                assert!(
                    d >= base.mul_f64(0.75) && d <= base.mul_f64(1.25).min(MAX),
                    "{d:?} for {base:?}"
                );
                if base == FIRST {
                    seen.insert(d.as_millis());
                }
            }
        }
        assert!(
            seen.len() > 50,
            "jitter varies: {} distinct first delays",
            seen.len()
        );
    }

    #[test]
    fn reset_starts_again() {
        let mut b = Backoff::new(1);
        b.next_delay();
        b.next_delay();
        assert_eq!(b.attempts(), 2);
        b.reset();
        assert_eq!(b.base(), FIRST);
    }
}
