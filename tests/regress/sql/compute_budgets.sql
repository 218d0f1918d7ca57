-- A compute group's budgets (seed 000's computeGroupAccountingData), as member roles: its owner
-- grants CPU time, GPU time, jobs and bytes in and out (compute_group_budget); fetches hand out
-- no slice that would overrun one (one a task until a job's slices are measured); the fold
-- spends what committed reports measured, exactly (spent plus remaining is granted); a grant
-- lets the work go on, and so does a budget made unlimited again (compute_group_unbudget).
-- Refused: a negative amount, an unknown budget, a group of another owner or none (a budget row
-- another transaction holds: isolation compute_fetch_at_budget). Who reads the budgets. The fold
-- is called by hand, as the launcher would.
SELECT regress.reset();
CREATE ROLE regress_cb_group_owner;
CREATE ROLE regress_cb_owner;      -- deploys a job into the group
CREATE ROLE regress_cb_w1;         -- a worker
CREATE ROLE regress_cb_other;      -- another member
CREATE ROLE regress_cb_stranger;   -- not a member of pgjobs_user
GRANT pgjobs_user TO regress_cb_group_owner, regress_cb_owner, regress_cb_w1, regress_cb_other;
INSERT INTO pgjobs.compute_groups (owner, name, join_key, deploy_access)
VALUES ('regress_cb_group_owner'::regrole, 'Budgeted', 'budget-key', 'join')
RETURNING id AS g, opaque_id AS g_opaque \gset
INSERT INTO pgjobs.compute_groups (owner, name) VALUES ('regress_cb_other'::regrole, 'Other')
RETURNING id AS g_other \gset
SET ROLE regress_cb_group_owner;
SELECT pgjobs.compute_group_set_secret(:'g_opaque', 'budget-secret-long-enough');
-- No budget yet: unlimited, nothing spent.
SELECT granted_cpu_time, spent_cpu_time, remaining_cpu_time, granted_gpu_time, spent_gpu_time, remaining_gpu_time,
       granted_in_data_size, spent_in_data_size, remaining_in_data_size, granted_out_data_size,
       spent_out_data_size, remaining_out_data_size, remaining_jobs
FROM pgjobs.compute_group_budgets;
RESET ROLE;
SET ROLE regress_cb_w1;
SELECT pgjobs.compute_worker_register('w1', '[]', '{"map-basic": "1.2.0"}', 4, 0, 2) IS NOT NULL AS registered;
SELECT pgjobs.compute_worker_join(:'g_opaque', 'budget-key', 'budget-secret-long-enough') = :g AS joined;
RESET ROLE;

-- Refused, nothing changed: a negative amount, another owner's group, no group, a stranger.
SELECT string_agg(b::text, ',') AS before FROM pgjobs.compute_group_budgets b \gset
-- (The group ids, which vary, shown as <g> and <other> and named N in messages.)
SELECT role, replace(replace(call, '%1$s', '<g>'), '%2$s', '<other>') AS call,
       regexp_replace(regress.as_role(role, format(call, :g, :g_other)), 'compute group -?\d+', 'compute group N') AS refused
FROM (VALUES ('regress_cb_group_owner', 'SELECT pgjobs.compute_group_budget(%1$s, cpu_time => -1)'),
             ('regress_cb_group_owner', 'SELECT pgjobs.compute_group_budget(%1$s, jobs => -1)'),
             ('regress_cb_group_owner', 'SELECT pgjobs.compute_group_budget(%1$s, out_data_size => -5)'),
             ('regress_cb_group_owner', 'SELECT pgjobs.compute_group_budget(%2$s, cpu_time => 10)'),
             ('regress_cb_group_owner', 'SELECT pgjobs.compute_group_budget(-7, cpu_time => 10)'),
             ('regress_cb_group_owner', 'SELECT pgjobs.compute_group_budget(NULL, cpu_time => 10)'),
             ('regress_cb_other', 'SELECT pgjobs.compute_group_budget(%1$s, cpu_time => 10)'),
             ('regress_cb_w1', 'SELECT pgjobs.compute_group_budget(%1$s, cpu_time => 10)'),
             ('regress_cb_stranger', 'SELECT pgjobs.compute_group_budget(%1$s, cpu_time => 10)'),
             ('regress_cb_group_owner', 'SELECT pgjobs.compute_group_unbudget(%1$s, ARRAY[''cpu''])'),
             ('regress_cb_group_owner', 'SELECT pgjobs.compute_group_unbudget(%1$s, ARRAY[''jobs'', NULL])'),
             ('regress_cb_group_owner', 'SELECT pgjobs.compute_group_unbudget(%1$s, ARRAY[]::text[])'),
             ('regress_cb_group_owner', 'SELECT pgjobs.compute_group_unbudget(%1$s, NULL)'),
             ('regress_cb_group_owner', 'SELECT pgjobs.compute_group_unbudget(%2$s, ARRAY[''jobs''])'),
             ('regress_cb_other', 'SELECT pgjobs.compute_group_unbudget(%1$s, ARRAY[''jobs''])'),
             ('regress_cb_w1', 'SELECT pgjobs.compute_group_unbudget(%1$s, ARRAY[''jobs''])'),
             ('regress_cb_stranger', 'SELECT pgjobs.compute_group_unbudget(%1$s, ARRAY[''jobs''])'))
     AS c(role, call);
SELECT string_agg(b::text, ',') = :'before' AS unchanged FROM pgjobs.compute_group_budgets b;

-- The owner grants 100 ms of CPU, 2 jobs and 1,000 bytes in; GPU time and bytes out stay
-- unlimited. Only the owner reads them (the other member reads its own group's only).
SET ROLE regress_cb_group_owner;
SELECT granted_cpu_time, spent_cpu_time, remaining_cpu_time, granted_gpu_time, remaining_gpu_time,
       granted_in_data_size, remaining_in_data_size, remaining_out_data_size, remaining_jobs
FROM pgjobs.compute_group_budget(:g, cpu_time => 100, jobs => 2, in_data_size => 1000);
RESET ROLE;
SELECT role, regress.as_role(role, format('SELECT count(*) FROM pgjobs.compute_group_budgets WHERE compute_group_id = %s', :g)) AS budgets_seen,
       regress.as_role(role, format('SELECT count(*) FROM pgjobs.compute_group_accounting_data WHERE compute_group_id = %s', :g)) AS accounting_seen,
       regress.as_role(role, 'SELECT count(*) FROM pgjobs.compute_group_budgets') AS any_budgets_seen
FROM (VALUES ('regress_cb_group_owner'), ('regress_cb_owner'), ('regress_cb_w1'), ('regress_cb_other'),
             ('regress_cb_stranger')) AS r(role);

-- A job of six values deployed into the group takes one of its jobs.
SET ROLE regress_cb_owner;
SELECT pgjobs.compute_deploy(jsonb_build_object(
    'work', 'function (x) { return x * x }',
    'input', jsonb_build_object('values', jsonb_build_array('1', '2', '3', '4', '5', '6')),
    'groups', jsonb_build_array(jsonb_build_object('group', :'g_opaque', 'join_key', 'budget-key',
                                                   'secret', 'budget-secret-long-enough')),
    'offer', '0.01', 'funds', '2', 'estimation_slices', 0, 'max_slices_per_task', 10)) AS job \gset
RESET ROLE;
SELECT remaining_jobs FROM pgjobs.compute_group_budgets WHERE compute_group_id = :g;

-- Not measured yet: a task takes one slice.
SET ROLE regress_cb_w1;
CREATE TEMP TABLE task1 AS SELECT * FROM pgjobs.compute_fetch();
SELECT count(*) AS slices FROM task1;
SELECT task_token AS t1 FROM task1 LIMIT 1 \gset
SELECT outcome FROM pgjobs.compute_submit(:'t1', ARRAY(SELECT slice_number FROM task1), '{1}', '{60}', '{0}', '{70}', '{300}', '{8}');
RESET ROLE;
SELECT pgjobs._compute_fold() AS folded;
SELECT granted_cpu_time, spent_cpu_time, remaining_cpu_time, granted_cpu_time = spent_cpu_time + remaining_cpu_time AS exact,
       granted_in_data_size, spent_in_data_size, remaining_in_data_size, spent_gpu_time, spent_out_data_size
FROM pgjobs.compute_group_budgets WHERE compute_group_id = :g;
SELECT slice_cpu_time FROM pgjobs.compute_perf_data WHERE job_id = :job;
-- Measured at 60 ms a slice, 40 ms left holds none: the fetch gets nothing.
SET ROLE regress_cb_w1;
SELECT count(*) AS slices FROM pgjobs.compute_fetch();
RESET ROLE;

-- The owner grants 100 ms more: 140 ms left hold two slices at 60.
SET ROLE regress_cb_group_owner;
SELECT granted_cpu_time, spent_cpu_time, remaining_cpu_time FROM pgjobs.compute_group_budget(:g, cpu_time => 100);
RESET ROLE;
SET ROLE regress_cb_w1;
CREATE TEMP TABLE task2 AS SELECT * FROM pgjobs.compute_fetch();
SELECT count(*) AS slices FROM task2;
SELECT task_token AS t2 FROM task2 LIMIT 1 \gset
-- They measure more than their average: the budget is overrun, exactly as measured.
SELECT outcome FROM pgjobs.compute_submit(:'t2', ARRAY(SELECT slice_number FROM task2 ORDER BY 1), '{4,9}',
                                          '{90,90}', '{0,0}', '{100,100}', '{400,400}', '{8,8}');
RESET ROLE;
SELECT pgjobs._compute_fold() AS folded;
SELECT granted_cpu_time, spent_cpu_time, remaining_cpu_time, granted_cpu_time = spent_cpu_time + remaining_cpu_time AS exact,
       spent_in_data_size, remaining_in_data_size
FROM pgjobs.compute_group_budgets WHERE compute_group_id = :g;
-- Spent (below zero): nothing more of this group's work is handed out.
SET ROLE regress_cb_w1;
SELECT count(*) AS slices FROM pgjobs.compute_fetch();
RESET ROLE;
-- What the group spent is what its workers' period statistics add up to; the spending, which
-- only the fold writes, is read by the group's owner alone.
SELECT s.cpu_time = (SELECT sum(p.cpu_time) FROM pgjobs.compute_group_worker_period_stats p WHERE p.compute_group_id = :g) AS matches_stats
FROM pgjobs.compute_group_spent s WHERE s.compute_group_id = :g;
SELECT role, regress.as_role(role, 'SELECT coalesce(string_agg(cpu_time::text, '',''), ''none'') FROM pgjobs.compute_group_spent') AS spent_seen,
       regress.as_role(role, 'UPDATE pgjobs.compute_group_spent SET cpu_time = 0') AS spent_changed
FROM (VALUES ('regress_cb_group_owner'), ('regress_cb_owner'), ('regress_cb_w1'), ('regress_cb_other')) AS r(role);
-- The owner makes the CPU budget unlimited again (compute_group_unbudget): the spending stays
-- counted, the other budgets as they were, and the bytes in, overrun too, still hold the work.
SET ROLE regress_cb_group_owner;
SELECT granted_cpu_time, spent_cpu_time, remaining_cpu_time, granted_in_data_size, remaining_in_data_size,
       remaining_jobs
FROM pgjobs.compute_group_unbudget(:g, ARRAY['cpu_time']);
RESET ROLE;
SET ROLE regress_cb_w1;
SELECT count(*) AS slices FROM pgjobs.compute_fetch();
RESET ROLE;
-- With the bytes in unlimited too, the work goes on.
SET ROLE regress_cb_group_owner;
SELECT remaining_cpu_time, granted_in_data_size, spent_in_data_size, remaining_in_data_size
FROM pgjobs.compute_group_unbudget(:g, ARRAY['in_data_size']);
RESET ROLE;
SET ROLE regress_cb_w1;
CREATE TEMP TABLE task3 AS SELECT * FROM pgjobs.compute_fetch();
SELECT count(*) > 0 AS slices_again FROM task3;
SELECT task_token AS t3 FROM task3 LIMIT 1 \gset
RESET ROLE;

-- Totals a worker's reports drive to the largest bigint stay there, and the fold goes on: each
-- report measures at most 1e12 of each, and a fold that failed on a total out of range would hold
-- back every job with reports through the group, at every round. A job's counts of tasks and
-- reports go past an integer's largest (a job may have 2^31 - 1 slices, each handed out more than
-- once): the fold adds up every job's tasks in one statement.
UPDATE pgjobs.compute_group_spent
SET cpu_time = 9223372036854775000, gpu_time = 9223372036854775000, in_data_size = 9223372036854775000,
    out_data_size = 9223372036854775000
WHERE compute_group_id = :g;
UPDATE pgjobs.compute_perf_data
SET task_count = 2147483647, measured_slices = 2147483647, total_cpu_time = 9223372036854775000, total_gpu_time = 9223372036854775000,
    total_in_data_size = 9223372036854775000, total_out_data_size = 9223372036854775000
WHERE job_id = :job;
UPDATE pgjobs.compute_group_job_period_stats
SET total_cpu_time = 9223372036854775000, total_gpu_time = 9223372036854775000,
    total_in_data_size = 9223372036854775000, total_out_data_size = 9223372036854775000
WHERE job_id = :job;
UPDATE pgjobs.compute_group_worker_period_stats
SET cpu_time = 9223372036854775000, gpu_time = 9223372036854775000, in_data_size = 9223372036854775000,
    out_data_size = 9223372036854775000
WHERE compute_group_id = :g;
SET ROLE regress_cb_w1;
SELECT outcome FROM pgjobs.compute_submit(:'t3', ARRAY(SELECT slice_number FROM task3 ORDER BY 1),
                                          ARRAY(SELECT '1' FROM task3), ARRAY(SELECT 1e12 FROM task3),
                                          ARRAY(SELECT 1e12 FROM task3), ARRAY(SELECT 1e12 FROM task3),
                                          ARRAY(SELECT 1000000000000 FROM task3),
                                          ARRAY(SELECT 1000000000000 FROM task3))
LIMIT 1;
RESET ROLE;
SELECT pgjobs._compute_fold() AS folded;
SELECT count(*) AS unfolded FROM pgjobs.slice_reports WHERE job_id = :job AND folded_seq IS NULL;
SELECT cpu_time, gpu_time, in_data_size, out_data_size FROM pgjobs.compute_group_spent WHERE compute_group_id = :g;
SELECT task_count, measured_slices, total_cpu_time, total_gpu_time, total_in_data_size, total_out_data_size
FROM pgjobs.compute_perf_data WHERE job_id = :job;
SELECT DISTINCT total_cpu_time, total_gpu_time, total_in_data_size, total_out_data_size
FROM pgjobs.compute_group_job_period_stats WHERE job_id = :job;
SELECT DISTINCT cpu_time, gpu_time, in_data_size, out_data_size
FROM pgjobs.compute_group_worker_period_stats WHERE compute_group_id = :g;
-- A grant past a budget's largest amount is refused, naming it, and changes nothing: the CPU
-- budget, unlimited, would start past the group's spending, which is that largest amount now; the
-- jobs budget is an integer.
SELECT string_agg(b::text, ',') AS before FROM pgjobs.compute_group_budgets b \gset
SELECT call, regress.as_role('regress_cb_group_owner', format(call, :g)) AS refused
FROM (VALUES ('SELECT pgjobs.compute_group_budget(%s, cpu_time => 1)'),
             ('SELECT pgjobs.compute_group_budget(%s, jobs => 2147483647)'))
     AS c(call);
SELECT string_agg(b::text, ',') = :'before' AS unchanged FROM pgjobs.compute_group_budgets b;
SELECT regress.as_role('regress_cb_group_owner',
                       format('SELECT remaining_jobs FROM pgjobs.compute_group_budget(%s, jobs => 2147483646)', :g))
       AS jobs_to_the_largest;
DROP TABLE task1, task2, task3;
SELECT regress.compute_reset();
SELECT regress.reset();
DROP OWNED BY regress_cb_group_owner, regress_cb_owner, regress_cb_w1, regress_cb_other;
DROP ROLE regress_cb_group_owner, regress_cb_owner, regress_cb_w1, regress_cb_other, regress_cb_stranger;
