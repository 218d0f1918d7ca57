-- The statements of src/api/compute_deploy.rs, run as the extension's owner.

-- name: numbers
-- Deployment $1's numbers, read before anything else is checked, in this order (a cast that fails
-- refuses the deployment as such): its duplication level, its offer, its market value multiplier,
-- its funds (amounts of DCC: _amount refuses any other), its largest task, its estimation slices.
SELECT coalesce(($1 ->> 'duplication_level')::double precision, 1.0), _amount($1, 'offer'),
       _amount($1, 'market_value'), coalesce(_amount($1, 'funds'), 0),
       coalesce(($1 ->> 'max_slices_per_task')::integer, 10), coalesce(($1 ->> 'estimation_slices')::integer, 3);

-- name: values
-- Deployment $1's input set's list of values.
SELECT $1 #> '{input,values}';

-- name: range_texts
-- Deployment $1's input range's start, end and step as given, and the range as text.
SELECT $1 #>> '{input,range,start}', $1 #>> '{input,range,end}', $1 #>> '{input,range,step}',
       ($1 #> '{input,range}')::text;

-- name: range_slices
-- Whether the range from $1 to $2 by $3 (1 when null), numbers each, is of finite numbers in
-- bounds (null when start or end is missing; NaN and ±Infinity are numeric values too), and then
-- how many slices it gives (none below 0, and past 2147483647 only that it is past).
SELECT r.fits, CASE WHEN r.fits THEN least(greatest(floor((r.e - r.s) / r.st) + 1, 0), 2147483648)::bigint END
FROM (SELECT x.s, x.e, x.st,
             x.s BETWEEN -1e15 AND 1e15 AND x.e BETWEEN -1e15 AND 1e15 AND x.st BETWEEN 1e-15 AND 1e15 AS fits
      FROM (SELECT $1::numeric AS s, $2::numeric AS e, coalesce($3::numeric, 1) AS st) x) r;

-- name: pattern
-- Deployment $1's input pattern: its details as kept, its count of slices, and whether its pattern
-- has {slice} (null: no pattern).
SELECT jsonb_build_object('pattern', $1 #>> '{input,pattern}', 'count', $1 #> '{input,count}')::text,
       ($1 #>> '{input,count}')::integer, position('{slice}' IN $1 #>> '{input,pattern}') > 0;

-- name: market_scale
-- Whether a market value multiplier of $1 makes a slice payment of more than 18 decimals.
SELECT scale($1 * compute_market_value()) > 18;

-- name: group
-- Compute group $1: its id, its owner, whether it takes the deployments of those who join it,
-- and whether this deployment holds it (kept from being dropped until the deployment ends). Its
-- row is tried, not waited for: its owner may hold it in a transaction left open.
SELECT g.id, g.owner, g.deploy_access = 'join',
       EXISTS (SELECT FROM compute_groups x WHERE x.id = g.id FOR KEY SHARE SKIP LOCKED)
FROM compute_groups g WHERE g.opaque_id = $1;

-- name: fees
-- The fees of groups $1 (each one's deploy and add-job fee), and whether they exceed funds $2.
SELECT f.fees, f.fees > $2
FROM (SELECT coalesce(sum(coalesce(g.deploy_fee, 0) + coalesce(g.add_job_fee, 0)), 0) AS fees
      FROM compute_groups g WHERE g.id = ANY ($1)) f;

-- name: take_job_budget
-- One job off the budget of each of groups $1 that has one; whether one of them had none left.
WITH taken AS (
    UPDATE compute_group_accounting_data a SET remaining_jobs = a.remaining_jobs - 1
    WHERE a.compute_group_id = ANY ($1) AND a.remaining_jobs IS NOT NULL
    RETURNING a.remaining_jobs
)
SELECT EXISTS (SELECT FROM taken t WHERE t.remaining_jobs < 0);

-- name: add_job
-- Identity $1's compute job of deployment $2, as a row of jobs that nobody claims (its public
-- fields, and who owns it); its id.
INSERT INTO jobs (owner, claimable_by, task, queue, priority, run_at, max_attempts, backoff, max_backoff,
                  lease, payload, due_at, name, description, link, listed)
VALUES ($1, _extension_claimant(), coalesce(nullif($2 ->> 'name', ''), 'compute job'),
        'pg_jobs.compute', 0, 'infinity', 1, '0', '0', '1 hour', '{}', now(),
        $2 ->> 'name', $2 ->> 'description', $2 ->> 'link', coalesce(($2 ->> 'listed')::boolean, false))
RETURNING id;

-- name: result_origins
-- The origins groups $1 let their workers send results to, a row a group.
SELECT g.opaque_id, ARRAY(SELECT o.origin FROM compute_group_worker_origins o
                          WHERE o.compute_group_id = g.id AND o.type IN ('any', 'sendResults'))
FROM compute_groups g WHERE g.id = ANY ($1)
ORDER BY g.id;

-- name: add_compute_job
-- Job $1's (of identity $2, deployment $3) own columns: $4 slices, $5 at most a task, offer $6 or
-- multiplier $7, duplication $8 of type $9, flags $10, capabilities $11, input of type $12 with
-- details $13, worktime versions $14, funds $15 less fees $16, estimation slices $17, results
-- POSTed to URL pattern $18 with parameters $19 (none: kept in the database).
INSERT INTO compute_jobs (job_id, owner, status, address, payment_account, last_slice_number, next_slice_number,
                          max_slices_per_task, absolute_slice_payment, mv_mult_slice_payment,
                          duplication_level, duplication_type, flags, need_capabilities,
                          data_storage_type, data_storage_details, result_storage_type,
                          result_storage_details, worktime, worktime_version, slice_payment, funds,
                          estimation_slices, result_storage_params)
VALUES ($1, $2, 'new', 'escrow:' || $1, $3 ->> 'payment_account', $4, 1, $5,
        coalesce($6, 0), coalesce($7, 0), $8, $9, $10, $11, $12, $13,
        CASE WHEN $18 IS NULL THEN 'pgjobs' ELSE 'pattern' END, $18, coalesce($3 ->> 'worktime', 'map-basic'), $14,
        coalesce($6, $7 * compute_market_value()), $15 - $16, $17, $19);

-- name: add_job_parts
-- The rest of job $1 (of identity $2, deployment $3): its performance ($4 estimation slices of its
-- $5), its money (fees $6), its work function and arguments as URIs, and its groups $7.
WITH perf AS (
    INSERT INTO compute_perf_data (job_id, owner, estimation_slices_remaining) VALUES ($1, $2, least($4, $5))
), fin AS (
    INSERT INTO compute_fin_totals (job_id, owner, fees) VALUES ($1, $2, $6)
), work AS (
    INSERT INTO work_functions (job_id, owner, value, require_path, module_path, dependencies)
    VALUES ($1, $2, _as_uri($3 ->> 'work'), _text_array($3 -> 'require_path'), _text_array($3 -> 'module_path'),
            $3 -> 'dependencies')
), arguments AS (
    INSERT INTO compute_arguments (job_id, owner, arg_index, value)
    SELECT $1, $2, a.n - 1, _as_uri(a.v)
    FROM jsonb_array_elements_text(coalesce($3 -> 'arguments', '[]')) WITH ORDINALITY a(v, n)
)
INSERT INTO compute_group_jobs (compute_group_id, job_id, job_owner, fee)
SELECT g.id, $1, $2, coalesce(g.deploy_fee, 0) + coalesce(g.add_job_fee, 0)
FROM compute_groups g WHERE g.id = ANY ($7);

-- name: add_values
-- Values $4 (a JSON array) of job $1's (of identity $2) slices from slice $3 on, each as a URI.
INSERT INTO compute_data (job_id, owner, slice_number, value)
SELECT $1, $2, ($3 + v.n - 1)::integer, _as_uri(v.value)
FROM jsonb_array_elements_text($4) WITH ORDINALITY v(value, n);

-- name: add_copies
-- The copies of job $1's (of identity $2) $4 slices from slice $3 on, as many of each as its
-- duplication level sends; the first of its estimation slices are estimation slices.
INSERT INTO compute_slices (job_id, slice_number, copy, owner, estimation)
SELECT $1, s, k, $2, s <= c.estimation_slices
FROM compute_jobs c,
     generate_series($3::integer, ($3 + $4 - 1)::integer) s,
     generate_series(0, _slice_copies($1, s, c.duplication_level) - 1) k
WHERE c.job_id = $1;

-- name: analyze_slices
ANALYZE compute_slices;
