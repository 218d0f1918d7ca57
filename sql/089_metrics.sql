-- What monitoring reads: one row per figure, in the long shape postgres_exporter's custom
-- queries take (metric and its labels, then a value; monitoring/postgres_exporter.yml). Counts of
-- the live table are read at each scrape; the queue's work is counted in shared memory as it
-- commits (src/api/metrics.rs), since a count from job_history would have to read a month.

-- The view reads as its owner, the extension's owner, so a monitoring role sees every identity's
-- queues without being able to read a job; only pg_monitor may read it.
CREATE VIEW metrics AS
WITH live AS (
    SELECT j.queue::text AS queue, j.status::text AS status, count(*) AS jobs,
           count(*) FILTER (WHERE j.status = 'created' AND j.run_at <= now()) AS ready,
           count(*) FILTER (WHERE j.status = 'created' AND j.run_at = 'infinity') AS waiting,
           min(j.run_at) FILTER (WHERE j.status = 'created' AND j.run_at <= now()) AS oldest_ready
    FROM jobs j GROUP BY j.queue, j.status
)
SELECT 'jobs' AS metric, l.queue, l.status, l.jobs::float8 AS value FROM live l
UNION ALL
SELECT 'jobs_ready', l.queue, NULL, l.ready::float8 FROM live l WHERE l.status = 'created'
UNION ALL
-- Jobs waiting for their dependencies, and those of them blocked by one that did not complete
-- (src/api/dependencies.rs); no row for a queue without any.
SELECT 'jobs_waiting_for_dependencies', l.queue, NULL, l.waiting::float8 FROM live l WHERE l.waiting > 0
UNION ALL
-- (_job_blocked's test written out: a monitor may not call the members' functions.)
SELECT 'jobs_blocked', j.queue::text, NULL, count(*)::float8
FROM jobs j
WHERE j.status = 'created' AND j.run_at = 'infinity'
  AND EXISTS (SELECT FROM job_dependencies w
              WHERE w.job_id = j.id AND NOT EXISTS (SELECT FROM jobs d WHERE d.id = w.on_job))
GROUP BY j.queue
UNION ALL
-- (Epochs subtracted, not times: a run_at no interval can reach from now, as -infinity was
-- before callers' times were checked, makes an infinite age instead of failing every reader.)
SELECT 'oldest_ready_seconds', l.queue, NULL, (extract(epoch FROM now()) - extract(epoch FROM l.oldest_ready))::float8
FROM live l WHERE l.oldest_ready IS NOT NULL
UNION ALL
SELECT 'queue_paused', p.queue, NULL, 1 FROM queue_pauses p
UNION ALL
-- Ready jobs of the queues at a limit: every slot held, or every token taken in its window.
SELECT 'jobs_held_back', f.queue, NULL, sum((SELECT count(*) FROM jobs j
                                             WHERE j.claimable_by = f.owner AND j.queue = f.queue
                                               AND hashtextextended(j.queue, 0) = hashtextextended(f.queue, 0)
                                               AND j.status = 'created' AND j.run_at <= now()))::float8
FROM (SELECT m.owner, m.queue::text FROM queue_limits m
      WHERE NOT EXISTS (SELECT FROM queue_slots s WHERE s.owner = m.owner AND s.queue = m.queue
                          AND NOT EXISTS (SELECT FROM jobs h WHERE h.id = s.job_id AND h.lease_token = s.lease_token))
      UNION
      SELECT r.owner, r.queue::text FROM queue_rates r
      WHERE NOT EXISTS (SELECT FROM queue_rate_tokens t WHERE t.owner = r.owner AND t.queue = r.queue
                          AND t.taken_at <= now() - r.per)) f
GROUP BY f.queue
UNION ALL
-- Ready jobs of the keys at their key limits: every slot of the key held, or every token of the
-- key taken in its window.
SELECT 'jobs_held_back_by_key', g.queue, NULL, sum(g.ready)::float8
FROM (SELECT j.queue::text AS queue, j.concurrency_key, j.claimable_by AS owner, count(*) AS ready
      FROM jobs j
      WHERE j.concurrency_key IS NOT NULL AND j.status = 'created' AND j.run_at <= now()
        AND EXISTS (SELECT FROM queue_key_limits k WHERE k.owner = j.claimable_by AND k.queue = j.queue)
      GROUP BY j.queue, j.concurrency_key, j.claimable_by) g
-- Each key under the limits of the longest prefix it starts with, as _key_limits finds them (a
-- function here would read queue_key_limits with the reader's rights, not the view's).
CROSS JOIN LATERAL (SELECT l.max_per_key, l.rate_claims, l.rate_per FROM queue_key_limits l
                    WHERE l.owner = g.owner AND l.queue = g.queue AND starts_with(g.concurrency_key, l.prefix)
                    ORDER BY octet_length(l.prefix) DESC LIMIT 1) l
WHERE (SELECT count(*) FROM queue_key_slots s JOIN jobs h ON h.id = s.job_id AND h.lease_token = s.lease_token
       WHERE s.owner = g.owner AND s.queue = g.queue AND s.concurrency_key = g.concurrency_key) >= l.max_per_key
   OR (SELECT count(*) FROM queue_key_tokens t
       WHERE t.owner = g.owner AND t.queue = g.queue AND t.concurrency_key = g.concurrency_key
         AND t.taken_at > now() - l.rate_per) >= l.rate_claims
GROUP BY g.queue
UNION ALL
SELECT c.counter || '_total', NULL, NULL, c.total::float8 FROM _metrics_counters() c
UNION ALL
SELECT c.counter || '_last_minute', NULL, NULL, c.last_minute::float8 FROM _metrics_counters() c
UNION ALL
SELECT 'launcher_alive', NULL, NULL, coalesce((SELECT l.alive::integer FROM launcher l), 0)::float8
UNION ALL
SELECT 'launcher_lag_seconds', NULL, NULL, extract(epoch FROM now() - l.heartbeat_at)::float8 FROM launcher_state l
UNION ALL
SELECT 'sql_jobs_running', NULL, NULL, count(*)::float8 FROM job_runs r WHERE r.status = 'running';
COMMENT ON VIEW metrics IS
    'The job system''s figures for monitoring, one row each (README: Metrics): jobs by queue and '
    'status, ready jobs and the oldest one''s age by queue, paused queues, ready jobs held back by a '
    'concurrency or rate limit, and by their keys'' limits, claims, completions, failures, '
    'expired leases rescued and failed jobs copied to dead-letter queues (total since the server started and in the last minute, in this '
    'database), whether the launcher is alive and how long since its heartbeat, SQL jobs running.';
REVOKE ALL ON metrics FROM PUBLIC;
GRANT SELECT ON metrics TO pg_monitor;
-- Functions a view calls are called as the reader.
GRANT USAGE ON SCHEMA @extschema@ TO pg_monitor;
GRANT EXECUTE ON FUNCTION _metrics_counters() TO pg_monitor;
-- And so are the functions in the predicates of the partial indexes of the tables it reads: the
-- planner evaluates them as the reader when it first loads an index in a session (and keeps the
-- result, so a session that a superuser had used first hid this).
GRANT EXECUTE ON FUNCTION _extension_claimant() TO pg_monitor;
