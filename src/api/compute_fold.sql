-- The statements of src/api/compute_fold.rs, run by the launcher (or by hand, as its owner).

-- name: watchdog(at timestamptz)
-- Copies silent since before $at less pg_jobs.compute_progress_timeout are overdue: sent again
-- to the next fetch, counted as retasked. Held rows are skipped, not waited for: a copy, and the
-- copies of a job whose figures a worker's call holds (a return, or a fetch of estimation slices,
-- in a transaction left open), until the next round. How many, and their jobs.
WITH late AS (
    SELECT s.job_id, s.slice_number, s.copy FROM compute_slices s
    WHERE s.lease_token IS NOT NULL
      AND s.last_progress_time
          < $at - current_setting('pg_jobs.compute_progress_timeout')::interval
    FOR UPDATE SKIP LOCKED
), figures AS (
    SELECT p.job_id FROM compute_perf_data p
    WHERE p.job_id IN (SELECT l.job_id FROM late l)
    FOR NO KEY UPDATE SKIP LOCKED
), marked AS (
    UPDATE compute_slices s SET status = 'overdue', lease_token = NULL, retask_counter = s.retask_counter + 1
    FROM late l JOIN figures f ON f.job_id = l.job_id
    WHERE s.job_id = l.job_id AND s.slice_number = l.slice_number AND s.copy = l.copy
    RETURNING s.job_id
), counted AS (
    UPDATE compute_perf_data p SET retasked_count = p.retasked_count + m.n
    FROM (SELECT m.job_id, count(*) AS n FROM marked m GROUP BY m.job_id) m
    WHERE p.job_id = m.job_id
    RETURNING m.job_id, m.n
)
SELECT coalesce(sum(c.n), 0)::integer, array_agg(c.job_id) FROM counted c;

-- name: resume_freed(jobs bigint[], nsf integer)
-- Of jobs $jobs, whose overdue copies' escrow is free again, those a fetch paused for want of
-- funds (the flag $nsf) while the copies were out go on if their funds now pay for a slice; the
-- others stay paused with enough left, as nothing else resumes them but compute_fund.
UPDATE compute_jobs c SET status = _compute_resumed_status(c.job_id), flags = c.flags & ~$nsf
WHERE c.job_id IN (
    SELECT j.job_id FROM compute_jobs j
    WHERE j.job_id = ANY ($jobs) AND j.status = 'paused' AND j.flags & $nsf <> 0
      AND j.funds - coalesce((SELECT t.slice_work_payment_total FROM compute_fin_totals t WHERE t.job_id = j.job_id), 0)
          - (SELECT p.pending FROM _compute_pending(j.job_id, j.slice_payment) p) >= j.slice_payment
    FOR UPDATE SKIP LOCKED);

-- name: fold_lock
-- One fold at a time, so the order of each job's reports is the order of the fold that took them,
-- as folded_seq records. Tried, not waited for.
SELECT pg_try_advisory_xact_lock(_lock_key('compute_fold', ''));

-- name: jobs_to_fold
-- The jobs with reports to fold, but those that could not be folded before: one probe of
-- slice_reports_unfolded per job, not a read of every report not folded yet (a drain's backlog of
-- 140,000 reports: 100 ms a round).
WITH RECURSIVE unfolded(job_id) AS (
    SELECT (SELECT min(r.job_id) FROM slice_reports r WHERE r.folded_seq IS NULL)
    UNION ALL
    SELECT (SELECT min(r.job_id) FROM slice_reports r WHERE r.folded_seq IS NULL AND r.job_id > u.job_id)
    FROM unfolded u WHERE u.job_id IS NOT NULL
)
SELECT ARRAY(SELECT u.job_id FROM unfolded u JOIN compute_jobs c ON c.job_id = u.job_id
             WHERE c.fold_error IS NULL ORDER BY u.job_id);

-- name: reports_to_fold(job bigint, max_reports integer)
-- Up to $max_reports of job $job's decided reports not folded yet, in the order they came, read in
-- the order of slice_reports_unfolded. The job is a range of one and the order names both of the
-- index's columns, so that no other index gives that order: with job_id = $job and ORDER BY id,
-- the primary key's order served too, and once ANALYZE had sampled the reports while the fold was
-- behind (every one unfolded, to its statistics) the planner read the job's reports by primary key
-- from the first, every folded one passed over (525,000 reports in: 349,000 of them, 0.9 s a round).
SELECT ARRAY(SELECT r.id FROM slice_reports r
             WHERE r.job_id BETWEEN $job AND $job AND r.folded_seq IS NULL AND r.accepted IS NOT NULL
             ORDER BY r.job_id, r.id LIMIT $max_reports);

-- name: fold_failed(job bigint, fold_error text)
-- Job $job could not be folded ($fold_error says why): marked when no fetch holds its row, or
-- else at the next round's try; none of its reports is folded after that.
UPDATE compute_jobs c SET fold_error = $fold_error
WHERE c.job_id = (SELECT x.job_id FROM compute_jobs x WHERE x.job_id = $job FOR NO KEY UPDATE SKIP LOCKED);

-- name: place_reports(job bigint, reports bigint[], task_target_ms double precision)
-- Reports $reports of job $job take their places in the job's fold, after those it measured,
-- and what each earns: the slice payment if it was accepted, of which the group's commission is
-- the group's. The job's figures are locked for the fold. Returns what the rest of the fold needs
-- of each report placed (src/api/compute_fold.rs, Placed), so that it reads none of them again:
-- its place, its group and statistics period, its seven measured series
-- (pg_jobs_core::compute::Moving: CPU and GPU time, sizes in and out, CPU and GPU time over wall
-- time, wall time over the task target of $task_target_ms), its sizes as integers, whether it was
-- accepted, the job's slice payment and last slice, the report's worker, pay and commission, and
-- whether its group is still there. A report whose group was deleted since (by hand: no call
-- deletes a group) is placed and paid all the same, without commission; the fold then leaves it
-- out of the group's figures. (Joined to the groups, such a report was never placed, and taken
-- again by every round, which counted it among the job's measured slices each time.)
WITH p AS (
    SELECT x.measured_slices FROM compute_perf_data x WHERE x.job_id = $job FOR UPDATE
)
UPDATE slice_reports r
SET folded_seq = p.measured_slices + o.n,
    paid = CASE WHEN r.accepted THEN c.slice_payment ELSE 0 END,
    commission = CASE WHEN r.accepted
                      THEN round(c.slice_payment
                                 * coalesce((SELECT g.commission_rate FROM compute_groups g WHERE g.id = r.compute_group_id), 0),
                                 18)
                      ELSE 0 END
FROM unnest($reports::bigint[]) WITH ORDINALITY o(id, n), compute_jobs c, p
WHERE r.id = o.id AND c.job_id = $job
RETURNING r.folded_seq, r.compute_group_id, _stats_period(r.reported_at),
          r.cpu_time, r.gpu_time, r.in_data_size::double precision, r.out_data_size::double precision,
          CASE WHEN r.wall_time > 0 THEN r.cpu_time / r.wall_time ELSE 0 END,
          CASE WHEN r.wall_time > 0 THEN r.gpu_time / r.wall_time ELSE 0 END,
          r.wall_time / $task_target_ms,
          r.in_data_size, r.out_data_size, r.accepted, c.slice_payment, c.last_slice_number,
          r.worker_opaque_id, r.paid, r.commission,
          EXISTS (SELECT FROM compute_groups g WHERE g.id = r.compute_group_id);

-- name: fold_figures(job bigint, reports integer, series double precision[],
--                    alphas double precision[], cpu double precision, gpu double precision,
--                    in_size numeric, out_size numeric)
-- $reports reports of job $job into the job's moving averages and totals: $series, their seven
-- series one report after the other in the order of their places, each report's weight in
-- $alphas, and the sums of their times ($cpu, $gpu: each rounded to the millisecond first) and
-- sizes. The averages are folded once, in a CTE of their own: as a subquery of FROM, the planner
-- pulled it up and copied the fold into each of the fourteen columns that read its state, and
-- folded fourteen times (a round of 10,000 reports: 2.6 s, then 0.11 s).
WITH s AS MATERIALIZED (
    SELECT _moving_fold(
              ARRAY[p.slice_cpu_time, p.slice_gpu_time, p.slice_in_data_size, p.slice_out_data_size,
                    p.slice_cpu_density, p.slice_gpu_density, p.task_distribution,
                    p.slice_cpu_time_variance, p.slice_gpu_time_variance, p.slice_in_data_size_variance,
                    p.slice_out_data_size_variance, p.slice_cpu_density_variance, p.slice_gpu_density_variance,
                    p.task_distribution_variance],
              $series, $alphas) AS state
    FROM compute_perf_data p WHERE p.job_id = $job
)
UPDATE compute_perf_data x
SET measured_slices = x.measured_slices + $reports,
    slice_cpu_time = s.state[1], slice_gpu_time = s.state[2], slice_in_data_size = s.state[3],
    slice_out_data_size = s.state[4], slice_cpu_density = s.state[5], slice_gpu_density = s.state[6],
    task_distribution = s.state[7], slice_cpu_time_variance = s.state[8], slice_gpu_time_variance = s.state[9],
    slice_in_data_size_variance = s.state[10], slice_out_data_size_variance = s.state[11],
    slice_cpu_density_variance = s.state[12], slice_gpu_density_variance = s.state[13],
    task_distribution_variance = s.state[14],
    total_cpu_time = _total_plus(x.total_cpu_time, $cpu::numeric),
    total_gpu_time = _total_plus(x.total_gpu_time, $gpu::numeric),
    total_in_data_size = _total_plus(x.total_in_data_size, $in_size),
    total_out_data_size = _total_plus(x.total_out_data_size, $out_size)
FROM s
WHERE x.job_id = $job;

-- name: fold_money(job bigint, paid numeric, commission numeric, workers uuid[], earned numeric[])
-- What job $job paid ($paid) and its commission, and what each of $workers earned ($earned).
WITH paid AS (
    UPDATE compute_fin_totals f
    SET slice_work_payment_total = f.slice_work_payment_total + $paid,
        commission_total = f.commission_total + $commission
    WHERE f.job_id = $job
)
UPDATE worker_run_info w SET earnings = w.earnings + t.earned
FROM unnest($workers::uuid[], $earned::numeric[]) AS t(worker_opaque_id, earned)
WHERE w.worker_opaque_id = t.worker_opaque_id AND t.earned > 0;

-- name: period_row(job bigint, group_id bigint, period_start timestamptz)
-- Group $group_id's figures of job $job for the period from $period_start, made if they are
-- not there.
INSERT INTO compute_group_job_period_stats (compute_group_id, job_id, period_start, period_length)
VALUES ($group_id, $job, $period_start, current_setting('pg_jobs.compute_stats_period')::interval)
ON CONFLICT DO NOTHING;

-- name: fold_period(job bigint, group_id bigint, period_start timestamptz,
--                   series double precision[], alphas double precision[], accepted integer,
--                   slice_payment numeric, cpu double precision, gpu double precision,
--                   in_size numeric, out_size numeric)
-- Reports of job $job into group $group_id's figures of the job for the period from
-- $period_start, as fold_figures: their series in the order of their places ($series), each
-- one's weight ($alphas), and their totals; $accepted of them earned $slice_payment each.
WITH s AS MATERIALIZED (
    SELECT _moving_fold(
              ARRAY[q.slice_cpu_time, q.slice_gpu_time, q.slice_in_data_size, q.slice_out_data_size,
                    q.slice_cpu_density, q.slice_gpu_density, NULL,
                    q.slice_cpu_time_variance, q.slice_gpu_time_variance, q.slice_in_data_size_variance,
                    q.slice_out_data_size_variance, q.slice_cpu_density_variance, q.slice_gpu_density_variance, NULL],
              $series, $alphas) AS state
    FROM compute_group_job_period_stats q
    WHERE q.compute_group_id = $group_id AND q.job_id = $job AND q.period_start = $period_start
      AND q.period_length = current_setting('pg_jobs.compute_stats_period')::interval
)
UPDATE compute_group_job_period_stats x
SET slice_cpu_time = s.state[1], slice_gpu_time = s.state[2], slice_in_data_size = s.state[3],
    slice_out_data_size = s.state[4], slice_cpu_density = s.state[5], slice_gpu_density = s.state[6],
    slice_cpu_time_variance = s.state[8], slice_gpu_time_variance = s.state[9],
    slice_in_data_size_variance = s.state[10], slice_out_data_size_variance = s.state[11],
    slice_cpu_density_variance = s.state[12], slice_gpu_density_variance = s.state[13],
    total_earnings = x.total_earnings + $slice_payment * $accepted,
    total_cpu_time = _total_plus(x.total_cpu_time, $cpu::numeric),
    total_gpu_time = _total_plus(x.total_gpu_time, $gpu::numeric),
    total_in_data_size = _total_plus(x.total_in_data_size, $in_size),
    total_out_data_size = _total_plus(x.total_out_data_size, $out_size)
FROM s
WHERE x.compute_group_id = $group_id AND x.job_id = $job AND x.period_start = $period_start
  AND x.period_length = current_setting('pg_jobs.compute_stats_period')::interval;

-- name: fold_worker_periods(groups bigint[], workers uuid[], periods timestamptz[], slices bigint[],
--                           cpu double precision[], gpu double precision[], in_size numeric[],
--                           out_size numeric[], earnings numeric[])
-- Into each group's figures of each worker for a period ($groups, $workers, $periods, in step):
-- the slices it finished, their times and sizes, and what it earned.
INSERT INTO compute_group_worker_period_stats AS s (compute_group_id, worker_opaque_id, period_start,
    period_length, slice_count, cpu_time, gpu_time, in_data_size, out_data_size, earnings)
SELECT u.group_id, u.worker, u.period_start, current_setting('pg_jobs.compute_stats_period')::interval,
       u.slices, u.cpu, u.gpu, u.in_size, u.out_size, u.earnings
FROM unnest($groups::bigint[], $workers::uuid[], $periods::timestamptz[], $slices::bigint[],
            $cpu::double precision[], $gpu::double precision[], $in_size::numeric[], $out_size::numeric[],
            $earnings::numeric[])
     AS u(group_id, worker, period_start, slices, cpu, gpu, in_size, out_size, earnings)
ON CONFLICT (compute_group_id, worker_opaque_id, period_start, period_length) DO UPDATE
SET slice_count = s.slice_count + excluded.slice_count, cpu_time = _total_plus(s.cpu_time, excluded.cpu_time),
    gpu_time = _total_plus(s.gpu_time, excluded.gpu_time), in_data_size = _total_plus(s.in_data_size, excluded.in_data_size),
    out_data_size = _total_plus(s.out_data_size, excluded.out_data_size), earnings = s.earnings + excluded.earnings;

-- name: spend(groups bigint[], cpu double precision[], gpu double precision[], in_size numeric[],
--             out_size numeric[])
-- What the reports spent through each of $groups (in step), accepted or not (the work was done).
-- Only the fold writes compute_group_spent. A group gone since is passed over.
INSERT INTO compute_group_spent AS s (compute_group_id, cpu_time, gpu_time, in_data_size, out_data_size)
SELECT u.group_id, u.cpu, u.gpu, u.in_size, u.out_size
FROM unnest($groups::bigint[], $cpu::double precision[], $gpu::double precision[], $in_size::numeric[],
            $out_size::numeric[]) AS u(group_id, cpu, gpu, in_size, out_size)
JOIN compute_groups g ON g.id = u.group_id
ORDER BY 1
ON CONFLICT (compute_group_id) DO UPDATE
SET cpu_time = _total_plus(s.cpu_time, excluded.cpu_time), gpu_time = _total_plus(s.gpu_time, excluded.gpu_time),
    in_data_size = _total_plus(s.in_data_size, excluded.in_data_size),
    out_data_size = _total_plus(s.out_data_size, excluded.out_data_size);

-- name: fold_tasks
-- Tasks into the period statistics (requests from eligible workers, those that got no slice of
-- a job, slices handed out), the workers' task counts and the jobs' task counts. Held rows are
-- skipped, not waited for: the tasks of a group whose owner holds its row (a new period's row
-- names the group, and its check of the key waits for a row lock), and those of a job whose
-- figures a worker's call holds, wait for a round when they are free.
WITH free_groups AS (
    SELECT g.id FROM compute_groups g
    WHERE g.id IN (SELECT t.compute_group_id FROM compute_tasks t)
    FOR KEY SHARE SKIP LOCKED
), free_figures AS (
    SELECT p.job_id FROM compute_perf_data p
    WHERE p.job_id IN (SELECT t.job_id FROM compute_tasks t)
    FOR NO KEY UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM compute_tasks t
    WHERE t.compute_group_id IN (SELECT g.id FROM free_groups g)
      AND (t.job_id IS NULL OR t.job_id IN (SELECT f.job_id FROM free_figures f)
           OR NOT EXISTS (SELECT FROM compute_perf_data p WHERE p.job_id = t.job_id))
    RETURNING t.*
), job_stats AS (
    INSERT INTO compute_group_job_period_stats AS s (compute_group_id, job_id, period_start, period_length,
        task_eligible_count, no_slice_task_count, tasked_slice_count)
    SELECT t.compute_group_id, e.job_id, _stats_period(t.fetched_at),
           current_setting('pg_jobs.compute_stats_period')::interval,
           count(*), count(*) FILTER (WHERE t.job_id IS DISTINCT FROM e.job_id),
           coalesce(sum(t.slice_count) FILTER (WHERE t.job_id = e.job_id), 0)
    FROM gone t, unnest(t.eligible) e(job_id)
    GROUP BY 1, 2, 3
    ON CONFLICT (compute_group_id, job_id, period_start, period_length) DO UPDATE
    SET task_eligible_count = s.task_eligible_count + excluded.task_eligible_count,
        no_slice_task_count = s.no_slice_task_count + excluded.no_slice_task_count,
        tasked_slice_count = s.tasked_slice_count + excluded.tasked_slice_count
), worker_stats AS (
    INSERT INTO compute_group_worker_period_stats AS s (compute_group_id, worker_opaque_id, period_start,
        period_length, task_count)
    SELECT t.compute_group_id, t.worker_opaque_id, _stats_period(t.fetched_at),
           current_setting('pg_jobs.compute_stats_period')::interval, count(*)
    FROM gone t WHERE t.job_id IS NOT NULL GROUP BY 1, 2, 3
    ON CONFLICT (compute_group_id, worker_opaque_id, period_start, period_length) DO UPDATE
    SET task_count = s.task_count + excluded.task_count
)
UPDATE compute_perf_data p SET task_count = p.task_count + t.n
FROM (SELECT t.job_id, count(*) AS n FROM gone t WHERE t.job_id IS NOT NULL GROUP BY 1) t
WHERE p.job_id = t.job_id;

-- name: move_jobs_on
-- Jobs whose estimation slices are all done run, and each job's next_slice_number is the first
-- slice never handed out (fetches do not write the job's row), read from the one before: a slice
-- handed out is never new again, so the first never handed out only moves up, and the read passes
-- over only the dead index entries of the copies handed out since the last round, not over every
-- one since VACUUM. Jobs a fetch holds are skipped, not waited for: such a fetch may be waiting
-- for compute_perf_data, which the fold has locked.
UPDATE compute_jobs c
SET status = CASE WHEN c.status = 'estimation' AND _compute_estimated(c.job_id) THEN 'running'::compute_job_status
                  ELSE c.status END,
    next_slice_number = coalesce((SELECT min(s.slice_number) FROM compute_slices s
                                  WHERE s.job_id = c.job_id AND s.status = 'new' AND s.copy = 0
                                    AND s.slice_number >= coalesce(c.next_slice_number, 1)),
                                 c.last_slice_number + 1)
FROM (SELECT e.job_id FROM compute_jobs e
      WHERE e.status IN ('new', 'estimation', 'running', 'paused')
      FOR NO KEY UPDATE SKIP LOCKED) e
WHERE c.job_id = e.job_id;

-- name: jobs_done(open integer)
-- Jobs closed (the flag $open cleared) with every slice's result in and nothing out or
-- unfolded, locked to be finished; those a fetch holds wait for the next round. (Their rows in
-- jobs no member can hold: a member may lock no row of the jobs the extension runs, and
-- jobs_abort refuses a compute job.)
SELECT c.job_id FROM compute_jobs c
WHERE c.status IN ('new', 'estimation', 'running', 'paused') AND c.flags & $open = 0
  AND NOT EXISTS (SELECT FROM compute_slices s WHERE s.job_id = c.job_id)
  AND NOT EXISTS (SELECT FROM slice_reports r WHERE r.job_id = c.job_id AND r.folded_seq IS NULL)
FOR NO KEY UPDATE OF c SKIP LOCKED;

-- name: next_look(at timestamptz)
-- Compute slices out or results to fold: the watchdog and the fold again a second after $at.
-- Planned as probes (compute_fold.rs): each EXISTS by its partial index, where a read of the table
-- planned from statistics that counted many reports not folded would read all of it once there
-- are none.
SELECT $at + interval '1 second'
WHERE EXISTS (SELECT FROM compute_slices s WHERE s.lease_token IS NOT NULL)
   OR EXISTS (SELECT FROM slice_reports r WHERE r.folded_seq IS NULL)
   OR EXISTS (SELECT FROM compute_tasks);
