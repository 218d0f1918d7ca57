-- The statements of src/api/compute_deploy.rs, run as the extension's owner.

-- name: numbers(spec jsonb)
-- The deployment's numbers, read before anything else is checked, in this order (a cast that
-- fails refuses the deployment as such): its duplication level, its offer, its market value
-- multiplier, its funds (amounts of DCC: _amount refuses any other), its largest task, its
-- estimation slices.
SELECT coalesce(($spec ->> 'duplication_level')::double precision, 1.0), _amount($spec, 'offer'),
       _amount($spec, 'market_value'), coalesce(_amount($spec, 'funds'), 0),
       coalesce(($spec ->> 'max_slices_per_task')::integer, 10),
       coalesce(($spec ->> 'estimation_slices')::integer, 3);

-- name: values(spec jsonb)
-- The deployment's input set's list of values.
SELECT $spec #> '{input,values}';

-- name: range_texts(spec jsonb)
-- The deployment's input range's start, end and step as given, and the range as text.
SELECT $spec #>> '{input,range,start}', $spec #>> '{input,range,end}',
       $spec #>> '{input,range,step}', ($spec #> '{input,range}')::text;

-- name: range_slices(start text, end text, step text)
-- Whether the range from $start to $end by $step (1 when null), numbers each, is of finite
-- numbers in bounds (null when start or end is missing; NaN and ±Infinity are numeric values too),
-- and then how many slices it gives (none below 0, and past 2147483647 only that it is past).
SELECT r.fits, CASE WHEN r.fits THEN least(greatest(floor((r.e - r.s) / r.st) + 1, 0), 2147483648)::bigint END
FROM (SELECT x.s, x.e, x.st,
             x.s BETWEEN -1e15 AND 1e15 AND x.e BETWEEN -1e15 AND 1e15 AND x.st BETWEEN 1e-15 AND 1e15 AS fits
      FROM (SELECT $start::numeric AS s, $end::numeric AS e, coalesce($step::numeric, 1) AS st) x) r;

-- name: pattern(spec jsonb)
-- The deployment's input pattern: its details as kept, its count of slices, and whether its
-- pattern has {slice} (null: no pattern).
SELECT jsonb_build_object('pattern', $spec #>> '{input,pattern}',
                          'count', $spec #> '{input,count}')::text,
       ($spec #>> '{input,count}')::integer, position('{slice}' IN $spec #>> '{input,pattern}') > 0;

-- name: market_scale(market_value numeric)
-- Whether a market value multiplier of $market_value makes a slice payment of more than 18
-- decimals.
SELECT scale($market_value * compute_market_value()) > 18;

-- name: group(opaque_id uuid)
-- The compute group whose opaque id is $opaque_id: its id, its owner, whether it takes the
-- deployments of those who join it, and whether this deployment holds it (kept from being dropped
-- until the deployment ends). Its row is tried, not waited for: its owner may hold it in a
-- transaction left open.
SELECT g.id, g.owner, g.deploy_access = 'join',
       EXISTS (SELECT FROM compute_groups x WHERE x.id = g.id FOR KEY SHARE SKIP LOCKED)
FROM compute_groups g WHERE g.opaque_id = $opaque_id;

-- name: fees(groups bigint[], funds numeric)
-- The fees of the groups (each one's deploy and add-job fee), and whether they exceed the funds.
SELECT f.fees, f.fees > $funds
FROM (SELECT coalesce(sum(coalesce(g.deploy_fee, 0) + coalesce(g.add_job_fee, 0)), 0) AS fees
      FROM compute_groups g WHERE g.id = ANY ($groups)) f;

-- name: take_job_budget(groups bigint[])
-- One job off the budget of each of the groups that has one; whether one of them had none left.
WITH taken AS (
    UPDATE compute_group_accounting_data a SET remaining_jobs = a.remaining_jobs - 1
    WHERE a.compute_group_id = ANY ($groups) AND a.remaining_jobs IS NOT NULL
    RETURNING a.remaining_jobs
)
SELECT EXISTS (SELECT FROM taken t WHERE t.remaining_jobs < 0);

-- name: add_job(owner oid, spec jsonb)
-- The owner's compute job of the deployment, as a row of jobs that nobody claims (its public
-- fields, and who owns it); its id.
INSERT INTO jobs (owner, claimable_by, task, queue, priority, run_at, max_attempts, backoff, max_backoff,
                  lease, payload, due_at, name, description, link, listed)
VALUES ($owner, _extension_claimant(), coalesce(nullif($spec ->> 'name', ''), 'compute job'),
        'pg_jobs.compute', 0, 'infinity', 1, '0', '0', '1 hour', '{}', now(),
        $spec ->> 'name', $spec ->> 'description', $spec ->> 'link',
        coalesce(($spec ->> 'listed')::boolean, false))
RETURNING id;

-- name: add_compute_job(job bigint, owner oid, spec jsonb, slices integer,
--                        max_slices_per_task integer, offer numeric, market_value numeric,
--                        duplication_level double precision, duplication_type text,
--                        flags integer, capabilities integer, data_storage_type text,
--                        data_storage_details text, worktime_version text, funds numeric,
--                        fees numeric, estimation_slices integer, result_url text,
--                        result_params jsonb)
-- The owner's job's own columns, from the deployment: a slice pays $offer, or $market_value times
-- compute_market_value(); its funds are $funds less $fees; its results are POSTed to URL pattern
-- $result_url with parameters $result_params (none: kept in the database).
INSERT INTO compute_jobs (job_id, owner, status, address, payment_account, last_slice_number, next_slice_number,
                          max_slices_per_task, absolute_slice_payment, mv_mult_slice_payment,
                          duplication_level, duplication_type, flags, need_capabilities,
                          data_storage_type, data_storage_details, result_storage_type,
                          result_storage_details, worktime, worktime_version, slice_payment, funds,
                          estimation_slices, result_storage_params)
VALUES ($job, $owner, 'new', 'escrow:' || $job, $spec ->> 'payment_account', $slices, 1,
        $max_slices_per_task, coalesce($offer, 0), coalesce($market_value, 0), $duplication_level,
        $duplication_type, $flags, $capabilities, $data_storage_type, $data_storage_details,
        CASE WHEN $result_url IS NULL THEN 'pgjobs' ELSE 'pattern' END, $result_url,
        coalesce($spec ->> 'worktime', 'map-basic'), $worktime_version,
        coalesce($offer, $market_value * compute_market_value()), $funds - $fees, $estimation_slices,
        $result_params);

-- name: add_job_parts(job bigint, owner oid, spec jsonb, estimation_slices integer,
--                      slices integer, fees numeric, groups bigint[])
-- The rest of the owner's job, from the deployment: its performance (its estimation slices, no
-- more than its slices), its money (its fees), its work function and arguments as URIs, and its
-- groups.
WITH perf AS (
    INSERT INTO compute_perf_data (job_id, owner, estimation_slices_remaining)
    VALUES ($job, $owner, least($estimation_slices, $slices))
), fin AS (
    INSERT INTO compute_fin_totals (job_id, owner, fees) VALUES ($job, $owner, $fees)
), work AS (
    INSERT INTO work_functions (job_id, owner, value, require_path, module_path, dependencies)
    VALUES ($job, $owner, _as_uri($spec ->> 'work'), _text_array($spec -> 'require_path'),
            _text_array($spec -> 'module_path'), $spec -> 'dependencies')
), arguments AS (
    INSERT INTO compute_arguments (job_id, owner, arg_index, value)
    SELECT $job, $owner, a.n - 1, _as_uri(a.v)
    FROM jsonb_array_elements_text(coalesce($spec -> 'arguments', '[]')) WITH ORDINALITY a(v, n)
)
INSERT INTO compute_group_jobs (compute_group_id, job_id, job_owner, fee)
SELECT g.id, $job, $owner, coalesce(g.deploy_fee, 0) + coalesce(g.add_job_fee, 0)
FROM compute_groups g WHERE g.id = ANY ($groups);

-- name: add_values(job bigint, owner oid, first_slice bigint, values jsonb)
-- The values (a JSON array) of the owner's job's slices from slice $first_slice on, each as a
-- URI.
INSERT INTO compute_data (job_id, owner, slice_number, value)
SELECT $job, $owner, ($first_slice + v.n - 1)::integer, _as_uri(v.value)
FROM jsonb_array_elements_text($values) WITH ORDINALITY v(value, n);

-- name: add_copies(job bigint, owner oid, first_slice bigint, count integer)
-- The copies of the owner's job's $count slices from slice $first_slice on, as many of each as
-- its duplication level sends; the first of its estimation slices are estimation slices.
INSERT INTO compute_slices (job_id, slice_number, copy, owner, estimation)
SELECT $job, s, k, $owner, s <= c.estimation_slices
FROM compute_jobs c,
     generate_series($first_slice::integer, ($first_slice + $count - 1)::integer) s,
     generate_series(0, _slice_copies($job, s, c.duplication_level) - 1) k
WHERE c.job_id = $job;

-- name: slices_table
SELECT 'compute_slices'::regclass::oid;

-- name: analyze_slices
ANALYZE compute_slices;
