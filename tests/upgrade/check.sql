-- After ALTER EXTENSION pg_jobs UPDATE (scripts/upgrade_tests.sh): the API works on the rows
-- fill.sql made. Each check raises (and psql exits non-zero) when it does not hold.
\set ON_ERROR_STOP on
SET ROLE upgrade_app;
DO $$
DECLARE
    claimed record;
BEGIN
    ASSERT pgjobs.jobs_add('keyed', key => 'k1') = (SELECT id FROM pgjobs.jobs WHERE task = 'keyed'),
        'the key is still held by its job';
    SELECT array_agg(id) AS ids, array_agg(lease_token) AS tokens, string_agg(task, ',' ORDER BY task) AS tasks
      INTO claimed FROM pgjobs.jobs_claim('after-upgrade', ARRAY['default'], 10);
    ASSERT claimed.tasks = 'keyed,waiting', format('claimed %s', claimed.tasks);
    PERFORM pgjobs.jobs_complete(claimed.ids, claimed.tokens);
    ASSERT (SELECT string_agg(task || ':' || status, ',' ORDER BY task) FROM pgjobs.job_history)
           = 'done:completed,failing:failed,keyed:completed,waiting:completed', 'history';
    ASSERT (SELECT count(*) FROM pgjobs.jobs_schedules WHERE name = 'nightly') = 1, 'the schedule';
    ASSERT (SELECT string_agg(status, ',' ORDER BY id) FROM pgjobs.batch_jobs) = 'PENDING,WAITING', 'batch jobs';
    ASSERT (SELECT args FROM pgjobs.batch_jobs WHERE status = 'WAITING')::text NOT LIKE '%hunter2%', 'masked';
    ASSERT (SELECT count(*) FROM pgjobs.routine_definition WHERE schedule = 'NIGHT') = 1, 'the routine';
    ASSERT pgjobs.jobs_add('new after the upgrade') IS NOT NULL, 'a new job';
END
$$;
RESET ROLE;
SET ROLE upgrade_groups;
DO $$
BEGIN
    ASSERT (SELECT count(*) FROM pgjobs.compute_group_jobs) = 1, 'the compute job in its group';
END
$$;
RESET ROLE;
