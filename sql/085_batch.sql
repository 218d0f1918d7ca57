-- Batch jobs: commands that people and programs post for computers, run by the worker agent
-- (agent/, pg_jobs_agent) of each computer.
--
-- A batch job is a job of the lease queue: its queue is pg_jobs.batch:<computer> (ANY for any
-- computer), which only the extension claims, so only the agent functions below hand it out; its
-- kind is the job's task, its command the job's payload, the hash of its command the job's key
-- under the rule replace (one active job per command), its lease the silence an agent is
-- allowed (pg_jobs.batch_silence). A finished run is a row of job_history under the month it was
-- due, so the monthly store is job_history's partitions, and dropping a month drops them.
-- The seed's statuses are words over the queue's states (pg_jobs_core::batch::status_word).

-- The role of agents' login roles: the agent functions and nothing else.
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_catalog.pg_roles WHERE rolname = 'pgjobs_agent') THEN
        CREATE ROLE pgjobs_agent NOLOGIN;
    END IF;
END
$$;
GRANT USAGE ON SCHEMA @extschema@ TO pgjobs_agent;
-- What the policy of jobs calls as the caller: an agent's role is refused the table, not this.
GRANT EXECUTE ON FUNCTION _extension_claimant TO pgjobs_agent;

CREATE FUNCTION _batch_queue(computer text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN 'pg_jobs.batch:' || computer;

-- Computers, each bound to the identity of the agent that registered it first: another agent's
-- role cannot take its jobs by registering the same name.
CREATE TABLE batch_computers (
    computer      text PRIMARY KEY,
    agent         regrole NOT NULL,
    capacity      integer NOT NULL CHECK (capacity >= 1),
    info          jsonb NOT NULL DEFAULT '{}',
    registered_at timestamptz NOT NULL DEFAULT now(),
    last_seen     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX batch_computers_agent ON batch_computers (agent);
COMMENT ON TABLE batch_computers IS
    'Computers whose agents take batch jobs: the identity of the agent role that registered each '
    'name, its slots (--batchjobs), what it said about itself, and when it was last heard of.';

-- What a batch job is grouped by on the SCHED page's Jobs tab: its routine, else its command.
CREATE FUNCTION _batch_label(payload jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN coalesce(payload ->> 'routine', payload ->> 'command');
GRANT EXECUTE ON FUNCTION _batch_label TO pgjobs_user;

-- The Jobs tab with a million active jobs. Reading them all for each of its requests took
-- seconds, so the bulk of them, the jobs that wait for their time or are due (created, with a
-- finite run_at: "tallied"), is counted in batch_tally, and the few others (taken by an agent,
-- cancelled while running, waiting for dependencies) are read. A group's jobs are an index range.
-- Each index is partial on the extension's batch queues: the plain queue's claims and
-- completions add no entry to them (their predicate fails at claimable_by).
CREATE INDEX jobs_batch_group ON jobs (_batch_label(payload), due_at, (payload ->> 'computer'), owner)
    WHERE claimable_by = _extension_claimant() AND _is_batch_queue(queue);
-- No index names status or another column a claim sets: the plain queue's claims are HOT updates
-- (sql/030_queue.sql). A batch job's progress stands for its status here: it is set from the
-- claim that takes the job ('{}' until its agent says more) to the end of the attempt, and only
-- for batch jobs, so that a claim of a batch job is not HOT but a plain one still is.
-- The tallied jobs by time (with the jobs taken, which readers skip by status): which of the
-- current minute's are due already.
CREATE INDEX jobs_batch_run_at ON jobs (run_at)
    WHERE claimable_by = _extension_claimant() AND _is_batch_queue(queue);
-- The untallied jobs, read one by one: taken (progress set) or waiting for dependencies.
CREATE INDEX jobs_batch_untallied ON jobs (id)
    WHERE claimable_by = _extension_claimant() AND _is_batch_queue(queue)
      AND (progress IS NOT NULL OR run_at = 'infinity');

-- Counts of the tallied jobs by owner, minute due (UTC), label, computer and minute they may
-- run (UTC; the minute that is now is split by reading its jobs). Rows are only ever inserted,
-- as deltas, in the transaction that changes the jobs they count: an update of a shared count
-- row would make a claim wait for a poster's open transaction (agents never wait). The
-- background worker folds the deltas of each key into one row (_batch_tally_fold). Every
-- function that moves a batch job into or out of the tallied state, or changes its run_at,
-- locks the job, subtracts what it counted (_batch_tally(ids, -1)), changes it, and adds what
-- it counts now (_batch_tally(ids, 1)); they are the batch functions, jobs_abort and the
-- rescue of expired leases, none of them in the plain queue's claims and completions.
CREATE TABLE batch_tally (
    owner      regrole NOT NULL,
    due_minute timestamptz NOT NULL,
    label      text,
    computer   text,
    run_minute timestamptz NOT NULL,
    n          bigint NOT NULL,
    -- When the first job a delta added was due (null for a delta that subtracts): the rows of a
    -- key give when its first job was due, or, once that job has left, an earlier time of the
    -- same minute.
    first_due  timestamptz
);
ALTER TABLE batch_tally ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_reads ON batch_tally FOR SELECT USING (owner = (SELECT identity()));
GRANT SELECT ON batch_tally TO pgjobs_user;
COMMENT ON TABLE batch_tally IS
    'Counts of the active batch jobs that wait for their time or are due, as deltas by owner, '
    'minute due, routine (or command), computer and minute they may run; the Jobs tab reads them.';

-- Adds (sign 1) or subtracts (-1) what jobs ids count in batch_tally as they are now
-- (src/api/batch.rs, tally).
CREATE FUNCTION _batch_tally(ids bigint[], sign integer, as_created boolean DEFAULT false) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', '_batch_tally';

-- Folds the deltas of each key into one row (none when they sum to 0). Only committed rows are
-- seen and deleted, and only what this statement deleted is added back, so two folds at once
-- count nothing twice (the second skips what the first deleted), and a writer, which only
-- inserts, never waits for a fold.
CREATE FUNCTION _batch_tally_fold() RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    WITH chosen AS (
        SELECT unnest(array_agg(t.ctid)) AS tid
        FROM batch_tally t
        GROUP BY t.owner, t.due_minute, t.label, t.computer, t.run_minute
        HAVING count(*) > 1 OR sum(t.n) = 0
    ), gone AS (
        DELETE FROM batch_tally t WHERE t.ctid = ANY (ARRAY(SELECT c.tid FROM chosen c))
        RETURNING t.owner, t.due_minute, t.label, t.computer, t.run_minute, t.n, t.first_due
    )
    INSERT INTO batch_tally (owner, due_minute, label, computer, run_minute, n, first_due)
    SELECT g.owner, g.due_minute, g.label, g.computer, g.run_minute, sum(g.n), min(g.first_due)
    FROM gone g
    GROUP BY 1, 2, 3, 4, 5
    HAVING sum(g.n) <> 0;
END;

-- Counts the tallied jobs afresh, for jobs written behind the batch functions' back (bench/sched.py
-- adds a million through _add) or a repair. The table lock waits for every transaction that has
-- written a delta; one that has changed jobs but not yet written its delta is not seen by the
-- count, and its delta then applies to it.
CREATE FUNCTION _batch_tally_rebuild() RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', '_batch_tally_rebuild';

-- Where batch_tally and the jobs disagree (none, unless a job was changed behind the batch
-- functions' back): the tests' check, and an operator's.
CREATE FUNCTION _batch_tally_differences()
RETURNS TABLE (owner oid, due_minute timestamptz, label text, computer text, run_minute timestamptz,
               tallied bigint, actual bigint)
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT coalesce(t.owner, a.owner), coalesce(t.due_minute, a.due_minute), coalesce(t.label, a.label),
           coalesce(t.computer, a.computer), coalesce(t.run_minute, a.run_minute),
           coalesce(t.n, 0), coalesce(a.n, 0)
    FROM (SELECT b.owner, b.due_minute, b.label, b.computer, b.run_minute, sum(b.n)::bigint AS n
          FROM batch_tally b GROUP BY 1, 2, 3, 4, 5 HAVING sum(b.n) <> 0) t
    FULL JOIN (
        SELECT j.owner, date_trunc('minute', j.due_at, 'UTC') AS due_minute, _batch_label(j.payload) AS label,
               j.payload ->> 'computer' AS computer, date_trunc('minute', j.run_at, 'UTC') AS run_minute,
               count(*) AS n
        FROM jobs j
        WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
          AND j.status = 'created' AND j.run_at < 'infinity'
        GROUP BY 1, 2, 3, 4, 5) a
      ON a.owner = t.owner AND a.due_minute = t.due_minute AND a.label IS NOT DISTINCT FROM t.label
         AND a.computer IS NOT DISTINCT FROM t.computer AND a.run_minute = t.run_minute
    WHERE t.n IS DISTINCT FROM a.n
    ORDER BY 1, 2, 3, 4, 5;
END;

CREATE FUNCTION _text_array(elements jsonb) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY(SELECT jsonb_array_elements_text(elements));
GRANT EXECUTE ON FUNCTION _text_array TO pgjobs_user;

CREATE FUNCTION _bigint_array(elements jsonb) RETURNS bigint[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY(SELECT e::bigint FROM jsonb_array_elements_text(elements) e);
GRANT EXECUTE ON FUNCTION _bigint_array TO pgjobs_user;

-- The batch jobs that have not finished, whatever month they were due in, as the worker pool
-- shows them, read as the caller (so through row-level security: a member sees its own).
-- Secrets in arguments, output tails and errors are masked (pg_jobs_core::mask).
-- Due (PENDING) is as a claim has it: run_at at or before the time of the reading statement.
-- now(), the time its transaction began, made a job released earlier in the same transaction
-- WAITING, and so batch_release's own answer over the extended protocol, where the statement's
-- time is taken again at its Execute message.
CREATE VIEW batch_active WITH (security_invoker = true) AS
SELECT j.id, j.idempotency_key AS hash, j.owner::regrole AS owner,
       _batch_status(j.status::text, j.run_at <= statement_timestamp(), w.blocked_by IS NOT NULL,
                     j.progress ->> 'token' = j.lease_token::text) AS status,
       w.blocked_by AS blocked_reason,
       j.task::text AS kind, j.payload ->> 'computer' AS computer,
       CASE WHEN j.status <> 'created' THEN j.locked_by END AS target,
       j.payload ->> 'routine' AS routine, j.payload ->> 'command' AS command,
       _mask_args(_text_array(j.payload -> 'args')) AS args, j.payload ->> 'cwd' AS cwd,
       (j.payload ->> 'shell')::boolean AS shell, j.payload -> 'revision' AS revision,
       _bigint_array(j.payload -> 'depends_on') AS depends_on,
       NULL::integer AS exit_code, NULL::interval AS run_time,
       _mask_text(j.progress ->> 'stderr') AS stderr, _mask_text(j.progress ->> 'stdout') AS stdout,
       _mask_text(j.errors -> -1 ->> 'error') AS error,
       (j.progress ->> 'pid')::integer AS pid,
       j.attempt, j.max_attempts::integer, j.priority,
       CASE WHEN j.run_at < 'infinity' THEN j.run_at END AS run_at, j.due_at,
       _utc_month(j.due_at) AS month,
       greatest(j.last_update, j.begin_time, (j.progress ->> 'changed')::timestamptz) AS changed,
       (j.progress ->> 'started_at')::timestamptz AS started_at, NULL::timestamptz AS ended_at,
       j.payload -> 'extra' AS extra
FROM jobs j
LEFT JOIN LATERAL (
    SELECT string_agg(format('job %s %s', b.on_job, coalesce(
               (SELECT 'ended in ' || _batch_status(h.status::text, true, false, false)
                FROM job_history h WHERE h.id = b.on_job),
               'ended and its month was dropped')), '; ' ORDER BY b.on_job) AS blocked_by
    FROM job_dependencies b
    WHERE b.job_id = j.id AND NOT EXISTS (SELECT FROM jobs d WHERE d.id = b.on_job)
-- Only a job waiting for dependencies has run_at infinity, and only such a job can be blocked:
-- the other waiting jobs (most of a large store) are not looked up in job_dependencies.
) w ON j.status = 'created' AND j.run_at = 'infinity'
WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue);
COMMENT ON VIEW batch_active IS
    'The caller''s batch jobs that have not finished, whatever month they were due in (CANCEL '
    'here: cancelled while running, until its agent reports).';
GRANT SELECT ON batch_active TO pgjobs_user;

-- Every batch job, active or finished: a finished run is a row of job_history.
CREATE VIEW batch_jobs WITH (security_invoker = true) AS
SELECT a.* FROM batch_active a
UNION ALL
SELECT h.id, h.idempotency_key, h.owner::regrole, _batch_status(h.status::text, true, false, false),
       NULL, h.task, h.payload ->> 'computer', h.locked_by, h.payload ->> 'routine',
       h.payload ->> 'command', _mask_args(_text_array(h.payload -> 'args')), h.payload ->> 'cwd',
       (h.payload ->> 'shell')::boolean, h.payload -> 'revision',
       _bigint_array(h.payload -> 'depends_on'),
       (h.result ->> 'exit_code')::integer, (h.result ->> 'run_time')::interval,
       _mask_text(h.result ->> 'stderr'), _mask_text(h.result ->> 'stdout'), _mask_text(h.result ->> 'error'), NULL,
       h.attempts, h.max_attempts, h.priority, NULL, h.due_at, _utc_month(h.due_at), h.end_time,
       NULL, h.end_time, h.payload -> 'extra'
FROM job_history h
WHERE _is_batch_queue(h.queue);
COMMENT ON VIEW batch_jobs IS
    'Every batch job of the caller, active or finished, with its status word (WAITING, BLOCKED, '
    'PENDING, FETCHED, RUNNING, COMPLETED, ERROR, CANCEL); month is the UTC month it was due. '
    'Secrets in arguments, output tails and errors are masked.';
-- The columns of both views, described once.
DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT * FROM (VALUES
        ('id', 'The job''s id (as in jobs and job_history).'),
        ('hash', 'The hash of the command: the key of its one active job, and what batch_get takes.'),
        ('owner', 'Who posted it (the identity: a proxy''s root).'),
        ('status', 'WAITING, BLOCKED, PENDING, FETCHED, RUNNING, COMPLETED, ERROR or CANCEL.'),
        ('blocked_reason', 'Which dependencies ended without completing.'),
        ('kind', 'batch, routine or kill.'),
        ('computer', 'Who may take the job: a computer, or ANY.'),
        ('target', 'The computer that took it.'),
        ('routine', 'The routine it belongs to, if posted with one (a kill job: the routine to end).'),
        ('command', 'The program run (looked up in PATH), or the shell command when shell is true.'),
        ('args', 'Its arguments, secrets masked (README: What is masked).'),
        ('cwd', 'The working folder (null: the agent''s).'),
        ('shell', 'Whether the command runs through sh -c.'),
        ('revision', 'Source-revision metadata, as posted.'),
        ('depends_on', 'The jobs it waits for or waited for.'),
        ('exit_code', 'The exit code of a finished run (null: ended by a signal, or never ran).'),
        ('run_time', 'How long its process ran.'),
        ('stderr', 'The tail of its stderr, secrets masked: while it runs, as the agent last sent it; then the last 8 KB.'),
        ('stdout', 'The tail of its stdout, likewise.'),
        ('error', 'Why it failed, secrets masked: the tail of its stderr, or what happened to its agent.'),
        ('pid', 'The process id on the target while it runs.'),
        ('attempt', 'Attempts made (an agent that went silent used one).'),
        ('max_attempts', 'Attempts allowed.'),
        ('priority', 'Lower is taken first.'),
        ('run_at', 'When it may run (null while it waits for dependencies, and once finished).'),
        ('due_at', 'When it was first due: picks its month.'),
        ('month', 'The UTC month it was due in: its month of the store.'),
        ('changed', 'Its last change.'),
        ('started_at', 'When its process started.'),
        ('ended_at', 'When it finished (null while active).'),
        ('extra', 'Anything else posted with it.')) AS d(name, text), (VALUES ('batch_jobs'), ('batch_active')) AS v(view)
    LOOP
        EXECUTE format('COMMENT ON COLUMN @extschema@.%I.%I IS %L', c.view, c.name, c.text);
    END LOOP;
END
$$;
GRANT SELECT ON batch_jobs TO pgjobs_user;

CREATE VIEW batch_months WITH (security_invoker = true) AS
SELECT b.month, sum(b.n)::bigint AS jobs, jsonb_object_agg(b.status, b.n) AS counts
FROM (SELECT j.month, j.status, count(*) AS n FROM batch_jobs j GROUP BY 1, 2) b
GROUP BY b.month;
COMMENT ON VIEW batch_months IS
    'The months that have batch jobs of the caller (the UTC month each was due), with counts per status.';
GRANT SELECT ON batch_months TO pgjobs_user;

CREATE VIEW batch_computer_list WITH (security_invoker = true) AS
SELECT c.computer, c.agent::regrole AS agent, c.capacity, c.info, c.registered_at, c.last_seen
FROM batch_computers c;
COMMENT ON VIEW batch_computer_list IS 'The computers whose agents take batch jobs.';
GRANT SELECT ON batch_computers, batch_computer_list TO pgjobs_user, pgjobs_agent;

-- The selection that find, the groups and cancel share: the month's jobs (active ones when
-- month is null), with the given status words, matching text in routine, command, arguments,
-- source revision, computer, target, id or hash.
CREATE FUNCTION _batch_selection(month date, statuses text[], search text)
RETURNS SETOF batch_jobs
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT b.* FROM (
        SELECT a.* FROM batch_active a WHERE _batch_selection.month IS NULL
        UNION ALL
        -- A range of due_at, so that only the month's partition of job_history is read.
        SELECT j.* FROM batch_jobs j
        WHERE j.due_at >= _utc_midnight(date_trunc('month', _batch_selection.month)::date)
          AND j.due_at < _utc_midnight((date_trunc('month', _batch_selection.month) + interval '1 month')::date)
    ) b
    WHERE (statuses IS NULL OR b.status = ANY (statuses))
      AND (search IS NULL OR concat_ws(' ', b.id, b.hash, b.routine, b.command,
                                       array_to_string(b.args, ' '), b.revision, b.computer,
                                       b.target) ILIKE '%' || search || '%');
END;
GRANT EXECUTE ON FUNCTION _batch_selection TO pgjobs_user;

-- The key of a job's group: by time (the minute it was due, and its routine), routine, status or
-- computer. It takes the columns it reads, not the row: a whole row of the batch views made
-- every column of every job be computed (its masked arguments, its blocked reason), which made
-- the Jobs tab's groups 5 times slower. Stable, as to_char is: declared immutable, it was not
-- inlined, and each call ran as a query of its own (8 µs, a third of the counted groups' time).
CREATE FUNCTION _batch_group_key(by text, due_at timestamptz, routine text, command text,
                                 status text, target text, computer text) RETURNS text
LANGUAGE sql STABLE
RETURN CASE by
    WHEN 'time' THEN to_char(due_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || ' '
                     || coalesce(routine, command)
    WHEN 'routine' THEN coalesce(routine, command)
    WHEN 'status' THEN status
    WHEN 'computer' THEN coalesce(target, computer)
END;
GRANT EXECUTE ON FUNCTION _batch_group_key TO pgjobs_user;

CREATE FUNCTION _batch_check_reading(by text, statuses text[], limit_rows integer, offset_rows integer)
RETURNS void
LANGUAGE c STABLE AS 'MODULE_PATHNAME', '_batch_check_reading';
GRANT EXECUTE ON FUNCTION _batch_check_reading TO pgjobs_user;

-- A batch job's status word from its row's columns (and job_dependencies for a job that waits for
-- dependencies, the only one that can be blocked), as batch_active has it. One expression, so
-- that the planner inlines it into the reads that filter by status.
CREATE FUNCTION _batch_row_status(status job_status, run_at timestamptz, id bigint, progress jsonb, lease_token uuid)
RETURNS text
LANGUAGE sql STABLE
RETURN _batch_status(status::text, run_at <= statement_timestamp(), status = 'created' AND run_at = 'infinity' AND _job_blocked(id),
                     progress ->> 'token' = lease_token::text);
GRANT EXECUTE ON FUNCTION _batch_row_status TO pgjobs_user;

-- The caller's active batch jobs counted by minute due (UTC), label, place (the computer that
-- took a job, else the one it was posted for) and status word, without reading each: the tallied
-- ones from batch_tally (PENDING when they may run from a minute before the current one, WAITING
-- from one after it; the current minute's are read, as they become due within it), the others
-- read. Rows of one key may repeat: sum them. first_due is when the first of them was due, for
-- the counted ones to within the minute (see batch_tally.first_due): an index probe per key for
-- the exact time read a random heap page each, 1,000 of them for 1,000 groups.
CREATE FUNCTION _batch_active_counts()
RETURNS TABLE (due_minute timestamptz, label text, place text, status text, n bigint, first_due timestamptz)
LANGUAGE sql STABLE
BEGIN ATOMIC
    -- (The current minute once for the counts: date_trunc with a time zone costs a microsecond a
    -- row. Not for the range of jobs: the planner, not knowing the value, would take a third of
    -- the jobs to be in it, and compile the plan with JIT.)
    WITH this AS MATERIALIZED (
        SELECT date_trunc('minute', statement_timestamp(), 'UTC') AS minute
    ), tallied AS (
        SELECT t.owner, t.due_minute, t.label, t.computer, t.run_minute, sum(t.n)::bigint AS n,
               min(t.first_due) AS first_due
        FROM batch_tally t
        WHERE t.run_minute <> (SELECT this.minute FROM this)
        GROUP BY t.owner, t.due_minute, t.label, t.computer, t.run_minute
        HAVING sum(t.n) <> 0
    )
    SELECT t.due_minute, t.label, t.computer,
           CASE WHEN t.run_minute < (SELECT this.minute FROM this) THEN 'PENDING' ELSE 'WAITING' END,
           t.n, t.first_due
    FROM tallied t
    UNION ALL
    SELECT date_trunc('minute', j.due_at, 'UTC'), _batch_label(j.payload), j.payload ->> 'computer',
           CASE WHEN j.run_at <= statement_timestamp() THEN 'PENDING' ELSE 'WAITING' END, count(*), min(j.due_at)
    FROM jobs j
    WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue) AND j.status = 'created'
      AND j.run_at >= date_trunc('minute', statement_timestamp(), 'UTC')
      AND j.run_at < date_trunc('minute', statement_timestamp(), 'UTC') + interval '1 minute'
    GROUP BY 1, 2, 3, 4
    UNION ALL
    SELECT date_trunc('minute', a.due_at, 'UTC'), coalesce(a.routine, a.command),
           coalesce(a.target, a.computer), a.status, count(*), min(a.due_at)
    FROM batch_active a
    WHERE a.id = ANY (ARRAY(
        SELECT j.id FROM jobs j
        WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
          AND (j.progress IS NOT NULL OR j.run_at = 'infinity')))
    GROUP BY 1, 2, 3, 4;
END;
GRANT EXECUTE ON FUNCTION _batch_active_counts TO pgjobs_user;

-- The months of the caller's batch jobs in job_history_other, which holds the finished jobs of
-- months without a partition (due before the oldest month made, or far ahead): read through the
-- ranges of due_at that no month's partition covers, so that only that partition is read.
CREATE FUNCTION _batch_unpartitioned_months() RETURNS TABLE (month date)
LANGUAGE c STABLE AS 'MODULE_PATHNAME', '_batch_unpartitioned_months';
GRANT EXECUTE ON FUNCTION _batch_unpartitioned_months TO pgjobs_user;

-- The months that have batch jobs of the caller, without counting them: the months of its active
-- jobs, each month of job_history in which one of its batch jobs is found first (an index probe
-- in that month's partition, not a scan of the history), and the months of those in
-- job_history_other (a job due three months ago, before the oldest month made, was found by
-- batch_find(month => ...) but its month was not offered).
CREATE FUNCTION _batch_month_list() RETURNS TABLE (month date)
LANGUAGE sql STABLE
BEGIN ATOMIC
    -- The active jobs' months: from their counts, and the few not counted.
    SELECT _utc_month(t.due_minute) FROM batch_tally t GROUP BY 1 HAVING sum(t.n) > 0
    UNION
    SELECT a.month FROM batch_active a
    WHERE a.id = ANY (ARRAY(
        SELECT j.id FROM jobs j
        WHERE j.claimable_by = _extension_claimant() AND _is_batch_queue(j.queue)
          AND (j.progress IS NOT NULL OR j.run_at = 'infinity')))
    UNION
    SELECT p.month
    FROM _history_month_partitions() p
    WHERE EXISTS (SELECT FROM job_history h
                  WHERE h.due_at >= _utc_midnight(p.month)
                    AND h.due_at < _utc_midnight((p.month + interval '1 month')::date)
                    AND _is_batch_queue(h.queue))
    UNION
    SELECT o.month FROM _batch_unpartitioned_months() o;
END;
GRANT EXECUTE ON FUNCTION _batch_month_list TO pgjobs_user;

CREATE FUNCTION batch_find(month date DEFAULT NULL, statuses text[] DEFAULT NULL,
                           search text DEFAULT NULL, limit_rows integer DEFAULT 100,
                           offset_rows integer DEFAULT 0)
RETURNS jsonb
LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'batch_find';
COMMENT ON FUNCTION batch_find IS
    'The caller''s batch jobs of a month (active ones when month is null), by status words and '
    'text: {rows (newest first), total, counts (by status), months (that have jobs)}.';
GRANT EXECUTE ON FUNCTION batch_find TO pgjobs_user;

CREATE FUNCTION batch_get(hash text) RETURNS SETOF batch_jobs
LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'batch_get';
COMMENT ON FUNCTION batch_get IS 'The caller''s latest batch job with this command hash.';
GRANT EXECUTE ON FUNCTION batch_get TO pgjobs_user;

CREATE FUNCTION batch_groups(by text DEFAULT 'time', month date DEFAULT NULL,
                             statuses text[] DEFAULT NULL, search text DEFAULT NULL)
RETURNS TABLE (group_key text, status text, jobs bigint, counts jsonb, first_due timestamptz)
LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'batch_groups';
COMMENT ON FUNCTION batch_groups IS
    'The caller''s batch jobs in groups (by time: the minute due and the routine; routine, status '
    'or computer), each with its most pressing status and its count per status.';
GRANT EXECUTE ON FUNCTION batch_groups TO pgjobs_user;

CREATE FUNCTION batch_group_jobs(by text, group_key text, month date DEFAULT NULL,
                                 statuses text[] DEFAULT NULL, search text DEFAULT NULL,
                                 limit_rows integer DEFAULT 200, offset_rows integer DEFAULT 0)
RETURNS SETOF batch_jobs
LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'batch_group_jobs';
COMMENT ON FUNCTION batch_group_jobs IS 'The jobs of one group of batch_groups, 200 at a time by default.';
GRANT EXECUTE ON FUNCTION batch_group_jobs TO pgjobs_user;

CREATE VIEW batch_groups_active WITH (security_invoker = true) AS
SELECT * FROM batch_groups();
COMMENT ON VIEW batch_groups_active IS
    'The caller''s active batch jobs by the minute due and routine, with counts per status.';
GRANT SELECT ON batch_groups_active TO pgjobs_user;

DO $$
DECLARE
    c record;
BEGIN
    FOR c IN SELECT * FROM (VALUES
        ('batch_months', 'month', 'A UTC month that has batch jobs of the caller.'),
        ('batch_months', 'jobs', 'How many.'),
        ('batch_months', 'counts', 'How many of each status.'),
        ('batch_groups_active', 'group_key', 'The minute the jobs were due (UTC) and their routine (or command).'),
        ('batch_groups_active', 'status', 'The group''s most pressing status.'),
        ('batch_groups_active', 'jobs', 'How many jobs it has.'),
        ('batch_groups_active', 'counts', 'How many of each status.'),
        ('batch_groups_active', 'first_due', 'When its first job was due.'),
        ('batch_computer_list', 'computer', 'The computer''s name, as jobs are posted for it.'),
        ('batch_computer_list', 'agent', 'The agent role that registered it (its identity); only it claims for it.'),
        ('batch_computer_list', 'capacity', 'Jobs its agent runs at once (--batchjobs).'),
        ('batch_computer_list', 'info', 'What the agent said of itself (host, pid, version).'),
        ('batch_computer_list', 'registered_at', 'When the name was first registered.'),
        ('batch_computer_list', 'last_seen', 'When its agent last registered or claimed (to within 10 seconds).')) AS d(relation, name, text)
    LOOP
        EXECUTE format('COMMENT ON COLUMN @extschema@.%I.%I IS %L', c.relation, c.name, c.text);
    END LOOP;
END
$$;

-- Posting (src/api/batch.rs): batch_post for the caller, and this for the routines' scheduler,
-- which posts a routine's run for its schedule's owner and must not wait (nowait).
CREATE FUNCTION _batch_post(owner oid, command text, args text[], computer text,
    kind text, routine text, cwd text, shell boolean, depends_on text[], run_at timestamptz,
    max_attempts integer, priority integer, revision jsonb, env jsonb, extra jsonb,
    nowait boolean DEFAULT false)
RETURNS bigint
LANGUAGE c AS 'MODULE_PATHNAME', '_batch_post';

CREATE FUNCTION batch_post(
    command text,
    args text[] DEFAULT '{}',
    computer text DEFAULT 'ANY',
    kind text DEFAULT 'batch',
    routine text DEFAULT NULL,
    cwd text DEFAULT NULL,
    shell boolean DEFAULT false,
    depends_on text[] DEFAULT '{}',
    run_at timestamptz DEFAULT NULL,
    max_attempts integer DEFAULT 1,
    priority integer DEFAULT 0,
    revision jsonb DEFAULT NULL,
    env jsonb DEFAULT '{}',
    extra jsonb DEFAULT '{}'
) RETURNS bigint
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_post';
COMMENT ON FUNCTION batch_post IS
    'Posts a command for a computer (or ANY) and returns the job''s id. Posting a command again '
    'while its job still waits replaces that job (same id). depends_on: job ids or command hashes '
    'whose jobs must complete first.';
GRANT EXECUTE ON FUNCTION batch_post TO pgjobs_user;

CREATE FUNCTION batch_post_many(posts jsonb) RETURNS SETOF bigint
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_post_many';
COMMENT ON FUNCTION batch_post_many IS
    'Posts many commands in one call, as batch_post would one after another, and returns their '
    'jobs'' ids in the order given. Each object takes batch_post''s parameters (a field left out '
    'or null takes its default), and "after": places (from 1) of earlier posts of the same call '
    'that it waits for.';
GRANT EXECUTE ON FUNCTION batch_post_many TO pgjobs_user;

CREATE FUNCTION batch_cancel(ids bigint[]) RETURNS TABLE (id bigint, status text)
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_cancel';
COMMENT ON FUNCTION batch_cancel IS
    'Cancels the caller''s batch jobs: a waiting one is no longer handed out (CANCEL); a running '
    'one is marked CANCEL and its agent ends it. Returns each job''s status afterwards.';
GRANT EXECUTE ON FUNCTION batch_cancel TO pgjobs_user;

CREATE FUNCTION batch_cancel_where(month date DEFAULT NULL, statuses text[] DEFAULT NULL,
                                   search text DEFAULT NULL, by text DEFAULT NULL,
                                   group_key text DEFAULT NULL)
RETURNS TABLE (id bigint, status text)
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_cancel_where';
COMMENT ON FUNCTION batch_cancel_where IS
    'Cancels the caller''s active batch jobs that batch_find (or, with by and group_key, one group '
    'of batch_groups) selects, read or not.';
GRANT EXECUTE ON FUNCTION batch_cancel_where TO pgjobs_user;

CREATE FUNCTION batch_release(id bigint) RETURNS text
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_release';
COMMENT ON FUNCTION batch_release IS
    'Lets a waiting or blocked batch job of the caller run without its dependencies; returns its status.';
GRANT EXECUTE ON FUNCTION batch_release TO pgjobs_user;

CREATE FUNCTION batch_register(computer text, capacity integer DEFAULT 1, info jsonb DEFAULT '{}')
RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_register';
COMMENT ON FUNCTION batch_register IS
    'Registers the caller''s computer and its slots; the first agent role to register a name keeps it.';
GRANT EXECUTE ON FUNCTION batch_register TO pgjobs_agent;

CREATE FUNCTION batch_forget_computer(computer text) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_forget_computer';
COMMENT ON FUNCTION batch_forget_computer IS
    'Forgets a computer, so that another agent role may register its name (administrators only).';

CREATE FUNCTION batch_ready_signals(computer text) RETURNS text[]
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_ready_signals';
COMMENT ON FUNCTION batch_ready_signals IS
    'The payloads of NOTIFY pgjobs_ready that mean work arrived for this computer or for ANY.';
GRANT EXECUTE ON FUNCTION batch_ready_signals TO pgjobs_agent;

-- The payload of NOTIFY pgjobs_batch_cancel for a computer: a keyed hash, as for pgjobs_ready.
CREATE FUNCTION _batch_cancel_signal(computer text) RETURNS text
LANGUAGE sql STABLE
RETURN _ready_signal(_extension_claimant(), 'pg_jobs.batch.cancel:' || computer);

CREATE FUNCTION batch_cancel_signal(computer text) RETURNS text
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_cancel_signal';
COMMENT ON FUNCTION batch_cancel_signal IS
    'The payload of NOTIFY pgjobs_batch_cancel that means a job this computer runs was cancelled: '
    'renew its leases at once to learn which (lease state aborted).';
GRANT EXECUTE ON FUNCTION batch_cancel_signal TO pgjobs_agent;

CREATE FUNCTION batch_claim(computer text, n integer DEFAULT 1)
RETURNS TABLE (id bigint, lease_token uuid, attempt integer, kind text, routine text,
               command text, args text[], cwd text, shell boolean, env jsonb, lease interval,
               owner text)
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_claim';
COMMENT ON FUNCTION batch_claim IS
    'Claims up to n batch jobs for this computer or for ANY; renew each lease within lease. A kill '
    'job ends the running jobs of its routine that have its owner.';
GRANT EXECUTE ON FUNCTION batch_claim TO pgjobs_agent;

CREATE FUNCTION batch_started(id bigint, token uuid, pid integer) RETURNS text
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_started';
COMMENT ON FUNCTION batch_started IS
    'Says the job''s process runs (RUNNING). Returns the lease state: held, aborted (end it), lost.';
GRANT EXECUTE ON FUNCTION batch_started TO pgjobs_agent;

CREATE FUNCTION batch_heartbeat(ids bigint[], tokens uuid[], stderr text[] DEFAULT NULL,
                                stdout text[] DEFAULT NULL)
RETURNS TABLE (id bigint, lease_state text)
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_heartbeat';
COMMENT ON FUNCTION batch_heartbeat IS
    'Renews the leases of running batch jobs and keeps the tails of their output; one lease state per job.';
GRANT EXECUTE ON FUNCTION batch_heartbeat TO pgjobs_agent;

CREATE FUNCTION batch_finish(id bigint, token uuid, exit_code integer, run_time interval,
                             stderr text DEFAULT NULL, stdout text DEFAULT NULL,
                             cancelled boolean DEFAULT false)
RETURNS text
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_finish';
COMMENT ON FUNCTION batch_finish IS
    'Reports how a batch job''s process ended: exit code 0 is COMPLETED, any other (or null, a '
    'signal) ERROR, cancelled CANCEL. Returns the status, or lost if the token no longer holds the job.';
GRANT EXECUTE ON FUNCTION batch_finish TO pgjobs_agent;

CREATE FUNCTION batch_report_and_claim(
    computer text, n integer,
    started_ids bigint[] DEFAULT NULL, started_tokens uuid[] DEFAULT NULL,
    started_pids integer[] DEFAULT NULL,
    ids bigint[] DEFAULT NULL, tokens uuid[] DEFAULT NULL, exit_codes integer[] DEFAULT NULL,
    run_times interval[] DEFAULT NULL, stderr text[] DEFAULT NULL, stdout text[] DEFAULT NULL,
    cancelled boolean[] DEFAULT NULL)
RETURNS TABLE (report text, id bigint, state text, lease_token uuid, attempt integer, kind text,
               routine text, command text, args text[], cwd text, shell boolean, env jsonb,
               lease interval, owner text)
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_report_and_claim';
COMMENT ON FUNCTION batch_report_and_claim IS
    'One turn of an agent''s loop in one call: the jobs whose processes started (as batch_started), '
    'those that ended (as batch_finish) and up to n jobs claimed (as batch_claim; 0 for none). A row '
    'a job: report started (state: its lease state), finished (state: its status, or lost) or '
    'claimed (state held, and the job). A job whose row another transaction holds is reported busy '
    'and left as it was: say it again.';
GRANT EXECUTE ON FUNCTION batch_report_and_claim TO pgjobs_agent;

CREATE FUNCTION batch_hand_back(ids bigint[], tokens uuid[]) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'batch_hand_back';
COMMENT ON FUNCTION batch_hand_back IS
    'Gives batch jobs back that the agent will not finish (it is stopping): pending again, no '
    'attempt counted; a cancelled one ends as CANCEL.';
GRANT EXECUTE ON FUNCTION batch_hand_back TO pgjobs_agent;
