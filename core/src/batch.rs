//! Batch jobs: the status words of the worker pool over the queue's states.

/// The status words, most pressing first: a group of jobs is shown with the first word any of its
/// jobs has (a failure before a block before a cancel before work in progress before waiting).
pub const STATUS_WORDS: [&str; 9] = [
    "ERROR",
    "BLOCKED",
    "CANCEL",
    "RUNNING",
    "FETCHED",
    "PENDING",
    "WAITING",
    "NEW",
    "COMPLETED",
];

/// The words of a job still to run or running, not being cancelled: what the Jobs tab counts as
/// active.
pub const ACTIVE_WORDS: [&str; 5] = ["BLOCKED", "RUNNING", "FETCHED", "PENDING", "WAITING"];

/// The words of a job that needs someone: it failed, or it waits on one that did. The Jobs tab
/// shows these first.
pub const PROBLEM_WORDS: [&str; 2] = ["ERROR", "BLOCKED"];

/// The word of a batch job. `status` is the queue's (created, started, aborted while live;
/// completed, failed, aborted when finished); `due`: a waiting job's time has come; `blocked`: a
/// job it depends on ended without completing; `running`: its agent said the process started
/// under the current lease. NEW is never returned: a post decides at once whether the job waits.
pub fn status_word(status: &str, due: bool, blocked: bool, running: bool) -> Option<&'static str> {
    Some(match status {
        "created" if blocked => "BLOCKED",
        "created" if !due => "WAITING",
        "created" => "PENDING",
        "started" if running => "RUNNING",
        "started" => "FETCHED",
        "aborted" => "CANCEL",
        "completed" => "COMPLETED",
        "failed" => "ERROR",
        _ => return None,
    })
}

/// How pressing a word is (0 is most); None for a word that is not a status.
pub fn status_rank(word: &str) -> Option<i32> {
    STATUS_WORDS
        .iter()
        .position(|w| *w == word)
        .map(|rank| rank as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_queue_state_has_its_word() {
        assert_eq!(status_word("created", true, false, false), Some("PENDING"));
        assert_eq!(status_word("created", false, false, false), Some("WAITING"));
        assert_eq!(status_word("created", false, true, false), Some("BLOCKED"));
        assert_eq!(status_word("created", true, true, false), Some("BLOCKED"));
        assert_eq!(status_word("started", true, false, false), Some("FETCHED"));
        assert_eq!(status_word("started", true, false, true), Some("RUNNING"));
        assert_eq!(status_word("aborted", true, false, true), Some("CANCEL"));
        assert_eq!(
            status_word("completed", true, false, false),
            Some("COMPLETED")
        );
        assert_eq!(status_word("failed", true, false, false), Some("ERROR"));
        assert_eq!(status_word("lost", true, false, false), None);
    }

    #[test]
    fn a_live_job_is_active_unless_cancelled_and_a_finished_one_never() {
        for status in ["created", "started", "aborted", "completed", "failed"] {
            for (due, blocked, running) in [
                (true, false, false),
                (false, false, false),
                (true, true, false),
                (true, false, true),
            ] {
                let word = status_word(status, due, blocked, running).unwrap();
                let live = matches!(status, "created" | "started");
                assert_eq!(ACTIVE_WORDS.contains(&word), live, "{status} {word}");
            }
        }
        for word in PROBLEM_WORDS {
            assert!(STATUS_WORDS.contains(&word), "{word}");
        }
    }

    #[test]
    fn every_word_has_a_rank_and_failures_come_first() {
        for word in STATUS_WORDS {
            assert!(status_rank(word).is_some(), "{word}");
        }
        assert!(status_rank("ERROR") < status_rank("RUNNING"));
        assert!(status_rank("RUNNING") < status_rank("COMPLETED"));
        assert_eq!(status_rank("running"), None);
    }
}
