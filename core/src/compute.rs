//! The compute scheduler's rules that need no database: how many copies of a slice are sent,
//! how the copies' results are resolved, the moving averages of a job's performance, and whether
//! a worker's worktime satisfies a job's version range.

/// The names of a compute job's flags, bit n for the n-th: those a deployment may set, then
/// nsf, which only the scheduler sets (`job_flag_names` in SQL is [`bit_names`] of these).
pub const JOB_FLAG_NAMES: [&str; 7] = [
    "localExec",
    "open",
    "workerConsole",
    "greedyEstimation",
    "discrete",
    "useStrict",
    "nsf",
];

/// The flags a deployment may name: every flag before nsf, the last.
pub const DEPLOYABLE_JOB_FLAG_NAMES: &[&str] = JOB_FLAG_NAMES
    .split_at(job_flag::NSF.trailing_zeros() as usize)
    .0;

/// The names of a worker's capabilities, bit n for the n-th.
pub const CAPABILITY_NAMES: [&str; 7] = [
    "v8",
    "spidermonkey",
    "browser",
    "offscreenCanvas",
    "fdlibm",
    "webgpu",
    "KVINv9",
];

/// The names of a worker's flags (`workers.flags`), bit n for the n-th.
pub const WORKER_FLAG_NAMES: [&str; 1] = ["portal"];

/// The bits of `compute_jobs.flags` the scheduler sets and clears, at the places of their names
/// in [`JOB_FLAG_NAMES`].
pub mod job_flag {
    /// Slices can still be added.
    pub const OPEN: i32 = 1 << 1;
    /// A job in estimation hands out all its slices, not only its estimation slices.
    pub const GREEDY_ESTIMATION: i32 = 1 << 3;
    /// Paused for want of funds (nsf: insufficient funds).
    pub const NSF: i32 = 1 << 6;
}

/// The names of the bits set in `bits`, lowest first, from `names` (bit n the n-th); a bit
/// without a name comes out as `bit N` rather than disappearing.
pub fn bit_names(bits: i32, names: &[&str]) -> Vec<String> {
    (0..32)
        .filter(|bit| (bits as u32) >> bit & 1 == 1)
        .map(|bit| match names.get(bit) {
            Some(name) => (*name).to_owned(),
            None => format!("bit {bit}"),
        })
        .collect()
}

/// Copies of slice `slice` of job `job` sent under duplication `level` (1.0 once, 2.0 twice,
/// 1.5 half of the slices twice): the whole part of the level, and one more for the slices whose
/// fraction, drawn from the job and slice numbers alone, falls below the level's fraction. The
/// same slice always gets the same answer, so a retask or a restart changes nothing.
pub fn slice_copies(job: i64, slice: i64, level: f64) -> i32 {
    let whole = level.floor();
    let extra = level - whole;
    let draw = (mix((job as u64) ^ mix(slice as u64)) >> 11) as f64 / (1u64 << 53) as f64;
    whole as i32 + i32::from(draw < extra)
}

/// splitmix64's finaliser: every input bit reaches every output bit.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// What the results of a slice's copies come to.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Copies are still out: nothing is decided yet.
    Wait,
    /// This result (by its hash) is the slice's.
    Accept(String),
    /// The results disagree: one more copy goes to another worker.
    Tiebreak,
    /// They disagree and no tiebreaker is left.
    Undecidable,
}

/// Consensus over the results in, each a hash and the identity that reported it: with copies
/// still out, wait; else each identity votes once, for the first result it reported, and the
/// result voted for most wins if at least two identities voted for it (or it is the only result,
/// for a slice sent once) and no other result got as many votes; else a tiebreaker, while any are
/// left. One identity's several results are one vote, so nobody wins a consensus alone.
pub fn consensus(reports: &[(&str, i64)], copies_out: usize, tiebreakers_left: u32) -> Decision {
    if copies_out > 0 || reports.is_empty() {
        return Decision::Wait;
    }
    let mut voted: Vec<i64> = Vec::new();
    let mut counts: Vec<(&str, usize)> = Vec::new();
    for &(hash, identity) in reports {
        if voted.contains(&identity) {
            continue;
        }
        voted.push(identity);
        match counts.iter_mut().find(|(h, _)| *h == hash) {
            Some((_, n)) => *n += 1,
            None => counts.push((hash, 1)),
        }
    }
    counts.sort_by_key(|&(_, n)| std::cmp::Reverse(n));
    let (best, n) = counts[0];
    let unique = counts.get(1).is_none_or(|(_, m)| *m < n);
    if unique && (n >= 2 || reports.len() == 1) {
        Decision::Accept(best.to_string())
    } else if tiebreakers_left > 0 {
        Decision::Tiebreak
    } else {
        Decision::Undecidable
    }
}

/// The weight of a new measurement in a job's moving averages: min(0.5, unreported ÷ total),
/// where unreported counts the slices not yet measured before this one (at least 1), so a small
/// job's averages move fast and a large job's settle.
pub fn alpha(ordinal: i64, total: i64) -> f64 {
    let total = total.max(1);
    let unreported = (total - (ordinal - 1)).max(1);
    (unreported as f64 / total as f64).min(0.5)
}

/// One exponential moving average and its moving variance; `mean` is None until measured.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Moving {
    pub mean: Option<f64>,
    pub variance: f64,
}

impl Moving {
    /// Folds in `x` with weight `alpha`: the first value is the mean, with variance 0.
    pub fn add(&mut self, x: f64, alpha: f64) {
        match self.mean {
            None => {
                self.mean = Some(x);
                self.variance = 0.0;
            }
            Some(mean) => {
                let diff = x - mean;
                let step = alpha * diff;
                self.mean = Some(mean + step);
                self.variance = (1.0 - alpha) * (self.variance + diff * step);
            }
        }
    }
}

/// Whether `version`, the worktime version a worker runs, is in `range` (semver, as npm and
/// cargo write ranges: ^1.2, ~0.23, >=1, <2, *). A version or range that does not parse matches
/// nothing.
pub fn worktime_ok(range: &str, version: &str) -> bool {
    match (
        semver::VersionReq::parse(range),
        semver::Version::parse(version),
    ) {
        (Ok(range), Ok(version)) => range.matches(&version),
        _ => false,
    }
}

/// Whether a version range parses, for refusing a deployment that no worker could ever match.
pub fn worktime_range_ok(range: &str) -> bool {
    semver::VersionReq::parse(range).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_named_in_order_and_unnamed_ones_by_number() {
        assert_eq!(bit_names(0, &JOB_FLAG_NAMES), Vec::<String>::new());
        assert_eq!(
            bit_names(job_flag::OPEN | job_flag::NSF | 1 << 7, &JOB_FLAG_NAMES),
            ["open", "nsf", "bit 7"]
        );
        assert_eq!(
            bit_names(i32::MIN | 1, &WORKER_FLAG_NAMES),
            ["portal", "bit 31"]
        );
        assert_eq!(DEPLOYABLE_JOB_FLAG_NAMES.last(), Some(&"useStrict"));
        assert_eq!(
            JOB_FLAG_NAMES[job_flag::NSF.trailing_zeros() as usize],
            "nsf"
        );
        assert_eq!(
            JOB_FLAG_NAMES[job_flag::OPEN.trailing_zeros() as usize],
            "open"
        );
        assert_eq!(
            JOB_FLAG_NAMES[job_flag::GREEDY_ESTIMATION.trailing_zeros() as usize],
            "greedyEstimation"
        );
    }

    #[test]
    fn copies_follow_the_level() {
        for job in 1..4 {
            assert!((1..=1000).all(|s| slice_copies(job, s, 1.0) == 1));
            assert!((1..=1000).all(|s| slice_copies(job, s, 2.0) == 2));
            let twice = (1..=10_000)
                .filter(|&s| slice_copies(job, s, 1.5) == 2)
                .count();
            assert!(
                (4_700..=5_300).contains(&twice),
                "{twice} of 10000 sent twice"
            );
            assert!((1..=1000).all(|s| (1..=2).contains(&slice_copies(job, s, 1.5))));
        }
    }

    #[test]
    fn copies_are_the_same_every_time() {
        let first: Vec<i32> = (1..=500).map(|s| slice_copies(7, s, 1.25)).collect();
        let again: Vec<i32> = (1..=500).map(|s| slice_copies(7, s, 1.25)).collect();
        assert_eq!(first, again);
        // Another job draws other slices.
        let other: Vec<i32> = (1..=500).map(|s| slice_copies(8, s, 1.25)).collect();
        assert_ne!(first, other);
    }

    #[test]
    fn consensus_waits_agrees_and_breaks_ties() {
        // Distinct identities, as the results came in.
        let by = |hashes: &[&'static str]| -> Vec<(&'static str, i64)> {
            hashes.iter().zip(1..).map(|(h, k)| (*h, k)).collect()
        };
        assert_eq!(consensus(&by(&["a"]), 1, 2), Decision::Wait);
        assert_eq!(consensus(&by(&["a"]), 0, 2), Decision::Accept("a".into()));
        assert_eq!(
            consensus(&by(&["a", "a"]), 0, 2),
            Decision::Accept("a".into())
        );
        assert_eq!(consensus(&by(&["a", "b"]), 0, 2), Decision::Tiebreak);
        assert_eq!(
            consensus(&by(&["a", "b", "b"]), 0, 1),
            Decision::Accept("b".into())
        );
        assert_eq!(consensus(&by(&["a", "b", "c"]), 0, 1), Decision::Tiebreak);
        assert_eq!(
            consensus(&by(&["a", "b", "c"]), 0, 0),
            Decision::Undecidable
        );
        assert_eq!(
            consensus(&by(&["a", "b", "a", "b"]), 0, 0),
            Decision::Undecidable
        );
        // One identity agreeing with itself is one vote: never a consensus alone.
        assert_eq!(consensus(&[("f", 7), ("f", 7)], 0, 1), Decision::Tiebreak);
        assert_eq!(
            consensus(&[("f", 7), ("f", 7), ("f", 7)], 0, 0),
            Decision::Undecidable
        );
        assert_eq!(
            consensus(&[("f", 7), ("a", 1), ("f", 7), ("a", 2)], 0, 0),
            Decision::Accept("a".into())
        );
        // An identity votes for its first result only.
        assert_eq!(
            consensus(&[("a", 1), ("b", 1), ("b", 2)], 0, 1),
            Decision::Tiebreak
        );
    }

    #[test]
    fn alpha_is_half_at_most_and_shrinks_as_slices_report() {
        assert_eq!(alpha(1, 100), 0.5);
        assert_eq!(alpha(51, 100), 0.5);
        assert_eq!(alpha(91, 100), 0.1);
        assert_eq!(alpha(100, 100), 0.01);
        // Duplicates measured after every slice keep the smallest weight.
        assert_eq!(alpha(250, 100), 0.01);
        assert_eq!(alpha(1, 0), 0.5);
    }

    #[test]
    fn moving_average_and_variance() {
        let mut m = Moving::default();
        m.add(10.0, 0.5);
        assert_eq!(
            m,
            Moving {
                mean: Some(10.0),
                variance: 0.0
            }
        );
        m.add(20.0, 0.5);
        assert_eq!(m.mean, Some(15.0));
        assert_eq!(m.variance, 0.5 * (0.0 + 10.0 * 5.0));
        // A constant series has no variance.
        let mut c = Moving::default();
        (0..10).for_each(|_| c.add(3.0, 0.3));
        assert_eq!(
            c,
            Moving {
                mean: Some(3.0),
                variance: 0.0
            }
        );
    }

    #[test]
    fn worktime_ranges() {
        assert!(worktime_ok("^1.0.0", "1.4.2"));
        assert!(!worktime_ok("^1.0.0", "2.0.0"));
        assert!(worktime_ok("*", "0.1.0"));
        assert!(worktime_ok(">=0.23, <0.25", "0.24.1"));
        assert!(!worktime_ok("^1", "not a version"));
        assert!(worktime_range_ok("~0.23"));
        assert!(!worktime_range_ok("one point oh"));
    }
}
