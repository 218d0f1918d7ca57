//! Which statuses a job may have where it is stored, as the tables' CHECK constraints enforce.

/// The labels of `job_status` (sql/010_types.sql), in its order.
pub const JOB_STATUSES: [&str; 5] = ["created", "started", "completed", "failed", "aborted"];

/// A live job waits (`created`) exactly when it holds no lease token, and is never finished:
/// finished jobs are in `job_history`. It has an idempotency key exactly when it has the key's
/// rule (skip or replace).
pub fn live_job_ok(status: &str, has_lease_token: bool, has_key: bool, has_key_rule: bool) -> bool {
    let leased = match status {
        "created" => false,
        "started" | "aborted" => true,
        _ => return false,
    };
    leased == has_lease_token && has_key == has_key_rule
}

/// Every job in `job_history` has finished.
pub fn finished_status_ok(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "aborted")
}

/// What a heartbeat tells a worker from the status of the job its token holds (None: the token
/// holds no live job): held (keep working), aborted (stop and report), lost (roll back).
pub fn lease_state(status: Option<&str>) -> &'static str {
    match status {
        Some("started") => "held",
        Some("aborted") => "aborted",
        _ => "lost",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_labels_are_those_of_the_sql_type() {
        let types = include_str!("../../sql/010_types.sql");
        let labels: Vec<String> = JOB_STATUSES
            .iter()
            .map(|label| format!("'{label}'"))
            .collect();
        let declared = format!("CREATE TYPE job_status AS ENUM ({});", labels.join(", "));
        assert!(types.contains(&declared), "{declared}");
    }

    #[test]
    fn a_lease_is_held_while_started_and_lost_once_the_token_holds_nothing() {
        assert_eq!(lease_state(Some("started")), "held");
        assert_eq!(lease_state(Some("aborted")), "aborted");
        assert_eq!(lease_state(None), "lost");
        assert_eq!(lease_state(Some("created")), "lost");
    }

    #[test]
    fn a_waiting_job_has_no_token_and_a_leased_one_has_one() {
        assert!(live_job_ok("created", false, false, false));
        assert!(!live_job_ok("created", true, false, false));
        for leased in ["started", "aborted"] {
            assert!(live_job_ok(leased, true, false, false), "{leased}");
            assert!(!live_job_ok(leased, false, false, false), "{leased}");
        }
    }

    #[test]
    fn a_key_comes_with_its_rule() {
        assert!(live_job_ok("created", false, true, true));
        assert!(!live_job_ok("created", false, true, false));
        assert!(!live_job_ok("started", true, false, true));
    }

    #[test]
    fn no_live_job_is_finished_and_every_history_row_is() {
        for finished in ["completed", "failed"] {
            assert!(!live_job_ok(finished, true, false, false), "{finished}");
            assert!(!live_job_ok(finished, false, false, false), "{finished}");
            assert!(finished_status_ok(finished), "{finished}");
        }
        assert!(finished_status_ok("aborted"));
        for live in ["created", "started", ""] {
            assert!(!finished_status_ok(live), "{live}");
        }
    }
}
