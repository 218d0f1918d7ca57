-- The background worker's side: SQL jobs, cron schedules, the launcher's heartbeat and its tick.
--
-- The launcher (src/bgworker.rs) calls _launcher_tick() in a transaction of its own, then hands
-- ready SQL jobs to dynamic workers. Everything it does is SQL here, so a regression test can
-- drive a tick at a chosen time and see exactly what it would do.

-- SQL jobs -------------------------------------------------------------------------------------

CREATE FUNCTION _jobs_add_sql(ticket bigint, sql text, run_at timestamptz, priority integer,
    max_attempts integer, backoff interval, max_backoff interval, timeout interval, key text,
    on_conflict text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    id bigint;
BEGIN
    IF sql IS NULL OR btrim(sql) = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed', MESSAGE = 'sql must not be empty',
            HINT = 'Pass the statements the job runs, for example ''VACUUM ANALYZE orders''.';
    END IF;
    PERFORM _check_timeout(timeout);
    -- The lease outlives the statement timeout, so a slow job is cancelled before anyone else
    -- could take it.
    SELECT a INTO id FROM _add(ARRAY[ROW(
        'sql', jsonb_build_object('sql', sql, 'timeout_ms', (extract(epoch FROM timeout) * 1000)::bigint),
        'pg_jobs.sql', priority, run_at, max_attempts, backoff, max_backoff,
        timeout + interval '1 minute', key, on_conflict)::job_spec], _caller(ticket), true, false) a;
    PERFORM _wake_launcher();
    RETURN id;
END
$$;

CREATE FUNCTION jobs_add_sql(
    sql text,
    run_at timestamptz DEFAULT NULL,
    priority integer DEFAULT 0,
    max_attempts integer DEFAULT NULL,
    backoff interval DEFAULT NULL,
    max_backoff interval DEFAULT NULL,
    timeout interval DEFAULT '1 hour',
    key text DEFAULT NULL,
    on_conflict text DEFAULT 'skip'
) RETURNS bigint
LANGUAGE sql
BEGIN ATOMIC
    SELECT _jobs_add_sql(_ticket(), sql, run_at, priority, max_attempts, backoff, max_backoff,
                         timeout, key, on_conflict);
END;
COMMENT ON FUNCTION jobs_add_sql IS
    'Adds a job that the background worker runs in the database, as the job''s owner, with a statement timeout.';

-- A SQL job's statement timeout: what a statement timeout can hold (2^31 - 1 ms, 24 days).
CREATE FUNCTION _check_timeout(timeout interval) RETURNS void
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
BEGIN
    IF timeout IS NULL OR timeout <= '0' OR timeout > '24 days' THEN
        PERFORM _invalid(format('timeout must be positive and at most 24 days, not %s',
                                coalesce(timeout::text, 'null')));
    END IF;
END
$$;

-- One row per run of a SQL job (start, end, status, message), kept pg_jobs.history_days days.
-- A run still going at its deadline (its timeout, or an abort, plus pg_jobs.cancel_grace) did
-- not stop when it was cancelled, for instance because it catches query_canceled: the launcher
-- ends its process and records it as aborted or timed out.
CREATE TABLE job_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id      bigint NOT NULL,
    owner       oid NOT NULL,
    attempt     integer NOT NULL,
    pid         integer NOT NULL,
    status      text NOT NULL DEFAULT 'running'
                CHECK (status IN ('running', 'succeeded', 'failed', 'aborted', 'timed out', 'lost')),
    message     text,
    started_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    deadline    timestamptz NOT NULL,
    ended_at    timestamptz,
    duration    interval GENERATED ALWAYS AS (ended_at - started_at) STORED
);
CREATE INDEX job_runs_job ON job_runs (job_id);
CREATE INDEX job_runs_owner ON job_runs (owner);
CREATE INDEX job_runs_started ON job_runs (started_at);
CREATE INDEX job_runs_running ON job_runs (pid) WHERE status = 'running';

-- What the executor of a SQL job needs, checked against its lease.
CREATE FUNCTION _sql_job_start(job bigint, token uuid, pid integer,
    OUT sql text, OUT timeout_ms bigint, OUT owner oid, OUT run_id bigint)
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    attempt integer;
BEGIN
    UPDATE jobs j SET locked_by = format('pg_jobs sql executor %s', pid)
    WHERE j.id = job AND j.lease_token = token AND j.status = 'started'
    RETURNING j.payload ->> 'sql', (j.payload ->> 'timeout_ms')::bigint, j.owner, j.attempt
    INTO sql, timeout_ms, owner, attempt;
    IF NOT FOUND THEN
        PERFORM _lease_error(job, token, NULL);
    END IF;
    INSERT INTO job_runs (job_id, owner, attempt, pid, deadline)
    VALUES (job, owner, attempt, pid,
            clock_timestamp() + make_interval(secs => timeout_ms / 1000.0) + _cancel_grace())
    RETURNING id INTO run_id;
END
$$;

CREATE FUNCTION _sql_job_end(run bigint, outcome text, message text DEFAULT NULL) RETURNS void
LANGUAGE sql
SET search_path = @extschema@, pg_catalog, pg_temp
BEGIN ATOMIC
    UPDATE job_runs r SET status = outcome, message = _sql_job_end.message, ended_at = clock_timestamp()
    WHERE r.id = run AND r.status = 'running';
END;

-- A SQL job whose statements raised: its attempt fails (or ends aborted), and the run says why.
CREATE FUNCTION _sql_job_failed(run bigint, job bigint, token uuid, message text) RETURNS void
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    ended job_status;
BEGIN
    BEGIN
        PERFORM jobs_fail(job, token, message);
    EXCEPTION WHEN object_not_in_prerequisite_state THEN
        message := message || ' (and the lease was lost, so the job was not reported)';
    END;
    SELECT h.status INTO ended FROM job_history h WHERE h.id = job;
    PERFORM _sql_job_end(run, CASE WHEN ended = 'aborted' THEN 'aborted' ELSE 'failed' END, message);
END
$$;

CREATE FUNCTION _cancel_grace() RETURNS interval
LANGUAGE sql STABLE
RETURN current_setting('pg_jobs.cancel_grace')::interval;

-- Aborts a running SQL job: its statement is cancelled as soon as the abort commits, and if it
-- has not stopped within pg_jobs.cancel_grace, the launcher ends its process.
CREATE FUNCTION _cancel_sql_job(job bigint) RETURNS void
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    pid integer;
BEGIN
    UPDATE job_runs r SET deadline = least(r.deadline, statement_timestamp() + _cancel_grace())
    WHERE r.job_id = job AND r.status = 'running'
    RETURNING r.pid INTO pid;
    IF FOUND THEN
        PERFORM _cancel_executor_at_commit(pid);
    END IF;
END
$$;

-- Runs still going at their deadline: recorded aborted (their job was aborted) or timed out,
-- their jobs finished as aborted or failed (the attempt counts, as a timeout's does), and their
-- executors' processes ended. A worker's completion after this is fenced by its lease token.
CREATE FUNCTION _stop_overdue_sql_jobs(at timestamptz) RETURNS integer
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    overdue record;
    stopped integer := 0;
BEGIN
    FOR overdue IN
        SELECT r.id AS run, r.pid, s.id AS job_id, s.lease_token, s.status
        FROM job_runs r JOIN jobs s ON s.id = r.job_id AND s.locked_by = format('pg_jobs sql executor %s', r.pid)
        WHERE r.status = 'running' AND r.deadline < at
        FOR UPDATE OF r, s SKIP LOCKED
    LOOP
        IF overdue.status = 'aborted' THEN
            PERFORM _finish(ARRAY[overdue.job_id], ARRAY[overdue.lease_token], '{aborted}', 'aborted', NULL);
            PERFORM _sql_job_end(overdue.run, 'aborted',
                format('did not stop within %s s of its abort; its process was ended',
                       extract(epoch FROM _cancel_grace())::integer));
        ELSE
            PERFORM _sql_job_end(overdue.run, 'timed out',
                format('did not stop within %s s of its timeout; its process was ended',
                       extract(epoch FROM _cancel_grace())::integer));
            PERFORM jobs_fail(overdue.job_id, overdue.lease_token, 'timed out: the statement did not stop when cancelled');
        END IF;
        -- Only an executor: a pid whose executor died may belong to another process by now.
        PERFORM pg_terminate_backend(a.pid) FROM pg_stat_activity a
        WHERE a.pid = overdue.pid AND a.backend_type = 'pg_jobs sql executor';
        stopped := stopped + 1;
    END LOOP;
    RETURN stopped;
END
$$;

-- Schedules -------------------------------------------------------------------------------------

CREATE TABLE schedules (
    id          bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    name        text NOT NULL CHECK (name <> ''),
    owner       oid NOT NULL,
    schedule    text NOT NULL,
    time_zone   text NOT NULL,
    work        jsonb NOT NULL,
    options     jsonb NOT NULL,
    missed      text NOT NULL CHECK (missed IN ('skip', 'once', 'all')),
    max_catch_up integer NOT NULL CHECK (max_catch_up BETWEEN 1 AND 1000),
    enabled     boolean NOT NULL DEFAULT true,
    last_slot   timestamptz NOT NULL,
    next_slot   timestamptz,
    last_job_id bigint,
    last_error  text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (owner, name)
);
CREATE INDEX schedules_due ON schedules (next_slot) WHERE enabled;
COMMENT ON COLUMN schedules.last_slot IS 'Slots up to this instant have been fired or passed over.';

-- Slots, as epoch seconds so that the Rust side needs no date types.
CREATE FUNCTION schedule_next_slot(schedule text, time_zone text, after timestamptz)
RETURNS timestamptz
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = @extschema@, pg_catalog, pg_temp
RETURN to_timestamp(_schedule_next_epoch(schedule, time_zone, extract(epoch FROM after)::float8));
COMMENT ON FUNCTION schedule_next_slot IS 'The first slot of a schedule strictly after a given time; null if none within 8 years.';

CREATE FUNCTION _schedule_slots(schedule text, time_zone text, after timestamptz,
                                until timestamptz, max_slots integer)
RETURNS timestamptz[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = @extschema@, pg_catalog, pg_temp
RETURN ARRAY(SELECT to_timestamp(e) FROM unnest(_schedule_latest_slots_epoch(
    schedule, time_zone, extract(epoch FROM after)::float8, extract(epoch FROM until)::float8,
    max_slots)) e);

CREATE FUNCTION _check_schedule_options(options jsonb, work jsonb) RETURNS void
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    unknown text;
BEGIN
    IF jsonb_typeof(work) IS DISTINCT FROM 'object' OR (work ? 'task') = (work ? 'sql') THEN
        PERFORM _invalid('work must be {"task": ..., "payload": ..., "queue": ...} or {"sql": ...}',
            'A schedule adds a queued task for your workers, or runs SQL in the database.');
    END IF;
    SELECT k INTO unknown FROM jsonb_object_keys(work) k
    WHERE k NOT IN ('task', 'payload', 'queue', 'sql') LIMIT 1;
    IF FOUND THEN
        PERFORM _invalid(format('unknown key "%s" in work', unknown), 'work takes task, payload and queue, or sql.');
    END IF;
    IF jsonb_typeof(options) IS DISTINCT FROM 'object' THEN
        PERFORM _invalid('options must be a JSON object');
    END IF;
    SELECT k INTO unknown FROM jsonb_object_keys(options) k
    WHERE k NOT IN ('time_zone', 'missed', 'max_catch_up', 'enabled', 'priority', 'max_attempts',
                    'backoff', 'max_backoff', 'lease', 'timeout') LIMIT 1;
    IF FOUND THEN
        PERFORM _invalid(format('unknown option "%s"', unknown),
            'Options are time_zone, missed, max_catch_up, enabled, priority, max_attempts, backoff, max_backoff, lease and timeout.');
    END IF;
    IF options ? 'missed' AND options ->> 'missed' NOT IN ('skip', 'once', 'all') THEN
        PERFORM _invalid(format('unknown missed-slot rule "%s"', options ->> 'missed'),
            'missed is skip (a slot nobody fired is skipped), once (one catch-up run) or all (every missed slot, up to max_catch_up).');
    END IF;
    IF options ? 'max_catch_up' AND (options ->> 'max_catch_up' !~ '^[0-9]{1,4}$'
                                     OR (options ->> 'max_catch_up')::integer NOT BETWEEN 1 AND 1000) THEN
        PERFORM _invalid(format('max_catch_up must be a whole number from 1 to 1000, not %s', options -> 'max_catch_up'),
            'With missed => all, at most this many of the latest missed slots are fired.');
    END IF;
    IF options ? 'enabled' AND jsonb_typeof(options -> 'enabled') IS DISTINCT FROM 'boolean' THEN
        PERFORM _invalid(format('enabled must be true or false, not %s', options -> 'enabled'));
    END IF;
    IF options ? 'timeout' THEN
        PERFORM _check_timeout((options ->> 'timeout')::interval);
    END IF;
    -- The job's own checks run now, so that a schedule never fires a job that cannot be added.
    PERFORM _refuse(_spec_problem(_scheduled_spec(work, options, now(), 'check'), work ? 'sql', true));
END
$$;

-- The job a schedule adds for one slot.
CREATE FUNCTION _scheduled_spec(work jsonb, options jsonb, slot timestamptz, key text)
RETURNS job_spec
LANGUAGE sql STABLE
SET search_path = @extschema@, pg_catalog, pg_temp
RETURN ROW(
    coalesce(work ->> 'task', 'sql'),
    CASE WHEN work ? 'sql'
         THEN jsonb_build_object('sql', work ->> 'sql', 'timeout_ms',
              (extract(epoch FROM coalesce((options ->> 'timeout')::interval, interval '1 hour')) * 1000)::bigint)
         ELSE coalesce(work -> 'payload', '{}') END,
    CASE WHEN work ? 'sql' THEN 'pg_jobs.sql' ELSE coalesce(work ->> 'queue', 'default') END,
    (options ->> 'priority')::integer,
    slot,
    (options ->> 'max_attempts')::integer,
    (options ->> 'backoff')::interval,
    (options ->> 'max_backoff')::interval,
    CASE WHEN work ? 'sql'
         THEN coalesce((options ->> 'timeout')::interval, interval '1 hour') + interval '1 minute'
         ELSE (options ->> 'lease')::interval END,
    key,
    'skip')::job_spec;

CREATE FUNCTION _check_schedule(schedule text, time_zone text) RETURNS void
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    problem text := _schedule_problem(schedule, time_zone);
BEGIN
    IF _time_zone_problem(time_zone) IS NOT NULL THEN
        PERFORM _invalid(_time_zone_problem(time_zone),
            'Name a zone of pg_timezone_names, such as ''UTC'' or ''Europe/Berlin'' (names are case-sensitive).');
    END IF;
    IF problem IS NOT NULL THEN
        PERFORM _invalid(format('invalid schedule "%s": %s', schedule, problem),
            'Use five cron fields (minute hour day month weekday), six with seconds first, '
            'a macro such as @hourly, or an interval such as ''every 10 seconds''.');
    END IF;
END
$$;

-- The caller's schedule of that name; another owner's is as missing as one that never was.
CREATE FUNCTION _schedule_row(schedule_name text, caller oid) RETURNS schedules
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    existing schedules;
BEGIN
    SELECT * INTO existing FROM schedules s WHERE s.name = schedule_name AND s.owner = caller FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'no_data_found',
            MESSAGE = format('schedule "%s" does not exist', schedule_name),
            HINT = 'SELECT name FROM pgjobs.jobs_schedules lists the schedules.';
    END IF;
    RETURN existing;
END
$$;

CREATE FUNCTION _jobs_schedule(ticket bigint, name text, schedule text, work jsonb, options jsonb)
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := _caller(ticket);
    zone text := coalesce(options ->> 'time_zone', 'UTC');
    id bigint;
BEGIN
    IF name IS NULL OR name = '' OR schedule IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'null_value_not_allowed',
            MESSAGE = 'a schedule needs a name and a schedule';
    END IF;
    PERFORM _check_schedule(schedule, zone);
    PERFORM _check_schedule_options(coalesce(options, '{}'), work);
    IF EXISTS (SELECT FROM schedules s WHERE s.name = _jobs_schedule.name AND s.owner = caller) THEN
        RAISE EXCEPTION USING ERRCODE = 'unique_violation',
            MESSAGE = format('schedule "%s" already exists', name),
            HINT = 'Change it with jobs_alter_schedule, or remove it with jobs_unschedule.';
    END IF;
    INSERT INTO schedules (name, owner, schedule, time_zone, work, options, missed, max_catch_up,
                           enabled, last_slot, next_slot)
    VALUES (name, caller, schedule, zone, work, coalesce(options, '{}'),
            coalesce(options ->> 'missed', 'skip'), coalesce((options ->> 'max_catch_up')::integer, 100),
            coalesce((options ->> 'enabled')::boolean, true), statement_timestamp(),
            schedule_next_slot(schedule, zone, statement_timestamp()))
    RETURNING schedules.id INTO id;
    PERFORM _wake_launcher();
    RETURN id;
END
$$;

CREATE FUNCTION jobs_schedule(name text, schedule text, work jsonb, options jsonb DEFAULT '{}')
RETURNS bigint
LANGUAGE sql
BEGIN ATOMIC
    SELECT _jobs_schedule(_ticket(), name, schedule, work, options);
END;
COMMENT ON FUNCTION jobs_schedule IS
    'Adds a job once per slot of a cron schedule. work: {"task", "payload", "queue"} or {"sql"}. '
    'options: time_zone, missed (skip|once|all), max_catch_up, enabled, priority, max_attempts, backoff, max_backoff, lease, timeout.';

CREATE FUNCTION _jobs_alter_schedule(ticket bigint, name text, schedule text, work jsonb,
                                     options jsonb)
RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    old schedules := _schedule_row(name, _caller(ticket));
    new_options jsonb := old.options || coalesce(options, '{}');
    new_schedule text := coalesce(schedule, old.schedule);
    zone text := coalesce(new_options ->> 'time_zone', 'UTC');
BEGIN
    PERFORM _check_schedule(new_schedule, zone);
    PERFORM _check_schedule_options(new_options, coalesce(work, old.work));
    UPDATE schedules s
    SET schedule = new_schedule, time_zone = zone, work = coalesce(_jobs_alter_schedule.work, s.work),
        options = new_options, missed = coalesce(new_options ->> 'missed', 'skip'),
        max_catch_up = coalesce((new_options ->> 'max_catch_up')::integer, 100),
        enabled = coalesce((new_options ->> 'enabled')::boolean, true),
        -- A new timing starts from now: no slot of the old one is fired late.
        last_slot = CASE WHEN new_schedule <> old.schedule OR zone <> old.time_zone
                         THEN statement_timestamp() ELSE s.last_slot END,
        next_slot = schedule_next_slot(new_schedule, zone,
                        greatest(statement_timestamp(), s.last_slot)),
        updated_at = statement_timestamp()
    WHERE s.id = old.id;
    PERFORM _wake_launcher();
END
$$;

CREATE FUNCTION jobs_alter_schedule(name text, schedule text DEFAULT NULL, work jsonb DEFAULT NULL,
                                    options jsonb DEFAULT NULL)
RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT _jobs_alter_schedule(_ticket(), name, schedule, work, options);
END;

CREATE FUNCTION jobs_enable_schedule(name text) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT jobs_alter_schedule(name, options => '{"enabled": true}');
END;

CREATE FUNCTION jobs_disable_schedule(name text) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT jobs_alter_schedule(name, options => '{"enabled": false}');
END;

CREATE FUNCTION _jobs_unschedule(ticket bigint, name text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    doomed schedules := _schedule_row(name, _caller(ticket));
BEGIN
    DELETE FROM schedules s WHERE s.id = doomed.id;
    PERFORM _wake_launcher();
END
$$;

CREATE FUNCTION jobs_unschedule(name text) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    SELECT _jobs_unschedule(_ticket(), name);
END;

CREATE VIEW jobs_schedules WITH (security_invoker = true) AS
SELECT s.name, s.owner::regrole AS owner, s.schedule, s.time_zone, s.work, s.options, s.missed,
       s.enabled, s.last_slot, s.next_slot, s.last_job_id, l.status AS last_status, s.last_error
FROM schedules s LEFT JOIN LATERAL (
    SELECT l.status FROM job_list l WHERE l.id = s.last_job_id) l ON true;

-- The slots of `due` (a schedule's slots since it last fired, oldest first) to fire at `at`.
-- Slots within `grace` of `at` are on time; older ones were missed (no scheduler ran) and
-- follow the schedule's rule.
CREATE FUNCTION _slots_to_fire(due timestamptz[], missed text, max_catch_up integer,
                               at timestamptz, grace interval)
RETURNS timestamptz[]
LANGUAGE sql IMMUTABLE
BEGIN ATOMIC
    SELECT CASE missed
        WHEN 'all' THEN due[greatest(1, cardinality(due) - max_catch_up + 1):]
        WHEN 'once' THEN ARRAY(SELECT d FROM unnest(due) d WHERE d > at - grace
                               UNION SELECT max(d) FROM unnest(due) d WHERE d <= at - grace
                               HAVING max(d) IS NOT NULL
                               ORDER BY 1)
        ELSE ARRAY(SELECT d FROM unnest(due) d WHERE d > at - grace ORDER BY 1)
    END;
END;

CREATE TYPE _firing AS (schedule_id bigint, owner oid, spec job_spec);

-- The due schedules at `at` (all, or just `one_schedule`), locked, each with the latest of its slots
-- since it last fired, and the jobs to add for them.
CREATE FUNCTION _due_firings(at timestamptz, grace interval, one_schedule bigint,
    OUT due_ids bigint[], OUT latest_slots timestamptz[], OUT firings _firing[])
LANGUAGE sql
SET search_path = @extschema@, pg_catalog, pg_temp
BEGIN ATOMIC
    WITH due AS (
        SELECT x.id, x.owner, x.work, x.options, x.last_slot,
               _schedule_slots(x.schedule, x.time_zone, x.last_slot, at, x.max_catch_up + 1) AS slots,
               x.missed, x.max_catch_up
        FROM schedules x
        WHERE x.enabled AND x.next_slot <= at AND (one_schedule IS NULL OR x.id = one_schedule)
        FOR UPDATE SKIP LOCKED
    )
    SELECT array_agg(d.id), array_agg(coalesce(d.slots[cardinality(d.slots)], d.last_slot)),
           (SELECT array_agg((e.id, e.owner, _scheduled_spec(e.work, e.options, f.slot,
                   format('scheduled_job:%s:%s', e.id,
                          to_char(f.slot AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'))))::_firing
                   ORDER BY e.id, f.slot)
            FROM due e, unnest(_slots_to_fire(e.slots, e.missed, e.max_catch_up, at, grace)) AS f(slot))
    FROM due d;
END;

-- Fires every schedule due at `at`. Each slot's job carries the key
-- scheduled_job:<id>:<slot>, so however many schedulers fire, a slot runs once. The jobs of
-- all due schedules of one owner are added in one call, which is what lets thousands of
-- schedules fire within their second. Nothing one schedule holds stops the others: if the
-- slots of all cannot be computed together, each is computed alone, and if one owner's adds
-- fail, its schedules are fired one by one; a schedule that fails records its error in
-- last_error and is tried again at its next slot.
CREATE FUNCTION _fire_schedules(at timestamptz DEFAULT statement_timestamp()) RETURNS integer
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    grace interval := current_setting('pg_jobs.refresh_interval')::interval;
    due_ids bigint[];
    latest_slots timestamptz[];
    firings _firing[];
    alone record;
    batch record;
    one record;
    ids bigint[];
    failed bigint[] := '{}';
    messages text[] := '{}';
BEGIN
    BEGIN
        SELECT * INTO due_ids, latest_slots, firings FROM _due_firings(at, grace, NULL);
    EXCEPTION WHEN OTHERS THEN
        due_ids := '{}';
        latest_slots := '{}';
        firings := '{}';
        FOR one IN SELECT x.id FROM schedules x WHERE x.enabled AND x.next_slot <= at
                   ORDER BY x.id FOR UPDATE SKIP LOCKED
        LOOP
            BEGIN
                SELECT * INTO alone FROM _due_firings(at, grace, one.id);
                due_ids := due_ids || alone.due_ids;
                latest_slots := latest_slots || alone.latest_slots;
                firings := firings || alone.firings;
            EXCEPTION WHEN OTHERS THEN
                failed := failed || one.id;
                messages := messages || SQLERRM;
            END;
        END LOOP;
    END;

    FOR batch IN
        SELECT f.owner, array_agg(f.schedule_id ORDER BY f.n) AS schedule_ids,
               array_agg(f.spec ORDER BY f.n) AS specs
        FROM unnest(firings) WITH ORDINALITY AS f(schedule_id, owner, spec, n)
        GROUP BY f.owner
    LOOP
        BEGIN
            ids := ARRAY(SELECT _add(batch.specs, batch.owner, true, true));
            UPDATE schedules x SET last_job_id = m.job
            FROM (SELECT DISTINCT ON (u.schedule_id) u.schedule_id, u.job
                  FROM unnest(batch.schedule_ids, ids) WITH ORDINALITY AS u(schedule_id, job, n)
                  ORDER BY u.schedule_id, u.n DESC) m
            WHERE x.id = m.schedule_id;
        EXCEPTION WHEN OTHERS THEN
            FOR one IN
                SELECT batch.schedule_ids[i] AS schedule_id, array_agg(batch.specs[i] ORDER BY i) AS specs
                FROM generate_subscripts(batch.schedule_ids, 1) AS i
                GROUP BY batch.schedule_ids[i]
            LOOP
                BEGIN
                    ids := ARRAY(SELECT _add(one.specs, batch.owner, true, true));
                    UPDATE schedules x SET last_job_id = ids[cardinality(ids)] WHERE x.id = one.schedule_id;
                EXCEPTION WHEN OTHERS THEN
                    failed := failed || one.schedule_id;
                    messages := messages || SQLERRM;
                END;
            END LOOP;
        END;
    END LOOP;

    -- A failed schedule retries at its next slot; the slots it could not fire are passed over.
    -- One whose slots could not be computed has no next slot to compute either: it is tried
    -- again after pg_jobs.refresh_interval.
    UPDATE schedules x
    SET last_slot = CASE WHEN e.message IS NULL THEN d.latest_slot ELSE at END,
        next_slot = CASE WHEN d.latest_slot IS NULL THEN at + grace
                         ELSE schedule_next_slot(x.schedule, x.time_zone, at) END,
        last_error = e.message
    FROM (SELECT u.id, u.latest_slot FROM unnest(due_ids, latest_slots) AS u(id, latest_slot)
          UNION ALL
          SELECT u.id, NULL FROM unnest(failed) AS u(id) WHERE u.id <> ALL (coalesce(due_ids, '{}'))) d
    LEFT JOIN unnest(failed, messages) AS e(id, message) ON e.id = d.id
    WHERE x.id = d.id;
    RETURN coalesce(cardinality(firings), 0) - (
        SELECT count(*) FROM unnest(firings) f WHERE f.schedule_id = ANY (failed));
END
$$;

-- The launcher ---------------------------------------------------------------------------------

CREATE TABLE launcher_state (
    singleton    boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    pid          integer NOT NULL,
    started_at   timestamptz NOT NULL,
    heartbeat_at timestamptz NOT NULL,
    doing        text NOT NULL
);

CREATE VIEW launcher AS
SELECT l.pid, l.started_at AS since, l.heartbeat_at, l.doing,
       a.pid IS NOT NULL
       AND l.heartbeat_at > now() - 2 * current_setting('pg_jobs.refresh_interval')::interval AS alive,
       pg_is_in_recovery() AS standby
FROM launcher_state l
LEFT JOIN pg_stat_activity a ON a.pid = l.pid AND a.backend_type = 'pg_jobs launcher';
COMMENT ON VIEW launcher IS 'The background worker: whether it is alive, since when, and what it is doing.';

CREATE FUNCTION _launcher_heartbeat(pid integer, started_at timestamptz, doing text) RETURNS void
LANGUAGE sql
SET search_path = @extschema@, pg_catalog, pg_temp
BEGIN ATOMIC
    INSERT INTO launcher_state AS l (pid, started_at, heartbeat_at, doing)
    VALUES (pid, started_at, clock_timestamp(), doing)
    ON CONFLICT (singleton) DO UPDATE
    SET pid = excluded.pid, started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at,
        doing = excluded.doing;
END;

-- One round of the launcher's work; returns when it wants to be woken next. Each part runs on
-- its own: an error in one (a lock not had within the launcher's lock_timeout, a broken row) is
-- reported and the others still run, this round and the next. Nothing here waits for a row a
-- member can lock: such rows are taken with SKIP LOCKED and left for a later round.
CREATE FUNCTION _launcher_tick(at timestamptz DEFAULT statement_timestamp()) RETURNS timestamptz
LANGUAGE plpgsql
SET search_path = @extschema@, pg_catalog, pg_temp
AS $$
DECLARE
    part text;
BEGIN
    FOREACH part IN ARRAY ARRAY['lost runs', 'overdue runs', 'expired leases', 'schedules',
                                'run history', 'history months'] LOOP
        BEGIN
            CASE part
            WHEN 'lost runs' THEN PERFORM _end_lost_runs(at);
            WHEN 'overdue runs' THEN PERFORM _stop_overdue_sql_jobs(at);
            WHEN 'expired leases' THEN PERFORM _rescue_expired();
            WHEN 'schedules' THEN PERFORM _fire_schedules(at);
            WHEN 'run history' THEN
                DELETE FROM job_runs r
                WHERE r.started_at < at - make_interval(days => current_setting('pg_jobs.history_days')::integer);
            WHEN 'history months' THEN PERFORM jobs_history_prepare();
            END CASE;
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'pg_jobs launcher: % failed: %', part, SQLERRM;
        END;
    END LOOP;

    RETURN least(
        (SELECT min(s.next_slot) FROM schedules s WHERE s.enabled),
        (SELECT min(s.run_at) FROM jobs s
         WHERE s.claimable_by = 0 AND s.queue = 'pg_jobs.sql' AND s.status = 'created'),
        (SELECT min(s.locked_until) FROM jobs s WHERE s.status <> 'created'),
        (SELECT min(r.deadline) FROM job_runs r WHERE r.status = 'running'),
        at + current_setting('pg_jobs.refresh_interval')::interval);
END
$$;

-- Executors that died (a crash, kill -9) left runs marked running: their leases are over.
CREATE FUNCTION _end_lost_runs(at timestamptz) RETURNS void
LANGUAGE sql
SET search_path = @extschema@, pg_catalog, pg_temp
BEGIN ATOMIC
    WITH lost AS (
        UPDATE job_runs r SET status = 'lost', ended_at = clock_timestamp(),
                              message = 'the executor stopped without reporting'
        WHERE r.status = 'running'
          AND NOT EXISTS (SELECT FROM pg_stat_activity a
                          WHERE a.pid = r.pid AND a.backend_type = 'pg_jobs sql executor')
        RETURNING r.job_id, r.pid
    ), leased AS (
        SELECT j.id FROM jobs j JOIN lost l
            ON j.id = l.job_id AND j.locked_by = format('pg_jobs sql executor %s', l.pid)
        FOR UPDATE OF j SKIP LOCKED
    )
    UPDATE jobs j SET locked_until = least(j.locked_until, at - interval '1 microsecond')
    FROM leased l WHERE j.id = l.id;
END;

-- Who may do what -------------------------------------------------------------------------------
-- Nothing is granted to PUBLIC. Members of pgjobs_user read their own rows (row-level security)
-- and call the public functions; each public function passes a ticket naming its caller to a
-- SECURITY DEFINER function (_jobs_*), which checks it before it writes. The remaining _
-- functions are internal: only the extension's owner (and so the background worker) runs them.
ALTER TABLE schedules ENABLE ROW LEVEL SECURITY;
ALTER TABLE job_runs ENABLE ROW LEVEL SECURITY;
CREATE POLICY owner_reads ON schedules FOR SELECT USING (owner = (SELECT identity()));
CREATE POLICY owner_reads ON job_runs FOR SELECT USING (owner = (SELECT identity()));
GRANT SELECT ON schedules, job_runs, jobs_schedules, job_list, launcher TO pgjobs_user;

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @extschema@ FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    identity(), _current_role(), _ticket(), _opaque_id(), _invalid(text, text), _row_count(integer, text), _utc_month(timestamptz), _utc_midnight(date),
    retry_delay_seconds(integer, double precision, double precision),
    schedule_next_slot(text, text, timestamptz), _schedule_next_epoch(text, text, double precision),
    jobs_add(text, jsonb, text, integer, timestamptz, integer, interval, interval, interval, text, text),
    _jobs_add(bigint, job_spec),
    jobs_add_batch(jsonb), _jobs_add_batch(bigint, jsonb),
    jobs_claim(text, text[], integer, interval), _jobs_claim(bigint, text, text[], integer, interval),
    jobs_heartbeat(bigint, uuid, interval), _jobs_heartbeat(bigint, bigint, uuid, interval),
    jobs_complete(bigint[], uuid[], jsonb[]), jobs_complete(bigint, uuid, jsonb),
    _jobs_complete(bigint, bigint[], uuid[], jsonb[]),
    jobs_complete_and_claim(bigint[], uuid[], jsonb[], text, text[], integer, interval),
    jobs_fail(bigint[], uuid[], text[]), jobs_fail(bigint, uuid, text),
    _jobs_fail(bigint, bigint[], uuid[], text[]),
    jobs_abort(bigint), _jobs_abort(bigint, bigint),
    jobs_ready_signal(text), _jobs_ready_signal(bigint, text),
    jobs_find(job_status, text, text, text, date, integer, integer), jobs_counts(date),
    jobs_add_sql(text, timestamptz, integer, integer, interval, interval, interval, text, text),
    _jobs_add_sql(bigint, text, timestamptz, integer, integer, interval, interval, interval, text, text),
    jobs_schedule(text, text, jsonb, jsonb), _jobs_schedule(bigint, text, text, jsonb, jsonb),
    jobs_alter_schedule(text, text, jsonb, jsonb), _jobs_alter_schedule(bigint, text, text, jsonb, jsonb),
    jobs_enable_schedule(text), jobs_disable_schedule(text),
    jobs_unschedule(text), _jobs_unschedule(bigint, text),
    jobs_add_proxy(regrole, regrole), _jobs_add_proxy(bigint, regrole, regrole),
    jobs_remove_proxy(regrole), _jobs_remove_proxy(bigint, regrole)
TO pgjobs_user;

-- pg_dump keeps the rows of every table of the extension and where every sequence has got to;
-- not launcher_state, which says which process runs now, nor ready_signal_key, which each
-- installation makes anew (workers ask jobs_ready_signal again after a restore). (The months of job_history are made
-- by the launcher, after installation: ordinary tables, dumped whole. Made here, they would be
-- the extension's, and a restore in another month would have no table for their rows.)
DO $$
DECLARE
    member regclass;
BEGIN
    FOR member IN
        SELECT c.oid::regclass FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
        WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e'
          AND d.refobjid = (SELECT e.oid FROM pg_extension e WHERE e.extname = 'pg_jobs')
          AND c.relkind IN ('r', 'S') AND c.oid NOT IN ('launcher_state'::regclass, 'ready_signal_key'::regclass)
    LOOP
        PERFORM pg_extension_config_dump(member, '');
    END LOOP;
END
$$;
