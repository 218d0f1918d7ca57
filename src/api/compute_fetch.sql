-- The statements of src/api/compute_fetch.rs, run as the extension's owner.

-- name: worker(role oid)
-- The worker role $role registered as, with what it runs: its opaque id, its capability bits,
-- its worktimes, its place in its jobs' turns, how many groups it joined, and those of them that
-- have limits whose lock this fetch took (tried, not waited for: see compute_fetch.rs). None for a
-- role whose worker never said what it runs. (The groups first, then the locks: in one query the
-- planner may try a lock on every group before filtering, and hold the locks of groups this fetch
-- never uses.)
SELECT x.opaque_id, r.capabilities, r.worktimes, coalesce(t.serial, 0),
       (SELECT count(*) FROM compute_group_workers m WHERE m.worker_opaque_id = x.opaque_id),
       ARRAY(SELECT l.id
             FROM unnest(ARRAY(SELECT g.id FROM compute_group_workers m
                               JOIN compute_groups g ON g.id = m.compute_group_id
                               WHERE m.worker_opaque_id = x.opaque_id
                                 AND (SELECT l.limited FROM _compute_group_limited(g) l))) l(id)
             WHERE pg_try_advisory_xact_lock(_lock_key('compute_group', l.id::text)))
FROM workers x JOIN worker_run_info r ON r.worker_opaque_id = x.opaque_id
JOIN worker_task_info t ON t.worker_opaque_id = x.opaque_id
WHERE x.identity = $role;

-- name: groups(worker uuid, capabilities integer, worktimes jsonb)
-- The groups the worker joined, the least recently served first: each one's id, whether it has
-- limits, and its jobs the worker may run, in id order (null: none): running or about to, needing
-- no capability it lacks (it has $capabilities), of a worktime version it has (in $worktimes), and
-- not rejected by it.
SELECT x.id, (SELECT l.limited FROM _compute_group_limited(x) l),
       (SELECT array_agg(j.job_id ORDER BY j.job_id)
        FROM compute_group_jobs gj JOIN compute_jobs j ON j.job_id = gj.job_id
        WHERE gj.compute_group_id = x.id AND j.status IN ('new', 'estimation', 'running')
          AND j.need_capabilities & $capabilities = j.need_capabilities
          AND _worktime_ok(j.worktime_version, $worktimes ->> j.worktime)
          AND NOT EXISTS (SELECT FROM work_reject_history h
                          WHERE h.job_id = j.job_id AND h.worker_opaque_id = $worker))
FROM compute_group_workers m JOIN compute_groups x ON x.id = m.compute_group_id
WHERE m.worker_opaque_id = $worker
ORDER BY m.last_served_at NULLS FIRST, x.id;

-- name: job(job bigint, greedy_estimation integer, alone boolean, identity oid)
-- The job as a fetch sees it: its status; whether it is running and what is left of its funds
-- pays for every connection fetching its largest task at once (then fetches need not take turns:
-- see compute_fetch.rs); its largest task; copies of a slice it sends at most, and whether it
-- sends each once; whether it pays; whether all its slices may go out (it is running, estimates
-- nothing, or has the flag $greedy_estimation), not only its estimation slices; what a slice pays;
-- and, unless the fetch takes it $alone anyway, whether the fetch shares it (null: it must take it
-- alone); then what a submit of its task reads of it (compute_results.rs: Job): its owner,
-- duplication level and type, estimation slices and result URL pattern.
SELECT j.status, j.ample, j.max_slices_per_task, j.copies, j.once, j.paying, j.all_slices, j.payment,
       CASE WHEN $alone OR NOT j.ample THEN NULL
            -- Shared with other fetches, and, unless it sends each slice once, alone among the
            -- fetches of identity $identity: two at once would each miss the copy the other took,
            -- and the identity would hold two of one slice. Tried, not waited for.
            WHEN NOT pg_try_advisory_xact_lock_shared(_lock_key('compute_job', $job::text)) THEN false
            WHEN j.once THEN true
            ELSE pg_try_advisory_xact_lock(_lock_key('compute_copies',
                                                     $job::text || '/' || $identity::text)) END,
       j.owner, j.duplication_level, j.race, j.estimation_slices, j.result_storage_details
FROM (SELECT c.status::text AS status,
             c.status = 'running'
             AND (c.slice_payment = 0
                  OR c.funds - (SELECT t.slice_work_payment_total FROM compute_fin_totals t WHERE t.job_id = c.job_id)
                     - (SELECT p.pending FROM _compute_pending(c.job_id, c.slice_payment) p)
                     >= c.slice_payment * c.max_slices_per_task * current_setting('max_connections')::integer) AS ample,
             c.max_slices_per_task, ceil(c.duplication_level)::integer AS copies, c.duplication_level = 1 AS once,
             c.slice_payment > 0 AS paying,
             c.status = 'running' OR c.estimation_slices = 0 OR c.flags & $greedy_estimation <> 0 AS all_slices,
             c.slice_payment::numeric AS payment,
             c.owner, c.duplication_level, c.duplication_type = 'race' AS race, c.estimation_slices,
             c.result_storage_details
      FROM compute_jobs c WHERE c.job_id = $job OFFSET 0) j;

-- name: take_job(job bigint)
-- The job for this fetch alone: its advisory lock and its row, each tried, not waited for (a job
-- whose row its owner holds is passed over). Whether both were taken. Not tried when the job has
-- no copy to hand out: its last slices out or reported, its row is the fold's to finish it with
-- (jobs_done passes over a row a fetch holds), and fetches taking it in turn, every worker every
-- 50 ms, kept it from finishing for a minute.
SELECT EXISTS (SELECT FROM compute_slices s
               WHERE s.job_id = $job AND s.status IN ('new', 'overdue', 'returned', 'tiebreaker'))
       AND pg_try_advisory_xact_lock(_lock_key('compute_job', $job::text))
       AND EXISTS (SELECT FROM compute_jobs c WHERE c.job_id = $job FOR NO KEY UPDATE SKIP LOCKED);

-- name: group_room(group_id bigint, worker uuid, job bigint, slice_payment numeric)
-- How many more slices the group may hand out to the worker of the job paying $slice_payment a
-- slice (null: no limit), under the group's limits and budgets; the fetch holds the group's lock.
-- A budget is charged, beyond what the fold spent, what the group's reports not folded yet
-- measured and what its copies out will cost at their jobs' measured averages (0 until measured),
-- and holds the slices of the job that fit in what is left at its average (see
-- _slices_in_budget).
WITH held AS (
    SELECT count(*) AS copies, count(DISTINCT s.job_id) AS jobs, count(DISTINCT s.last_assigned_worker) AS workers,
           coalesce(bool_or(s.job_id = $job), false) AS job_held,
           coalesce(bool_or(s.last_assigned_worker = $worker), false) AS worker_held,
           coalesce(sum(c.slice_payment), 0) AS escrow
    FROM compute_slices s JOIN compute_jobs c ON c.job_id = s.job_id
    WHERE s.compute_group_id = $group_id AND s.lease_token IS NOT NULL
), owed AS (
    SELECT coalesce(sum(x.cpu), 0) AS cpu, coalesce(sum(x.gpu), 0) AS gpu,
           coalesce(sum(x.bytes_in), 0) AS bytes_in, coalesce(sum(x.bytes_out), 0) AS bytes_out
    FROM (SELECT round(r.cpu_time)::numeric AS cpu, round(r.gpu_time)::numeric AS gpu,
                 r.in_data_size::numeric AS bytes_in, r.out_data_size::numeric AS bytes_out
          FROM slice_reports r WHERE r.folded_seq IS NULL AND r.compute_group_id = $group_id
          UNION ALL
          SELECT p.slice_cpu_time::numeric, p.slice_gpu_time::numeric, p.slice_in_data_size::numeric,
                 p.slice_out_data_size::numeric
          FROM compute_slices s JOIN compute_perf_data p ON p.job_id = s.job_id
          WHERE s.compute_group_id = $group_id AND s.lease_token IS NOT NULL) x
), cores AS (
    SELECT coalesce(sum(r.cpu_cores), 0) AS cpus, coalesce(sum(r.gpu_cores), 0) AS gpus
    FROM worker_run_info r
    WHERE r.worker_opaque_id IN (SELECT s.last_assigned_worker FROM compute_slices s
                                 WHERE s.compute_group_id = $group_id
                                   AND s.lease_token IS NOT NULL)
)
SELECT CASE
    WHEN NOT h.job_held AND h.jobs >= g.max_concurrent_jobs THEN 0
    WHEN NOT h.worker_held AND (h.workers >= g.max_concurrent_workers
                                OR k.cpus + coalesce(mine.cpu_cores, 0) > g.max_concurrent_cpus
                                OR k.gpus + coalesce(mine.gpu_cores, 0) > g.max_concurrent_gpus) THEN 0
    -- least() passes over nulls: a limit not set bounds nothing.
    ELSE least(CASE WHEN g.max_concurrent_sandboxes IS NOT NULL THEN greatest(g.max_concurrent_sandboxes - h.copies, 0) END,
               CASE WHEN g.max_concurrent_escrow IS NOT NULL AND $slice_payment > 0
                    THEN _slices_paid_by(g.max_concurrent_escrow - h.escrow, $slice_payment) END,
               -- Paid through the group so far, and what its copies out and unfolded reports hold.
               CASE WHEN g.max_total_payment IS NOT NULL AND $slice_payment > 0
                    THEN _slices_paid_by(g.max_total_payment - h.escrow
                                         - (SELECT coalesce(sum(coalesce(r.paid, c.slice_payment)), 0)
                                            FROM slice_reports r JOIN compute_jobs c ON c.job_id = r.job_id
                                            WHERE r.compute_group_id = $group_id), $slice_payment) END,
               _slices_in_budget(b.remaining_cpu_time - o.cpu, jp.slice_cpu_time),
               _slices_in_budget(b.remaining_gpu_time - o.gpu, jp.slice_gpu_time),
               _slices_in_budget(b.remaining_in_data_size - o.bytes_in, jp.slice_in_data_size),
               _slices_in_budget(b.remaining_out_data_size - o.bytes_out, jp.slice_out_data_size))
END
FROM compute_groups g CROSS JOIN held h CROSS JOIN cores k CROSS JOIN owed o
JOIN compute_group_budgets b ON b.compute_group_id = g.id
LEFT JOIN worker_run_info mine ON mine.worker_opaque_id = $worker
LEFT JOIN compute_perf_data jp ON jp.job_id = $job
WHERE g.id = $group_id;

-- name: paid_slices(job bigint)
-- How many slices what is left of the job's funds pays for.
SELECT _slices_paid_by(c.funds - (SELECT t.slice_work_payment_total FROM compute_fin_totals t WHERE t.job_id = c.job_id)
                       - (SELECT p.pending FROM _compute_pending(c.job_id, c.slice_payment) p), c.slice_payment)
FROM compute_jobs c WHERE c.job_id = $job;

-- name: pause_unfunded(job bigint, nsf integer)
-- The job, out of funds with slices still to send, paused until its owner adds some
-- (compute_fund), with the flag $nsf.
UPDATE compute_jobs j SET status = 'paused', flags = j.flags | $nsf
WHERE j.job_id = $job
  AND EXISTS (SELECT FROM compute_slices s WHERE s.job_id = $job AND s.status IN ('new', 'overdue', 'returned', 'tiebreaker'));

-- name: hand(job bigint, task_token uuid, slices integer, candidates integer, group_id bigint,
--           worker uuid, role oid, root oid, eligible bigint[], all_slices boolean,
--           from_slice integer)
-- Task $task_token of up to $slices slices of the job (reading up to $candidates copies for them,
-- from slice $from_slice on: see compute_fetch.rs, slices_from) for the worker (role $role, root
-- identity $root) through the group, whose eligible jobs were $eligible: in slice order, only
-- estimation slices unless all may go, and never two copies of one slice to one identity (its
-- proxies are it), held or reported, unless each slice is sent once: copies are sent to meet
-- independent faults, and a consensus counts identities. A task handed out is recorded, and the
-- worker's next fetch starts one job further along and, if it joined several groups, at another
-- group. The task's rows, in slice order, each with where its result goes (none: to the database
-- with the report). Four forms (compute_fetch.rs, HAND): for a job that sends each slice once or
-- not (once, copies), and a worker in one group or several (several_groups): a data-modifying CTE
-- and a subplan are set up on every call, needed or not.
WITH candidates AS (
    SELECT s.slice_number, s.copy
    FROM compute_slices s
    WHERE s.job_id = $job AND s.slice_number >= $from_slice
      AND s.status IN ('new', 'overdue', 'returned', 'tiebreaker')
      AND ($all_slices OR s.estimation)
-- once {
      AND s.copy = 0
-- } once
-- copies {
      AND NOT EXISTS (SELECT FROM compute_slices o
                      WHERE o.job_id = $job AND o.slice_number = s.slice_number
                        AND o.lease_token IS NOT NULL AND o.last_assigned_root = $root)
      AND NOT EXISTS (SELECT FROM slice_reports x
                      WHERE x.job_id = $job AND x.slice_number = s.slice_number
                        AND x.worker_root = $root)
-- } copies
    ORDER BY s.slice_number, s.copy
    LIMIT $candidates
    FOR UPDATE SKIP LOCKED
), picked AS (
    SELECT DISTINCT ON (p.slice_number) p.slice_number, p.copy FROM candidates p
    ORDER BY p.slice_number, p.copy
    LIMIT $slices
), handed AS (
    UPDATE compute_slices s
    SET status = 'scheduled', lease_token = $task_token, compute_group_id = $group_id,
        begin_time = now(), last_progress_time = now(), last_assigned_worker = $worker,
        last_assigned_worker_identity = $role, last_assigned_root = $root
    FROM picked p
    WHERE s.job_id = $job AND s.slice_number = p.slice_number AND s.copy = p.copy
    RETURNING s.slice_number, s.copy, s.estimation
), task AS (
    INSERT INTO compute_tasks (worker_opaque_id, compute_group_id, eligible, job_id, slice_count)
    SELECT $worker, $group_id, $eligible, $job, count(*) FROM handed HAVING count(*) > 0
), fetched AS (
    UPDATE worker_task_info t
    SET task_time = now(), serial = coalesce(t.serial, 0) + 1,
        current_task = jsonb_build_object('job_id', $job, 'slices', (SELECT count(*) FROM handed))
    WHERE t.worker_opaque_id = $worker AND EXISTS (SELECT FROM handed)
-- several_groups {
), served AS (
    UPDATE compute_group_workers m SET last_served_at = clock_timestamp()
    WHERE m.worker_opaque_id = $worker AND m.compute_group_id = $group_id
      AND EXISTS (SELECT FROM handed)
-- } several_groups
), job AS MATERIALIZED (
    -- The job's flags named, its range or pattern read from their JSON and its work function
    -- read once, not for each slice (a join evaluates them again for each row: a tenth of a fetch
    -- of 100, and the work function's two pages read a slice, a tenth more).
    SELECT job_flag_names(c.flags) AS flag_names, c.result_storage_details, c.result_storage_params,
           (SELECT f.value::text FROM work_functions f WHERE f.job_id = $job) AS work,
           c.data_storage_type,
           CASE WHEN c.data_storage_type = 'range'
                THEN (c.data_storage_details::jsonb ->> 'start')::numeric END AS range_start,
           CASE WHEN c.data_storage_type = 'range'
                THEN coalesce((c.data_storage_details::jsonb ->> 'step')::numeric, 1) END AS range_step,
           CASE WHEN c.data_storage_type = 'pattern'
                THEN c.data_storage_details::jsonb ->> 'pattern' END AS pattern
    FROM compute_jobs c WHERE c.job_id = $job
)
SELECT $task_token, $job, h.slice_number, h.copy::integer,
       -- A slice of a range or a pattern: its datum computed, not stored (compute_data holds the
       -- values of jobs of values only: deployments write it, members may only change a value).
       CASE c.data_storage_type
           WHEN 'range' THEN 'data:,' || (c.range_start + (h.slice_number - 1) * c.range_step)::text
           WHEN 'pattern' THEN replace(c.pattern, '{slice}', h.slice_number::text)
           ELSE (SELECT d.value::text FROM compute_data d WHERE d.job_id = $job AND d.slice_number = h.slice_number) END,
       c.work, a.arguments, c.flag_names, h.estimation,
       _result_url(c.result_storage_details, h.slice_number, h.copy), c.result_storage_params
FROM handed h
CROSS JOIN job c
CROSS JOIN (SELECT ARRAY(SELECT a.value::text FROM compute_arguments a WHERE a.job_id = $job ORDER BY a.arg_index)
                   AS arguments) a
ORDER BY h.slice_number;

-- name: start(job bigint)
-- The job, new, has slices out: in estimation, or running if it estimates nothing.
UPDATE compute_jobs j
SET status = (CASE WHEN j.estimation_slices = 0 THEN 'running' ELSE 'estimation' END)::compute_job_status
WHERE j.job_id = $job AND j.status = 'new';

-- name: estimation_left(job bigint)
UPDATE compute_perf_data p
SET estimation_slices_remaining = (SELECT count(*) FROM compute_slices s
                                   WHERE s.job_id = $job AND s.estimation AND s.copy = 0 AND s.status = 'new')
WHERE p.job_id = $job;

-- name: nothing_in(worker uuid, group_id bigint, eligible bigint[])
-- The group had nothing for the worker among its eligible jobs.
INSERT INTO compute_tasks (worker_opaque_id, compute_group_id, eligible, job_id, slice_count)
VALUES ($worker, $group_id, $eligible, NULL, 0);

-- name: fetched_nothing(worker uuid)
-- The worker fetched nothing, now; its next fetch starts one job further along.
UPDATE worker_task_info t SET task_time = now(), serial = coalesce(t.serial, 0) + 1, current_task = NULL
WHERE t.worker_opaque_id = $worker;
