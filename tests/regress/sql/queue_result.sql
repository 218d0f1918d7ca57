-- jobs_result: one of the caller's jobs, live or finished, as a caller waiting for it reads it:
-- its status, its result once finished, the error of its last failed attempt, its attempts, its
-- progress while it runs and when it finished. Another identity's job answers as one that does
-- not exist.
SELECT regress.reset();
CREATE ROLE regress_asker IN ROLE pgjobs_user;
CREATE ROLE regress_asker_other IN ROLE pgjobs_user;
SET ROLE regress_asker;
SELECT count(*) AS added FROM pgjobs.jobs_add_batch(
    '[{"task": "ask", "queue": "asks"}, {"task": "ask", "queue": "asks", "max_attempts": 2}, {"task": "ask", "queue": "asks"}]');
CREATE TEMP TABLE held AS SELECT id, lease_token FROM pgjobs.jobs_claim('w', ARRAY['asks'], 2);
SELECT pgjobs.jobs_complete(id, lease_token, '{"answer": 42}') FROM held WHERE id = 1;
SELECT pgjobs.jobs_fail(id, lease_token, 'first try failed') FROM held WHERE id = 2;
SELECT p.lease_state
FROM (SELECT id, lease_token FROM pgjobs.jobs_claim('w', ARRAY['asks'])) t,
     pgjobs.jobs_progress(t.id, t.lease_token, '{"step": 2}') p;
SELECT n AS id, r.status, r.result, r.error, r.attempts, r.progress, r.finished_at IS NOT NULL AS finished
FROM generate_series(1, 3) n, pgjobs.jobs_result(n) r ORDER BY n;
-- The second job, due again, fails its last attempt: failed, with its error. (Made due by hand,
-- which no claim hears of: read from the start, as queue_retry does.)
RESET ROLE;
SELECT regress.make_due(2);
SET pg_jobs.claim_rescan_interval = 0;
SET ROLE regress_asker;
SELECT pgjobs.jobs_fail(id, lease_token, 'second try failed') FROM pgjobs.jobs_claim('w', ARRAY['asks']);
SELECT status, result, error, attempts, finished_at IS NOT NULL AS finished FROM pgjobs.jobs_result(2);
RESET ROLE;
RESET pg_jobs.claim_rescan_interval;
SELECT regress.fingerprint() AS before \gset
SELECT call, regexp_replace(regress.as_role(role, call), 'job [0-9]+', 'job N') AS refused
FROM (VALUES ('regress_asker_other', 'SELECT status FROM pgjobs.jobs_result(1)'),
             ('regress_asker_other', 'SELECT status FROM pgjobs.jobs_result(3)'),
             ('regress_asker', 'SELECT status FROM pgjobs.jobs_result(999999)'),
             ('regress_asker', 'SELECT status FROM pgjobs.jobs_result(NULL)')) AS c(role, call);
SELECT regress.fingerprint() = :'before' AS unchanged;
DROP TABLE held;
SELECT regress.reset();
DROP ROLE regress_asker, regress_asker_other;
