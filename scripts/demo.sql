-- What `make run` shows: jobs added, claimed, failed, retried and completed; a schedule and a
-- SQL job run by the background worker; and who may see and change what.
\pset footer off
SET pg_jobs.backoff = '1s';

\echo '-- Three jobs; the welcome mail has a key, so posting it twice adds it once.'
SELECT pgjobs.jobs_add('send_welcome', '{"user": 42}', key => 'welcome:42') AS welcome,
       pgjobs.jobs_add('send_welcome', '{"user": 42}', key => 'welcome:42') AS same_job,
       pgjobs.jobs_add('resize_image', '{"file": "cat.png"}', priority => -1) AS urgent;
SELECT * FROM pgjobs.jobs_add_batch('[{"task": "reindex", "payload": {"table": "docs"}, "queue": "maintenance"}]');
SELECT * FROM pgjobs.jobs_counts();

\echo '-- A worker claims two jobs of the default queue: the urgent one first.'
CREATE TEMP TABLE claimed AS SELECT * FROM pgjobs.jobs_claim('demo-worker', ARRAY['default'], 2);
SELECT id, attempt, task, payload, locked_until > now() AS leased FROM claimed ORDER BY id;

\echo '-- The image job succeeds; the mail job fails and is scheduled for a retry after the backoff.'
SELECT count(*) AS completed
FROM claimed, pgjobs.jobs_complete(id, lease_token, '{"thumbnail": "cat-small.png"}')
WHERE task = 'resize_image';
SELECT count(*) AS failed
FROM claimed, pgjobs.jobs_fail(id, lease_token, 'SMTP server said 451, try later')
WHERE task = 'send_welcome';
SELECT id, status, attempt, run_at - now() AS retry_in, errors -> 0 ->> 'error' AS last_error
FROM pgjobs.jobs_find(search => 'send_welcome');

\echo '-- After the backoff the retry is claimed and completed.'
SELECT pg_sleep(1.1) \g /dev/null
DROP TABLE claimed;
CREATE TEMP TABLE claimed AS SELECT * FROM pgjobs.jobs_claim('demo-worker', ARRAY['default'], 1);
SELECT id, attempt, task FROM claimed;
SELECT count(*) AS completed FROM claimed, pgjobs.jobs_complete(id, lease_token, '{"sent": true}');

\echo '-- The maintenance job is aborted before anyone claims it.'
SELECT id, pgjobs.jobs_abort(id) FROM pgjobs.jobs_find(queue => 'maintenance');

\echo '-- Everything finished is in the history, in the partition of the month it was due.'
SELECT id, task, status, attempts, result, tableoid::regclass AS partition
FROM pgjobs.job_history ORDER BY id;
SELECT * FROM pgjobs.jobs_counts();

\echo '-- The background worker: a schedule fires every second, and a SQL job runs in the database.'
DROP TABLE IF EXISTS demo_ticks;
CREATE TABLE demo_ticks (at timestamptz, source text);
SELECT pgjobs.jobs_schedule('demo-every-second', 'every 1 second',
    '{"sql": "INSERT INTO demo_ticks VALUES (now(), ''schedule'')"}') AS schedule;
SELECT pgjobs.jobs_add_sql($$INSERT INTO demo_ticks VALUES (now(), 'one-off')$$) AS sql_job;
SELECT pg_sleep(3.5) \g /dev/null
SELECT pgjobs.jobs_disable_schedule('demo-every-second');
SELECT source, count(*) FROM demo_ticks GROUP BY source ORDER BY source;
SELECT name, schedule, last_slot, last_status FROM pgjobs.jobs_schedules;
SELECT alive, doing, standby FROM pgjobs.launcher;
SELECT job_id, status, duration FROM pgjobs.job_runs ORDER BY id DESC LIMIT 3;

\echo '-- Access control: every role sees only its identity''s jobs. alice_phone is a proxy of alice.'
DO $$
DECLARE
    name text;
BEGIN
    FOREACH name IN ARRAY ARRAY['demo_alice', 'demo_alice_phone', 'demo_bob'] LOOP
        IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = name) THEN
            EXECUTE format('CREATE ROLE %I NOLOGIN IN ROLE pgjobs_user', name);
        END IF;
    END LOOP;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'demo_nobody') THEN
        CREATE ROLE demo_nobody NOLOGIN;
    END IF;
END
$$;
SELECT pgjobs.jobs_add_proxy('demo_alice_phone', 'demo_alice') \g /dev/null
SET ROLE demo_alice_phone;
SELECT pgjobs.jobs_add('send_invoice', '{"invoice": 7}') AS invoice \gset
SET ROLE demo_alice;
UPDATE pgjobs.jobs SET name = 'March invoice' RETURNING id, owner::regrole AS owner, task, name;
SET ROLE demo_bob;
SELECT pgjobs.jobs_add('send_report', '{}') AS bobs_job;
SELECT id, owner, task FROM pgjobs.jobs_find();
WITH renamed AS (UPDATE pgjobs.jobs SET name = 'mine now' WHERE id = :invoice RETURNING id)
SELECT count(*) AS alices_jobs_bob_renamed FROM renamed;
\echo '-- Denied: a column the owner may not change, and a role outside pgjobs_user.'
\set ON_ERROR_STOP off
SET ROLE demo_alice;
UPDATE pgjobs.jobs SET priority = -10 WHERE id = :invoice;
SET ROLE demo_nobody;
SELECT count(*) FROM pgjobs.jobs;
\set ON_ERROR_STOP on
\echo '-- The proxy sees what alice sees, until it is removed: then its next statement sees nothing.'
SET ROLE demo_alice_phone;
SELECT count(*) AS the_phone_sees FROM pgjobs.jobs;
RESET ROLE;
SELECT pgjobs.jobs_remove_proxy('demo_alice_phone') \g /dev/null
SET ROLE demo_alice_phone;
SELECT count(*) AS the_phone_sees FROM pgjobs.jobs;
RESET ROLE;
