-- jobs_reschedule, as member roles: "run now" for a job waiting for its time or for its next
-- attempt, or any other time. A job's place in the claim order follows (a job due earlier than
-- where the last claims stopped is found by the next), when it was first due does not. Passed
-- over, not refused: a leased job, one waiting for its dependencies, a SQL job, another
-- identity's job, one that does not exist. Refused, nothing changed: no ids, more than 1000, a
-- null id, a run_at that is not a finite time within 100 years.
SELECT regress.reset();
CREATE ROLE regress_rescheduler IN ROLE pgjobs_user;
CREATE ROLE regress_rescheduler_other IN ROLE pgjobs_user;
GRANT USAGE ON SCHEMA regress TO regress_rescheduler, regress_rescheduler_other;
SET ROLE regress_rescheduler;
SELECT pgjobs.jobs_add('tomorrow', queue => 'later', run_at => now() + interval '1 day') AS tomorrow \gset
SELECT pgjobs.jobs_add('now', queue => 'later') AS ready \gset
SELECT pgjobs.jobs_add('after', queue => 'later', depends_on => ARRAY[:tomorrow]) AS after \gset
SELECT pgjobs.jobs_add('flaky', queue => 'flaky', backoff => '1 hour') AS flaky \gset
SELECT pgjobs.jobs_add('held', queue => 'held') AS held \gset
SELECT count(*) AS held_claimed FROM pgjobs.jobs_claim('w', ARRAY['held']);
SELECT count(*) AS flaky_failed FROM pgjobs.jobs_claim('w', ARRAY['flaky']) c, pgjobs.jobs_fail(c.id, c.lease_token, 'down');
SELECT pgjobs.jobs_add_sql('SELECT 1', run_at => now() + interval '1 day') AS sql_job \gset
RESET ROLE;
SELECT pgjobs.jobs_add('theirs', queue => 'later', run_at => now() + interval '1 day') AS theirs \gset
UPDATE pgjobs.jobs SET owner = 'regress_rescheduler_other'::regrole, claimable_by = 'regress_rescheduler_other'::regrole
WHERE id = :theirs;
SET ROLE regress_rescheduler;

-- Run now: the job waiting for its time and the one waiting for its next attempt; their first due
-- time kept. The claim of the ready job before leaves the queue's claims past it; the job made
-- due is still found.
SELECT id = :ready AS ready_claimed FROM pgjobs.jobs_claim('w', ARRAY['later']);
SELECT count(*) AS nothing_more FROM pgjobs.jobs_claim('w', ARRAY['later']);
SELECT due_at AS first_due FROM pgjobs.jobs WHERE id = :tomorrow \gset
SELECT id = :tomorrow AS tomorrow, id = :flaky AS flaky, due <= now() AS due_now
FROM pgjobs.jobs_reschedule(ARRAY[:tomorrow, :flaky]) ORDER BY id;
SELECT id = :tomorrow AS tomorrow_claimed, attempt FROM pgjobs.jobs_claim('w', ARRAY['later']);
SELECT due_at = :'first_due' AS first_due_kept FROM pgjobs.jobs WHERE id = :tomorrow;
SELECT id = :flaky AS flaky_claimed, attempt FROM pgjobs.jobs_claim('w', ARRAY['flaky']);

-- Another time: a job due earlier than where the last claims stopped (an hour ago) is found by
-- the next claim; one due later is not claimed before its time.
SELECT pgjobs.jobs_add('early', queue => 'early') AS early_1 \gset
SELECT pgjobs.jobs_add('early', queue => 'early', run_at => now() + interval '1 day') AS early_2 \gset
SELECT id = :early_1 AS first_claimed FROM pgjobs.jobs_claim('w', ARRAY['early']);
SELECT id = :early_2 AS moved, due = now() - interval '1 hour' AS an_hour_ago
FROM pgjobs.jobs_reschedule(ARRAY[:early_2], now() - interval '1 hour');
SELECT id = :early_2 AS found_below_the_start FROM pgjobs.jobs_claim('w', ARRAY['early']);
SELECT pgjobs.jobs_add('postponed', queue => 'postponed') AS postponed \gset
SELECT due - now() AS postponed_by FROM pgjobs.jobs_reschedule(ARRAY[:postponed], now() + interval '2 hours');
SELECT count(*) AS not_before_its_time FROM pgjobs.jobs_claim('w', ARRAY['postponed']);

RESET ROLE;

-- Passed over: the leased job, the one waiting for its dependencies, the SQL job, another's, none.
SELECT regress.fingerprint() AS before \gset
SELECT regress.as_role('regress_rescheduler', format('SELECT count(*) FROM pgjobs.jobs_reschedule(ARRAY[%s, %s, %s, %s, 999999])',
                                                     :held, :after, :sql_job, :theirs)) AS moved;
SELECT regress.fingerprint() = :'before' AS unchanged;

-- Refused, nothing changed.
SELECT regress.fingerprint() AS before \gset
SELECT what, regexp_replace(regress.as_role('regress_rescheduler', call), 'not [A-Z][a-z]{2} .*', 'not <that time>') AS refused
FROM (VALUES
    ('no ids', 'SELECT count(*) FROM pgjobs.jobs_reschedule(''{}'')'),
    ('null ids', 'SELECT count(*) FROM pgjobs.jobs_reschedule(NULL)'),
    ('a null id', 'SELECT count(*) FROM pgjobs.jobs_reschedule(ARRAY[1, NULL])'),
    ('1001 ids', 'SELECT count(*) FROM pgjobs.jobs_reschedule(ARRAY(SELECT generate_series(1, 1001)::bigint))'),
    ('infinity', format('SELECT count(*) FROM pgjobs.jobs_reschedule(ARRAY[%s], ''infinity'')', :postponed)),
    ('-infinity', format('SELECT count(*) FROM pgjobs.jobs_reschedule(ARRAY[%s], ''-infinity'')', :postponed)),
    ('in 200 years', format('SELECT count(*) FROM pgjobs.jobs_reschedule(ARRAY[%s], now() + interval ''200 years'')', :postponed)),
    ('200 years ago', format('SELECT count(*) FROM pgjobs.jobs_reschedule(ARRAY[%s], now() - interval ''200 years'')', :postponed)))
    AS c(what, call);
SELECT regress.fingerprint() = :'before' AS unchanged;

-- The other identity moves its own job only; a superuser any.
SELECT regress.as_role('regress_rescheduler_other', format('SELECT count(*) FROM pgjobs.jobs_reschedule(ARRAY[%s, %s])', :theirs, :postponed)) AS other_moved;
SELECT id = :theirs AS theirs_due_now FROM pgjobs.jobs WHERE id IN (:theirs, :postponed) AND run_at <= now();
SELECT count(*) AS superuser_moved FROM pgjobs.jobs_reschedule(ARRAY[:postponed]);

SELECT regress.reset();
DELETE FROM pgjobs.job_runs;
DROP OWNED BY regress_rescheduler, regress_rescheduler_other;
DROP ROLE regress_rescheduler, regress_rescheduler_other;
