-- Who may read, change, add and delete what in the compute scheduler's tables
-- (sql/080_compute_tables.sql), checked as each kind of role: allowed cells and refused ones.

CREATE ROLE regress_owner;        -- owns jobs, a worker, credentials
CREATE ROLE regress_owner_proxy;  -- acts for regress_owner
CREATE ROLE regress_other;        -- another identity
CREATE ROLE regress_worker;       -- the worker's own identity
CREATE ROLE regress_group_owner;  -- owns the compute groups
CREATE ROLE regress_no_rights;    -- not a pgjobs_user
GRANT pgjobs_user TO regress_owner, regress_owner_proxy, regress_other, regress_worker,
    regress_group_owner;
-- An owner registers only a worker role it is a member of.
GRANT regress_worker TO regress_owner;
GRANT USAGE ON SCHEMA regress TO regress_owner, regress_owner_proxy, regress_other, regress_worker,
    regress_group_owner, regress_no_rights;
SELECT pgjobs.jobs_add_proxy('regress_owner_proxy', 'regress_owner');

-- Fixture, written as the scheduler would (superuser). Jobs: one live and one finished of
-- regress_owner, one live of regress_other.
SELECT pgjobs.jobs_add('regress_compute_live') AS live \gset
SELECT pgjobs.jobs_add('regress_compute_done') AS done \gset
SELECT pgjobs.jobs_add('regress_compute_other') AS other_job \gset
SELECT pgjobs.jobs_abort(:done) AS done_status;
UPDATE pgjobs.jobs SET owner = 'regress_owner'::regrole, claimable_by = 'regress_owner'::regrole WHERE id = :live;
UPDATE pgjobs.jobs SET owner = 'regress_other'::regrole, claimable_by = 'regress_other'::regrole WHERE id = :other_job;
UPDATE pgjobs.job_history SET owner = 'regress_owner'::regrole WHERE id = :done;

INSERT INTO pgjobs.workers (owner, identity, label)
VALUES ('regress_owner'::regrole, 'regress_worker'::regrole, 'host-1')
RETURNING opaque_id AS w1 \gset
INSERT INTO pgjobs.compute_groups (owner, name, description, listed, join_key, commission_rate,
                                   commission_account)
VALUES ('regress_group_owner'::regrole, 'Open group', 'listed by its owner', true, 'open-key', 0.1,
        'acct:commission')
RETURNING id AS g1, opaque_id AS g1_opaque \gset
INSERT INTO pgjobs.compute_groups (owner, name, description, join_key)
VALUES ('regress_group_owner'::regrole, 'Hidden group', 'not listed', 'hidden-key')
RETURNING id AS g2, opaque_id AS g2_opaque \gset

-- Rows of a job carry the job's owner whatever the writer said: the owner given here is wrong.
INSERT INTO pgjobs.compute_results (job_id, slice_number, owner, value) VALUES
    (:live, 1, 'regress_other'::regrole, 'data:,1'),
    (:live, 2, 'regress_owner'::regrole, 'https://results.example/2'),
    (:done, 1, 'regress_owner'::regrole, 'data:,done');
SELECT job_id = :live AS live, slice_number, owner::regrole, value, completed_at IS NOT NULL AS completed_at
FROM pgjobs.compute_results ORDER BY job_id, slice_number;
-- A compute job's own columns: the owner given here is wrong too.
INSERT INTO pgjobs.compute_jobs (job_id, owner, address, payment_account, last_slice_number,
    next_slice_number, duplication_level, duplication_type, flags, need_capabilities, worktime,
    worktime_version) VALUES
    (:live, 'regress_other'::regrole, 'acct:escrow', 'acct:bank', 10, 3, 2.0, 'consensus', 1 | 2, 4,
     'map-basic', '^1.0.0'),
    (:done, 'regress_other'::regrole, 'acct:escrow-done', 'acct:bank', 2, 3, 1.0, 'race', 0, 1,
     'pyodide', '^0.23');
INSERT INTO pgjobs.compute_perf_data (job_id, measured_slices, slice_cpu_time, slice_cpu_time_variance)
VALUES (:live, 2, 120.5, 4.0);
INSERT INTO pgjobs.compute_fin_totals (job_id, slice_work_payment_total) VALUES (:live, 1.5), (:done, 3);
INSERT INTO pgjobs.compute_data (job_id, slice_number, value)
VALUES (:live, 1, 'data:,in1'), (:live, 2, 'https://inputs.example/2');
INSERT INTO pgjobs.compute_arguments (job_id, arg_index, value) VALUES (:live, 0, 'data:,arg');
INSERT INTO pgjobs.work_functions (job_id, value, require_path, module_path, dependencies)
VALUES (:live, 'data:application/javascript,function(x){return x}', '{}', '{}', '[]');
INSERT INTO pgjobs.work_reject_history (job_id, slice_number, worker_opaque_id, reason, error_msg, retries)
VALUES (:live, 2, :'w1', 'EWORKREJECT', 'work.reject() called', 3);

INSERT INTO pgjobs.compute_group_jobs (compute_group_id, job_id) VALUES (:g1, :live);
INSERT INTO pgjobs.compute_group_accounting_data (compute_group_id, remaining_jobs) VALUES (:g1, 10);
INSERT INTO pgjobs.compute_group_spent (compute_group_id, cpu_time) VALUES (:g1, 5);
INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin, type)
VALUES (:g1, 'https://data.example', 'fetchData');
INSERT INTO pgjobs.compute_group_job_period_stats (compute_group_id, job_id, period_start,
    period_length, tasked_slice_count, total_earnings, total_cpu_time)
VALUES (:g1, :live, '2026-10-03 00:00+00', '1 hour', 5, 0.5, 1000);
INSERT INTO pgjobs.compute_group_worker_period_stats (compute_group_id, worker_opaque_id,
    period_start, period_length, task_count, slice_count, cpu_time, earnings)
VALUES (:g1, :'w1', '2026-10-03 00:00+00', '1 hour', 2, 5, 1000, 0.5);
SELECT owner::regrole, job_owner::regrole FROM pgjobs.compute_group_jobs;
SELECT earnings_per_cpu_ms FROM pgjobs.compute_group_job_period_stats;

INSERT INTO pgjobs.worker_run_info (worker_opaque_id, type, os, hostname, earnings_account,
    earnings, status, last_start_time)
VALUES (:'w1', 'dcp-worker', 'linux', 'host-1', 'acct:earnings', 2.5, 'running', now());
INSERT INTO pgjobs.worker_task_info (worker_opaque_id, task_time, current_task, serial)
VALUES (:'w1', now(), '{"slices": 2}', 7);
INSERT INTO pgjobs.dcp_worker_app_config (owner, syslog_url, enable_syslog)
VALUES ('regress_owner'::regrole, 'udp://logs.example:514', true);
INSERT INTO pgjobs.worker_config_value (owner, worker_opaque_id, type, key_path, value) VALUES
    ('regress_owner'::regrole, :'w1', 'active', 'maxWorkingSandboxes', '2'),
    ('regress_owner'::regrole, NULL, 'active', 'maxWorkingSandboxes', '4'),
    ('regress_owner'::regrole, NULL, 'active', 'cores.cpu', '8'),
    ('regress_owner'::regrole, NULL, 'template', 'template.only', 'true'),
    ('regress_other'::regrole, NULL, 'active', 'other.setting', '"not yours"');
INSERT INTO pgjobs.creds_list (owner, label) VALUES ('regress_owner'::regrole, 'joins')
RETURNING id AS list \gset
INSERT INTO pgjobs.credential (creds_list_id, compute_group_opaque_id, identifier, secret)
VALUES (:list, :'g1_opaque', 'open-key', 'open-secret-long-enough');
INSERT INTO pgjobs.worker_creds (worker_opaque_id, creds_list_id) VALUES (:'w1', :list);
INSERT INTO pgjobs.worker_notifications (worker_opaque_id, event, signature)
VALUES (:'w1', 'reload', 'sig');
INSERT INTO pgjobs.register_worker_directive (owner, directive)
VALUES ('regress_owner'::regrole, '{"label": "host-*"}');
INSERT INTO pgjobs.reliable_events (event) VALUES ('job finished');
-- The scheduler's working rows: a slice copy out to the worker, a report, a stored result, and
-- the worker's membership of a group.
INSERT INTO pgjobs.compute_slices (job_id, slice_number, copy, owner, status, lease_token, compute_group_id,
                                   last_assigned_worker, last_assigned_worker_identity)
VALUES (:live, 3, 0, 'regress_owner'::regrole, 'scheduled', gen_random_uuid(), :g1, :'w1', 'regress_worker'::regrole);
INSERT INTO pgjobs.slice_reports (job_id, slice_number, copy, owner, worker_opaque_id, worker_root, compute_group_id, value,
                                  value_hash, accepted, cpu_time, gpu_time, wall_time, in_data_size, out_data_size)
VALUES (:live, 1, 0, 'regress_owner'::regrole, :'w1', 'regress_owner'::regrole, :g1, 'data:,1', md5('1'), true, 10, 0, 20, 1, 1);
INSERT INTO pgjobs.result_store (job_id, owner, body) VALUES (:live, 'regress_owner'::regrole, 'a large result');
INSERT INTO pgjobs.compute_group_workers (compute_group_id, worker_opaque_id, owner)
VALUES (:g1, :'w1', 'regress_owner'::regrole);
-- Rows under a worker or a credentials list were given no owner: each carries its parent's.
SELECT 'credential' AS relation, owner::regrole FROM pgjobs.credential
UNION ALL SELECT 'worker_creds', owner::regrole FROM pgjobs.worker_creds
UNION ALL SELECT 'worker_notifications', owner::regrole FROM pgjobs.worker_notifications
UNION ALL SELECT 'worker_run_info', owner::regrole FROM pgjobs.worker_run_info
UNION ALL SELECT 'compute_perf_data', owner::regrole FROM pgjobs.compute_perf_data
UNION ALL SELECT 'compute_jobs', owner::regrole FROM pgjobs.compute_jobs
UNION ALL SELECT 'compute_group_worker_origins', owner::regrole FROM pgjobs.compute_group_worker_origins;

-- The read matrix: the rows of each relation each role sees, or the SQLSTATE it gets.
CREATE TABLE regress.compute_seen (role text, relation text, seen text, ord bigint);
GRANT INSERT ON regress.compute_seen TO regress_owner, regress_owner_proxy, regress_other,
    regress_worker, regress_group_owner, regress_no_rights;
CREATE FUNCTION regress.compute_rows() RETURNS TABLE (relation text, seen text)
LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    FOREACH relation IN ARRAY ARRAY[
        'compute_jobs', 'compute_perf_data', 'compute_fin_totals', 'job_fin_data', 'compute_results', 'compute_data',
        'compute_arguments', 'work_functions', 'work_reject_history', 'compute_groups_jobs_by_job',
        'compute_groups', 'compute_groups_public', 'compute_group_jobs',
        'compute_group_accounting_data', 'compute_group_spent', 'compute_group_budgets', 'compute_group_worker_origins',
        'compute_group_job_period_stats', 'compute_group_worker_period_stats',
        'workers', 'worker_run_info', 'worker_task_info', 'worker_snapshot',
        'dcp_worker_app_config', 'worker_config_value', 'worker_creds', 'creds_list',
        'credential', 'worker_notifications', 'register_worker_directive',
        'worker_self', 'worker_self_config', 'reliable_events', 'compute_slices', 'active_slices',
        'slice_reports', 'result_store', 'compute_group_workers', 'compute_tasks']
    LOOP
        BEGIN
            EXECUTE format('SELECT count(*) FROM pgjobs.%I', relation) INTO n;
            seen := n::text;
        EXCEPTION WHEN OTHERS THEN
            seen := SQLSTATE;
        END;
        RETURN NEXT;
    END LOOP;
END
$$;

SET ROLE regress_owner;
INSERT INTO regress.compute_seen SELECT current_user, * FROM regress.compute_rows() WITH ORDINALITY;
RESET ROLE;
SET ROLE regress_owner_proxy;
INSERT INTO regress.compute_seen SELECT current_user, * FROM regress.compute_rows() WITH ORDINALITY;
RESET ROLE;
SET ROLE regress_other;
INSERT INTO regress.compute_seen SELECT current_user, * FROM regress.compute_rows() WITH ORDINALITY;
RESET ROLE;
SET ROLE regress_worker;
INSERT INTO regress.compute_seen SELECT current_user, * FROM regress.compute_rows() WITH ORDINALITY;
RESET ROLE;
SET ROLE regress_group_owner;
INSERT INTO regress.compute_seen SELECT current_user, * FROM regress.compute_rows() WITH ORDINALITY;
RESET ROLE;
SET ROLE regress_no_rights;
INSERT INTO regress.compute_seen SELECT current_user, * FROM regress.compute_rows() WITH ORDINALITY;
RESET ROLE;

SELECT relation,
       max(seen) FILTER (WHERE role = 'regress_owner') AS owner,
       max(seen) FILTER (WHERE role = 'regress_owner_proxy') AS proxy,
       max(seen) FILTER (WHERE role = 'regress_other') AS other,
       max(seen) FILTER (WHERE role = 'regress_worker') AS worker,
       max(seen) FILTER (WHERE role = 'regress_group_owner') AS group_owner,
       max(seen) FILTER (WHERE role = 'regress_no_rights') AS no_rights
FROM regress.compute_seen GROUP BY relation ORDER BY min(ord);

-- The messages behind the refusals: no schema for a role outside pgjobs_user, no table for the
-- bookkeeping nobody may query.
SET ROLE regress_no_rights;
SELECT regress.error_of('SELECT * FROM pgjobs.compute_results');
SELECT regress.error_of(format('SELECT pgjobs.compute_group_check_secret(%L, %L, %L)', :'g1_opaque', 'open-key', 'x'));
RESET ROLE;
SET ROLE regress_owner;
SELECT regress.error_of('SELECT * FROM pgjobs.reliable_events');
SELECT regress.error_of('INSERT INTO pgjobs.reliable_events (event) VALUES (''forged'')');
RESET ROLE;
-- The extension's owner (the scheduler) still reads them.
SELECT (SELECT count(*) FROM pgjobs.reliable_events) AS reliable_events;

-- Via job. The owner (and its proxy) reads its jobs' rows, finished jobs included, and
-- job_fin_data has a row for every job: a finished one holds nothing in escrow.
SET ROLE regress_owner;
SELECT job_id = :live AS live, owner, finished, slice_work_payment_total, slice_work_payment_pending
FROM pgjobs.job_fin_data ORDER BY job_id;
SELECT measured_slices, slice_cpu_time, sqrt(slice_cpu_time_variance) AS slice_cpu_time_stddev
FROM pgjobs.compute_perf_data;
SELECT compute_group_id = :g1 AS g1, compute_group_opaque_id = :'g1_opaque' AS g1_opaque
FROM pgjobs.compute_groups_jobs_by_job WHERE job_id = :live;
SELECT name, description FROM pgjobs.compute_group_public(:'g1_opaque');
RESET ROLE;
SET ROLE regress_owner_proxy;
SELECT job_id = :live AS live, owner, finished FROM pgjobs.job_fin_data ORDER BY job_id;
RESET ROLE;
SET ROLE regress_other;
SELECT job_id = :other_job AS own_job, owner, finished, slice_work_payment_total, slice_work_payment_pending
FROM pgjobs.job_fin_data;
RESET ROLE;

-- The owner may repoint value on compute_results, compute_data and compute_arguments (to what the
-- job's groups let their workers contact: compute_origins), and nothing else.
SET ROLE regress_owner;
WITH u AS (UPDATE pgjobs.compute_results SET value = 'https://archive.example/1'
           WHERE job_id = :live AND slice_number = 1 RETURNING 1)
SELECT count(*) AS results_changed FROM u;
WITH u AS (UPDATE pgjobs.compute_data SET value = 'https://data.example/1'
           WHERE job_id = :live AND slice_number = 1 RETURNING 1)
SELECT count(*) AS data_changed FROM u;
WITH u AS (UPDATE pgjobs.compute_arguments SET value = 'data:,new-arg'
           WHERE job_id = :live RETURNING 1)
SELECT count(*) AS arguments_changed FROM u;
SELECT regress.error_of('UPDATE pgjobs.compute_results SET value = ''/no/scheme'' WHERE slice_number = 1');
SELECT regress.error_of('UPDATE pgjobs.compute_results SET completed_at = now()');
SELECT regress.error_of('UPDATE pgjobs.compute_results SET owner = 0');
SELECT regress.error_of('UPDATE pgjobs.compute_data SET slice_number = 9');
SELECT regress.error_of('UPDATE pgjobs.work_functions SET value = ''data:,evil''');
SELECT regress.error_of('UPDATE pgjobs.compute_perf_data SET measured_slices = 0');
SELECT regress.error_of('UPDATE pgjobs.compute_fin_totals SET slice_work_payment_total = 1000');
SELECT regress.error_of(format('INSERT INTO pgjobs.compute_results (job_id, slice_number, value) VALUES (%s, 3, ''data:,x'')', :live));
SELECT regress.error_of('DELETE FROM pgjobs.compute_results');
SELECT regress.error_of('DELETE FROM pgjobs.work_reject_history');
RESET ROLE;
-- Another identity changes nothing of the owner's: its update finds no row.
SET ROLE regress_other;
WITH u AS (UPDATE pgjobs.compute_results SET value = 'https://thief.example/' RETURNING 1)
SELECT count(*) AS results_changed FROM u;
RESET ROLE;
SELECT slice_number, value FROM pgjobs.compute_results WHERE job_id = :live ORDER BY slice_number;
SELECT value FROM pgjobs.compute_data WHERE job_id = :live ORDER BY slice_number;

-- compute_jobs (the compute scheduler's columns of a job). The owner and its proxy read their
-- compute jobs' rows, the finished job's too; the read matrix above shows everyone else's 0.
SET ROLE regress_owner;
SELECT job_id = :live AS live, owner::regrole, address, payment_account, last_slice_number,
       next_slice_number, duplication_level, duplication_type,
       pgjobs.job_flag_names(flags) AS flags, pgjobs.capability_names(need_capabilities) AS capabilities,
       worktime, worktime_version
FROM pgjobs.compute_jobs ORDER BY job_id;
RESET ROLE;
SET ROLE regress_owner_proxy;
SELECT job_id = :live AS live, owner::regrole, address, duplication_type FROM pgjobs.compute_jobs ORDER BY job_id;
RESET ROLE;
-- Nobody but the scheduler writes them: every write, by every role, is refused before a row is
-- looked at, and no role may lock the table for writing (see access_locks).
SELECT md5(string_agg(c::text, ',' ORDER BY c.job_id)) AS compute_jobs_before FROM pgjobs.compute_jobs c \gset
CREATE TABLE regress.compute_job_writes (role text, statement text, refused text, ord bigint);
GRANT INSERT ON regress.compute_job_writes TO regress_owner, regress_owner_proxy, regress_other,
    regress_worker, regress_group_owner, regress_no_rights;
CREATE FUNCTION regress.compute_job_write_attempts() RETURNS TABLE (statement text, refused text)
LANGUAGE plpgsql AS $$
BEGIN
    FOREACH statement IN ARRAY ARRAY[
        'UPDATE pgjobs.compute_jobs SET flags = 64',
        'UPDATE pgjobs.compute_jobs SET address = ''acct:thief'', payment_account = ''acct:thief''',
        'UPDATE pgjobs.compute_jobs SET owner = 0',
        'INSERT INTO pgjobs.compute_jobs (job_id) VALUES (1)',
        'DELETE FROM pgjobs.compute_jobs',
        'TRUNCATE pgjobs.compute_jobs',
        'LOCK TABLE pgjobs.compute_jobs IN ROW EXCLUSIVE MODE NOWAIT']
    LOOP
        refused := regress.error_of(statement);
        RETURN NEXT;
    END LOOP;
END
$$;
SET ROLE regress_owner;
INSERT INTO regress.compute_job_writes SELECT current_user, * FROM regress.compute_job_write_attempts() WITH ORDINALITY;
RESET ROLE;
SET ROLE regress_owner_proxy;
INSERT INTO regress.compute_job_writes SELECT current_user, * FROM regress.compute_job_write_attempts() WITH ORDINALITY;
RESET ROLE;
SET ROLE regress_other;
INSERT INTO regress.compute_job_writes SELECT current_user, * FROM regress.compute_job_write_attempts() WITH ORDINALITY;
RESET ROLE;
SET ROLE regress_worker;
INSERT INTO regress.compute_job_writes SELECT current_user, * FROM regress.compute_job_write_attempts() WITH ORDINALITY;
RESET ROLE;
SET ROLE regress_group_owner;
INSERT INTO regress.compute_job_writes SELECT current_user, * FROM regress.compute_job_write_attempts() WITH ORDINALITY;
RESET ROLE;
SET ROLE regress_no_rights;
INSERT INTO regress.compute_job_writes SELECT current_user, * FROM regress.compute_job_write_attempts() WITH ORDINALITY;
RESET ROLE;
SELECT statement,
       max(left(refused, 5)) FILTER (WHERE role = 'regress_owner') AS owner,
       max(left(refused, 5)) FILTER (WHERE role = 'regress_owner_proxy') AS proxy,
       max(left(refused, 5)) FILTER (WHERE role = 'regress_other') AS other,
       max(left(refused, 5)) FILTER (WHERE role = 'regress_worker') AS worker,
       max(left(refused, 5)) FILTER (WHERE role = 'regress_group_owner') AS group_owner,
       max(left(refused, 5)) FILTER (WHERE role = 'regress_no_rights') AS no_rights
FROM regress.compute_job_writes GROUP BY statement ORDER BY min(ord);
SELECT refused, count(*) AS attempts FROM regress.compute_job_writes GROUP BY refused ORDER BY refused;
SELECT md5(string_agg(c::text, ',' ORDER BY c.job_id)) = :'compute_jobs_before' AS compute_jobs_unchanged
FROM pgjobs.compute_jobs c;
DROP TABLE regress.compute_job_writes;
DROP FUNCTION regress.compute_job_write_attempts();

-- Compute groups. The group owner reads its groups and changes name, description, join
-- credentials and listing; the rest is the scheduler's.
SET ROLE regress_group_owner;
SELECT name, listed, join_key, join_hash IS NULL AS no_secret_yet FROM pgjobs.compute_groups ORDER BY id;
WITH u AS (UPDATE pgjobs.compute_groups SET name = 'Open group (renamed)', join_address = '0x2c7536e3605d9c16a7a3d7b1898e529396a65c23'
           WHERE id = :g1 RETURNING 1)
SELECT count(*) AS groups_changed FROM u;
SELECT regress.error_of('UPDATE pgjobs.compute_groups SET join_hash = ''$2a$plain''');
SELECT regress.error_of('UPDATE pgjobs.compute_groups SET commission_rate = 0.9');
SELECT regress.error_of('UPDATE pgjobs.compute_groups SET owner = 0');
SELECT regress.error_of('INSERT INTO pgjobs.compute_groups (name) VALUES (''mine'')');
SELECT regress.error_of('DELETE FROM pgjobs.compute_groups');
SELECT regress.error_of('UPDATE pgjobs.compute_group_accounting_data SET remaining_jobs = 1000');
SELECT regress.error_of('UPDATE pgjobs.compute_group_spent SET cpu_time = 0');
SELECT regress.error_of('DELETE FROM pgjobs.compute_group_jobs');
RESET ROLE;
SET ROLE regress_other;
WITH u AS (UPDATE pgjobs.compute_groups SET name = 'stolen' RETURNING 1)
SELECT count(*) AS groups_changed FROM u;
RESET ROLE;
SELECT name, commission_rate, owner::regrole FROM pgjobs.compute_groups ORDER BY id;

-- Worker origins: the group owner adds and changes them, and deletes them with
-- compute_group_remove_origin; an owner named in a row is replaced by the group's; nobody adds
-- one to a group that is not theirs, and a group that is not theirs looks like one that does
-- not exist.
SET ROLE regress_group_owner;
INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin, type)
VALUES (:g2, 'https://results.example', 'sendResults');
UPDATE pgjobs.compute_group_worker_origins SET type = 'any' WHERE origin = 'https://results.example';
SELECT pgjobs.compute_group_remove_origin(:g2, 'https://results.example', 'sendResults') AS other_type,
       pgjobs.compute_group_remove_origin(:g2, 'https://results.example') AS origins_removed;
SELECT regress.error_of(format('INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin, type) VALUES (%s, ''https://x.example'', ''fetchAll'')', :g1));
SELECT regress.error_of(format('INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin) VALUES (%s, ''not an origin'')', :g1));
INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, owner, origin)
VALUES (:g1, 'regress_other'::regrole, 'https://x.example');
SELECT origin, type, owner::regrole FROM pgjobs.compute_group_worker_origins ORDER BY id;
RESET ROLE;
SET ROLE regress_owner;
SELECT regress.error_of(format('INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin) VALUES (%s, ''https://x.example'')', :g1)) AS others_group;
SELECT regress.error_of('INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin) VALUES (-1, ''https://x.example'')') AS missing_group;
SELECT pgjobs.compute_group_remove_origin(:g1, 'https://data.example') AS origins_deleted,
       pgjobs.compute_group_remove_origin(-1, 'https://data.example') AS missing_group;
RESET ROLE;
SELECT count(*) AS origins FROM pgjobs.compute_group_worker_origins;

-- Join secrets: only a salted hash is kept; checking gives true or false and nothing else; another
-- owner's group gets the error of a group that does not exist.
SET ROLE regress_group_owner;
SELECT pgjobs.compute_group_set_secret(:'g1_opaque', 'open-secret-long-enough');
SELECT join_hash <> 'open-secret-long-enough' AS hashed, join_hash ~ '^\$2a\$' AS bcrypt,
       strpos(join_hash, 'open-secret-long-enough') = 0 AS secret_not_in_hash
FROM pgjobs.compute_groups WHERE id = :g1;
SELECT replace(regress.error_of(format('SELECT pgjobs.compute_group_set_secret(%L, %L)', :'g1_opaque', '')), :'g1_opaque', '<g1>');
RESET ROLE;
SET ROLE regress_worker;
SELECT pgjobs.compute_group_check_secret(:'g1_opaque', 'open-key', 'open-secret-long-enough') AS right_secret,
       pgjobs.compute_group_check_secret(:'g1_opaque', 'open-key', 'wrong') AS wrong_secret,
       pgjobs.compute_group_check_secret(:'g1_opaque', 'other-key', 'open-secret-long-enough') AS wrong_key,
       pgjobs.compute_group_check_secret(:'g2_opaque', 'hidden-key', 'open-secret-long-enough') AS no_secret_set,
       pgjobs.compute_group_check_secret('00000000-0000-0000-0000-000000000000', 'open-key', 'open-secret-long-enough') AS no_group,
       pgjobs.compute_group_check_secret(:'g1_opaque', 'open-key', NULL) AS null_secret;
RESET ROLE;
SET ROLE regress_owner;
SELECT replace(regress.error_of(format('SELECT pgjobs.compute_group_set_secret(%L, %L)', :'g1_opaque', 'mine now')), :'g1_opaque', '<id>') AS others_group;
SELECT replace(regress.error_of(format('SELECT pgjobs.compute_group_set_secret(%L, %L)', '00000000-0000-0000-0000-000000000000', 'mine now')), '00000000-0000-0000-0000-000000000000', '<id>') AS missing_group;
SELECT regress.error_of(format('SELECT pgjobs._join_check(%s, %L, %L, %L)', 'regress_group_owner'::regrole::oid, :'g1_opaque', 'open-key', 'forged caller')) ~ 'permission denied' AS forged_caller_refused;
RESET ROLE;
SELECT pgjobs.compute_group_check_secret(:'g1_opaque', 'open-key', 'open-secret-long-enough') AS still_open_secret;
SET ROLE regress_group_owner;
SELECT pgjobs.compute_group_set_secret(:'g1_opaque', NULL);
SELECT pgjobs.compute_group_check_secret(:'g1_opaque', 'open-key', 'open-secret-long-enough') AS after_removal;
SELECT pgjobs.compute_group_set_secret(:'g1_opaque', 'open-secret-long-enough');
RESET ROLE;

-- Public: any pgjobs_user sees the listed groups' three public columns, and finds an unlisted
-- one by its id; no public relation has a private column.
SET ROLE regress_other;
SELECT name, description FROM pgjobs.compute_groups_public;
SELECT name, description FROM pgjobs.compute_group_public(:'g2_opaque');
SELECT count(*) AS no_such_group FROM pgjobs.compute_group_public('00000000-0000-0000-0000-000000000000');
RESET ROLE;
SELECT table_name, string_agg(column_name, ', ' ORDER BY ordinal_position) AS columns
FROM information_schema.columns
WHERE table_schema = 'pgjobs'
  AND table_name IN ('compute_groups_public', 'compute_groups_jobs_by_job', 'worker_self_config')
GROUP BY table_name ORDER BY table_name;
-- worker_self has the run information but none of the owner's columns: no rows here.
SELECT table_name, column_name FROM information_schema.columns
WHERE table_schema = 'pgjobs'
  AND ((table_name IN ('worker_self', 'worker_self_config', 'compute_groups_public', 'compute_groups_jobs_by_job')
        AND column_name IN ('earnings', 'earnings_account', 'identity', 'join_key', 'join_hash',
                            'join_address', 'commission_account', 'payment_account', 'job_owner',
                            'worker_opaque_id', 'secret'))
       OR (table_name = 'compute_groups_public' AND column_name NOT IN ('opaque_id', 'name', 'description')));
SELECT p.proname, pg_get_function_result(p.oid) AS returns
FROM pg_proc p WHERE p.pronamespace = 'pgjobs'::regnamespace AND p.proname = 'compute_group_public';

-- Workers. The owner manages registrations, settings, credentials and notifications; from
-- run information it changes only the earnings account; task information is read-only.
SET ROLE regress_owner;
SELECT label, identity, flag_names, status, earnings_account, earnings, syslog_url, running
FROM pgjobs.worker_snapshot;
WITH u AS (UPDATE pgjobs.worker_run_info SET earnings_account = 'acct:new' RETURNING 1)
SELECT count(*) AS run_info_changed FROM u;
SELECT regress.error_of('UPDATE pgjobs.worker_run_info SET earnings = 1000');
SELECT regress.error_of('UPDATE pgjobs.worker_task_info SET serial = 0');
SELECT regress.error_of('DELETE FROM pgjobs.worker_run_info');
SELECT regress.error_of('UPDATE pgjobs.workers SET owner = ''regress_other''::regrole::oid');
WITH u AS (UPDATE pgjobs.workers SET label = 'host-1a', flags = 1 RETURNING 1)
SELECT count(*) AS workers_changed FROM u;
INSERT INTO pgjobs.worker_config_value (worker_opaque_id, key_path, value)
VALUES (:'w1', 'cores.gpu', '1');
INSERT INTO pgjobs.worker_notifications (worker_opaque_id, event) VALUES (:'w1', 'restart');
INSERT INTO pgjobs.credential (creds_list_id, identifier, secret) VALUES (:list, 'hidden-key', 's');
INSERT INTO pgjobs.register_worker_directive (directive) VALUES ('{}') RETURNING id AS directive \gset
SELECT pgjobs.register_worker_directive_remove(:directive) AS directives_removed;
SELECT count(*) AS notifications, (SELECT count(*) FROM pgjobs.credential) AS credentials
FROM pgjobs.worker_notifications;
-- A worker role the owner is not a member of cannot be registered.
SELECT regress.error_of('INSERT INTO pgjobs.workers (identity, label) VALUES (''regress_other''::regrole, ''x'')');
RESET ROLE;
-- The proxy acts as the owner: what it writes is the owner's.
SET ROLE regress_owner_proxy;
SELECT pgjobs.worker_notification_remove(id) AS notifications_deleted_by_proxy
FROM pgjobs.worker_notifications WHERE event = 'restart';
INSERT INTO pgjobs.worker_config_value (key_path, value) VALUES ('set.by.proxy', 'true')
RETURNING owner::regrole;
RESET ROLE;

-- Another identity: sees none of it, changes nothing, adds nothing that names the owner's
-- worker, list or group, and cannot tell the owner's worker from one that does not exist.
SET ROLE regress_other;
WITH u AS (UPDATE pgjobs.workers SET label = 'stolen' RETURNING 1) SELECT count(*) AS workers_changed FROM u;
SELECT pgjobs.worker_config_remove('cores.cpu') + pgjobs.worker_config_remove('maxWorkingSandboxes', :'w1')
    AS config_deleted;
SELECT regress.error_of(format('INSERT INTO pgjobs.worker_notifications (worker_opaque_id, event) VALUES (%L, ''pwned'')', :'w1')) AS owners_worker;
SELECT regress.error_of('INSERT INTO pgjobs.worker_notifications (worker_opaque_id, event) VALUES (''00000000-0000-0000-0000-000000000000'', ''pwned'')') AS missing_worker;
SELECT regress.error_of(format('INSERT INTO pgjobs.worker_config_value (worker_opaque_id, key_path, value) VALUES (%L, ''syslog'', ''1'')', :'w1'));
SELECT regress.error_of(format('INSERT INTO pgjobs.dcp_worker_app_config (worker_opaque_id, syslog_url) VALUES (%L, ''udp://thief.example'')', :'w1'));
SELECT regress.error_of(format('INSERT INTO pgjobs.credential (creds_list_id, identifier) VALUES (%s, ''k'')', :list));
SELECT regress.error_of(format('INSERT INTO pgjobs.worker_creds (worker_opaque_id, creds_list_id) VALUES (%L, %s)', :'w1', :list));
SELECT regress.error_of(format('INSERT INTO pgjobs.worker_run_info (worker_opaque_id) VALUES (%L)', :'w1'));
-- Taking over a registered worker role: refused before its registration is looked at.
SELECT regress.error_of('INSERT INTO pgjobs.workers (identity, label) VALUES (''regress_worker''::regrole, ''x'')');
SELECT regress.error_of('INSERT INTO pgjobs.workers (owner, identity) VALUES (''regress_owner''::regrole, ''regress_other''::regrole)');
RESET ROLE;
SELECT label, flags FROM pgjobs.workers;
SELECT count(*) AS config_values FROM pgjobs.worker_config_value;

-- Deletes. No member may DELETE from a shared table (the grant would let it LOCK the table too):
-- it calls a *_remove function, which deletes its own identity's rows by their key and answers
-- 0 for another identity's row as for a missing one.
SET ROLE regress_owner;
SELECT relation, regress.error_of(format('DELETE FROM pgjobs.%I', relation)) AS direct_delete
FROM unnest(ARRAY['compute_group_worker_origins', 'workers', 'dcp_worker_app_config',
                  'worker_config_value', 'creds_list', 'credential', 'worker_creds',
                  'worker_notifications', 'register_worker_directive']) relation;
RESET ROLE;
SELECT id AS app_config FROM pgjobs.dcp_worker_app_config \gset
SELECT id AS credential FROM pgjobs.credential WHERE identifier = 'open-key' \gset
SELECT id AS notification FROM pgjobs.worker_notifications WHERE event = 'reload' \gset
SELECT id AS directive FROM pgjobs.register_worker_directive \gset
SELECT md5(concat_ws('|', (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.workers t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.dcp_worker_app_config t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.worker_config_value t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.creds_list t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.credential t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.worker_creds t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.worker_notifications t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.register_worker_directive t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.compute_group_worker_origins t)))
    AS before_others \gset
SET ROLE regress_other;
SELECT pgjobs.worker_remove(:'w1') AS workers,
       pgjobs.worker_app_config_remove(:app_config) AS app_config,
       pgjobs.worker_config_remove('maxWorkingSandboxes', :'w1') AS config_value,
       pgjobs.creds_list_remove(:list) AS creds_list,
       pgjobs.credential_remove(:credential) AS credential,
       pgjobs.worker_creds_remove(:'w1', :list) AS worker_creds,
       pgjobs.worker_notification_remove(:notification) AS notification,
       pgjobs.register_worker_directive_remove(:directive) AS directive,
       pgjobs.compute_group_remove_origin(:g1, 'https://data.example') AS origin;
RESET ROLE;
SET ROLE regress_worker;
SELECT pgjobs.worker_remove(:'w1') AS own_registration, pgjobs.worker_config_remove('cores.cpu') AS config_value;
RESET ROLE;
SELECT md5(concat_ws('|', (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.workers t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.dcp_worker_app_config t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.worker_config_value t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.creds_list t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.credential t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.worker_creds t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.worker_notifications t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.register_worker_directive t),
    (SELECT string_agg(t::text, ',' ORDER BY t::text) FROM pgjobs.compute_group_worker_origins t)))
    = :'before_others' AS nothing_removed;
SET ROLE regress_no_rights;
SELECT regress.error_of(format('SELECT pgjobs.worker_remove(%L)', :'w1'));
RESET ROLE;
-- The owner, here through its proxy, removes its own rows; a second call finds nothing.
SET ROLE regress_owner_proxy;
INSERT INTO pgjobs.creds_list (label) VALUES ('spare') RETURNING id AS spare_list \gset
INSERT INTO pgjobs.credential (creds_list_id, identifier) VALUES (:spare_list, 'spare-key')
RETURNING id AS spare_credential \gset
INSERT INTO pgjobs.worker_creds (worker_opaque_id, creds_list_id) VALUES (:'w1', :spare_list);
INSERT INTO pgjobs.dcp_worker_app_config (type, syslog_url) VALUES ('template', 'udp://template.example')
RETURNING id AS template \gset
INSERT INTO pgjobs.worker_config_value (worker_opaque_id, type, key_path, value)
VALUES (:'w1', 'template', 'to.remove', '1');
SELECT pgjobs.credential_remove(:spare_credential) AS credential,
       pgjobs.worker_creds_remove(:'w1', :spare_list) AS worker_creds,
       pgjobs.creds_list_remove(:spare_list) AS creds_list,
       pgjobs.worker_app_config_remove(:template) AS app_config,
       pgjobs.worker_config_remove('to.remove', :'w1', 'template') AS config_value,
       pgjobs.credential_remove(:spare_credential) AS credential_again;
-- A list goes with its credentials and its links to workers.
INSERT INTO pgjobs.creds_list (label) VALUES ('spare 2') RETURNING id AS spare_list \gset
INSERT INTO pgjobs.credential (creds_list_id, identifier) VALUES (:spare_list, 'spare-key');
INSERT INTO pgjobs.worker_creds (worker_opaque_id, creds_list_id) VALUES (:'w1', :spare_list);
SELECT pgjobs.creds_list_remove(:spare_list) AS creds_list;
SELECT (SELECT count(*) FROM pgjobs.credential WHERE creds_list_id = :spare_list) AS its_credentials,
       (SELECT count(*) FROM pgjobs.worker_creds WHERE creds_list_id = :spare_list) AS its_worker_links;
-- Null and bad arguments.
SELECT regress.error_of('SELECT pgjobs.worker_remove(NULL)');
SELECT regress.error_of('SELECT pgjobs.worker_creds_remove(NULL, 1)');
SELECT regress.error_of('SELECT pgjobs.credential_remove(NULL)');
SELECT regress.error_of(format('SELECT pgjobs.compute_group_remove_origin(%s, NULL)', :g1));
SELECT regress.error_of(format('SELECT pgjobs.compute_group_remove_origin(%s, ''https://data.example'', ''fetchAll'')', :g1));
SELECT regress.error_of('SELECT pgjobs.worker_config_remove(''x'', NULL, ''live'')');
-- A type given with a quote is quoted as a literal in the message, as format's %L does.
SELECT regress.error_of('SELECT pgjobs.worker_config_remove(''x'', NULL, ''it''''s'')');
SELECT regress.error_of('SELECT pgjobs.worker_config_remove(''x'', NULL, NULL)');
-- No function that takes its caller as an argument is a member's to call, so none can be told
-- another caller.
SELECT count(*) > 0 AS such_functions, count(*) FILTER (WHERE has_function_privilege(p.oid, 'EXECUTE')) AS callable
FROM pg_proc p WHERE p.pronamespace = 'pgjobs'::regnamespace AND p.proargnames[1] = 'caller_role';
RESET ROLE;

-- The worker's own role reads its registration, run information and the config that applies to
-- it (its own value wins over the all-workers one; templates and other owners' rows do not
-- apply), and none of the owner's tables.
SET ROLE regress_worker;
SELECT label, owner, flags, hostname, status, syslog_url, enable_syslog FROM pgjobs.worker_self;
SELECT key_path, value, for_all_workers FROM pgjobs.worker_self_config ORDER BY key_path;
SELECT regress.error_of('SELECT earnings_account FROM pgjobs.worker_self');
WITH u AS (UPDATE pgjobs.worker_run_info SET earnings_account = 'acct:thief' RETURNING 1)
SELECT count(*) AS earnings_account_changed FROM u;
WITH u AS (UPDATE pgjobs.workers SET label = 'mine' RETURNING 1) SELECT count(*) AS workers_changed FROM u;
RESET ROLE;

-- Bit flags by name.
SELECT pgjobs.job_flag_names(1 | 2 | 64) AS job_flags, pgjobs.job_flag_names(0) AS none,
       pgjobs.job_flag_names(128) AS unnamed, pgjobs.capability_names(4 | 32) AS capabilities,
       pgjobs.capability_names(127) AS all_capabilities, pgjobs.worker_flag_names(1) AS worker_flags;

-- Re-registering a worker (an administrator's act): refused while transfer-locked; otherwise the
-- new owner gets its run information and the old owner's settings for it go.
UPDATE pgjobs.workers SET transfer_lock = true;
SELECT replace(regress.error_of('UPDATE pgjobs.workers SET owner = ''regress_other''::regrole::oid'), :'w1', '<w1>');
UPDATE pgjobs.workers SET transfer_lock = false;
UPDATE pgjobs.workers SET owner = 'regress_other'::regrole;
SELECT owner::regrole FROM pgjobs.worker_run_info;
SELECT count(*) AS worker_specific_config FROM pgjobs.worker_config_value WHERE worker_opaque_id = :'w1';
SELECT count(*) AS worker_creds FROM pgjobs.worker_creds;
-- Unregistering: only by its owner of the moment, and its rows go with it.
SET ROLE regress_owner;
SELECT pgjobs.worker_remove(:'w1') AS former_owner;
RESET ROLE;
SET ROLE regress_other;
SELECT pgjobs.worker_remove(:'w1') AS new_owner, pgjobs.worker_remove(:'w1') AS again;
RESET ROLE;
SELECT (SELECT count(*) FROM pgjobs.workers) AS workers, (SELECT count(*) FROM pgjobs.worker_run_info) AS run_info,
       (SELECT count(*) FROM pgjobs.worker_task_info) AS task_info;

-- Clean up: the jobs, every compute row, and the roles.
SELECT pgjobs.jobs_abort(:live) AS live_status, pgjobs.jobs_abort(:other_job) AS other_status;
DELETE FROM pgjobs.job_history WHERE id IN (:live, :done, :other_job);
TRUNCATE pgjobs.compute_jobs, pgjobs.compute_perf_data, pgjobs.compute_fin_totals, pgjobs.compute_results,
    pgjobs.compute_data, pgjobs.compute_arguments, pgjobs.work_functions, pgjobs.work_reject_history,
    pgjobs.compute_groups, pgjobs.compute_group_jobs, pgjobs.compute_group_accounting_data, pgjobs.compute_group_spent,
    pgjobs.compute_group_worker_origins, pgjobs.compute_group_job_period_stats,
    pgjobs.compute_group_worker_period_stats, pgjobs.workers, pgjobs.compute_join_challenges, pgjobs.worker_run_info,
    pgjobs.worker_task_info, pgjobs.dcp_worker_app_config, pgjobs.worker_config_value,
    pgjobs.creds_list, pgjobs.credential, pgjobs.worker_creds, pgjobs.worker_notifications,
    pgjobs.register_worker_directive, pgjobs.reliable_events, pgjobs.compute_group_workers,
    pgjobs.compute_slices, pgjobs.slice_reports, pgjobs.result_store;
SELECT pgjobs.jobs_remove_proxy('regress_owner_proxy');
DROP TABLE regress.compute_seen;
DROP FUNCTION regress.compute_rows();
DROP OWNED BY regress_owner, regress_owner_proxy, regress_other, regress_worker, regress_group_owner,
    regress_no_rights;
DROP ROLE regress_owner, regress_owner_proxy, regress_other, regress_worker, regress_group_owner,
    regress_no_rights;
