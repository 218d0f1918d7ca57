//! Counts of the last minute kept in shared memory without a lock: one word per second of the
//! minute, each holding the second it counts (high 32 bits) and its count (low 32 bits), so a
//! word that still holds an older second is taken over, not added to. A compare-and-swap makes
//! that exact when backends count in the same second; a sum reads only the words of the last
//! 60 seconds.

use std::sync::atomic::{AtomicU64, Ordering};

/// Words a window needs: one per second of the minute.
pub const SECONDS: usize = 60;

/// Adds `n` to second `now` (seconds since the epoch) of `window`.
pub fn add(window: &[AtomicU64; SECONDS], now: u64, n: u32) {
    let second = now as u32;
    let word = &window[now as usize % SECONDS];
    let mut old = word.load(Ordering::Relaxed);
    loop {
        let count = if (old >> 32) as u32 == second {
            old as u32
        } else {
            0
        };
        let new = (u64::from(second) << 32) | u64::from(count.saturating_add(n));
        match word.compare_exchange_weak(old, new, Ordering::AcqRel, Ordering::Relaxed) {
            Ok(_) => return,
            Err(current) => old = current,
        }
    }
}

/// What `window` counted in the 60 seconds up to and including `now`.
pub fn last_minute(window: &[AtomicU64; SECONDS], now: u64) -> u64 {
    let now = now as u32;
    window
        .iter()
        .map(|word| word.load(Ordering::Acquire))
        .filter(|word| now.wrapping_sub((word >> 32) as u32) < SECONDS as u32)
        .map(|word| u64::from(word as u32))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn window() -> [AtomicU64; SECONDS] {
        std::array::from_fn(|_| AtomicU64::new(0))
    }

    #[test]
    fn counts_within_the_minute_and_forgets_after_it() {
        let w = window();
        let t = 1_800_000_000;
        add(&w, t, 3);
        add(&w, t + 1, 2);
        add(&w, t + 59, 1);
        assert_eq!(last_minute(&w, t + 59), 6);
        // Second t has left the window; t + 1 has not.
        assert_eq!(last_minute(&w, t + 60), 3);
        assert_eq!(last_minute(&w, t + 119), 0);
    }

    #[test]
    fn a_word_of_an_older_second_is_taken_over() {
        let w = window();
        let t = 1_800_000_000;
        add(&w, t, 5);
        // The same word, a minute later: 5 must not carry over.
        add(&w, t + 60, 1);
        assert_eq!(last_minute(&w, t + 60), 1);
    }

    #[test]
    fn an_empty_window_counts_nothing() {
        assert_eq!(last_minute(&window(), 1_800_000_000), 0);
    }

    #[test]
    fn concurrent_adds_in_one_second_are_all_counted() {
        let w = Arc::new(window());
        let t = 1_800_000_000;
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let w = w.clone();
                std::thread::spawn(move || (0..10_000).for_each(|_| add(&w, t, 1)))
            })
            .collect();
        threads.into_iter().for_each(|h| h.join().unwrap());
        assert_eq!(last_minute(&w, t), 80_000);
    }
}
