-- What a compute group lets its workers contact (seed 000's computeGroupWorkerOrigins), as member
-- roles: every http or https URL a job's workers are to fetch from or send to (its work
-- function, its arguments, its data, where its results go: compute_result_storage) must be of
-- an origin each group of the job lets its workers contact for that, by a row of the type
-- (fetchWorkFunctions, fetchArguments, fetchData, sendResults) or of type any. Checked at
-- deployment, when an open job takes more values and when the job's owner changes a datum or an
-- argument; refused with 22023, nothing changed. And the group's owner may not take back an
-- origin an open job of the group contacts (55006).
SELECT regress.reset();
CREATE ROLE regress_cor_owner;     -- owns the groups and deploys
CREATE ROLE regress_cor_other;     -- another member
GRANT pgjobs_user TO regress_cor_owner, regress_cor_other;
INSERT INTO pgjobs.compute_groups (owner, name, join_key)
VALUES ('regress_cor_owner'::regrole, 'Contacts', 'cor-key'), ('regress_cor_owner'::regrole, 'Second', 'cor-key-2');
SELECT id AS g, opaque_id AS g_opaque FROM pgjobs.compute_groups WHERE name = 'Contacts' \gset
SELECT id AS g2, opaque_id AS g2_opaque FROM pgjobs.compute_groups WHERE name = 'Second' \gset

-- A deployment into the groups $2 (the first by default) with the keys of $1.
CREATE FUNCTION pg_temp.deployment(changes jsonb, groups jsonb DEFAULT NULL) RETURNS text
LANGUAGE sql AS $$
    SELECT format('SELECT pgjobs.compute_deploy(%L)', jsonb_build_object(
        'work', 'function (x) { return x * x }', 'input', '{"values": ["3", "4"]}'::jsonb,
        'groups', coalesce(groups, jsonb_build_array(current_setting('regress.g_opaque'))),
        'offer', '0.01', 'funds', '1', 'estimation_slices', 0) || changes)
$$;
SELECT set_config('regress.g_opaque', :'g_opaque', false) IS NOT NULL AS set;
CREATE FUNCTION pg_temp.refusal(changes jsonb, groups jsonb DEFAULT NULL) RETURNS text
LANGUAGE sql AS $$
    SELECT replace(replace(regress.as_role('regress_cor_owner', pg_temp.deployment(changes, groups)),
                           current_setting('regress.g_opaque'), '<g>'),
                   current_setting('regress.g2_opaque'), '<g2>')
$$;
SELECT set_config('regress.g2_opaque', :'g2_opaque', false) IS NOT NULL AS set;

-- The groups let their workers contact nothing yet: every URL is refused, whichever part of the
-- job names it (the first, in the order work function, arguments, data, results).
SELECT changes, pg_temp.refusal(changes::jsonb) AS refused
FROM (VALUES ('{"work": "https://code.example/square.js"}'),
             ('{"input": {"pattern": "https://data.example/{slice}.json", "count": 2}}'),
             ('{"arguments": ["data:,7", "https://args.example/a"]}'),
             ('{"input": {"values": ["3", "http://data.example:8080/4"]}}'),
             ('{"work": "https://code.example/square.js", "arguments": ["https://args.example/a"]}'))
     AS c(changes);
SELECT count(*) AS jobs_deployed FROM pgjobs.compute_jobs;
-- What is not an http or https URL contacts no origin: a function's text, data: URIs, values
-- that are no URL (made data: URIs).
SELECT regress.as_role('regress_cor_owner', pg_temp.deployment(
           '{"work": "data:application/javascript,function(x){return x}", "arguments": ["data:,7", "8"],
             "input": {"values": ["3", "data:,4", "urn:isbn:0451450523"]}}')) IS NOT NULL AS deployed_without_origins;

-- The owner lets the first group's workers fetch work functions from https://code.example
-- (given as an origin with another case and its default port), arguments from
-- https://args.example, anything from https://any.example, and send results to
-- https://results.example: an origin of one type does not admit another.
SET ROLE regress_cor_owner;
INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin, type)
VALUES (:g, 'HTTPS://Code.Example:443', 'fetchWorkFunctions'), (:g, 'https://args.example', 'fetchArguments'),
       (:g, 'https://any.example', 'any'), (:g, 'https://results.example', 'sendResults');
RESET ROLE;
SELECT changes, pg_temp.refusal(changes::jsonb) AS refused
FROM (VALUES ('{"work": "https://args.example/square.js"}'),
             ('{"work": "http://code.example/square.js"}'),
             ('{"work": "https://code.example:8443/square.js"}'),
             ('{"arguments": ["https://code.example/a"]}'),
             ('{"input": {"pattern": "https://results.example/{slice}", "count": 2}}'),
             ('{"input": {"values": ["https://args.example/1"]}}'),
             ('{"result_storage": {"url": "https://code.example/{slice}"}}'))
     AS c(changes);
-- Each allowed for its own type, and any origin of type any for every contact.
SELECT regress.as_role('regress_cor_owner', pg_temp.deployment(
           '{"work": "https://code.example/square.js", "arguments": ["https://args.example/a", "https://any.example/b"],
             "input": {"values": ["https://any.example/1", "https://any.example/2"]},
             "result_storage": {"url": "https://results.example/{slice}"}}')) IS NOT NULL AS deployed;
-- A job in two groups: each must let its workers make every contact.
SELECT pg_temp.refusal('{"work": "https://code.example/square.js"}',
                       jsonb_build_array(:'g_opaque', :'g2_opaque')) AS second_group_refuses;
SELECT count(*) AS jobs_deployed FROM pgjobs.compute_jobs;

-- An open job of values: more values are contacts too.
SET ROLE regress_cor_owner;
SELECT pgjobs.compute_deploy(jsonb_build_object(
    'work', 'function (x) { return x * x }', 'flags', '["open"]'::jsonb, 'input', '{"values": []}'::jsonb,
    'arguments', '["https://args.example/a"]'::jsonb,
    'groups', jsonb_build_array(:'g_opaque'), 'offer', '0.01', 'funds', '1', 'estimation_slices', 0)) AS open_job \gset
SELECT replace(regress.error_of(format('SELECT pgjobs.compute_add_slices(%s, ''["5", "https://elsewhere.example/6"]'')', :open_job)),
               :'g_opaque', '<g>') AS more_refused;
SELECT last_slice_number FROM pgjobs.compute_jobs WHERE job_id = :open_job;
SELECT pgjobs.compute_add_slices(:open_job, '["5", "https://any.example/6"]') AS last_slice;
SELECT slice_number, value FROM pgjobs.compute_data WHERE job_id = :open_job ORDER BY 1;

-- The job's owner repoints a datum or an argument only to what its groups let their workers
-- contact; a value that is no http or https URL needs no origin.
SELECT replace(regress.error_of(format('UPDATE pgjobs.compute_data SET value = ''https://elsewhere.example/5'' WHERE job_id = %s AND slice_number = 1', :open_job)),
               :'g_opaque', '<g>') AS datum_refused;
SELECT replace(regress.error_of(format('UPDATE pgjobs.compute_arguments SET value = ''https://any.example.evil/a'' WHERE job_id = %s', :open_job)),
               :'g_opaque', '<g>') AS argument_refused;
SELECT replace(regress.error_of(format('UPDATE pgjobs.compute_arguments SET value = ''https://code.example/a'' WHERE job_id = %s', :open_job)),
               :'g_opaque', '<g>') AS argument_of_another_type_refused;
WITH u AS (UPDATE pgjobs.compute_data SET value = 'https://any.example/five' WHERE job_id = :open_job AND slice_number = 1 RETURNING 1)
SELECT count(*) AS datum_changed FROM u;
WITH u AS (UPDATE pgjobs.compute_data SET value = 'data:,6' WHERE job_id = :open_job AND slice_number = 2 RETURNING 1)
SELECT count(*) AS datum_inline FROM u;
WITH u AS (UPDATE pgjobs.compute_arguments SET value = 'https://args.example/b' WHERE job_id = :open_job RETURNING 1)
SELECT count(*) AS argument_changed FROM u;
RESET ROLE;
SELECT slice_number, value FROM pgjobs.compute_data WHERE job_id = :open_job ORDER BY 1;
SELECT value FROM pgjobs.compute_arguments WHERE job_id = :open_job;
-- Another member changes nothing of the job (its policies show it no row).
SET ROLE regress_cor_other;
WITH u AS (UPDATE pgjobs.compute_data SET value = 'https://any.example/x' RETURNING 1)
SELECT count(*) AS others_changed FROM u;
RESET ROLE;

-- The group's owner may not take back what an open job of the group contacts: an origin removed
-- or changed so that a job's workers would contact what the group no longer admits is refused
-- (55006), nothing changed; one that leaves every contact admitted goes. Both jobs above contact
-- https://any.example (values and an argument) through its row of type any, and
-- https://args.example through its row of fetchArguments.
SELECT count(*) AS origins FROM pgjobs.compute_group_worker_origins \gset
SET ROLE regress_cor_owner;
SELECT replace(regress.error_of(format('SELECT pgjobs.compute_group_remove_origin(%s, ''https://any.example'')', :g)),
               :'g_opaque', '<g>') AS removal_refused;
SELECT replace(regress.error_of(format('UPDATE pgjobs.compute_group_worker_origins SET type = ''fetchData'' WHERE compute_group_id = %s AND origin = ''https://args.example''', :g)),
               :'g_opaque', '<g>') AS change_refused;
SELECT replace(regress.error_of(format('UPDATE pgjobs.compute_group_worker_origins SET origin = ''https://args.example:8443'' WHERE compute_group_id = %s AND origin = ''https://args.example''', :g)),
               :'g_opaque', '<g>') AS move_refused;
RESET ROLE;
SELECT count(*) = :origins AS unchanged FROM pgjobs.compute_group_worker_origins;
-- Rows of their own types for https://any.example first: then the row of type any may go; an
-- origin no job contacts goes at once.
SET ROLE regress_cor_owner;
INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin, type)
VALUES (:g, 'https://any.example', 'fetchData'), (:g, 'https://any.example', 'fetchArguments'),
       (:g, 'https://unused.example', 'fetchData');
SELECT pgjobs.compute_group_remove_origin(:g, 'https://any.example', 'any') AS removed_any;
SELECT pgjobs.compute_group_remove_origin(:g, 'https://unused.example') AS removed_unused;
-- Once the jobs have ended, nothing holds the origins.
SELECT replace(regress.error_of(format('SELECT pgjobs.compute_group_remove_origin(%s, ''HTTPS://Code.Example:443'')', :g)),
               :'g_opaque', '<g>') AS work_origin_refused;
SELECT replace(regress.error_of(format('SELECT pgjobs.compute_group_remove_origin(%s, ''https://any.example'', ''fetchData'')', :g)),
               :'g_opaque', '<g>') AS data_origin_refused;
SELECT replace(regress.error_of(format('SELECT pgjobs.compute_group_remove_origin(%s, ''https://results.example'')', :g)),
               :'g_opaque', '<g>') AS results_origin_refused;
-- A job of a pattern contacts the pattern's origin.
INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin, type)
VALUES (:g, 'https://pattern.example', 'fetchData');
SELECT pgjobs.compute_deploy(jsonb_build_object(
    'work', 'function (x) { return x }', 'input', '{"pattern": "https://pattern.example/{slice}", "count": 2}'::jsonb,
    'groups', jsonb_build_array(:'g_opaque'), 'offer', '0.01', 'funds', '1', 'estimation_slices', 0)) IS NOT NULL AS pattern_job;
SELECT replace(regress.error_of(format('SELECT pgjobs.compute_group_remove_origin(%s, ''https://pattern.example'')', :g)),
               :'g_opaque', '<g>') AS pattern_origin_refused;
SELECT count(pgjobs.compute_cancel(job_id)) AS cancelled FROM pgjobs.compute_jobs WHERE status <> 'cancelled';
SELECT pgjobs.compute_group_remove_origin(:g, 'HTTPS://Code.Example:443') AS removed_after_end,
       pgjobs.compute_group_remove_origin(:g, 'https://pattern.example') AS pattern_removed_after_end;
RESET ROLE;
SELECT origin, type FROM pgjobs.compute_group_worker_origins WHERE compute_group_id = :g ORDER BY origin, type;

SELECT regress.compute_reset();
SELECT regress.reset();
DROP OWNED BY regress_cor_owner, regress_cor_other;
DROP ROLE regress_cor_owner, regress_cor_other;
