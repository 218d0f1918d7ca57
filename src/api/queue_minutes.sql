-- Named statements of src/api/queue_minutes.rs.

-- name: write_minute
-- The minute that ended before $1, each queue's row: its completions and failed attempts counted
-- in shared memory ($2 owners, $3 queues, $4 completions, $5 failures) and its live jobs as
-- count_blocks counted them, range by range ($6 owners, $7 queues, $8 ready, $9 scheduled,
-- $10 waiting, $11 running, $12 the oldest ready job's run_at), for every queue that has live
-- jobs, counts, or had live jobs at the last minute written (a row of zeros: a queue's last row
-- then says what it has now, which jobs_queues_counted reads). A row of that minute already
-- written (the launcher started again within it) gains the counts. Rows older than a day go.
WITH live AS (
    SELECT * FROM unnest($6::oid[], $7::text[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[],
                         $12::timestamptz[])
        AS l(owner, queue, ready, scheduled, waiting, running, oldest_ready_at)
), counted AS (
    SELECT * FROM unnest($2::oid[], $3::text[], $4::bigint[], $5::bigint[]) AS c(owner, queue, completed, failed)
), emptied AS (
    SELECT m.owner, m.queue FROM queue_minutes m
    WHERE m.minute = (SELECT max(x.minute) FROM queue_minutes x)
      AND m.ready + m.scheduled + m.waiting + m.running > 0
), queues AS (
    SELECT l.owner, l.queue FROM live l
    UNION SELECT c.owner, c.queue FROM counted c
    UNION SELECT e.owner, e.queue FROM emptied e
), gone AS (
    DELETE FROM queue_minutes m WHERE m.minute < $1 - interval '1 day'
)
INSERT INTO queue_minutes AS m (owner, queue, minute, completed, failed, ready, scheduled, waiting,
                                running, oldest_ready_at)
SELECT q.owner, q.queue, date_trunc('minute', $1) - interval '1 minute',
       coalesce(c.completed, 0), coalesce(c.failed, 0), coalesce(l.ready, 0),
       coalesce(l.scheduled, 0), coalesce(l.waiting, 0), coalesce(l.running, 0), l.oldest_ready_at
FROM queues q
LEFT JOIN live l ON l.owner = q.owner AND l.queue = q.queue
LEFT JOIN counted c ON c.owner = q.owner AND c.queue = q.queue
ON CONFLICT (owner, queue, minute) DO UPDATE
SET completed = m.completed + excluded.completed, failed = m.failed + excluded.failed,
    ready = excluded.ready, scheduled = excluded.scheduled, waiting = excluded.waiting,
    running = excluded.running, oldest_ready_at = excluded.oldest_ready_at;

-- name: count_blocks
-- Every identity's live jobs by queue (the launcher reads past row-level security), as at $3,
-- in blocks $1 up to $2 of jobs (as _queue_live_counts counts them all).
SELECT j.owner, j.queue::text,
       count(*) FILTER (WHERE _queue_count(j.status, j.run_at, $3) = 1),
       count(*) FILTER (WHERE _queue_count(j.status, j.run_at, $3) = 2),
       count(*) FILTER (WHERE _queue_count(j.status, j.run_at, $3) = 3),
       count(*) FILTER (WHERE _queue_count(j.status, j.run_at, $3) = 4),
       min(j.run_at) FILTER (WHERE _queue_count(j.status, j.run_at, $3) = 1)
FROM jobs j
WHERE j.ctid >= format('(%s,0)', $1)::tid AND j.ctid < format('(%s,0)', $2)::tid
GROUP BY j.owner, j.queue;

-- name: jobs_blocks
-- How many blocks jobs has now.
SELECT pg_relation_size('jobs') / current_setting('block_size')::bigint;

-- name: soon
-- The next round while blocks are left to count: 10 ms from now, so that the launcher's other
-- services and backends get the CPU between rounds (and a time already past would be taken for
-- one that waits a second: src/bgworker/launcher.rs).
SELECT clock_timestamp() + interval '10 ms';

-- name: next_minute
-- The next minute's start after $1.
SELECT date_trunc('minute', $1::timestamptz) + interval '1 minute';
