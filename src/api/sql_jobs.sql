-- The statements of src/api/sql_jobs.rs: the executors' side of SQL jobs.

-- name: ready
SELECT count(*) FROM (
    SELECT FROM jobs j
    WHERE j.status = 'created' AND j.claimable_by = _extension_claimant() AND j.queue = _sql_queue()
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
