-- The compute scheduler at work (seed 000): deploying a job of many slices, workers registering,
-- joining groups and fetching tasks, progress and the watchdog, results, duplication, and the
-- statistics and money the background worker folds from committed results.
--
-- A compute job is a row of jobs (queue pg_jobs.compute, which nobody claims: its live row says
-- who owns it and carries its public fields; it moves to job_history when the job ends) and a row
-- of compute_jobs (its own columns and status). Its slices are rows of compute_slices, one per
-- copy to be sent; a copy is handed out, worked on and reported, and its report (slice_reports)
-- is what results, statistics and payments are made from.
--
-- Locks, in the order they are taken: a limited group's advisory lock, then a job's compute_jobs
-- row (FOR NO KEY UPDATE: fetches of one job take turns, which is what makes its funds and
-- estimation slices exact), then a slice's advisory lock (its copies' results are decided one at
-- a time). Results never lock the job: what they add to the job's figures is folded in the
-- background. Every advisory key is _lock_key's (sql/010_types.sql), which no member can compute;
-- a fetch only tries its locks and passes over what it cannot take, and so does the fold.

CREATE TYPE slice_status AS ENUM ('new', 'scheduled', 'working', 'overdue', 'returned', 'tiebreaker');
COMMENT ON TYPE slice_status IS
    'A slice copy''s status: new (not sent), scheduled (sent), working (progress reported), '
    'overdue (silent too long: sent again), returned (given back), tiebreaker (an extra copy for '
    'a consensus that failed, not sent yet). active_slices shows paused for the copies of a paused job.';

-- One row per copy of a slice that has no result yet: copy 0 of every slice, copies 1.. of
-- duplicated slices, and tiebreakers after the planned copies. A reported copy leaves this table.
CREATE TABLE compute_slices (
    job_id                         bigint NOT NULL,
    slice_number                   positive_integer NOT NULL,
    copy                           nonnegative_smallint NOT NULL,
    owner                          regrole NOT NULL,
    status                         slice_status NOT NULL DEFAULT 'new',
    estimation                     boolean NOT NULL DEFAULT false,
    -- Set while a worker holds the copy: the token of its task, the group it was fetched through.
    lease_token                    uuid,
    compute_group_id               bigint,
    begin_time                     timestamptz,
    last_progress_time             timestamptz,
    retask_counter                 integer NOT NULL DEFAULT 0,
    last_assigned_worker           uuid,
    last_assigned_worker_identity  regrole,
    -- Its root identity (after proxies): no two copies of a slice go to one identity.
    last_assigned_root             regrole,
    PRIMARY KEY (job_id, slice_number, copy),
    CONSTRAINT compute_slices_held CHECK ((status IN ('scheduled', 'working')) = (lease_token IS NOT NULL))
);
-- What a fetch takes, in slice order; a task's copies, by its token; a job's copies out, which
-- its escrow holds a payment for. The copies out are few (tasks in flight), so the watchdog and a
-- group's limits read them all through the last index rather than keep indexes of their own:
-- every index here is written at every fetch.
CREATE INDEX compute_slices_ready ON compute_slices (job_id, slice_number, copy)
    WHERE status IN ('new', 'overdue', 'returned', 'tiebreaker');
CREATE INDEX compute_slices_token ON compute_slices (lease_token) WHERE lease_token IS NOT NULL;
CREATE INDEX compute_slices_held ON compute_slices (job_id) WHERE lease_token IS NOT NULL;
CREATE INDEX compute_slices_owner ON compute_slices (owner);
COMMENT ON TABLE compute_slices IS
    'Every copy of a compute job''s slices that has no result yet. Read it through active_slices.';

-- Every result a worker reported, kept: accepted says whether it became the slice's result (null
-- while its copies are still out), folded_seq its place in the job's moving averages once the
-- background worker has folded it, paid what it earned (commission included).
CREATE TABLE slice_reports (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id            bigint NOT NULL,
    slice_number      integer NOT NULL,
    copy              smallint NOT NULL,
    owner             regrole NOT NULL,
    worker_opaque_id  uuid NOT NULL,
    -- The root identity the copy was handed to: a consensus counts one vote per identity.
    worker_root       regrole NOT NULL,
    compute_group_id  bigint NOT NULL,
    value             uri NOT NULL,
    value_hash        text NOT NULL,
    accepted          boolean,
    -- Finite: NaN passes >= 0 (it sorts above every number), Infinity would poison the averages.
    cpu_time          nonnegative_finite_float NOT NULL,
    gpu_time          nonnegative_finite_float NOT NULL,
    wall_time         nonnegative_finite_float NOT NULL,
    in_data_size      nonnegative_bigint NOT NULL,
    out_data_size     nonnegative_bigint NOT NULL,
    reported_at       timestamptz NOT NULL DEFAULT statement_timestamp(),
    folded_seq        bigint,
    paid              money_amount,
    commission        money_amount
);
CREATE INDEX slice_reports_slice ON slice_reports (job_id, slice_number);
-- What the fold takes, job by job, and what a job's escrow still holds for.
CREATE INDEX slice_reports_unfolded ON slice_reports (job_id, id) WHERE folded_seq IS NULL;
CREATE INDEX slice_reports_owner ON slice_reports (owner);
COMMENT ON TABLE slice_reports IS
    'Each result a worker reported, with what it measured; accepted: whether it became the '
    'slice''s result; folded_seq: its place in the job''s moving averages; paid: what it earned.';

-- Results too large for a data: URI; compute_results refers to them as pgjobs:result:<id>.
CREATE TABLE result_store (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id  bigint NOT NULL,
    owner   regrole NOT NULL,
    body    text NOT NULL
);
CREATE INDEX result_store_owner ON result_store (owner);
CREATE INDEX result_store_job ON result_store (job_id);

-- Which groups a worker joined (with the group's join key and secret).
CREATE TABLE compute_group_workers (
    compute_group_id  bigint NOT NULL REFERENCES compute_groups ON DELETE CASCADE,
    worker_opaque_id  uuid NOT NULL REFERENCES workers ON DELETE CASCADE,
    owner             regrole NOT NULL,
    joined_at         timestamptz NOT NULL DEFAULT now(),
    -- A worker in several groups is served by the one that served it longest ago first.
    last_served_at    timestamptz,
    PRIMARY KEY (worker_opaque_id, compute_group_id)
);
CREATE INDEX compute_group_workers_owner ON compute_group_workers (owner);
COMMENT ON TABLE compute_group_workers IS 'The groups each worker joined; owner is the worker''s owner.';

-- What a worker signs to join a group by the group's join_address, instead of giving its join
-- key and secret (compute_worker_join_challenge, then compute_worker_join_signed): one-time (the
-- join that uses it deletes it), valid for 5 minutes, bound to the group the worker named and to
-- the worker. A challenge names no group that exists or not: one is issued for any group id, so
-- it cannot be used to probe for ids. A worker holds one per group it asked for, 16 at most.
CREATE TABLE compute_join_challenges (
    worker_opaque_id  uuid NOT NULL REFERENCES workers ON DELETE CASCADE,
    group_opaque_id   uuid NOT NULL,
    -- The worker's identity, which alone reads the row.
    worker_identity   regrole NOT NULL,
    challenge         text NOT NULL UNIQUE,
    expires_at        timestamptz NOT NULL,
    PRIMARY KEY (worker_opaque_id, group_opaque_id)
);
COMMENT ON TABLE compute_join_challenges IS
    'Each worker''s challenges to sign to join a group by its join_address: one-time, for 5 minutes.';
ALTER TABLE compute_join_challenges ENABLE ROW LEVEL SECURITY;
CREATE POLICY worker_reads ON compute_join_challenges FOR SELECT TO pgjobs_user
    USING (worker_identity = (SELECT identity()));
GRANT SELECT ON compute_join_challenges TO pgjobs_user;

-- Each fetch, for the statistics: the group, the jobs that were eligible, the one that gave
-- slices and how many. Folded into the period statistics and removed.
CREATE TABLE compute_tasks (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    worker_opaque_id  uuid NOT NULL,
    compute_group_id  bigint NOT NULL,
    eligible          bigint[] NOT NULL,
    job_id            bigint,
    slice_count       integer NOT NULL,
    fetched_at        timestamptz NOT NULL DEFAULT statement_timestamp()
);

ALTER TABLE compute_slices ENABLE ROW LEVEL SECURITY;
ALTER TABLE slice_reports ENABLE ROW LEVEL SECURITY;
ALTER TABLE result_store ENABLE ROW LEVEL SECURITY;
ALTER TABLE compute_group_workers ENABLE ROW LEVEL SECURITY;
ALTER TABLE compute_tasks ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_owner_reads ON compute_slices FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY job_owner_reads ON slice_reports FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY job_owner_reads ON result_store FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY worker_owner_reads ON compute_group_workers FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
GRANT SELECT ON compute_slices, slice_reports, result_store, compute_group_workers TO pgjobs_user;

-- The seed's activeSlices: copies out or to be sent, paused while their job is.
CREATE VIEW active_slices WITH (security_invoker = true) AS
SELECT s.job_id, s.slice_number, s.copy,
       CASE WHEN c.status = 'paused' AND s.lease_token IS NULL THEN 'paused' ELSE s.status::text END AS status,
       s.estimation, s.begin_time, s.last_progress_time, s.retask_counter, s.last_assigned_worker,
       s.last_assigned_worker_identity::regrole AS last_assigned_worker_identity
FROM compute_slices s JOIN compute_jobs c ON c.job_id = s.job_id;
COMMENT ON VIEW active_slices IS
    'The caller''s jobs'' slice copies that have no result yet: new, scheduled, working, overdue, '
    'returned, tiebreaker, or paused (a paused job''s copies that nobody holds).';
GRANT SELECT ON active_slices TO pgjobs_user;

-- Escrow held for a job: one slice payment per copy out and per report not yet folded. A table
-- function, read in FROM (LATERAL _compute_pending(...)), so that the planner inlines it: a
-- scalar SQL function with a subquery is not inlined, and its body was read and planned again
-- by every statement run that called it (a fetch planned three such bodies, a third of its work).
CREATE FUNCTION _compute_pending(job bigint, slice_payment numeric) RETURNS TABLE (pending numeric)
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT slice_payment * ((SELECT count(*) FROM compute_slices s WHERE s.job_id = job AND s.lease_token IS NOT NULL)
                            + (SELECT count(*) FROM slice_reports r WHERE r.job_id = job AND r.folded_seq IS NULL));
END;
GRANT EXECUTE ON FUNCTION _compute_pending TO pgjobs_user;
-- Every job, live or finished, has a row (the seed's table lost the rows of finished, paid jobs).
-- pending is escrow held for copies out and results not yet folded; remaining what is left of
-- the funds; paid + pending + remaining = funds, always.
CREATE VIEW job_fin_data WITH (security_invoker = true) AS
SELECT j.id AS job_id, j.owner::regrole AS owner, j.finished,
       coalesce(t.slice_work_payment_total, 0) AS slice_work_payment_total,
       coalesce(p.pending, 0) AS slice_work_payment_pending,
       c.funds - coalesce(t.slice_work_payment_total, 0) - coalesce(p.pending, 0) AS remaining,
       c.funds, coalesce(t.fees, 0) AS fees, coalesce(t.commission_total, 0) AS commission_total,
       coalesce('nsf' = ANY (job_flag_names(c.flags)), false) AS nsf, t.last_update
FROM (SELECT id, owner, false AS finished FROM jobs
      UNION ALL
      SELECT id, owner, true FROM job_history) j
LEFT JOIN compute_fin_totals t ON t.job_id = j.id
LEFT JOIN compute_jobs c ON c.job_id = j.id
LEFT JOIN LATERAL _compute_pending(c.job_id, c.slice_payment) p ON c.job_id IS NOT NULL;
COMMENT ON VIEW job_fin_data IS
    'For each of the caller''s jobs, finished ones included: DCC paid (slice_work_payment_total, '
    'commission included), held in escrow for copies out and results not yet folded '
    '(slice_work_payment_pending), remaining of the funds, the fees charged at deployment, the '
    'commission, and nsf (paused for want of funds). paid + pending + remaining = funds.';

GRANT SELECT ON job_fin_data TO pgjobs_user;

-- ---------------------------------------------------------------------------------------------
-- Deploying.

-- The market value of a slice, which a job deployed with a multiplier pays that many times.
CREATE FUNCTION compute_market_value() RETURNS numeric
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 0.001;
COMMENT ON FUNCTION compute_market_value IS 'DCC per slice that a market-value offer multiplies (0.001, constant for now).';
GRANT EXECUTE ON FUNCTION compute_market_value TO pgjobs_user;

-- An amount of DCC from a deployment's JSON: a number or a string of one (see _money).
CREATE FUNCTION _amount(spec jsonb, field text) RETURNS numeric
LANGUAGE c IMMUTABLE STRICT AS 'MODULE_PATHNAME', '_amount';

-- A value given as input, argument or work function: a URI is kept, anything else becomes a data: URI.
CREATE FUNCTION _as_uri(value text) RETURNS text
LANGUAGE sql IMMUTABLE
RETURN CASE WHEN value ~ '^[a-zA-Z][a-zA-Z0-9+.-]*:' THEN value ELSE 'data:,' || value END;

-- Whether a job's estimation slices all have their results.
CREATE FUNCTION _compute_estimated(job bigint) RETURNS boolean
LANGUAGE sql STABLE
RETURN (SELECT (SELECT count(*) FROM compute_results r WHERE r.job_id = job AND r.slice_number <= c.estimation_slices)
               >= least(c.estimation_slices, c.last_slice_number)
        FROM compute_jobs c WHERE c.job_id = job);

-- Where a job goes on when it runs again: running once its estimation slices are done.
CREATE FUNCTION _compute_resumed_status(job bigint) RETURNS compute_job_status
LANGUAGE sql STABLE
RETURN CASE
    WHEN NOT EXISTS (SELECT FROM compute_slices s WHERE s.job_id = job AND s.lease_token IS NOT NULL)
         AND NOT EXISTS (SELECT FROM slice_reports r WHERE r.job_id = job)
        THEN 'new'
    WHEN _compute_estimated(job) THEN 'running'
    ELSE 'estimation' END::compute_job_status;

-- ---------------------------------------------------------------------------------------------
-- Workers: register, join, fetch, progress, return, reject, submit. A worker calls these as its
-- own role (a proxy of its owner, or any role its owner is a member of).

-- Whether a group has any limit or budget of work: fetches through it then take turns. A table
-- function read in FROM, inlined, as _compute_pending.
CREATE FUNCTION _compute_group_limited(g compute_groups) RETURNS TABLE (limited boolean)
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT num_nonnulls(g.max_total_payment, g.max_concurrent_jobs, g.max_concurrent_workers, g.max_concurrent_sandboxes,
                        g.max_concurrent_cpus, g.max_concurrent_gpus, g.max_concurrent_escrow) > 0
           OR EXISTS (SELECT FROM compute_group_accounting_data a
                      WHERE a.compute_group_id = g.id
                        AND num_nonnulls(a.granted_cpu_time, a.granted_gpu_time, a.granted_in_data_size,
                                         a.granted_out_data_size) > 0);
END;

-- How many slices costing `per_slice` each (a job's measured average; null: not measured yet)
-- fit in what is left of a budget (null: unlimited, no bound). Until a job's slices have been
-- measured a task takes one; a kind a job does not use (measured 0) bounds nothing.
CREATE FUNCTION _slices_in_budget(budget_left numeric, per_slice double precision) RETURNS integer
LANGUAGE sql IMMUTABLE
RETURN CASE WHEN budget_left IS NULL OR per_slice = 0 THEN NULL
            WHEN budget_left <= 0 THEN 0
            WHEN per_slice IS NULL THEN 1
            ELSE greatest(least(floor(budget_left / per_slice::numeric), 2147483647), 0)::integer END;

-- How many slices `amount` pays for at `payment` (> 0) a slice, none if it is negative. Counted in
-- numeric and bounded before it becomes an integer: 1e-18 DCC a slice into an escrow of 1e27 is
-- 1e45 slices, which no bigint holds (a fetch failed with 22003).
CREATE FUNCTION _slices_paid_by(amount numeric, payment numeric) RETURNS integer
LANGUAGE sql IMMUTABLE
RETURN greatest(least(floor(amount / payment), 2147483647), 0)::integer;

-- A result larger than pg_jobs.compute_inline_result_bytes (a smaller one is kept as a data:
-- URI), kept in the result store and referred to as pgjobs:result:<id>.
CREATE FUNCTION _stored_result(job bigint, job_owner oid, body text) RETURNS text
LANGUAGE sql
BEGIN ATOMIC
    INSERT INTO result_store (job_id, owner, body) VALUES (job, job_owner, body)
    RETURNING 'pgjobs:result:' || result_store.id;
END;

-- Where the result of copy `copy` of slice `slice` goes when its job's results are POSTed to a
-- URL pattern: the address its worker POSTs it to and compute_results keeps (none without one).
CREATE FUNCTION _result_url(pattern text, slice integer, copy integer) RETURNS text
LANGUAGE sql IMMUTABLE
RETURN replace(replace(pattern, '{slice}', slice::text), '{copy}', copy::text);

-- A result's text, from its data: URI or the result store; read as the caller, so only the
-- job's owner reads a stored one.
CREATE FUNCTION compute_result_text(uri text) RETURNS text
LANGUAGE sql STABLE
RETURN CASE
    WHEN uri LIKE 'data:;base64,%' THEN convert_from(decode(substr(uri, 14), 'base64'), 'UTF8')
    WHEN uri LIKE 'pgjobs:result:%' THEN (SELECT s.body FROM result_store s WHERE s.id = substr(uri, 15)::bigint)
END;
COMMENT ON FUNCTION compute_result_text IS
    'The text of a result as compute_results keeps it: a data: URI decoded, or a pgjobs:result: URL '
    'read from the result store (the job''s owner only).';
GRANT EXECUTE ON FUNCTION compute_result_text TO pgjobs_user;

-- ---------------------------------------------------------------------------------------------
-- The background worker's part (src/api/compute_fold.rs): the watchdog, and folding reports and
-- tasks into statistics and payments. Folding happens in the transaction that marks what it
-- folded, so each report counts exactly once, crash or not. The launcher runs both every second
-- while there is work; these run them by hand, as the launcher would.
CREATE FUNCTION _compute_watchdog(at timestamptz) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', '_compute_watchdog';
CREATE FUNCTION _compute_fold(max_reports integer DEFAULT 10000) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', '_compute_fold';

-- ---------------------------------------------------------------------------------------------
-- The public functions (C functions of src/api/compute*.rs, each running its statements as the
-- extension's owner).

CREATE FUNCTION compute_deploy(spec jsonb) RETURNS bigint
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_deploy';
COMMENT ON FUNCTION compute_deploy IS
    'Deploys a compute job of many slices into compute groups and returns its id. spec: work, '
    'arguments, input ({"range": ...}, {"pattern": ..., "count": n} or {"values": [...]}), groups, '
    'offer or market_value, funds, duplication_level and duplication_type, capabilities, worktime '
    'and worktime_version, flags, max_slices_per_task, estimation_slices, result_storage, name, '
    'description, link (the README lists them).';
GRANT EXECUTE ON FUNCTION compute_deploy TO pgjobs_user;

CREATE FUNCTION compute_add_slices(job_id bigint, data jsonb DEFAULT NULL, count integer DEFAULT NULL) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_add_slices';
COMMENT ON FUNCTION compute_add_slices IS
    'Adds slices to one of the caller''s open jobs: values (a JSON array) for a job of values, a '
    'count for a range or a pattern. Returns the job''s slice count.';
GRANT EXECUTE ON FUNCTION compute_add_slices TO pgjobs_user;

CREATE FUNCTION compute_pause(job_id bigint) RETURNS compute_job_status
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_pause';
GRANT EXECUTE ON FUNCTION compute_pause TO pgjobs_user;
CREATE FUNCTION compute_resume(job_id bigint) RETURNS compute_job_status
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_resume';
GRANT EXECUTE ON FUNCTION compute_resume TO pgjobs_user;
CREATE FUNCTION compute_close(job_id bigint) RETURNS compute_job_status
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_close';
GRANT EXECUTE ON FUNCTION compute_close TO pgjobs_user;
CREATE FUNCTION compute_cancel(job_id bigint) RETURNS compute_job_status
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_cancel';
GRANT EXECUTE ON FUNCTION compute_cancel TO pgjobs_user;
CREATE FUNCTION compute_fund(job_id bigint, amount numeric) RETURNS compute_job_status
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_fund';
GRANT EXECUTE ON FUNCTION compute_fund TO pgjobs_user;
COMMENT ON FUNCTION compute_pause IS 'Stops handing out one of the caller''s jobs'' slices; copies out may still report.';
COMMENT ON FUNCTION compute_resume IS 'Hands out a paused job''s slices again.';
COMMENT ON FUNCTION compute_close IS 'Ends an open job''s taking of slices: it finishes when they are done.';
COMMENT ON FUNCTION compute_cancel IS 'Ends one of the caller''s jobs: its copies out are refused when they report.';
COMMENT ON FUNCTION compute_fund IS 'Adds DCC to a job''s funds; a job paused for want of funds runs again.';

CREATE FUNCTION compute_worker_register(label text, capabilities jsonb DEFAULT '[]', worktimes jsonb DEFAULT '{}',
                                        cpu_cores double precision DEFAULT NULL, gpu_cores double precision DEFAULT NULL,
                                        max_sandboxes double precision DEFAULT NULL, run_info jsonb DEFAULT '{}')
RETURNS uuid
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_worker_register';
COMMENT ON FUNCTION compute_worker_register IS
    'Registers the calling role as a worker of its identity (or updates it) with what it can run; '
    'returns its opaque id.';
GRANT EXECUTE ON FUNCTION compute_worker_register TO pgjobs_user;

CREATE FUNCTION compute_worker_join(group_opaque_id uuid, join_key text, secret text) RETURNS bigint
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_worker_join';
COMMENT ON FUNCTION compute_worker_join IS
    'Joins the calling worker to a compute group with its join key and secret (28P01 if wrong, '
    'the same for a group that does not exist).';
GRANT EXECUTE ON FUNCTION compute_worker_join TO pgjobs_user;
CREATE FUNCTION compute_worker_join_challenge(group_opaque_id uuid, OUT challenge text, OUT expires_at timestamptz)
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_worker_join_challenge';
COMMENT ON FUNCTION compute_worker_join_challenge IS
    'A challenge for the calling worker to sign (personal_sign, EIP-191) with the key of the '
    'group''s join_address, then to give to compute_worker_join_signed: once, within 5 minutes. '
    'Replaces the worker''s earlier challenge for that group.';
GRANT EXECUTE ON FUNCTION compute_worker_join_challenge TO pgjobs_user;
CREATE FUNCTION compute_worker_join_signed(group_opaque_id uuid, challenge text, signature text) RETURNS bigint
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_worker_join_signed';
COMMENT ON FUNCTION compute_worker_join_signed IS
    'Joins the calling worker to a compute group by its challenge signed with the key of the '
    'group''s join_address (0x, r, s, v in hex); the group''s id. 28P01 for a challenge used, '
    'expired or issued for another group or worker, and for a signature of another key.';
GRANT EXECUTE ON FUNCTION compute_worker_join_signed TO pgjobs_user;
CREATE FUNCTION compute_worker_leave(group_opaque_id uuid) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_worker_leave';
COMMENT ON FUNCTION compute_worker_leave IS 'Leaves a compute group; returns 1, or 0 if not in it.';
GRANT EXECUTE ON FUNCTION compute_worker_leave TO pgjobs_user;

CREATE FUNCTION compute_fetch(max_slices integer DEFAULT NULL)
RETURNS TABLE (task_token uuid, job_id bigint, slice_number integer, copy integer, datum text, work text,
               arguments text[], flags text[], estimation boolean, result_url text, result_params jsonb)
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_fetch';
COMMENT ON FUNCTION compute_fetch IS
    'A task for the calling worker: up to max_slices (and the job''s max_slices_per_task) slices of '
    'one eligible job of the groups it joined, within the groups'' limits; no rows when there is none. '
    'result_url: where the worker POSTs a slice''s result (with result_params) before it submits it, '
    'for a job whose results are stored elsewhere; null when they go to the database.';
GRANT EXECUTE ON FUNCTION compute_fetch TO pgjobs_user;

CREATE FUNCTION compute_progress(task_token uuid, slice_numbers integer[] DEFAULT NULL) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_progress';
COMMENT ON FUNCTION compute_progress IS
    'Says the task''s slices (all when null) are being worked on; needed at least every '
    'pg_jobs.compute_progress_timeout. Returns how many are still the caller''s.';
GRANT EXECUTE ON FUNCTION compute_progress TO pgjobs_user;

CREATE FUNCTION compute_return(task_token uuid, slice_numbers integer[] DEFAULT NULL) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_return';
COMMENT ON FUNCTION compute_return IS 'Gives slices of a task back unworked (all when null); returns how many.';
GRANT EXECUTE ON FUNCTION compute_return TO pgjobs_user;

CREATE FUNCTION compute_reject(task_token uuid, reason text, message text DEFAULT NULL, retries integer DEFAULT 0)
RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_reject';
COMMENT ON FUNCTION compute_reject IS
    'Refuses the task''s job: its slices go back, the rejection is recorded in work_reject_history, '
    'and the worker is given none of the job''s slices again.';
GRANT EXECUTE ON FUNCTION compute_reject TO pgjobs_user;

CREATE FUNCTION compute_submit(task_token uuid, slice_numbers integer[], results text[],
                               cpu_ms double precision[] DEFAULT NULL, gpu_ms double precision[] DEFAULT NULL,
                               wall_ms double precision[] DEFAULT NULL, in_bytes bigint[] DEFAULT NULL,
                               out_bytes bigint[] DEFAULT NULL)
RETURNS TABLE (slice_number integer, outcome text)
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_submit';
COMMENT ON FUNCTION compute_submit IS
    'Reports results of a task''s slices with what they measured. outcome per slice: accepted, '
    'waiting (for its other copies), tiebreaker (they disagree: another copy is sent), not accepted, '
    'corrupted (no agreement possible: the job ends), stale (not the caller''s: retasked or resolved).';
GRANT EXECUTE ON FUNCTION compute_submit TO pgjobs_user;
