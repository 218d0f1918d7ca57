//! Which statuses a job may have where it is stored, as the tables' CHECK constraints enforce.

/// A live slice waits (`created`) exactly when it holds no lease token, and is never finished:
/// finished jobs are in `job_history`.
pub fn live_slice_ok(status: &str, has_lease_token: bool) -> bool {
    match status {
        "created" => !has_lease_token,
        "started" | "aborted" => has_lease_token,
        _ => false,
    }
}

/// Every job in `job_history` has finished.
pub fn finished_status_ok(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "aborted")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_waiting_slice_has_no_token_and_a_leased_one_has_one() {
        assert!(live_slice_ok("created", false));
        assert!(!live_slice_ok("created", true));
        for leased in ["started", "aborted"] {
            assert!(live_slice_ok(leased, true), "{leased}");
            assert!(!live_slice_ok(leased, false), "{leased}");
        }
    }

    #[test]
    fn no_slice_is_finished_and_every_history_row_is() {
        for finished in ["completed", "failed"] {
            assert!(!live_slice_ok(finished, true), "{finished}");
            assert!(!live_slice_ok(finished, false), "{finished}");
            assert!(finished_status_ok(finished), "{finished}");
        }
        assert!(finished_status_ok("aborted"));
        for live in ["created", "started", ""] {
            assert!(!finished_status_ok(live), "{live}");
        }
    }
}
