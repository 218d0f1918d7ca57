-- The access model of routine schedules, cell by cell, as non-superuser roles: the owner, a
-- member of a role the owner granted (an operator), another member of pgjobs_user, and a role
-- in no group. Others see nothing of a schedule; only the owner edits it; the owner and
-- operators command it; operators read arguments, commands and output masked only; a schedule
-- is granted only to a role the granter is a member of; names are each owner's.
SET TimeZone = 'UTC';
SELECT regress.reset();
CREATE ROLE regress_rt_ops;
CREATE ROLE regress_rt_owner IN ROLE pgjobs_user, regress_rt_ops;
CREATE ROLE regress_rt_operator IN ROLE pgjobs_user, regress_rt_ops;
CREATE ROLE regress_rt_other IN ROLE pgjobs_user;
CREATE ROLE regress_rt_nobody;
CREATE ROLE regress_rt_agent IN ROLE pgjobs_agent;
SELECT regress.as_role('regress_rt_agent', $$SELECT pgjobs.batch_register('BETA')$$) AS beta;

SELECT regress.as_role('regress_rt_owner', $$SELECT pgjobs.routines_put('OPS', 'ana@BETA:Repo/load', 'LOAD', runtimes => '09:00',
    args => '--user ana --password ALICESECRET', command => 'psql postgresql://ana:ALICESECRET@db/app -f load.sql')$$) AS routines;
SELECT regress.as_role('regress_rt_owner', $$SELECT pgjobs.routines_put('OPS', 'ana@BETA:Repo/feed', 'FEED', realtime => true)$$) AS routines;
SELECT regress.as_role('regress_rt_owner', $$SELECT pgjobs.routines_grant('OPS', 'regress_rt_ops')::text$$) AS granted;
SELECT regress.as_role('regress_rt_other', $$SELECT pgjobs.routines_put('THEIRS', 'bob@BETA:Repo/x', runtimes => '10:00')$$) AS routines;
SELECT pgjobs._routines_tick('2026-03-02 07:00Z');

-- Reading: owner and operator see OPS, the other role its own schedule, nobody nothing.
SELECT role, object,
       regress.as_role(role, format('SELECT coalesce(string_agg(DISTINCT x::text, '',''), ''nothing'') FROM (SELECT %s AS x FROM pgjobs.%s) r', key, object)) AS sees
FROM (VALUES ('regress_rt_owner'), ('regress_rt_operator'), ('regress_rt_other'), ('regress_rt_nobody')) AS r(role),
     (VALUES ('routines_today', 'schedule'), ('routines_realtime', 'schedule'), ('routines_batch', 'schedule'),
             ('routine_schedule_list', 'schedule'), ('routine_definition', 'schedule'), ('routine_messages', 'schedule'),
             ('routine_schedules', 'schedule'),
             ('routine_definitions', '(SELECT s.schedule FROM pgjobs.routine_schedules s WHERE s.id = schedule_id)'),
             ('routine_days', '(SELECT s.schedule FROM pgjobs.routine_schedules s WHERE s.id = schedule_id)'),
             ('routine_log', '(SELECT s.schedule FROM pgjobs.routine_schedules s WHERE s.id = schedule_id)'),
             ('routine_groups(''schedule'')', 'group_key')) AS o(object, key)
ORDER BY object, role;

-- Secrets: the owner's routine says a password in its output and in a message. The operator
-- reads every table and view that holds arguments, commands, output lines or messages: each
-- refuses (the columns as written are not granted) or shows them masked; so does the owner,
-- who reads its own as written with routines_export, which the operator may not call.
SELECT regress.as_role('regress_rt_owner', $$SELECT pgjobs.routine_restart('OPS', 'ana@BETA:Repo/load')$$) AS started;
SELECT id AS run FROM pgjobs.batch_jobs WHERE routine = 'ana@BETA:Repo/load' AND kind = 'routine' \gset
SELECT regress.as_role('regress_rt_agent', $$SELECT string_agg(args::text, ',') FROM pgjobs.batch_claim('BETA', 5) WHERE routine LIKE '%load'$$) AS agent_reads_as_written;
SELECT regress.as_role('regress_rt_agent', format($$SELECT pgjobs.batch_finish(%s, %L, 2, '1 second', 'psql: password=ALICESECRET refused')$$, :run, regress.token(:run))) AS finished;
SELECT regress.as_role('regress_rt_owner', $$SELECT pgjobs.routine_message('ana@BETA:Repo/feed', 'error', 'login with --password ALICESECRET failed')::text$$) AS said;
SELECT pgjobs._routines_tick('2026-03-02 07:00:10Z');
SELECT role, object, column_,
       regress.as_role(role, format('SELECT coalesce(string_agg(DISTINCT x, '' | ''), ''no rows'') FROM (SELECT (%s)::text AS x FROM pgjobs.%s t) r', column_, object)) AS shows
FROM (VALUES ('regress_rt_owner'), ('regress_rt_operator')) AS r(role),
     (VALUES ('routine_definitions', 'args'), ('routine_definitions', 'command'), ('routine_definitions', 't'),
             ('routine_definitions', 'args_shown'), ('routine_definitions', 'command_shown'),
             ('routine_days', 'args'), ('routine_days', 'command'), ('routine_days', 't'),
             ('routine_days', 'args_shown'), ('routine_days', 'command_shown'), ('routine_days', 'last_message'),
             ('routine_log', 'message'), ('routine_definition', 'args'), ('routine_definition', 'command'),
             ('routines_today', 'args'), ('routines_today', 'last_message'), ('routines_realtime', 'last_message'),
             ('routines_batch', 'args'), ('routines_batch', 'last_message'), ('routine_messages', 'message'),
             ('batch_jobs', 'args'), ('batch_jobs', 'stderr'),
             ('batch_jobs', 'error'), ('job_list', 'payload -> ''args''')) AS o(object, column_)
ORDER BY object, column_, role;
SELECT regress.as_role('regress_rt_owner', $$SELECT pgjobs.routines_export('OPS')$$) LIKE '%ALICESECRET%ALICESECRET%' AS owner_exports_as_written;
SELECT regress.as_role('regress_rt_operator', $$SELECT pgjobs.routines_export('OPS')$$) AS operator_export;

-- Every call, by every role: allowed cells and denied ones, with the SQLSTATE of each refusal.
-- (Each statement runs in the state the ones before it left.) The edits name the owner's
-- schedule as OWNER/NAME: a plain name is the caller's own (see below).
SELECT call, role, regress.as_role(role, statement) AS result
FROM (VALUES (1, 'mode', $$SELECT asked FROM pgjobs.routines_mode('OPS')$$),
             (2, 'set mode', $$SELECT asked FROM pgjobs.routines_set_mode('OPS', 'observe')$$),
             (3, 'restart', $$SELECT pgjobs.routine_restart('OPS', 'ana@BETA:Repo/load')$$),
             (4, 'stop', $$SELECT pgjobs.routine_stop('OPS', 'ana@BETA:Repo/load')$$),
             (5, 'message', $$SELECT pgjobs.routine_message('ana@BETA:Repo/load', 'info', 'hello')::text$$),
             (6, 'reload', $$SELECT pgjobs.routines_reload('OPS')::text$$),
             (7, 'export', $$SELECT length(pgjobs.routines_export('regress_rt_owner/OPS'))::text$$),
             (8, 'put', $$SELECT pgjobs.routines_put('regress_rt_owner/OPS', 'ana@BETA:Repo/more')::text$$),
             (9, 'remove', $$SELECT pgjobs.routines_remove('regress_rt_owner/OPS', 'ana@BETA:Repo/feed')::text$$),
             (10, 'import', $$SELECT pgjobs.routines_import('regress_rt_owner/OPS', E'routine,group,external,realtime,runtimes,args,dependencies,computer,seq,command\n')::text$$),
             (11, 'grant', $$SELECT pgjobs.routines_grant('regress_rt_owner/OPS', 'regress_rt_other')::text$$),
             (12, 'write state', $$UPDATE pgjobs.routine_days SET status = 'completed' RETURNING routine$$),
             (13, 'write switch', $$UPDATE pgjobs.routine_schedules SET mode = 'control' RETURNING schedule$$),
             (14, 'write log', $$INSERT INTO pgjobs.routine_log (schedule_id, routine, level, message) VALUES (1, 'x', 'info', 'x') RETURNING id$$),
             (15, 'drop', $$SELECT pgjobs.routines_drop('regress_rt_owner/OPS')::text$$)) AS c(n, call, statement),
     (VALUES (1, 'regress_rt_nobody'), (2, 'regress_rt_other'), (3, 'regress_rt_operator')) AS r(m, role)
ORDER BY c.n, r.m;

-- The operator's commands are logged with its name; the owner's switch was the operator's.
SELECT message FROM pgjobs.routine_messages WHERE schedule = 'OPS' ORDER BY at;
SET ROLE regress_rt_owner;
SELECT asked, asked_by FROM pgjobs.routines_mode('OPS');
RESET ROLE;
-- The runs are the owner's batch jobs, which only the owner reads.
SELECT kind, routine, owner FROM pgjobs.batch_jobs ORDER BY id;
SELECT role, regress.as_role(role, $$SELECT count(*)::text FROM pgjobs.batch_jobs$$) AS batch_jobs_seen
FROM (VALUES ('regress_rt_owner'), ('regress_rt_operator')) AS r(role);

-- A grant is only to a role the granter is a member of, and not to the extension's roles: the
-- other role may not put its schedule on the owner's page, nor on the operators', nor on
-- everyone's.
SELECT role_, regress.as_role('regress_rt_other', format($$SELECT regress.error_of(%L)$$,
                                                         format('SELECT pgjobs.routines_grant(%L, %L)', 'THEIRS', role_))) AS grant_
FROM (VALUES ('regress_rt_owner'), ('regress_rt_ops'), ('pgjobs_user'), ('pgjobs_agent')) AS g(role_);
SELECT regress.as_role('regress_rt_other', $$SELECT operators::text FROM pgjobs.routine_schedule_list WHERE schedule = 'THEIRS'$$) AS theirs_granted_to;
SELECT regress.as_role('regress_rt_owner', $$SELECT string_agg(schedule, ',') FROM pgjobs.routine_schedule_list$$) AS owner_page;

-- Names are each owner's: the other role makes a schedule OPS of its own, and every function
-- acts on the caller's own; OWNER/NAME names a schedule granted to the caller, and another's
-- that is not is not found.
SELECT regress.as_role('regress_rt_other', statement) AS other_acts
FROM (VALUES (1, $$SELECT pgjobs.routines_create('OPS', 'Asia/Tokyo')::text$$),
             (2, $$SELECT pgjobs.routines_put('OPS', 'bob@BETA:Repo/mine', realtime => true)::text$$),
             (3, $$SELECT pgjobs.routines_import('OPS', E'routine,group,external,realtime,runtimes,args,dependencies,computer,seq,command\nbob@BETA:Repo/mine,MINE,false,true,,--token BOBSECRET,,,,\n')::text$$),
             (4, $$SELECT pgjobs.routines_export('OPS')$$),
             (5, $$SELECT asked FROM pgjobs.routines_set_mode('OPS', 'control')$$),
             (6, $$SELECT pgjobs.routines_reload('OPS')::text$$),
             (7, $$SELECT asked FROM pgjobs.routines_mode('OPS')$$),
             (8, $$SELECT string_agg(schedule || ' ' || owner || ' ' || time_zone, ',') FROM pgjobs.routine_schedule_list$$),
             (9, $$SELECT pgjobs.routine_restart('OPS', 'ana@BETA:Repo/load')$$),
             (10, $$SELECT asked FROM pgjobs.routines_mode('regress_rt_owner/OPS')$$),
             (11, $$SELECT pgjobs.routines_drop('regress_rt_owner/OPS')::text$$),
             (12, $$SELECT pgjobs.routines_put('OTHER/NAME', 'bob@BETA:Repo/x')::text$$),
             (13, $$SELECT pgjobs.routines_remove('OPS', 'ana@BETA:Repo/load')::text$$)) AS c(n, statement)
ORDER BY n;
SELECT pgjobs._routines_tick('2026-03-02 07:00:20Z');
SELECT s.owner::regrole, s.schedule, s.time_zone, s.mode, s.operators::regrole[]::text AS operators,
       (SELECT string_agg(d.routine, ',' ORDER BY d.routine) FROM pgjobs.routine_definitions d WHERE d.schedule_id = s.id) AS routines
FROM pgjobs.routine_schedules s WHERE s.owner::regrole::text LIKE 'regress_rt%' ORDER BY s.owner::regrole::text, s.schedule;
SELECT regress.as_role('regress_rt_owner', $$SELECT string_agg(schedule || ' ' || routine, ',' ORDER BY routine) FROM pgjobs.routines_today$$) AS owner_today;
SELECT regress.as_role('regress_rt_owner', $$SELECT asked FROM pgjobs.routines_mode('OPS')$$) AS owner_mode;

-- Two schedules of one name granted to the operator (a teammate's too): a plain name is
-- ambiguous, OWNER/NAME is not, and the operator's own schedule of that name comes first.
CREATE ROLE regress_rt_teammate IN ROLE pgjobs_user, regress_rt_ops;
SELECT regress.as_role('regress_rt_teammate', $$SELECT pgjobs.routines_put('OPS', 'tea@BETA:Repo/t')::text$$) AS teammate_routines;
SELECT regress.as_role('regress_rt_teammate', $$SELECT pgjobs.routines_grant('OPS', 'regress_rt_ops')::text$$) AS teammate_granted;
SELECT regress.as_role('regress_rt_operator', statement) AS operator_acts
FROM (VALUES (1, $$SELECT regress.error_of('SELECT pgjobs.routines_mode(''OPS'')')$$),
             (2, $$SELECT asked FROM pgjobs.routines_set_mode('regress_rt_teammate/OPS', 'observe')$$),
             (3, $$SELECT string_agg(schedule || ' ' || owner || ' ' || mode, ',' ORDER BY owner::text) FROM pgjobs.routine_schedule_list$$),
             (4, $$SELECT pgjobs.routines_create('OPS')::text$$)) AS c(n, statement)
ORDER BY n;
SELECT regress.as_role('regress_rt_operator', $$SELECT asked FROM pgjobs.routines_set_mode('OPS', 'control')$$) AS operator_switches_its_own;
SELECT s.owner::regrole, s.mode, s.mode_by::regrole FROM pgjobs.routine_schedules s WHERE s.schedule = 'OPS' ORDER BY s.owner::regrole::text;

-- Revoked: the operator sees nothing of the owner's again; the owner drops its schedule.
SELECT regress.as_role('regress_rt_owner', $$SELECT pgjobs.routines_revoke('OPS', 'regress_rt_ops')::text$$) AS revoked;
SELECT regress.as_role('regress_rt_operator', $$SELECT count(*)::text FROM pgjobs.routines_today WHERE owner = 'regress_rt_owner'::regrole$$) AS operator_sees;
SELECT regress.as_role('regress_rt_operator', $$SELECT pgjobs.routine_restart('regress_rt_owner/OPS', 'ana@BETA:Repo/load')$$) AS operator_restart;
SELECT regress.as_role('regress_rt_owner', $$SELECT pgjobs.routines_drop('OPS')::text$$) AS dropped;
SELECT owner::regrole, schedule FROM pgjobs.routine_schedules WHERE owner::regrole::text LIKE 'regress_rt%' ORDER BY owner::regrole::text, schedule;
