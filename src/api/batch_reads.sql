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

-- name: active_ids
-- The ids of the caller's newest active batch jobs with status words $1 (any when null), $2 from
-- the $3-th, read backwards from the jobs' columns until enough are found. (Through
-- _batch_selection, the planner sorted every active job.)
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND ($1::text[] IS NULL OR _batch_row_status(j.status, j.run_at, j.id, j.progress, j.lease_token) = ANY ($1))
    ORDER BY j.id DESC LIMIT $2 OFFSET $3);

-- name: active_found
-- batch_find of the active jobs with status words $1: the rows of jobs $2, newest first, and the
-- total and the counts by status, counted without reading the jobs (see _batch_active_counts).
WITH c AS MATERIALIZED (
    SELECT a.status, sum(a.n)::bigint AS n FROM _batch_active_counts() a
    WHERE $1::text[] IS NULL OR a.status = ANY ($1)
    GROUP BY a.status HAVING sum(a.n) <> 0
)
SELECT jsonb_build_object(
    'rows', coalesce((SELECT jsonb_agg(to_jsonb(b) ORDER BY b.id DESC)
                      FROM batch_active b WHERE b.id = ANY ($2)), '[]'),
    'total', (SELECT coalesce(sum(c.n), 0)::bigint FROM c),
    'counts', coalesce((SELECT jsonb_object_agg(c.status, c.n) FROM c), '{}'),
    'months', (SELECT coalesce(jsonb_agg(m.month ORDER BY m.month DESC), '[]') FROM _batch_month_list() m));

-- name: found
-- batch_find of month $1 (active jobs when null), status words $2 and text $3: $4 rows from the
-- $5-th, newest first, the total and the counts by status. Three reads of the selection rather
-- than one kept whole: each computes only the columns it uses (the count and the counts neither
-- masked arguments nor blocked reasons).
SELECT jsonb_build_object(
    'rows', coalesce((SELECT jsonb_agg(to_jsonb(p) ORDER BY p.id DESC)
                      FROM (SELECT * FROM _batch_selection($1, $2, $3) b ORDER BY b.id DESC
                            LIMIT $4 OFFSET $5) p), '[]'),
    'total', (SELECT count(*) FROM _batch_selection($1, $2, $3)),
    'counts', coalesce((SELECT jsonb_object_agg(c.status, c.n)
                        FROM (SELECT b.status, count(*) AS n FROM _batch_selection($1, $2, $3) b
                              GROUP BY b.status) c), '{}'),
    'months', (SELECT coalesce(jsonb_agg(m.month ORDER BY m.month DESC), '[]') FROM _batch_month_list() m));

-- name: active_groups
-- The caller's active batch jobs with status words $2 in groups by $1, counted without reading
-- them (see _batch_active_counts): each group's key, its most pressing status, its count, its
-- count per status and when its first job was due; the latest first.
SELECT g.key, _batch_status_word(min(g.rank)), sum(g.n)::bigint, jsonb_object_agg(g.status, g.n),
       min(g.first_due)
FROM (SELECT _batch_group_key($1, c.due_minute, c.label, NULL, c.status, c.place, NULL) AS key,
             c.status, _batch_status_rank(c.status) AS rank, sum(c.n)::bigint AS n,
             min(c.first_due) AS first_due
      FROM _batch_active_counts() c
      WHERE $2::text[] IS NULL OR c.status = ANY ($2)
      GROUP BY 1, 2
      HAVING sum(c.n) <> 0) g
GROUP BY g.key
ORDER BY min(g.first_due) DESC, g.key;

-- name: groups
-- The caller's batch jobs of month $2 (active ones when null) with status words $3 and text $4,
-- in groups by $1, as active_groups has them, read.
SELECT g.key, _batch_status_word(min(g.rank)), sum(g.n)::bigint, jsonb_object_agg(g.status, g.n),
       min(g.first_due)
FROM (SELECT _batch_group_key($1, b.due_at, b.routine, b.command, b.status, b.target, b.computer) AS key,
             b.status, _batch_status_rank(b.status) AS rank, count(*) AS n, min(b.due_at) AS first_due
      FROM _batch_selection($2, $3, $4) b
      GROUP BY 1, 2) g
GROUP BY g.key
ORDER BY min(g.first_due) DESC, g.key;

-- name: minute_ids
-- The ids of the caller's newest active batch jobs of routine (or command) $1 due in the minute
-- from $2 with status words $3 (any when null), $4 from the $5-th: an index range of the routine
-- and the minute.
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND _batch_label(j.payload) = $1
      AND j.due_at >= $2 AND j.due_at < $2 + interval '1 minute'
      AND ($3::text[] IS NULL OR _batch_row_status(j.status, j.run_at, j.id, j.progress, j.lease_token) = ANY ($3))
    ORDER BY j.id DESC LIMIT $4 OFFSET $5);

-- name: routine_ids
-- The same for routine (or command) $1, any minute.
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND _batch_label(j.payload) = $1
      AND ($3::text[] IS NULL OR _batch_row_status(j.status, j.run_at, j.id, j.progress, j.lease_token) = ANY ($3))
    ORDER BY j.id DESC LIMIT $4 OFFSET $5);

-- name: computer_ids
-- The same for the jobs of computer $1: the one that took a job, else the one it was posted for.
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND coalesce(CASE WHEN j.status <> 'created' THEN j.locked_by END, j.payload ->> 'computer') = $1
      AND ($3::text[] IS NULL OR _batch_row_status(j.status, j.run_at, j.id, j.progress, j.lease_token) = ANY ($3))
    ORDER BY j.id DESC LIMIT $4 OFFSET $5);

-- name: pending_ids
-- The same for the jobs due (PENDING, $1), if status words $3 take it: an index range of run_at,
-- or the newest first, as the planner finds cheaper.
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND j.status = 'created' AND j.run_at <= statement_timestamp()
      AND ($3::text[] IS NULL OR $1 = ANY ($3))
    ORDER BY j.id DESC LIMIT $4 OFFSET $5);

-- name: waiting_ids
-- The same for the jobs waiting for their time or their dependencies (WAITING, $1).
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND j.status = 'created' AND j.run_at > statement_timestamp()
      AND _batch_row_status(j.status, j.run_at, j.id, j.progress, j.lease_token) = $1
      AND ($3::text[] IS NULL OR $1 = ANY ($3))
    ORDER BY j.id DESC LIMIT $4 OFFSET $5);

-- name: untallied_ids
-- The same for another status word $1: the untallied jobs' (and few).
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND (j.progress IS NOT NULL OR j.run_at = 'infinity')
      AND _batch_row_status(j.status, j.run_at, j.id, j.progress, j.lease_token) = $1
      AND ($3::text[] IS NULL OR $1 = ANY ($3))
    ORDER BY j.id DESC LIMIT $4 OFFSET $5);

-- name: active_rows
-- Jobs $1 as batch_active shows them, newest first.
SELECT b.* FROM batch_active b WHERE b.id = ANY ($1) ORDER BY b.id DESC;

-- name: group_rows
-- The jobs of group $5 (by $4) of the selection of month $1, status words $2 and text $3, $6
-- from the $7-th, newest first.
SELECT b.* FROM _batch_selection($1, $2, $3) b
WHERE _batch_group_key($4, b.due_at, b.routine, b.command, b.status, b.target, b.computer) = $5
ORDER BY b.id DESC
LIMIT $6 OFFSET $7;
