-- Retries: attempt n failing waits backoff × 2^(n-1), capped at max_backoff, until max_attempts;
-- then the job is failed and its result holds the error.
SELECT regress.reset();

SELECT pgjobs.retry_delay_seconds(a, 10, 3600) AS delay FROM generate_series(1, 11) a;
SELECT pgjobs.retry_delay_seconds(1000000, 10, 3600) AS saturated;
-- Out of range, named as PostgreSQL writes them.
SELECT regress.error_of('SELECT pgjobs.retry_delay_seconds(1, 1e300, ''-Infinity'')') AS refused;

-- regress.make_due moves the job back to the same place (run_at a second before this
-- transaction), below where the previous claim left its queue's claims (src/api/heads.rs): an
-- UPDATE by hand that no claim learns of, so claims read from the start here.
SET pg_jobs.claim_rescan_interval = 0;
SELECT pgjobs.jobs_add('flaky', max_attempts => 5, backoff => '10 seconds', max_backoff => '30 seconds');

CREATE TABLE regress.delays (attempt integer, delay interval, status pgjobs.job_status);
DO $$
DECLARE
    claim record;
BEGIN
    FOR i IN 1..5 LOOP
        PERFORM regress.make_due(1);
        SELECT * INTO claim FROM pgjobs.jobs_claim('retry-worker');
        PERFORM pgjobs.jobs_fail(claim.id, claim.lease_token, 'boom ' || claim.attempt);
        INSERT INTO regress.delays
        SELECT claim.attempt, s.run_at - (s.errors -> -1 ->> 'at')::timestamptz, s.status
        FROM pgjobs.jobs s WHERE s.id = 1;
    END LOOP;
END
$$;
-- Attempts 1..4 wait 10 s, 20 s, 30 s (capped), 30 s; attempt 5 was the last.
SELECT * FROM regress.delays ORDER BY attempt;
SELECT id, status, attempts, max_attempts, result FROM pgjobs.job_history;
SELECT jsonb_array_length(errors) AS errors_kept, errors -> 0 ->> 'error' AS first, errors -> 4 ->> 'error' AS last
FROM pgjobs.job_history;
SELECT count(*) AS live FROM pgjobs.jobs;

-- A failed retry is not claimable before its time.
SELECT pgjobs.jobs_add('waits', backoff => '1 hour');
SELECT count(*) FROM pgjobs.jobs_claim('w', n => 1) c, pgjobs.jobs_fail(c.id, c.lease_token, 'later');
SELECT count(*) AS claimable_now FROM pgjobs.jobs_claim('w', n => 1);

-- Only success completes: max_attempts 1 goes straight to failed.
SELECT pgjobs.jobs_add('once', max_attempts => 1);
SELECT count(*) FROM pgjobs.jobs_claim('w', n => 1) c, pgjobs.jobs_fail(c.id, c.lease_token, 'no');
SELECT task, status, result FROM pgjobs.job_history WHERE task = 'once';

DROP TABLE regress.delays;
RESET pg_jobs.claim_rescan_interval;
