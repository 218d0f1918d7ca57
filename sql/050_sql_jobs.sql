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

-- One row per run of a SQL job (start, end, status, message), kept pg_jobs.history_days days.
-- A run still going at its deadline (its timeout, or an abort, plus pg_jobs.cancel_grace) did
-- not stop when it was cancelled, for instance because it catches query_canceled: the launcher
-- ends its process and records it as aborted or timed out.
CREATE TABLE job_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      bigint NOT NULL,
    owner       oid NOT NULL,
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
SET search_path = @extschema@, pg_catalog, pg_temp
BEGIN ATOMIC
    UPDATE job_runs r SET status = outcome, message = _sql_job_end.message, ended_at = clock_timestamp()
    WHERE r.id = run AND r.status = 'running';
END;

CREATE FUNCTION _cancel_grace() RETURNS interval
LANGUAGE sql STABLE
RETURN current_setting('pg_jobs.cancel_grace')::interval;

-- Aborts a running SQL job: its statement is cancelled as soon as the abort commits, and if it
-- has not stopped within pg_jobs.cancel_grace, the launcher ends its process.
CREATE FUNCTION _cancel_sql_job(job bigint) RETURNS void
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    pid integer;
BEGIN
    UPDATE job_runs r SET deadline = least(r.deadline, statement_timestamp() + _cancel_grace())
    WHERE r.job_id = job AND r.status = 'running'
    RETURNING r.pid INTO pid;
    IF FOUND THEN
        PERFORM _cancel_executor_at_commit(pid);
    END IF;
END
$$;

-- Runs still going at their deadline: recorded aborted (their job was aborted) or timed out,
-- their jobs finished as aborted or failed (the attempt counts, as a timeout's does), and their
-- executors' processes ended. A worker's completion after this is fenced by its lease token.
CREATE FUNCTION _stop_overdue_sql_jobs(at timestamptz) RETURNS integer
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    overdue record;
    outcome text;
    stopped integer := 0;
BEGIN
    FOR overdue IN
        SELECT r.id AS run, r.pid, s.id AS job_id, s.lease_token, s.status
        FROM job_runs r JOIN jobs s ON s.id = r.job_id AND s.locked_by = _executor_name(r.pid)
        WHERE r.status = 'running' AND r.deadline < at
        FOR UPDATE OF r, s SKIP LOCKED
    LOOP
        outcome := CASE WHEN overdue.status = 'aborted' THEN 'aborted' ELSE 'timed out' END;
        BEGIN
            PERFORM _sql_job_end(overdue.run, outcome,
                format('did not stop within %s s of its %s; its process was ended',
                       extract(epoch FROM _cancel_grace())::integer,
                       CASE outcome WHEN 'aborted' THEN 'abort' ELSE 'timeout' END));
            IF outcome = 'aborted' THEN
                PERFORM _finish(ARRAY[overdue.job_id], ARRAY[overdue.lease_token], '{aborted}', 'aborted', NULL);
            ELSE
                PERFORM jobs_fail(overdue.job_id, overdue.lease_token, 'timed out: the statement did not stop when cancelled');
            END IF;
        EXCEPTION WHEN OTHERS THEN
            -- One job that cannot be finished must not keep the others' executors running: its
            -- process is ended all the same, and the rescue takes the job when its lease runs out.
            PERFORM _sql_job_end(overdue.run, outcome,
                format('its process was ended; the job is left to its lease (%s)', SQLERRM));
        END;
        IF _is_executor(overdue.pid) THEN
            PERFORM pg_terminate_backend(overdue.pid);
        END IF;
        stopped := stopped + 1;
    END LOOP;
    RETURN stopped;
END
$$;

ALTER TABLE job_runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_reads ON job_runs FOR SELECT USING (owner = (SELECT identity()));
GRANT SELECT ON job_runs TO pgjobs_user;
