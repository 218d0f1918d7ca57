-- The access model of routine schedules, cell by cell, as non-superuser roles: the owner, a
-- member of a role the owner granted (an operator), another member of pgjobs_user, and a role
-- in no group. Others see nothing of a schedule; only the owner edits it; the owner and
-- operators command it.
SET TimeZone = 'UTC';
SELECT regress.reset();
CREATE ROLE regress_rt_owner IN ROLE pgjobs_user;
CREATE ROLE regress_rt_ops;
CREATE ROLE regress_rt_operator IN ROLE pgjobs_user, regress_rt_ops;
CREATE ROLE regress_rt_other IN ROLE pgjobs_user;
CREATE ROLE regress_rt_nobody;
CREATE ROLE regress_rt_agent IN ROLE pgjobs_agent;
SELECT regress.as_role('regress_rt_agent', $$SELECT pgjobs.batch_register('BETA')$$) AS beta;

SELECT regress.as_role('regress_rt_owner', $$SELECT pgjobs.routines_put('OPS', 'ana@BETA:Repo/load', 'LOAD', runtimes => '09:00')$$) AS routines;
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
             ('routine_schedules', 'schedule'), ('routine_definitions', 'schedule'), ('routine_days', 'schedule'),
             ('routine_log', 'schedule'), ('routine_groups(''schedule'')', 'group_key')) AS o(object, key)
ORDER BY object, role;

-- Every call, by every role: allowed cells and denied ones, with the SQLSTATE of each refusal.
-- (Each statement runs in the state the ones before it left.)
SELECT call, role, regress.as_role(role, statement) AS result
FROM (VALUES (1, 'mode', $$SELECT asked FROM pgjobs.routines_mode('OPS')$$),
             (2, 'set mode', $$SELECT asked FROM pgjobs.routines_set_mode('OPS', 'observe')$$),
             (3, 'restart', $$SELECT pgjobs.routine_restart('OPS', 'ana@BETA:Repo/load')$$),
             (4, 'stop', $$SELECT pgjobs.routine_stop('OPS', 'ana@BETA:Repo/load')$$),
             (5, 'message', $$SELECT pgjobs.routine_message('ana@BETA:Repo/load', 'info', 'hello')::text$$),
             (6, 'reload', $$SELECT pgjobs.routines_reload('OPS')::text$$),
             (7, 'export', $$SELECT length(pgjobs.routines_export('OPS'))::text$$),
             (8, 'put', $$SELECT pgjobs.routines_put('OPS', 'ana@BETA:Repo/more')::text$$),
             (9, 'remove', $$SELECT pgjobs.routines_remove('OPS', 'ana@BETA:Repo/more')::text$$),
             (10, 'import', $$SELECT pgjobs.routines_import('OPS', E'routine,group,external,realtime,runtimes,args,dependencies,computer,seq,command\n')::text$$),
             (11, 'grant', $$SELECT pgjobs.routines_grant('OPS', 'regress_rt_other')::text$$),
             (12, 'write state', $$UPDATE pgjobs.routine_days SET status = 'completed' RETURNING routine$$),
             (13, 'write switch', $$UPDATE pgjobs.routine_schedules SET mode = 'control' RETURNING schedule$$),
             (14, 'write log', $$INSERT INTO pgjobs.routine_log (schedule, routine, level, message) VALUES ('OPS', 'x', 'info', 'x') RETURNING id$$),
             (15, 'drop', $$SELECT pgjobs.routines_drop('OPS')::text$$)) AS c(n, call, statement),
     (VALUES (1, 'regress_rt_nobody'), (2, 'regress_rt_other'), (3, 'regress_rt_operator')) AS r(m, role)
ORDER BY c.n, r.m;

-- The operator's commands are logged with its name; the owner's switch was the operator's.
SELECT message FROM pgjobs.routine_messages WHERE schedule = 'OPS' ORDER BY at;
SELECT asked, asked_by FROM pgjobs._routines_mode('regress_rt_owner'::regrole, 'OPS');
-- The runs are the owner's batch jobs, which only the owner reads.
SELECT kind, routine, owner FROM pgjobs.batch_jobs ORDER BY id;
SELECT role, regress.as_role(role, $$SELECT count(*)::text FROM pgjobs.batch_jobs$$) AS batch_jobs_seen
FROM (VALUES ('regress_rt_owner'), ('regress_rt_operator')) AS r(role);

-- Revoked: the operator sees nothing again; the owner drops its schedule.
SELECT regress.as_role('regress_rt_owner', $$SELECT pgjobs.routines_revoke('OPS', 'regress_rt_ops')::text$$) AS revoked;
SELECT regress.as_role('regress_rt_operator', $$SELECT count(*)::text FROM pgjobs.routines_today$$) AS operator_sees;
SELECT regress.as_role('regress_rt_operator', $$SELECT pgjobs.routine_restart('OPS', 'ana@BETA:Repo/load')$$) AS operator_restart;
SELECT regress.as_role('regress_rt_owner', $$SELECT pgjobs.routines_drop('OPS')::text$$) AS dropped;
SELECT schedule FROM pgjobs.routine_schedules;
