-- Results stored elsewhere (seed 000's resultStorageType, resultStorageDetails and
-- resultStorageParams), as member roles: a deployment's result_storage names a URL pattern and
-- the parameters its workers POST with each result; every group of the job must let its workers
-- send results to that origin (compute_group_worker_origins, type any or sendResults). A fetch
-- tells the worker each slice's address and the parameters; a submit keeps the address in the
-- report and in compute_results (the hash of the result itself decides a consensus). Refused,
-- nothing deployed: malformed patterns and parameters, and origins no group allows.
SELECT regress.reset();
CREATE ROLE regress_crs_owner;     -- owns the group and deploys
CREATE ROLE regress_crs_w1;        -- a worker
CREATE ROLE regress_crs_other;     -- another member
GRANT pgjobs_user TO regress_crs_owner, regress_crs_w1, regress_crs_other;
INSERT INTO pgjobs.compute_groups (owner, name, join_key)
VALUES ('regress_crs_owner'::regrole, 'Stored elsewhere', 'crs-key')
RETURNING id AS g, opaque_id AS g_opaque \gset
SET ROLE regress_crs_owner;
SELECT pgjobs.compute_group_set_secret(:'g_opaque', 'crs-secret-long-enough');
RESET ROLE;
SET ROLE regress_crs_w1;
SELECT pgjobs.compute_worker_register('w1', '[]', '{"map-basic": "1.2.0"}', 4, 0, 2) IS NOT NULL AS registered;
SELECT pgjobs.compute_worker_join(:'g_opaque', 'crs-key', 'crs-secret-long-enough') = :g AS joined;
RESET ROLE;

-- A deployment of two values, twice each (race), with result_storage $1.
CREATE FUNCTION pg_temp.deployment(result_storage jsonb, level numeric DEFAULT 2) RETURNS text
LANGUAGE sql AS $$
    SELECT format('SELECT pgjobs.compute_deploy(%L)', jsonb_build_object(
        'work', 'function (x) { return x * x }', 'input', '{"values": ["3", "4"]}'::jsonb,
        'groups', jsonb_build_array(current_setting('regress.g_opaque')), 'offer', '0.01', 'funds', '1',
        'estimation_slices', 0, 'duplication_level', level, 'result_storage', result_storage))
$$;
SELECT set_config('regress.g_opaque', :'g_opaque', false) IS NOT NULL AS set;

-- The group lets its workers send results nowhere yet: refused. Then its owner lets them send
-- results to https://results.example (given with another case, its default port and a path: an
-- origin is compared as an origin) and fetch data from https://data.example.
SELECT regexp_replace(regress.as_role('regress_crs_owner', pg_temp.deployment('{"url": "https://results.example/r/{slice}/{copy}"}')),
                      'group [0-9a-f-]+', 'group <g>') AS refused;
SET ROLE regress_crs_owner;
INSERT INTO pgjobs.compute_group_worker_origins (compute_group_id, origin, type)
VALUES (:g, 'HTTPS://Results.Example:443/ignored/path', 'sendResults'), (:g, 'https://data.example', 'fetchData');
RESET ROLE;

-- Refused, nothing deployed: what is not a result storage, and an origin the group allows only
-- for fetching data, or another port of the allowed host.
SELECT storage, regexp_replace(regress.as_role('regress_crs_owner', pg_temp.deployment(storage::jsonb, level)),
                               'group [0-9a-f-]+', 'group <g>') AS refused
FROM (VALUES ('"https://results.example/{slice}/{copy}"', 2),
             ('{"url": "https://results.example/{slice}/{copy}", "method": "PUT"}', 2),
             ('{"params": {"token": "t"}}', 2),
             ('{"url": 42}', 2),
             ('{"url": "https://results.example/{slice}"}', 2),
             ('{"url": "https://results.example/all"}', 1),
             ('{"url": "ftp://results.example/{slice}"}', 1),
             ('{"url": "results/{slice}"}', 1),
             ('{"url": "https://user:secret@results.example/{slice}"}', 1),
             ('{"url": "https://results.example/{slice}#top"}', 1),
             ('{"url": "https://results.example/{slice}", "params": ["token"]}', 1),
             ('{"url": "https://results.example/{slice}", "params": {"result": "mine"}}', 1),
             ('{"url": "https://data.example/{slice}"}', 1),
             ('{"url": "https://results.example:8443/{slice}"}', 1),
             ('{"url": "http://results.example/{slice}"}', 1))
     AS c(storage, level);
SELECT regress.as_role('regress_crs_owner', pg_temp.deployment(jsonb_build_object(
           'url', 'https://results.example/' || repeat('x', 2040) || '/{slice}'), 1)) AS long_url_refused,
       regress.as_role('regress_crs_owner', pg_temp.deployment(jsonb_build_object(
           'url', 'https://results.example/{slice}', 'params', jsonb_build_object('pad', repeat('x', 8200))), 1)) AS big_params_refused;
SELECT count(*) AS jobs_deployed FROM pgjobs.compute_jobs;

-- Deployed: its results go to https://results.example/r/<slice>/<copy>?run=7, with a token.
SET ROLE regress_crs_owner;
SELECT pgjobs.compute_deploy(jsonb_build_object(
    'work', 'function (x) { return x * x }', 'input', '{"values": ["3", "4"]}'::jsonb,
    'groups', jsonb_build_array(:'g_opaque'), 'offer', '0.01', 'funds', '1', 'estimation_slices', 0,
    'duplication_level', 2, 'result_storage',
    '{"url": "https://results.example/r/{slice}/{copy}?run=7", "params": {"token": "t-123", "n": 1}}'::jsonb)) AS job \gset
SELECT result_storage_type, result_storage_details, result_storage_params FROM pgjobs.compute_jobs WHERE job_id = :job;
RESET ROLE;
-- Only the job's owner reads where its results go and with what.
SELECT role, regress.as_role(role, 'SELECT count(*) FROM pgjobs.compute_jobs WHERE result_storage_params IS NOT NULL') AS storages_seen
FROM (VALUES ('regress_crs_owner'), ('regress_crs_w1'), ('regress_crs_other')) AS r(role);

-- The worker is told where each slice's result goes (one copy of each: never two copies of a
-- slice to one identity), POSTs it there (not here), then submits it: the report and the result
-- keep the address, and the result's hash.
SET ROLE regress_crs_w1;
CREATE TEMP TABLE task1 AS SELECT * FROM pgjobs.compute_fetch();
SELECT slice_number, copy, result_url, result_params FROM task1 ORDER BY slice_number;
SELECT task_token AS t1 FROM task1 LIMIT 1 \gset
SELECT slice_number, outcome FROM pgjobs.compute_submit(:'t1', '{1,2}', '{9,16}') ORDER BY 1;
RESET ROLE;
SELECT slice_number, value, pgjobs.compute_result_text(value) IS NULL AS not_here FROM pgjobs.compute_results WHERE job_id = :job ORDER BY 1;
SELECT slice_number, copy, value, value_hash = md5(CASE slice_number WHEN 1 THEN '9' ELSE '16' END) AS hash_of_result, accepted
FROM pgjobs.slice_reports WHERE job_id = :job ORDER BY 1;
SELECT count(*) AS bodies_kept FROM pgjobs.result_store;

-- A job without result_storage: its results come here, as before, and a fetch says so.
SET ROLE regress_crs_owner;
SELECT pgjobs.compute_deploy(jsonb_build_object(
    'work', 'function (x) { return x * x }', 'input', '{"values": ["5"]}'::jsonb,
    'groups', jsonb_build_array(:'g_opaque'), 'offer', '0.01', 'funds', '1', 'estimation_slices', 0)) AS job2 \gset
SELECT result_storage_type, result_storage_details, result_storage_params FROM pgjobs.compute_jobs WHERE job_id = :job2;
RESET ROLE;
SET ROLE regress_crs_w1;
CREATE TEMP TABLE task2 AS SELECT * FROM pgjobs.compute_fetch();
SELECT slice_number, result_url IS NULL AS to_database, result_params IS NULL AS no_params FROM task2;
SELECT task_token AS t2 FROM task2 LIMIT 1 \gset
SELECT outcome FROM pgjobs.compute_submit(:'t2', '{1}', '{25}');
RESET ROLE;
SELECT value, pgjobs.compute_result_text(value) FROM pgjobs.compute_results WHERE job_id = :job2;

DROP TABLE task1, task2;
SELECT regress.compute_reset();
SELECT regress.reset();
DROP OWNED BY regress_crs_owner, regress_crs_w1, regress_crs_other;
DROP ROLE regress_crs_owner, regress_crs_w1, regress_crs_other;
