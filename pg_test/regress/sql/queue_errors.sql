-- Every bad input gets a SQLSTATE, a message, and changes nothing.
SELECT regress.reset();
SELECT pgjobs.jobs_add('victim');
CREATE TABLE regress.claim AS SELECT * FROM pgjobs.jobs_claim('w');
SELECT regress.fingerprint() AS before \gset

SELECT statement, regress.error_of(statement) AS error FROM (VALUES
    ('SELECT pgjobs.jobs_add(NULL)'),
    ('SELECT pgjobs.jobs_add('''')'),
    ('SELECT pgjobs.jobs_add(''t'', queue => '''')'),
    ('SELECT pgjobs.jobs_add(''t'', lease => ''0 seconds'')'),
    ('SELECT pgjobs.jobs_add(''t'', lease => ''-5 seconds'')'),
    ('SELECT pgjobs.jobs_add(''t'', max_attempts => 0)'),
    ('SELECT pgjobs.jobs_add(''t'', backoff => ''-1 second'')'),
    ('SELECT pgjobs.jobs_add(''t'', key => ''k'', on_conflict => ''overwrite'')'),
    ('SELECT pgjobs.jobs_add(''t'', key => '''')'),
    ('SELECT pgjobs.jobs_add_batch(''{"task": "t"}'')'),
    ('SELECT pgjobs.jobs_add_batch(''[{"task": "ok"}, {"payload": {}}]'')'),
    ('SELECT pgjobs.jobs_claim(''w'', n => 0)'),
    ('SELECT pgjobs.jobs_claim(''w'', n => -1)'),
    ('SELECT pgjobs.jobs_claim(''w'', lease => ''0 seconds'')'),
    ('SELECT pgjobs.jobs_claim(''w'', ARRAY[]::text[])'),
    ('SELECT pgjobs.jobs_claim('''')'),
    ('SELECT pgjobs.jobs_complete(999, gen_random_uuid())'),
    ('SELECT pgjobs.jobs_complete(1, gen_random_uuid())'),
    ('SELECT pgjobs.jobs_complete(1, NULL)'),
    ('SELECT pgjobs.jobs_fail(999, gen_random_uuid(), ''e'')'),
    ('SELECT pgjobs.jobs_fail(1, gen_random_uuid(), ''e'')'),
    ('SELECT pgjobs.jobs_heartbeat(999, gen_random_uuid())'),
    ('SELECT pgjobs.jobs_heartbeat(1, gen_random_uuid(), lease => ''-1 second'')'),
    ('SELECT pgjobs.jobs_abort(999)'),
    ('SELECT pgjobs.jobs_abort(NULL)'),
    ('SELECT pgjobs.jobs_complete(ARRAY[1, 1], ARRAY[gen_random_uuid(), gen_random_uuid()])'),
    ('SELECT pgjobs.jobs_complete(ARRAY[1], ARRAY[]::uuid[])'),
    ('SELECT pgjobs.jobs_find(limit_rows => -1)'),
    ('SELECT pgjobs.jobs_history_prepare(-1)')
) AS t(statement);
SELECT regress.fingerprint() = :'before' AS unchanged;

-- A batch with one stale token completes none of its jobs.
SELECT pgjobs.jobs_add('second');
INSERT INTO regress.claim SELECT * FROM pgjobs.jobs_claim('w');
SELECT regress.fingerprint() AS before \gset
SELECT regress.error_of(format('SELECT pgjobs.jobs_complete(ARRAY[1, 2], ARRAY[%L, gen_random_uuid()]::uuid[])',
                               (SELECT lease_token FROM regress.claim WHERE id = 1)));
SELECT regress.fingerprint() = :'before' AS unchanged;
SELECT job_id, status FROM pgjobs.slices ORDER BY job_id;

-- A job named twice with its valid token is refused, not completed (or failed) once.
SELECT regress.error_of(format('SELECT pgjobs.jobs_complete(ARRAY[1, 1], ARRAY[%L, %L]::uuid[])', t, t)),
       regress.error_of(format('SELECT pgjobs.jobs_fail(ARRAY[1, 1], ARRAY[%L, %L]::uuid[], ARRAY[''e'', ''e''])', t, t))
FROM (SELECT lease_token AS t FROM regress.claim WHERE id = 1) c;
SELECT regress.fingerprint() = :'before' AS unchanged;
DROP TABLE regress.claim;

-- The SQL job executor's check of its lease explains a job it cannot start.
SELECT regress.error_of('SELECT pgjobs._sql_job_start(999, gen_random_uuid(), 0)');
