-- Abort: a waiting job ends at once; a running one is marked, its worker learns it at the next
-- heartbeat, a later completion is refused, and the worker's report or its lease ends it.
SELECT regress.reset();

SELECT pgjobs.jobs_add('waiting');
SELECT pgjobs.jobs_abort(1);
SELECT id, status, attempts FROM pgjobs.job_history;

SELECT pgjobs.jobs_add('running');
CREATE TABLE regress.claim AS SELECT * FROM pgjobs.jobs_claim('w');
SELECT pgjobs.jobs_abort(2);
SELECT pgjobs.jobs_abort(2) AS again;
SELECT id AS job_id, status FROM pgjobs.jobs;
SELECT locked_until AS leased_until FROM pgjobs.jobs WHERE id = 2 \gset
SELECT lease_state FROM regress.claim c, pgjobs.jobs_heartbeat(c.id, c.lease_token);
-- ... and the heartbeat did not renew the lease, with or without a lease given.
SELECT h.locked_until = :'leased_until' AS not_renewed
FROM regress.claim c, pgjobs.jobs_heartbeat(c.id, c.lease_token, lease => '1 hour') h;

SELECT regress.fingerprint() AS before \gset
SELECT regress.error_of(format('SELECT pgjobs.jobs_complete(%s, %L, %L)', id, lease_token, '{}')) FROM regress.claim;
SELECT regress.fingerprint() = :'before' AS unchanged;

-- The worker rolls back and reports; the job ends aborted, the error kept in its log.
SELECT count(*) FROM regress.claim c, pgjobs.jobs_fail(c.id, c.lease_token, 'stopped: aborted');
SELECT id, status, attempts, result, errors -> -1 ->> 'error' AS logged FROM pgjobs.job_history WHERE id = 2;

-- An aborted job whose worker died ends when its lease runs out.
SELECT pgjobs.jobs_add('orphan');
SELECT count(*) FROM pgjobs.jobs_claim('w');
SELECT pgjobs.jobs_abort(3);
SELECT regress.expire_lease(3);
SELECT count(*) FROM pgjobs.jobs_claim('w');
SELECT id, status FROM pgjobs.job_history WHERE id = 3;

-- Aborting a finished job changes nothing and says how it ended.
SELECT pgjobs.jobs_add('done');
SELECT count(*) FROM pgjobs.jobs_claim('w') c, pgjobs.jobs_complete(c.id, c.lease_token);
SELECT pgjobs.jobs_abort(4) AS finished_job;
SELECT id, status FROM pgjobs.job_history ORDER BY id;

DROP TABLE regress.claim;
