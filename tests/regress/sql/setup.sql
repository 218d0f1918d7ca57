-- Shared by every test of this suite: the extension and a few helpers in schema regress.
CREATE EXTENSION pg_jobs CASCADE;
SELECT name, boot_val, unit FROM pg_settings WHERE name LIKE 'pg_jobs.%' ORDER BY name;

CREATE SCHEMA regress;

-- The error a statement raises, as SQLSTATE: message (hint), or 'no error'.
CREATE FUNCTION regress.error_of(statement text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    state text;
    message text;
    hint text;
BEGIN
    EXECUTE statement;
    RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT, hint = PG_EXCEPTION_HINT;
    RETURN state || ': ' || message || CASE WHEN hint <> '' THEN ' (hint: ' || hint || ')' ELSE '' END;
END
$$;

-- A fingerprint of every row the queue keeps, to show that a refused call changed nothing.
CREATE FUNCTION regress.fingerprint() RETURNS text
LANGUAGE sql AS $$
    SELECT md5(concat_ws('|',
        (SELECT string_agg(j::text, ',' ORDER BY j.id) FROM pgjobs.jobs j),
        (SELECT string_agg(k::text, ',' ORDER BY k.idempotency_key) FROM pgjobs.job_keys k),
        (SELECT string_agg(h::text, ',' ORDER BY h.id) FROM pgjobs.job_history h),
        (SELECT string_agg(d::text, ',' ORDER BY d.on_job, d.job_id) FROM pgjobs.job_dependencies d)))
$$;

-- Empties the queue, so each test starts from job 1.
CREATE FUNCTION regress.reset() RETURNS void
LANGUAGE sql AS $$
    TRUNCATE pgjobs.jobs, pgjobs.job_keys, pgjobs.job_history, pgjobs.batch_tally, pgjobs.job_dependencies;
    ALTER TABLE pgjobs.jobs ALTER COLUMN id RESTART;
$$;

-- Makes a waiting job due now, as if its backoff had passed (a batch job's counts follow, as
-- the batch functions keep them).
CREATE FUNCTION regress.make_due(job bigint) RETURNS void
LANGUAGE sql AS $$
    SELECT pgjobs._batch_tally(ARRAY[job], -1);
    UPDATE pgjobs.jobs SET run_at = now() - interval '1 second' WHERE id = job;
    SELECT pgjobs._batch_tally(ARRAY[job], 1);
$$;

-- Empties every compute table, for the tests after a compute_* test.
CREATE FUNCTION regress.compute_reset() RETURNS void
LANGUAGE sql AS $$
    TRUNCATE pgjobs.compute_jobs, pgjobs.compute_slices, pgjobs.slice_reports, pgjobs.result_store, pgjobs.compute_tasks,
        pgjobs.compute_perf_data, pgjobs.compute_fin_totals, pgjobs.compute_results, pgjobs.compute_data, pgjobs.compute_arguments,
        pgjobs.work_functions, pgjobs.work_reject_history, pgjobs.compute_group_workers, pgjobs.compute_group_jobs,
        pgjobs.compute_group_job_period_stats, pgjobs.compute_group_worker_period_stats, pgjobs.compute_groups,
        pgjobs.worker_task_info, pgjobs.worker_run_info, pgjobs.workers CASCADE;
$$;

-- Makes a lease run out, as if its worker had died, and says so where a rescue looks
-- (src/api/leases.rs).
CREATE FUNCTION regress.expire_lease(job bigint) RETURNS void
LANGUAGE sql AS $$
    UPDATE pgjobs.jobs SET locked_until = now() - interval '1 second' WHERE id = job;
    SELECT pgjobs._leases_found(now() - interval '1 second');
$$;

-- The token that holds a job (an agent got it from its claim; the batch tests read it as superuser).
CREATE FUNCTION regress.token(job bigint) RETURNS uuid
LANGUAGE sql AS $$ SELECT lease_token FROM pgjobs.jobs WHERE id = job $$;

-- Runs a statement as a role and reports the result or the error (the access_* tests).
CREATE FUNCTION regress.as_role(role text, statement text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    result text;
BEGIN
    EXECUTE format('SET LOCAL ROLE %I', role);
    BEGIN
        EXECUTE statement INTO result;
        result := coalesce(result, 'ok');
    EXCEPTION WHEN OTHERS THEN
        result := 'ERROR ' || SQLSTATE || ': ' || SQLERRM;
    END;
    RESET ROLE;
    RETURN result;
END
$$;
GRANT USAGE ON SCHEMA regress TO PUBLIC;
