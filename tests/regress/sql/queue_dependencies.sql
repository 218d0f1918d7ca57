-- Jobs that wait for jobs (depends_on, and "after" in a batch), as member roles: a graph added
-- in one call, fan-out and a join that reads its dependencies' results, a dependency that fails
-- (the dependent blocked, with the reason, until unblocked or its dependency is retried), a
-- waiting job aborted, dependencies already finished, children and their join added in the
-- completing transaction of the step before. Refused, nothing changed: unknown jobs, another
-- identity's, SQL jobs, bad positions, a key, too many; access for every call.
SELECT regress.reset();
CREATE ROLE regress_flow IN ROLE pgjobs_user;
CREATE ROLE regress_flow_proxy IN ROLE pgjobs_user;
CREATE ROLE regress_flow_other IN ROLE pgjobs_user;
CREATE ROLE regress_flow_nobody;
GRANT regress_flow_proxy TO regress_flow;
GRANT USAGE ON SCHEMA regress TO regress_flow, regress_flow_proxy, regress_flow_other, regress_flow_nobody;
SELECT regress.as_role('regress_flow', $$SELECT pgjobs.jobs_add_proxy('regress_flow_proxy')$$) AS proxy_added;

-- A graph in one call: a root, three children after it, a join after the three.
SET ROLE regress_flow;
SELECT array_agg(id ORDER BY id) AS graph FROM pgjobs.jobs_add_batch('[
    {"task": "root", "queue": "flow"},
    {"task": "child", "queue": "flow", "payload": {"n": 1}, "after": [1]},
    {"task": "child", "queue": "flow", "payload": {"n": 2}, "after": [1]},
    {"task": "child", "queue": "flow", "payload": {"n": 3}, "after": [1]},
    {"task": "join", "queue": "flow", "after": [2, 3, 4]}]') id;
SELECT id, task, depends_on, run_at = 'infinity' AS waits FROM pgjobs.jobs ORDER BY id;
-- The jobs waited on are marked, so that their completions look for dependents (and no other's do).
RESET ROLE;
SELECT id, waited_on FROM pgjobs.jobs ORDER BY id;
SET ROLE regress_flow;
SELECT on_job, job_id FROM pgjobs.job_dependencies ORDER BY job_id, on_job;
-- job_list shows no run_at while a job waits for dependencies (drivers cannot read infinity).
SELECT id, run_at IS NULL AS no_run_at FROM pgjobs.job_list WHERE id IN (1, 5) ORDER BY id;
-- The queue counts them as waiting for dependencies, not as scheduled.
SELECT ready, scheduled, waiting, running FROM pgjobs.jobs_queues WHERE queue = 'flow';
-- Only the root is claimable; the others are waiting, not blocked.
SELECT status FROM pgjobs.jobs_result(5);
SELECT id, task FROM pgjobs.jobs_claim('w', ARRAY['flow'], 10);
SELECT pgjobs.jobs_complete(1, regress.token(1), '{"root": "done"}');
-- The root's completion released the children, in its own transaction.
SELECT id, task, run_at <= now() AS due FROM pgjobs.jobs ORDER BY id;
SELECT count(*) AS waits_left FROM pgjobs.job_dependencies;
CREATE TEMP TABLE held AS SELECT id, lease_token FROM pgjobs.jobs_claim('w', ARRAY['flow'], 10);
SELECT id FROM held ORDER BY id;
-- A child reads what it depends on: the root's result.
SELECT * FROM pgjobs.jobs_dependency_results(2, regress.token(2));
SELECT pgjobs.jobs_complete(ARRAY[2, 3], ARRAY[regress.token(2), regress.token(3)],
                            ARRAY['{"n": 1}', '{"n": 2}']::jsonb[]);
-- Two of three done: the join still waits for the third.
SELECT id, run_at = 'infinity' AS waits FROM pgjobs.jobs WHERE id = 5;
SELECT pgjobs.jobs_complete(4, regress.token(4), '{"n": 3}');
SELECT id, task FROM pgjobs.jobs_claim('w', ARRAY['flow'], 10);
-- The join reads every result in one call.
SELECT * FROM pgjobs.jobs_dependency_results(5, regress.token(5));
SELECT pgjobs.jobs_complete(5, regress.token(5));
SELECT id, task, status, depends_on FROM pgjobs.job_list ORDER BY id;
-- A job that depends on nothing reads no rows.
SELECT pgjobs.jobs_add('alone', queue => 'flow') AS alone \gset
SELECT count(*) AS results FROM pgjobs.jobs_claim('w', ARRAY['flow']) c,
       pgjobs.jobs_dependency_results(c.id, c.lease_token);
SELECT pgjobs.jobs_complete(:alone, regress.token(:alone));

-- A dependency that fails blocks its dependent, which says why; jobs_retry brings the failure
-- back, the dependent waits for it again, and its completion releases it.
SELECT pgjobs.jobs_add('fragile', queue => 'flow', max_attempts => 1) AS fragile \gset
SELECT pgjobs.jobs_add('after_fragile', queue => 'flow', depends_on => ARRAY[:fragile]) AS after_fragile \gset
SELECT count(*) FROM pgjobs.jobs_claim('w', ARRAY['flow']);
SELECT pgjobs.jobs_fail(:fragile, regress.token(:fragile), 'disk full');
SELECT status, error FROM pgjobs.jobs_result(:after_fragile);
-- A blocked job is not waited for: jobs_wait answers at once (an hour's wait would be cut off).
SET statement_timeout = '20s';
SELECT id, status, error FROM pgjobs.jobs_wait(ARRAY[:after_fragile], '1 hour');
RESET statement_timeout;
SELECT count(*) AS retried FROM pgjobs.jobs_retry(ARRAY[:fragile]);
SELECT status, error FROM pgjobs.jobs_result(:after_fragile);
SELECT id = :fragile AS retried_claimed FROM pgjobs.jobs_claim('w', ARRAY['flow']);
SELECT pgjobs.jobs_complete(:fragile, regress.token(:fragile));
SELECT id = :after_fragile AS released_claimed FROM pgjobs.jobs_claim('w', ARRAY['flow']);
-- The dependency completed on its second try: no error is reported with it.
SELECT status, error FROM pgjobs.jobs_dependency_results(:after_fragile, regress.token(:after_fragile));
SELECT pgjobs.jobs_complete(:after_fragile, regress.token(:after_fragile));

-- Blocked, then unblocked by its owner: due at once, its waits gone.
SELECT pgjobs.jobs_add('doomed', queue => 'flow') AS doomed \gset
SELECT pgjobs.jobs_add('after_doomed', queue => 'flow', depends_on => ARRAY[:doomed]) AS after_doomed \gset
SELECT pgjobs.jobs_abort(:doomed);
SELECT status, error FROM pgjobs.jobs_result(:after_doomed);
SELECT due <= now() AS due_now FROM pgjobs.jobs_unblock(:after_doomed) due;
SELECT count(*) AS waits FROM pgjobs.job_dependencies WHERE job_id = :after_doomed;
SELECT id = :after_doomed AS unblocked_claimed FROM pgjobs.jobs_claim('w', ARRAY['flow']);
SELECT pgjobs.jobs_complete(:after_doomed, regress.token(:after_doomed));

-- A waiting job aborted: it ends as aborted and its waits go; the job it waited for is unchanged.
SELECT pgjobs.jobs_add('slow', queue => 'flow', run_at => now() + interval '1 hour') AS slow \gset
SELECT pgjobs.jobs_add('after_slow', queue => 'flow', depends_on => ARRAY[:slow]) AS after_slow \gset
SELECT pgjobs.jobs_abort(:after_slow);
SELECT count(*) AS waits FROM pgjobs.job_dependencies WHERE job_id = :after_slow;
-- Brought back by jobs_retry, it waits again for what has not completed; aborted again.
SELECT count(*) AS retried FROM pgjobs.jobs_retry(ARRAY[:after_slow]);
SELECT run_at = 'infinity' AS waits_again,
       (SELECT count(*) FROM pgjobs.job_dependencies WHERE job_id = :after_slow) AS waits
FROM pgjobs.jobs WHERE id = :after_slow;
SELECT pgjobs.jobs_abort(:after_slow);
-- A dependency already finished: completed, the job is due at once (and runs when asked, if
-- later); failed or aborted, it is blocked at once.
SELECT pgjobs.jobs_add('after_done', queue => 'flow', depends_on => ARRAY[1, 5]) AS after_done \gset
SELECT run_at <= now() AS due, depends_on FROM pgjobs.jobs WHERE id = :after_done;
SELECT pgjobs.jobs_add('later', queue => 'flow', depends_on => ARRAY[1], run_at => now() + interval '1 day') AS later \gset
SELECT run_at > now() + interval '23 hours' AS when_asked FROM pgjobs.jobs WHERE id = :later;
SELECT pgjobs.jobs_add('after_aborted', queue => 'flow', depends_on => ARRAY[:doomed]) AS after_aborted \gset
SELECT status, error FROM pgjobs.jobs_result(:after_aborted);
SELECT pgjobs.jobs_abort(:after_aborted);
SELECT pgjobs.jobs_abort(:after_done);
SELECT pgjobs.jobs_abort(:later);

-- Skipped rather than blocked (pgflow's rule): jobs added with on_dependency_failure => 'skip'
-- end as aborted, with why, when a dependency fails, and so in turn do those waiting for them
-- with skip; one without it is blocked. Added after a dependency that failed: skipped at once.
SELECT pgjobs.jobs_add('weak', queue => 'skips', max_attempts => 1) AS weak \gset
SELECT count(*) AS added FROM pgjobs.jobs_add_batch(format('[
    {"task": "skip 1", "queue": "skips", "depends_on": [%1$s], "on_dependency_failure": "skip"},
    {"task": "skip 2", "queue": "skips", "after": [1], "on_dependency_failure": "skip"},
    {"task": "block 3", "queue": "skips", "after": [2]}]', :weak)::jsonb);
SELECT id = :weak AS weak_claimed FROM pgjobs.jobs_claim('w', ARRAY['skips']);
SELECT pgjobs.jobs_fail(:weak, regress.token(:weak), 'gone');
SELECT pgjobs.jobs_add('late skip', queue => 'skips', depends_on => ARRAY[:weak], on_dependency_failure => 'skip');
SELECT l.id - :weak AS after_weak, l.task, r.status, regexp_replace(r.error, '[0-9]+', 'N', 'g') AS error
FROM pgjobs.job_list l, pgjobs.jobs_result(l.id) r WHERE l.queue = 'skips' ORDER BY l.id;
SELECT count(*) AS waits FROM pgjobs.job_dependencies d JOIN pgjobs.job_list l ON l.id = d.job_id WHERE l.queue = 'skips';
SELECT pgjobs.jobs_abort(id) FROM pgjobs.jobs WHERE queue = 'skips';

-- Dependencies by the keys their jobs hold: a live one waited for, a finished one (its skip key
-- outlives it) counted as done.
SELECT pgjobs.jobs_add('report', queue => 'flow', key => 'report:2026-12') AS report \gset
SELECT pgjobs.jobs_add('mail report', queue => 'flow', depends_on_keys => ARRAY['report:2026-12']) AS mail \gset
SELECT depends_on = ARRAY[:report::bigint] AS by_key, run_at = 'infinity' AS waits FROM pgjobs.jobs WHERE id = :mail;
SELECT count(*) AS added FROM pgjobs.jobs_add_batch('[{"task": "archive", "queue": "flow", "depends_on_keys": ["report:2026-12"]}]');
SELECT pgjobs.jobs_abort(:mail);
SELECT pgjobs.jobs_abort(id) FROM pgjobs.jobs WHERE task = 'archive';
SELECT id = :report AS report_claimed FROM pgjobs.jobs_claim('w', ARRAY['flow']);
SELECT pgjobs.jobs_complete(:report, regress.token(:report));
SELECT pgjobs.jobs_add('after report', queue => 'flow', depends_on_keys => ARRAY['report:2026-12']) AS after_report \gset
SELECT run_at <= now() AS due FROM pgjobs.jobs WHERE id = :after_report;
SELECT pgjobs.jobs_abort(:after_report);

-- A step adds its children and their join in the transaction that completes it (the join
-- depends on the children by position, and the children on the step by id): committed together.
SELECT pgjobs.jobs_add('step', queue => 'flow') AS step \gset
BEGIN;
SELECT id = :step AS step_claimed FROM pgjobs.jobs_claim('w', ARRAY['flow']);
SELECT count(*) AS added FROM pgjobs.jobs_add_batch(format('[
    {"task": "part", "queue": "flow", "depends_on": [%1$s]},
    {"task": "part", "queue": "flow", "depends_on": [%1$s]},
    {"task": "gather", "queue": "flow", "after": [1, 2]}]', :step)::jsonb);
SELECT pgjobs.jobs_complete(:step, regress.token(:step));
COMMIT;
SELECT task, run_at <= now() AS due FROM pgjobs.jobs WHERE task IN ('part', 'gather') ORDER BY id;
RESET ROLE;

-- The proxy adds a job that depends on its owner's, as the owner.
SELECT regress.as_role('regress_flow_proxy', format('SELECT pgjobs.jobs_add(''by_proxy'', queue => ''flow'', depends_on => ARRAY[%s])', :slow))::bigint AS by_proxy \gset
SELECT owner::regrole, depends_on FROM pgjobs.jobs WHERE id = :by_proxy;

-- Refused, nothing changed.
SELECT pgjobs.jobs_add('other_job', queue => 'flow') AS other_job FROM (SELECT set_config('role', 'regress_flow_other', true)) r \gset
RESET ROLE;
SELECT id AS sql_job FROM pgjobs.jobs_add_sql('SELECT 1') id \gset
SELECT regress.fingerprint() AS before \gset
-- A job of the same call named by its id (the next one the sequence gives).
SELECT last_value + 1 AS next_id FROM pgjobs.jobs_id_seq \gset
SELECT regress.as_role('regress_flow', format('SELECT count(*) FROM pgjobs.jobs_add_batch(''[{"task": "t"}, {"task": "t", "depends_on": [%s]}]'')', :next_id)) AS same_call_by_id;
SELECT what, regress.as_role(role, call) AS refused
FROM (VALUES
    ('an unknown job', 'regress_flow', 'SELECT pgjobs.jobs_add(''t'', depends_on => ARRAY[999999])'),
    ('another identity''s job', 'regress_flow', format('SELECT pgjobs.jobs_add(''t'', depends_on => ARRAY[%s])', :other_job)),
    ('a SQL job', 'regress_flow', format('SELECT pgjobs.jobs_add(''t'', depends_on => ARRAY[%s])', :sql_job)),
    ('after 0', 'regress_flow', 'SELECT count(*) FROM pgjobs.jobs_add_batch(''[{"task": "t"}, {"task": "t", "after": [0]}]'')'),
    ('after itself', 'regress_flow', 'SELECT count(*) FROM pgjobs.jobs_add_batch(''[{"task": "t"}, {"task": "t", "after": [2]}]'')'),
    ('after a later job', 'regress_flow', 'SELECT count(*) FROM pgjobs.jobs_add_batch(''[{"task": "t", "after": [2]}, {"task": "t"}]'')'),
    ('after not a number', 'regress_flow', 'SELECT count(*) FROM pgjobs.jobs_add_batch(''[{"task": "t"}, {"task": "t", "after": ["1"]}]'')'),
    ('a key', 'regress_flow', format('SELECT pgjobs.jobs_add(''t'', key => ''k'', depends_on => ARRAY[%s])', :slow)),
    ('a null dependency', 'regress_flow', 'SELECT pgjobs.jobs_add(''t'', depends_on => ARRAY[NULL]::bigint[])'),
    ('an unknown key', 'regress_flow', 'SELECT pgjobs.jobs_add(''t'', depends_on_keys => ARRAY[''no such key''])'),
    ('another identity''s key', 'regress_flow_other', 'SELECT pgjobs.jobs_add(''t'', depends_on_keys => ARRAY[''report:2026-12''])'),
    ('a null key', 'regress_flow', 'SELECT pgjobs.jobs_add(''t'', depends_on_keys => ARRAY[NULL]::text[])'),
    ('an unknown rule on failure', 'regress_flow', format('SELECT pgjobs.jobs_add(''t'', depends_on => ARRAY[%s], on_dependency_failure => ''maybe'')', :slow)),
    ('a null position', 'regress_flow', 'SELECT count(*) FROM pgjobs.jobs_add_batch(''[{"task": "t"}, {"task": "t", "after": [null]}]'')'),
    ('1001 dependencies', 'regress_flow', format('SELECT pgjobs.jobs_add(''t'', depends_on => array_fill(%s::bigint, ARRAY[1001]))', :slow)),
    ('unblock a job that waits for nothing', 'regress_flow', format('SELECT pgjobs.jobs_unblock(%s)', :slow)),
    ('unblock another identity''s job', 'regress_flow_other', format('SELECT pgjobs.jobs_unblock(%s)', :by_proxy)),
    ('unblock a finished job', 'regress_flow', format('SELECT pgjobs.jobs_unblock(%s)', :after_slow)),
    ('unblock a SQL job', 'regress_flow', format('SELECT pgjobs.jobs_unblock(%s)', :sql_job)),
    ('unblock null', 'regress_flow', 'SELECT pgjobs.jobs_unblock(NULL)'),
    ('results without the lease', 'regress_flow', format('SELECT count(*) FROM pgjobs.jobs_dependency_results(%s, gen_random_uuid())', :by_proxy)),
    ('results of another identity''s job', 'regress_flow_other', format('SELECT count(*) FROM pgjobs.jobs_dependency_results(%s, gen_random_uuid())', :by_proxy)),
    ('results with null', 'regress_flow', 'SELECT count(*) FROM pgjobs.jobs_dependency_results(NULL, NULL)'),
    ('add, not a member', 'regress_flow_nobody', format('SELECT pgjobs.jobs_add(''t'', depends_on => ARRAY[%s])', :slow)),
    ('unblock, not a member', 'regress_flow_nobody', format('SELECT pgjobs.jobs_unblock(%s)', :by_proxy)),
    ('results, not a member', 'regress_flow_nobody', format('SELECT count(*) FROM pgjobs.jobs_dependency_results(%s, gen_random_uuid())', :by_proxy)),
    ('write job_dependencies', 'regress_flow', format('INSERT INTO pgjobs.job_dependencies VALUES (%s, %s, 0)', :slow, :slow)),
    ('delete job_dependencies', 'regress_flow', 'DELETE FROM pgjobs.job_dependencies'))
    AS c(what, role, call);
SELECT regress.fingerprint() = :'before' AS unchanged;
-- Each identity reads its own waits only.
SELECT role, regress.as_role(role, 'SELECT count(*) FROM pgjobs.job_dependencies') AS waits
FROM (VALUES ('regress_flow'), ('regress_flow_proxy'), ('regress_flow_other'), ('regress_flow_nobody')) r(role);
-- The proxy may unblock its owner's job.
SELECT regress.as_role('regress_flow_proxy', format('SELECT pgjobs.jobs_unblock(%s) <= now()', :by_proxy)) AS proxy_unblocks;

SELECT pgjobs.jobs_abort(id) FROM pgjobs.jobs WHERE queue = 'flow' ORDER BY id;
DROP OWNED BY regress_flow, regress_flow_proxy, regress_flow_other, regress_flow_nobody;
DELETE FROM pgjobs.proxies;
DROP ROLE regress_flow, regress_flow_proxy, regress_flow_other, regress_flow_nobody;
