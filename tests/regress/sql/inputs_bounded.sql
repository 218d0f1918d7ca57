-- Every number and time a caller gives is finite and bounded: NaN, ±Infinity, ±infinity and
-- 1e300 are refused with 22023 and change nothing, in every public function that takes a time,
-- an interval, a date or a floating-point or numeric value, as a parameter or inside JSON.

-- Those functions, from the catalog: one added later shows here, and needs its calls below.
SELECT p.oid::regprocedure AS function
FROM pg_proc p
WHERE p.pronamespace = 'pgjobs'::regnamespace AND p.proname !~ '^_'
  AND (has_function_privilege('pgjobs_user', p.oid, 'EXECUTE')
       OR has_function_privilege('pgjobs_agent', p.oid, 'EXECUTE'))
  AND EXISTS (SELECT FROM unnest(p.proargtypes::oid[]) t
              WHERE t = ANY ('{timestamptz, date, interval, float8, numeric, timestamptz[], interval[], float8[], numeric[]}'::regtype[]))
ORDER BY p.oid::regprocedure::text COLLATE "C";

CREATE ROLE regress_inputs IN ROLE pgjobs_user;
CREATE ROLE regress_inputs_agent IN ROLE pgjobs_agent;

-- Calls, each with %s where the value goes, and the values tried there by their kind: a time a
-- job runs at is within 100 years of now, an instant only finite (schedule_next_slot answers for
-- any), a span of a lease, a backoff or a timeout no more than a year (a day for SQL jobs).
CREATE TABLE regress.bounded_calls (role text, kind text, call text);
INSERT INTO regress.bounded_calls VALUES
    ('regress_inputs', 'time', 'SELECT pgjobs.jobs_add(''t'', run_at => %s)'),
    ('regress_inputs', 'span', 'SELECT pgjobs.jobs_add(''t'', backoff => %s)'),
    ('regress_inputs', 'span', 'SELECT pgjobs.jobs_add(''t'', max_backoff => %s)'),
    ('regress_inputs', 'span', 'SELECT pgjobs.jobs_add(''t'', lease => %s)'),
    ('regress_inputs', 'span', 'SELECT pgjobs.jobs_add(''t'', key => ''k'', on_conflict => ''throttle'', key_window => %s)'),
    ('regress_inputs', 'time', 'SELECT count(*) FROM pgjobs.jobs_add_batch(jsonb_build_array(jsonb_build_object(''task'', ''t'', ''run_at'', %s)))'),
    ('regress_inputs', 'span', 'SELECT count(*) FROM pgjobs.jobs_add_batch(jsonb_build_array(jsonb_build_object(''task'', ''t'', ''lease'', %s)))'),
    ('regress_inputs', 'span', 'SELECT count(*) FROM pgjobs.jobs_add_batch(jsonb_build_array(jsonb_build_object(''task'', ''t'', ''key'', ''k'', ''on_conflict'', ''debounce'', ''key_window'', %s)))'),
    ('regress_inputs', 'float', 'SELECT count(*) FROM pgjobs.jobs_add_batch(jsonb_build_array(jsonb_build_object(''task'', ''t'', ''priority'', %s)))'),
    ('regress_inputs', 'span', 'SELECT count(*) FROM pgjobs.jobs_claim(''w'', lease => %s)'),
    ('regress_inputs', 'span', 'SELECT lease_state FROM pgjobs.jobs_heartbeat(1, gen_random_uuid(), lease => %s)'),
    ('regress_inputs', 'span', 'SELECT lease_state FROM pgjobs.jobs_progress(1, gen_random_uuid(), ''{}'', lease => %s)'),
    ('regress_inputs', 'span', 'SELECT pgjobs.jobs_snooze(1, gen_random_uuid(), %s)'),
    ('regress_inputs', 'time', 'SELECT count(*) FROM pgjobs.jobs_reschedule(''{1}'', %s)'),
    ('regress_inputs', 'span', 'SELECT pgjobs.jobs_rate_limit(''q'', 1, %s)'),
    ('regress_inputs', 'span', 'SELECT count(*) FROM pgjobs.jobs_wait(''{1}'', %s)'),
    ('regress_inputs', 'span', 'SELECT count(*) FROM pgjobs.jobs_complete_and_claim(''{}'', ''{}'', ''{}'', ''w'', lease => %s)'),
    ('regress_inputs', 'date', 'SELECT count(*) FROM pgjobs.jobs_find(month => %s)'),
    ('regress_inputs', 'date', 'SELECT count(*) FROM pgjobs.jobs_counts(%s)'),
    ('regress_inputs', 'date', 'SELECT count(*) FROM pgjobs.jobs_retry_where(''q'', month => %s)'),
    ('regress_inputs', 'time', 'SELECT pgjobs.jobs_add_sql(''SELECT 1'', run_at => %s)'),
    ('regress_inputs', 'span', 'SELECT pgjobs.jobs_add_sql(''SELECT 1'', backoff => %s)'),
    ('regress_inputs', 'span', 'SELECT pgjobs.jobs_add_sql(''SELECT 1'', timeout => %s)'),
    ('regress_inputs', 'instant', 'SELECT pgjobs.schedule_next_slot(''* * * * *'', ''UTC'', %s)'),
    ('regress_inputs', 'float', 'SELECT pgjobs.retry_delay_seconds(1, %s, 60)'),
    ('regress_inputs', 'float', 'SELECT pgjobs.retry_delay_seconds(1, 1, %s)'),
    ('regress_inputs', 'span', 'SELECT pgjobs.jobs_schedule(''s'', ''* * * * *'', ''{"task": "t"}'', jsonb_build_object(''lease'', %s))'),
    ('regress_inputs', 'span', 'SELECT pgjobs.jobs_schedule(''s'', ''* * * * *'', ''{"sql": "SELECT 1"}'', jsonb_build_object(''timeout'', %s))'),
    ('regress_inputs', 'float', 'SELECT pgjobs.jobs_schedule(''s'', ''* * * * *'', ''{"task": "t"}'', jsonb_build_object(''max_catch_up'', %s))'),
    ('regress_inputs', 'time', 'SELECT pgjobs.batch_post(''c'', run_at => %s)'),
    ('regress_inputs', 'date', 'SELECT count(*) FROM pgjobs.batch_find(month => %s)'),
    ('regress_inputs', 'date', 'SELECT count(*) FROM pgjobs.batch_groups(month => %s)'),
    ('regress_inputs', 'date', 'SELECT count(*) FROM pgjobs.batch_group_jobs(''time'', ''x'', month => %s)'),
    ('regress_inputs', 'date', 'SELECT count(*) FROM pgjobs.batch_cancel_where(month => %s)'),
    ('regress_inputs_agent', 'span', 'SELECT pgjobs.batch_finish(1, gen_random_uuid(), 0, %s)'),
    ('regress_inputs_agent', 'span', 'SELECT count(*) FROM pgjobs.batch_report_and_claim(''x'', 0, ids => ''{1,2}'', tokens => ARRAY[gen_random_uuid(), gen_random_uuid()], exit_codes => ''{0,0}'', run_times => ARRAY[interval ''1 second'', %s])'),
    ('regress_inputs', 'money', 'SELECT pgjobs.compute_fund(1, %s)'),
    ('regress_inputs', 'float', 'SELECT pgjobs.compute_worker_register(''w'', cpu_cores => %s)'),
    ('regress_inputs', 'float', 'SELECT pgjobs.compute_worker_register(''w'', gpu_cores => %s)'),
    ('regress_inputs', 'float', 'SELECT pgjobs.compute_worker_register(''w'', max_sandboxes => %s)'),
    ('regress_inputs', 'float', 'SELECT count(*) FROM pgjobs.compute_submit(gen_random_uuid(), ''{1}'', ''{r}'', cpu_ms => ARRAY[%s])'),
    ('regress_inputs', 'float', 'SELECT count(*) FROM pgjobs.compute_submit(gen_random_uuid(), ''{1}'', ''{r}'', gpu_ms => ARRAY[%s])'),
    ('regress_inputs', 'float', 'SELECT count(*) FROM pgjobs.compute_submit(gen_random_uuid(), ''{1}'', ''{r}'', wall_ms => ARRAY[%s])'),
    ('regress_inputs', 'money', 'SELECT pgjobs.compute_deploy(jsonb_build_object(''offer'', %s, ''input'', jsonb_build_object(''range'', jsonb_build_object(''start'', 1, ''end'', 2))))'),
    ('regress_inputs', 'money', 'SELECT pgjobs.compute_deploy(jsonb_build_object(''market_value'', %s, ''input'', jsonb_build_object(''range'', jsonb_build_object(''start'', 1, ''end'', 2))))'),
    ('regress_inputs', 'money', 'SELECT pgjobs.compute_deploy(jsonb_build_object(''offer'', 1, ''funds'', %s, ''input'', jsonb_build_object(''range'', jsonb_build_object(''start'', 1, ''end'', 2))))'),
    ('regress_inputs', 'float', 'SELECT pgjobs.compute_deploy(jsonb_build_object(''offer'', 1, ''work'', ''f'', ''input'', jsonb_build_object(''range'', jsonb_build_object(''start'', %s, ''end'', 2))))');

CREATE TABLE regress.bounded_values (kind text, value text);
INSERT INTO regress.bounded_values VALUES
    ('time', '''infinity''::timestamptz'), ('time', '''-infinity''::timestamptz'),
    ('time', 'now() + interval ''200 years'''), ('time', 'now() - interval ''200 years'''),
    ('instant', '''infinity''::timestamptz'), ('instant', '''-infinity''::timestamptz'),
    ('span', 'interval ''-1 second'''), ('span', 'interval ''100000 years'''),
    ('date', '''infinity''::date'), ('date', '''-infinity''::date'), ('date', '''5874897-12-31''::date'),
    ('float', '''NaN''::float8'), ('float', '''Infinity''::float8'), ('float', '''-Infinity''::float8'), ('float', '1e300::float8'),
    ('money', '''NaN''::numeric'), ('money', '''Infinity''::numeric'), ('money', '''-Infinity''::numeric'), ('money', '1e300::numeric');

-- Each call with each value of its kind: the SQLSTATEs it answered (22023 alone), and no change.
CREATE TABLE regress.bounded_before AS SELECT regress.fingerprint() AS fingerprint;
SELECT c.call, string_agg(DISTINCT substring(regress.as_role(c.role, format(c.call, v.value)) FROM '^ERROR ([0-9A-Z]{5})'), ', ') AS refused,
       count(*) FILTER (WHERE regress.as_role(c.role, format(c.call, v.value)) NOT LIKE 'ERROR 22023:%') AS not_refused
FROM regress.bounded_calls c JOIN regress.bounded_values v USING (kind)
GROUP BY c.call ORDER BY c.call;
SELECT fingerprint = regress.fingerprint() AS nothing_changed FROM regress.bounded_before;

-- What one refusal says.
SELECT regress.as_role('regress_inputs', 'SELECT count(*) FROM pgjobs.jobs_find(month => ''infinity'')') AS refusal;

DROP TABLE regress.bounded_calls, regress.bounded_values, regress.bounded_before;
DROP OWNED BY regress_inputs, regress_inputs_agent;
DROP ROLE regress_inputs, regress_inputs_agent;
SELECT regress.reset();
