-- The statements of src/api/batch_reads.rs, run as the caller: through row-level security, a
-- member reads its own jobs.

-- name: latest_of_hash
SELECT b.* FROM batch_jobs b WHERE b.hash = $1 ORDER BY b.id DESC LIMIT 1;

-- name: history_gaps
-- The ranges of due_at that no month's partition of job_history covers: before the oldest month
-- made, between months, after the newest (from -infinity to infinity when none is made).
SELECT g.since, g.until FROM (
    SELECT coalesce(_utc_midnight((lag(p.month) OVER w + interval '1 month')::date), '-infinity') AS since,
           _utc_midnight(p.month) AS until
    FROM _history_month_partitions() p WINDOW w AS (ORDER BY p.month)
    UNION ALL
    SELECT coalesce(max(_utc_midnight((p.month + interval '1 month')::date)), '-infinity'), 'infinity'
    FROM _history_month_partitions() p) g
WHERE g.since < g.until;

-- name: months_between
-- The UTC months of the finished batch jobs due from $1 to before $2.
SELECT DISTINCT _utc_month(h.due_at) FROM job_history h
WHERE h.due_at >= $1 AND h.due_at < $2 AND _is_batch_queue(h.queue);
