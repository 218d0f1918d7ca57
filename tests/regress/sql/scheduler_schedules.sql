-- Cron schedules: the API, its checks, and firing driven at chosen times (the launcher calls
-- the same _fire_schedules; it is not running in this database).
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.schedules;

SELECT pgjobs.jobs_schedule('report', '*/15 * * * *', '{"task": "report", "payload": {"kind": "daily"}}') AS id;
SELECT pgjobs.jobs_schedule('vacuum', '0 3 * * SUN', '{"sql": "VACUUM"}', '{"time_zone": "Europe/Berlin", "missed": "once"}') AS id;
SELECT name, owner, schedule, time_zone, work, missed, enabled, next_slot > last_slot AS next_is_later
FROM pgjobs.jobs_schedules ORDER BY name;

-- Firing at chosen times: each slot once, with the key scheduled_job:<id>:<slot>.
UPDATE pgjobs.schedules SET last_slot = '2026-01-01 00:00Z', next_slot = '2026-01-01 00:15Z' WHERE name = 'report';
SELECT pgjobs._fire_schedules('2026-01-01 00:15:00.2Z') AS fired;
SELECT pgjobs._fire_schedules('2026-01-01 00:15:00.4Z') AS fired_again;
-- A second scheduler that missed the update fires the same slot again: the key makes its add a
-- no-op, and the slot still has one job.
UPDATE pgjobs.schedules SET last_slot = '2026-01-01 00:00Z', next_slot = '2026-01-01 00:15Z' WHERE name = 'report';
SELECT pgjobs._fire_schedules('2026-01-01 00:15:00.6Z') AS fired_by_second;
SELECT id, task, payload, run_at, idempotency_key FROM pgjobs.job_list ORDER BY id;
SELECT name, last_slot, next_slot, last_job_id FROM pgjobs.jobs_schedules WHERE name = 'report';

-- Missed slots. skip: slots older than pg_jobs.refresh_interval (10 s) are passed over.
SELECT regress.reset();
UPDATE pgjobs.schedules SET last_slot = '2026-01-01 00:00Z', next_slot = '2026-01-01 00:15Z' WHERE name = 'report';
SELECT pgjobs._fire_schedules('2026-01-01 01:20Z') AS fired_skip;
SELECT pgjobs._fire_schedules('2026-01-01 01:30:03Z') AS fired_on_time;
SELECT run_at FROM pgjobs.job_list ORDER BY run_at;
-- once: one catch-up run for the latest missed slot.
SELECT regress.reset();
SELECT pgjobs.jobs_alter_schedule('report', options => '{"missed": "once"}');
UPDATE pgjobs.schedules SET last_slot = '2026-01-01 00:00Z', next_slot = '2026-01-01 00:15Z' WHERE name = 'report';
SELECT pgjobs._fire_schedules('2026-01-01 01:20Z') AS fired_once;
SELECT run_at FROM pgjobs.job_list ORDER BY run_at;
-- all: every missed slot, the latest max_catch_up of them.
SELECT regress.reset();
SELECT pgjobs.jobs_alter_schedule('report', options => '{"missed": "all", "max_catch_up": 3}');
UPDATE pgjobs.schedules SET last_slot = '2026-01-01 00:00Z', next_slot = '2026-01-01 00:15Z' WHERE name = 'report';
SELECT pgjobs._fire_schedules('2026-01-01 01:20Z') AS fired_all;
SELECT run_at FROM pgjobs.job_list ORDER BY run_at;

-- The launcher's round fires a slot 0.25 s ahead of it, its job due at the slot (run_at), so
-- that the job is committed and claimable when the slot comes: 0.3 s before, nothing.
SELECT regress.reset();
SELECT date_bin('15 minutes', now(), '2000-01-01') + interval '15 minutes' AS slot \gset
UPDATE pgjobs.schedules SET last_slot = :'slot'::timestamptz - interval '15 minutes', next_slot = :'slot'
WHERE name = 'report';
SELECT pgjobs._launcher_tick(:'slot'::timestamptz - interval '0.3 seconds') IS NOT NULL AS round_too_early;
SELECT count(*) AS jobs FROM pgjobs.job_list;
SELECT pgjobs._launcher_tick(:'slot'::timestamptz - interval '0.2 seconds') IS NOT NULL AS round_ahead;
SELECT run_at = :'slot' AS due_at_the_slot, status FROM pgjobs.job_list;
SELECT last_slot = :'slot' AS fired, next_slot = :'slot'::timestamptz + interval '15 minutes' AS next
FROM pgjobs.jobs_schedules WHERE name = 'report';

-- Disabled schedules do not fire; enabling starts from where it stood.
SELECT regress.reset();
SELECT pgjobs.jobs_disable_schedule('report');
SELECT pgjobs._fire_schedules('2026-01-01 02:00:01Z') AS fired_disabled;
SELECT pgjobs.jobs_enable_schedule('report');
SELECT enabled FROM pgjobs.jobs_schedules WHERE name = 'report';

-- SQL work becomes a SQL job in the reserved queue, owned by the schedule's owner.
UPDATE pgjobs.schedules SET last_slot = '2026-03-01 01:00Z', next_slot = '2026-03-01 02:00Z' WHERE name = 'vacuum';
SELECT pgjobs._fire_schedules('2026-03-01 02:00:01Z') AS fired_sql;
SELECT task, queue, payload, owner FROM pgjobs.job_list WHERE queue = 'pg_jobs.sql';

-- Time zones: 03:00 on Sundays in Berlin is 02:00 UTC in winter and 01:00 UTC in summer.
SELECT pgjobs.schedule_next_slot('0 3 * * SUN', 'Europe/Berlin', '2026-03-20Z') AS winter,
       pgjobs.schedule_next_slot('0 3 * * SUN', 'Europe/Berlin', '2026-03-30Z') AS summer;
-- A local time skipped by the spring change fires once, right after the gap.
SELECT pgjobs.schedule_next_slot('30 2 * * *', 'Europe/Berlin', '2026-03-28 12:00Z') AS in_the_gap;

-- A broken schedule (here: its job cannot be added) records its error and the others still fire.
SELECT regress.reset();
SELECT pgjobs.jobs_schedule('other', 'every 10 seconds', '{"task": "other"}');
UPDATE pgjobs.schedules SET work = '{"task": ""}', last_slot = '2026-01-01 00:00Z', next_slot = '2026-01-01 00:15Z' WHERE name = 'report';
UPDATE pgjobs.schedules SET last_slot = '2026-01-01 00:14:50Z', next_slot = '2026-01-01 00:15Z' WHERE name = 'other';
SELECT pgjobs._fire_schedules('2026-01-01 00:15:01Z') AS fired;
SELECT name, last_error FROM pgjobs.jobs_schedules WHERE name IN ('report', 'other') ORDER BY name;
SELECT task, run_at FROM pgjobs.job_list;
-- A schedule whose slots cannot be computed at all (here a time zone broken by hand, as only a
-- superuser could) failed the statement that fires every schedule, and with it every round of
-- the launcher: now it records its error, is tried again after pg_jobs.refresh_interval, and
-- the others fire.
SELECT regress.reset();
UPDATE pgjobs.schedules SET work = '{"task": "report"}', time_zone = 'Nowhere/Atlantis',
       last_slot = '2026-01-01 00:00Z', next_slot = '2026-01-01 00:15Z' WHERE name = 'report';
UPDATE pgjobs.schedules SET last_slot = '2026-01-01 00:14:50Z', next_slot = '2026-01-01 00:15Z' WHERE name = 'other';
SELECT pgjobs._fire_schedules('2026-01-01 00:15:01Z') AS fired;
SELECT name, last_error, last_slot, next_slot FROM pgjobs.jobs_schedules WHERE name IN ('report', 'other') ORDER BY name;
SELECT task, run_at FROM pgjobs.job_list;
SELECT pgjobs._launcher_tick('2026-01-01 00:15:20Z') IS NOT NULL AS round_ends;
SELECT name, last_error, next_slot FROM pgjobs.jobs_schedules WHERE name IN ('report', 'other') ORDER BY name;
UPDATE pgjobs.schedules SET time_zone = 'UTC' WHERE name = 'report';

-- Bad input: SQLSTATE, message, nothing changed.
SELECT regress.fingerprint() AS before \gset
SELECT count(*) AS schedules FROM pgjobs.schedules \gset
SELECT statement, regress.error_of(statement) AS error FROM (VALUES
    ('SELECT pgjobs.jobs_schedule(''bad'', ''61 * * * *'', ''{"task": "t"}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''* * *'', ''{"task": "t"}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''0 0 * * FUNDAY'', ''{"task": "t"}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''every 5 fortnights'', ''{"task": "t"}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''@hourly'', ''{"task": "t"}'', ''{"time_zone": "Mars/Olympus"}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''@hourly'', ''{"task": "t", "sql": "SELECT 1"}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''@hourly'', ''{"job": "t"}'')'),
    -- SQL that is not text: a SQL job of null statements once made every executor exit at its
    -- claim, for every identity's SQL jobs, each time it was claimed again.
    ('SELECT pgjobs.jobs_schedule(''bad'', ''@hourly'', ''{"sql": null}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''@hourly'', ''{"sql": 5}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''@hourly'', ''{"sql": " "}'')'),
    ('SELECT pgjobs.jobs_alter_schedule(''report'', work => ''{"sql": null}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''@hourly'', ''{"task": "t"}'', ''{"mised": "all"}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''@hourly'', ''{"task": "t"}'', ''{"missed": "some"}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''* * * * * *'', ''{"task": "t"}'', ''{"max_catch_up": 2147483647}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''@hourly'', ''{"task": "t"}'', ''{"max_catch_up": 0}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''@hourly'', ''{"task": "t"}'', ''{"max_catch_up": 2.5}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''@hourly'', ''{"task": "t"}'', ''{"enabled": "yes"}'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''@hourly'', ''{"sql": "SELECT 1"}'', ''{"timeout": "30 days"}'')'),
    ('SELECT pgjobs.jobs_alter_schedule(''report'', options => ''{"max_catch_up": 1001}'')'),
    ('SELECT pgjobs.jobs_add_sql(''SELECT 1'', timeout => ''25 days'')'),
    ('SELECT pgjobs.jobs_schedule(''bad'', ''@hourly'', ''{"task": "t", "queue": "pg_jobs.sql"}'')'),
    ('SELECT pgjobs.jobs_schedule(''report'', ''@hourly'', ''{"task": "t"}'')'),
    ('SELECT pgjobs.jobs_schedule(NULL, ''@hourly'', ''{"task": "t"}'')'),
    ('SELECT pgjobs.jobs_alter_schedule(''nope'', ''@daily'')'),
    ('SELECT pgjobs.jobs_alter_schedule(''report'', ''@dailyish'')'),
    ('SELECT pgjobs.jobs_unschedule(''nope'')'),
    ('SELECT pgjobs.jobs_add_sql('''')'),
    ('SELECT pgjobs.jobs_add_sql(''SELECT 1'', timeout => ''0 seconds'')'),
    ('SELECT pgjobs.jobs_add(''t'', queue => ''pg_jobs.sql'')'),
    ('SELECT pgjobs.jobs_claim(''w'', ARRAY[''pg_jobs.sql''])')
) AS t(statement);
SELECT regress.fingerprint() = :'before' AS unchanged, count(*) = :schedules AS same_schedules FROM pgjobs.schedules;

-- A launcher round whose service fails (here the routines' scheduler, its table renamed away)
-- warns and goes on with every other service: the schedule due fires, and the round says when
-- to come back.
SELECT regress.reset();
BEGIN;
ALTER TABLE pgjobs.routine_schedules RENAME TO routine_schedules_away;
UPDATE pgjobs.schedules SET last_slot = '2026-01-01 00:14:50Z', next_slot = '2026-01-01 00:15Z' WHERE name = 'other';
SELECT pgjobs._launcher_tick('2026-01-01 00:15:01Z') IS NOT NULL AS round_ends;
SELECT task, run_at FROM pgjobs.job_list;
ROLLBACK;

-- Run now (jobs_run_schedule), as members: the schedule's job is added at once, also while the
-- schedule is disabled, with the key of this second's slot (so twice in one statement is one
-- job), and becomes its last job; a SQL schedule's goes to the SQL queue; its slots go on as they
-- were. Another identity's schedule is as missing as one that never was; a role outside
-- pgjobs_user may not call it.
SELECT regress.reset();
CREATE ROLE regress_runner;
CREATE ROLE regress_run_other;
CREATE ROLE regress_run_stranger;
GRANT pgjobs_user TO regress_runner, regress_run_other;
SELECT regress.as_role('regress_runner', $$
    SELECT pgjobs.jobs_schedule('manual', '0 3 * * *', '{"task": "nightly", "payload": {"n": 1}}', '{"enabled": false}') IS NOT NULL
       AND pgjobs.jobs_schedule('sql_manual', '0 3 * * *', '{"sql": "SELECT 1"}') IS NOT NULL$$) AS scheduled;
SELECT next_slot AS manual_next FROM pgjobs.schedules WHERE name = 'manual' \gset
SELECT regress.as_role('regress_runner', $$SELECT pgjobs.jobs_run_schedule('manual') = pgjobs.jobs_run_schedule('manual')$$) AS one_job;
SELECT task, payload, queue, status, starts_with(idempotency_key, 'scheduled_job:' || s.id || ':') AS slot_key,
       run_at <= now() AS due, s.last_job_id = l.id AS last_job, s.next_slot = :'manual_next' AS slots_unchanged
FROM pgjobs.job_list l, pgjobs.schedules s WHERE s.name = 'manual' AND l.task = 'nightly';
SELECT regress.as_role('regress_runner', $$SELECT pgjobs.jobs_run_schedule('sql_manual') IS NOT NULL$$) AS sql_run;
SELECT task, queue, payload ->> 'sql' AS sql FROM pgjobs.job_list WHERE queue = 'pg_jobs.sql';
-- A task's payload is any JSON, as jobs_add takes it (the work is read by its keys alone): nested
-- 200 deep and holding 1e1000, its job gets it as given.
SELECT regress.as_role('regress_runner', $$
    SELECT pgjobs.jobs_schedule('deep', '0 3 * * *', jsonb_build_object('task', 'deep', 'payload',
               ('{"n": 1e1000, "deep": ' || repeat('[', 200) || repeat(']', 200) || '}')::jsonb)) IS NOT NULL
       AND pgjobs.jobs_run_schedule('deep') IS NOT NULL$$) AS deep_run;
SELECT payload = ('{"n": 1e1000, "deep": ' || repeat('[', 200) || repeat(']', 200) || '}')::jsonb AS payload_as_given
FROM pgjobs.job_list WHERE task = 'deep';
SELECT regress.fingerprint() AS before \gset
SELECT role, regress.as_role(role, statement) AS result
FROM (VALUES ('regress_run_other'), ('regress_run_stranger')) AS r(role),
     (VALUES ($$SELECT pgjobs.jobs_run_schedule('manual')$$)) AS t(statement)
UNION ALL
SELECT 'regress_runner', regress.as_role('regress_runner', statement)
FROM (VALUES ($$SELECT pgjobs.jobs_run_schedule('nope')$$), ($$SELECT pgjobs.jobs_run_schedule(NULL)$$)) AS t(statement);
SELECT regress.fingerprint() = :'before' AS unchanged;
SELECT regress.as_role('regress_runner', $$SELECT pgjobs.jobs_unschedule('manual')::text || pgjobs.jobs_unschedule('sql_manual')::text || pgjobs.jobs_unschedule('deep')::text$$) AS unscheduled;
DROP ROLE regress_runner, regress_run_other, regress_run_stranger;
SELECT regress.reset();

SELECT pgjobs.jobs_unschedule('report'), pgjobs.jobs_unschedule('vacuum'), pgjobs.jobs_unschedule('other');
SELECT count(*) AS left FROM pgjobs.schedules;
