-- The statements of src/api/compute_results.rs, run as the extension's owner.

-- name: task_job
-- The job of task $1: its id, whether its slices are sent once, its owner, its duplication level,
-- whether it is a race (not a consensus), its estimation slices, and the URL pattern its results
-- are POSTed to (none: they are kept here).
SELECT c.job_id, c.duplication_level = 1, c.owner, c.duplication_level, c.duplication_type = 'race',
       c.estimation_slices, c.result_storage_details
FROM compute_jobs c
WHERE c.job_id = (SELECT s.job_id FROM compute_slices s WHERE s.lease_token = $1 LIMIT 1);

-- name: lock_slices
-- The locks of slices $2 of job $1, in slice order, under which their copies' results are decided.
SELECT pg_advisory_xact_lock(_lock_key('compute_slice', $1::text || '/' || u.s::text))
FROM (SELECT DISTINCT x AS s FROM unnest($2::integer[]) x WHERE x IS NOT NULL ORDER BY 1) u;

-- name: report
-- The copies of task $1 that role $2 holds, of slices $3, leave for their reports (results $4,
-- measurements $5 .. $9); any other is stale (retasked, resolved by another copy, or its job
-- ended). A slice of job $10 (of owner $12) sent once ($11) is resolved by its one result. A report
-- keeps its result, or with URL pattern $13 the address its worker POSTed it to (its hash, which
-- decides a consensus, is the result's either way). Each report's id, slice and whether it is
-- accepted already, in slice order.
WITH held AS (
    DELETE FROM compute_slices s
    USING unnest($3::integer[], $4::text[], $5::float8[], $6::float8[], $7::float8[], $8::int8[], $9::int8[])
          u(slice_number, value, cpu, gpu, wall, i, o)
    WHERE s.lease_token = $1 AND s.last_assigned_worker_identity = $2
      AND s.slice_number = u.slice_number
    RETURNING s.job_id, s.slice_number, s.copy, s.owner, s.last_assigned_worker, s.last_assigned_root,
              s.compute_group_id, u.value, u.cpu, u.gpu, u.wall, u.i, u.o
), reported AS (
    INSERT INTO slice_reports (job_id, slice_number, copy, owner, worker_opaque_id, worker_root, compute_group_id,
                               value, value_hash, accepted, cpu_time, gpu_time, wall_time, in_data_size,
                               out_data_size)
    SELECT h.job_id, h.slice_number, h.copy, h.owner, h.last_assigned_worker, h.last_assigned_root, h.compute_group_id,
           CASE WHEN $13 IS NOT NULL THEN _result_url($13, h.slice_number, h.copy)
                WHEN octet_length(h.value) <= current_setting('pg_jobs.compute_inline_result_bytes')::integer
                THEN 'data:;base64,' || translate(encode(convert_to(h.value, 'UTF8'), 'base64'), E'\n', '')
                ELSE _stored_result(h.job_id, h.owner, h.value) END,
           md5(h.value),
           CASE WHEN $11 AND h.copy = 0 THEN true END,
           coalesce(h.cpu, 0), coalesce(h.gpu, 0), coalesce(h.wall, 0), coalesce(h.i, 0), coalesce(h.o, 0)
    FROM held h
    RETURNING slice_reports.id, slice_reports.slice_number, slice_reports.accepted, slice_reports.value,
              slice_reports.reported_at
), accepted AS (
    INSERT INTO compute_results (job_id, slice_number, owner, value, completed_at)
    SELECT $10, r.slice_number, $12, r.value, r.reported_at FROM reported r WHERE r.accepted
)
SELECT r.id, r.slice_number, coalesce(r.accepted, false) FROM reported r ORDER BY r.slice_number;

-- name: slice_reports
-- Slice $2 of job $1 as its reports decide it: whether it has its result already, its reports'
-- hashes and their identities in the order they came, its copies out, and how many copies were
-- sent (its highest copy + 1).
SELECT EXISTS (SELECT FROM compute_results r WHERE r.job_id = $1 AND r.slice_number = $2),
       ARRAY(SELECT r.value_hash FROM slice_reports r WHERE r.job_id = $1 AND r.slice_number = $2 ORDER BY r.id),
       ARRAY(SELECT r.worker_root::bigint FROM slice_reports r WHERE r.job_id = $1 AND r.slice_number = $2 ORDER BY r.id),
       (SELECT count(*)::integer FROM compute_slices s WHERE s.job_id = $1 AND s.slice_number = $2),
       (SELECT max(x.copy) + 1 FROM (SELECT s.copy FROM compute_slices s WHERE s.job_id = $1 AND s.slice_number = $2
                                     UNION ALL
                                     SELECT r.copy FROM slice_reports r WHERE r.job_id = $1 AND r.slice_number = $2) x)::integer;

-- name: report_hash
SELECT r.value_hash FROM slice_reports r WHERE r.id = $1;

-- name: accept
-- Slice $2 of job $1 decided for the result of hash $3: the reports of it are accepted (under a
-- consensus, $4 false, only an identity's first report, its vote, which alone is paid), the first
-- becomes the slice's result, and the copies still out go.
WITH decided AS (
    UPDATE slice_reports r
    SET accepted = (r.value_hash = $3
                    AND ($4 OR NOT EXISTS (SELECT FROM slice_reports e
                                           WHERE e.job_id = $1 AND e.slice_number = $2
                                             AND e.worker_root = r.worker_root AND e.id < r.id)))
    WHERE r.job_id = $1 AND r.slice_number = $2
    RETURNING r.id, r.owner, r.value, r.reported_at, r.accepted
), result AS (
    INSERT INTO compute_results (job_id, slice_number, owner, value, completed_at)
    SELECT $1, $2, d.owner, d.value, d.reported_at FROM decided d WHERE d.accepted ORDER BY d.id LIMIT 1
)
DELETE FROM compute_slices s WHERE s.job_id = $1 AND s.slice_number = $2;

-- name: tiebreaker
-- Another copy ($3) of slice $2 of job $1 (of owner $4) to break a tie; an estimation slice's ($5)
-- tiebreaker is one too, or a job in estimation never sends it.
INSERT INTO compute_slices (job_id, slice_number, copy, owner, status, estimation)
VALUES ($1, $2, $3, $4, 'tiebreaker', $5);

-- name: refuse_reports
-- Report $3, or with $3 null every report of slice $2 of job $1, not accepted.
UPDATE slice_reports r SET accepted = false
WHERE r.job_id = $1 AND r.slice_number = $2 AND ($3 IS NULL OR r.id = $3);

-- name: outcome
-- What became of report $1.
SELECT CASE WHEN r.accepted THEN 'accepted' WHEN r.accepted = false THEN 'not accepted' ELSE 'tiebreaker' END
FROM slice_reports r WHERE r.id = $1;
