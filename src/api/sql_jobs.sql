-- The statements of src/api/sql_jobs.rs: the executors' side of SQL jobs.

-- name: ready(limit integer)
SELECT count(*) FROM (
    SELECT FROM jobs j
    WHERE j.status = 'created' AND j.claimable_by = _extension_claimant()
      AND hashtextextended(j.queue, 0) = hashtextextended(_sql_queue(), 0) AND j.queue = _sql_queue()
      AND j.run_at <= statement_timestamp()
    LIMIT $limit) AS ready;

-- name: start(job_id bigint, pid integer)
-- The run of the SQL job $job_id, just claimed by the executor whose process is $pid, and what the
-- executor needs.
WITH job AS (
    SELECT j.id, j.owner, j.attempt, j.payload ->> 'sql' AS sql,
           (j.payload ->> 'timeout_ms')::bigint AS timeout_ms
    FROM jobs j WHERE j.id = $job_id
), run AS (
    INSERT INTO job_runs (job_id, owner, attempt, pid, deadline)
    SELECT job.id, job.owner, job.attempt, $pid,
           clock_timestamp() + make_interval(secs => job.timeout_ms / 1000.0) + _cancel_grace()
    FROM job
    RETURNING id
)
SELECT job.sql, job.timeout_ms, job.owner, run.id FROM job, run;

-- name: succeeded(job_id bigint, lease_token uuid, run_id bigint)
SELECT jobs_complete($job_id, $lease_token), _sql_job_end($run_id, 'succeeded');

-- name: fail(job_id bigint, lease_token uuid, error text)
SELECT jobs_fail($job_id, $lease_token, $error);

-- name: failed(run_id bigint, job_id bigint, message text)
-- The run of a job whose statements raised ends failed, or aborted when the job was aborted.
SELECT _sql_job_end($run_id, CASE h.status WHEN 'aborted' THEN 'aborted' ELSE 'failed' END,
                    $message)
FROM (SELECT) AS one LEFT JOIN job_history h ON h.id = $job_id;

-- name: end_lost_runs(at timestamptz)
-- Executors that died (a crash, kill -9) left runs marked running at $at: their leases are over.
-- A run held (its job's abort, in a transaction left open) is lost at a later round.
WITH lost AS (
    UPDATE job_runs r SET status = 'lost', ended_at = clock_timestamp(),
                          message = 'the executor stopped without reporting'
    WHERE r.ctid = ANY (ARRAY(SELECT o.ctid FROM job_runs o
                              WHERE o.status = 'running' AND NOT _is_executor(o.pid)
                              FOR UPDATE SKIP LOCKED))
    RETURNING r.job_id, r.pid
), leased AS (
    SELECT j.id FROM jobs j JOIN lost l
        ON j.id = l.job_id AND j.locked_by = _executor_name(l.pid)
    FOR UPDATE OF j SKIP LOCKED
)
UPDATE jobs j SET locked_until = least(j.locked_until, $at - interval '1 microsecond')
FROM leased l WHERE j.id = l.id
RETURNING _leases_note(j.locked_until);

-- name: overdue_runs(at timestamptz)
-- Runs still going at $at, past their deadline, with their jobs, locked.
SELECT r.id, r.pid, s.id, s.lease_token, s.status = 'aborted'
FROM job_runs r JOIN jobs s ON s.id = r.job_id AND s.locked_by = _executor_name(r.pid)
WHERE r.status = 'running' AND r.deadline < $at
FOR UPDATE OF r, s SKIP LOCKED;

-- name: end_run(run_id bigint, outcome text, message text)
SELECT _sql_job_end($run_id, $outcome, $message);

-- name: abort_job(job_id bigint, lease_token uuid)
SELECT _finish(ARRAY[$job_id], ARRAY[$lease_token], '{aborted}', 'aborted', NULL);

-- name: fail_timed_out(job_id bigint, lease_token uuid)
SELECT jobs_fail($job_id, $lease_token, 'timed out: the statement did not stop when cancelled');

-- name: end_executor(pid integer)
SELECT pg_terminate_backend($pid) WHERE _is_executor($pid);

-- name: next_run_event
-- When a run is next overdue, or a SQL job next due.
SELECT least(
    (SELECT min(r.deadline) FROM job_runs r WHERE r.status = 'running'),
    (SELECT min(s.run_at) FROM jobs s
     WHERE s.claimable_by = _extension_claimant() AND hashtextextended(s.queue, 0) = hashtextextended(_sql_queue(), 0)
       AND s.queue = _sql_queue() AND s.status = 'created'));

-- name: forget_old_runs(at timestamptz, history_days integer)
-- Runs older than $history_days days (pg_jobs.history_days) at $at.
DELETE FROM job_runs r WHERE r.started_at < $at - make_interval(days => $history_days);
