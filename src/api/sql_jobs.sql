-- The statements of src/api/sql_jobs.rs: the executors' side of SQL jobs.

-- name: ready
SELECT count(*) FROM (
    SELECT FROM jobs j
    WHERE j.status = 'created' AND j.claimable_by = _extension_claimant()
      AND hashtextextended(j.queue, 0) = hashtextextended(_sql_queue(), 0) AND j.queue = _sql_queue()
      AND j.run_at <= statement_timestamp()
    LIMIT $1) AS ready;

-- name: start
-- The run of the SQL job $1, just claimed by the executor $2, and what the executor needs.
WITH job AS (
    SELECT j.id, j.owner, j.attempt, j.payload ->> 'sql' AS sql,
           (j.payload ->> 'timeout_ms')::bigint AS timeout_ms
    FROM jobs j WHERE j.id = $1
), run AS (
    INSERT INTO job_runs (job_id, owner, attempt, pid, deadline)
    SELECT job.id, job.owner, job.attempt, $2,
           clock_timestamp() + make_interval(secs => job.timeout_ms / 1000.0) + _cancel_grace()
    FROM job
    RETURNING id
)
SELECT job.sql, job.timeout_ms, job.owner, run.id FROM job, run;

-- name: succeeded
SELECT jobs_complete($1, $2), _sql_job_end($3, 'succeeded');

-- name: fail
SELECT jobs_fail($1, $2, $3);

-- name: failed
-- The run of a job whose statements raised ends failed, or aborted when the job was aborted.
SELECT _sql_job_end($1, CASE h.status WHEN 'aborted' THEN 'aborted' ELSE 'failed' END, $3)
FROM (SELECT) AS one LEFT JOIN job_history h ON h.id = $2;

-- name: end_lost_runs
-- Executors that died (a crash, kill -9) left runs marked running at $1: their leases are over.
WITH lost AS (
    UPDATE job_runs r SET status = 'lost', ended_at = clock_timestamp(),
                          message = 'the executor stopped without reporting'
    WHERE r.status = 'running'
      AND NOT _is_executor(r.pid)
    RETURNING r.job_id, r.pid
), leased AS (
    SELECT j.id FROM jobs j JOIN lost l
        ON j.id = l.job_id AND j.locked_by = _executor_name(l.pid)
    FOR UPDATE OF j SKIP LOCKED
)
UPDATE jobs j SET locked_until = least(j.locked_until, $1 - interval '1 microsecond')
FROM leased l WHERE j.id = l.id
RETURNING _leases_note(j.locked_until);

-- name: overdue_runs
-- Runs still going at their deadline ($1), with their jobs, locked.
SELECT r.id, r.pid, s.id, s.lease_token, s.status = 'aborted'
FROM job_runs r JOIN jobs s ON s.id = r.job_id AND s.locked_by = _executor_name(r.pid)
WHERE r.status = 'running' AND r.deadline < $1
FOR UPDATE OF r, s SKIP LOCKED;

-- name: end_run
SELECT _sql_job_end($1, $2, $3);

-- name: abort_job
SELECT _finish(ARRAY[$1], ARRAY[$2], '{aborted}', 'aborted', NULL);

-- name: fail_timed_out
SELECT jobs_fail($1, $2, 'timed out: the statement did not stop when cancelled');

-- name: end_executor
SELECT pg_terminate_backend($1) WHERE _is_executor($1);

-- name: next_run_event
-- When a run is next overdue, or a SQL job next due.
SELECT least(
    (SELECT min(r.deadline) FROM job_runs r WHERE r.status = 'running'),
    (SELECT min(s.run_at) FROM jobs s
     WHERE s.claimable_by = _extension_claimant() AND hashtextextended(s.queue, 0) = hashtextextended(_sql_queue(), 0)
       AND s.queue = _sql_queue() AND s.status = 'created'));

-- name: forget_old_runs
-- Runs older than pg_jobs.history_days ($2) at $1.
DELETE FROM job_runs r WHERE r.started_at < $1 - make_interval(days => $2);
