-- Named statements of src/api/queue_minutes.rs.

-- name: write_minute
-- The minute that ended before $1, each queue's row: its completions and failed attempts counted
-- in shared memory ($2 owners, $3 queues, $4 completions, $5 failures) and its live jobs counted
-- now (_queue_live_counts: every identity's, as the launcher reads past row-level security), for
-- every queue that has live jobs, counts, or had live jobs at the last minute written (a row of
-- zeros: a queue's last row then says what it has now, which jobs_queues_counted reads). A row
-- of that minute already written (the launcher started again within it) gains the counts. Rows
-- older than a day go.
WITH live AS (
    SELECT * FROM _queue_live_counts()
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

-- name: next_minute
-- The next minute's start after $1.
SELECT date_trunc('minute', $1::timestamptz) + interval '1 minute';
