-- SQL jobs: jobs the background worker runs in the database (src/bgworker/executor.rs), as their
-- owner. jobs_add_sql is src/api/sql_jobs.rs.

CREATE FUNCTION jobs_add_sql(
    sql text,
    run_at timestamptz DEFAULT NULL,
    priority integer DEFAULT 0,
    max_attempts integer DEFAULT NULL,
    backoff interval DEFAULT NULL,
    max_backoff interval DEFAULT NULL,
    timeout interval DEFAULT '1 hour',
    key text DEFAULT NULL,
    on_conflict text DEFAULT 'skip'
) RETURNS bigint
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_add_sql';
COMMENT ON FUNCTION jobs_add_sql IS
    'Adds a job that the background worker runs in the database, as the job''s owner, with a statement timeout.';
GRANT EXECUTE ON FUNCTION jobs_add_sql TO pgjobs_user;

-- One row per run of a SQL job (start, end, status, message), kept pg_jobs.history_days days.
-- A run still going at its deadline (its timeout, or an abort, plus pg_jobs.cancel_grace) did
-- not stop when it was cancelled, for instance because it catches query_canceled: the launcher
-- ends its process and records it as aborted or timed out.
CREATE TABLE job_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      bigint NOT NULL,
    owner       regrole NOT NULL,
    attempt     integer NOT NULL,
    pid         integer NOT NULL,
    status      text NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'succeeded', 'failed', 'aborted', 'timed out', 'lost')),
    message     text,
    started_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    deadline    timestamptz NOT NULL,
    ended_at    timestamptz,
    duration    interval GENERATED ALWAYS AS (ended_at - started_at) STORED
);
CREATE INDEX job_runs_job ON job_runs (job_id);
CREATE INDEX job_runs_owner ON job_runs (owner);
CREATE INDEX job_runs_started ON job_runs (started_at);
CREATE INDEX job_runs_running ON job_runs (pid) WHERE status = 'running';

-- The name an executor holds a job's lease by (src/bgworker/executor.rs starts it under the same
-- type), and whether a pid is still one: a pid whose executor died may belong to another process.
CREATE FUNCTION _executor_name(pid integer) RETURNS text
LANGUAGE sql IMMUTABLE
RETURN format('pg_jobs sql executor %s', pid);

CREATE FUNCTION _is_executor(pid integer) RETURNS boolean
LANGUAGE sql STABLE
RETURN EXISTS (SELECT FROM pg_stat_activity a WHERE a.pid = _is_executor.pid AND a.backend_type = 'pg_jobs sql executor');

CREATE FUNCTION _sql_job_end(run bigint, outcome text, message text DEFAULT NULL) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    UPDATE job_runs r SET status = outcome, message = _sql_job_end.message, ended_at = clock_timestamp()
    WHERE r.id = run AND r.status = 'running';
END;

CREATE FUNCTION _cancel_grace() RETURNS interval
LANGUAGE sql STABLE
RETURN current_setting('pg_jobs.cancel_grace')::interval;

ALTER TABLE job_runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_reads ON job_runs FOR SELECT USING (owner = (SELECT identity()));
GRANT SELECT ON job_runs TO pgjobs_user;
