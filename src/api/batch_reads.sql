-- The statements of src/api/batch_reads.rs, run as the caller: through row-level security, a
-- member reads its own jobs.

-- name: latest_of_hash(hash text)
SELECT b.* FROM batch_jobs b WHERE b.hash = $hash ORDER BY b.id DESC LIMIT 1;

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

-- name: months_between(since timestamptz, until timestamptz)
-- The UTC months of the finished batch jobs due from since to before until.
SELECT DISTINCT _utc_month(h.due_at) FROM job_history h
WHERE h.due_at >= $since AND h.due_at < $until AND _is_batch_queue(h.queue);

-- name: active_ids(statuses text[], limit_rows integer, offset_rows integer)
-- The ids of the caller's newest active batch jobs with the status words (any when null),
-- limit_rows from the offset_rows-th, read backwards from the jobs' columns until enough are
-- found. (Through _batch_selection, the planner sorted every active job.)
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND ($statuses::text[] IS NULL OR _batch_row_status(j.status, j.run_at, j.id, j.progress, j.lease_token) = ANY ($statuses))
    ORDER BY j.id DESC LIMIT $limit_rows OFFSET $offset_rows);

-- name: active_found(statuses text[], ids bigint[])
-- batch_find of the active jobs with the status words: the rows of jobs ids, newest first, and
-- the total and the counts by status, counted without reading the jobs (see
-- _batch_active_counts).
WITH c AS MATERIALIZED (
    SELECT a.status, sum(a.n)::bigint AS n FROM _batch_active_counts() a
    WHERE $statuses::text[] IS NULL OR a.status = ANY ($statuses)
    GROUP BY a.status HAVING sum(a.n) <> 0
)
SELECT jsonb_build_object(
    'rows', coalesce((SELECT jsonb_agg(to_jsonb(b) ORDER BY b.id DESC)
                      FROM batch_active b WHERE b.id = ANY ($ids)), '[]'),
    'total', (SELECT coalesce(sum(c.n), 0)::bigint FROM c),
    'counts', coalesce((SELECT jsonb_object_agg(c.status, c.n) FROM c), '{}'),
    'months', (SELECT coalesce(jsonb_agg(m.month ORDER BY m.month DESC), '[]') FROM _batch_month_list() m));

-- name: found(month date, statuses text[], search text, limit_rows integer,
--             offset_rows integer)
-- batch_find of the month (active jobs when null), the status words and the text searched for:
-- limit_rows rows from the offset_rows-th, newest first, the total and the counts by status.
-- Three reads of the selection rather than one kept whole: each computes only the columns it
-- uses (the count and the counts neither masked arguments nor blocked reasons).
SELECT jsonb_build_object(
    'rows', coalesce((SELECT jsonb_agg(to_jsonb(p) ORDER BY p.id DESC)
                      FROM (SELECT * FROM _batch_selection($month, $statuses, $search) b ORDER BY b.id DESC
                            LIMIT $limit_rows OFFSET $offset_rows) p), '[]'),
    'total', (SELECT count(*) FROM _batch_selection($month, $statuses, $search)),
    'counts', coalesce((SELECT jsonb_object_agg(c.status, c.n)
                        FROM (SELECT b.status, count(*) AS n FROM _batch_selection($month, $statuses, $search) b
                              GROUP BY b.status) c), '{}'),
    'months', (SELECT coalesce(jsonb_agg(m.month ORDER BY m.month DESC), '[]') FROM _batch_month_list() m));

-- name: active_groups(by text, statuses text[])
-- The caller's active batch jobs with the status words in groups by `by`, counted without
-- reading them (see _batch_active_counts): each group's key, its most pressing status, its
-- count, its count per status and when its first job was due; the latest first.
SELECT g.key, _batch_status_word(min(g.rank)), sum(g.n)::bigint, jsonb_object_agg(g.status, g.n),
       min(g.first_due)
FROM (SELECT _batch_group_key($by, c.due_minute, c.label, NULL, c.status, c.place, NULL) AS key,
             c.status, _batch_status_rank(c.status) AS rank, sum(c.n)::bigint AS n,
             min(c.first_due) AS first_due
      FROM _batch_active_counts() c
      WHERE $statuses::text[] IS NULL OR c.status = ANY ($statuses)
      GROUP BY 1, 2
      HAVING sum(c.n) <> 0) g
GROUP BY g.key
ORDER BY min(g.first_due) DESC, g.key;

-- name: groups(by text, month date, statuses text[], search text)
-- The caller's batch jobs of the month (active ones when null) with the status words and the
-- text searched for, in groups by `by`, as active_groups has them, read.
SELECT g.key, _batch_status_word(min(g.rank)), sum(g.n)::bigint, jsonb_object_agg(g.status, g.n),
       min(g.first_due)
FROM (SELECT _batch_group_key($by, b.due_at, b.routine, b.command, b.status, b.target, b.computer) AS key,
             b.status, _batch_status_rank(b.status) AS rank, count(*) AS n, min(b.due_at) AS first_due
      FROM _batch_selection($month, $statuses, $search) b
      GROUP BY 1, 2) g
GROUP BY g.key
ORDER BY min(g.first_due) DESC, g.key;

-- name: minute_ids(label text, minute timestamptz, statuses text[], limit_rows integer,
--                  offset_rows integer)
-- The ids of the caller's newest active batch jobs of the routine (or command) label due in the
-- minute from `minute` with the status words (any when null), limit_rows from the
-- offset_rows-th: an index range of the routine and the minute.
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND _batch_label(j.payload) = $label
      AND j.due_at >= $minute AND j.due_at < $minute + interval '1 minute'
      AND ($statuses::text[] IS NULL OR _batch_row_status(j.status, j.run_at, j.id, j.progress, j.lease_token) = ANY ($statuses))
    ORDER BY j.id DESC LIMIT $limit_rows OFFSET $offset_rows);

-- name: routine_ids(label text, statuses text[], limit_rows integer, offset_rows integer)
-- The same for the routine (or command) label, any minute.
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND _batch_label(j.payload) = $label
      AND ($statuses::text[] IS NULL OR _batch_row_status(j.status, j.run_at, j.id, j.progress, j.lease_token) = ANY ($statuses))
    ORDER BY j.id DESC LIMIT $limit_rows OFFSET $offset_rows);

-- name: computer_ids(computer text, statuses text[], limit_rows integer, offset_rows integer)
-- The same for the jobs of a computer: the one that took a job, else the one it was posted for.
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND coalesce(CASE WHEN j.status <> 'created' THEN j.locked_by END, j.payload ->> 'computer') = $computer
      AND ($statuses::text[] IS NULL OR _batch_row_status(j.status, j.run_at, j.id, j.progress, j.lease_token) = ANY ($statuses))
    ORDER BY j.id DESC LIMIT $limit_rows OFFSET $offset_rows);

-- name: pending_ids(status text, statuses text[], limit_rows integer, offset_rows integer)
-- The same for the jobs due (status PENDING), if the status words take it: an index range of
-- run_at, or the newest first, as the planner finds cheaper.
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND j.status = 'created' AND j.run_at <= statement_timestamp()
      AND ($statuses::text[] IS NULL OR $status = ANY ($statuses))
    ORDER BY j.id DESC LIMIT $limit_rows OFFSET $offset_rows);

-- name: waiting_ids(status text, statuses text[], limit_rows integer, offset_rows integer)
-- The same for the jobs waiting for their time or their dependencies (status WAITING).
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND j.status = 'created' AND j.run_at > statement_timestamp()
      AND _batch_row_status(j.status, j.run_at, j.id, j.progress, j.lease_token) = $status
      AND ($statuses::text[] IS NULL OR $status = ANY ($statuses))
    ORDER BY j.id DESC LIMIT $limit_rows OFFSET $offset_rows);

-- name: untallied_ids(status text, statuses text[], limit_rows integer, offset_rows integer)
-- The same for another status word: the untallied jobs' (and few).
SELECT ARRAY(
    SELECT j.id FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
      AND (j.progress IS NOT NULL OR j.run_at = 'infinity')
      AND _batch_row_status(j.status, j.run_at, j.id, j.progress, j.lease_token) = $status
      AND ($statuses::text[] IS NULL OR $status = ANY ($statuses))
    ORDER BY j.id DESC LIMIT $limit_rows OFFSET $offset_rows);

-- name: active_rows(ids bigint[])
-- The jobs as batch_active shows them, newest first.
SELECT b.* FROM batch_active b WHERE b.id = ANY ($ids) ORDER BY b.id DESC;

-- name: group_rows(month date, statuses text[], search text, by text, group_key text,
--                  limit_rows integer, offset_rows integer)
-- The jobs of the group (its key grouped by `by`) of the selection of the month, the status
-- words and the text searched for, limit_rows from the offset_rows-th, newest first.
SELECT b.* FROM _batch_selection($month, $statuses, $search) b
WHERE _batch_group_key($by, b.due_at, b.routine, b.command, b.status, b.target, b.computer) = $group_key
ORDER BY b.id DESC
LIMIT $limit_rows OFFSET $offset_rows;
