-- Routine schedules: definitions, their refusals (each changes nothing), the CSV form, and the
-- scheduler's rounds run by hand (_routines_tick), as a non-superuser owner.
SET TimeZone = 'UTC';
SELECT regress.reset();
CREATE ROLE regress_routines_owner IN ROLE pgjobs_user;
CREATE ROLE regress_routines_agent IN ROLE pgjobs_agent;
SELECT regress.as_role('regress_routines_agent', $$SELECT pgjobs.batch_register('ALPHA')$$) AS alpha;

CREATE FUNCTION regress.as_owner(statement text) RETURNS text
LANGUAGE sql AS $$ SELECT regress.as_role('regress_routines_owner', statement) $$;
-- Every row of every schedule, to show that a refused call changed nothing.
CREATE FUNCTION regress.routines_fingerprint() RETURNS text
LANGUAGE sql AS $$
    SELECT md5(concat_ws('|',
        (SELECT string_agg(d::text, ',' ORDER BY d.schedule_id, d.routine) FROM pgjobs.routine_definitions d),
        (SELECT string_agg(s.schedule || s.mode || s.operators::text, ',' ORDER BY s.schedule) FROM pgjobs.routine_schedules s)))
$$;

SELECT regress.as_owner($$SELECT pgjobs.routines_create('MASTER', 'Europe/Paris')::text$$) AS created;
SELECT regress.as_owner($$SELECT pgjobs.routines_put('MASTER', 'ana@ALPHA:Repo/load', 'LOAD', runtimes => '09:00, 13:30',
                                                      args => '--date today --password "s3 cret"')$$) AS routines;
SELECT regress.as_owner($$SELECT pgjobs.routines_put('MASTER', 'ana@ALPHA:Repo/report', 'LOAD', runtimes => '14:00',
                                                      dependencies => 'ana@ALPHA:Repo/load', command => 'python -m report')$$) AS routines;
SELECT regress.as_owner($$SELECT pgjobs.routines_put('MASTER', 'ana@ALPHA:SharedData.Feed', 'FEED', realtime => true)$$) AS routines;
SELECT schedule, routine, group_name, external, realtime, runtimes, args, dependencies, computer, seq, command
FROM pgjobs.routine_definition ORDER BY seq;
SELECT schedule, owner, time_zone, routines, mode, mode_by FROM pgjobs.routine_schedule_list;

-- Refusals: each names the problem, and nothing changes.
SELECT regress.routines_fingerprint() AS before \gset
SELECT case_, regress.as_owner(format($$SELECT regress.error_of(%L)$$, statement)) AS error
FROM (VALUES
    ('runtime 25:00', $$SELECT pgjobs.routines_put('MASTER', 'ana@ALPHA:Repo/x', runtimes => '25:00')$$),
    ('runtime 9h', $$SELECT pgjobs.routines_put('MASTER', 'ana@ALPHA:Repo/x', runtimes => '09:00,9h')$$),
    ('realtime with runtimes', $$SELECT pgjobs.routines_put('MASTER', 'ana@ALPHA:Repo/x', realtime => true, runtimes => '09:00')$$),
    ('bad name', $$SELECT pgjobs.routines_put('MASTER', 'Repo/x')$$),
    ('unclosed quote', $$SELECT pgjobs.routines_put('MASTER', 'ana@ALPHA:Repo/x', args => '--name "x')$$),
    ('unknown dependency', $$SELECT pgjobs.routines_put('MASTER', 'ana@ALPHA:Repo/x', dependencies => 'ana@ALPHA:Repo/nothing')$$),
    ('cycle', $$SELECT pgjobs.routines_put('MASTER', 'ana@ALPHA:Repo/load', runtimes => '09:00', dependencies => 'ana@ALPHA:Repo/report')$$),
    ('self', $$SELECT pgjobs.routines_put('MASTER', 'ana@ALPHA:Repo/load', dependencies => 'ana@ALPHA:Repo/load')$$),
    ('remove a dependency', $$SELECT pgjobs.routines_remove('MASTER', 'ana@ALPHA:Repo/load')$$),
    ('remove unknown', $$SELECT pgjobs.routines_remove('MASTER', 'ana@ALPHA:Repo/none')$$),
    ('bad schedule name', $$SELECT pgjobs.routines_put('MY SCHEDULE', 'ana@ALPHA:Repo/x')$$),
    ('bad time zone', $$SELECT pgjobs.routines_create('MASTER', 'Mars/Olympus')$$),
    ('bad mode', $$SELECT pgjobs.routines_set_mode('MASTER', 'off')$$),
    ('no such schedule', $$SELECT pgjobs.routines_export('NONE')$$),
    ('csv without command', $$SELECT pgjobs.routines_import('MASTER', E'routine,group,external,realtime,runtimes,args,dependencies,computer,seq\nana@ALPHA:Repo/x,,,,,,,,\n')$$),
    ('csv with a bad flag', $$SELECT pgjobs.routines_import('MASTER', E'routine,group,external,realtime,runtimes,args,dependencies,computer,seq,command\nana@ALPHA:Repo/x,,maybe,,,,,,,\n')$$),
    ('csv with 25:00', $$SELECT pgjobs.routines_import('MASTER', E'routine,group,external,realtime,runtimes,args,dependencies,computer,seq,command\nana@ALPHA:Repo/x,,,,25:00,,,,,\n')$$),
    ('bad level', $$SELECT pgjobs.routine_message('ana@ALPHA:Repo/load', 'fatal', 'x')$$),
    ('message for nothing', $$SELECT pgjobs.routine_message('ana@ALPHA:Repo/none', 'info', 'x')$$),
    ('group by colour', $$SELECT count(*) FROM pgjobs.routine_groups('colour')$$)
) AS c(case_, statement);
SELECT regress.routines_fingerprint() = :'before' AS nothing_changed;

-- Export, then import: the same definition.
SELECT regress.as_owner($$SELECT pgjobs.routines_export('MASTER')$$) AS csv \gset
SELECT :'csv' AS exported;
SELECT regress.as_owner(format($$SELECT pgjobs.routines_import('MASTER', %L)$$, :'csv')) AS imported;
SELECT regress.routines_fingerprint() = :'before' AS same_definition;
SELECT regress.as_owner($$SELECT pgjobs.routines_export('MASTER')$$) = :'csv' AS same_csv;
-- An import replaces: one routine left.
SELECT regress.as_owner($$SELECT pgjobs.routines_import('MASTER', E'routine,group,external,realtime,runtimes,args,dependencies,computer,seq,command\nana@ALPHA:Repo/only,ONLY,no,no,07:15,,,,,\n')$$) AS imported;
SELECT routine, runtimes, computer, seq FROM pgjobs.routine_definition;
SELECT regress.as_owner(format($$SELECT pgjobs.routines_import('MASTER', %L)$$, :'csv')) AS imported_again;

-- The scheduler's rounds, by hand, at 08:30 in Paris on 2 March 2026. In observe nothing is
-- sent and the status is still kept; in control what was due is started; the scheduler itself,
-- listed, is never commanded.
SELECT regress.as_owner($$SELECT asked FROM pgjobs.routines_set_mode('MASTER', 'observe')$$) AS mode;
SELECT regress.as_owner($$SELECT pgjobs.routines_put('MASTER', 'postgres@ALPHA:pg_jobs.scheduler', 'SCHED', realtime => true)$$) AS routines;
SELECT pgjobs._routines_tick('2026-03-02 07:30Z');
SELECT routine, status, commandable FROM pgjobs.routines_today ORDER BY seq;
SELECT count(*) AS jobs_posted FROM pgjobs.batch_jobs;
SELECT doing FROM pgjobs.routine_schedule_list;
SELECT regress.as_owner($$SELECT asked || ' by ' || asked_by FROM pgjobs.routines_set_mode('MASTER', 'control')$$) AS mode;
SELECT pgjobs._routines_tick('2026-03-02 07:30:10Z');
SELECT kind, routine, command, args, computer, owner FROM pgjobs.batch_jobs ORDER BY id;
SELECT routine, status, run_order IS NOT NULL AS started FROM pgjobs.routines_today ORDER BY seq;
SELECT routine, message, sender FROM pgjobs.routine_messages ORDER BY at;
-- A second round sends nothing again.
SELECT pgjobs._routines_tick('2026-03-02 07:30:20Z');
SELECT count(*) AS jobs_posted FROM pgjobs.batch_jobs;

-- At 09:00 the batch routine is due and started; the one that depends on it waits for it.
SELECT pgjobs._routines_tick('2026-03-02 08:00:30Z');
SELECT routine, status, waits_for FROM pgjobs.routines_today ORDER BY seq;
SELECT kind, routine, command, args FROM pgjobs.batch_jobs WHERE routine LIKE '%load';

-- Messages by SQL: the last one is the routine's.
SELECT regress.as_owner($$SELECT pgjobs.routine_message('ana@ALPHA:SharedData.Feed', 'warning', 'slow feed')::text$$) AS kept_for;
SELECT pgjobs._routines_tick('2026-03-02 08:00:40Z');
SELECT routine, last_message, last_level FROM pgjobs.routines_today WHERE routine LIKE '%Feed';

-- A person's commands: logged with who sent them; not for the scheduler.
SELECT regress.as_owner($$SELECT pgjobs.routine_stop('MASTER', 'ana@ALPHA:SharedData.Feed')$$) AS stop;
SELECT regress.as_owner($$SELECT pgjobs.routine_restart('MASTER', 'postgres@ALPHA:pg_jobs.scheduler')$$) AS restart_scheduler;
SELECT kind, routine FROM pgjobs.batch_jobs WHERE kind = 'kill';
SELECT message FROM pgjobs.routine_messages WHERE sender IS NOT NULL ORDER BY at;

-- Groups: the most pressing status, RUNNING when all of a group runs.
SELECT * FROM pgjobs.routine_groups('group');
SELECT group_key, routines FROM pgjobs.routine_groups('computer', realtime => true);

-- WAS RUNNING: a scheduler not heard of for pg_jobs.routines_stale_after.
SET pg_jobs.routines_stale_after = '1s';
SELECT pg_sleep(1.2);
SELECT DISTINCT status FROM pgjobs.routines_today;
SELECT doing, not_known FROM pgjobs.routine_schedule_list;
RESET pg_jobs.routines_stale_after;

-- A new day reads the definition again: an edit waits for it (or for routines_reload).
SELECT regress.as_owner($$SELECT pgjobs.routines_put('MASTER', 'ana@ALPHA:Repo/late', runtimes => '23:00')$$) AS routines;
SELECT pgjobs._routines_tick('2026-03-02 08:00:50Z');
SELECT count(*) AS today_before_reload FROM pgjobs.routines_today;
SELECT pgjobs._routines_tick('2026-03-03 07:30Z');
SELECT count(*) AS tomorrow FROM pgjobs.routines_today;
SELECT day FROM pgjobs.routine_schedule_list;
