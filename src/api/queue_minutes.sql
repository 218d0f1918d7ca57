-- Named statements of src/api/queue_minutes.rs.

-- name: write_minute(at timestamptz, counted_owners oid[], counted_queues text[],
--                    completed bigint[], failed bigint[], live_owners oid[], live_queues text[],
--                    ready bigint[], scheduled bigint[], waiting bigint[], running bigint[],
--                    oldest_ready_at timestamptz[])
-- The minute that ended before $at, each queue's row: its completions and failed attempts
-- counted in shared memory ($counted_owners, $counted_queues, $completed, $failed) and its live
-- jobs as count_blocks counted them, range by range ($live_owners, $live_queues, $ready,
-- $scheduled, $waiting, $running, $oldest_ready_at: the oldest ready job's run_at), for every
-- queue that has live jobs, counts, or had live jobs at the last minute written (a row of
-- zeros: a queue's last row then says what it has now, which jobs_queues_counted reads). A row
-- of that minute already written (the launcher started again within it) gains the counts. Rows
-- older than a day go.
WITH live AS (
    SELECT * FROM unnest($live_owners::oid[], $live_queues::text[], $ready::bigint[],
                         $scheduled::bigint[], $waiting::bigint[], $running::bigint[],
                         $oldest_ready_at::timestamptz[])
        AS l(owner, queue, ready, scheduled, waiting, running, oldest_ready_at)
), counted AS (
    SELECT * FROM unnest($counted_owners::oid[], $counted_queues::text[], $completed::bigint[],
                         $failed::bigint[]) AS c(owner, queue, completed, failed)
), emptied AS (
    SELECT m.owner, m.queue FROM queue_minutes m
    WHERE m.minute = (SELECT max(x.minute) FROM queue_minutes x)
      AND m.ready + m.scheduled + m.waiting + m.running > 0
), queues AS (
    SELECT l.owner, l.queue FROM live l
    UNION SELECT c.owner, c.queue FROM counted c
    UNION SELECT e.owner, e.queue FROM emptied e
), gone AS (
    DELETE FROM queue_minutes m WHERE m.minute < $at - interval '1 day'
)
INSERT INTO queue_minutes AS m (owner, queue, minute, completed, failed, ready, scheduled, waiting,
                                running, oldest_ready_at)
SELECT q.owner, q.queue, date_trunc('minute', $at) - interval '1 minute',
       coalesce(c.completed, 0), coalesce(c.failed, 0), coalesce(l.ready, 0),
       coalesce(l.scheduled, 0), coalesce(l.waiting, 0), coalesce(l.running, 0), l.oldest_ready_at
FROM queues q
LEFT JOIN live l ON l.owner = q.owner AND l.queue = q.queue
LEFT JOIN counted c ON c.owner = q.owner AND c.queue = q.queue
ON CONFLICT (owner, queue, minute) DO UPDATE
SET completed = m.completed + excluded.completed, failed = m.failed + excluded.failed,
    ready = excluded.ready, scheduled = excluded.scheduled, waiting = excluded.waiting,
    running = excluded.running, oldest_ready_at = excluded.oldest_ready_at;

-- name: count_blocks(from_block bigint, to_block bigint, at timestamptz)
-- Every identity's live jobs by queue (the launcher reads past row-level security), as at $at,
-- in blocks $from_block up to $to_block of jobs (as _queue_live_counts counts them all).
SELECT j.owner, j.queue::text,
       count(*) FILTER (WHERE _queue_count(j.status, j.run_at, $at) = 1),
       count(*) FILTER (WHERE _queue_count(j.status, j.run_at, $at) = 2),
       count(*) FILTER (WHERE _queue_count(j.status, j.run_at, $at) = 3),
       count(*) FILTER (WHERE _queue_count(j.status, j.run_at, $at) = 4),
       min(j.run_at) FILTER (WHERE _queue_count(j.status, j.run_at, $at) = 1)
FROM jobs j
WHERE j.ctid >= format('(%s,0)', $from_block)::tid AND j.ctid < format('(%s,0)', $to_block)::tid
GROUP BY j.owner, j.queue;

-- name: jobs_blocks
-- How many blocks jobs has now.
SELECT pg_relation_size('jobs') / current_setting('block_size')::bigint;

-- name: soon
-- The next round while blocks are left to count: 10 ms from now, so that the launcher's other
-- services and backends get the CPU between rounds (and a time already past would be taken for
-- one that waits a second: src/bgworker/launcher.rs).
SELECT clock_timestamp() + interval '10 ms';

-- name: next_minute(at timestamptz)
-- The next minute's start after $at.
SELECT date_trunc('minute', $at::timestamptz) + interval '1 minute';
