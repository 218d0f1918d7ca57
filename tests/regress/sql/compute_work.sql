-- The compute scheduler at work (sql/083_compute_work.sql), as its roles call it: deploying,
-- workers joining and fetching, estimation, progress, returns, rejections, results large and
-- small, duplication by race and by consensus, the watchdog, funds running out, and the fold.
-- The background worker does not work in this database: the fold and the watchdog are called
-- by hand, as the launcher would.

SELECT regress.reset();
CREATE ROLE regress_cw_owner;          -- deploys jobs
CREATE ROLE regress_cw_other;          -- another job owner
CREATE ROLE regress_cw_group_owner;    -- owns the groups
CREATE ROLE regress_cw_supplier;       -- owns the workers
CREATE ROLE regress_cw_w1;             -- workers: proxies of the supplier
CREATE ROLE regress_cw_w2;
CREATE ROLE regress_cw_w3;
CREATE ROLE regress_cw_x2;             -- workers that are identities of their own
CREATE ROLE regress_cw_x3;
CREATE ROLE regress_cw_x4;             -- a worker of Alice's group only, for results that disagree
CREATE ROLE regress_cw_mallory;        -- a supplier who forges results, with two proxies
CREATE ROLE regress_cw_mallory_p1;
CREATE ROLE regress_cw_mallory_p2;
GRANT pgjobs_user TO regress_cw_owner, regress_cw_other, regress_cw_group_owner, regress_cw_supplier,
    regress_cw_w1, regress_cw_w2, regress_cw_w3, regress_cw_x2, regress_cw_x3, regress_cw_x4,
    regress_cw_mallory, regress_cw_mallory_p1, regress_cw_mallory_p2;
GRANT regress_cw_w1, regress_cw_w2, regress_cw_w3 TO regress_cw_supplier;
GRANT regress_cw_mallory_p1, regress_cw_mallory_p2 TO regress_cw_mallory;
GRANT USAGE ON SCHEMA regress TO regress_cw_owner, regress_cw_other, regress_cw_group_owner,
    regress_cw_supplier, regress_cw_w1, regress_cw_w2, regress_cw_w3, regress_cw_x2, regress_cw_x3,
    regress_cw_x4, regress_cw_mallory, regress_cw_mallory_p1, regress_cw_mallory_p2;
SET ROLE regress_cw_supplier;
SELECT pgjobs.jobs_add_proxy('regress_cw_w1'), pgjobs.jobs_add_proxy('regress_cw_w2'),
       pgjobs.jobs_add_proxy('regress_cw_w3');
RESET ROLE;
SET ROLE regress_cw_mallory;
SELECT pgjobs.jobs_add_proxy('regress_cw_mallory_p1'), pgjobs.jobs_add_proxy('regress_cw_mallory_p2');
RESET ROLE;

-- Groups, as an administrator makes them: Main, with a commission and fees, takes deployments
-- from anyone who knows its join key and secret; Own takes its owner's only.
INSERT INTO pgjobs.compute_groups (owner, name, join_key, commission_rate, deploy_fee, add_job_fee, deploy_access)
VALUES ('regress_cw_group_owner'::regrole, 'Main', 'main-key', 0.1, 0.5, 0.25, 'join')
RETURNING id AS g_main, opaque_id AS g_main_opaque \gset
INSERT INTO pgjobs.compute_groups (owner, name, join_key)
VALUES ('regress_cw_group_owner'::regrole, 'Own', 'own-key')
RETURNING id AS g_own, opaque_id AS g_own_opaque \gset
SET ROLE regress_cw_group_owner;
SELECT pgjobs.compute_group_set_secret(:'g_main_opaque', 'main-secret-long-enough'),
       pgjobs.compute_group_set_secret(:'g_own_opaque', 'own-secret-long-enough');
-- Main's workers may fetch the data of the jobs of a URL pattern below (compute_origins).
INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin, type)
VALUES (:g_main, 'https://data.example', 'fetchData');
RESET ROLE;

-- What the compute tables hold, to show that a refused call changed nothing.
CREATE FUNCTION regress.compute_fingerprint() RETURNS text
LANGUAGE sql AS $$
    SELECT md5(concat_ws('|', regress.fingerprint(),
        (SELECT string_agg(c::text, ',' ORDER BY c.job_id) FROM pgjobs.compute_jobs c),
        (SELECT string_agg(s::text, ',' ORDER BY s.job_id, s.slice_number, s.copy) FROM pgjobs.compute_slices s),
        (SELECT string_agg(r::text, ',' ORDER BY r.id) FROM pgjobs.slice_reports r),
        (SELECT string_agg(m::text, ',' ORDER BY m.worker_opaque_id, m.compute_group_id) FROM pgjobs.compute_group_workers m),
        (SELECT string_agg(w::text, ',' ORDER BY w.opaque_id) FROM pgjobs.workers w)))
$$;

-- A deployment of five values into Main, and variations of it.
CREATE FUNCTION regress.spec(changes jsonb DEFAULT '{}') RETURNS jsonb
LANGUAGE sql AS $$
    SELECT jsonb_build_object(
        'work', 'function (x) { return x * x }',
        'arguments', jsonb_build_array('data:,7'),
        'input', jsonb_build_object('values', jsonb_build_array('1', '2', '3', '4', '5')),
        'groups', jsonb_build_array(jsonb_build_object('group', current_setting('regress.g_main'),
                                                       'join_key', 'main-key', 'secret', 'main-secret-long-enough')),
        'offer', '0.01', 'funds', '2', 'estimation_slices', 2, 'max_slices_per_task', 10,
        'capabilities', jsonb_build_array('v8'), 'worktime_version', '^1.0.0', 'name', 'squares') || changes
$$;
SELECT set_config('regress.g_main', :'g_main_opaque', false) IS NOT NULL AS main_group_named;

-- Bad input: each refused with its SQLSTATE, nothing changed (w1 registered, to try its joins).
SET ROLE regress_cw_w1;
SELECT pgjobs.compute_worker_register('w1') IS NOT NULL AS registered;
RESET ROLE;
SELECT regress.compute_fingerprint() AS before \gset
SET ROLE regress_cw_owner;
SELECT regress.error_of(format('SELECT pgjobs.compute_deploy(%L)', regress.spec(c))) AS refused
FROM (VALUES ('{"offer": "-1"}'::jsonb),
             ('{"duplication_level": 0.5}'),
             ('{"input": {"values": []}}'),
             ('{"input": {"range": {"start": 5, "end": 1}}}'),
             ('{"input": {"range": {"start": "NaN", "end": 1}}}'),
             ('{"input": {"range": {"start": 1, "end": "Infinity"}}}'),
             ('{"input": {"range": {"start": 1, "end": 1e300}}}'),
             ('{"input": {"range": {"start": 1, "end": 5, "step": 0}}}'),
             ('{"input": {"range": {"start": 1, "end": 3e9}}}'),
             ('{"input": {"range": {"start": 1, "end": 1000001}}}'),
             ('{"input": {"nothing": 1}}'),
             ('{"input": {"pattern": "https://data.example/x", "count": 3}}'),
             ('{"capabilities": ["v8", "quantum"]}'),
             ('{"flags": ["open", "nsf"]}'),
             ('{"capabilities": "v8"}'),
             ('{"flags": {"open": true}}'),
             ('{"duplication_type": "vote"}'),
             ('{"worktime_version": "one point oh"}'),
             ('{"offer": "0.0000000000000000001"}'),
             ('{"market_value": 2}'),
             ('{"max_slices_per_task": 0}'),
             ('{"funds": "0.5"}'),
             ('{"tsak": 1}'),
             ('{"work": ""}'),
             ('{"groups": []}')) v(c);
-- Another owner's group, named alone or with its credentials, a group taking joiners' deployments
-- given a wrong secret, and a group that is not there: one error for all.
SELECT regexp_replace(regress.error_of(format('SELECT pgjobs.compute_deploy(%L)', regress.spec(jsonb_build_object('groups', g)))),
                      'group [0-9a-f-]{36}', 'group <id>') AS refused
FROM (VALUES (jsonb_build_array(:'g_own_opaque')),
             (jsonb_build_array(jsonb_build_object('group', :'g_own_opaque', 'join_key', 'own-key', 'secret', 'own-secret-long-enough'))),
             (jsonb_build_array(jsonb_build_object('group', :'g_main_opaque', 'join_key', 'main-key', 'secret', 'wrong'))),
             (jsonb_build_array(gen_random_uuid()))) v(g);
RESET ROLE;
-- Workers: a role that registered none fetching, bad registrations, joins with a wrong secret,
-- a key of another group, a group that is not there.
SET ROLE regress_cw_other;
SELECT regress.error_of('SELECT pgjobs.compute_fetch()') AS refused;
RESET ROLE;
-- A worker its owner put into workers but that never said what it runs.
INSERT INTO pgjobs.workers (owner, identity, label)
VALUES ('regress_cw_group_owner'::regrole, 'regress_cw_group_owner'::regrole, 'unregistered');
SET ROLE regress_cw_group_owner;
SELECT regress.error_of('SELECT pgjobs.compute_fetch()') AS refused;
RESET ROLE;
DELETE FROM pgjobs.workers WHERE label = 'unregistered';
SET ROLE regress_cw_w1;
SELECT regress.error_of('SELECT pgjobs.compute_worker_register(''w1'', ''["v9"]'')') AS refused;
SELECT regress.error_of('SELECT pgjobs.compute_worker_register(''w1'', cpu_cores => -1)') AS refused;
SELECT regress.error_of(format('SELECT pgjobs.compute_worker_register(''w1'', %s => %L)', p, v)) AS refused
FROM (VALUES ('cpu_cores', 'NaN'), ('gpu_cores', 'Infinity'), ('max_sandboxes', '1e300')) v(p, v);
SELECT regress.error_of('SELECT pgjobs.compute_worker_register(''w1'', worktimes => ''["map-basic"]'')') AS refused;
SELECT regexp_replace(regress.error_of(format('SELECT pgjobs.compute_worker_join(%L, %L, %L)', g, k, s)),
                      'group [0-9a-f-]{36}', 'group <id>') AS refused
FROM (VALUES (:'g_main_opaque'::uuid, 'main-key', 'wrong'),
             (:'g_main_opaque', 'own-key', 'own-secret-long-enough'),
             (gen_random_uuid(), 'main-key', 'main-secret-long-enough')) v(g, k, s);
RESET ROLE;
SELECT regress.compute_fingerprint() = :'before' AS nothing_changed;

-- A deployment: fees (0.5 + 0.25) come off the funds; the job is new, with two estimation slices.
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_deploy(regress.spec()) AS job \gset
SELECT status, last_slice_number, slice_payment, funds, pgjobs.capability_names(need_capabilities),
       data_storage_type, worktime, worktime_version
FROM pgjobs.compute_jobs WHERE job_id = :job;
SELECT slice_work_payment_total, slice_work_payment_pending, remaining, funds, fees, nsf
FROM pgjobs.job_fin_data WHERE job_id = :job;
SELECT slice_number, copy, status, estimation FROM pgjobs.active_slices WHERE job_id = :job ORDER BY 1, 2;
SELECT value FROM pgjobs.work_functions WHERE job_id = :job;
SELECT task, queue, status FROM pgjobs.job_list WHERE id = :job;
RESET ROLE;
-- The group's owner sees what the job paid the group.
SET ROLE regress_cw_group_owner;
SELECT compute_group_id = :g_main AS main, fee FROM pgjobs.compute_group_jobs WHERE job_id = :job;
-- Someone else's job is not there to pause.
RESET ROLE;
SET ROLE regress_cw_other;
SELECT regress.error_of(format('SELECT pgjobs.compute_pause(%s)', :job)) AS refused;
SELECT count(*) AS slices_seen FROM pgjobs.active_slices;
RESET ROLE;

-- Workers register and join; w3 runs no v8, so it gets nothing of this job.
SET ROLE regress_cw_w1;
SELECT pgjobs.compute_worker_register('w1', '["v8"]', '{"map-basic": "1.2.0"}', 4, 0, 2) IS NOT NULL AS registered;
SELECT pgjobs.compute_worker_join(:'g_main_opaque', 'main-key', 'main-secret-long-enough') = :g_main AS joined;
RESET ROLE;
SET ROLE regress_cw_w2;
SELECT pgjobs.compute_worker_register('w2', '["v8", "webgpu"]', '{"map-basic": "1.0.1"}', 2, 1, 2) IS NOT NULL AS registered;
SELECT pgjobs.compute_worker_join(:'g_main_opaque', 'main-key', 'main-secret-long-enough') = :g_main AS joined;
RESET ROLE;
SET ROLE regress_cw_w3;
SELECT pgjobs.compute_worker_register('w3', '[]', '{"map-basic": "1.0.0"}') IS NOT NULL AS registered;
SELECT pgjobs.compute_worker_join(:'g_main_opaque', 'main-key', 'main-secret-long-enough') = :g_main AS joined;
SELECT count(*) AS slices FROM pgjobs.compute_fetch();
RESET ROLE;
-- The supplier sees its workers and what they can run.
SET ROLE regress_cw_supplier;
SELECT label, pgjobs.capability_names(r.capabilities), r.worktimes
FROM pgjobs.workers w JOIN pgjobs.worker_run_info r ON r.worker_opaque_id = w.opaque_id ORDER BY label;
RESET ROLE;

-- Estimation: the first fetch gets the two estimation slices only, and the job is in estimation;
-- nothing more is handed out until they are done.
SET ROLE regress_cw_w1;
CREATE TEMP TABLE task1 AS SELECT * FROM pgjobs.compute_fetch();
SELECT job_id = :job AS job, slice_number, copy, datum, work, arguments, flags, estimation FROM task1 ORDER BY 2;
SELECT task_token AS t1 FROM task1 LIMIT 1 \gset
RESET ROLE;
SET ROLE regress_cw_w2;
SELECT count(*) AS slices FROM pgjobs.compute_fetch();
RESET ROLE;
SELECT status FROM pgjobs.compute_jobs WHERE job_id = :job;
SELECT estimation_slices_remaining, task_count FROM pgjobs.compute_perf_data WHERE job_id = :job;
-- Progress, returns, rejections and results by the holder only: another worker's token acts on nothing.
SET ROLE regress_cw_w2;
SELECT pgjobs.compute_progress(:'t1') AS progress_of_another, pgjobs.compute_return(:'t1') AS returned_of_another,
       pgjobs.compute_reject(:'t1', 'EWORKREJECT') AS rejected_of_another;
SELECT * FROM pgjobs.compute_submit(:'t1', '{1}', '{1}');
RESET ROLE;
SET ROLE regress_cw_w1;
SELECT pgjobs.compute_progress(:'t1') AS progress;
SELECT regress.error_of(format('SELECT pgjobs.compute_submit(%L, ''{1,2}'', ''{a}'')', :'t1')) AS refused;
SELECT regress.error_of(format('SELECT pgjobs.compute_submit(%L, ''{1}'', ''{a}'', ''{-1}'')', :'t1')) AS refused;
SELECT * FROM pgjobs.compute_submit(:'t1', '{1,2,9}', '{1,4,81}', '{10,20,0}', '{0,0,0}', '{20,40,0}', '{8,8,0}', '{16,16,0}')
ORDER BY 1;
-- Again: both are gone from the task.
SELECT * FROM pgjobs.compute_submit(:'t1', '{1}', '{1}') ORDER BY 1;
RESET ROLE;
SELECT status FROM pgjobs.compute_jobs WHERE job_id = :job;
SELECT pgjobs._compute_fold() AS folded;
SELECT status FROM pgjobs.compute_jobs WHERE job_id = :job;

-- Running: w2 takes the other three, gives one back, and the next fetch gets it again.
SET ROLE regress_cw_w2;
CREATE TEMP TABLE task2 AS SELECT * FROM pgjobs.compute_fetch();
SELECT slice_number, estimation FROM task2 ORDER BY 1;
SELECT task_token AS t2 FROM task2 LIMIT 1 \gset
SELECT pgjobs.compute_return(:'t2', '{4}') AS returned;
SELECT slice_number FROM pgjobs.compute_fetch() ORDER BY 1;
RESET ROLE;
SELECT slice_number, status, retask_counter FROM pgjobs.active_slices WHERE job_id = :job ORDER BY 1;
SELECT return_count FROM pgjobs.compute_perf_data WHERE job_id = :job;
-- The watchdog: slice 3 fell silent; it is overdue, its holder's report is refused, and it goes
-- to the next fetch.
UPDATE pgjobs.compute_slices SET last_progress_time = now() - interval '10 minutes'
WHERE job_id = :job AND slice_number = 3;
SELECT pgjobs._compute_watchdog(now()) AS overdue;
SELECT slice_number, status, retask_counter FROM pgjobs.active_slices WHERE job_id = :job ORDER BY 1;
SET ROLE regress_cw_w2;
SELECT * FROM pgjobs.compute_submit(:'t2', '{3,5}', ARRAY['9', repeat('x', 5000)], '{30,50}', '{0,0}', '{60,100}', '{8,8}', '{16,5000}')
ORDER BY 1;
RESET ROLE;
SET ROLE regress_cw_w1;
CREATE TEMP TABLE task3 AS SELECT * FROM pgjobs.compute_fetch();
SELECT slice_number FROM task3;
SELECT * FROM pgjobs.compute_submit((SELECT task_token FROM task3), '{3}', '{9}', '{30}', '{0}', '{60}', '{8}', '{16}');
RESET ROLE;
-- The copy of slice 4 w2 fetched again is still out; w2 reports it.
SELECT s.lease_token AS t4 FROM pgjobs.compute_slices s WHERE s.job_id = :job AND s.slice_number = 4 \gset
SET ROLE regress_cw_w2;
SELECT * FROM pgjobs.compute_submit(:'t4', '{4}', '{16}', '{40}', '{0}', '{80}', '{8}', '{16}');
RESET ROLE;

-- Every slice has its result; the large one is in the result store, read by the owner only. The
-- fold computes each job's moving averages once, and each of its periods' once: its statements
-- read the fold's state in many columns, and computed it again for each (fourteen times a job).
SELECT count(DISTINCT job_id) + count(DISTINCT (job_id, compute_group_id, pgjobs._stats_period(reported_at)))
       AS moving_folds
FROM pgjobs.slice_reports WHERE folded_seq IS NULL AND accepted IS NOT NULL \gset
BEGIN;
SET LOCAL track_functions = 'all';
SELECT pgjobs._compute_fold() AS folded;
SELECT calls = :moving_folds AS folded_once_each, :moving_folds AS expected
FROM pg_stat_xact_user_functions WHERE schemaname = 'pgjobs' AND funcname = '_moving_fold';
COMMIT;
-- The statistics period a moment falls in: pg_jobs.compute_stats_period long, from the Unix
-- epoch, as it was said in SQL (before 1970 and before 2000 too, and at the last hour PostgreSQL
-- takes); infinity stays.
SELECT v.t, pgjobs._stats_period(v.t)
            = to_timestamp(floor(extract(epoch FROM v.t) / extract(epoch FROM p.period)) * extract(epoch FROM p.period))
       AS as_in_sql
FROM (VALUES ('2026-12-06 12:34:56.789+00'::timestamptz), ('1969-12-31 23:30:00.5+00'), ('1999-12-31 23:59:59.999999+00'),
             ('2000-01-01 00:00:00+00'), ('294276-12-31 23:59:59+00')) v(t),
     (SELECT current_setting('pg_jobs.compute_stats_period')::interval AS period) p
ORDER BY 1;
SELECT pgjobs._stats_period('infinity') AS infinite, pgjobs._stats_period('-infinity') AS minus_infinite;
SET ROLE regress_cw_owner;
SELECT slice_number, left(value, 22) AS value, length(pgjobs.compute_result_text(value)) AS length
FROM pgjobs.compute_results WHERE job_id = :job ORDER BY 1;
SELECT status, result FROM pgjobs.job_list WHERE id = :job;
SELECT slice_work_payment_total, slice_work_payment_pending, remaining, funds, fees, commission_total, nsf
FROM pgjobs.job_fin_data WHERE job_id = :job;
SELECT measured_slices, task_count, return_count, retasked_count, estimation_slices_remaining,
       round(slice_cpu_time::numeric, 6) AS cpu, round(slice_cpu_time_variance::numeric, 6) AS cpu_var,
       round(slice_cpu_density::numeric, 6) AS density, total_cpu_time, total_in_data_size, total_out_data_size
FROM pgjobs.compute_perf_data WHERE job_id = :job;
RESET ROLE;
SET ROLE regress_cw_w2;
SELECT count(*) AS results_seen, pgjobs.compute_result_text('pgjobs:result:1') IS NULL AS stored_one_hidden
FROM pgjobs.compute_results;
RESET ROLE;
-- The moving average by hand: folded in report order with alpha = min(0.5, unreported / 5).
SELECT folded_seq, cpu_time, pgjobs._perf_alpha(folded_seq, 5) AS alpha, accepted, paid, commission
FROM pgjobs.slice_reports WHERE job_id = :job ORDER BY folded_seq;
-- The workers were paid the slice payment less the group's commission; the period statistics
-- add up to the job's totals.
SELECT w.label, r.earnings FROM pgjobs.workers w JOIN pgjobs.worker_run_info r ON r.worker_opaque_id = w.opaque_id ORDER BY 1;
SELECT task_eligible_count, no_slice_task_count, tasked_slice_count, total_earnings, total_cpu_time,
       total_in_data_size, total_out_data_size
FROM pgjobs.compute_group_job_period_stats WHERE job_id = :job;
SELECT w.label, s.task_count, s.slice_count, s.cpu_time, s.earnings
FROM pgjobs.compute_group_worker_period_stats s JOIN pgjobs.workers w ON w.opaque_id = s.worker_opaque_id ORDER BY 1;

-- Consensus, every slice twice, with workers of three identities: w1 (the supplier's) and x2
-- agree on slice 1 and disagree on slice 2, whose tiebreaker goes to x3 (an identity never gets
-- two copies of one slice: w2 and w3 are the supplier's too, and get none); the result two of
-- three reported is the slice's, and x2's is neither accepted nor paid.
SET ROLE regress_cw_x2;
SELECT pgjobs.compute_worker_register('x2', '["v8"]', '{"map-basic": "1.0.0"}') IS NOT NULL AS registered;
SELECT pgjobs.compute_worker_join(:'g_main_opaque', 'main-key', 'main-secret-long-enough') = :g_main AS joined;
RESET ROLE;
SET ROLE regress_cw_x3;
SELECT pgjobs.compute_worker_register('x3', '["v8"]', '{"map-basic": "1.0.0"}') IS NOT NULL AS registered;
SELECT pgjobs.compute_worker_join(:'g_main_opaque', 'main-key', 'main-secret-long-enough') = :g_main AS joined;
RESET ROLE;
SET ROLE regress_cw_w3;
SELECT pgjobs.compute_worker_register('w3', '["v8"]', '{"map-basic": "1.0.0"}') IS NOT NULL AS registered;
RESET ROLE;
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_deploy(regress.spec('{"input": {"range": {"start": 10, "end": 11}}, "duplication_level": 2,
                                           "duplication_type": "consensus", "estimation_slices": 0}')) AS cjob \gset
SELECT slice_number, copy, status FROM pgjobs.active_slices WHERE job_id = :cjob ORDER BY 1, 2;
RESET ROLE;
SET ROLE regress_cw_w1;
CREATE TEMP TABLE c1 AS SELECT * FROM pgjobs.compute_fetch();
SELECT slice_number, copy, datum FROM c1 ORDER BY 1;
SELECT * FROM pgjobs.compute_submit((SELECT task_token FROM c1 LIMIT 1), '{1,2}', '{100,121}') ORDER BY 1;
RESET ROLE;
SET ROLE regress_cw_w2;
SELECT count(*) AS slices_for_the_same_identity FROM pgjobs.compute_fetch();
RESET ROLE;
SET ROLE regress_cw_x2;
CREATE TEMP TABLE c2 AS SELECT * FROM pgjobs.compute_fetch();
SELECT slice_number, copy FROM c2 ORDER BY 1;
SELECT * FROM pgjobs.compute_submit((SELECT task_token FROM c2 LIMIT 1), '{1,2}', '{100,999}') ORDER BY 1;
RESET ROLE;
SET ROLE regress_cw_owner;
SELECT slice_number, copy, status FROM pgjobs.active_slices WHERE job_id = :cjob ORDER BY 1, 2;
RESET ROLE;
SET ROLE regress_cw_w3;
SELECT count(*) AS slices_for_the_same_identity FROM pgjobs.compute_fetch();
RESET ROLE;
SET ROLE regress_cw_x3;
CREATE TEMP TABLE c3 AS SELECT * FROM pgjobs.compute_fetch();
SELECT slice_number, copy FROM c3 ORDER BY 1;
SELECT * FROM pgjobs.compute_submit((SELECT task_token FROM c3 LIMIT 1), '{2}', '{121}') ORDER BY 1;
RESET ROLE;
SELECT pgjobs._compute_fold() AS folded;
SET ROLE regress_cw_owner;
SELECT slice_number, pgjobs.compute_result_text(value) FROM pgjobs.compute_results WHERE job_id = :cjob ORDER BY 1;
SELECT status FROM pgjobs.compute_jobs WHERE job_id = :cjob;
RESET ROLE;
SELECT r.slice_number, w.label, r.accepted, r.paid FROM pgjobs.slice_reports r
JOIN pgjobs.workers w ON w.opaque_id = r.worker_opaque_id WHERE r.job_id = :cjob ORDER BY r.id;

-- Funds run out: 0.75 of fees and one slice payment of 1 leave room for one slice at a time; the
-- second fetch pauses the job with nsf, and funds added set it running again.
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_deploy(regress.spec('{"offer": 1, "funds": "1.75", "estimation_slices": 0}')) AS njob \gset
RESET ROLE;
SET ROLE regress_cw_w1;
SELECT count(*) AS slices FROM pgjobs.compute_fetch();
RESET ROLE;
SET ROLE regress_cw_w2;
SELECT count(*) AS slices FROM pgjobs.compute_fetch();
RESET ROLE;
SET ROLE regress_cw_owner;
SELECT status, pgjobs.job_flag_names(flags) FROM pgjobs.compute_jobs WHERE job_id = :njob;
SELECT slice_work_payment_total, slice_work_payment_pending, remaining, nsf FROM pgjobs.job_fin_data WHERE job_id = :njob;
SELECT regress.error_of(format('SELECT pgjobs.compute_resume(%s)', :njob)) AS refused;
SELECT regress.error_of(format('SELECT pgjobs.compute_fund(%s, -1)', :njob)) AS refused;
SELECT pgjobs.compute_fund(:njob, 10);
SELECT slice_work_payment_total, slice_work_payment_pending, remaining, nsf FROM pgjobs.job_fin_data WHERE job_id = :njob;
-- Pause, resume, cancel: a cancelled job's copies out are refused when they report.
SELECT pgjobs.compute_pause(:njob), pgjobs.compute_resume(:njob);
SELECT pgjobs.compute_cancel(:njob);
SELECT regress.error_of(format('SELECT pgjobs.compute_cancel(%s)', :njob)) AS refused;
SELECT status, result FROM pgjobs.job_list WHERE id = :njob;
SELECT slice_work_payment_total, slice_work_payment_pending, remaining FROM pgjobs.job_fin_data WHERE job_id = :njob;
RESET ROLE;

-- Paused for want of funds while a copy was out, whose escrow counted as spent: when that copy
-- goes overdue its escrow is free again, and the watchdog sets the job going without a top-up.
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_deploy(regress.spec('{"offer": 1, "funds": "1.75", "estimation_slices": 0}')) AS fjob \gset
RESET ROLE;
SET ROLE regress_cw_w1;
SELECT count(*) AS slices FROM pgjobs.compute_fetch();
RESET ROLE;
SET ROLE regress_cw_w2;
SELECT count(*) AS slices FROM pgjobs.compute_fetch();
RESET ROLE;
SELECT status, nsf FROM pgjobs.compute_jobs c JOIN pgjobs.job_fin_data f ON f.job_id = c.job_id WHERE c.job_id = :fjob;
UPDATE pgjobs.compute_slices SET last_progress_time = now() - interval '1 hour'
WHERE job_id = :fjob AND lease_token IS NOT NULL;
SELECT pgjobs._compute_watchdog(now()) AS overdue;
SELECT status, nsf, slice_work_payment_pending, remaining
FROM pgjobs.compute_jobs c JOIN pgjobs.job_fin_data f ON f.job_id = c.job_id WHERE c.job_id = :fjob;
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_cancel(:fjob);
RESET ROLE;

-- A rejection: recorded, the slices go back, and the worker gets nothing of the job again.
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_deploy(regress.spec('{"estimation_slices": 0, "max_slices_per_task": 2}')) AS rjob \gset
RESET ROLE;
SET ROLE regress_cw_w1;
CREATE TEMP TABLE r1 AS SELECT * FROM pgjobs.compute_fetch();
SELECT pgjobs.compute_reject((SELECT task_token FROM r1 LIMIT 1), 'EWORKREJECT', 'work.reject() called', 2) AS returned;
SELECT count(*) AS slices FROM pgjobs.compute_fetch();
RESET ROLE;
SET ROLE regress_cw_owner;
SELECT slice_number, reason, error_msg, retries, worker_opaque_id IS NOT NULL AS worker
FROM pgjobs.work_reject_history WHERE job_id = :rjob;
SELECT slice_number, status FROM pgjobs.active_slices WHERE job_id = :rjob ORDER BY 1;
-- A fetch reads a job's slices from past the last slice this backend's fetches of it handed out:
-- copies given back below that wait for its next read from the first slice (at most
-- pg_jobs.claim_rescan_interval later), or until nothing is left past it; with an interval of 0
-- every fetch reads from the first.
SELECT pgjobs.compute_deploy(regress.spec('{"estimation_slices": 0, "max_slices_per_task": 2}')) AS sjob \gset
RESET ROLE;
SET pg_jobs.claim_rescan_interval = '1h';
SET ROLE regress_cw_w1;
CREATE TEMP TABLE s1 AS SELECT * FROM pgjobs.compute_fetch();
SELECT job_id = :sjob AS job, slice_number FROM s1 ORDER BY 2;
SELECT pgjobs.compute_return((SELECT task_token FROM s1 LIMIT 1)) AS returned;
CREATE TEMP TABLE s2 AS SELECT * FROM pgjobs.compute_fetch();
SELECT job_id = :sjob AS job, slice_number FROM s2 ORDER BY 2;
SELECT job_id = :sjob AS job, slice_number FROM pgjobs.compute_fetch() ORDER BY 2;
SELECT job_id = :sjob AS job, slice_number FROM pgjobs.compute_fetch() ORDER BY 2;
SELECT pgjobs.compute_return((SELECT task_token FROM s2 LIMIT 1)) AS returned;
RESET ROLE;
SET pg_jobs.claim_rescan_interval = 0;
SET ROLE regress_cw_w1;
SELECT job_id = :sjob AS job, slice_number FROM pgjobs.compute_fetch() ORDER BY 2;
DROP TABLE s1, s2;
RESET ROLE;
RESET pg_jobs.claim_rescan_interval;
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_cancel(:sjob);
-- A slice's datum of a range (its start, plus its step for each slice before it) and of a pattern.
SELECT pgjobs.compute_deploy(regress.spec('{"estimation_slices": 0, "input": {"range": {"start": 1.5, "end": 2.5, "step": 0.25}}}')) AS range_job \gset
SELECT pgjobs.compute_deploy(regress.spec('{"estimation_slices": 0, "input": {"pattern": "https://data.example/{slice}.json", "count": 2}}')) AS pattern_job \gset
RESET ROLE;
SET ROLE regress_cw_w1;
SELECT job_id = :range_job AS range, slice_number, datum FROM pgjobs.compute_fetch() ORDER BY 2;
SELECT job_id = :pattern_job AS pattern, slice_number, datum FROM pgjobs.compute_fetch() ORDER BY 2;
RESET ROLE;
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_cancel(:range_job), pgjobs.compute_cancel(:pattern_job);
-- An open job takes more slices until it is closed.
SELECT pgjobs.compute_deploy(regress.spec('{"flags": ["open"], "input": {"values": []}}')) AS ojob \gset
SELECT pgjobs.compute_add_slices(:ojob, '["6", "7"]');
SELECT regress.error_of(format('SELECT pgjobs.compute_add_slices(%s, count => 2)', :ojob)) AS refused;
-- ... and one whose input is a pattern a count of more: the pattern's count follows its slices.
SELECT pgjobs.compute_deploy(regress.spec('{"flags": ["open"], "input": {"pattern": "https://data.example/{slice}", "count": 2}}')) AS pjob \gset
SELECT pgjobs.compute_add_slices(:pjob, count => 3) AS slices;
SELECT regress.error_of(format('SELECT pgjobs.compute_add_slices(%s, ''["8"]'')', :pjob)) AS refused;
SELECT data_storage_details::jsonb -> 'count' AS pattern_count, last_slice_number FROM pgjobs.compute_jobs WHERE job_id = :pjob;
SELECT pgjobs.compute_cancel(:pjob);
-- At most pg_jobs.compute_max_slices a call, which a superuser may lower or raise for a
-- session and a member may not change.
SELECT regress.error_of('SET pg_jobs.compute_max_slices = 10000000') AS member_raises;
RESET ROLE;
SET pg_jobs.compute_max_slices = 2;
SET ROLE regress_cw_owner;
SELECT regress.error_of(format('SELECT pgjobs.compute_add_slices(%s, ''["8", "9", "10"]'')', :ojob)) AS refused;
RESET ROLE;
RESET pg_jobs.compute_max_slices;
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_close(:ojob);
SELECT regress.error_of(format('SELECT pgjobs.compute_add_slices(%s, ''["8"]'')', :ojob)) AS refused;
SELECT slice_number, value FROM pgjobs.compute_data WHERE job_id = :ojob ORDER BY 1;
RESET ROLE;

-- A group's owner deploys into its own group by naming it.
SET ROLE regress_cw_group_owner;
SELECT pgjobs.compute_deploy(regress.spec(jsonb_build_object('groups', jsonb_build_array(:'g_own_opaque')))) > 0 AS deployed;
RESET ROLE;

-- The owner's own group for what follows, which w1 and x2 join instead of Main.
INSERT INTO pgjobs.compute_groups (owner, name, join_key)
VALUES ('regress_cw_owner'::regrole, 'Alice', 'alice-key') RETURNING opaque_id AS g_alice \gset
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_group_set_secret(:'g_alice', 'alice-secret-long-enough');
RESET ROLE;
SELECT set_config('regress.alice', jsonb_build_object('groups', jsonb_build_array(:'g_alice'))::text, false) IS NOT NULL AS alice;
SELECT r AS worker,
       regress.as_role(r, format('SELECT pgjobs.compute_worker_leave(%L)', :'g_main_opaque')) AS left_main,
       regress.as_role(r, format('SELECT pgjobs.compute_worker_join(%L, ''alice-key'', ''alice-secret-long-enough'') IS NOT NULL',
                                 :'g_alice')) AS joined
FROM unnest(ARRAY['regress_cw_w1', 'regress_cw_x2']) r;

-- One identity cannot win a consensus alone: mallory and her two proxies each register a worker
-- and join the group; of a consensus job sending every slice three times, her side gets one copy of
-- each slice and her proxies none, whatever order they fetch in; w1 (the supplier's) and x2 get
-- the other copies, and their result is the slice's, not mallory's FORGED, which is not paid.
SELECT r AS worker,
       regress.as_role(r, format('SELECT pgjobs.compute_worker_register(%L, ''["v8"]'', ''{"map-basic": "1.0.0"}'') IS NOT NULL', l))
           AS registered,
       regress.as_role(r, format('SELECT pgjobs.compute_worker_join(%L, ''alice-key'', ''alice-secret-long-enough'') IS NOT NULL',
                                 :'g_alice')) AS joined
FROM (VALUES ('regress_cw_mallory', 'm0'), ('regress_cw_mallory_p1', 'm1'), ('regress_cw_mallory_p2', 'm2')) v(r, l);
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_deploy(regress.spec('{"input": {"range": {"start": 20, "end": 21}}, "duplication_level": 3,
                                           "duplication_type": "consensus", "estimation_slices": 0}'
                                          || current_setting('regress.alice')::jsonb)) AS fjob \gset
RESET ROLE;
SET ROLE regress_cw_mallory_p1;
CREATE TEMP TABLE m1 AS SELECT * FROM pgjobs.compute_fetch();
SELECT job_id = :fjob AS forged_job, slice_number, copy FROM m1 ORDER BY 2;
SELECT * FROM pgjobs.compute_submit((SELECT task_token FROM m1 LIMIT 1), '{1,2}', '{FORGED,FORGED}') ORDER BY 1;
RESET ROLE;
SELECT r AS worker, regress.as_role(r, 'SELECT count(*) FROM pgjobs.compute_fetch()') AS slices
FROM unnest(ARRAY['regress_cw_mallory', 'regress_cw_mallory_p2']) r;
SET ROLE regress_cw_w1;
SELECT * FROM pgjobs.compute_submit((SELECT task_token FROM pgjobs.compute_fetch() LIMIT 1), '{1,2}', '{400,441}') ORDER BY 1;
RESET ROLE;
SET ROLE regress_cw_x2;
SELECT * FROM pgjobs.compute_submit((SELECT task_token FROM pgjobs.compute_fetch() LIMIT 1), '{1,2}', '{400,441}') ORDER BY 1;
RESET ROLE;
SELECT pgjobs._compute_fold() AS folded;
SET ROLE regress_cw_owner;
SELECT slice_number, pgjobs.compute_result_text(value) FROM pgjobs.compute_results WHERE job_id = :fjob ORDER BY 1;
RESET ROLE;
SELECT r.slice_number, w.label, r.worker_root::regrole, r.accepted, r.paid FROM pgjobs.slice_reports r
JOIN pgjobs.workers w ON w.opaque_id = r.worker_opaque_id WHERE r.job_id = :fjob ORDER BY r.slice_number, r.id;

-- Even if two copies of a slice did reach one identity (handed to mallory_p1 by hand here, as the
-- fetch never does), her two agreeing results are one vote: a tiebreaker goes out, then another
-- when w1 disagrees, and x2's vote with w1's decides; FORGED is not accepted.
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_deploy(regress.spec('{"input": {"range": {"start": 30, "end": 30}}, "duplication_level": 2,
                                           "duplication_type": "consensus", "estimation_slices": 0}'
                                          || current_setting('regress.alice')::jsonb)) AS gjob \gset
RESET ROLE;
SET ROLE regress_cw_mallory;
SELECT * FROM pgjobs.compute_submit((SELECT task_token FROM pgjobs.compute_fetch() LIMIT 1), '{1}', '{FORGED}');
RESET ROLE;
UPDATE pgjobs.compute_slices s
SET status = 'scheduled', lease_token = gen_random_uuid(), compute_group_id = m.compute_group_id, begin_time = now(),
    last_progress_time = now(), last_assigned_worker = w.opaque_id, last_assigned_worker_identity = w.identity,
    last_assigned_root = w.owner
FROM pgjobs.workers w, pgjobs.compute_group_jobs m WHERE w.label = 'm1' AND m.job_id = :gjob AND s.job_id = :gjob AND s.copy = 1
RETURNING s.lease_token AS forged_token \gset
SET ROLE regress_cw_mallory_p1;
SELECT * FROM pgjobs.compute_submit(:'forged_token', '{1}', '{FORGED}');
RESET ROLE;
SET ROLE regress_cw_w1;
SELECT * FROM pgjobs.compute_submit((SELECT task_token FROM pgjobs.compute_fetch() LIMIT 1), '{1}', '{900}');
RESET ROLE;
SET ROLE regress_cw_mallory_p2;
SELECT count(*) AS slices_for_mallory FROM pgjobs.compute_fetch();
RESET ROLE;
SET ROLE regress_cw_x2;
SELECT * FROM pgjobs.compute_submit((SELECT task_token FROM pgjobs.compute_fetch() LIMIT 1), '{1}', '{900}');
RESET ROLE;
SELECT pgjobs._compute_fold() AS folded;
SELECT r.copy, w.label, r.accepted, r.paid FROM pgjobs.slice_reports r
JOIN pgjobs.workers w ON w.opaque_id = r.worker_opaque_id WHERE r.job_id = :gjob ORDER BY r.id;
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_result_text(value) AS result FROM pgjobs.compute_results WHERE job_id = :gjob;
RESET ROLE;

-- Results that never agree: each copy of the slice, and each of the two tiebreakers, reports
-- another result (x4, of an identity of its own, joins the group for the last); no result can
-- win, and the job ends corrupted with no report accepted.
SELECT regress.as_role('regress_cw_x4', $$SELECT pgjobs.compute_worker_register('x4', '["v8"]', '{"map-basic": "1.0.0"}') IS NOT NULL$$)
           AS registered,
       regress.as_role('regress_cw_x4', format('SELECT pgjobs.compute_worker_join(%L, ''alice-key'', ''alice-secret-long-enough'') IS NOT NULL',
                                             :'g_alice')) AS joined;
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_deploy(regress.spec('{"input": {"range": {"start": 40, "end": 40}}, "duplication_level": 2,
                                           "duplication_type": "consensus", "estimation_slices": 0}'
                                          || current_setting('regress.alice')::jsonb)) AS kjob \gset
RESET ROLE;
SELECT r AS worker,
       regress.as_role(r, format($$SELECT string_agg(s.slice_number || ' ' || s.outcome, ',')
                                   FROM pgjobs.compute_submit((SELECT task_token FROM pgjobs.compute_fetch() LIMIT 1), '{1}', ARRAY[%L]) s$$,
                                 said)) AS outcome
FROM (VALUES (1, 'regress_cw_mallory', 'A'), (2, 'regress_cw_w1', 'B'), (3, 'regress_cw_x2', 'C'),
             (4, 'regress_cw_x4', 'D')) v(turn, r, said) ORDER BY turn;
SELECT r.copy, w.label, r.accepted FROM pgjobs.slice_reports r
JOIN pgjobs.workers w ON w.opaque_id = r.worker_opaque_id WHERE r.job_id = :kjob ORDER BY r.id;
SELECT status FROM pgjobs.compute_jobs WHERE job_id = :kjob;
SELECT pgjobs._compute_fold() AS folded;
SELECT regress.as_role('regress_cw_x4', format('SELECT pgjobs.compute_worker_leave(%L)', :'g_alice')) AS x4_left;

-- NaN and Infinity are not money: every amount parameter of every public function (compute_deploy's
-- offer, market_value and funds, compute_fund's amount) with NaN, Infinity, -Infinity, 1e300, -1,
-- 1e10 and 19 decimals is refused with 22023, and nothing changes.
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_deploy(regress.spec('{"estimation_slices": 0}')) AS mjob \gset
RESET ROLE;
SELECT regress.compute_fingerprint() AS before \gset
SET ROLE regress_cw_owner;
SELECT f, v, regress.error_of(format('SELECT pgjobs.compute_deploy(%L)',
           regress.spec(CASE f WHEN 'market_value' THEN jsonb_build_object('offer', NULL, f, v) ELSE jsonb_build_object(f, v) END)))
       AS refused
FROM unnest(ARRAY['offer', 'market_value', 'funds']) f,
     unnest(ARRAY['NaN', 'Infinity', '-Infinity', '1e300', '-1', '1e10', '0.0000000000000000001']) v;
SELECT v, regress.error_of(format('SELECT pgjobs.compute_fund(%s, %L)', :mjob, v)) AS refused
FROM unnest(ARRAY['NaN', 'Infinity', '-Infinity', '1e300', '-1', '0', '9999999999', '0.0000000000000000001']) v;
SELECT regress.error_of(format('SELECT pgjobs.compute_deploy(%L)', regress.spec('{"offer": null, "market_value": "0.0000000000000001"}')))
       AS refused;
RESET ROLE;
SELECT regress.compute_fingerprint() = :'before' AS nothing_changed;
-- Every column of DCC is a money_amount (commission_rate a fraction); the one plain numeric is the
-- generated rate, a quotient of two of them. Not even the extension's owner stores NaN, Infinity
-- or a negative amount in one.
SELECT c.relname, a.attname, a.atttypid::regtype FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relnamespace = 'pgjobs'::regnamespace AND c.relkind IN ('r', 'p') AND a.attnum > 0 AND NOT a.attisdropped
  AND a.atttypid IN ('numeric'::regtype, 'pgjobs.money_amount'::regtype, 'pgjobs.fraction'::regtype)
ORDER BY 1, 2;
SELECT c.relname, a.attname, count(*) FILTER (WHERE e LIKE '23514:%') AS refused, string_agg(DISTINCT left(e, 5), ',') AS errors
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid,
     unnest(ARRAY['NaN', 'Infinity', '-Infinity', '-1', '1e28']) v,
     regress.error_of(format('UPDATE pgjobs.%I SET %I = %L', c.relname, a.attname, v)) e
WHERE c.relnamespace = 'pgjobs'::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
  AND a.atttypid IN ('pgjobs.money_amount'::regtype, 'pgjobs.fraction'::regtype)
GROUP BY 1, 2 ORDER BY 1, 2;
SELECT regress.compute_fingerprint() = :'before' AS nothing_changed;

-- The smallest and largest amounts overflow nothing: a group of the owner's with every money limit
-- just below 1e28, an offer of 1e-18 with the largest funds, and an offer of the largest amount
-- that the same funds pay once. Fetches through the group count slices in numeric (a fetch failed
-- with 22003 once).
INSERT INTO pgjobs.compute_groups (owner, name, join_key, max_concurrent_escrow, max_total_payment)
VALUES ('regress_cw_owner'::regrole, 'Limited', 'limited-key', 9999999999999999999999999999, 9999999999999999999999999999)
RETURNING opaque_id AS g_limited_opaque \gset
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_group_set_secret(:'g_limited_opaque', 'limited-secret-long-enough');
SELECT pgjobs.compute_deploy(regress.spec(jsonb_build_object('groups', jsonb_build_array(:'g_limited_opaque'),
           'offer', '0.000000000000000001', 'funds', '9999999999.999999999999999999', 'estimation_slices', 0,
           'max_slices_per_task', 3))) AS tiny_job \gset
SELECT pgjobs.compute_deploy(regress.spec(jsonb_build_object('groups', jsonb_build_array(:'g_limited_opaque'),
           'offer', '9999999999.999999999999999999', 'funds', '9999999999.999999999999999999', 'estimation_slices', 0,
           'max_slices_per_task', 3))) AS huge_job \gset
RESET ROLE;
SET ROLE regress_cw_x3;
SELECT pgjobs.compute_worker_join(:'g_limited_opaque', 'limited-key', 'limited-secret-long-enough') IS NOT NULL AS joined;
SELECT pgjobs.compute_worker_leave(:'g_main_opaque') AS left_main;
SELECT CASE job_id WHEN :tiny_job THEN 'tiny' WHEN :huge_job THEN 'huge' END AS job, slice_number FROM pgjobs.compute_fetch();
SELECT CASE job_id WHEN :tiny_job THEN 'tiny' WHEN :huge_job THEN 'huge' END AS job, slice_number FROM pgjobs.compute_fetch();
SELECT CASE job_id WHEN :tiny_job THEN 'tiny' WHEN :huge_job THEN 'huge' END AS job, slice_number FROM pgjobs.compute_fetch();
SELECT CASE job_id WHEN :tiny_job THEN 'tiny' WHEN :huge_job THEN 'huge' END AS job, slice_number FROM pgjobs.compute_fetch();
RESET ROLE;
SET ROLE regress_cw_owner;
SELECT job_id = :tiny_job AS tiny, slice_work_payment_pending, remaining, nsf FROM pgjobs.job_fin_data
WHERE job_id IN (:tiny_job, :huge_job) ORDER BY 1 DESC;
RESET ROLE;

-- Measurements are refused at submit unless each is a number from 0 to 1e12: 1e300, NaN,
-- ±Infinity, negative, and bytes that would overflow the sums (2^63 - 1).
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_deploy(regress.spec('{"estimation_slices": 0, "name": "good"}' || current_setting('regress.alice')::jsonb))
       AS good_job \gset
-- Needs what no worker here runs: only its reports put in by hand below.
SELECT pgjobs.compute_deploy(regress.spec('{"estimation_slices": 0, "name": "bad", "capabilities": ["webgpu"]}'
                                          || current_setting('regress.alice')::jsonb)) AS bad_job \gset
RESET ROLE;
SET ROLE regress_cw_w1;
CREATE TEMP TABLE good AS SELECT * FROM pgjobs.compute_fetch() WHERE job_id = :good_job;
SELECT count(*) AS good_slices FROM good;
RESET ROLE;
SELECT regress.compute_fingerprint() AS before \gset
SET ROLE regress_cw_w1;
SELECT m, v, regress.error_of(format('SELECT * FROM pgjobs.compute_submit(%L, ''{1}'', ''{1}'', %s => %L)',
                                     (SELECT task_token FROM good LIMIT 1), m, v)) AS refused
FROM (VALUES ('cpu_ms', '{1e300}'), ('cpu_ms', '{NaN}'), ('gpu_ms', '{Infinity}'), ('wall_ms', '{-Infinity}'),
             ('gpu_ms', '{-1}'), ('wall_ms', '{1e13}'), ('in_bytes', '{9223372036854775807}'), ('out_bytes', '{-1}')) v(m, v);
RESET ROLE;
SELECT regress.compute_fingerprint() = :'before' AS nothing_changed;

-- One job that cannot be folded holds up no other: two reports of 2^63 - 1 bytes put into the bad
-- job's reports by hand (as no submit can) overflow its totals. The fold marks it with the error,
-- which its owner reads, and folds and pays the good job beside it; the next fold leaves it out.
SET ROLE regress_cw_w1;
SELECT * FROM pgjobs.compute_submit((SELECT task_token FROM good LIMIT 1), (SELECT array_agg(slice_number) FROM good),
                                    (SELECT array_agg('r' || slice_number) FROM good)) ORDER BY 1;
RESET ROLE;
INSERT INTO pgjobs.slice_reports (job_id, slice_number, copy, owner, worker_opaque_id, worker_root, compute_group_id,
                                  value, value_hash, accepted, cpu_time, gpu_time, wall_time, in_data_size, out_data_size)
SELECT :bad_job, n, 0, 'regress_cw_owner'::regrole, w.opaque_id, w.owner, m.compute_group_id, 'data:,x', md5('x'), true, 1, 0, 1,
       9223372036854775807, 0
FROM pgjobs.workers w, pgjobs.compute_group_jobs m, generate_series(1, 2) n WHERE w.label = 'w1' AND m.job_id = :bad_job;
SELECT pgjobs._compute_fold() AS folded;
SELECT pgjobs._compute_fold() AS folded_again;
SET ROLE regress_cw_owner;
SELECT c.job_id = :good_job AS good, c.status, c.fold_error, f.slice_work_payment_total, p.measured_slices
FROM pgjobs.compute_jobs c JOIN pgjobs.job_fin_data f ON f.job_id = c.job_id JOIN pgjobs.compute_perf_data p ON p.job_id = c.job_id
WHERE c.job_id IN (:good_job, :bad_job) ORDER BY 1 DESC;
RESET ROLE;

-- A group named as uuid_in reads a uuid (braces, capitals, no hyphens) and a range of numbers as
-- numeric reads them (blanks, a sign, an exponent) deploy; a range of anything else, a group
-- named by no uuid and input of no known kind are refused, and nothing changes.
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_deploy(regress.spec(jsonb_build_object(
    'input', '{"range": {"start": " 1 ", "end": "1e1", "step": "+2"}}'::jsonb,
    'groups', jsonb_build_array(jsonb_build_object(
        'group', '{' || upper(replace(:'g_main_opaque', '-', '')) || '}', 'join_key', 'main-key',
        'secret', 'main-secret-long-enough'))))) AS range_job \gset
RESET ROLE;
SELECT c.data_storage_type, c.data_storage_details, c.last_slice_number,
       (SELECT array_agg(m.compute_group_id) FROM pgjobs.compute_group_jobs m WHERE m.job_id = c.job_id)
       = ARRAY[:g_main]::bigint[] AS in_main
FROM pgjobs.compute_jobs c WHERE c.job_id = :range_job;
SELECT regress.compute_fingerprint() AS before \gset
SET ROLE regress_cw_owner;
SELECT regress.error_of(format('SELECT pgjobs.compute_deploy(%L)', regress.spec(c))) AS refused
FROM (VALUES ('{"input": {"range": {"start": "one", "end": 5}}}'::jsonb),
             ('{"input": {"range": {"start": "-NaN", "end": 5}}}'),
             ('{"input": {"range": {"start": 1, "end": {"n": 5}}}}'),
             ('{"input": {"range": {"start": 1}}}'),
             ('{"input": ["range"]}'),
             ('{"groups": ["not-a-uuid"]}'),
             ('{"groups": [{"group": null, "join_key": "main-key"}]}'),
             ('{"capabilities": ["v8", null]}')) v(c);
RESET ROLE;
SELECT regress.compute_fingerprint() = :'before' AS nothing_changed;

-- Join secrets: shorter than 16 characters is refused. 20 wrong ones within 20 minutes (this and
-- the previous 10-minute window), by any way in and whether or not their transaction commits, and
-- the identity's attempts are refused (53400), the right secret too; another identity is not
-- affected.
SET ROLE regress_cw_group_owner;
SELECT regress.error_of(format('SELECT pgjobs.compute_group_set_secret(%L, %L)', :'g_main_opaque', 'fifteen chars!!')) AS refused;
RESET ROLE;
SET ROLE regress_cw_other;
BEGIN;
SELECT count(*) FILTER (WHERE NOT pgjobs.compute_group_check_secret(:'g_main_opaque', 'main-key', 'guess ' || k)) AS wrong
FROM generate_series(1, 18) k;
ROLLBACK;
SELECT regexp_replace(regress.error_of(format('SELECT pgjobs.compute_deploy(%L)', regress.spec('{}') || jsonb_build_object('groups',
           jsonb_build_array(jsonb_build_object('group', :'g_main_opaque', 'join_key', 'main-key', 'secret', 'guess 19'))))),
                      'group [0-9a-f-]{36}', 'group <id>') AS refused;
SELECT pgjobs.compute_group_check_secret(:'g_main_opaque', 'main-key', 'guess 20') AS twentieth;
SELECT regress.error_of(format('SELECT pgjobs.compute_group_check_secret(%L, %L, %L)', :'g_main_opaque', 'main-key', 'main-secret-long-enough'))
       AS refused;
SELECT regress.error_of(format('SELECT pgjobs.compute_deploy(%L)', regress.spec('{}'))) AS refused;
RESET ROLE;
SET ROLE regress_cw_x3;
SELECT pgjobs.compute_group_check_secret(:'g_main_opaque', 'main-key', 'main-secret-long-enough') AS another_identity;
RESET ROLE;
SET ROLE regress_cw_mallory_p1;
SELECT regress.error_of('SELECT pgjobs._lock_key(''compute_fold'', '''')') AS lock_key,
       regress.error_of('SELECT key FROM pgjobs.installation_key') AS installation_key;
RESET ROLE;

-- A fold reads a job's reports not folded yet through their index (slice_reports_unfolded), so
-- what it reads does not grow with the reports folded before, whatever the statistics say: taken
-- while every report waited for the fold (ANALYZE during a backlog, said here by hand), they once
-- made the primary key's order look as cheap, read from the job's first report, folded or not.
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_deploy(regress.spec('{"estimation_slices": 0, "max_slices_per_task": 100, "offer": "0",
                                            "input": {"range": {"start": 1, "end": 900}}}')) AS fjob \gset
RESET ROLE;
CREATE FUNCTION pg_temp.work_tasks(tasks integer) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    token uuid;
    slices integer[];
    done bigint := 0;
BEGIN
    FOR i IN 1..tasks LOOP
        SELECT min(f.task_token::text)::uuid, array_agg(f.slice_number) INTO token, slices
        FROM pgjobs.compute_fetch(100) f;
        done := done + (SELECT count(*) FROM pgjobs.compute_submit(
            token, slices, array_fill('1'::text, ARRAY[cardinality(slices)]),
            array_fill(1::float8, ARRAY[cardinality(slices)]), array_fill(0::float8, ARRAY[cardinality(slices)]),
            array_fill(1::float8, ARRAY[cardinality(slices)]), array_fill(8::bigint, ARRAY[cardinality(slices)]),
            array_fill(8::bigint, ARRAY[cardinality(slices)])));
    END LOOP;
    RETURN done;
END $$;
-- The entries of slice_reports' primary key that one fold reads.
CREATE FUNCTION pg_temp.fold_reads() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    before bigint := pg_stat_get_xact_tuples_returned('pgjobs.slice_reports_pkey'::regclass);
BEGIN
    PERFORM pgjobs._compute_fold();
    RETURN pg_stat_get_xact_tuples_returned('pgjobs.slice_reports_pkey'::regclass) - before;
END $$;
SET ROLE regress_cw_w3;
SELECT pg_temp.work_tasks(3) AS reported;
RESET ROLE;
SELECT pgjobs._compute_fold() AS folded;
ANALYZE pgjobs.slice_reports;
UPDATE pg_statistic SET stanullfrac = 1
WHERE starelid = 'pgjobs.slice_reports'::regclass
  AND staattnum = (SELECT attnum FROM pg_attribute WHERE attrelid = starelid AND attname = 'folded_seq');
UPDATE pg_statistic SET stadistinct = 1, stakind1 = 0, stakind2 = 0, stakind3 = 0, stakind4 = 0, stakind5 = 0
WHERE starelid = 'pgjobs.slice_reports'::regclass
  AND staattnum = (SELECT attnum FROM pg_attribute WHERE attrelid = starelid AND attname = 'job_id');
SET ROLE regress_cw_w3;
SELECT pg_temp.work_tasks(3) AS reported;
RESET ROLE;
SELECT pg_temp.fold_reads() AS first_reads \gset
SET ROLE regress_cw_w3;
SELECT pg_temp.work_tasks(3) AS reported;
RESET ROLE;
SELECT pg_temp.fold_reads() = :first_reads AS reads_flat;
SELECT status FROM pgjobs.compute_jobs WHERE job_id = :fjob;

-- A report whose group was deleted since (by hand: no call deletes a group) is placed once, and
-- paid without commission; no figures of the group are written, and the next fold finds nothing.
-- (It was never placed, taken again by every fold, and counted among the measured slices each time.)
INSERT INTO pgjobs.compute_groups (owner, name, join_key) VALUES ('regress_cw_group_owner'::regrole, 'Gone', 'gone-key')
RETURNING id AS g_gone \gset
SELECT measured_slices AS measured_before FROM pgjobs.compute_perf_data WHERE job_id = :good_job \gset
INSERT INTO pgjobs.slice_reports (job_id, slice_number, copy, owner, worker_opaque_id, worker_root, compute_group_id,
                                  value, value_hash, accepted, cpu_time, gpu_time, wall_time, in_data_size, out_data_size)
SELECT :good_job, n, 9, 'regress_cw_owner'::regrole, w.opaque_id, w.owner, :g_gone, 'data:,x', md5('x'), true, 1, 0, 1, 1, 1
FROM pgjobs.workers w, generate_series(1, 2) n WHERE w.label = 'w1';
DELETE FROM pgjobs.compute_groups WHERE id = :g_gone;
SELECT pgjobs._compute_fold() AS folded;
SELECT pgjobs._compute_fold() AS folded_again;
SELECT count(*) AS reports, count(DISTINCT folded_seq) AS places, bool_and(commission = 0) AS no_commission,
       bool_and(paid > 0) AS paid
FROM pgjobs.slice_reports WHERE job_id = :good_job AND compute_group_id = :g_gone;
SELECT p.measured_slices - :measured_before AS measured_more, c.fold_error
FROM pgjobs.compute_perf_data p JOIN pgjobs.compute_jobs c USING (job_id) WHERE job_id = :good_job;

-- A worker in two groups is served by each in turn, the one that served it longest ago first (a
-- task fetched through a group marks it served): a job of tasks of one slice in each group.
CREATE ROLE regress_cw_x5 IN ROLE pgjobs_user;
INSERT INTO pgjobs.compute_groups (owner, name, join_key, deploy_access)
VALUES ('regress_cw_group_owner'::regrole, 'Turn A', 'turn-a-key', 'join')
RETURNING id AS g_turn_a, opaque_id AS g_turn_a_opaque \gset
INSERT INTO pgjobs.compute_groups (owner, name, join_key, deploy_access)
VALUES ('regress_cw_group_owner'::regrole, 'Turn B', 'turn-b-key', 'join')
RETURNING id AS g_turn_b, opaque_id AS g_turn_b_opaque \gset
SET ROLE regress_cw_group_owner;
SELECT pgjobs.compute_group_set_secret(:'g_turn_a_opaque', 'turn-secret-long-enough'),
       pgjobs.compute_group_set_secret(:'g_turn_b_opaque', 'turn-secret-long-enough');
RESET ROLE;
SET ROLE regress_cw_owner;
SELECT pgjobs.compute_deploy(regress.spec(jsonb_build_object('groups', jsonb_build_array(jsonb_build_object(
           'group', :'g_turn_a_opaque', 'join_key', 'turn-a-key', 'secret', 'turn-secret-long-enough')),
           'estimation_slices', 0, 'max_slices_per_task', 1))) AS turn_a \gset
SELECT pgjobs.compute_deploy(regress.spec(jsonb_build_object('groups', jsonb_build_array(jsonb_build_object(
           'group', :'g_turn_b_opaque', 'join_key', 'turn-b-key', 'secret', 'turn-secret-long-enough')),
           'estimation_slices', 0, 'max_slices_per_task', 1))) AS turn_b \gset
RESET ROLE;
SET ROLE regress_cw_x5;
SELECT pgjobs.compute_worker_register('x5', '["v8"]', '{"map-basic": "1.2.0"}') IS NOT NULL AS registered;
SELECT pgjobs.compute_worker_join(:'g_turn_a_opaque', 'turn-a-key', 'turn-secret-long-enough') = :g_turn_a AS joined_a,
       pgjobs.compute_worker_join(:'g_turn_b_opaque', 'turn-b-key', 'turn-secret-long-enough') = :g_turn_b AS joined_b;
SELECT CASE job_id WHEN :turn_a THEN 'a' WHEN :turn_b THEN 'b' END AS job, slice_number FROM pgjobs.compute_fetch();
SELECT CASE job_id WHEN :turn_a THEN 'a' WHEN :turn_b THEN 'b' END AS job, slice_number FROM pgjobs.compute_fetch();
SELECT CASE job_id WHEN :turn_a THEN 'a' WHEN :turn_b THEN 'b' END AS job, slice_number FROM pgjobs.compute_fetch();
SELECT CASE job_id WHEN :turn_a THEN 'a' WHEN :turn_b THEN 'b' END AS job, slice_number FROM pgjobs.compute_fetch();
RESET ROLE;

-- Nothing left for the tests after this one.
SELECT regress.compute_reset();
SELECT regress.reset();
SET ROLE regress_cw_supplier;
SELECT pgjobs.jobs_remove_proxy('regress_cw_w1'), pgjobs.jobs_remove_proxy('regress_cw_w2'),
       pgjobs.jobs_remove_proxy('regress_cw_w3');
RESET ROLE;
SET ROLE regress_cw_mallory;
SELECT pgjobs.jobs_remove_proxy('regress_cw_mallory_p1'), pgjobs.jobs_remove_proxy('regress_cw_mallory_p2');
RESET ROLE;
DROP FUNCTION regress.spec(jsonb), regress.compute_fingerprint();
DROP OWNED BY regress_cw_owner, regress_cw_other, regress_cw_group_owner, regress_cw_supplier,
    regress_cw_w1, regress_cw_w2, regress_cw_w3, regress_cw_x2, regress_cw_x3, regress_cw_x4, regress_cw_x5,
    regress_cw_mallory, regress_cw_mallory_p1, regress_cw_mallory_p2;
DROP ROLE regress_cw_owner, regress_cw_other, regress_cw_group_owner, regress_cw_supplier,
    regress_cw_w1, regress_cw_w2, regress_cw_w3, regress_cw_x2, regress_cw_x3, regress_cw_x4, regress_cw_x5,
    regress_cw_mallory, regress_cw_mallory_p1, regress_cw_mallory_p2;
