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
    ('SELECT pgjobs.jobs_add(''t'', max_backoff => ''100000 years'')'),
    ('SELECT pgjobs.jobs_add(''t'', lease => ''2 years'')'),
    ('SELECT pgjobs.jobs_add(''t'', key => ''k'', on_conflict => ''overwrite'')'),
    ('SELECT pgjobs.jobs_add(''t'', key => '''')'),
    ('SELECT pgjobs.jobs_add_batch(''{"task": "t"}'')'),
    ('SELECT pgjobs.jobs_add_batch(''[{"task": "ok"}, {"payload": {}}]'')'),
    ('SELECT pgjobs.jobs_add_batch(''[{"task": "ok"}, {"task": "t", "tsak": "typo"}]'')'),
    ('SELECT pgjobs.jobs_add_batch(''[{"task": "t", "priority": "high"}]'')'),
    ('SELECT pgjobs.jobs_add_batch(''"t"'')'),
    ('SELECT pgjobs.jobs_add_batch(NULL)'),
    ('SELECT pgjobs.jobs_add_batch(''[{"task": "ok"}, null]'')'),
    ('SELECT pgjobs.jobs_add_batch(''[["t"]]'')'),
    ('SELECT pgjobs.jobs_add_batch(''[{"task": "t", "priority": 1.5}]'')'),
    ('SELECT pgjobs.jobs_add_batch(''[{"task": "t", "priority": 3000000000}]'')'),
    ('SELECT pgjobs.jobs_add_batch(''[{"task": "t", "max_attempts": true}]'')'),
    ('SELECT pgjobs.jobs_add_batch(''[{"task": ["t"]}]'')'),
    ('SELECT pgjobs.jobs_add_batch(''[{"task": "t", "depends_on": {"id": 1}}]'')'),
    ('SELECT pgjobs.jobs_add_batch(''[{"task": "t", "depends_on_keys": [7]}]'')'),
    ('SELECT pgjobs.jobs_add_batch(''[{"task": "t", "run_at": "soon"}]'')'),
    ('SELECT pgjobs.jobs_claim(''w'', n => 0)'),
    ('SELECT pgjobs.jobs_claim(''w'', n => -1)'),
    ('SELECT pgjobs.jobs_claim(''w'', lease => ''0 seconds'')'),
    ('SELECT pgjobs.jobs_claim(''w'', lease => ''2 years'')'),
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
    ('SELECT pgjobs.jobs_complete(NULL::bigint[], ARRAY[gen_random_uuid()])'),
    ('SELECT pgjobs.jobs_fail(ARRAY[1], NULL, ARRAY[''e''])'),
    ('SELECT pgjobs.jobs_release(ARRAY[1], NULL)'),
    ('SELECT pgjobs.jobs_find(limit_rows => -1)'),
    ('SELECT pgjobs.jobs_find(search => ''x'', search_newest => -1)'),
    ('SELECT pgjobs.jobs_history_prepare(-1)'),
    -- A queue name is at most 128 bytes and a key at most 1000, wherever one is given: each is an
    -- entry of indexes, which PostgreSQL caps at 2704 bytes (a job whose queue no history index
    -- could hold was added, then never ended; queue_lease).
    ('SELECT pgjobs.jobs_add(''t'', queue => repeat(''q'', 129))'),
    ('SELECT pgjobs.jobs_add_batch(jsonb_build_array(jsonb_build_object(''task'', ''t'', ''queue'', repeat(''q'', 129))))'),
    ('SELECT pgjobs.jobs_schedule(''s'', ''* * * * *'', jsonb_build_object(''task'', ''t'', ''queue'', repeat(''q'', 129)))'),
    ('SELECT pgjobs.jobs_pause(repeat(''q'', 129))'),
    ('SELECT pgjobs.jobs_limit(repeat(''q'', 129), 1)'),
    ('SELECT pgjobs.jobs_queue_history(repeat(''q'', 129), ''none'')'),
    ('SELECT pgjobs.jobs_dead_letter(repeat(''q'', 129), ''dead'')'),
    ('SELECT pgjobs.jobs_dead_letter(''q'', repeat(''d'', 129))'),
    ('SELECT pgjobs.jobs_add(''t'', key => repeat(''k'', 1001))'),
    ('SELECT pgjobs.jobs_add_batch(jsonb_build_array(jsonb_build_object(''task'', ''t'', ''key'', repeat(''k'', 1001))))'),
    ('SELECT pgjobs.jobs_schedule(repeat(''s'', 129), ''* * * * *'', ''{"task": "t"}'')'),
    -- JSON that serde_json cannot hold (a number past a double's range, nesting past 128 levels),
    -- where a call reads its argument's fields: refused, naming the argument.
    ('SELECT pgjobs.jobs_schedule(''s'', ''* * * * *'', ''{"task": "t"}'', ''{"x": 1e1000}'')'),
    ('SELECT pgjobs.jobs_schedule(''s'', ''* * * * *'', ''{"task": "t"}'', (''{"time_zone": '' || repeat(''['', 200) || repeat('']'', 200) || ''}'')::jsonb)'),
    ('SELECT pgjobs.compute_deploy(''{"work": "(x) => x", "input": {"range": {"start": 1, "end": 1e1000}}}'')')
) AS t(statement);
SELECT regress.fingerprint() = :'before' AS unchanged;

-- A batch with one stale token completes none of its jobs.
SELECT pgjobs.jobs_add('second');
INSERT INTO regress.claim SELECT * FROM pgjobs.jobs_claim('w');
SELECT regress.fingerprint() AS before \gset
SELECT regress.error_of(format('SELECT pgjobs.jobs_complete(ARRAY[1, 2], ARRAY[%L, gen_random_uuid()]::uuid[])',
                               (SELECT lease_token FROM regress.claim WHERE id = 1)));
SELECT regress.fingerprint() = :'before' AS unchanged;
SELECT id AS job_id, status FROM pgjobs.jobs ORDER BY job_id;

-- A job named twice with its valid token is refused, not completed (or failed) once.
SELECT regress.error_of(format('SELECT pgjobs.jobs_complete(ARRAY[1, 1], ARRAY[%L, %L]::uuid[])', t, t)),
       regress.error_of(format('SELECT pgjobs.jobs_fail(ARRAY[1, 1], ARRAY[%L, %L]::uuid[], ARRAY[''e'', ''e''])', t, t))
FROM (SELECT lease_token AS t FROM regress.claim WHERE id = 1) c;
SELECT regress.fingerprint() = :'before' AS unchanged;
DROP TABLE regress.claim;


-- The tables keep their own rules, even against a superuser writing them directly: a waiting
-- job has no lease token, a leased one has one, none is finished; a job's task and queue are
-- not empty, its attempts at least 1, its lease positive and its backoffs not negative; a
-- finished job is completed, failed or aborted.
SELECT regress.reset();
SELECT pgjobs.jobs_add('rules') AS job \gset
-- The rule of duplication_type is compute_jobs', so the job gets a row there too.
INSERT INTO pgjobs.compute_jobs (job_id) VALUES (:job);
SELECT regress.fingerprint() AS before \gset
SELECT statement, regress.error_of(statement) AS error FROM (VALUES
    ('UPDATE pgjobs.jobs SET lease_token = gen_random_uuid() WHERE id = ' || :job),
    ('UPDATE pgjobs.jobs SET status = ''started'' WHERE id = ' || :job),
    ('UPDATE pgjobs.jobs SET status = ''completed'', lease_token = gen_random_uuid() WHERE id = ' || :job),
    ('UPDATE pgjobs.jobs SET task = '''' WHERE id = ' || :job),
    ('UPDATE pgjobs.jobs SET queue = '''' WHERE id = ' || :job),
    ('UPDATE pgjobs.jobs SET max_attempts = 0 WHERE id = ' || :job),
    ('UPDATE pgjobs.jobs SET lease = ''0 seconds'' WHERE id = ' || :job),
    ('UPDATE pgjobs.jobs SET backoff = ''-1 second'' WHERE id = ' || :job),
    ('UPDATE pgjobs.jobs SET max_backoff = ''-1 second'' WHERE id = ' || :job),
    ('UPDATE pgjobs.compute_jobs SET duplication_type = ''first'' WHERE job_id = ' || :job)
) AS s(statement);
SELECT regress.fingerprint() = :'before' AS unchanged;
DELETE FROM pgjobs.compute_jobs WHERE job_id = :job;
-- What the rules allow: a lease with its token, and back.
UPDATE pgjobs.jobs SET status = 'started', lease_token = gen_random_uuid() WHERE id = :job;
UPDATE pgjobs.jobs SET status = 'created', lease_token = NULL WHERE id = :job;
-- And every job in the history has finished.
SELECT pgjobs.jobs_abort(:job);
-- (The error names the month's partition, or the catch-all one where no launcher has made the
-- month's yet, as when this test runs alone: the test hides which.)
SELECT regexp_replace(regress.error_of('UPDATE pgjobs.job_history SET status = ''started'' WHERE id = ' || :job),
                      'job_history_([0-9]{6}|other)', 'job_history_<month>') AS error;
SELECT id, status FROM pgjobs.job_history WHERE id = :job;

-- As psql prints them, context included: a hint only where one helps, no empty HINT line
-- otherwise, and no internal function named, also for an error raised inside a function's
-- statements.
\set SHOW_CONTEXT always
SELECT pgjobs.jobs_add('', '{}');
SELECT pgjobs.jobs_add(NULL);
SELECT pgjobs.jobs_complete(999, gen_random_uuid());
SELECT pgjobs.jobs_schedule('tz', '@hourly', '{"task": "t"}', '{"time_zone": "utc"}');
\set SHOW_CONTEXT errors
