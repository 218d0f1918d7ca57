-- A worker snoozes a job it holds (jobs_snooze: back to waiting until the delay has passed, the
-- attempt not counted, nothing logged) and records its progress (jobs_progress: a heartbeat that
-- keeps a JSON value the owner reads), as member roles. Refused, nothing changed: a token that
-- does not hold the lease, a job that was aborted, another identity's job (as one that does not
-- exist), a delay outside 0 to 1 year, progress over 8 kB, nulls.
SELECT regress.reset();
CREATE ROLE regress_napper IN ROLE pgjobs_user;
CREATE ROLE regress_napper_other IN ROLE pgjobs_user;
GRANT USAGE ON SCHEMA regress TO regress_napper, regress_napper_other;
SET ROLE regress_napper;
SELECT count(*) AS added FROM pgjobs.jobs_add_batch(
    '[{"task": "nap", "queue": "naps"}, {"task": "nap", "queue": "naps"}, {"task": "nap", "queue": "naps"}]');
CREATE TEMP TABLE held AS SELECT id, lease_token FROM pgjobs.jobs_claim('w', ARRAY['naps'], 2);
SELECT id AS a, lease_token AS a_token FROM held ORDER BY id LIMIT 1 \gset
SELECT id AS b, lease_token AS b_token FROM held ORDER BY id OFFSET 1 \gset

-- Progress: the lease is renewed and the owner reads the value in jobs.progress.
SELECT lease_state, locked_until > now() AS renewed
FROM pgjobs.jobs_progress(:a, :'a_token', '{"done": 3, "of": 10}');
SELECT id = :a AS job_a, progress FROM pgjobs.jobs WHERE progress IS NOT NULL;
-- With another token: lost, as a heartbeat answers (nothing changed).
SELECT lease_state FROM pgjobs.jobs_progress(:a, gen_random_uuid(), '{"done": 4}');
SELECT progress FROM pgjobs.jobs WHERE id = :a;

-- Snoozed for an hour: waiting again, due then, its attempt not counted, its lease and progress
-- gone; the next claim takes the third job instead.
SELECT due - now() BETWEEN interval '59 minutes' AND interval '61 minutes' AS due_in_an_hour
FROM pgjobs.jobs_snooze(:a, :'a_token', '1 hour') due;
SELECT status, attempt, lease_token IS NULL AS no_lease, locked_until, progress, errors
FROM pgjobs.jobs WHERE id = :a;
SELECT id = :a AS snoozed_one_claimed FROM pgjobs.jobs_claim('w', ARRAY['naps']);
-- Snoozed for no time: due now, claimed again as its first attempt.
SELECT due <= now() AS due_now FROM pgjobs.jobs_snooze(:b, :'b_token', '0') due;
SELECT id = :b AS claimed_again, attempt FROM pgjobs.jobs_claim('w', ARRAY['naps']);
RESET ROLE;

-- Refused, nothing changed.
SELECT lease_token AS b_token FROM pgjobs.jobs WHERE id = :b \gset
SELECT regress.fingerprint() AS before \gset
SELECT what, regexp_replace(regress.as_role(role, format(call, :a, :'a_token', :b, :'b_token')), 'job [0-9]+', 'job N') AS refused
FROM (VALUES
    ('another lease''s token', 'regress_napper', 'SELECT pgjobs.jobs_snooze(%3$s, %2$L, ''1 minute'')'),
    ('a waiting job', 'regress_napper', 'SELECT pgjobs.jobs_snooze(%1$s, %2$L, ''1 minute'')'),
    ('another''s job', 'regress_napper_other', 'SELECT pgjobs.jobs_snooze(%3$s, %4$L, ''1 minute'')'),
    ('no such job', 'regress_napper', 'SELECT pgjobs.jobs_snooze(999999, %4$L, ''1 minute'')'),
    ('a negative delay', 'regress_napper', 'SELECT pgjobs.jobs_snooze(%3$s, %4$L, ''-1 second'')'),
    ('a delay over a year', 'regress_napper', 'SELECT pgjobs.jobs_snooze(%3$s, %4$L, ''13 months'')'),
    ('a null delay', 'regress_napper', 'SELECT pgjobs.jobs_snooze(%3$s, %4$L, NULL)'),
    ('a null token', 'regress_napper', 'SELECT pgjobs.jobs_snooze(%3$s, NULL, ''1 minute'')'),
    ('progress of another''s job', 'regress_napper_other', 'SELECT lease_state FROM pgjobs.jobs_progress(%3$s, %4$L, ''{}'')'),
    ('progress over 8 kB', 'regress_napper', 'SELECT lease_state FROM pgjobs.jobs_progress(%3$s, %4$L, jsonb_build_object(''log'', repeat(''x'', 8200)))'),
    ('null progress', 'regress_napper', 'SELECT lease_state FROM pgjobs.jobs_progress(%3$s, %4$L, NULL)'),
    ('progress with a lease of 0', 'regress_napper', 'SELECT lease_state FROM pgjobs.jobs_progress(%3$s, %4$L, ''{}'', ''0'')'))
    AS c(what, role, call);
SELECT regress.fingerprint() = :'before' AS unchanged;

-- An aborted job is not snoozed: its worker is told, as a completion would be; its progress is
-- kept (the lease is not renewed, as for a heartbeat).
SET ROLE regress_napper;
SELECT pgjobs.jobs_abort(:b) AS abort;
SELECT regexp_replace(regress.error_of(format('SELECT pgjobs.jobs_snooze(%s, %L, ''1 minute'')', :b, :'b_token')), 'job [0-9]+', 'job N') AS refused;
SELECT lease_state FROM pgjobs.jobs_progress(:b, :'b_token', '{"stopping": true}');
SELECT status, progress FROM pgjobs.jobs WHERE id = :b;
RESET ROLE;

DROP TABLE held;
SELECT regress.reset();
DROP OWNED BY regress_napper, regress_napper_other;
DROP ROLE regress_napper, regress_napper_other;
