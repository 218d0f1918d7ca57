-- The lease queue: add, claim, heartbeat, complete, fail, abort, and what psql needs to look.
--
-- Every transition names the state it expects (and, for a worker, its lease token) in the
-- WHERE clause of the statement that makes it, so two transitions racing for one slice
-- serialise on its row lock and the loser finds its condition false. Lease times use
-- statement_timestamp(): a worker that heartbeats from a long transaction still renews from the
-- time of the call, not from when its transaction began.

-- Months are UTC months: a job's month in job_history is the UTC month of its due_at.
CREATE FUNCTION _utc_month(t timestamptz) RETURNS date
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (date_trunc('month', t, 'UTC') AT TIME ZONE 'UTC')::date;

CREATE FUNCTION _utc_midnight(d date) RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN d::timestamp AT TIME ZONE 'UTC';

-- What one job to add is; jobs_add's parameters, and the keys of jobs_add_batch's objects.
CREATE TYPE job_spec AS (
    task         text,
    payload      jsonb,
    queue        text,
    priority     integer,
    run_at       timestamptz,
    max_attempts integer,
    backoff      interval,
    max_backoff  interval,
    lease        interval,
    key          text,
    on_conflict  text
);

CREATE FUNCTION _invalid(message text, hint text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'invalid_parameter_value', MESSAGE = message,
        HINT = coalesce(hint, '');
END
$$;

-- The identity of the caller behind a ticket (see src/identity.rs).
CREATE FUNCTION _caller(ticket bigint) RETURNS oid
LANGUAGE sql
RETURN _identity_of(_redeem(ticket));

-- Proxies: registered by their root (who must be a member of the proxy role, so that nobody
-- takes over what another role creates) or by an administrator.
CREATE FUNCTION _jobs_add_proxy(ticket bigint, proxy regrole, root regrole) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    caller_role oid := _redeem(ticket);
    caller oid := _identity_of(caller_role);
    admin boolean := _is_admin(caller_role);
    new_root oid := coalesce(root::oid, caller);
    current_root oid;
BEGIN
    IF proxy IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed', MESSAGE = 'proxy must name a role';
    END IF;
    IF new_root <> caller AND NOT admin THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = 'only an administrator may register a proxy for another identity';
    END IF;
    IF NOT admin AND NOT pg_has_role(caller_role, proxy::oid, 'MEMBER') THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = format('you must be a member of role %s to register it as your proxy', proxy),
            HINT = format('An administrator can run GRANT %s TO %s.', proxy, caller_role::regrole);
    END IF;
    IF proxy::oid = new_root OR EXISTS (SELECT FROM proxies p WHERE p.proxy = new_root) THEN
        PERFORM _invalid(format('%s cannot act for %s: a root identity cannot be a proxy', proxy, new_root::regrole));
    END IF;
    IF _is_admin(proxy::oid) OR EXISTS (SELECT FROM proxies p WHERE p.root = _jobs_add_proxy.proxy::oid) THEN
        PERFORM _invalid(format('%s cannot be a proxy: it is a superuser or has proxies of its own', proxy));
    END IF;
    SELECT p.root INTO current_root FROM proxies p WHERE p.proxy = _jobs_add_proxy.proxy::oid;
    IF current_root IS NOT NULL AND current_root <> new_root THEN
        RAISE EXCEPTION USING ERRCODE = 'unique_violation',
            MESSAGE = format('%s is already a proxy of another identity', proxy),
            HINT = 'Its root (or an administrator) must remove it first.';
    END IF;
    INSERT INTO proxies (proxy, root, created_by) VALUES (proxy, new_root, caller_role)
    ON CONFLICT ON CONSTRAINT proxies_pkey DO NOTHING;
END
$$;

CREATE FUNCTION jobs_add_proxy(proxy regrole, root regrole DEFAULT NULL) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT _jobs_add_proxy(_ticket(), proxy, root);
END;
COMMENT ON FUNCTION jobs_add_proxy IS
    'Registers a role as acting for a root identity (default: the caller''s): what it creates is '
    'the root''s, and it sees what the root sees.';

CREATE FUNCTION _jobs_remove_proxy(ticket bigint, proxy regrole) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    caller_role oid := _redeem(ticket);
    caller oid := _identity_of(caller_role);
BEGIN
    DELETE FROM proxies p
    WHERE p.proxy = _jobs_remove_proxy.proxy::oid AND (p.root = caller OR _is_admin(caller_role));
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'no_data_found',
            MESSAGE = format('%s is not a proxy of yours', proxy);
    END IF;
END
$$;

CREATE FUNCTION jobs_remove_proxy(proxy regrole) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT _jobs_remove_proxy(_ticket(), proxy);
END;
COMMENT ON FUNCTION jobs_remove_proxy IS 'Ends a proxy: from its next statement on it sees nothing of its root''s.';

-- What is wrong with a job to add, as {SQLSTATE, message, hint}, or null. Plain SQL, inlined
-- into the query that checks a whole batch at once. The reserved queues pg_jobs.* take only SQL
-- jobs (`sql_job`), and keys starting scheduled_job: are the scheduler's (`scheduled`): a member
-- who took the key of its own next slot in an open transaction would make the launcher wait.
CREATE FUNCTION _spec_problem(spec job_spec, sql_job boolean, scheduled boolean) RETURNS text[]
LANGUAGE sql STABLE
RETURN CASE
    WHEN spec.task IS NULL THEN
        ARRAY['22004', 'task must not be null', 'Name the task that a worker will run, for example ''send_email''.']
    WHEN spec.task = '' THEN ARRAY['22023', 'task must not be empty', NULL]
    WHEN spec.queue = '' THEN ARRAY['22023', 'queue must not be empty', 'Leave it out to use the queue ''default''.']
    WHEN spec.queue LIKE 'pg\_jobs.%' AND NOT sql_job THEN
        ARRAY['22023', format('queue %s is reserved for the extension', spec.queue), 'Add SQL jobs with jobs_add_sql.']
    WHEN spec.max_attempts < 1 THEN
        ARRAY['22023', format('max_attempts must be at least 1, not %s', spec.max_attempts), NULL]
    WHEN spec.backoff < '0' OR spec.max_backoff < '0' THEN
        ARRAY['22023', 'backoff and max_backoff must not be negative', NULL]
    WHEN spec.lease <= '0' THEN
        ARRAY['22023', format('lease must be positive, not %s', spec.lease),
              'A lease is how long a worker may hold the job without a heartbeat, for example ''60 seconds''.']
    WHEN spec.on_conflict NOT IN ('skip', 'replace') THEN
        ARRAY['22023', format('unknown conflict rule "%s"', spec.on_conflict),
              'on_conflict is skip (keep the first job with the key) or replace (replace the job still waiting).']
    WHEN spec.key = '' THEN
        ARRAY['22023', 'key must not be empty', 'Leave it out (null) for a job without a key.']
    WHEN spec.key LIKE 'scheduled\_job:%' AND NOT scheduled THEN
        ARRAY['22023', format('key %s is reserved for the scheduler', spec.key),
              'Keys starting scheduled_job: name the slots of schedules; choose another prefix.']
END;

-- Raises what _spec_problem found, if anything; `at` says which job of a batch it was.
CREATE FUNCTION _refuse(problem text[], at text DEFAULT '') RETURNS void
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
BEGIN
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = problem[1], MESSAGE = problem[2] || at, HINT = coalesce(problem[3], '');
    END IF;
END
$$;

-- Finishes jobs: removes each given job's slice from `slices` where it is in one of the
-- `expected` statuses (and leased by the given token, when tokens are given) and the caller may
-- act on it, and moves it, with the job it ends, to job_history, all in one statement. Returns
-- the ids of the jobs finished, in no order; the caller compares them with what it asked for.
-- An error joins the slice's log of errors and is a failed job's result. A slice aborted while
-- leased finishes as aborted. A null caller is the extension itself, which acts on any job.
--
-- How the queue's functions are planned:
-- - They force generic plans: priced with their array arguments, the custom plans of these CTEs
--   looked cheaper than the generic ones, so PL/pgSQL planned every statement on every call, a
--   third of a worker's time per job. And no JIT: a generic plan prices LIMIT n as a tenth of
--   the queue, which with a million queued passed jit_above_cost and compiled the claim (10 ms)
--   on every call.
-- - Those that find rows by the ids they are given turn seq scans and hash joins off: with a
--   batch of ids the planner, pricing every index probe as a disk read, chose to hash the batch
--   and scan the whole table (1 ms for 100 jobs of 10,000 queued, growing with the queue),
--   where 100 probes of a primary key in memory take 0.1 ms.
CREATE FUNCTION _finish(ids bigint[], tokens uuid[], expected job_status[], outcome job_status,
                        caller oid, results jsonb[] DEFAULT NULL, errors text[] DEFAULT NULL)
RETURNS bigint[]
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
SET enable_hashjoin = off
AS $$
DECLARE
    anyone boolean := caller IS NULL OR _is_admin(caller);
    finished bigint[];
BEGIN
    WITH given AS (
        SELECT * FROM unnest(ids, tokens, results, _finish.errors) AS g(job_id, token, result, error)
    ), s AS (
        DELETE FROM slices s USING given g
        WHERE s.job_id = g.job_id AND s.status = ANY (expected)
          AND (tokens IS NULL OR s.lease_token = g.token) AND (s.owner = caller OR anyone)
        RETURNING s.job_id, s.status, s.attempt, s.payload, s.errors, s.locked_by, g.result, g.error
    ), j AS (
        DELETE FROM jobs j USING s WHERE j.id = s.job_id
        RETURNING j.*, s.status AS slice_status, s.attempt, s.payload, s.errors AS slice_errors,
                  s.locked_by, s.result, s.error
    ), freed_keys AS (
        DELETE FROM job_keys k USING j
        WHERE j.key_rule = 'replace' AND k.owner = j.owner AND k.idempotency_key = j.idempotency_key
          AND k.job_id = j.id
    ), archived AS (
        INSERT INTO job_history (
            id, opaque_id, owner, status, task, queue, priority, payload, result, errors, attempts,
            max_attempts, idempotency_key, key_rule, locked_by, due_at, start_time, end_time,
            name, description, link, listed)
        SELECT j.id, j.opaque_id, j.owner, f.final, j.task, j.queue, j.priority, j.payload,
               CASE WHEN f.final = 'failed' AND j.error IS NOT NULL
                    THEN jsonb_build_object('error', j.error) ELSE j.result END,
               CASE WHEN j.error IS NULL THEN j.slice_errors
                    ELSE j.slice_errors || jsonb_build_object('attempt', j.attempt,
                                                              'at', statement_timestamp(), 'error', j.error) END,
               j.attempt, j.max_attempts, j.idempotency_key, j.key_rule, j.locked_by,
               j.due_at, j.start_time, statement_timestamp(), j.name, j.description, j.link, j.listed
        FROM j, LATERAL (SELECT CASE WHEN j.slice_status = 'aborted' THEN 'aborted' ELSE outcome END AS final) f
        RETURNING id
    )
    SELECT array_agg(a.id) INTO finished FROM archived a;
    RETURN finished;
END
$$;

-- Raises the error that explains why `token` does not hold the lease on job `job`. A job the
-- caller may not act on is reported as missing, so that nobody learns others' job ids.
-- A null caller is the extension itself.
CREATE FUNCTION _lease_error(job bigint, token uuid, caller oid) RETURNS void
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    admin boolean := caller IS NULL OR _is_admin(caller);
    live slices;
    done job_history;
BEGIN
    IF job IS NULL OR token IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
            MESSAGE = 'job id and lease token must not be null';
    END IF;
    SELECT * INTO live FROM slices s WHERE s.job_id = job AND (s.owner = caller OR admin);
    IF FOUND AND live.status = 'aborted' AND live.lease_token = token THEN
        RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = format('job %s was aborted', job),
            HINT = 'Roll back the job''s work and report it with jobs_fail, or let the lease run out.';
    ELSIF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = format('lease on job %s is not held by this token', job),
            DETAIL = format('The job is %s, attempt %s of it%s.', live.status, live.attempt,
                            CASE WHEN live.locked_by IS NULL THEN ''
                                 ELSE ', last claimed by ' || live.locked_by END),
            HINT = 'The lease may have run out and the job been requeued; roll back this attempt''s work.';
    END IF;
    SELECT * INTO done FROM job_history h WHERE h.id = job AND (h.owner = caller OR admin);
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'object_not_in_prerequisite_state',
            MESSAGE = format('lease on job %s is not held by this token', job),
            DETAIL = format('The job has finished: %s after %s attempts.', done.status, done.attempts),
            HINT = 'Roll back this attempt''s work; the job needs nothing more.';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'no_data_found',
        MESSAGE = format('job %s does not exist', job);
END
$$;

-- What is wrong with the arrays of a batch report (`payloads`: how many results or errors it
-- has, if any), as _spec_problem says it, or null. Plain SQL, inlined: the check costs nothing
-- on the way of every completion.
CREATE FUNCTION _batch_problem(ids bigint[], tokens uuid[], payloads integer) RETURNS text[]
LANGUAGE sql IMMUTABLE
RETURN CASE
    WHEN ids IS NULL OR tokens IS NULL OR cardinality(ids) <> cardinality(tokens)
         OR payloads <> cardinality(ids) THEN
        ARRAY['22023', 'ids, tokens and results (or errors) must be arrays of one length',
              'Pass the i-th job''s id, lease token and result at position i of each array.']
END;

-- Raises the error of a batch report that did not apply to every job it named (`reported`
-- are those it did apply to): a repeated id, else the first job whose lease the token does
-- not hold. Looked for only then, so that a report that applies pays for no checks.
CREATE FUNCTION _batch_error(ids bigint[], tokens uuid[], reported bigint[], caller oid) RETURNS void
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    stale record;
BEGIN
    IF EXISTS (SELECT FROM unnest(ids) i WHERE i IS NOT NULL GROUP BY i HAVING count(*) > 1) THEN
        PERFORM _invalid('ids must not repeat a job');
    END IF;
    SELECT g.job_id, g.token INTO stale
    FROM unnest(ids, tokens) AS g(job_id, token)
    WHERE g.job_id IS NULL OR g.job_id <> ALL (coalesce(reported, '{}'))
    LIMIT 1;
    PERFORM _lease_error(stale.job_id, stale.token, caller);
END
$$;

-- What a NOTIFY on channel pgjobs_ready says when a queue with no ready job gets one. Anyone
-- may LISTEN (PostgreSQL checks no privilege there), so it is not the queue's name but a number
-- only the queue's identity can ask for (jobs_ready_signal): a keyed hash of the identity and
-- the queue, with a key made at installation that no member can read.
CREATE TABLE ready_signal_key (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    key       bytea NOT NULL
);
INSERT INTO ready_signal_key (key) VALUES (uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));

CREATE FUNCTION _ready_signal(claimable_by oid, queue text) RETURNS text
LANGUAGE sql STABLE
SET search_path = @extschema@, pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT left(encode(sha256(k.key || convert_to(claimable_by::text || '/' || queue, 'UTF8')), 'hex'), 16)
    FROM ready_signal_key k;
END;

CREATE FUNCTION _jobs_ready_signal(ticket bigint, queue text) RETURNS text
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
RETURN _ready_signal(_caller(ticket), queue);

CREATE FUNCTION jobs_ready_signal(queue text DEFAULT 'default') RETURNS text
LANGUAGE sql
RETURN _jobs_ready_signal(_ticket(), queue);
COMMENT ON FUNCTION jobs_ready_signal IS
    'The payload of the NOTIFY on channel pgjobs_ready that says ready work arrived in one of the '
    'caller''s queues: compare it with the payloads a LISTENing worker receives.';

-- The error an expired lease records, in the slice's log of errors and as a failed job's result.
CREATE FUNCTION _lease_expired(worker text) RETURNS text
LANGUAGE sql STABLE
RETURN format('lease expired: worker %s stopped renewing it', worker);

-- Expired leases: a slice whose worker stopped renewing is requeued, its attempt counted; one
-- that used its last attempt, or was aborted, finishes. Locked rows are skipped, so a worker
-- completing right now is never overwritten, and an owner holding its job's row (a change of
-- its public fields in an open transaction) delays only that job's rescue, not everyone's.
CREATE FUNCTION _rescue_expired() RETURNS integer
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
-- See the note above _finish.
SET enable_seqscan = off
SET enable_hashjoin = off
AS $$
DECLARE
    woken text[];
    requeued integer;
    finals bigint[];
BEGIN
    WITH expired AS (
        SELECT s.job_id, s.slice_number
        FROM slices s JOIN jobs j ON j.id = s.job_id
        WHERE s.status = 'started' AND s.locked_until < statement_timestamp()
          AND s.attempt < j.max_attempts
        FOR UPDATE OF s SKIP LOCKED
    ), requeue AS (
        UPDATE slices s
        SET status = 'created', lease_token = NULL, locked_until = NULL,
            run_at = statement_timestamp(),
            errors = s.errors || jsonb_build_object(
                'attempt', s.attempt, 'at', statement_timestamp(),
                'error', _lease_expired(s.locked_by))
        FROM expired e
        WHERE s.job_id = e.job_id AND s.slice_number = e.slice_number
        RETURNING s.claimable_by, s.queue
    )
    SELECT count(*), array_agg(DISTINCT _ready_signal(r.claimable_by, r.queue)) INTO requeued, woken
    FROM requeue r;
    IF woken IS NOT NULL THEN
        PERFORM pg_notify('pgjobs_ready', q) FROM unnest(woken) q;
    END IF;

    SELECT _finish(array_agg(e.job_id), array_agg(e.lease_token), '{started,aborted}', 'failed',
                   NULL, NULL, array_agg(_lease_expired(e.locked_by)))
    INTO finals
    FROM (SELECT s.job_id, s.lease_token, s.locked_by
          FROM slices s JOIN jobs j ON j.id = s.job_id
          WHERE s.status IN ('started', 'aborted') AND s.locked_until < statement_timestamp()
            AND (s.status = 'aborted' OR s.attempt >= j.max_attempts)
          FOR UPDATE OF s, j SKIP LOCKED) e;
    RETURN requeued + coalesce(cardinality(finals), 0);
END
$$;

-- Adds jobs for `owner`. `sql_jobs`: SQL jobs may be among them; `scheduled`: they are the
-- slots of schedules, with the scheduler's keys.
CREATE FUNCTION _add(specs job_spec[], owner oid, sql_jobs boolean, scheduled boolean)
RETURNS SETOF bigint
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
-- See the note above _finish.
SET enable_seqscan = off
SET enable_hashjoin = off
AS $$
DECLARE
    -- Read once, not once per job: each read parses the setting's text.
    default_max_attempts integer := current_setting('pg_jobs.max_attempts');
    default_backoff interval := current_setting('pg_jobs.backoff');
    default_max_backoff interval := current_setting('pg_jobs.max_backoff');
    default_lease interval := current_setting('pg_jobs.lease');
    refused record;
    -- The id of each job of the batch, in its order; null where its key was taken.
    ids bigint[];
    taken bigint;
    woken text[];
    contested record;
BEGIN
    SELECT p.ord, p.problem INTO refused
    FROM (SELECT u.ord, _spec_problem(ROW(u.task, u.payload, u.queue, u.priority, u.run_at, u.max_attempts,
                                          u.backoff, u.max_backoff, u.lease, u.key, u.on_conflict)::job_spec,
                                      sql_jobs, scheduled) AS problem
          FROM unnest(specs) WITH ORDINALITY AS u(task, payload, queue, priority, run_at, max_attempts,
                                                  backoff, max_backoff, lease, key, on_conflict, ord)) p
    WHERE p.problem IS NOT NULL
    ORDER BY p.ord LIMIT 1;
    IF FOUND THEN
        PERFORM _refuse(refused.problem, CASE WHEN cardinality(specs) > 1
                                              THEN format(' (job %s of the batch)', refused.ord) ELSE '' END);
    END IF;

    -- One statement: the keys first, whose primary key decides which of two concurrent adds gets
    -- a key, then the jobs whose keys were free (or that have none) and their slices.
    -- unnest, not specs[i]: reaching element i of an array of composites walks the array from
    -- its start, which made a batch of 10,000 take seconds.
    WITH given AS (
        SELECT u.*, nextval('@extschema@.jobs_id_seq'::regclass) AS id,
               coalesce(u.run_at, statement_timestamp()) AS due_at
        FROM unnest(specs) WITH ORDINALITY AS u(task, payload, queue, priority, run_at, max_attempts,
                                                backoff, max_backoff, lease, key, on_conflict, ord)
    ), claimed AS (
        INSERT INTO job_keys (owner, idempotency_key, job_id, due_at)
        SELECT _add.owner, g.key, g.id, g.due_at FROM given g WHERE g.key IS NOT NULL ORDER BY g.ord
        ON CONFLICT DO NOTHING
        RETURNING job_id
    ), fresh AS (
        SELECT g.* FROM given g WHERE g.key IS NULL OR g.id IN (SELECT c.job_id FROM claimed c)
    ), new_jobs AS (
        INSERT INTO jobs (id, owner, task, queue, priority, max_attempts, backoff, max_backoff,
                          lease, idempotency_key, key_rule, due_at)
        SELECT f.id, _add.owner, f.task, coalesce(f.queue, 'default'), coalesce(f.priority, 0),
               coalesce(f.max_attempts, default_max_attempts),
               coalesce(f.backoff, default_backoff), coalesce(f.max_backoff, default_max_backoff),
               coalesce(f.lease, default_lease),
               f.key, CASE WHEN f.key IS NOT NULL THEN coalesce(f.on_conflict, 'skip')::key_rule END, f.due_at
        FROM fresh f
        RETURNING jobs.id, jobs.owner, jobs.queue, jobs.priority, jobs.due_at
    ), new_slices AS (
        INSERT INTO slices (job_id, owner, claimable_by, queue, priority, run_at, payload)
        SELECT n.id, n.owner, CASE WHEN n.queue LIKE 'pg\_jobs.%' THEN 0 ELSE n.owner END,
               n.queue, n.priority, n.due_at, coalesce(f.payload, '{}')
        FROM new_jobs n JOIN fresh f ON f.id = n.id
        RETURNING claimable_by, queue, run_at
    )
    SELECT (SELECT array_agg(CASE WHEN g.id IN (SELECT f.id FROM fresh f) THEN g.id END ORDER BY g.ord) FROM given g),
           (SELECT count(*) FROM given g WHERE g.id NOT IN (SELECT f.id FROM fresh f)),
           -- NOTIFY takes a lock that every notifying commit in the cluster waits for, so it is
           -- sent only where a worker may be asleep: a queue that a claim looked at since its
           -- last notification (_ready_wanted, in shared memory: src/queue.rs). Where no worker
           -- looked, workers are busy or already woken (and poll every pg_jobs.poll_interval
           -- regardless). An add reads nothing of the queue: that read went through every dead
           -- index entry a long transaction's snapshot kept, and slowed every add with it.
           (SELECT array_agg(_ready_signal(q.claimable_by, q.queue))
            FROM (SELECT DISTINCT s.claimable_by, s.queue FROM new_slices s WHERE s.run_at <= statement_timestamp()) q
            WHERE _ready_wanted(q.claimable_by, q.queue))
    INTO ids, taken, woken;
    IF woken IS NOT NULL THEN
        PERFORM pg_notify('pgjobs_ready', q) FROM unnest(woken) q;
    END IF;

    IF taken > 0 THEN
        -- A key that was taken: the statement above could not see a holder that committed while
        -- it waited on the key; this statement, with a new snapshot, can.
        FOR contested IN
            SELECT a.*, k.job_id AS holder
            FROM unnest(specs, ids) WITH ORDINALITY AS a(task, payload, queue, priority, run_at, max_attempts,
                                                         backoff, max_backoff, lease, key, on_conflict, id, ord)
            JOIN job_keys k ON k.owner = _add.owner AND k.idempotency_key = a.key
            WHERE a.id IS NULL
        LOOP
            ids[contested.ord] := contested.holder;
            CONTINUE WHEN contested.on_conflict IS DISTINCT FROM 'replace';
            WITH waiting AS (
                UPDATE slices s
                SET payload = coalesce(contested.payload, '{}'),
                    queue = coalesce(contested.queue, 'default'),
                    priority = coalesce(contested.priority, 0),
                    run_at = coalesce(contested.run_at, statement_timestamp())
                -- slice_number too: by job_id and status alone, a session that planned this
                -- before slices had statistics scanned all of slices_ready (job_id is its last
                -- column) per replaced job, 49 s for a batch of 10,000.
                WHERE s.job_id = contested.holder AND s.slice_number = 1 AND s.status = 'created'
                  AND s.owner = _add.owner
                RETURNING s.job_id, s.queue, s.priority
            )
            UPDATE jobs j
            SET task = contested.task, queue = w.queue, priority = w.priority,
                max_attempts = coalesce(contested.max_attempts, j.max_attempts),
                backoff = coalesce(contested.backoff, j.backoff),
                max_backoff = coalesce(contested.max_backoff, j.max_backoff),
                lease = coalesce(contested.lease, j.lease),
                last_update = statement_timestamp()
            FROM waiting w WHERE j.id = w.job_id;
        END LOOP;
    END IF;

    RETURN QUERY SELECT a.id FROM unnest(ids) WITH ORDINALITY AS a(id, ord) ORDER BY a.ord;
END
$$;

CREATE FUNCTION _jobs_add(ticket bigint, spec job_spec) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
BEGIN
    RETURN (SELECT a FROM _add(ARRAY[spec], _caller(ticket), false, false) a);
END
$$;

CREATE FUNCTION jobs_add(
    task text,
    payload jsonb DEFAULT '{}',
    queue text DEFAULT 'default',
    priority integer DEFAULT 0,
    run_at timestamptz DEFAULT NULL,
    max_attempts integer DEFAULT NULL,
    backoff interval DEFAULT NULL,
    max_backoff interval DEFAULT NULL,
    lease interval DEFAULT NULL,
    key text DEFAULT NULL,
    on_conflict text DEFAULT 'skip'
) RETURNS bigint
LANGUAGE sql
-- An expression, not a query: the planner inlines it into the caller's statement.
RETURN _jobs_add(_ticket(), ROW(task, payload, queue, priority, run_at, max_attempts, backoff,
                                max_backoff, lease, key, on_conflict)::job_spec);
COMMENT ON FUNCTION jobs_add IS
    'Adds a job and returns its id; with a key already in use, returns the id of the job that holds it.';

CREATE FUNCTION _jobs_add_batch(ticket bigint, jobs jsonb) RETURNS SETOF bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
BEGIN
    IF jobs IS NULL OR jsonb_typeof(jobs) <> 'array' THEN
        PERFORM _invalid('jobs must be a JSON array of objects',
            'Each object takes the parameters of jobs_add: [{"task": "t", "payload": {}}, ...].');
    END IF;
    RETURN QUERY SELECT _add(ARRAY(
        SELECT jsonb_populate_record(NULL::job_spec, e.value) FROM jsonb_array_elements(jobs) e),
        _caller(ticket), false, false);
END
$$;

-- PL/pgSQL for the reason given at jobs_claim.
CREATE FUNCTION jobs_add_batch(jobs jsonb) RETURNS SETOF bigint
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN QUERY SELECT @extschema@._jobs_add_batch(@extschema@._ticket(), jobs);
END
$$;
COMMENT ON FUNCTION jobs_add_batch IS
    'Adds many jobs in one call and returns their ids in the order given.';

-- The claim itself, for every claimer: a worker claims what its identity may claim, and the
-- background worker claims the reserved queue of SQL jobs (claimable by 0, the extension).
CREATE FUNCTION _claim(worker text, queues text[], n integer, lease interval, claimant oid)
RETURNS TABLE (id bigint, attempt integer, lease_token uuid, task text, payload jsonb,
               locked_until timestamptz)
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
-- See the note above _finish.
SET enable_seqscan = off
SET enable_hashjoin = off
AS $$
BEGIN
    -- Before the claim reads the queues (in a statement of its own, so before the claim's
    -- snapshot): its worker may sleep on what it finds, so the next add notifies.
    PERFORM _ready_looking(claimant, queues);
    -- Almost always nothing has expired, and one index probe says so.
    IF EXISTS (SELECT FROM slices s WHERE s.status <> 'created' AND s.locked_until < statement_timestamp()) THEN
        PERFORM _rescue_expired();
    END IF;

    -- One index range per queue, read in index order: `queue = ANY (queues)` would make the
    -- planner sort every ready slice of those queues, which with a million queued is seconds.
    -- The chosen rows are then updated by ctid and their jobs joined by primary key, so that no
    -- plan can turn this into a scan of the table.
    RETURN QUERY
    WITH candidates AS (
        SELECT c.* FROM unnest(queues) AS q(queue), LATERAL (
            SELECT s.ctid AS tid, s.priority, s.run_at, s.job_id FROM slices s
            WHERE s.status = 'created' AND s.claimable_by = claimant AND s.queue = q.queue
              AND s.run_at <= statement_timestamp()
            ORDER BY s.priority, s.run_at, s.job_id
            LIMIT n
            FOR UPDATE SKIP LOCKED) c
    )
    UPDATE slices s
    SET status = 'started', attempt = s.attempt + 1, lease_token = gen_random_uuid(),
        locked_by = worker, begin_time = statement_timestamp(),
        locked_until = statement_timestamp() + coalesce(_claim.lease, j.lease)
    FROM jobs j
    WHERE s.ctid = ANY (ARRAY(SELECT c.tid FROM candidates c ORDER BY c.priority, c.run_at, c.job_id LIMIT n))
      AND j.id = s.job_id
    RETURNING s.job_id, s.attempt, s.lease_token, j.task::text, s.payload, s.locked_until;
END
$$;

CREATE FUNCTION _jobs_claim(ticket bigint, worker text, queues text[], n integer, lease interval)
RETURNS TABLE (id bigint, attempt integer, lease_token uuid, task text, payload jsonb,
               locked_until timestamptz)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
BEGIN
    IF worker IS NULL OR worker = '' THEN
        PERFORM _invalid('worker must name the claiming worker', 'Use a name unique to the process, such as host:pid.');
    END IF;
    IF queues IS NULL OR cardinality(queues) = 0 THEN
        PERFORM _invalid('queues must name at least one queue');
    END IF;
    IF EXISTS (SELECT FROM unnest(queues) q WHERE q LIKE 'pg\_jobs.%') THEN
        PERFORM _invalid('queues named pg_jobs.* are run by the extension''s background workers',
            'SQL jobs (jobs_add_sql) are claimed by pg_jobs itself.');
    END IF;
    IF n IS NULL OR n < 1 THEN
        PERFORM _invalid(format('n must be at least 1, not %s', coalesce(n::text, 'null')));
    END IF;
    IF lease <= '0' THEN
        PERFORM _invalid(format('lease must be positive, not %s', lease));
    END IF;
    RETURN QUERY SELECT * FROM _claim(worker, queues, n, lease, _caller(ticket));
END
$$;

-- This wrapper (like those of jobs_add_batch and jobs_complete_and_claim) is PL/pgSQL, which
-- keeps its plans: PostgreSQL 15 plans the body of a set-returning SQL function on every call.
-- Every name in them is qualified, as the caller's search_path is in force.
CREATE FUNCTION jobs_claim(
    worker text,
    queues text[] DEFAULT ARRAY['default'],
    n integer DEFAULT 1,
    lease interval DEFAULT NULL
) RETURNS TABLE (id bigint, attempt integer, lease_token uuid, task text, payload jsonb,
                 locked_until timestamptz)
LANGUAGE plpgsql
AS $$
BEGIN
    RETURN QUERY SELECT * FROM @extschema@._jobs_claim(@extschema@._ticket(), worker, queues, n, lease);
END
$$;
COMMENT ON FUNCTION jobs_claim IS
    'Claims up to n ready jobs of the caller''s identity in the given queues, by priority '
    '(lowest first) then age; expired leases are requeued first.';

CREATE FUNCTION _jobs_heartbeat(ticket bigint, id bigint, token uuid, lease interval,
                                OUT lease_state text, OUT locked_until timestamptz)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    job bigint := id;
    caller oid := _caller(ticket);
    admin boolean := _is_admin(caller);
    state job_status;
BEGIN
    IF lease <= '0' THEN
        PERFORM _invalid(format('lease must be positive, not %s', lease));
    END IF;
    UPDATE slices s
    SET locked_until = statement_timestamp() + coalesce(_jobs_heartbeat.lease, j.lease)
    FROM jobs j
    WHERE s.job_id = job AND j.id = job AND s.lease_token = token AND s.status IN ('started', 'aborted')
      AND (s.owner = caller OR admin)
    RETURNING s.status, s.locked_until INTO state, locked_until;
    IF FOUND THEN
        lease_state := CASE state WHEN 'aborted' THEN 'aborted' ELSE 'held' END;
        RETURN;
    END IF;
    IF job IS NULL OR token IS NULL THEN
        PERFORM _lease_error(job, token, caller);
    END IF;
    IF EXISTS (SELECT FROM slices s WHERE s.job_id = job AND (s.owner = caller OR admin))
       OR EXISTS (SELECT FROM job_history h WHERE h.id = job AND (h.owner = caller OR admin)) THEN
        lease_state := 'lost';
        locked_until := NULL;
        RETURN;
    END IF;
    PERFORM _lease_error(job, token, caller);
END
$$;

CREATE FUNCTION jobs_heartbeat(id bigint, token uuid, lease interval DEFAULT NULL,
                               OUT lease_state text, OUT locked_until timestamptz)
LANGUAGE sql
BEGIN ATOMIC
    SELECT * FROM _jobs_heartbeat(_ticket(), id, token, lease);
END;
COMMENT ON FUNCTION jobs_heartbeat IS
    'Renews a lease. lease_state: held (keep working), aborted (stop, roll back, report with '
    'jobs_fail), lost (another worker holds the job or it has finished: roll back).';

CREATE FUNCTION _jobs_complete(ticket bigint, ids bigint[], tokens uuid[], results jsonb[])
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
-- See the note above _finish.
SET enable_seqscan = off
SET enable_hashjoin = off
AS $$
DECLARE
    caller oid := _caller(ticket);
    done bigint[];
BEGIN
    IF _batch_problem(ids, tokens, cardinality(results)) IS NOT NULL THEN
        PERFORM _refuse(_batch_problem(ids, tokens, cardinality(results)));
    END IF;
    done := _finish(ids, tokens, '{started}', 'completed', caller, results);
    IF coalesce(cardinality(done), 0) <> cardinality(ids) THEN
        PERFORM _batch_error(ids, tokens, done, caller);
    END IF;
END
$$;

CREATE FUNCTION jobs_complete(ids bigint[], tokens uuid[], results jsonb[] DEFAULT NULL)
RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT _jobs_complete(_ticket(), ids, tokens, results);
END;

CREATE FUNCTION jobs_complete(id bigint, token uuid, result jsonb DEFAULT NULL) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT _jobs_complete(_ticket(), ARRAY[id], ARRAY[token], ARRAY[result]);
END;
COMMENT ON FUNCTION jobs_complete(bigint, uuid, jsonb) IS
    'Completes a job whose lease this token holds, in the caller''s transaction.';

-- One round trip per job for a worker that completes as it claims: the finished jobs and the
-- next claim commit together.
CREATE FUNCTION jobs_complete_and_claim(
    ids bigint[],
    tokens uuid[],
    results jsonb[],
    worker text,
    queues text[] DEFAULT ARRAY['default'],
    n integer DEFAULT 1,
    lease interval DEFAULT NULL
) RETURNS TABLE (id bigint, attempt integer, lease_token uuid, task text, payload jsonb,
                 locked_until timestamptz)
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM @extschema@._jobs_complete(@extschema@._ticket(), ids, tokens, results);
    RETURN QUERY SELECT * FROM @extschema@._jobs_claim(@extschema@._ticket(), worker, queues, n, lease);
END
$$;
COMMENT ON FUNCTION jobs_complete_and_claim IS
    'Completes jobs (empty arrays for none) and claims the next ones, in one call and one transaction.';

CREATE FUNCTION _jobs_fail(ticket bigint, ids bigint[], tokens uuid[], errors text[]) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
-- See the note above _finish.
SET enable_seqscan = off
SET enable_hashjoin = off
AS $$
DECLARE
    caller oid := _caller(ticket);
    admin boolean := _is_admin(caller);
    retried bigint[];
    done bigint[];
BEGIN
    IF _batch_problem(ids, tokens, cardinality(errors)) IS NOT NULL THEN
        PERFORM _refuse(_batch_problem(ids, tokens, cardinality(errors)));
    END IF;

    -- Attempts left: back to created, due after the backoff.
    WITH given AS (
        SELECT * FROM unnest(ids, tokens, _jobs_fail.errors) AS g(job_id, token, error)
    ), retry AS (
        UPDATE slices s
        SET status = 'created', lease_token = NULL, locked_until = NULL,
            run_at = statement_timestamp() + make_interval(secs => retry_delay_seconds(
                s.attempt, extract(epoch FROM j.backoff)::float8,
                extract(epoch FROM j.max_backoff)::float8)),
            errors = s.errors || jsonb_build_object(
                'attempt', s.attempt, 'at', statement_timestamp(), 'error', g.error)
        FROM given g, jobs j
        WHERE s.job_id = g.job_id AND j.id = g.job_id AND s.lease_token = g.token
          AND s.status = 'started' AND s.attempt < j.max_attempts AND (s.owner = caller OR admin)
        RETURNING s.job_id
    )
    SELECT array_agg(r.job_id) INTO retried FROM retry r;

    -- Last attempt used, or aborted meanwhile: finished. (The retried are no longer leased.)
    done := _finish(ids, tokens, '{started,aborted}', 'failed', caller, NULL, errors);
    IF coalesce(cardinality(retried), 0) + coalesce(cardinality(done), 0) <> cardinality(ids) THEN
        PERFORM _batch_error(ids, tokens, retried || done, caller);
    END IF;
END
$$;

CREATE FUNCTION jobs_fail(ids bigint[], tokens uuid[], errors text[]) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT _jobs_fail(_ticket(), ids, tokens, errors);
END;

CREATE FUNCTION jobs_fail(id bigint, token uuid, error text) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT _jobs_fail(_ticket(), ARRAY[id], ARRAY[token], ARRAY[error]);
END;
COMMENT ON FUNCTION jobs_fail(bigint, uuid, text) IS
    'Reports a failed attempt: retried after backoff × 2^(attempt-1), capped at max_backoff, '
    'until max_attempts; then failed, with result {"error": error}.';

CREATE FUNCTION _jobs_abort(ticket bigint, id bigint) RETURNS job_status
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
DECLARE
    job bigint := id;
    caller oid := _caller(ticket);
    admin boolean := _is_admin(caller);
    live job_status;
    outcome job_status;
BEGIN
    IF job IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed', MESSAGE = 'job id must not be null';
    END IF;
    -- Decided from the locked row: a failure, a rescue or a completion committing meanwhile is
    -- waited for and then seen (a requeued job is aborted at once, a finished one reported as it
    -- ended), never mistaken for a job that does not exist.
    SELECT s.status INTO live FROM slices s
    WHERE s.job_id = job AND (s.owner = caller OR admin)
    FOR UPDATE;
    IF live = 'created' THEN
        PERFORM _finish(ARRAY[job], NULL, '{created}', 'aborted', caller);
        RETURN 'aborted';
    ELSIF FOUND THEN
        UPDATE slices s SET status = 'aborted' WHERE s.job_id = job;
        -- A SQL job is stopped as soon as the abort commits: its statement is cancelled and its
        -- transaction rolls back.
        PERFORM _cancel_sql_job(job);
        RETURN 'aborted';
    END IF;

    SELECT h.status INTO outcome FROM job_history h WHERE h.id = job AND (h.owner = caller OR admin);
    IF FOUND THEN
        RETURN outcome;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'no_data_found', MESSAGE = format('job %s does not exist', job);
END
$$;

CREATE FUNCTION jobs_abort(id bigint) RETURNS job_status
LANGUAGE sql
BEGIN ATOMIC
    SELECT _jobs_abort(_ticket(), id);
END;
COMMENT ON FUNCTION jobs_abort IS
    'Aborts a job: a waiting one at once, a running one at its worker''s next heartbeat. '
    'Returns the job''s status afterwards (completed or failed if it had already finished).';

-- Every job, live or finished, in one shape. jobs' domain-typed columns are cast to the base types
-- job_history has: the planner flattens a UNION ALL into one append of its two scans only when
-- their column types are the same (reads were 5 % more work without the casts). No opaque_id:
-- members may not read that column (see the grants in 001_schema.sql); job_opaque_ids has it.
CREATE VIEW job_list WITH (security_invoker = true) AS
SELECT j.id, j.owner::regrole AS owner, s.status, j.task::text, j.queue::text, j.priority,
       s.payload, NULL::jsonb AS result, s.errors, s.attempt, j.max_attempts::integer, s.run_at,
       j.idempotency_key, j.key_rule, s.locked_by, s.locked_until, j.due_at, j.start_time,
       NULL::timestamptz AS end_time
FROM jobs j JOIN slices s ON s.job_id = j.id
UNION ALL
SELECT h.id, h.owner::regrole, h.status, h.task, h.queue, h.priority, h.payload,
       h.result, h.errors, h.attempts, h.max_attempts, NULL, h.idempotency_key, h.key_rule,
       h.locked_by, NULL, h.due_at, h.start_time, h.end_time
FROM job_history h;
COMMENT ON VIEW job_list IS 'Live jobs (created, started, aborting) and finished ones together.';

-- A count of rows to take or skip, refused when negative.
CREATE FUNCTION _row_count(n integer, name text) RETURNS integer
LANGUAGE plpgsql IMMUTABLE
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
BEGIN
    IF n < 0 THEN
        PERFORM _invalid(format('%s must not be negative', name));
    END IF;
    RETURN n;
END
$$;

-- SQL without a SET clause, so that it is inlined into the caller's query and planned with its
-- arguments; as PL/pgSQL it cost as much again as the query it runs.
CREATE FUNCTION jobs_find(
    status job_status DEFAULT NULL,
    queue text DEFAULT NULL,
    key text DEFAULT NULL,
    search text DEFAULT NULL,
    month date DEFAULT NULL,
    limit_rows integer DEFAULT 100,
    offset_rows integer DEFAULT 0
) RETURNS SETOF job_list
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT l.* FROM job_list l
    WHERE (jobs_find.status IS NULL OR l.status = jobs_find.status)
      AND (jobs_find.queue IS NULL OR l.queue = jobs_find.queue)
      AND (jobs_find.key IS NULL OR l.idempotency_key = jobs_find.key)
      AND (jobs_find.month IS NULL OR _utc_month(l.due_at) = date_trunc('month', jobs_find.month)::date)
      AND (jobs_find.search IS NULL OR l.task ILIKE '%' || jobs_find.search || '%'
           OR l.idempotency_key ILIKE '%' || jobs_find.search || '%'
           OR l.payload::text ILIKE '%' || jobs_find.search || '%'
           OR l.result::text ILIKE '%' || jobs_find.search || '%')
    ORDER BY l.id DESC
    LIMIT _row_count(limit_rows, 'limit_rows') OFFSET _row_count(offset_rows, 'offset_rows');
END;
COMMENT ON FUNCTION jobs_find IS
    'Finds jobs, newest first, by status, queue, key, month due, and text in task, key, payload or result.';

CREATE FUNCTION jobs_counts(month date DEFAULT NULL)
RETURNS TABLE (queue text, status job_status, jobs bigint)
LANGUAGE sql STABLE
SET search_path = @extschema@, pg_catalog, pg_temp
BEGIN ATOMIC
    SELECT c.queue, c.status, count(*)
    FROM (SELECT s.queue, s.status FROM slices s
          UNION ALL
          SELECT h.queue, h.status FROM job_history h
          WHERE _utc_month(h.due_at) = coalesce(date_trunc('month', month)::date, _utc_month(now()))) c
    GROUP BY c.queue, c.status
    ORDER BY c.queue, c.status;
END;
COMMENT ON FUNCTION jobs_counts IS
    'Jobs per queue and status: every live job, and the finished jobs due in the given month (default: this one).';

-- Months of history: one partition job_history_YYYYMM per UTC month.

CREATE FUNCTION jobs_history_months()
RETURNS TABLE (month date, partition regclass, jobs bigint)
LANGUAGE plpgsql STABLE
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    part record;
BEGIN
    FOR part IN
        SELECT c.oid::regclass AS rel, c.relname
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = '@extschema@.job_history'::regclass
        ORDER BY c.relname
    LOOP
        month := CASE WHEN part.relname ~ '^job_history_[0-9]{6}$'
                      THEN to_date(right(part.relname, 6), 'YYYYMM') END;
        partition := part.rel;
        EXECUTE format('SELECT count(*) FROM %s', part.rel) INTO jobs;
        RETURN NEXT;
    END LOOP;
END
$$;
COMMENT ON FUNCTION jobs_history_months IS
    'The months of job_history, each with its partition and job count; month is null for the '
    'partition that catches jobs due in a month that has none yet.';

-- The indexes of one month of job_history (or of its catch-all partition). Made on each
-- partition, not on job_history: pg_dump writes a month (an ordinary table) and attaches it
-- before it makes the month's indexes, and an index on the extension's job_history would make
-- them at the attach, so that the restore failed on the dump's own.
CREATE FUNCTION _index_history(part regclass) RETURNS void
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    columns text;
BEGIN
    FOREACH columns IN ARRAY ARRAY['id', 'opaque_id', 'owner', 'status, queue'] LOOP
        EXECUTE format('CREATE INDEX ON %s (%s)', part, columns);
    END LOOP;
END
$$;
SELECT _index_history('job_history_other');

CREATE FUNCTION jobs_history_prepare(months_ahead integer DEFAULT 3) RETURNS SETOF regclass
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    this_month date := _utc_month(now());
    m date;
    part text;
    made regclass;
    month_start timestamptz;
    month_end timestamptz;
BEGIN
    IF months_ahead IS NULL OR months_ahead < 0 OR months_ahead > 120 THEN
        PERFORM _invalid('months_ahead must be between 0 and 120');
    END IF;
    FOR m IN SELECT g.month FROM generate_series(this_month - interval '1 month',
                                                 this_month + make_interval(months => months_ahead),
                                                 interval '1 month') AS g(month)
             WHERE to_regclass('@extschema@.job_history_' || to_char(g.month, 'YYYYMM')) IS NULL
    LOOP
        part := 'job_history_' || to_char(m, 'YYYYMM');
        -- Jobs finishing now wait until the month is attached: an insert routed to the default
        -- partition before the attach would fail its new constraint after it (23514). Readers
        -- do not wait.
        LOCK TABLE @extschema@.job_history IN SHARE ROW EXCLUSIVE MODE;
        CONTINUE WHEN to_regclass('@extschema@.' || part) IS NOT NULL;
        month_start := _utc_midnight(m);
        month_end := _utc_midnight((m + interval '1 month')::date);
        -- Jobs of this month already in the catch-all partition move into the new one.
        EXECUTE format('CREATE TABLE @extschema@.%I (LIKE @extschema@.job_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part);
        made := ('@extschema@.' || part)::regclass;
        EXECUTE format(
            'WITH moved AS (DELETE FROM @extschema@.job_history_other WHERE due_at >= %L AND due_at < %L RETURNING *) '
            'INSERT INTO @extschema@.%I SELECT * FROM moved',
            month_start, month_end, part);
        PERFORM _index_history(made);
        EXECUTE format('ALTER TABLE @extschema@.job_history ATTACH PARTITION @extschema@.%I FOR VALUES FROM (%L) TO (%L)',
                       part, month_start, month_end);
        RETURN NEXT made;
    END LOOP;
END
$$;
COMMENT ON FUNCTION jobs_history_prepare IS
    'Makes the partitions of job_history from last month to months_ahead months ahead.';

CREATE FUNCTION jobs_history_drop(before date) RETURNS SETOF date
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    m record;
BEGIN
    IF before IS NULL OR before > _utc_month(now()) THEN
        PERFORM _invalid(format('cannot drop history before %s: it includes the current month',
                                coalesce(to_char(before, 'YYYY-MM-DD'), 'null')),
            'Only months before the current one can be dropped, for example '
            'jobs_history_drop((now() - interval ''6 months'')::date).');
    END IF;
    FOR m IN SELECT * FROM jobs_history_months() h
             WHERE h.month IS NOT NULL AND h.month + interval '1 month' <= before ORDER BY h.month
    LOOP
        -- Keys of finished skip-jobs are remembered as long as their month is.
        DELETE FROM job_keys k
        WHERE _utc_month(k.due_at) = m.month
          AND NOT EXISTS (SELECT FROM jobs j WHERE j.id = k.job_id);
        EXECUTE format('DROP TABLE %s', m.partition);
        RETURN NEXT m.month;
    END LOOP;
END
$$;
COMMENT ON FUNCTION jobs_history_drop IS
    'Drops the months of job_history that end on or before the given date; returns the months dropped.';

-- Internal pieces are not for callers.
-- Who may call what is granted once, at the end of the last file (003_scheduler.sql).
