-- pgjobs.metrics: each figure after a known sequence of jobs. The counters count this
-- database's work since the server started, so the test compares them with what they said
-- before it (nothing else works in this database meanwhile: the launcher works in another).
SELECT regress.reset();
CREATE TABLE regress.counted AS
SELECT metric, value FROM pgjobs.metrics WHERE metric LIKE '%\_total' OR metric LIKE '%\_last\_minute';

CREATE FUNCTION regress.counted_since() RETURNS TABLE (metric text, since double precision)
LANGUAGE sql AS $$
    SELECT m.metric, m.value - c.value FROM pgjobs.metrics m JOIN regress.counted c USING (metric) ORDER BY 1
$$;

-- 4 jobs in queue m: one completes, one fails and waits for its retry, one is claimed and its
-- lease runs out (rescued), one waits; one in queue n is due tomorrow.
SELECT pgjobs.jobs_add('a', queue => 'm') IS NOT NULL, pgjobs.jobs_add('b', queue => 'm') IS NOT NULL,
       pgjobs.jobs_add('c', queue => 'm') IS NOT NULL, pgjobs.jobs_add('d', queue => 'm') IS NOT NULL,
       pgjobs.jobs_add('e', queue => 'n', run_at => now() + interval '1 day') IS NOT NULL;
CREATE TABLE regress.claimed AS SELECT * FROM pgjobs.jobs_claim('w', ARRAY['m'], 3);
SELECT pgjobs.jobs_complete(id, lease_token) FROM regress.claimed WHERE task = 'a';
SELECT pgjobs.jobs_fail(id, lease_token, 'boom') FROM regress.claimed WHERE task = 'b';
-- A completion rolled back is not counted.
BEGIN;
SELECT pgjobs.jobs_complete(id, lease_token) FROM regress.claimed WHERE task = 'c';
ROLLBACK;
-- Nor one rolled back to a savepoint in a transaction that commits.
BEGIN;
SAVEPOINT before_completing;
SELECT pgjobs.jobs_complete(id, lease_token) FROM regress.claimed WHERE task = 'c';
ROLLBACK TO SAVEPOINT before_completing;
COMMIT;
SELECT regress.expire_lease(id) FROM regress.claimed WHERE task = 'c';
SELECT pgjobs._rescue_expired() AS rescued;
SELECT * FROM regress.counted_since();

SELECT metric, queue, status, value FROM pgjobs.metrics
WHERE metric IN ('jobs', 'jobs_ready') ORDER BY 1, 2, 3;
-- The oldest ready job of m was due when it was added: a few seconds at most.
SELECT metric, queue, value BETWEEN 0 AND 60 AS recent FROM pgjobs.metrics WHERE metric = 'oldest_ready_seconds';

-- No launcher works in this database: not alive, no heartbeat; one SQL job run said to be running.
SELECT metric, value FROM pgjobs.metrics WHERE metric IN ('launcher_alive', 'launcher_lag_seconds', 'sql_jobs_running') ORDER BY 1;
INSERT INTO pgjobs.job_runs (job_id, owner, attempt, pid, deadline) VALUES (1, 10, 1, pg_backend_pid(), now() + interval '1 minute');
INSERT INTO pgjobs.launcher_state VALUES (true, pg_backend_pid(), now(), now() - interval '5 seconds', 'idle');
SELECT metric, round(value) AS value FROM pgjobs.metrics WHERE metric IN ('launcher_lag_seconds', 'sql_jobs_running') ORDER BY 1;
DELETE FROM pgjobs.job_runs;
DELETE FROM pgjobs.launcher_state;

-- A paused queue has a row (1) while it is paused.
SELECT paused_by IS NOT NULL AS paused FROM pgjobs.jobs_pause('m');
SELECT metric, queue, value FROM pgjobs.metrics WHERE metric = 'queue_paused';
SELECT pgjobs.jobs_resume('m') AS resumed;
SELECT count(*) AS paused_rows FROM pgjobs.metrics WHERE metric = 'queue_paused';

-- Jobs waiting for dependencies, and those blocked: a chain of three whose first is aborted
-- leaves the second blocked and the third waiting for it.
SELECT count(*) AS added FROM pgjobs.jobs_add_batch(
    '[{"task": "a", "queue": "deps"}, {"task": "b", "queue": "deps", "after": [1]}, {"task": "c", "queue": "deps", "after": [2]}]');
SELECT metric, queue, value FROM pgjobs.metrics WHERE metric IN ('jobs_waiting_for_dependencies', 'jobs_blocked') ORDER BY 1;
SELECT pgjobs.jobs_abort(min(id)) FROM pgjobs.jobs WHERE queue = 'deps';
SELECT metric, queue, value FROM pgjobs.metrics WHERE metric IN ('jobs_waiting_for_dependencies', 'jobs_blocked') ORDER BY 1;
SELECT count(*) AS aborted FROM pgjobs.jobs j, pgjobs.jobs_abort(j.id) WHERE j.queue = 'deps';

-- No row makes it fail: a job due at -infinity (refused to callers now, but a row from before
-- that) is an infinite age, not an error for every reader.
SELECT regress.error_of('SELECT pgjobs.jobs_add(''x'', queue => ''inf'', run_at => ''-infinity'')') AS refused;
SELECT pgjobs.jobs_add('x', queue => 'inf') IS NOT NULL AS added;
UPDATE pgjobs.jobs SET run_at = '-infinity' WHERE queue = 'inf';
SELECT metric, queue, value FROM pgjobs.metrics WHERE metric = 'oldest_ready_seconds' AND queue = 'inf';
DELETE FROM pgjobs.jobs WHERE queue = 'inf';

-- Who may read it: pg_monitor's members, not pgjobs_user's. The monitor reads in a session of
-- its own, which no superuser has used first (the planner evaluates the partial indexes'
-- predicates as the reader when a session first loads them).
CREATE ROLE regress_metrics_monitor LOGIN IN ROLE pg_monitor;
CREATE ROLE regress_metrics_member IN ROLE pgjobs_user;
\c - regress_metrics_monitor
SELECT count(*) > 0 AS reads FROM pgjobs.metrics;
\c - postgres
SET ROLE regress_metrics_member;
SELECT regress.error_of('SELECT * FROM pgjobs.metrics') AS refused;
SELECT regress.error_of('SELECT * FROM pgjobs._metrics_counters()') AS refused;
RESET ROLE;
DROP ROLE regress_metrics_monitor, regress_metrics_member;
SELECT regress.reset();
