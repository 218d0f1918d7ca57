-- Leases: a heartbeat renews; a worker that stops renewing loses the job to the next claim,
-- and the attempt counts; on the last attempt an expired lease fails the job.
SELECT regress.reset();

SELECT pgjobs.jobs_add('long', max_attempts => 2, lease => '10 seconds');
CREATE TABLE regress.first AS SELECT * FROM pgjobs.jobs_claim('w1');
SELECT f.id, f.attempt, s.locked_until - s.begin_time AS lease
FROM regress.first f JOIN pgjobs.jobs s ON s.id = f.id;

SELECT h.lease_state, h.locked_until - statement_timestamp() AS lease
FROM regress.first f, pgjobs.jobs_heartbeat(f.id, f.lease_token) h;
SELECT h.lease_state, h.locked_until - statement_timestamp() AS lease
FROM regress.first f, pgjobs.jobs_heartbeat(f.id, f.lease_token, lease => '2 minutes') h;

-- w1 dies: its lease runs out, and the next claim takes the job again.
SELECT regress.expire_lease(1);
CREATE TABLE regress.second AS SELECT * FROM pgjobs.jobs_claim('w2');
SELECT id, attempt, lease_token <> (SELECT lease_token FROM regress.first) AS new_token FROM regress.second;
SELECT errors -> 0 ->> 'error' AS logged FROM pgjobs.jobs WHERE id = 1;

-- w1 comes back: its heartbeat says lost, its completion and failure are refused and change nothing.
SELECT regress.fingerprint() AS before \gset
SELECT h.lease_state, h.locked_until FROM regress.first f, pgjobs.jobs_heartbeat(f.id, f.lease_token) h;
SELECT regress.error_of(format('SELECT pgjobs.jobs_complete(%s, %L)', id, lease_token)) FROM regress.first;
SELECT regress.error_of(format('SELECT pgjobs.jobs_fail(%s, %L, %L)', id, lease_token, 'x')) FROM regress.first;
SELECT regress.fingerprint() = :'before' AS unchanged;

-- w2 dies too, on the last attempt: the next claim finds nothing and the job has failed.
SELECT regress.expire_lease(1);
SELECT count(*) AS claimed FROM pgjobs.jobs_claim('w3');
SELECT id, status, attempts, result, locked_by FROM pgjobs.job_history;

-- Expired leases are rescued by any claim, whatever queue it names.
SELECT pgjobs.jobs_add('other', queue => 'q2');
SELECT count(*) FROM pgjobs.jobs_claim('w4', ARRAY['q2']);
SELECT regress.expire_lease(2);
SELECT count(*) AS claimed FROM pgjobs.jobs_claim('w5', ARRAY['default']);
SELECT id AS job_id, status, attempt, locked_by FROM pgjobs.jobs;

-- A claim's rescue that rolls back (its transaction, or a savepoint around it: a worker killed
-- before its claim committed, a member's ROLLBACK) leaves the expired lease due for the next
-- claim's rescue, not for the next scan a minute later.
SELECT regress.reset();
SELECT pgjobs.jobs_add('rescued once', queue => 'q4') AS rescued_job \gset
SELECT count(*) AS claimed FROM pgjobs.jobs_claim('w9', ARRAY['q4']);
SELECT regress.expire_lease(:rescued_job);
BEGIN;
SELECT count(*) AS claimed FROM pgjobs.jobs_claim('w10', ARRAY['q4']);
ROLLBACK;
BEGIN;
SAVEPOINT before_claim;
SELECT count(*) AS claimed FROM pgjobs.jobs_claim('w11', ARRAY['q4']);
ROLLBACK TO SAVEPOINT before_claim;
COMMIT;
SELECT status, attempt, locked_by, locked_until < now() AS expired FROM pgjobs.jobs;
SELECT id = :rescued_job AS same_job, attempt FROM pgjobs.jobs_claim('w12', ARRAY['q4']);
SELECT errors -> 0 ->> 'error' AS logged FROM pgjobs.jobs;

-- A heartbeat without a lease renews by the lease the claim chose, not the job's shorter one.
SELECT pgjobs.jobs_add('long claim', queue => 'q3', lease => '10 seconds') AS long_job \gset
CREATE TABLE regress.long_claim AS SELECT * FROM pgjobs.jobs_claim('w6', ARRAY['q3'], 1, lease => '10 minutes');
SELECT h.lease_state, h.locked_until - statement_timestamp() AS lease
FROM regress.long_claim c, pgjobs.jobs_heartbeat(c.id, c.lease_token) h;
SELECT h.lease_state, h.locked_until - statement_timestamp() AS lease
FROM regress.long_claim c, pgjobs.jobs_heartbeat(c.id, c.lease_token, lease => '1 minute') h;
SELECT h.lease_state, h.locked_until - statement_timestamp() AS lease
FROM regress.long_claim c, pgjobs.jobs_heartbeat(c.id, c.lease_token) h;

-- A worker that stops gives its job back: waiting and due again, the attempt not counted, no
-- error logged; its token then holds nothing, and the next claim gets the job.
SELECT regress.reset();
SELECT pgjobs.jobs_add('given back', max_attempts => 1);
CREATE TABLE regress.releasing AS SELECT * FROM pgjobs.jobs_claim('w7');
SELECT pgjobs.jobs_release(array_agg(id), array_agg(lease_token)) FROM regress.releasing;
SELECT id AS job_id, status, attempt, lease_token IS NULL AS unleased, run_at <= now() AS due, errors FROM pgjobs.jobs;
SELECT regress.fingerprint() AS before \gset
SELECT regress.error_of(format('SELECT pgjobs.jobs_release(ARRAY[%s::bigint], ARRAY[%L::uuid])', id, lease_token)) FROM regress.releasing;
SELECT regress.error_of(format('SELECT pgjobs.jobs_release(%s, %L)', id, lease_token)) FROM regress.releasing;
SELECT regress.error_of(format('SELECT pgjobs.jobs_complete(%s, %L)', id, lease_token)) FROM regress.releasing;
SELECT regress.error_of('SELECT pgjobs.jobs_release(ARRAY[1::bigint], ''{}'')') AS mismatched;
SELECT regress.fingerprint() = :'before' AS unchanged;
SELECT id, attempt FROM pgjobs.jobs_claim('w8');
-- One job given back by the one-job form, as by the arrays.
SELECT pgjobs.jobs_release(id, lease_token) FROM pgjobs.jobs WHERE id = 1;
SELECT id AS job_id, status, attempt, lease_token IS NULL AS unleased, run_at <= now() AS due FROM pgjobs.jobs;
SELECT id, attempt FROM pgjobs.jobs_claim('w9');
-- An aborted job given back has ended, as aborted.
SELECT pgjobs.jobs_abort(1);
SELECT pgjobs.jobs_release(ARRAY[1::bigint], ARRAY[lease_token]) FROM pgjobs.jobs WHERE id = 1;
SELECT id, status, attempts FROM pgjobs.job_history;
-- A job the extension runs (a SQL job here, leased as its executor would hold it) is not given
-- back through jobs_release, even with its token: it has hand-backs of its own.
SELECT pgjobs.jobs_add_sql('SELECT 1') AS sql_job \gset
UPDATE pgjobs.jobs SET status = 'started', attempt = 1, lease_token = gen_random_uuid(), locked_until = now() + interval '1 minute'
WHERE id = :sql_job;
SELECT regress.fingerprint() AS before \gset
SELECT regexp_replace(regress.error_of(format('SELECT pgjobs.jobs_release(ARRAY[%s::bigint], ARRAY[%L::uuid])', id, lease_token)), 'job [0-9]+', 'job N') AS refused
FROM pgjobs.jobs WHERE id = :sql_job;
SELECT regress.fingerprint() = :'before' AS unchanged;

-- A job that cannot end holds back no other's rescue: the expired leases on their last attempt
-- are finished in one statement, and when it fails each alone (a WARNING names the job that could
-- not end, here hidden: it names the month's partition). Once a member's job whose queue name no
-- index of job_history could hold (the calls refuse such names now: queue_errors; this one is
-- written behind their back) failed that statement for every identity's expired leases, at every
-- round of the launcher.
SELECT regress.reset();
SELECT pgjobs.jobs_add('stuck', max_attempts => 1) AS stuck \gset
SELECT pgjobs.jobs_add('fine', max_attempts => 1) AS fine \gset
SELECT count(*) AS claimed FROM pgjobs.jobs_claim('w10', n => 2);
UPDATE pgjobs.jobs SET queue = (SELECT string_agg(md5(i::text), '') FROM generate_series(1, 100) i)
WHERE id = :stuck;
SELECT regress.expire_lease(:stuck), regress.expire_lease(:fine);
SET client_min_messages = error;
SELECT pgjobs._rescue_expired() AS rescued;
RESET client_min_messages;
SELECT id, status, task FROM pgjobs.job_history;
SELECT id, status, task FROM pgjobs.jobs;
DELETE FROM pgjobs.jobs WHERE id = :stuck;

-- Nor does a job whose log of errors is full: a member's failures can fill it to jsonb's limit
-- (256 MB; three failures with errors of 100 MB, or fewer and a long worker name), and then the
-- requeue of expired leases failed for every identity's, at every round. Such a job is requeued
-- without the lease's end in its log (a WARNING says so), the others with it.
SELECT regress.reset();
SELECT pgjobs.jobs_add('full', max_attempts => 3) AS full_log \gset
SELECT pgjobs.jobs_add('fine', max_attempts => 3) AS fine \gset
SELECT count(*) AS claimed FROM pgjobs.jobs_claim('w11', n => 2);
UPDATE pgjobs.jobs SET errors = jsonb_build_array(repeat('x', 268435400)) WHERE id = :full_log;
SELECT regress.expire_lease(:full_log), regress.expire_lease(:fine);
SELECT pgjobs._rescue_expired() AS rescued;
SELECT id, status, task, jsonb_array_length(errors) AS errors_logged,
       errors -> -1 ->> 'error' LIKE 'lease expired%' AS lease_end_logged
FROM pgjobs.jobs ORDER BY id;
DELETE FROM pgjobs.jobs WHERE id = :full_log;

DROP TABLE regress.first, regress.second, regress.long_claim, regress.releasing;
