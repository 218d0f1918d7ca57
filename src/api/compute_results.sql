-- The statements of src/api/compute_results.rs, run as the extension's owner.

-- name: task_job(task_token uuid)
-- The job of task $task_token: its id, whether its slices are sent once, its owner, its
-- duplication level, whether it is a race (not a consensus), its estimation slices, and the URL
-- pattern its results are POSTed to (none: they are kept here).
SELECT c.job_id, c.duplication_level = 1, c.owner, c.duplication_level, c.duplication_type = 'race',
       c.estimation_slices, c.result_storage_details
FROM compute_jobs c
WHERE c.job_id = (SELECT s.job_id FROM compute_slices s WHERE s.lease_token = $task_token LIMIT 1);

-- name: lock_slices(job bigint, slices integer[])
-- The locks of slices $slices of job $job, in slice order, under which their copies' results are
-- decided.
SELECT pg_advisory_xact_lock(_lock_key('compute_slice', $job::text || '/' || u.s::text))
FROM (SELECT DISTINCT x AS s FROM unnest($slices::integer[]) x WHERE x IS NOT NULL ORDER BY 1) u;

-- name: report(task_token uuid, role oid, slices integer[], results text[],
-- cpu_ms double precision[], gpu_ms double precision[], wall_ms double precision[],
-- in_bytes bigint[], out_bytes bigint[], job bigint, sent_once boolean, owner oid,
-- result_pattern text)
-- The copies of task $task_token that role $role holds, of slices $slices, leave for their
-- reports (results $results, measurements $cpu_ms, $gpu_ms, $wall_ms, $in_bytes and $out_bytes);
-- any other is stale (retasked, resolved by another copy, or its job ended). A slice of job $job
-- (of owner $owner) sent once ($sent_once) is resolved by its one result. A report keeps its
-- result, or with URL pattern $result_pattern the address its worker POSTed it to (its hash,
-- which decides a consensus, is the result's either way). Each report's id, slice and whether it
-- is accepted already, in slice order.
WITH held AS (
    -- The copies by the task's token, each one's place in $slices found by array_position: a
    -- join with the arrays' unnest was a nested loop that read them again for each copy (a task
    -- of 100 slices: 10,000 rows read, and each matched row's whole unnest row formed for the
    -- DELETE's recheck), five sixths of a submit of 100.
    DELETE FROM compute_slices s
    WHERE s.lease_token = $task_token AND s.last_assigned_worker_identity = $role
      AND s.slice_number = ANY ($slices::integer[])
    RETURNING s.job_id, s.slice_number, s.copy, s.owner, s.last_assigned_worker, s.last_assigned_root,
              s.compute_group_id, array_position($slices::integer[], s.slice_number) AS k
), reported AS (
    INSERT INTO slice_reports (job_id, slice_number, copy, owner, worker_opaque_id, worker_root, compute_group_id,
                               value, value_hash, accepted, cpu_time, gpu_time, wall_time, in_data_size,
                               out_data_size)
    SELECT h.job_id, h.slice_number, h.copy, h.owner, h.last_assigned_worker, h.last_assigned_root, h.compute_group_id,
           CASE WHEN $result_pattern IS NOT NULL THEN _result_url($result_pattern, h.slice_number, h.copy)
                -- The setting read once a statement, not once a row (a subquery of no row's).
                WHEN octet_length(u.value) <= (SELECT current_setting('pg_jobs.compute_inline_result_bytes')::integer)
                THEN 'data:;base64,' || translate(encode(convert_to(u.value, 'UTF8'), 'base64'), E'\n', '')
                ELSE _stored_result(h.job_id, h.owner, u.value) END,
           md5(u.value),
           CASE WHEN $sent_once AND h.copy = 0 THEN true END,
           coalesce(u.cpu, 0), coalesce(u.gpu, 0), coalesce(u.wall, 0), coalesce(u.i, 0), coalesce(u.o, 0)
    FROM held h
    CROSS JOIN LATERAL (SELECT ($results::text[])[h.k] AS value, ($cpu_ms::float8[])[h.k] AS cpu,
                               ($gpu_ms::float8[])[h.k] AS gpu, ($wall_ms::float8[])[h.k] AS wall,
                               ($in_bytes::int8[])[h.k] AS i, ($out_bytes::int8[])[h.k] AS o) u
    RETURNING slice_reports.id, slice_reports.slice_number, slice_reports.accepted, slice_reports.value,
              slice_reports.reported_at
), accepted AS (
    INSERT INTO compute_results (job_id, slice_number, owner, value, completed_at)
    SELECT $job, r.slice_number, $owner, r.value, r.reported_at FROM reported r WHERE r.accepted
)
SELECT r.id, r.slice_number, coalesce(r.accepted, false) FROM reported r ORDER BY r.slice_number;

-- name: slice_reports(job bigint, slice integer)
-- Slice $slice of job $job as its reports decide it: whether it has its result already, its
-- reports' hashes and their identities in the order they came, its copies out, and how many
-- copies were sent (its highest copy + 1).
SELECT EXISTS (SELECT FROM compute_results r WHERE r.job_id = $job AND r.slice_number = $slice),
       ARRAY(SELECT r.value_hash FROM slice_reports r WHERE r.job_id = $job AND r.slice_number = $slice ORDER BY r.id),
       ARRAY(SELECT r.worker_root::bigint FROM slice_reports r WHERE r.job_id = $job AND r.slice_number = $slice ORDER BY r.id),
       (SELECT count(*)::integer FROM compute_slices s WHERE s.job_id = $job AND s.slice_number = $slice),
       (SELECT max(x.copy) + 1 FROM (SELECT s.copy FROM compute_slices s WHERE s.job_id = $job AND s.slice_number = $slice
                                     UNION ALL
                                     SELECT r.copy FROM slice_reports r WHERE r.job_id = $job AND r.slice_number = $slice) x)::integer;

-- name: report_hash(report bigint)
SELECT r.value_hash FROM slice_reports r WHERE r.id = $report;

-- name: accept(job bigint, slice integer, hash text, race boolean)
-- Slice $slice of job $job decided for the result of hash $hash: the reports of it are accepted
-- (under a consensus, $race false, only an identity's first report, its vote, which alone is
-- paid), the first becomes the slice's result, and the copies still out go.
WITH decided AS (
    UPDATE slice_reports r
    SET accepted = (r.value_hash = $hash
                    AND ($race OR NOT EXISTS (SELECT FROM slice_reports e
                                              WHERE e.job_id = $job AND e.slice_number = $slice
                                                AND e.worker_root = r.worker_root AND e.id < r.id)))
    WHERE r.job_id = $job AND r.slice_number = $slice
    RETURNING r.id, r.owner, r.value, r.reported_at, r.accepted
), result AS (
    INSERT INTO compute_results (job_id, slice_number, owner, value, completed_at)
    SELECT $job, $slice, d.owner, d.value, d.reported_at FROM decided d WHERE d.accepted ORDER BY d.id LIMIT 1
)
DELETE FROM compute_slices s WHERE s.job_id = $job AND s.slice_number = $slice;

-- name: tiebreaker(job bigint, slice integer, copy integer, owner oid, estimation boolean)
-- Another copy ($copy) of slice $slice of job $job (of owner $owner) to break a tie; an
-- estimation slice's ($estimation) tiebreaker is one too, or a job in estimation never sends it.
INSERT INTO compute_slices (job_id, slice_number, copy, owner, status, estimation)
VALUES ($job, $slice, $copy, $owner, 'tiebreaker', $estimation);

-- name: refuse_reports(job bigint, slice integer, report bigint)
-- Report $report, or with $report null every report of slice $slice of job $job, not accepted.
UPDATE slice_reports r SET accepted = false
WHERE r.job_id = $job AND r.slice_number = $slice AND ($report IS NULL OR r.id = $report);

-- name: outcome(report bigint)
-- What became of report $report.
SELECT CASE WHEN r.accepted THEN 'accepted' WHEN r.accepted = false THEN 'not accepted' ELSE 'tiebreaker' END
FROM slice_reports r WHERE r.id = $report;
