-- The statements of src/api/history.rs.

-- name: prepare_months
-- Last month to twelve ahead, without waiting for a reader of job_history (sql/040_history.sql).
SELECT jobs_history_prepare(12, wait => false);
