//! Batch jobs: the status words of the worker pool over the queue's states, and the arguments
//! that are shown masked.

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

/// Words of a flag's name (split at `-`, `_`, `.`) that make its value a secret; the longer ones
/// also end a word (`--dbpassword`), the short ones only stand alone (`--key`, not `--monkey`).
const SECRET_WORDS: [&str; 8] = [
    "password",
    "passwd",
    "token",
    "secret",
    "credential",
    "pass",
    "key",
    "auth",
];

/// The shown value of a secret argument.
pub const MASK: &str = "********";

fn is_secret_flag(flag: &str) -> bool {
    let name = flag.trim_start_matches('-').to_ascii_lowercase();
    flag.starts_with('-')
        && !name.is_empty()
        && name
            .split(|c: char| !c.is_ascii_alphanumeric())
            .map(|word| word.strip_suffix('s').unwrap_or(word))
            .any(|word| {
                SECRET_WORDS
                    .iter()
                    .any(|secret| word == *secret || (secret.len() > 4 && word.ends_with(secret)))
            })
}

/// The arguments as shown: the value of every flag whose name looks like a secret (`--password
/// x`, `--api-key=x`, `--token x`, `-passwd x`, ...) is masked, whether it follows the flag or is
/// joined to it with `=`. A flag followed by another flag has no value to mask.
pub fn mask_secret_args(args: &[Option<String>]) -> Vec<Option<String>> {
    let mut shown = Vec::with_capacity(args.len());
    let mut mask_next = false;
    for arg in args {
        let Some(text) = arg else {
            shown.push(None);
            mask_next = false;
            continue;
        };
        if mask_next && !text.starts_with('-') {
            shown.push(Some(MASK.to_string()));
            mask_next = false;
            continue;
        }
        mask_next = false;
        match text.split_once('=') {
            Some((flag, _)) if is_secret_flag(flag) => shown.push(Some(format!("{flag}={MASK}"))),
            Some(_) => shown.push(Some(text.clone())),
            None => {
                mask_next = is_secret_flag(text);
                shown.push(Some(text.clone()));
            }
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(args: &[&str]) -> Vec<String> {
        let given: Vec<Option<String>> = args.iter().map(|a| Some(a.to_string())).collect();
        mask_secret_args(&given)
            .into_iter()
            .map(Option::unwrap)
            .collect()
    }

    #[test]
    fn values_of_secret_flags_are_masked_in_both_forms() {
        assert_eq!(
            masked(&[
                "--user",
                "ann",
                "--password",
                "hunter2",
                "--api-key=abc",
                "-token",
                "t"
            ]),
            [
                "--user",
                "ann",
                "--password",
                MASK,
                "--api-key=********",
                "-token",
                MASK
            ]
        );
        assert_eq!(
            masked(&[
                "--db-passwd",
                "x",
                "--SECRET",
                "y",
                "--auth_token=z",
                "--credentials",
                "c"
            ]),
            [
                "--db-passwd",
                MASK,
                "--SECRET",
                MASK,
                "--auth_token=********",
                "--credentials",
                MASK
            ]
        );
    }

    #[test]
    fn other_arguments_are_shown_as_given() {
        let plain = [
            "run",
            "--fast",
            "--keyboard",
            "us",
            "--monkey",
            "x",
            "a=b",
            "--author",
            "y",
        ];
        assert_eq!(masked(&plain), plain);
    }

    #[test]
    fn a_secret_flag_followed_by_a_flag_masks_nothing() {
        assert_eq!(
            masked(&["--token", "--verbose", "x"]),
            ["--token", "--verbose", "x"]
        );
        assert_eq!(masked(&["--password"]), ["--password"]);
    }

    #[test]
    fn nulls_stay_null_and_end_a_pending_value() {
        let args = vec![
            Some("--password".to_string()),
            None,
            Some("plain".to_string()),
        ];
        assert_eq!(
            mask_secret_args(&args),
            vec![
                Some("--password".to_string()),
                None,
                Some("plain".to_string())
            ]
        );
    }

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
    fn every_word_has_a_rank_and_failures_come_first() {
        for word in STATUS_WORDS {
            assert!(status_rank(word).is_some(), "{word}");
        }
        assert!(status_rank("ERROR") < status_rank("RUNNING"));
        assert!(status_rank("RUNNING") < status_rank("COMPLETED"));
        assert_eq!(status_rank("running"), None);
    }
}
