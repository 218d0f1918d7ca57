-- The compute scheduler's tables (seed 000) around `jobs`: a compute job's own columns
-- (compute_jobs), what it measured, paid, produced and was given; the compute groups jobs are
-- deployed into and workers join; and the workers.
--
-- Who may see a row is decided by one column. Every table carries `owner`, the identity the row
-- belongs to: a job's tables carry the job's owner, a group's tables the group's owner, a
-- worker's tables the worker's owner. The extension copies it from the parent row whenever a row
-- is written (see the _owner_from_* triggers), so a policy compares one indexed column with
-- (SELECT identity()) and never has to join to find out whose a row is. Rows hold no foreign key
-- to jobs: a finished job moves to job_history under the same id and its rows stay where they are.
--
-- Policies apply TO pgjobs_user, so a role outside that group meets no policy at all and every
-- row stays hidden even if someone grants it a table by mistake.

-- A URI is a scheme and a colon first: data:, https:, s3: ...; a bare path is refused.
CREATE DOMAIN uri AS text CHECK (VALUE ~ '^[a-zA-Z][a-zA-Z0-9+.-]*:');
COMMENT ON DOMAIN uri IS 'Text that starts like a URI (scheme:), for example data:,42 or https://host/x.';

CREATE DOMAIN duplication_type AS text CHECK (VALUE IN ('race', 'consensus'));

-- Every column of DCC, so that no path, the owner's included, stores an amount the scheduler and
-- its readers (rust_decimal holds |x| < 7.9e28) cannot add up. numeric has NaN and ±Infinity, and
-- NaN sorts above every number: it passes `>= 0`, so it is named.
CREATE DOMAIN money_amount AS numeric CHECK (VALUE >= 0 AND VALUE < 1e28 AND VALUE <> 'NaN');
COMMENT ON DOMAIN money_amount IS 'An amount of DCC: finite, not negative, below 1e28.';
CREATE DOMAIN fraction AS numeric CHECK (VALUE >= 0 AND VALUE <= 1 AND VALUE <> 'NaN');

-- A running total of what reports measured (milliseconds, bytes), plus more: it stops at the
-- largest bigint rather than failing. Each report measures at most 1e12 of each, so a total a
-- worker can drive past a bigint takes 9.2 million of its reports; failing there would stop the
-- fold of every job with reports through that group, other owners' included, at every round.
CREATE FUNCTION _total_plus(total bigint, more numeric) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN least(total + more, 9223372036854775807)::bigint;

-- An amount a caller gives: finite, not negative, at most 18 decimals (the smallest unit) and
-- below 1e10 DCC, so that it is exact in 28 digits (rust_decimal's) and a job's sums stay far
-- from any bound. Refused, never rounded.
CREATE FUNCTION _money(amount numeric, name text) RETURNS numeric
LANGUAGE c IMMUTABLE STRICT AS 'MODULE_PATHNAME', '_money';

CREATE TYPE compute_job_status AS ENUM ('new', 'estimation', 'running', 'paused', 'finished', 'cancelled', 'corrupted');
COMMENT ON TYPE compute_job_status IS
    'A compute job''s status; the README''s status map gives the transitions.';
COMMENT ON DOMAIN duplication_type IS 'How a compute job''s duplicated slices are resolved: race or consensus.';

-- Flag words are named once, in pg_jobs_core::compute, so nobody decodes bits by hand: these
-- three functions are Rust (src/api/compute.rs). A bit without a name comes out as 'bit N' rather
-- than disappearing.
COMMENT ON FUNCTION job_flag_names IS
    'Names the bits of compute_jobs.flags: 1 localExec, 2 open (slices can still be added), 4 workerConsole, '
    '8 greedyEstimation, 16 discrete, 32 useStrict, 64 nsf (insufficient funds).';
COMMENT ON FUNCTION capability_names IS
    'Names the bits of a capability set such as compute_jobs.need_capabilities: 1 v8, 2 spidermonkey, '
    '4 browser, 8 offscreenCanvas, 16 fdlibm, 32 webgpu, 64 KVINv9.';
COMMENT ON FUNCTION worker_flag_names IS 'Names the bits of workers.flags: 1 portal (a Portal worker).';

-- The owner copies (src/api/owners.rs): a row's owner is its parent's, whoever writes it.
CREATE FUNCTION _owner_from_job() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', '_owner_from_job';
CREATE FUNCTION _owner_from_group() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', '_owner_from_group';
CREATE FUNCTION _owner_from_worker() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', '_owner_from_worker';
CREATE FUNCTION _owner_from_creds_list() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', '_owner_from_creds_list';

-- The seed's autoNow: last_update follows every change, whoever makes it.
CREATE FUNCTION _touch_last_update() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', '_touch_last_update';

-- ---------------------------------------------------------------------------------------------
-- Via job: read by the job's owner. The scheduler writes these rows; the owner may only repoint
-- the value of a result or an input.

-- The compute scheduler's side of a job, which the queue never reads: one row per compute job,
-- none for a plain queued job, so that a queued job's live row carries the queue's columns only.
CREATE TABLE compute_jobs (
    job_id                  bigint PRIMARY KEY,
    owner                   regrole NOT NULL DEFAULT identity(),
    status                  compute_job_status NOT NULL DEFAULT 'new',
    address                 text,
    payment_account         text,
    last_slice_number       bigint,
    next_slice_number       bigint,
    max_slices_per_task     integer,
    absolute_slice_payment  money_amount,
    mv_mult_slice_payment   money_amount,
    duplication_level       double precision NOT NULL DEFAULT 1.0,
    duplication_type        duplication_type,
    flags                   integer NOT NULL DEFAULT 0,
    need_capabilities       integer NOT NULL DEFAULT 0,
    requirements            jsonb,
    data_storage_type       text,
    data_storage_details    text,
    -- Where results go: pgjobs (the database), or pattern: the workers POST each one, with
    -- result_storage_params, to result_storage_details, a URL pattern with {slice} and {copy}
    -- (_result_url), and the database keeps the address.
    result_storage_type     text,
    result_storage_details  text,
    result_storage_params   jsonb,
    worktime                text,
    worktime_version        text,
    -- What one copy of a slice is paid: absolute_slice_payment, or the multiplier times the
    -- market value, fixed when the job is deployed.
    slice_payment           money_amount NOT NULL DEFAULT 0,
    -- DCC put in escrow for the slices, fees already taken off; paid + pending + remaining.
    funds                   money_amount NOT NULL DEFAULT 0,
    estimation_slices       nonnegative_integer NOT NULL DEFAULT 3,
    end_time                timestamptz,
    -- Why the background worker could not fold this job's reports; it folds none of them after
    -- that, and the other jobs' go on.
    fold_error              text
);
COMMENT ON TABLE compute_jobs IS
    'A compute job''s own columns (seed 000): escrow and payment, slice numbering and payment per '
    'slice, duplication, flags, the capabilities and requirements a worker needs, where data and '
    'results are stored, and the worktime. One row per compute job, none for a queued job; kept '
    'after the job finishes, like the job''s other rows. Read-only for its owner.';
COMMENT ON COLUMN compute_jobs.address IS 'The job''s escrow account: an opaque account identifier.';
COMMENT ON COLUMN compute_jobs.flags IS 'Bit flags; job_flag_names(flags) names them.';
COMMENT ON COLUMN compute_jobs.fold_error IS
    'Set when the job''s reports could not be folded (the error and its SQLSTATE): they stay '
    'unfolded and unpaid, and the job does not finish; the other jobs are not held up.';
COMMENT ON COLUMN compute_jobs.need_capabilities IS 'Bit flags; capability_names(need_capabilities) names them.';

CREATE TABLE compute_perf_data (
    job_id                       bigint PRIMARY KEY,
    owner                        regrole NOT NULL DEFAULT identity(),
    last_update                  timestamptz NOT NULL DEFAULT now(),
    estimation_slices_remaining  nonnegative_bigint NOT NULL DEFAULT 3,
    -- Counts in bigints: a job may have 2^31 - 1 slices, each handed out, returned, retasked and
    -- reported more than once, and the fold, which adds every job's tasks up in one statement,
    -- would fail for all of them on the first job past an integer.
    measured_slices              bigint NOT NULL DEFAULT 0,
    task_count                   bigint NOT NULL DEFAULT 0,
    return_count                 bigint NOT NULL DEFAULT 0,
    retasked_count               bigint NOT NULL DEFAULT 0,
    too_slow_count               bigint NOT NULL DEFAULT 0,
    no_progress_count            bigint NOT NULL DEFAULT 0,
    uncaught_count               bigint NOT NULL DEFAULT 0,
    -- Moving averages and their moving variances; null until a result has been measured.
    slice_cpu_time               double precision,
    slice_gpu_time               double precision,
    slice_in_data_size           double precision,
    slice_out_data_size          double precision,
    slice_cpu_density            double precision,
    slice_gpu_density            double precision,
    task_distribution            double precision,
    slice_cpu_time_variance      double precision,
    slice_gpu_time_variance      double precision,
    slice_in_data_size_variance  double precision,
    slice_out_data_size_variance double precision,
    slice_cpu_density_variance   double precision,
    slice_gpu_density_variance   double precision,
    task_distribution_variance   double precision,
    total_cpu_time               bigint NOT NULL DEFAULT 0,
    total_gpu_time               bigint NOT NULL DEFAULT 0,
    total_in_data_size           bigint NOT NULL DEFAULT 0,
    total_out_data_size          bigint NOT NULL DEFAULT 0
);
COMMENT ON TABLE compute_perf_data IS
    'What a job''s slices cost, one row per job. Averages are exponential with '
    'alpha = min(0.5, unreported / total), so a small job''s figures move fast and a large job''s '
    'settle; the square root of a *_variance is a usable standard deviation. Times are '
    'milliseconds, sizes bytes; wall time per slice is slice_cpu_time / slice_cpu_density.';
COMMENT ON COLUMN compute_perf_data.estimation_slices_remaining IS
    'Estimation slices not yet handed out; the job leaves estimation when this reaches 0.';
COMMENT ON COLUMN compute_perf_data.measured_slices IS 'Results that fed the averages, duplicates included.';
COMMENT ON COLUMN compute_perf_data.return_count IS 'Slices given back by workers without being worked on.';
COMMENT ON COLUMN compute_perf_data.retasked_count IS 'Slices re-issued by the watchdog.';
COMMENT ON COLUMN compute_perf_data.task_distribution IS
    'Fraction of a task''s nominal duration this job''s slices took, on requests where the job '
    'was eligible; long slices can exceed 1.';

-- The money a job's slices earned, as the scheduler records it. job_fin_data is how it is read.
CREATE TABLE compute_fin_totals (
    job_id                      bigint PRIMARY KEY,
    owner                       regrole NOT NULL DEFAULT identity(),
    slice_work_payment_total    money_amount NOT NULL DEFAULT 0,
    -- Of the payments, what went to the groups as commission; and the fees charged at deployment.
    commission_total            money_amount NOT NULL DEFAULT 0,
    fees                        money_amount NOT NULL DEFAULT 0,
    last_update                 timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE compute_fin_totals IS
    'DCC paid out for a job''s slices (commission included), folded from its results by the '
    'background worker; kept after the job finishes. Read it through job_fin_data, which adds '
    'what escrow holds.';

CREATE TABLE compute_results (
    job_id        bigint NOT NULL,
    slice_number  positive_integer NOT NULL,
    owner         regrole NOT NULL DEFAULT identity(),
    value         uri NOT NULL,
    completed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job_id, slice_number)
);
COMMENT ON TABLE compute_results IS
    'One row per completed slice; count(*) for a job is its finished slices, and completed_at '
    'gives completion over time without sampling.';
COMMENT ON COLUMN compute_results.value IS
    'The result: a data: URI for a small one, a URL into the result store for a large one. '
    'The owner may change it, to move a result to other storage.';

CREATE TABLE compute_data (
    job_id        bigint NOT NULL,
    slice_number  positive_integer NOT NULL,
    owner         regrole NOT NULL DEFAULT identity(),
    value         uri NOT NULL,
    PRIMARY KEY (job_id, slice_number)
);
COMMENT ON TABLE compute_data IS
    'One input datum per slice. The owner may change value, to point a slice that has not '
    'started at a new remote URI.';

CREATE TABLE compute_arguments (
    job_id     bigint NOT NULL,
    arg_index  nonnegative_integer NOT NULL,
    owner      regrole NOT NULL DEFAULT identity(),
    value      uri NOT NULL,
    PRIMARY KEY (job_id, arg_index)
);
COMMENT ON TABLE compute_arguments IS 'The arguments every slice of the job is given, in order. value is changeable.';

CREATE TABLE work_functions (
    job_id        bigint PRIMARY KEY,
    owner         regrole NOT NULL DEFAULT identity(),
    value         uri NOT NULL,
    require_path  text[],
    module_path   text[],
    dependencies  jsonb
);
COMMENT ON TABLE work_functions IS
    'The job''s work function: value is the function as a data: URI or a URL to it. Read-only.';

CREATE TABLE work_reject_history (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id            bigint NOT NULL,
    owner             regrole NOT NULL DEFAULT identity(),
    slice_number      integer NOT NULL,
    worker_opaque_id  uuid,
    rejected_at       timestamptz NOT NULL DEFAULT now(),
    reason            text,
    error_msg         text,
    retries           integer
);
CREATE INDEX work_reject_history_job ON work_reject_history (job_id, rejected_at);
COMMENT ON TABLE work_reject_history IS
    'Each time a worker refused a job outright (work.reject(), an unmet requirement): which '
    'slice triggered it, which worker, why (reason such as EWORKREJECT, error_msg the message '
    'or top of the stack), after how many retries.';

CREATE INDEX compute_jobs_owner ON compute_jobs (owner);
CREATE INDEX compute_perf_data_owner ON compute_perf_data (owner);
CREATE INDEX compute_fin_totals_owner ON compute_fin_totals (owner);
CREATE INDEX compute_results_owner ON compute_results (owner);
CREATE INDEX compute_data_owner ON compute_data (owner);
CREATE INDEX compute_arguments_owner ON compute_arguments (owner);
CREATE INDEX work_functions_owner ON work_functions (owner);
CREATE INDEX work_reject_history_owner ON work_reject_history (owner);

CREATE TRIGGER owner_from_job BEFORE INSERT OR UPDATE OF job_id, owner ON compute_jobs
    FOR EACH ROW EXECUTE FUNCTION _owner_from_job();
CREATE TRIGGER owner_from_job BEFORE INSERT OR UPDATE OF job_id, owner ON compute_perf_data
    FOR EACH ROW EXECUTE FUNCTION _owner_from_job();
CREATE TRIGGER owner_from_job BEFORE INSERT OR UPDATE OF job_id, owner ON compute_fin_totals
    FOR EACH ROW EXECUTE FUNCTION _owner_from_job();
CREATE TRIGGER owner_from_job BEFORE INSERT OR UPDATE OF job_id, owner ON compute_results
    FOR EACH ROW EXECUTE FUNCTION _owner_from_job();
CREATE TRIGGER owner_from_job BEFORE INSERT OR UPDATE OF job_id, owner ON compute_data
    FOR EACH ROW EXECUTE FUNCTION _owner_from_job();
CREATE TRIGGER owner_from_job BEFORE INSERT OR UPDATE OF job_id, owner ON compute_arguments
    FOR EACH ROW EXECUTE FUNCTION _owner_from_job();
CREATE TRIGGER owner_from_job BEFORE INSERT OR UPDATE OF job_id, owner ON work_functions
    FOR EACH ROW EXECUTE FUNCTION _owner_from_job();
-- A datum or an argument its job's owner changes is a URL the job's workers will contact: each
-- of the job's groups must let them (src/api/compute_origins.rs), as at deployment.
CREATE FUNCTION _compute_contact_admitted() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', '_compute_contact_admitted';
CREATE TRIGGER contact_admitted BEFORE UPDATE OF value ON compute_data
    FOR EACH ROW EXECUTE FUNCTION _compute_contact_admitted('fetchData');
CREATE TRIGGER contact_admitted BEFORE UPDATE OF value ON compute_arguments
    FOR EACH ROW EXECUTE FUNCTION _compute_contact_admitted('fetchArguments');
CREATE TRIGGER owner_from_job BEFORE INSERT OR UPDATE OF job_id, owner ON work_reject_history
    FOR EACH ROW EXECUTE FUNCTION _owner_from_job();
CREATE TRIGGER touch BEFORE UPDATE ON compute_perf_data
    FOR EACH ROW EXECUTE FUNCTION _touch_last_update();
CREATE TRIGGER touch BEFORE UPDATE ON compute_fin_totals
    FOR EACH ROW EXECUTE FUNCTION _touch_last_update();

ALTER TABLE compute_jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE compute_perf_data ENABLE ROW LEVEL SECURITY;
ALTER TABLE compute_fin_totals ENABLE ROW LEVEL SECURITY;
ALTER TABLE compute_results ENABLE ROW LEVEL SECURITY;
ALTER TABLE compute_data ENABLE ROW LEVEL SECURITY;
ALTER TABLE compute_arguments ENABLE ROW LEVEL SECURITY;
ALTER TABLE work_functions ENABLE ROW LEVEL SECURITY;
ALTER TABLE work_reject_history ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_owner_reads ON compute_jobs FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY job_owner_reads ON compute_perf_data FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY job_owner_reads ON compute_fin_totals FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY job_owner_reads ON compute_results FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY job_owner_reads ON compute_data FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY job_owner_reads ON compute_arguments FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY job_owner_reads ON work_functions FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY job_owner_reads ON work_reject_history FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY job_owner_changes_value ON compute_results FOR UPDATE TO pgjobs_user
    USING (owner = (SELECT identity())) WITH CHECK (owner = (SELECT identity()));
CREATE POLICY job_owner_changes_value ON compute_data FOR UPDATE TO pgjobs_user
    USING (owner = (SELECT identity())) WITH CHECK (owner = (SELECT identity()));
CREATE POLICY job_owner_changes_value ON compute_arguments FOR UPDATE TO pgjobs_user
    USING (owner = (SELECT identity())) WITH CHECK (owner = (SELECT identity()));
GRANT SELECT ON compute_jobs, compute_perf_data, compute_fin_totals, compute_results, compute_data,
    compute_arguments, work_functions, work_reject_history TO pgjobs_user;
GRANT UPDATE (value) ON compute_results, compute_data, compute_arguments TO pgjobs_user;

-- ---------------------------------------------------------------------------------------------
-- Compute groups: read by the group's owner, who may rename a group, change its join
-- credentials and list it publicly, and manages the origins its workers may contact.

-- True for an Ethereum-style address (0x and 40 hex digits; in mixed case, its EIP-55
-- checksum), else 22023 saying what is wrong; null is no address (src/api/compute_workers.rs).
CREATE FUNCTION _join_address_ok(address text) RETURNS boolean
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', '_join_address_ok';
GRANT EXECUTE ON FUNCTION _join_address_ok TO pgjobs_user;

CREATE TABLE compute_groups (
    id                        bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    opaque_id                 uuid NOT NULL DEFAULT _opaque_id() UNIQUE,
    owner                     regrole NOT NULL DEFAULT identity(),
    name                      text,
    description               text,
    -- Public (in compute_groups_public) only when the owner says so.
    listed                    boolean NOT NULL DEFAULT false,
    join_key                  text,
    join_hash                 text CHECK (join_hash ~ '^\$2[abxy]?\$'),
    join_address              text CONSTRAINT compute_groups_join_address_valid CHECK (_join_address_ok(join_address)),
    commission_rate           fraction,
    commission_account        text,
    deploy_fee                money_amount,
    add_job_fee               money_amount,
    deploy_access             text NOT NULL DEFAULT 'owner' CHECK (deploy_access IN ('owner', 'join')),
    -- Limits; null means unlimited.
    max_total_payment         money_amount,
    max_concurrent_jobs       nonnegative_integer,
    max_concurrent_workers    nonnegative_integer,
    max_concurrent_sandboxes  nonnegative_integer,
    max_concurrent_cpus       nonnegative_integer,
    max_concurrent_gpus       nonnegative_integer,
    max_concurrent_escrow     money_amount,
    creation_time             timestamptz NOT NULL DEFAULT now(),
    last_update               timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE compute_groups IS
    'Where jobs are deployed and workers join. A worker joins with join_key and the secret whose '
    'bcrypt hash is join_hash (set with compute_group_set_secret), or by a signature of join_address.';
COMMENT ON COLUMN compute_groups.join_hash IS
    'A salted bcrypt hash of the join secret; the secret itself is never stored.';
COMMENT ON COLUMN compute_groups.join_address IS
    'An Ethereum-style address (0x and 40 hex digits, checksummed or in one case): a worker that '
    'signs a join challenge with its key joins (compute_worker_join_challenge, compute_worker_join_signed).';
COMMENT ON COLUMN compute_groups.commission_rate IS 'Fraction of each slice payment taken as commission.';
COMMENT ON COLUMN compute_groups.commission_account IS 'Where the commission goes: an opaque account identifier.';
COMMENT ON COLUMN compute_groups.deploy_access IS 'Who may deploy into the group: its owner, or anyone who can join it.';

CREATE TABLE compute_group_jobs (
    compute_group_id  bigint NOT NULL REFERENCES compute_groups ON DELETE CASCADE,
    job_id            bigint NOT NULL,
    owner             regrole NOT NULL DEFAULT identity(),
    -- The job's owner sees the membership too, through compute_groups_jobs_by_job.
    job_owner         regrole NOT NULL,
    -- What the job paid the group to be deployed into it: its deploy fee and add-job fee.
    fee               money_amount NOT NULL DEFAULT 0,
    last_update       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (compute_group_id, job_id)
);
CREATE INDEX compute_group_jobs_job ON compute_group_jobs (job_id);
CREATE INDEX compute_group_jobs_job_owner ON compute_group_jobs (job_owner);
COMMENT ON TABLE compute_group_jobs IS 'Which jobs are in which group. owner is the group''s owner.';

-- A group's budgets, as its owner grants them (compute_group_budget) and deployments take jobs
-- from them; null means unlimited. What the work through the group spent is compute_group_spent,
-- which only the fold writes: no member's transaction ever holds a row the fold must change.
-- compute_group_budgets shows what remains of each.
CREATE TABLE compute_group_accounting_data (
    compute_group_id         bigint PRIMARY KEY REFERENCES compute_groups ON DELETE CASCADE,
    owner                    regrole NOT NULL DEFAULT identity(),
    granted_cpu_time         nonnegative_bigint,
    granted_gpu_time         nonnegative_bigint,
    remaining_jobs           integer,
    granted_in_data_size     nonnegative_bigint,
    granted_out_data_size    nonnegative_bigint,
    last_update              timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE compute_group_accounting_data IS
    'What a group may spend: milliseconds of CPU and GPU and bytes in and out granted in all, and '
    'the jobs it may still take; compute_group_budgets shows what remains.';

-- What the work through a group spent: every report folded, accepted or not (the work was done),
-- counted once by the fold that took it, in the transaction that marked it folded.
CREATE TABLE compute_group_spent (
    compute_group_id  bigint PRIMARY KEY REFERENCES compute_groups ON DELETE CASCADE,
    owner             regrole NOT NULL DEFAULT identity(),
    cpu_time          bigint NOT NULL DEFAULT 0,
    gpu_time          bigint NOT NULL DEFAULT 0,
    in_data_size      bigint NOT NULL DEFAULT 0,
    out_data_size     bigint NOT NULL DEFAULT 0,
    last_update       timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE compute_group_spent IS
    'Milliseconds of CPU and GPU and bytes in and out that the reports folded so far spent through '
    'the group.';

CREATE TABLE compute_group_worker_origins (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    compute_group_id  bigint NOT NULL REFERENCES compute_groups ON DELETE CASCADE,
    owner             regrole NOT NULL DEFAULT identity(),
    origin            uri NOT NULL,
    type              text NOT NULL DEFAULT 'any'
                      CHECK (type IN ('any', 'fetchWorkFunctions', 'fetchArguments', 'fetchData', 'sendResults')),
    last_update       timestamptz NOT NULL DEFAULT now(),
    UNIQUE (compute_group_id, origin, type)
);
COMMENT ON TABLE compute_group_worker_origins IS
    'URL origins the group''s workers may contact, and for what (any, or one kind of fetch or send).';

CREATE TABLE compute_group_job_period_stats (
    compute_group_id              bigint NOT NULL REFERENCES compute_groups ON DELETE CASCADE,
    job_id                        bigint NOT NULL,
    period_start                  timestamptz NOT NULL,
    period_length                 positive_interval NOT NULL,
    owner                         regrole NOT NULL DEFAULT identity(),
    task_eligible_count           bigint NOT NULL DEFAULT 0,
    no_slice_task_count           bigint NOT NULL DEFAULT 0,
    tasked_slice_count            bigint NOT NULL DEFAULT 0,
    total_earnings                money_amount NOT NULL DEFAULT 0,
    total_cpu_time                bigint NOT NULL DEFAULT 0,
    total_gpu_time                bigint NOT NULL DEFAULT 0,
    total_in_data_size            bigint NOT NULL DEFAULT 0,
    total_out_data_size           bigint NOT NULL DEFAULT 0,
    slice_cpu_time                double precision,
    slice_gpu_time                double precision,
    slice_in_data_size            double precision,
    slice_out_data_size           double precision,
    slice_cpu_density             double precision,
    slice_gpu_density             double precision,
    slice_cpu_time_variance       double precision,
    slice_gpu_time_variance       double precision,
    slice_in_data_size_variance   double precision,
    slice_out_data_size_variance  double precision,
    slice_cpu_density_variance    double precision,
    slice_gpu_density_variance    double precision,
    earnings_per_cpu_ms           numeric GENERATED ALWAYS AS (total_earnings / nullif(total_cpu_time, 0)) STORED,
    PRIMARY KEY (compute_group_id, job_id, period_start, period_length)
);
COMMENT ON TABLE compute_group_job_period_stats IS
    'What happened to one job in one group during one period: the record any market rate is '
    'computed from. task_eligible_count counts task requests from eligible workers, '
    'no_slice_task_count those that got no slice of the job; averages are as in compute_perf_data, '
    'scoped to the group.';
COMMENT ON COLUMN compute_group_job_period_stats.earnings_per_cpu_ms IS
    'The realised rate: DCC earned per CPU millisecond for this job, group and period.';

CREATE TABLE compute_group_worker_period_stats (
    compute_group_id  bigint NOT NULL REFERENCES compute_groups ON DELETE CASCADE,
    worker_opaque_id  uuid NOT NULL,
    period_start      timestamptz NOT NULL,
    period_length     positive_interval NOT NULL,
    owner             regrole NOT NULL DEFAULT identity(),
    task_count        bigint NOT NULL DEFAULT 0,
    slice_count       bigint NOT NULL DEFAULT 0,
    cpu_time          bigint NOT NULL DEFAULT 0,
    gpu_time          bigint NOT NULL DEFAULT 0,
    in_data_size      bigint NOT NULL DEFAULT 0,
    out_data_size     bigint NOT NULL DEFAULT 0,
    earnings          money_amount NOT NULL DEFAULT 0,
    PRIMARY KEY (compute_group_id, worker_opaque_id, period_start, period_length)
);
COMMENT ON TABLE compute_group_worker_period_stats IS
    'What one worker supplied to one group during one period: tasks fetched, slices finished, '
    'milliseconds of CPU and GPU, bytes in and out, and DCC earned.';

CREATE INDEX compute_groups_owner ON compute_groups (owner);
CREATE INDEX compute_group_jobs_owner ON compute_group_jobs (owner);
CREATE INDEX compute_group_accounting_data_owner ON compute_group_accounting_data (owner);
CREATE INDEX compute_group_spent_owner ON compute_group_spent (owner);
CREATE INDEX compute_group_worker_origins_owner ON compute_group_worker_origins (owner);
CREATE INDEX compute_group_job_period_stats_owner ON compute_group_job_period_stats (owner);
CREATE INDEX compute_group_worker_period_stats_owner ON compute_group_worker_period_stats (owner);

-- A membership row has two owners: the group's, and the job's for the job's side of it.
CREATE FUNCTION _compute_group_job_owners() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', '_compute_group_job_owners';
CREATE TRIGGER owners BEFORE INSERT OR UPDATE OF compute_group_id, job_id, owner, job_owner ON compute_group_jobs
    FOR EACH ROW EXECUTE FUNCTION _compute_group_job_owners();
CREATE TRIGGER owner_from_group BEFORE INSERT OR UPDATE OF compute_group_id, owner ON compute_group_accounting_data
    FOR EACH ROW EXECUTE FUNCTION _owner_from_group();
CREATE TRIGGER owner_from_group BEFORE INSERT OR UPDATE OF compute_group_id, owner ON compute_group_spent
    FOR EACH ROW EXECUTE FUNCTION _owner_from_group();
CREATE TRIGGER owner_from_group BEFORE INSERT OR UPDATE OF compute_group_id, owner ON compute_group_worker_origins
    FOR EACH ROW EXECUTE FUNCTION _owner_from_group();
CREATE TRIGGER owner_from_group BEFORE INSERT OR UPDATE OF compute_group_id, owner ON compute_group_job_period_stats
    FOR EACH ROW EXECUTE FUNCTION _owner_from_group();
CREATE TRIGGER owner_from_group BEFORE INSERT OR UPDATE OF compute_group_id, owner ON compute_group_worker_period_stats
    FOR EACH ROW EXECUTE FUNCTION _owner_from_group();
CREATE TRIGGER touch BEFORE UPDATE ON compute_groups
    FOR EACH ROW EXECUTE FUNCTION _touch_last_update();
CREATE TRIGGER touch BEFORE UPDATE ON compute_group_jobs
    FOR EACH ROW EXECUTE FUNCTION _touch_last_update();
CREATE TRIGGER touch BEFORE UPDATE ON compute_group_accounting_data
    FOR EACH ROW EXECUTE FUNCTION _touch_last_update();
CREATE TRIGGER touch BEFORE UPDATE ON compute_group_spent
    FOR EACH ROW EXECUTE FUNCTION _touch_last_update();
CREATE TRIGGER touch BEFORE UPDATE ON compute_group_worker_origins
    FOR EACH ROW EXECUTE FUNCTION _touch_last_update();
-- An origin removed or changed may not leave an open job of its group contacting what the
-- group no longer admits (src/api/compute_origins.rs).
CREATE FUNCTION _compute_origin_removed() RETURNS trigger
LANGUAGE c AS 'MODULE_PATHNAME', '_compute_origin_removed';
CREATE TRIGGER origin_removed AFTER DELETE OR UPDATE OF compute_group_id, origin, type
    ON compute_group_worker_origins
    FOR EACH ROW EXECUTE FUNCTION _compute_origin_removed();

-- The job's side of compute_group_jobs, for the job's owner, who does not own the groups. It
-- carries each group's opaque id (which the seed's view left out) so that compute_group_public
-- can name the group. A view over a function's rows, not over the join: a member's condition on
-- compute_group_opaque_id, pushed into a security_barrier view, would filter compute_groups
-- before the join to the caller's memberships, and EXPLAIN ANALYZE would count the groups of
-- others in the probed range. Nothing is pushed into a function (a C function, never inlined,
-- that reads the caller's rows as the extension's owner: src/api/compute_settings.rs).
CREATE FUNCTION _caller_compute_groups_jobs_by_job()
RETURNS TABLE (job_id bigint, compute_group_id bigint, compute_group_opaque_id uuid, last_update timestamptz)
LANGUAGE c STABLE AS 'MODULE_PATHNAME', '_caller_compute_groups_jobs_by_job';
-- The view's, read as the caller.
GRANT EXECUTE ON FUNCTION _caller_compute_groups_jobs_by_job TO pgjobs_user;
CREATE VIEW compute_groups_jobs_by_job AS
SELECT * FROM _caller_compute_groups_jobs_by_job();
COMMENT ON VIEW compute_groups_jobs_by_job IS 'The groups each of the caller''s jobs is in.';

-- What anyone may know about a group. Listing every group to whoever asks was the seed's
-- defect: only groups their owner listed appear here; any other is found by its opaque id.
-- _fence: a condition on opaque_id must not reach the unlisted groups' column (see 010_types.sql).
CREATE VIEW compute_groups_public WITH (security_barrier = true) AS
SELECT _fence(g.opaque_id) AS opaque_id, g.name, g.description FROM compute_groups g WHERE g.listed;
COMMENT ON VIEW compute_groups_public IS
    'The public fields of the groups their owners chose to list. compute_group_public(opaque_id) '
    'finds any group by its id.';

-- (src/api/compute_settings.rs: it reads as the extension's owner, so it finds any group by its id.)
CREATE FUNCTION compute_group_public(opaque_id uuid) RETURNS SETOF compute_groups_public
LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'compute_group_public';
COMMENT ON FUNCTION compute_group_public IS
    'The public fields (opaque_id, name, description) of one group, listed or not; no row if '
    'there is no such group.';
GRANT EXECUTE ON FUNCTION compute_group_public TO pgjobs_user;

-- The same for jobs, live or finished: only listed jobs appear; any one is found by its id, which
-- is computed from the job's id and owner (src/api/opaque_ids.rs), not stored.
CREATE VIEW jobs_public WITH (security_barrier = true) AS
SELECT _job_opaque_id(j.id, j.owner) AS opaque_id, j.name, j.description, j.link FROM jobs j WHERE j.listed
UNION ALL
SELECT _job_opaque_id(h.id, h.owner), h.name, h.description, h.link FROM job_history h WHERE h.listed;
COMMENT ON VIEW jobs_public IS
    'The public fields of the jobs their owners chose to list. jobs_public_lookup(opaque_id) '
    'finds any job by its id.';

CREATE FUNCTION jobs_public_lookup(opaque_id uuid) RETURNS SETOF jobs_public
LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'jobs_public_lookup';
COMMENT ON FUNCTION jobs_public_lookup IS
    'The public fields (opaque_id, name, description, link) of one job, listed or not; no row if '
    'there is no such job.';
GRANT SELECT ON jobs_public TO pgjobs_user;
GRANT EXECUTE ON FUNCTION jobs_public_lookup(uuid) TO pgjobs_user;

-- Join secrets are hashed here and nowhere else. These bodies are bound to pgcrypto's functions
-- when the extension is created, so the pinned search_path of their callers needs no pgcrypto.
CREATE FUNCTION _join_hash(secret text) RETURNS text
LANGUAGE sql VOLATILE STRICT
RETURN crypt(secret, gen_salt('bf'));

CREATE FUNCTION _join_hash_matches(secret text, hash text) RETURNS boolean
LANGUAGE sql STABLE STRICT
RETURN crypt(secret, hash) = hash;

-- The group whose join key and secret these are, or null (src/api/compute_settings.rs): for the
-- scheduler's SQL, which checks the credentials a worker joins or deploys with.
CREATE FUNCTION _join_check(caller_role oid, group_opaque_id uuid, key text, secret text) RETURNS bigint
LANGUAGE c AS 'MODULE_PATHNAME', '_join_check';

-- compute_group_set_secret and the rest below: src/api/compute_settings.rs.
CREATE FUNCTION compute_group_set_secret(group_opaque_id uuid, secret text) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_group_set_secret';
COMMENT ON FUNCTION compute_group_set_secret IS
    'Sets the join secret of one of the caller''s groups; only its salted hash is kept. '
    'null removes it.';
GRANT EXECUTE ON FUNCTION compute_group_set_secret TO pgjobs_user;

-- (src/api/compute.rs, as the extension's owner: the hash is not readable by members.)
CREATE FUNCTION compute_group_check_secret(group_opaque_id uuid, join_key text, secret text)
RETURNS boolean
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_group_check_secret';
COMMENT ON FUNCTION compute_group_check_secret IS
    'Whether join_key and secret are the join credentials of the group: true or false, and false '
    'as well for a group that does not exist or has no secret. 20 wrong within 20 minutes (this '
    'and the previous 10-minute window), here, in compute_worker_join or compute_deploy, and the '
    'caller''s identity is refused (53400) until they are older.';
GRANT EXECUTE ON FUNCTION compute_group_check_secret TO pgjobs_user;

-- The caller's own groups' opaque ids (to hand out with the join credentials, or for
-- compute_group_set_secret), as job_opaque_ids for jobs.
CREATE VIEW compute_group_opaque_ids WITH (security_barrier = true) AS
SELECT g.id, _fence(g.opaque_id) AS opaque_id FROM compute_groups g WHERE g.owner = (SELECT identity());
COMMENT ON VIEW compute_group_opaque_ids IS 'The opaque id of each of the caller''s compute groups.';

ALTER TABLE compute_groups ENABLE ROW LEVEL SECURITY;
ALTER TABLE compute_group_jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE compute_group_accounting_data ENABLE ROW LEVEL SECURITY;
ALTER TABLE compute_group_spent ENABLE ROW LEVEL SECURITY;
ALTER TABLE compute_group_worker_origins ENABLE ROW LEVEL SECURITY;
ALTER TABLE compute_group_job_period_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE compute_group_worker_period_stats ENABLE ROW LEVEL SECURITY;
CREATE POLICY group_owner_reads ON compute_groups FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY group_owner_changes ON compute_groups FOR UPDATE TO pgjobs_user
    USING (owner = (SELECT identity())) WITH CHECK (owner = (SELECT identity()));
CREATE POLICY group_owner_reads ON compute_group_jobs FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY group_owner_reads ON compute_group_accounting_data FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY group_owner_reads ON compute_group_spent FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY group_owner_reads ON compute_group_job_period_stats FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
CREATE POLICY group_owner_reads ON compute_group_worker_period_stats FOR SELECT TO pgjobs_user USING (owner = (SELECT identity()));
-- An origin row names its group, and the group must be the caller's.
CREATE POLICY group_owner_manages ON compute_group_worker_origins FOR ALL TO pgjobs_user
    USING (owner = (SELECT identity()))
    WITH CHECK (owner = (SELECT identity())
                AND EXISTS (SELECT FROM compute_groups g
                            WHERE g.id = compute_group_worker_origins.compute_group_id
                              AND g.owner = (SELECT identity())));
-- Each of the caller's groups' budgets: of CPU and GPU time and of bytes in and out, what was
-- granted, what the folded reports spent and what remains (null: unlimited); and the jobs it may
-- still take. Spent plus remaining is granted, exactly. A report measured after its slice went out
-- may take a remainder below zero: the group hands out nothing more of that kind until its owner
-- grants more (compute_group_budget).
CREATE VIEW compute_group_budgets WITH (security_invoker = true) AS
SELECT g.id AS compute_group_id, g.owner,
       a.granted_cpu_time, coalesce(s.cpu_time, 0) AS spent_cpu_time,
       a.granted_cpu_time - coalesce(s.cpu_time, 0) AS remaining_cpu_time,
       a.granted_gpu_time, coalesce(s.gpu_time, 0) AS spent_gpu_time,
       a.granted_gpu_time - coalesce(s.gpu_time, 0) AS remaining_gpu_time,
       a.granted_in_data_size, coalesce(s.in_data_size, 0) AS spent_in_data_size,
       a.granted_in_data_size - coalesce(s.in_data_size, 0) AS remaining_in_data_size,
       a.granted_out_data_size, coalesce(s.out_data_size, 0) AS spent_out_data_size,
       a.granted_out_data_size - coalesce(s.out_data_size, 0) AS remaining_out_data_size,
       a.remaining_jobs
FROM compute_groups g
LEFT JOIN compute_group_accounting_data a ON a.compute_group_id = g.id
LEFT JOIN compute_group_spent s ON s.compute_group_id = g.id;
COMMENT ON VIEW compute_group_budgets IS
    'The caller''s groups'' budgets: granted, spent and remaining CPU and GPU milliseconds and bytes '
    'in and out (remaining null: unlimited), and the jobs each may still take.';

-- compute_group_budget: src/api/compute_settings.rs.
CREATE FUNCTION compute_group_budget(group_id bigint, cpu_time bigint DEFAULT NULL, gpu_time bigint DEFAULT NULL,
                                     jobs integer DEFAULT NULL, in_data_size bigint DEFAULT NULL,
                                     out_data_size bigint DEFAULT NULL)
RETURNS SETOF compute_group_budgets
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_group_budget';
COMMENT ON FUNCTION compute_group_budget IS
    'Grants one of the caller''s groups more of its budgets (null: that budget unchanged); a '
    'budget that was unlimited starts at the amount given. Returns the group''s budgets.';
GRANT EXECUTE ON FUNCTION compute_group_budget TO pgjobs_user;

-- compute_group_unbudget: src/api/compute_settings.rs.
CREATE FUNCTION compute_group_unbudget(group_id bigint, budgets text[])
RETURNS SETOF compute_group_budgets
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_group_unbudget';
COMMENT ON FUNCTION compute_group_unbudget IS
    'Makes the named budgets (cpu_time, gpu_time, jobs, in_data_size, out_data_size) of one of the '
    'caller''s groups unlimited again; what the group spent stays counted. Returns the group''s budgets.';
GRANT EXECUTE ON FUNCTION compute_group_unbudget TO pgjobs_user;

-- compute_groups: every column but opaque_id, as for jobs (see 030_queue.sql); a group's owner
-- reads its groups' ids in compute_group_opaque_ids.
GRANT SELECT (id, owner, name, description, listed, join_key, join_hash, join_address, commission_rate,
              commission_account, deploy_fee, add_job_fee, deploy_access, max_total_payment,
              max_concurrent_jobs, max_concurrent_workers, max_concurrent_sandboxes,
              max_concurrent_cpus, max_concurrent_gpus, max_concurrent_escrow, creation_time,
              last_update) ON compute_groups TO pgjobs_user;
GRANT SELECT ON compute_groups_public, compute_group_jobs, compute_groups_jobs_by_job,
    compute_group_opaque_ids, compute_group_accounting_data, compute_group_spent, compute_group_budgets,
    compute_group_worker_origins, compute_group_job_period_stats, compute_group_worker_period_stats TO pgjobs_user;
GRANT UPDATE (name, description, join_key, join_address, listed) ON compute_groups TO pgjobs_user;
-- Column-level, never table-level, write grants: LOCK TABLE accepts only a table-level INSERT,
-- UPDATE, DELETE or TRUNCATE grant, so a member holding one could lock everyone out of the table.
-- Deletes go through compute_group_remove_origin. ids and timestamps are the server's.
GRANT INSERT (compute_group_id, owner, origin, type), UPDATE (compute_group_id, owner, origin, type)
    ON compute_group_worker_origins TO pgjobs_user;

-- ---------------------------------------------------------------------------------------------
-- Workers: read and changed by the worker's registered owner. The worker itself, acting as its
-- own identity, reads only worker_self and worker_self_config.

CREATE TABLE workers (
    opaque_id      uuid PRIMARY KEY DEFAULT _opaque_id(),
    owner          regrole NOT NULL DEFAULT identity(),
    -- The worker's own role. Unique, so a role is at most one worker and worker_self one row.
    identity       regrole NOT NULL UNIQUE,
    label          text,
    transfer_lock  boolean NOT NULL DEFAULT false,
    flags          nonnegative_integer NOT NULL DEFAULT 0
);
COMMENT ON TABLE workers IS
    'Registered workers. An owner registers only a role it is a member of (one it could act as), '
    'so nobody can make another role read their worker''s settings or take its name.';
COMMENT ON COLUMN workers.label IS 'Usually the host name.';
COMMENT ON COLUMN workers.transfer_lock IS 'true: the worker cannot be re-registered to another owner.';
COMMENT ON COLUMN workers.flags IS 'Bit flags; worker_flag_names(flags) names them.';

CREATE TABLE worker_run_info (
    worker_opaque_id        uuid PRIMARY KEY REFERENCES workers ON DELETE CASCADE,
    owner                   regrole NOT NULL DEFAULT identity(),
    type                    text CHECK (type IN ('browser', 'dcp-worker')),
    os                      text,
    arch                    text,
    version                 jsonb,
    browser                 text,
    browser_version         text,
    hostname                text,
    username                text,
    local_ip_address        text,
    mac_address             text,
    pid                     integer,
    cpu_type                text,
    cpu_cores               double precision,
    gpu_type                text,
    gpu_cores               double precision,
    ram                     double precision,
    cpu_target_utilization  double precision,
    gpu_target_utilization  double precision,
    max_sandboxes           double precision,
    earnings_account        text,
    earnings                money_amount NOT NULL DEFAULT 0,
    -- What the worker can run: capability bits (capability_names) and worktime versions
    -- ({"map-basic": "1.4.2"}); a job is handed only to workers that satisfy it.
    capabilities            integer NOT NULL DEFAULT 0,
    worktimes               jsonb NOT NULL DEFAULT '{}',
    status                  text CHECK (status IN ('running', 'end')),
    last_start_time         timestamptz,
    last_update             timestamptz NOT NULL DEFAULT now(),
    last_error              jsonb,
    last_error_timestamp    timestamptz
);
COMMENT ON TABLE worker_run_info IS
    'What a worker runs on and how much of the machine it uses, rewritten at every start and '
    'config change. ram is in MB. The owner may change earnings_account only.';
COMMENT ON COLUMN worker_run_info.earnings_account IS 'Where the worker is paid: an opaque account identifier.';
COMMENT ON COLUMN worker_run_info.earnings IS 'DCC earned since the last reset.';

-- The seed's averageBusySandboxes* and averageIdleSandboxes* are marked not to be used and are left out.
CREATE TABLE worker_task_info (
    worker_opaque_id  uuid PRIMARY KEY REFERENCES workers ON DELETE CASCADE,
    owner             regrole NOT NULL DEFAULT identity(),
    task_time         timestamptz,
    current_task      jsonb,
    serial            integer
);
COMMENT ON TABLE worker_task_info IS
    'Written at every task fetch: when (task_time), what (current_task), and serial, the '
    'position in the ring buffer.';

CREATE TABLE dcp_worker_app_config (
    id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner               regrole NOT NULL DEFAULT identity(),
    worker_opaque_id    uuid REFERENCES workers ON DELETE CASCADE,
    type                text NOT NULL DEFAULT 'active' CHECK (type IN ('active', 'template')),
    syslog_url          uri,
    enable_syslog       boolean,
    enable_event_log    boolean,
    startup_delay       double precision,
    startup_delay_type  text,
    last_update         timestamptz NOT NULL DEFAULT now()
);
-- One active configuration per worker, and one for all of an owner's workers.
CREATE UNIQUE INDEX dcp_worker_app_config_active ON dcp_worker_app_config (owner, worker_opaque_id)
    NULLS NOT DISTINCT WHERE type = 'active';
COMMENT ON TABLE dcp_worker_app_config IS
    'Application settings pushed to workers. A null worker_opaque_id applies to all the owner''s '
    'workers, a worker''s own row overrides it; a template is kept, not applied.';

CREATE TABLE worker_config_value (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner             regrole NOT NULL DEFAULT identity(),
    worker_opaque_id  uuid REFERENCES workers ON DELETE CASCADE,
    type              text NOT NULL DEFAULT 'active' CHECK (type IN ('active', 'template')),
    key_path          nonempty_text NOT NULL,
    value             jsonb,
    last_update       timestamptz NOT NULL DEFAULT now(),
    UNIQUE NULLS NOT DISTINCT (owner, worker_opaque_id, type, key_path)
);
COMMENT ON TABLE worker_config_value IS
    'Single dcpConfig.worker values pushed to workers, by key path. A null worker_opaque_id '
    'applies to all the owner''s workers, a worker''s own row overrides it; a template is kept, '
    'not applied.';

CREATE TABLE creds_list (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner        regrole NOT NULL DEFAULT identity(),
    type         text NOT NULL DEFAULT 'cg-join' CHECK (type IN ('cg-join')),
    label        text,
    last_update  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE creds_list IS 'A named set of credentials handed to workers; cg-join lists hold compute group joins.';

CREATE TABLE credential (
    id                       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    creds_list_id            bigint NOT NULL REFERENCES creds_list ON DELETE CASCADE,
    owner                    regrole NOT NULL DEFAULT identity(),
    type                     text NOT NULL DEFAULT 'cg' CHECK (type IN ('cg')),
    compute_group_opaque_id  uuid,
    identifier               text NOT NULL,
    secret                   text,
    last_update              timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE credential IS
    'One credential of a list. For a compute group (type cg): identifier is the join key and '
    'secret what the worker presents to compute_group_check_secret. Readable by the list''s owner only.';

CREATE TABLE worker_creds (
    worker_opaque_id  uuid NOT NULL REFERENCES workers ON DELETE CASCADE,
    creds_list_id     bigint NOT NULL REFERENCES creds_list ON DELETE CASCADE,
    owner             regrole NOT NULL DEFAULT identity(),
    PRIMARY KEY (worker_opaque_id, creds_list_id)
);
COMMENT ON TABLE worker_creds IS 'Which credential lists a worker is given.';

CREATE TABLE worker_notifications (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    worker_opaque_id  uuid NOT NULL REFERENCES workers ON DELETE CASCADE,
    owner             regrole NOT NULL DEFAULT identity(),
    event             nonempty_text NOT NULL,
    signature         text,
    created_at        timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE worker_notifications IS 'Events queued for a worker, each with the signature that vouches for it.';

CREATE TABLE register_worker_directive (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner        regrole NOT NULL DEFAULT identity(),
    directive    jsonb NOT NULL DEFAULT '{}',
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_update  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE register_worker_directive IS
    'Instructions applied when a worker registers with one of the owner''s registration keys.';

CREATE INDEX workers_owner ON workers (owner);
CREATE INDEX worker_run_info_owner ON worker_run_info (owner);
CREATE INDEX worker_task_info_owner ON worker_task_info (owner);
CREATE INDEX dcp_worker_app_config_owner ON dcp_worker_app_config (owner);
CREATE INDEX worker_config_value_owner ON worker_config_value (owner);
CREATE INDEX creds_list_owner ON creds_list (owner);
CREATE INDEX credential_owner ON credential (owner);
CREATE INDEX credential_list ON credential (creds_list_id);
CREATE INDEX worker_creds_owner ON worker_creds (owner);
CREATE INDEX worker_creds_list ON worker_creds (creds_list_id);
CREATE INDEX worker_notifications_owner ON worker_notifications (owner);
CREATE INDEX worker_notifications_worker ON worker_notifications (worker_opaque_id);
CREATE INDEX register_worker_directive_owner ON register_worker_directive (owner);

CREATE TRIGGER owner_from_worker BEFORE INSERT OR UPDATE OF worker_opaque_id, owner ON worker_run_info
    FOR EACH ROW EXECUTE FUNCTION _owner_from_worker();
CREATE TRIGGER owner_from_worker BEFORE INSERT OR UPDATE OF worker_opaque_id, owner ON worker_task_info
    FOR EACH ROW EXECUTE FUNCTION _owner_from_worker();
CREATE TRIGGER owner_from_worker BEFORE INSERT OR UPDATE OF worker_opaque_id, owner ON dcp_worker_app_config
    FOR EACH ROW EXECUTE FUNCTION _owner_from_worker();
CREATE TRIGGER owner_from_worker BEFORE INSERT OR UPDATE OF worker_opaque_id, owner ON worker_config_value
    FOR EACH ROW EXECUTE FUNCTION _owner_from_worker();
CREATE TRIGGER owner_from_worker BEFORE INSERT OR UPDATE OF worker_opaque_id, owner ON worker_creds
    FOR EACH ROW EXECUTE FUNCTION _owner_from_worker();
CREATE TRIGGER owner_from_worker BEFORE INSERT OR UPDATE OF worker_opaque_id, owner ON worker_notifications
    FOR EACH ROW EXECUTE FUNCTION _owner_from_worker();
CREATE TRIGGER owner_from_creds_list BEFORE INSERT OR UPDATE OF creds_list_id, owner ON credential
    FOR EACH ROW EXECUTE FUNCTION _owner_from_creds_list();
CREATE TRIGGER touch BEFORE UPDATE ON worker_run_info
    FOR EACH ROW EXECUTE FUNCTION _touch_last_update();
CREATE TRIGGER touch BEFORE UPDATE ON dcp_worker_app_config
    FOR EACH ROW EXECUTE FUNCTION _touch_last_update();
CREATE TRIGGER touch BEFORE UPDATE ON worker_config_value
    FOR EACH ROW EXECUTE FUNCTION _touch_last_update();
CREATE TRIGGER touch BEFORE UPDATE ON creds_list
    FOR EACH ROW EXECUTE FUNCTION _touch_last_update();
CREATE TRIGGER touch BEFORE UPDATE ON credential
    FOR EACH ROW EXECUTE FUNCTION _touch_last_update();
CREATE TRIGGER touch BEFORE UPDATE ON register_worker_directive
    FOR EACH ROW EXECUTE FUNCTION _touch_last_update();

-- Re-registering a worker to another owner (an administrator's act: an owner cannot give rows
-- away) is refused while it is transfer-locked. Otherwise the new owner gets its run and task
-- information, and the old owner's settings, credentials and notifications for it are dropped.
CREATE FUNCTION _worker_owner_changes() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
BEGIN
    IF NEW.owner = OLD.owner THEN
        RETURN NEW;
    END IF;
    IF TG_WHEN = 'BEFORE' THEN
        IF OLD.transfer_lock THEN
            RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
                MESSAGE = format('worker %s is transfer-locked to its owner', OLD.opaque_id),
                HINT = 'Its owner must clear transfer_lock before it can be re-registered.';
        END IF;
        RETURN NEW;
    END IF;
    UPDATE worker_run_info SET owner = NEW.owner WHERE worker_opaque_id = NEW.opaque_id;
    UPDATE worker_task_info SET owner = NEW.owner WHERE worker_opaque_id = NEW.opaque_id;
    DELETE FROM dcp_worker_app_config WHERE worker_opaque_id = NEW.opaque_id;
    DELETE FROM worker_config_value WHERE worker_opaque_id = NEW.opaque_id;
    DELETE FROM worker_creds WHERE worker_opaque_id = NEW.opaque_id;
    DELETE FROM worker_notifications WHERE worker_opaque_id = NEW.opaque_id;
    RETURN NULL;
END
$$;
CREATE TRIGGER refuse_locked_transfer BEFORE UPDATE OF owner ON workers
    FOR EACH ROW EXECUTE FUNCTION _worker_owner_changes();
CREATE TRIGGER owner_moves AFTER UPDATE OF owner ON workers
    FOR EACH ROW EXECUTE FUNCTION _worker_owner_changes();

-- Everything about the caller's workers in one row each. running: the worker said it started
-- and has been heard from (a start, a config change or a task fetch) in the last 5 minutes, the
-- longest a working worker may stay silent.
CREATE VIEW worker_snapshot WITH (security_invoker = true) AS
SELECT w.opaque_id, w.owner::regrole AS owner, w.identity::regrole AS identity, w.label,
       w.transfer_lock, w.flags, worker_flag_names(w.flags) AS flag_names,
       r.type, r.os, r.arch, r.version, r.browser, r.browser_version, r.hostname, r.username,
       r.local_ip_address, r.mac_address, r.pid, r.cpu_type, r.cpu_cores, r.gpu_type, r.gpu_cores,
       r.ram, r.cpu_target_utilization, r.gpu_target_utilization, r.max_sandboxes,
       r.earnings_account, r.earnings, r.status, r.last_start_time, r.last_update, r.last_error,
       r.last_error_timestamp,
       t.task_time, t.current_task, t.serial,
       c.syslog_url, c.enable_syslog, c.enable_event_log, c.startup_delay, c.startup_delay_type,
       coalesce(r.status = 'running'
                AND greatest(r.last_update, t.task_time) > now() - interval '5 minutes', false) AS running
FROM workers w
LEFT JOIN worker_run_info r ON r.worker_opaque_id = w.opaque_id
LEFT JOIN worker_task_info t ON t.worker_opaque_id = w.opaque_id
LEFT JOIN LATERAL (
    SELECT a.* FROM dcp_worker_app_config a
    WHERE a.owner = w.owner AND a.type = 'active'
      AND (a.worker_opaque_id = w.opaque_id OR a.worker_opaque_id IS NULL)
    ORDER BY a.worker_opaque_id NULLS LAST
    LIMIT 1
) c ON true;
COMMENT ON VIEW worker_snapshot IS
    'Each of the caller''s workers with its registration, run and task information and the '
    'application settings that apply to it. running: it started and was heard from in the last 5 minutes.';

-- What a worker's own role may read about itself: no earnings, no earnings account, no other
-- worker. Owned by the extension and filtered here, since the worker owns none of these rows.
CREATE VIEW worker_self WITH (security_barrier = true) AS
SELECT w.opaque_id, w.owner::regrole AS owner, w.label, w.transfer_lock, w.flags,
       r.type, r.os, r.arch, r.version, r.browser, r.browser_version, r.hostname, r.username,
       r.local_ip_address, r.mac_address, r.pid, r.cpu_type, r.cpu_cores, r.gpu_type, r.gpu_cores,
       r.ram, r.cpu_target_utilization, r.gpu_target_utilization, r.max_sandboxes, r.status,
       r.last_start_time, r.last_update, r.last_error, r.last_error_timestamp,
       c.syslog_url, c.enable_syslog, c.enable_event_log, c.startup_delay, c.startup_delay_type
FROM workers w
LEFT JOIN worker_run_info r ON r.worker_opaque_id = w.opaque_id
LEFT JOIN LATERAL (
    SELECT a.* FROM dcp_worker_app_config a
    WHERE a.owner = w.owner AND a.type = 'active'
      AND (a.worker_opaque_id = w.opaque_id OR a.worker_opaque_id IS NULL)
    ORDER BY a.worker_opaque_id NULLS LAST
    LIMIT 1
) c ON true
WHERE w.identity = (SELECT identity());
COMMENT ON VIEW worker_self IS
    'For a worker''s own role: its registration, run information and the application settings that apply to it.';

CREATE VIEW worker_self_config WITH (security_barrier = true) AS
SELECT DISTINCT ON (v.key_path) v.key_path, v.value, v.worker_opaque_id IS NULL AS for_all_workers,
       v.last_update
FROM workers w
JOIN worker_config_value v
  ON v.owner = w.owner AND v.type = 'active'
 AND (v.worker_opaque_id = w.opaque_id OR v.worker_opaque_id IS NULL)
WHERE w.identity = (SELECT identity())
ORDER BY v.key_path, v.worker_opaque_id NULLS LAST;
COMMENT ON VIEW worker_self_config IS
    'For a worker''s own role: the config values that apply to it, its own overriding those its '
    'owner set for all workers (for_all_workers).';

ALTER TABLE workers ENABLE ROW LEVEL SECURITY;
ALTER TABLE worker_run_info ENABLE ROW LEVEL SECURITY;
ALTER TABLE worker_task_info ENABLE ROW LEVEL SECURITY;
ALTER TABLE dcp_worker_app_config ENABLE ROW LEVEL SECURITY;
ALTER TABLE worker_config_value ENABLE ROW LEVEL SECURITY;
ALTER TABLE creds_list ENABLE ROW LEVEL SECURITY;
ALTER TABLE credential ENABLE ROW LEVEL SECURITY;
ALTER TABLE worker_creds ENABLE ROW LEVEL SECURITY;
ALTER TABLE worker_notifications ENABLE ROW LEVEL SECURITY;
ALTER TABLE register_worker_directive ENABLE ROW LEVEL SECURITY;
CREATE POLICY worker_owner_manages ON workers FOR ALL TO pgjobs_user
    USING (owner = (SELECT identity()))
    WITH CHECK (owner = (SELECT identity())
                AND pg_has_role((SELECT identity()), workers.identity, 'MEMBER'));
CREATE POLICY worker_owner_reads ON worker_run_info FOR SELECT TO pgjobs_user
    USING (owner = (SELECT identity()));
CREATE POLICY worker_owner_changes_earnings_account ON worker_run_info FOR UPDATE TO pgjobs_user
    USING (owner = (SELECT identity())) WITH CHECK (owner = (SELECT identity()));
CREATE POLICY worker_owner_reads ON worker_task_info FOR SELECT TO pgjobs_user
    USING (owner = (SELECT identity()));
-- A row naming a worker must name one of the caller's.
CREATE POLICY worker_owner_manages ON dcp_worker_app_config FOR ALL TO pgjobs_user
    USING (owner = (SELECT identity()))
    WITH CHECK (owner = (SELECT identity())
                AND (dcp_worker_app_config.worker_opaque_id IS NULL
                     OR EXISTS (SELECT FROM workers w
                                WHERE w.opaque_id = dcp_worker_app_config.worker_opaque_id
                                  AND w.owner = (SELECT identity()))));
CREATE POLICY worker_owner_manages ON worker_config_value FOR ALL TO pgjobs_user
    USING (owner = (SELECT identity()))
    WITH CHECK (owner = (SELECT identity())
                AND (worker_config_value.worker_opaque_id IS NULL
                     OR EXISTS (SELECT FROM workers w
                                WHERE w.opaque_id = worker_config_value.worker_opaque_id
                                  AND w.owner = (SELECT identity()))));
CREATE POLICY worker_owner_manages ON creds_list FOR ALL TO pgjobs_user
    USING (owner = (SELECT identity())) WITH CHECK (owner = (SELECT identity()));
CREATE POLICY worker_owner_manages ON credential FOR ALL TO pgjobs_user
    USING (owner = (SELECT identity()))
    WITH CHECK (owner = (SELECT identity())
                AND EXISTS (SELECT FROM creds_list l
                            WHERE l.id = credential.creds_list_id AND l.owner = (SELECT identity())));
CREATE POLICY worker_owner_manages ON worker_creds FOR ALL TO pgjobs_user
    USING (owner = (SELECT identity()))
    WITH CHECK (owner = (SELECT identity())
                AND EXISTS (SELECT FROM workers w
                            WHERE w.opaque_id = worker_creds.worker_opaque_id AND w.owner = (SELECT identity()))
                AND EXISTS (SELECT FROM creds_list l
                            WHERE l.id = worker_creds.creds_list_id AND l.owner = (SELECT identity())));
CREATE POLICY worker_owner_manages ON worker_notifications FOR ALL TO pgjobs_user
    USING (owner = (SELECT identity()))
    WITH CHECK (owner = (SELECT identity())
                AND EXISTS (SELECT FROM workers w
                            WHERE w.opaque_id = worker_notifications.worker_opaque_id
                              AND w.owner = (SELECT identity())));
CREATE POLICY worker_owner_manages ON register_worker_directive FOR ALL TO pgjobs_user
    USING (owner = (SELECT identity())) WITH CHECK (owner = (SELECT identity()));
-- Writes by column, deletes through the *_remove functions, as for compute_group_worker_origins
-- (a table-level write grant lets a member LOCK the table). owner stays writable: the policies
-- hold it to the caller's identity and the triggers to the parent's. Not granted: generated ids,
-- timestamps, and a worker's opaque_id (chosen by a member, its unique violation would tell
-- whether another owner's worker has that id).
GRANT SELECT ON workers, dcp_worker_app_config, worker_config_value, creds_list,
    worker_creds, worker_notifications, register_worker_directive TO pgjobs_user;
-- A credential's identifier, secret and group are join credentials in plain text. Text and uuid
-- comparisons are leakproof, so with those columns readable the planner's estimates for a
-- member's condition on them (taken from statistics of every owner's rows) gave other owners'
-- secrets away once ANALYZE had sampled them. Members read the rest of the table, and their own
-- credentials whole through credential_secrets.
GRANT SELECT (id, creds_list_id, owner, type, last_update) ON credential TO pgjobs_user;
CREATE VIEW credential_secrets WITH (security_barrier = true) AS
SELECT c.id, c.creds_list_id, c.type, _fence(c.compute_group_opaque_id) AS compute_group_opaque_id,
       _fence(c.identifier) AS identifier, _fence(c.secret) AS secret
FROM credential c WHERE c.owner = (SELECT identity());
COMMENT ON VIEW credential_secrets IS
    'The caller''s credentials with their join key, secret and group (see _fence in 010_types.sql).';
GRANT SELECT ON credential_secrets TO pgjobs_user;
GRANT INSERT (owner, identity, label, transfer_lock, flags),
      UPDATE (owner, identity, label, transfer_lock, flags) ON workers TO pgjobs_user;
GRANT INSERT (owner, worker_opaque_id, type, syslog_url, enable_syslog, enable_event_log,
              startup_delay, startup_delay_type),
      UPDATE (owner, worker_opaque_id, type, syslog_url, enable_syslog, enable_event_log,
              startup_delay, startup_delay_type) ON dcp_worker_app_config TO pgjobs_user;
GRANT INSERT (owner, worker_opaque_id, type, key_path, value),
      UPDATE (owner, worker_opaque_id, type, key_path, value) ON worker_config_value TO pgjobs_user;
GRANT INSERT (owner, type, label), UPDATE (owner, type, label) ON creds_list TO pgjobs_user;
GRANT INSERT (creds_list_id, owner, type, compute_group_opaque_id, identifier, secret),
      UPDATE (creds_list_id, owner, type, compute_group_opaque_id, identifier, secret)
    ON credential TO pgjobs_user;
GRANT INSERT (worker_opaque_id, creds_list_id, owner), UPDATE (worker_opaque_id, creds_list_id, owner)
    ON worker_creds TO pgjobs_user;
GRANT INSERT (worker_opaque_id, owner, event, signature),
      UPDATE (worker_opaque_id, owner, event, signature) ON worker_notifications TO pgjobs_user;
GRANT INSERT (owner, directive), UPDATE (owner, directive) ON register_worker_directive TO pgjobs_user;
GRANT SELECT ON worker_run_info, worker_task_info, worker_snapshot, worker_self, worker_self_config
    TO pgjobs_user;
GRANT UPDATE (earnings_account) ON worker_run_info TO pgjobs_user;

-- ---------------------------------------------------------------------------------------------
-- Deletes. A member deletes its rows of the shared tables through these functions, not with
-- DELETE: a table-level DELETE grant would also let it LOCK the table and stop everyone (see the
-- grants above). Each deletes only rows of the caller's identity, by a key the owner knows, and
-- returns how many it deleted: 0 for a row of another identity exactly as for one that does not
-- exist, as a DELETE under row-level security answers, so nothing can be probed.

CREATE FUNCTION compute_group_remove_origin(group_id bigint, origin text, type text DEFAULT NULL)
RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'compute_group_remove_origin';
COMMENT ON FUNCTION compute_group_remove_origin IS
    'Removes an origin from one of the caller''s groups, for one type or (null) every type; '
    'returns how many rows went (0 for a group that is not the caller''s).';
GRANT EXECUTE ON FUNCTION compute_group_remove_origin TO pgjobs_user;

CREATE FUNCTION worker_remove(worker uuid) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'worker_remove';
COMMENT ON FUNCTION worker_remove IS
    'Unregisters one of the caller''s workers by its opaque id; its run and task information, settings, '
    'credential lists and notifications go with it. Returns how many workers went (0 or 1).';
GRANT EXECUTE ON FUNCTION worker_remove TO pgjobs_user;


CREATE FUNCTION worker_app_config_remove(id bigint) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'worker_app_config_remove';
COMMENT ON FUNCTION worker_app_config_remove IS
    'Removes one of the caller''s dcp_worker_app_config rows by id; returns how many went (0 or 1).';
GRANT EXECUTE ON FUNCTION worker_app_config_remove TO pgjobs_user;

CREATE FUNCTION worker_config_remove(key_path text, worker uuid DEFAULT NULL, type text DEFAULT 'active')
RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'worker_config_remove';
COMMENT ON FUNCTION worker_config_remove IS
    'Removes one of the caller''s worker_config_value rows: a key path, for one worker or (null) '
    'for all its workers, active or template. Returns how many went (0 or 1).';
GRANT EXECUTE ON FUNCTION worker_config_remove TO pgjobs_user;

CREATE FUNCTION creds_list_remove(id bigint) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'creds_list_remove';
COMMENT ON FUNCTION creds_list_remove IS
    'Removes one of the caller''s credential lists by id, with its credentials and its links to '
    'workers; returns how many lists went (0 or 1).';
GRANT EXECUTE ON FUNCTION creds_list_remove TO pgjobs_user;

CREATE FUNCTION credential_remove(id bigint) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'credential_remove';
COMMENT ON FUNCTION credential_remove IS
    'Removes one of the caller''s credentials by id; returns how many went (0 or 1).';
GRANT EXECUTE ON FUNCTION credential_remove TO pgjobs_user;

CREATE FUNCTION worker_creds_remove(worker uuid, creds_list_id bigint) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'worker_creds_remove';
COMMENT ON FUNCTION worker_creds_remove IS
    'Stops giving one of the caller''s workers one of its credential lists; returns how many links '
    'went (0 or 1).';
GRANT EXECUTE ON FUNCTION worker_creds_remove TO pgjobs_user;

CREATE FUNCTION worker_notification_remove(id bigint) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'worker_notification_remove';
COMMENT ON FUNCTION worker_notification_remove IS
    'Removes one of the caller''s worker notifications by id; returns how many went (0 or 1).';
GRANT EXECUTE ON FUNCTION worker_notification_remove TO pgjobs_user;

CREATE FUNCTION register_worker_directive_remove(id bigint) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'register_worker_directive_remove';
COMMENT ON FUNCTION register_worker_directive_remove IS
    'Removes one of the caller''s registration directives by id; returns how many went (0 or 1).';
GRANT EXECUTE ON FUNCTION register_worker_directive_remove TO pgjobs_user;

-- ---------------------------------------------------------------------------------------------
-- Not exposed: the scheduler's own bookkeeping. No grants and no policies, so every role but the
-- extension's owner is refused, pgjobs_user members included.

CREATE TABLE reliable_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner       regrole NOT NULL DEFAULT identity(),
    event       text NOT NULL,
    payload     jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE reliable_events IS 'Events the scheduler must deliver at least once.';

CREATE INDEX reliable_events_owner ON reliable_events (owner);
ALTER TABLE reliable_events ENABLE ROW LEVEL SECURITY;
