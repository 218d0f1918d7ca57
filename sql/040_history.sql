-- Finished jobs, by month, and the views and functions that read live and finished jobs
-- together.

-- Every job here has finished (src/api/queue.rs), checked by job_history_finished below.
CREATE FUNCTION _finished_status_ok(status job_status) RETURNS boolean
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', '_finished_status_ok';

CREATE TABLE job_history (
    id              bigint NOT NULL,
    owner           regrole NOT NULL,
    status          job_status NOT NULL CONSTRAINT job_history_finished CHECK (_finished_status_ok(status)),
    task            text NOT NULL,
    queue           text NOT NULL,
    priority        integer NOT NULL,
    payload         jsonb NOT NULL,
    result          jsonb,
    errors          jsonb NOT NULL,
    attempts        integer NOT NULL,
    max_attempts    integer NOT NULL,
    idempotency_key text,
    key_rule        key_rule,
    locked_by       text,
    due_at          timestamptz NOT NULL,
    start_time      timestamptz NOT NULL,
    -- When its last attempt began (claimed, or started by the extension); null if none did.
    begin_time      timestamptz,
    end_time        timestamptz NOT NULL,
    name            text,
    description     text,
    link            text,
    listed          boolean NOT NULL,
    -- A failed or aborted job's settings, which jobs_retry gives it back with (null for a completed
    -- one: a completion writes nothing it would not read again).
    backoff         interval,
    max_backoff     interval,
    lease           interval,
    -- Every finished job's (null for most: a job without a key writes nothing for it).
    concurrency_key text,
    -- The jobs it waited for (null for most).
    depends_on      bigint[]
) PARTITION BY RANGE (due_at);
COMMENT ON TABLE job_history IS
    'Finished jobs, one partition per month of due_at; dropping a month is dropping a partition. '
    'result holds the outcome of a completed job and {"error": ...} of a failed one.';

-- Rows whose month has no partition yet (a job due years ahead) land here; making that month's
-- partition moves them out.
CREATE TABLE job_history_other PARTITION OF job_history DEFAULT;

ALTER TABLE job_history ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_reads ON job_history FOR SELECT USING (owner = (SELECT identity()));
GRANT SELECT (id, owner, status, task, queue, priority, payload, result, errors, attempts,
              max_attempts, idempotency_key, key_rule, locked_by, due_at, start_time, begin_time, end_time,
              name, description, link, listed, backoff, max_backoff, lease, concurrency_key, depends_on)
    ON job_history TO pgjobs_user;

-- What job_history keeps of an identity's queue (River's cleaner, pgmq's archive or delete,
-- pg-boss's retention): every finished job (all, also where a queue has no rule), the failed and
-- aborted ones (failures), or none. A completion in a queue that keeps no successes is then one
-- DELETE from jobs. The finish reads the rule of each job it moves by this table's primary key, in
-- its own statement, so a rule applies from the first completion whose statement starts after it
-- committed. The extension's queues (pg_jobs.*) keep everything: the batch store reads finished
-- batch jobs from job_history, and so does the compute scheduler's monthly store.
CREATE TYPE history_keep AS ENUM ('all', 'failures', 'none');
CREATE TABLE queue_history_rules (
    owner           regrole NOT NULL,
    queue           nonempty_text COLLATE "C" NOT NULL CONSTRAINT queue_history_rules_not_reserved CHECK (NOT _reserved_queue(queue)),
    keep            history_keep NOT NULL,
    PRIMARY KEY (owner, queue)
);
COMMENT ON TABLE queue_history_rules IS
    'Which finished jobs job_history keeps, per queue of an identity: all (also a queue without a '
    'row), failures (failed and aborted) or none. Set with jobs_queue_history.';
-- Whether any rule is set is known to every backend (src/api/history.rs: any_rule).
CREATE TRIGGER history_rules_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON queue_history_rules
    FOR EACH STATEMENT EXECUTE FUNCTION _cached_table_changed();
-- Members read their identity's rules and write them only through jobs_queue_history.
ALTER TABLE queue_history_rules ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_reads ON queue_history_rules FOR SELECT USING (owner = (SELECT identity()));
GRANT SELECT ON queue_history_rules TO pgjobs_user;

CREATE FUNCTION jobs_queue_history(queue text, keep text) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_queue_history';
COMMENT ON FUNCTION jobs_queue_history IS
    'Sets which of the caller''s finished jobs in a queue job_history keeps: all (the default), '
    'failures (failed and aborted ones) or none. A job finished where it is not kept is in '
    'neither jobs nor job_history; its skip key stays taken until its month is dropped.';
GRANT EXECUTE ON FUNCTION jobs_queue_history TO pgjobs_user;

-- Where an identity's queue sends the jobs that fail their last attempt (pg-boss's dead-letter
-- queues, SQS's redrive policy): the job is failed in job_history as anywhere else (jobs_result
-- and jobs_wait say so), and the statement that failed it adds a copy to the dead-letter queue,
-- due at once: its task, payload, priority and settings, its errors so far, fresh attempts. Not
-- for aborted jobs, which someone ended on purpose. Set with jobs_dead_letter.
CREATE TABLE queue_dead_letters (
    owner             regrole NOT NULL,
    queue             nonempty_text COLLATE "C" NOT NULL CONSTRAINT queue_dead_letters_not_reserved CHECK (NOT _reserved_queue(queue)),
    dead_letter_queue nonempty_text COLLATE "C" NOT NULL
        CONSTRAINT queue_dead_letters_to_reserved CHECK (NOT _reserved_queue(dead_letter_queue))
        CONSTRAINT queue_dead_letters_to_itself CHECK (dead_letter_queue <> queue),
    set_at            timestamptz NOT NULL,
    set_by            regrole NOT NULL,
    PRIMARY KEY (owner, queue)
);
COMMENT ON TABLE queue_dead_letters IS
    'The queue that gets a copy of each job of an identity''s queue that fails its last attempt. '
    'Set with jobs_dead_letter.';
ALTER TABLE queue_dead_letters ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_reads ON queue_dead_letters FOR SELECT USING (owner = (SELECT identity()));
GRANT SELECT ON queue_dead_letters TO pgjobs_user;

CREATE FUNCTION jobs_dead_letter(queue text, dead_letter_queue text) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_dead_letter';
COMMENT ON FUNCTION jobs_dead_letter IS
    'Sends a copy of each of the caller''s jobs in queue that fails its last attempt to '
    'dead_letter_queue, due at once (null: no longer). The failed job stays failed in job_history.';
GRANT EXECUTE ON FUNCTION jobs_dead_letter TO pgjobs_user;

-- Second chances: failed and aborted jobs back from job_history (src/api/redrive.rs).
CREATE FUNCTION jobs_retry(ids bigint[]) RETURNS SETOF bigint
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_retry';
COMMENT ON FUNCTION jobs_retry IS
    'Brings the caller''s failed and aborted jobs back from job_history, due now, with the same '
    'id, payload and settings, their errors kept and their attempts fresh; returns the ids brought '
    'back. Jobs of the extension''s queues have calls of their own.';
GRANT EXECUTE ON FUNCTION jobs_retry TO pgjobs_user;

CREATE FUNCTION jobs_retry_where(queue text, task text DEFAULT NULL, month date DEFAULT NULL,
                                 error text DEFAULT NULL, max_jobs integer DEFAULT 1000)
RETURNS SETOF bigint
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_retry_where';
COMMENT ON FUNCTION jobs_retry_where IS
    'As jobs_retry, for the caller''s failed and aborted jobs of a queue, of a task, due in a '
    'month and whose last error contains the given text (each when not null): the oldest max_jobs '
    'of them (1 to 10,000).';
GRANT EXECUTE ON FUNCTION jobs_retry_where TO pgjobs_user;

-- Each queue's minutes (src/api/queue_minutes.rs): its completions and failed attempts in the
-- minute and its live jobs at the minute's end, one row per queue that had any, written by the
-- launcher at each minute's end and kept a day. A queue whose jobs are all gone gets a row of
-- zeros once, so that the last minute written says what every queue has.
CREATE TABLE queue_minutes (
    owner           regrole NOT NULL,
    queue           text NOT NULL,
    minute          timestamptz NOT NULL,
    completed       bigint NOT NULL,
    failed          bigint NOT NULL,
    ready           bigint NOT NULL,
    scheduled       bigint NOT NULL,
    waiting         bigint NOT NULL,
    running         bigint NOT NULL,
    oldest_ready_at timestamptz,
    PRIMARY KEY (owner, queue, minute)
);
-- The last minute an identity's rows were written (jobs_queues_counted), and the day's end.
CREATE INDEX queue_minutes_owner ON queue_minutes (owner, minute);
CREATE INDEX queue_minutes_minute ON queue_minutes (minute);
ALTER TABLE queue_minutes ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_reads ON queue_minutes FOR SELECT USING (owner = (SELECT identity()));
GRANT SELECT ON queue_minutes TO pgjobs_user;

-- Which of a queue's counts a live job is in at `at` (jobs_queues, queue_minutes): 1 ready (due
-- by then), 2 scheduled (due later), 3 waiting (for its dependencies), 4 running (leased). A
-- number, not a word: the counts compare it for every live job. Inlined into their queries.
CREATE FUNCTION _queue_count(status job_status, run_at timestamptz, at timestamptz) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN status <> 'created' THEN 4 WHEN run_at = 'infinity' THEN 3 WHEN run_at <= at THEN 1
            ELSE 2 END;
GRANT EXECUTE ON FUNCTION _queue_count TO pgjobs_user;

-- The caller's live jobs by queue and by what they wait for (_queue_count), counted now. (The
-- launcher counts them a range of blocks at a time: src/api/queue_minutes.sql.) Volatile, so that
-- it is not inlined: a query that does not run it (jobs_queues_counted) does not open jobs at
-- all, and answers while a lock on jobs is held.
CREATE FUNCTION _queue_live_counts()
RETURNS TABLE (owner oid, queue text, ready bigint, scheduled bigint, waiting bigint, running bigint,
               oldest_ready_at timestamptz)
LANGUAGE sql VOLATILE
BEGIN ATOMIC
SELECT j.owner, j.queue::text,
       count(*) FILTER (WHERE _queue_count(j.status, j.run_at, now()) = 1),
       count(*) FILTER (WHERE _queue_count(j.status, j.run_at, now()) = 2),
       count(*) FILTER (WHERE _queue_count(j.status, j.run_at, now()) = 3),
       count(*) FILTER (WHERE _queue_count(j.status, j.run_at, now()) = 4),
       min(j.run_at) FILTER (WHERE _queue_count(j.status, j.run_at, now()) = 1)
FROM jobs j GROUP BY j.owner, j.queue;
END;
GRANT EXECUTE ON FUNCTION _queue_live_counts TO pgjobs_user;

-- Each queue of an identity as its workers see it: its live jobs by what they wait for, the oldest
-- ready job's time, its pause and what job_history keeps of it. A queue is listed while it has a
-- live job, a pause or a rule. Read as the caller: members see their identity's queues. With
-- `counted`, its live jobs as the launcher counted them at the last minute's end (queue_minutes),
-- which costs no read of jobs; otherwise counted now (_queue_live_counts). Inlined into the views
-- below, where `counted` is a constant: the branch not taken is planned away.
CREATE FUNCTION _queues(counted boolean)
RETURNS TABLE (owner regrole, queue text, ready bigint, scheduled bigint, waiting bigint,
               running bigint, oldest_ready_at timestamptz, paused_at timestamptz,
               paused_by regrole, keeps text, max_running integer, rate_claims integer,
               rate_per interval, dead_letter_queue text, max_per_key integer,
               key_ordered boolean, key_rate_claims integer, key_rate_per interval,
               key_prefix_limits jsonb, counted_at timestamptz)
LANGUAGE sql STABLE
BEGIN ATOMIC
WITH live AS (
    SELECT * FROM _queue_live_counts() WHERE NOT counted
    UNION ALL
    -- The identity's last minute written: a queue emptied since has no row there but its zeros.
    SELECT m.owner, m.queue, m.ready, m.scheduled, m.waiting, m.running, m.oldest_ready_at
    FROM queue_minutes m
    WHERE counted AND m.minute = (SELECT max(x.minute) FROM queue_minutes x)
      AND m.ready + m.scheduled + m.waiting + m.running > 0
), queues AS (
    SELECT l.owner, l.queue FROM live l
    UNION SELECT p.owner, p.queue FROM queue_pauses p
    UNION SELECT m.owner, m.queue FROM queue_limits m
    UNION SELECT t.owner, t.queue FROM queue_rates t
    UNION SELECT k.owner, k.queue FROM queue_key_limits k
    UNION SELECT r.owner, r.queue FROM queue_history_rules r
    UNION SELECT d.owner, d.queue FROM queue_dead_letters d
)
SELECT q.owner::regrole, q.queue, coalesce(l.ready, 0),
       coalesce(l.scheduled, 0), coalesce(l.waiting, 0), coalesce(l.running, 0), l.oldest_ready_at,
       p.paused_at, p.paused_by, coalesce(r.keep, 'all') AS keeps, m.max_running, t.claims AS rate_claims,
       t.per AS rate_per, d.dead_letter_queue::text, k.max_per_key, k.ordered AS key_ordered,
       k.rate_claims AS key_rate_claims, k.rate_per AS key_rate_per,
       (SELECT jsonb_agg(jsonb_build_object('prefix', x.prefix, 'max_per_key', x.max_per_key,
                                            'ordered', x.ordered, 'rate_claims', x.rate_claims,
                                            'rate_per', x.rate_per,
                                            'rate_per_seconds', extract(epoch FROM x.rate_per))
                         ORDER BY x.prefix)
        FROM queue_key_limits x
        WHERE x.owner = q.owner AND x.queue = q.queue AND x.prefix <> ''),
       CASE WHEN counted THEN (SELECT max(x.minute) + interval '1 minute' FROM queue_minutes x) ELSE now() END
FROM queues q
LEFT JOIN live l ON l.owner = q.owner AND l.queue = q.queue
LEFT JOIN queue_pauses p ON p.owner = q.owner AND p.queue = q.queue
LEFT JOIN queue_limits m ON m.owner = q.owner AND m.queue = q.queue
LEFT JOIN queue_rates t ON t.owner = q.owner AND t.queue = q.queue
LEFT JOIN queue_key_limits k ON k.owner = q.owner AND k.queue = q.queue AND k.prefix = ''
LEFT JOIN queue_history_rules r ON r.owner = q.owner AND r.queue = q.queue
LEFT JOIN queue_dead_letters d ON d.owner = q.owner AND d.queue = q.queue;
END;
GRANT EXECUTE ON FUNCTION _queues TO pgjobs_user;

CREATE VIEW jobs_queues WITH (security_invoker = true) AS SELECT * FROM _queues(false);
COMMENT ON VIEW jobs_queues IS
    'Each queue of the caller''s identity: jobs ready (due), scheduled (due later), waiting for '
    'their dependencies (blocked ones too) and running (leased), the oldest ready job''s run_at, when and by whom it was paused (null: it is not), '
    'which finished jobs job_history keeps (jobs_queue_history), its concurrency limit (null: '
    'none; jobs_limit), its rate limit: rate_claims in any window of rate_per (jobs_rate_limit), '
    'the queue its jobs go to after their last attempt (jobs_dead_letter), and its key limit: '
    'max_per_key jobs of each concurrency key leased at once, key_ordered: one at a time, in order '
    '(jobs_key_limit), key_rate_claims of each key in any window of key_rate_per '
    '(jobs_key_rate_limit), and the key limits of prefixes of keys (key_prefix_limits: each '
    'prefix with its max_per_key, ordered, rate_claims and rate_per; null: none), and when its '
    'jobs were counted (counted_at: now; see jobs_queues_counted).';
GRANT SELECT ON jobs_queues TO pgjobs_user;

CREATE VIEW jobs_queues_counted WITH (security_invoker = true) AS SELECT * FROM _queues(true);
COMMENT ON VIEW jobs_queues_counted IS
    'As jobs_queues, with each queue''s live jobs as the launcher counted them at the end of the '
    'last minute it wrote down (counted_at): a read that costs the same at a million jobs as at '
    'ten. The SCHED page reads it where jobs_queues takes too long.';
GRANT SELECT ON jobs_queues_counted TO pgjobs_user;

-- Each queue's minutes, the last day's and the one under way (its completions and failures so
-- far, counted in shared memory: _queue_minute_counts; its live jobs not yet counted).
CREATE VIEW jobs_queue_minutes WITH (security_invoker = true) AS
SELECT m.owner::regrole, m.queue, m.minute, m.completed, m.failed, m.ready, m.scheduled, m.waiting,
       m.running
FROM queue_minutes m
UNION ALL
SELECT c.owner::regrole, c.queue, date_trunc('minute', now()), c.completed, c.failed, NULL, NULL,
       NULL, NULL
FROM _queue_minute_counts() c;
COMMENT ON VIEW jobs_queue_minutes IS
    'Each queue of the caller''s identity, minute by minute over the last day: its completions and '
    'failed attempts in the minute, and its jobs ready, scheduled, waiting for their dependencies '
    'and running at the minute''s end (null in the minute under way). Written by the launcher at '
    'each minute''s end; a crash or an immediate stop loses the minute under way.';
GRANT SELECT ON jobs_queue_minutes TO pgjobs_user;

-- Batch jobs' queues (sql/085_batch.sql).
CREATE FUNCTION _is_batch_queue(queue text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN starts_with(queue, 'pg_jobs.batch:');
GRANT EXECUTE ON FUNCTION _is_batch_queue TO pgjobs_user;

-- A payload as members see it: a batch job's arguments and environment with secrets masked.
CREATE FUNCTION _mask_payload(payload jsonb) RETURNS jsonb
LANGUAGE c IMMUTABLE STRICT PARALLEL SAFE AS 'MODULE_PATHNAME', '_mask_payload';
CREATE FUNCTION _shown_payload(queue text, payload jsonb) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN _is_batch_queue(queue) THEN _mask_payload(payload) ELSE payload END;
GRANT EXECUTE ON FUNCTION _shown_payload(text, jsonb), _mask_payload(jsonb) TO pgjobs_user;

-- Why a job that waits for dependencies is blocked (null when it is not): those that ended
-- without completing, e.g. `job 12 failed; job 13 aborted`.
CREATE FUNCTION _blocked_by(job bigint) RETURNS text
LANGUAGE sql STABLE
RETURN (SELECT string_agg(format('job %s %s', w.on_job, coalesce(
                   (SELECT h.status::text FROM job_history h WHERE h.id = w.on_job),
                   'ended without completing')), '; ' ORDER BY w.on_job)
        FROM job_dependencies w
        WHERE w.job_id = job AND NOT EXISTS (SELECT FROM jobs d WHERE d.id = w.on_job));
GRANT EXECUTE ON FUNCTION _blocked_by TO pgjobs_user;

-- Whether a job that waits for dependencies is blocked: one of them ended without completing.
CREATE FUNCTION _job_blocked(job bigint) RETURNS boolean
LANGUAGE sql STABLE
RETURN EXISTS (SELECT FROM job_dependencies w
               WHERE w.job_id = job AND NOT EXISTS (SELECT FROM jobs d WHERE d.id = w.on_job));
GRANT EXECUTE ON FUNCTION _job_blocked TO pgjobs_user;

-- A live job's status as jobs_result and jobs_wait answer it: waiting while it waits for its
-- dependencies, blocked once one of them ended without completing (and why), else its status.
-- A set of one row, so that the planner inlines it into their statements.
CREATE FUNCTION _live_status(job bigint, status job_status, run_at timestamptz)
RETURNS TABLE (word text, blocked_by text)
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT CASE WHEN b.reason IS NOT NULL THEN 'blocked' WHEN run_at = 'infinity' THEN 'waiting'
                ELSE status::text END,
           b.reason
    FROM (SELECT CASE WHEN run_at = 'infinity' THEN _blocked_by(job) END AS reason) b;
END;

-- Every job, live or finished, in one shape. jobs' domain-typed columns are cast to the base types
-- job_history has: the planner flattens a UNION ALL into one append of its two scans only when
-- their column types are the same (reads were 5 % more work without the casts). Opaque ids are
-- in job_opaque_ids.
CREATE VIEW job_list WITH (security_invoker = true) AS
SELECT j.id, j.owner::regrole AS owner, j.status, j.task::text, j.queue::text, j.priority,
       _shown_payload(j.queue, j.payload) AS payload, NULL::jsonb AS result, j.errors, j.attempt,
       j.max_attempts::integer,
       -- Null while it waits for dependencies: drivers cannot read infinity as a time.
       CASE WHEN j.run_at < 'infinity' THEN j.run_at END AS run_at, j.idempotency_key, j.key_rule, j.locked_by,
       j.locked_until, j.due_at, j.start_time, j.begin_time, NULL::timestamptz AS end_time,
       j.concurrency_key, j.depends_on
FROM jobs j
UNION ALL
SELECT h.id, h.owner::regrole, h.status, h.task, h.queue, h.priority,
       _shown_payload(h.queue, h.payload), h.result, h.errors, h.attempts, h.max_attempts, NULL,
       h.idempotency_key, h.key_rule, h.locked_by, NULL, h.due_at, h.start_time, h.begin_time,
       h.end_time, h.concurrency_key, h.depends_on
FROM job_history h;
COMMENT ON VIEW job_list IS 'Live jobs (created, started, aborting) and finished ones together '
    '(run_at null: created and waiting for the jobs of depends_on; begin_time: when the last '
    'attempt began, null if none did).';

GRANT SELECT ON job_list TO pgjobs_user;

-- The caller's own jobs' opaque ids, live and finished (to share a link, or to look a job up
-- with jobs_public_lookup), computed from each job's id and owner (src/api/opaque_ids.rs).
CREATE VIEW job_opaque_ids WITH (security_barrier = true) AS
SELECT j.id, _job_opaque_id(j.id, j.owner) AS opaque_id FROM jobs j
WHERE j.owner = (SELECT identity())
  -- As jobs' policy owner_reads says it, for its indexes.
  AND (j.claimable_by = _extension_claimant() OR j.claimable_by = (SELECT identity()) AND j.queue IS NOT NULL)
UNION ALL
SELECT h.id, _job_opaque_id(h.id, h.owner) FROM job_history h WHERE h.owner = (SELECT identity());
COMMENT ON VIEW job_opaque_ids IS 'The opaque id of each of the caller''s jobs, live or finished.';
GRANT SELECT ON job_opaque_ids TO pgjobs_user;

-- SQL without a SET clause, so that it is inlined into the caller's query and planned with its
-- arguments; as PL/pgSQL it cost as much again as the query it runs.
CREATE FUNCTION jobs_find(
    status job_status DEFAULT NULL,
    queue text DEFAULT NULL,
    key text DEFAULT NULL,
    search text DEFAULT NULL,
    month date DEFAULT NULL,
    limit_rows integer DEFAULT 100,
    offset_rows integer DEFAULT 0,
    search_newest integer DEFAULT NULL
) RETURNS SETOF job_list
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT l.* FROM (
        SELECT l.* FROM job_list l
        WHERE _finite_date(jobs_find.month, 'month')
          AND (jobs_find.status IS NULL OR l.status = jobs_find.status)
          -- Only finished jobs are completed or failed: said so that the planner drops the read of
          -- jobs (whose end_time is a null constant) for them, instead of reading every live job
          -- newest first for none (a second with a million queued).
          AND (l.end_time IS NOT NULL OR jobs_find.status IS NULL
               OR jobs_find.status NOT IN ('completed', 'failed'))
          AND (jobs_find.queue IS NULL OR l.queue = jobs_find.queue)
          AND (jobs_find.key IS NULL OR l.idempotency_key = jobs_find.key)
          AND (jobs_find.month IS NULL OR _utc_month(l.due_at) = date_trunc('month', jobs_find.month)::date)
        ORDER BY l.id DESC
        -- A text is looked for in the newest search_newest jobs of the other filters only (null:
        -- all of them), so that a search that finds little reads a bounded number of rows, not
        -- every job (3.3 s at a million). Read newest first, so that without a text the outer
        -- LIMIT stops this one early.
        LIMIT CASE WHEN jobs_find.search IS NULL THEN NULL ELSE _row_count(search_newest, 'search_newest') END
    ) l
    WHERE jobs_find.search IS NULL OR l.task ILIKE '%' || jobs_find.search || '%'
       OR l.idempotency_key ILIKE '%' || jobs_find.search || '%'
       OR l.payload::text ILIKE '%' || jobs_find.search || '%'
       OR l.result::text ILIKE '%' || jobs_find.search || '%'
    ORDER BY l.id DESC
    LIMIT _row_count(limit_rows, 'limit_rows') OFFSET _row_count(offset_rows, 'offset_rows');
END;
COMMENT ON FUNCTION jobs_find IS
    'Finds jobs, newest first, by status, queue, key, month due, and text in task, key, payload or '
    'result; the text among the newest search_newest jobs of the other filters (null: all).';
GRANT EXECUTE ON FUNCTION jobs_find TO pgjobs_user;

CREATE FUNCTION jobs_counts(month date DEFAULT NULL)
RETURNS TABLE (queue text, status job_status, jobs bigint)
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT c.queue, c.status, count(*)
    FROM (SELECT j.queue::text, j.status FROM jobs j
          UNION ALL
          SELECT h.queue, h.status FROM job_history h
          WHERE _finite_date(month, 'month') AND _utc_month(h.due_at) = coalesce(date_trunc('month', month)::date, _utc_month(now()))) c
    GROUP BY c.queue, c.status
    ORDER BY c.queue, c.status;
END;
COMMENT ON FUNCTION jobs_counts IS
    'Jobs per queue and status: every live job, and the finished jobs due in the given month (default: this one).';
GRANT EXECUTE ON FUNCTION jobs_counts TO pgjobs_user;

-- Months of history: one partition job_history_YYYYMM per UTC month.

-- The months that have a partition of job_history.
CREATE FUNCTION _history_month_partitions() RETURNS TABLE (month date)
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT to_date(right(c.relname, 6), 'YYYYMM')
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'job_history'::regclass AND c.relname ~ '^job_history_[0-9]{6}$';
END;
GRANT EXECUTE ON FUNCTION _history_month_partitions TO pgjobs_user;

CREATE FUNCTION jobs_history_months()
RETURNS TABLE (month date, partition regclass, jobs bigint)
LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'jobs_history_months';
COMMENT ON FUNCTION jobs_history_months IS
    'The months of job_history, each with its partition and job count; month is null for the '
    'partition that catches jobs due in a month that has none yet.';

-- The indexes of one month of job_history (or of its catch-all partition): src/api/history.rs.
CREATE FUNCTION _index_history(part regclass) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', '_index_history';
SELECT _index_history('job_history_other');

-- jobs_history_prepare and jobs_history_drop: src/api/history.rs.
CREATE FUNCTION jobs_history_prepare(months_ahead integer DEFAULT 3, wait boolean DEFAULT true)
RETURNS SETOF regclass
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_history_prepare';
COMMENT ON FUNCTION jobs_history_prepare IS
    'Makes the partitions of job_history from last month to months_ahead months ahead. wait '
    'false: stops, making none, where a transaction reading or writing job_history stands in the way.';

CREATE FUNCTION jobs_history_drop(before date) RETURNS SETOF date
LANGUAGE c AS 'MODULE_PATHNAME', 'jobs_history_drop';
COMMENT ON FUNCTION jobs_history_drop IS
    'Drops the months of job_history that end on or before the given date; returns the months dropped.';
