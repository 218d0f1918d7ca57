-- The statements of src/api/compute_results.rs, run as the extension's owner.

-- name: check_report
-- Of a report of slices $1 with results $2 and measurements $3 .. $7 (null: none taken): whether
-- every array given is as long as the slices, whether a result is null, and whether every
-- measurement is a number from 0 to 1e12. Bounded so that what the fold adds up stays far inside
-- a bigint (and NaN, which sorts above every number, is out of range too): 1e12 ms is 31 years,
-- 1e12 bytes a terabyte.
SELECT NOT coalesce(cardinality($2) <> n OR cardinality($3) <> n OR cardinality($4) <> n
                    OR cardinality($5) <> n OR cardinality($6) <> n OR cardinality($7) <> n, false),
       EXISTS (SELECT FROM unnest($2::text[]) v WHERE v IS NULL),
       NOT EXISTS (SELECT FROM unnest($3::float8[], $4::float8[], $5::float8[], $6::int8[], $7::int8[])
                               u(cpu, gpu, wall, i, o)
                   WHERE NOT (coalesce(u.cpu, 0) BETWEEN 0 AND 1e12 AND coalesce(u.gpu, 0) BETWEEN 0 AND 1e12
                              AND coalesce(u.wall, 0) BETWEEN 0 AND 1e12
                              AND coalesce(u.i, 0) BETWEEN 0 AND 1e12 AND coalesce(u.o, 0) BETWEEN 0 AND 1e12))
FROM (SELECT cardinality($1::integer[]) AS n) s;

-- name: task_job
-- The job of task $1: its id, whether its slices are sent once, and its owner.
SELECT c.job_id, c.duplication_level = 1, c.owner FROM compute_jobs c
WHERE c.job_id = (SELECT s.job_id FROM compute_slices s WHERE s.lease_token = $1 LIMIT 1);

-- name: lock_slices
SELECT _compute_lock_slices($1, $2);

-- name: report
-- The copies of task $1 that role $2 holds, of slices $3, leave for their reports (results $4,
-- measurements $5 .. $9); any other is stale (retasked, resolved by another copy, or its job
-- ended). A slice of job $10 (of owner $12) sent once ($11) is resolved by its one result. Each
-- report's id, slice and whether it is accepted already, in slice order.
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
           CASE WHEN octet_length(h.value) <= current_setting('pg_jobs.compute_inline_result_bytes')::integer
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

-- name: resolve
-- What the reports of slice $2 of job $1 come to, once report $3 is in (_compute_resolve).
SELECT _compute_resolve(c, $2, $3) FROM compute_jobs c WHERE c.job_id = $1;
