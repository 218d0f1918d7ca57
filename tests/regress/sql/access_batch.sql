-- The access model of batch jobs, cell by cell, as non-superuser roles: a poster, another
-- poster, two agents (each with its computer), and a role in neither group.
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.job_dependencies, pgjobs.batch_computers;
CREATE ROLE regress_batch_poster IN ROLE pgjobs_user;
CREATE ROLE regress_batch_other IN ROLE pgjobs_user;
CREATE ROLE regress_batch_agent_a IN ROLE pgjobs_agent;
CREATE ROLE regress_batch_agent_b IN ROLE pgjobs_agent;
CREATE ROLE regress_batch_nobody;

SELECT regress.as_role('regress_batch_agent_a', $$SELECT pgjobs.batch_register('alpha')$$) AS alpha;
SELECT regress.as_role('regress_batch_agent_b', $$SELECT pgjobs.batch_register('beta')$$) AS beta;
SELECT regress.as_role('regress_batch_poster', $$SELECT pgjobs.batch_post('mine', computer => 'alpha')$$) AS job_1;
SELECT regress.as_role('regress_batch_poster', $$SELECT pgjobs.batch_post('mine too', depends_on => ARRAY['1'])$$) AS job_2;
SELECT regress.as_role('regress_batch_other', $$SELECT pgjobs.batch_post('theirs')$$) AS job_3;

-- Reading: a poster sees its own jobs in every view and function; agents and others nothing.
SELECT role, object,
       regress.as_role(role, format('SELECT coalesce(string_agg(x::text, '','' ORDER BY x), ''nothing'') FROM (SELECT %s AS x FROM pgjobs.%s) r', key, object)) AS sees
FROM (VALUES ('regress_batch_poster'), ('regress_batch_other'), ('regress_batch_agent_a'), ('regress_batch_nobody')) AS r(role),
     (VALUES ('batch_jobs', 'id'), ('batch_active', 'id'), ('job_dependencies', 'job_id'), ('batch_months', 'jobs'),
             ('batch_groups_active', 'jobs'), ('batch_computer_list', 'computer'), ('batch_tally', 'n'),
             ('batch_group_jobs(''computer'', ''ANY'')', 'id'),
             (format('batch_get(%L)', (SELECT idempotency_key FROM pgjobs.jobs WHERE id = 3)), 'id')) AS o(object, key)
ORDER BY object, role;
SELECT role, regress.as_role(role, $$SELECT pgjobs.batch_find() ->> 'total'$$) AS finds
FROM (VALUES ('regress_batch_poster'), ('regress_batch_other'), ('regress_batch_nobody')) AS r(role);

-- Every call, by every role: allowed cells and denied ones, and the SQLSTATE of each refusal.
-- (Each statement runs in the state the ones before it left.)
SELECT role, call, regress.as_role(role, statement) AS result
FROM (VALUES (1, 'post', $$SELECT pgjobs.batch_post('x')::text$$),
             (1, 'post many', $$SELECT count(*)::text FROM pgjobs.batch_post_many('[{"command": "x"}, {"command": "y", "after": [1]}]')$$),
             (2, 'claim alpha', $$SELECT string_agg(id::text, ',') FROM pgjobs.batch_claim('alpha', 5)$$),
             (3, 'claim beta', $$SELECT string_agg(id::text, ',') FROM pgjobs.batch_claim('beta', 5)$$),
             (3, 'report to alpha', $$SELECT count(*)::text FROM pgjobs.batch_report_and_claim('alpha', 0)$$),
             (4, 'register alpha', $$SELECT pgjobs.batch_register('alpha')$$),
             (5, 'ready signals of alpha', $$SELECT cardinality(pgjobs.batch_ready_signals('alpha'))::text$$),
             (5, 'cancel signal of alpha', $$SELECT length(pgjobs.batch_cancel_signal('alpha'))::text$$),
             (6, 'cancel job 1', $$SELECT string_agg(status, ',') FROM pgjobs.batch_cancel(ARRAY[1])$$),
             (7, 'release job 2', $$SELECT pgjobs.batch_release(2)$$),
             (8, 'cancel where', $$SELECT count(*)::text FROM pgjobs.batch_cancel_where()$$),
             (9, 'forget alpha', $$SELECT pgjobs.batch_forget_computer('alpha')$$),
             (10, 'write a job', $$UPDATE pgjobs.jobs SET payload = '{"command": "rm"}' WHERE id = 1 RETURNING id$$),
             (11, 'write computers', $$UPDATE pgjobs.batch_computers SET agent = 0 RETURNING computer$$),
             (12, 'write waits', $$DELETE FROM pgjobs.job_dependencies RETURNING job_id$$)) AS c(n, call, statement),
     (VALUES (1, 'regress_batch_nobody'), (2, 'regress_batch_other'), (3, 'regress_batch_agent_b'),
             (4, 'regress_batch_poster'), (5, 'regress_batch_agent_a')) AS r(m, role)
WHERE call NOT IN ('cancel where') OR role <> 'regress_batch_poster'
ORDER BY c.n, r.m, c.call;
-- Nobody writes the Jobs tab's counts but the extension.
SELECT role, regress.as_role(role, $$DELETE FROM pgjobs.batch_tally RETURNING n$$) AS write_counts
FROM (VALUES (1, 'regress_batch_nobody'), (2, 'regress_batch_other'), (3, 'regress_batch_agent_b'),
             (4, 'regress_batch_poster'), (5, 'regress_batch_agent_a')) AS r(m, role)
ORDER BY r.m;

-- The holder of a job: another computer's agent cannot renew, report or hand back what alpha
-- holds, even with its token.
SELECT regress.as_role('regress_batch_agent_a', $$SELECT string_agg(id::text, ',') FROM pgjobs.batch_claim('alpha', 5)$$) AS alpha_claims;
SELECT call, regress.as_role('regress_batch_agent_b', format(statement, (SELECT lease_token FROM pgjobs.jobs WHERE id = 2))) AS agent_b
FROM (VALUES ('started', $$SELECT pgjobs.batch_started(2, %L, 1)$$),
             ('heartbeat', $$SELECT string_agg(lease_state, ',') FROM pgjobs.batch_heartbeat(ARRAY[2]::bigint[], ARRAY[%L]::uuid[])$$),
             ('finish', $$SELECT pgjobs.batch_finish(2, %L, 0, '1 second')$$),
             ('report and claim', $$SELECT string_agg(report || ' ' || state, ',') FROM pgjobs.batch_report_and_claim('beta', 0, ARRAY[2]::bigint[], ARRAY[%1$L]::uuid[], ARRAY[1], ARRAY[2]::bigint[], ARRAY[%1$L]::uuid[], ARRAY[0], ARRAY[interval '1 second'])$$),
             ('hand back', $$SELECT pgjobs.batch_hand_back(ARRAY[2]::bigint[], ARRAY[%L]::uuid[])::text$$)) AS c(call, statement);
SELECT id, status, target FROM pgjobs.batch_jobs ORDER BY id;
