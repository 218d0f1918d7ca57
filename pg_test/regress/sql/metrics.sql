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

-- Who may read it: pg_monitor's members, not pgjobs_user's.
CREATE ROLE regress_metrics_monitor IN ROLE pg_monitor;
CREATE ROLE regress_metrics_member IN ROLE pgjobs_user;
SET ROLE regress_metrics_monitor;
SELECT count(*) > 0 AS reads FROM pgjobs.metrics;
RESET ROLE;
SET ROLE regress_metrics_member;
SELECT regress.error_of('SELECT * FROM pgjobs.metrics') AS refused;
SELECT regress.error_of('SELECT * FROM pgjobs._metrics_counters()') AS refused;
SELECT regress.error_of('SELECT pgjobs._metrics_count_rescued(1000)') AS refused;
RESET ROLE;
DROP ROLE regress_metrics_monitor, regress_metrics_member;
SELECT regress.reset();
