-- Idempotency keys belong to an identity. With one key space for all, a role could take the key
-- another would use next (whose adds then silently added nothing and returned the squatter's
-- job, for months under skip), or probe which keys another holds. Keys starting scheduled_job:
-- are the scheduler's: nobody may add one, not even a superuser.
SET TimeZone = 'UTC';
SELECT regress.reset();
CREATE ROLE regress_alice;
CREATE ROLE regress_mallory;
GRANT pgjobs_user TO regress_alice, regress_mallory;

SELECT regress.as_role('regress_mallory', $$SELECT pgjobs.jobs_add('squat', key => 'invoice:7')$$) AS mallorys_skip,
       regress.as_role('regress_mallory', $$SELECT pgjobs.jobs_add('squat', key => 'sync:7', on_conflict => 'replace')$$) AS mallorys_replace;
SELECT regress.as_role('regress_alice', $$SELECT pgjobs.jobs_add('invoice', '{"n": 1}', key => 'invoice:7')$$) AS alices_skip,
       regress.as_role('regress_alice', $$SELECT pgjobs.jobs_add('invoice', '{"n": 2}', key => 'invoice:7')$$) AS alices_skip_again,
       regress.as_role('regress_alice', $$SELECT pgjobs.jobs_add('sync', '{"n": 1}', key => 'sync:7', on_conflict => 'replace')$$) AS alices_replace,
       regress.as_role('regress_alice', $$SELECT pgjobs.jobs_add('sync', '{"n": 2}', key => 'sync:7', on_conflict => 'replace')$$) AS alices_replace_again;
-- Each identity's keys point at its own jobs; mallory's are as they were.
SELECT owner, id, task, payload, idempotency_key FROM pgjobs.job_list ORDER BY id;
SELECT owner::regrole, idempotency_key, job_id FROM pgjobs.job_keys ORDER BY job_id;
-- Finished, mallory's skip key still stands for her, and still means nothing to alice.
SELECT regress.as_role('regress_mallory', $$SELECT count(*) FROM pgjobs.jobs_claim('w', n => 10) c, pgjobs.jobs_complete(c.id, c.lease_token)$$) AS completed;
SELECT regress.as_role('regress_mallory', $$SELECT pgjobs.jobs_add('squat', key => 'invoice:7')$$) AS mallorys_again,
       regress.as_role('regress_alice', $$SELECT pgjobs.jobs_add('invoice', key => 'invoice:7')$$) AS alices_again;

-- The scheduler's keys: refused to everyone, through every way of adding a job; nothing changes.
SELECT regress.fingerprint() AS before \gset
SELECT role, statement, regress.as_role(role, statement) AS result
FROM (VALUES ('regress_alice'), ('postgres')) AS r(role),
     (VALUES ($$SELECT pgjobs.jobs_add('t', key => 'scheduled_job:1:2026-12-01T00:00:00Z')$$),
             ($$SELECT pgjobs.jobs_add_sql('SELECT 1', key => 'scheduled_job:1:2026-12-01T00:00:00Z')$$),
             ($$SELECT count(*) FROM pgjobs.jobs_add_batch('[{"task": "t"}, {"task": "t", "key": "scheduled_job:2:x"}]')$$)) AS s(statement)
ORDER BY role, statement;
SELECT regress.fingerprint() = :'before' AS unchanged;

SELECT regress.reset();
DROP ROLE regress_alice, regress_mallory;
