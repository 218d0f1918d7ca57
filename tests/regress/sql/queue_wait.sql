-- jobs_wait(ids, timeout) as non-superuser members: it returns at once when every job given has
-- finished, each job as jobs_result answers (finished_at set); a live job is returned as it is
-- when the timeout passes (finished_at null); another identity's job is refused as missing; bad
-- input is refused and waits for nothing. (That a finishing commit wakes a waiter is shown by a
-- live test, in scripts/live_tests.sh, where two sessions run at once.)
SET TimeZone = 'UTC';
SELECT regress.reset();
CREATE ROLE regress_waiter;
CREATE ROLE regress_wait_other;
CREATE ROLE regress_wait_stranger;  -- not a member of pgjobs_user
GRANT pgjobs_user TO regress_waiter, regress_wait_other;

-- Job 1 completes, job 2 fails for good, job 3 waits.
SELECT regress.as_role('regress_waiter', $$
    SELECT count(pgjobs.jobs_add('t' || n, queue => 'w', max_attempts => 1)) FROM generate_series(1, 3) n$$) AS added;
SELECT regress.as_role('regress_waiter', $$
    SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['w'], 2) c,
                         LATERAL (SELECT CASE c.id WHEN 1 THEN pgjobs.jobs_complete(c.id, c.lease_token, '{"ok": 1}')
                                               ELSE pgjobs.jobs_fail(c.id, c.lease_token, 'broke') END) r$$) AS reported;

SELECT regress.as_role('regress_waiter', $$
    SELECT string_agg(format('%s %s %s %s %s finished %s', id, status, coalesce(result::text, '-'), coalesce(error, '-'),
                             attempts, finished_at IS NOT NULL), '; ' ORDER BY id)
    FROM pgjobs.jobs_wait(ARRAY[2, 1], '0 seconds')$$) AS finished_at_once;
SELECT regress.as_role('regress_waiter', $$
    SELECT string_agg(format('%s %s finished %s', id, status, finished_at IS NOT NULL), '; ')
    FROM pgjobs.jobs_wait(ARRAY[1, 3], '0.1 seconds')$$) AS timed_out;
-- Its order is the order given, a job given twice twice.
SELECT regress.as_role('regress_waiter', $$SELECT string_agg(id::text, ',') FROM pgjobs.jobs_wait(ARRAY[3, 1, 3], '0')$$) AS order_given;

-- Refused, waiting for nothing: another identity's job, bad input, a repeatable read
-- transaction, a role outside pgjobs_user.
SELECT role, statement, regress.as_role(role, 'SELECT regress.error_of(' || quote_literal(statement) || ')') AS result
FROM (VALUES ('regress_wait_other', $$SELECT count(*) FROM pgjobs.jobs_wait(ARRAY[1], '0')$$),
             ('regress_wait_other', $$SELECT count(*) FROM pgjobs.jobs_wait(ARRAY[99], '10 seconds')$$),
             ('regress_waiter', $$SELECT count(*) FROM pgjobs.jobs_wait(NULL, '0')$$),
             ('regress_waiter', $$SELECT count(*) FROM pgjobs.jobs_wait('{}', '0')$$),
             ('regress_waiter', $$SELECT count(*) FROM pgjobs.jobs_wait(ARRAY[1, NULL], '0')$$),
             ('regress_waiter', $$SELECT count(*) FROM pgjobs.jobs_wait(array_fill(1::bigint, ARRAY[1001]), '0')$$),
             ('regress_waiter', $$SELECT count(*) FROM pgjobs.jobs_wait(ARRAY[3], '-1 second')$$),
             ('regress_waiter', $$SELECT count(*) FROM pgjobs.jobs_wait(ARRAY[3], '2 hours')$$),
             ('regress_waiter', $$SELECT count(*) FROM pgjobs.jobs_wait(ARRAY[3], NULL)$$),
             ('regress_wait_stranger', $$SELECT count(*) FROM pgjobs.jobs_wait(ARRAY[3], '0')$$)) AS s(role, statement);
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT regress.error_of($$SELECT count(*) FROM pgjobs.jobs_wait(ARRAY[3], '10 seconds')$$) AS in_repeatable_read;
ROLLBACK;

SELECT regress.reset();
DROP ROLE regress_waiter, regress_wait_other, regress_wait_stranger;
