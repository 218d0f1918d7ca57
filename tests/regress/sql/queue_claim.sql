-- Claiming: by priority (lowest first) then age, only ready jobs of the named queues, at most n.
SELECT regress.reset();

SELECT pgjobs.jobs_add('low', priority => 10);
SELECT pgjobs.jobs_add('first', priority => 0);
SELECT pgjobs.jobs_add('second', priority => 0);
SELECT pgjobs.jobs_add('urgent', priority => -5);
SELECT pgjobs.jobs_add('later', run_at => now() + interval '1 hour');
SELECT pgjobs.jobs_add('elsewhere', queue => 'reports');

SELECT id, attempt, task, payload, lease_token IS NOT NULL AS has_token,
       locked_until - now() AS lease
FROM pgjobs.jobs_claim('w1', ARRAY['default'], 2) ORDER BY id;
SELECT id, task, lease_token IS NOT NULL AS has_token, locked_until - now() AS lease
FROM pgjobs.jobs_claim('w2', n => 10, lease => '5 minutes') ORDER BY id;

-- Nothing ready is left in default: the job due in an hour waits.
SELECT count(*) AS claimed FROM pgjobs.jobs_claim('w3', ARRAY['default'], 10);
SELECT id, task FROM pgjobs.jobs_claim('w3', ARRAY['default', 'reports'], 10);

SELECT id AS job_id, status, attempt, locked_by FROM pgjobs.jobs ORDER BY job_id;

-- Tokens are distinct.
SELECT count(DISTINCT lease_token) AS tokens, count(*) AS leased
FROM pgjobs.jobs WHERE status = 'started';

-- A completed job leaves the claimable table, and its result is kept.
SELECT count(*) AS completed
FROM pgjobs.jobs s, pgjobs.jobs_complete(s.id, s.lease_token, '{"rows": 3}')
WHERE s.id = 4;
SELECT id, status, attempts, result, locked_by FROM pgjobs.job_history ORDER BY id;
SELECT count(*) AS left_in_jobs FROM pgjobs.jobs WHERE id = 4;

-- Batch completion, and a completion without a result.
SELECT count(*) AS completed FROM pgjobs.jobs_complete(
    ARRAY(SELECT id FROM pgjobs.jobs WHERE status = 'started' ORDER BY id),
    ARRAY(SELECT lease_token FROM pgjobs.jobs WHERE status = 'started' ORDER BY id),
    ARRAY['{"n": 1}', NULL, '{"n": 3}', '{"n": 4}']::jsonb[]);
SELECT id, task, status, result FROM pgjobs.job_history ORDER BY id;
SELECT id AS job_id, status FROM pgjobs.jobs ORDER BY job_id;

-- Complete and claim in one call: the finished job and the next claim commit together; with
-- empty arrays it only claims.
SELECT pgjobs.jobs_add('next_' || i) FROM generate_series(1, 2) i;
CREATE TABLE regress.held AS SELECT * FROM pgjobs.jobs_complete_and_claim('{}', '{}', '{}', 'w4');
SELECT id, attempt, task FROM regress.held;
SELECT c.id, c.task FROM regress.held h,
    pgjobs.jobs_complete_and_claim(ARRAY[h.id], ARRAY[h.lease_token], ARRAY['{"ok": 1}'::jsonb], 'w4') c;
SELECT id, status, result FROM pgjobs.job_history WHERE task LIKE 'next_%';
SELECT id AS job_id, status, locked_by FROM pgjobs.jobs WHERE task LIKE 'next_%';
-- A stale token in the completion: the claim does not happen either.
SELECT regress.fingerprint() AS before \gset
SELECT regress.error_of($$SELECT * FROM pgjobs.jobs_complete_and_claim(ARRAY[8], ARRAY[gen_random_uuid()], '{NULL}', 'w4')$$);
SELECT regress.fingerprint() = :'before' AS unchanged;
DROP TABLE regress.held;

-- Lease tokens come from the backend's block of random bytes (src/lib.rs: strong_random), 4,096
-- bytes at a time: a claim of 1,000 jobs draws four blocks and more; every token is distinct and
-- a version 4 UUID.
SELECT count(*) FROM pgjobs.jobs_add_batch((SELECT jsonb_agg(jsonb_build_object('task', 'many', 'queue', 'tokens'))
                                            FROM generate_series(1, 1000)));
SELECT count(*) AS claimed, count(DISTINCT lease_token) AS tokens,
       count(*) FILTER (WHERE substr(lease_token::text, 15, 1) = '4'
                          AND substr(lease_token::text, 20, 1) IN ('8', '9', 'a', 'b')) AS version_4
FROM pgjobs.jobs_claim('w5', ARRAY['tokens'], 1000);
