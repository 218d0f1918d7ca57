-- Routine schedules: lists of routines that must run on computers, batch ones at times of the
-- day and realtime ones all day, kept started and watched by the launcher (the scheduler).
--
-- A schedule has a definition (routine_definitions, one row per routine) and, per scheduler
-- day, a state (routine_days: the definition as read that day, and how each routine is doing).
-- Every round (src/api/routine_rounds.rs, a service of the launcher's round) the scheduler does
-- two things per schedule: status, from the runs it commanded (batch jobs of kind routine and
-- kill, sql/085_batch.sql), their output and the routines' messages (routine_log); and
-- commands, the starts and restarts that are due, each sent only if the schedule's switch says
-- control right then. The rules of both are pure code: pg_jobs_core::routine.
--
-- Access: a schedule has an owner (an identity); the owner and the members of the roles it
-- granted (routines_grant, only to a role the granter is a member of) see the schedule and
-- command its routines; nobody else sees anything of it. Only the owner edits the definition.
-- Runs are batch jobs of the owner. Arguments and commands are readable by members only as
-- shown (masked: pg_jobs_core::mask), output lines and messages are kept masked; the owner reads
-- its own definition as written with routines_export.
--
-- Names are per owner: two identities may each have a schedule MASTER. A function given a name
-- acts on the caller's own schedule of that name; one that watches or commands (reload, mode,
-- set_mode, restart, stop) takes, when the caller has none of that name, the one schedule of
-- that name granted to it. OWNER/NAME names another's schedule (two granted ones of one name
-- must be named so).

CREATE FUNCTION _routine_schedule_name_ok(name text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN name ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$';

CREATE TABLE routine_schedules (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    schedule   text NOT NULL CHECK (_routine_schedule_name_ok(schedule)),
    owner      regrole NOT NULL,
    time_zone  text NOT NULL DEFAULT 'UTC',
    -- Roles whose members watch the schedule and command its routines.
    operators  regrole[] NOT NULL DEFAULT '{}',
    -- The switch: what was asked, by which role (null: the setting pg_jobs.routines_start_mode
    -- when the scheduler started), when.
    mode       text NOT NULL DEFAULT 'control' CHECK (mode IN ('observe', 'control')),
    mode_by    regrole,
    mode_at    timestamptz NOT NULL DEFAULT now(),
    -- What the scheduler reports: what it did in its last round, when it last wrote the state,
    -- its calendar day, when it last read the definition, and whether a reload was asked for.
    doing      text,
    state_at   timestamptz,
    day        date,
    loaded_at  timestamptz,
    reload     boolean NOT NULL DEFAULT true,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- A name is the owner's, as an idempotency key is.
    UNIQUE (owner, schedule)
);
COMMENT ON TABLE routine_schedules IS
    'Routine schedules: owner, time zone of their runtimes, the roles granted to watch and command '
    'them, the observe/control switch and what the scheduler reports.';

CREATE TABLE routine_definitions (
    schedule_id  bigint NOT NULL REFERENCES routine_schedules ON DELETE CASCADE,
    routine      text NOT NULL,
    group_name   text NOT NULL DEFAULT '',
    external     boolean NOT NULL DEFAULT false,
    realtime     boolean NOT NULL DEFAULT false,
    runtimes     time[] NOT NULL DEFAULT '{}',
    args         text NOT NULL DEFAULT '',
    dependencies text[] NOT NULL DEFAULT '{}',
    computer     text NOT NULL,
    seq          integer NOT NULL,
    command      text NOT NULL DEFAULT '',
    -- What members read: arguments and command masked (only these columns are granted).
    args_shown    text NOT NULL GENERATED ALWAYS AS (_routine_shown_args(args)) STORED,
    command_shown text NOT NULL GENERATED ALWAYS AS (_mask_text(command)) STORED,
    PRIMARY KEY (schedule_id, routine)
);
COMMENT ON TABLE routine_definitions IS
    'One row per routine of a schedule. Read into the day''s state when the scheduler starts, when '
    'its day changes and on routines_reload.';
COMMENT ON COLUMN routine_definitions.routine IS 'user@COMPUTER:Repo/folder/code or user@COMPUTER:Package.Module.';
COMMENT ON COLUMN routine_definitions.group_name IS 'The group it is shown in.';
COMMENT ON COLUMN routine_definitions.external IS 'Run by something else: watched through its messages, never commanded.';
COMMENT ON COLUMN routine_definitions.realtime IS 'Runs all day; restarted when silent.';
COMMENT ON COLUMN routine_definitions.runtimes IS 'A batch routine''s times of day, in the schedule''s time zone; none: due when the day begins.';
COMMENT ON COLUMN routine_definitions.args IS 'Its arguments, split as a shell splits words.';
COMMENT ON COLUMN routine_definitions.dependencies IS 'Routines of the schedule that must have completed (batch) or be running (realtime) first.';
COMMENT ON COLUMN routine_definitions.computer IS 'The computer whose agent runs it; by default the one its name gives.';
COMMENT ON COLUMN routine_definitions.seq IS 'Its place in the definition.';
COMMENT ON COLUMN routine_definitions.command IS 'What the agent runs (a shell command, the arguments after it); by default the path its name gives.';

-- The day's state: the definition as read, and how each routine is doing.
CREATE TABLE routine_days (
    schedule_id      bigint NOT NULL REFERENCES routine_schedules ON DELETE CASCADE,
    day              date NOT NULL,
    routine          text NOT NULL,
    group_name       text NOT NULL,
    external         boolean NOT NULL,
    realtime         boolean NOT NULL,
    runtimes         time[] NOT NULL,
    args             text NOT NULL,
    dependencies     text[] NOT NULL,
    computer         text NOT NULL,
    seq              integer NOT NULL,
    command          text NOT NULL,
    args_shown       text NOT NULL GENERATED ALWAYS AS (_routine_shown_args(args)) STORED,
    command_shown    text NOT NULL GENERATED ALWAYS AS (_mask_text(command)) STORED,
    status           text NOT NULL DEFAULT 'scheduled',
    -- Masked: a line of the run's output, a message, or why it could not start.
    last_message     text,
    last_level       text,
    last_message_at  timestamptz,
    -- Since when a realtime routine (or a batch one without runtimes) is due: the day's start,
    -- or when it entered the day's state.
    due_since        timestamptz NOT NULL,
    -- The run last commanded (a batch job of kind routine), and its times.
    job_id           bigint,
    posted_at        timestamptz,
    started_at       timestamptz,
    ended_at         timestamptz,
    restarts         integer NOT NULL DEFAULT 0,
    -- When the end of the run was sent (a kill job): no second one is sent for it.
    ending_since     timestamptz,
    -- A person's restart waiting for the run it ended to end.
    restart_asked_by regrole,
    run_order        integer,
    PRIMARY KEY (schedule_id, day, routine)
);
COMMENT ON TABLE routine_days IS
    'One row per routine and scheduler day: the definition as read that day, its status, its last '
    'message, the times of its run (UTC) and the order routines were started in.';

-- What routines said (routine_message, a person's or the scheduler's commands).
CREATE TABLE routine_log (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    schedule_id bigint NOT NULL REFERENCES routine_schedules ON DELETE CASCADE,
    routine     text NOT NULL,
    at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    level       text NOT NULL,
    -- Masked when written.
    message     text NOT NULL,
    -- Who said it: the routine's role (a message), a person's (a command), or null (the scheduler).
    sender      regrole,
    -- A command is news about the routine, not a sign of its life.
    command     boolean NOT NULL DEFAULT false
);
CREATE INDEX routine_log_latest ON routine_log (schedule_id, routine, at DESC);
CREATE INDEX routine_log_at ON routine_log (at);
COMMENT ON TABLE routine_log IS
    'Messages of routines (routine_message) and the commands sent for them, with who sent them.';

CREATE FUNCTION _routine_runtimes(runtimes text) RETURNS time[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN ARRAY(SELECT make_time(m / 60, m % 60, 0) FROM unnest(_routine_minutes(runtimes)) m);

CREATE FUNCTION _routine_runtimes_text(runtimes time[]) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN array_to_string(ARRAY(SELECT to_char(t, 'HH24:MI') FROM unnest(runtimes) t ORDER BY t), ',');
GRANT EXECUTE ON FUNCTION _routine_runtimes_text TO pgjobs_user;

-- Whether a role is a member of one of the roles a schedule's owner granted (a role dropped since
-- grants nothing).
CREATE FUNCTION _granted_to(role_oid oid, operators oid[]) RETURNS boolean
LANGUAGE sql STABLE
RETURN EXISTS (SELECT FROM unnest(operators) r
               WHERE EXISTS (SELECT FROM pg_roles g WHERE g.oid = r) AND pg_has_role(role_oid, r, 'MEMBER'));
GRANT EXECUTE ON FUNCTION _granted_to TO pgjobs_user;

-- Who may watch and command a schedule: its owner's identity, a member of a role the owner
-- granted, or an administrator.
CREATE FUNCTION _may_watch(caller_role oid, owner oid, operators oid[]) RETURNS boolean
LANGUAGE sql STABLE
RETURN _identity_of(caller_role) = owner OR _is_admin(caller_role) OR _granted_to(caller_role, operators);

-- Read as the caller: the rows of the other tables follow their schedule's.
ALTER TABLE routine_schedules ENABLE ROW LEVEL SECURITY;
CREATE POLICY watchers_read ON routine_schedules FOR SELECT
    USING (owner = (SELECT identity()) OR _granted_to(_current_role(), operators));
ALTER TABLE routine_definitions ENABLE ROW LEVEL SECURITY;
CREATE POLICY watchers_read ON routine_definitions FOR SELECT
    USING (EXISTS (SELECT FROM routine_schedules s WHERE s.id = routine_definitions.schedule_id));
ALTER TABLE routine_days ENABLE ROW LEVEL SECURITY;
CREATE POLICY watchers_read ON routine_days FOR SELECT
    USING (EXISTS (SELECT FROM routine_schedules s WHERE s.id = routine_days.schedule_id));
ALTER TABLE routine_log ENABLE ROW LEVEL SECURITY;
CREATE POLICY watchers_read ON routine_log FOR SELECT
    USING (EXISTS (SELECT FROM routine_schedules s WHERE s.id = routine_log.schedule_id));
GRANT SELECT ON routine_schedules, routine_log TO pgjobs_user;
-- Every column but the arguments and the command as written: an operator reads them masked.
GRANT SELECT (schedule_id, routine, group_name, external, realtime, runtimes, dependencies, computer, seq,
              args_shown, command_shown)
    ON routine_definitions TO pgjobs_user;
GRANT SELECT (schedule_id, day, routine, group_name, external, realtime, runtimes, dependencies, computer,
              seq, args_shown, command_shown, status, last_message, last_level, last_message_at, due_since,
              job_id, posted_at, started_at, ended_at, restarts, ending_since, restart_asked_by, run_order)
    ON routine_days TO pgjobs_user;

-- The scheduler is heard of when it wrote the schedule's state within pg_jobs.routines_stale_after.
CREATE FUNCTION _routines_heard(state_at timestamptz) RETURNS boolean
LANGUAGE sql STABLE
RETURN state_at > now() - current_setting('pg_jobs.routines_stale_after')::interval;
GRANT EXECUTE ON FUNCTION _routines_heard TO pgjobs_user;

-- The dependencies a routine still waits for: a batch one has not completed, a realtime one
-- does not run.
CREATE FUNCTION _routine_waits_for(schedule_id bigint, day date, dependencies text[]) RETURNS text[]
LANGUAGE sql STABLE
RETURN ARRAY(SELECT x FROM unnest(dependencies) x
             WHERE NOT EXISTS (SELECT FROM routine_days p
                               WHERE p.schedule_id = _routine_waits_for.schedule_id AND p.day = _routine_waits_for.day
                                 AND p.routine = x
                                 AND p.status = CASE WHEN p.realtime THEN 'running' ELSE 'completed' END));
GRANT EXECUTE ON FUNCTION _routine_waits_for TO pgjobs_user;

-- Today's routines of every schedule the caller may watch, with their status: WAS RUNNING for
-- every routine of a schedule whose scheduler is not heard of.
CREATE VIEW routines_today WITH (security_invoker = true) AS
SELECT s.schedule, s.owner::regrole AS owner, d.routine, d.group_name, d.computer, d.realtime, d.external,
       _routine_runtimes_text(d.runtimes) AS runtimes, d.args_shown AS args,
       d.dependencies,
       _routine_waits_for(d.schedule_id, d.day, d.dependencies) AS waits_for,
       CASE WHEN _routines_heard(s.state_at) THEN d.status ELSE 'WAS RUNNING' END AS status,
       d.last_message, d.last_level, d.last_message_at, d.posted_at, d.started_at, d.ended_at,
       d.job_id, d.restarts, d.seq, d.run_order, d.day,
       NOT d.external AND NOT _routine_is_scheduler(d.routine) AS commandable
FROM routine_days d
JOIN routine_schedules s ON s.id = d.schedule_id AND s.day = d.day;
COMMENT ON VIEW routines_today IS
    'Today''s routines of the schedules the caller may watch, with their status (WAS RUNNING when '
    'the scheduler is not heard of), last message and run times; ORDER BY run_order for the run '
    'order. commandable: Restart and Stop apply (not the scheduler itself, not an external routine). '
    'Arguments and the last message are masked.';
GRANT SELECT ON routines_today TO pgjobs_user;

CREATE VIEW routines_realtime WITH (security_invoker = true) AS
SELECT * FROM routines_today WHERE realtime;
CREATE VIEW routines_batch WITH (security_invoker = true) AS
SELECT * FROM routines_today WHERE NOT realtime;
COMMENT ON VIEW routines_realtime IS 'routines_today''s realtime routines.';
COMMENT ON VIEW routines_batch IS 'routines_today''s batch routines.';
GRANT SELECT ON routines_realtime, routines_batch TO pgjobs_user;

-- Every schedule the caller may watch: its switch, what its scheduler reports, and the counts
-- of the SCHED tabs.
CREATE VIEW routine_schedule_list WITH (security_invoker = true) AS
SELECT s.schedule, s.owner::regrole AS owner, s.time_zone,
       ARRAY(SELECT r::regrole FROM unnest(s.operators) r WHERE EXISTS (SELECT FROM pg_roles g WHERE g.oid = r))
           AS operators,
       (SELECT count(*) FROM routine_definitions d WHERE d.schedule_id = s.id)::integer AS routines,
       coalesce(c.realtime, 0) AS realtime, coalesce(c.realtime_failing, 0) AS realtime_failing,
       coalesce(c.batch, 0) AS batch, coalesce(c.batch_failing, 0) AS batch_failing,
       s.mode, s.mode_by::regrole AS mode_by, s.mode_at,
       CASE WHEN _routines_heard(s.state_at) THEN s.doing ELSE 'not heard of' END AS doing,
       s.state_at, NOT coalesce(_routines_heard(s.state_at), false) AS not_known, s.day, s.loaded_at
FROM routine_schedules s
LEFT JOIN LATERAL (
    SELECT count(*) FILTER (WHERE t.realtime)::integer AS realtime,
           count(*) FILTER (WHERE t.realtime AND _routine_failing(t.status))::integer AS realtime_failing,
           count(*) FILTER (WHERE NOT t.realtime)::integer AS batch,
           count(*) FILTER (WHERE NOT t.realtime AND _routine_failing(t.status))::integer AS batch_failing
    FROM routines_today t WHERE t.schedule = s.schedule AND t.owner = s.owner::regrole
) c ON true;
COMMENT ON VIEW routine_schedule_list IS
    'The schedules the caller may watch: routines in the definition, today''s realtime and batch '
    'counts and how many fail, the switch (mode, who asked, when), and what the scheduler reports '
    '(doing; not_known when it has not written the state for pg_jobs.routines_stale_after).';
GRANT SELECT ON routine_schedule_list TO pgjobs_user;

-- The definitions the caller may see, as edited (arguments and command masked).
CREATE VIEW routine_definition WITH (security_invoker = true) AS
SELECT s.schedule, s.owner::regrole AS owner, d.routine, d.group_name, d.external, d.realtime,
       _routine_runtimes_text(d.runtimes) AS runtimes, d.args_shown AS args,
       d.dependencies, d.computer, d.seq, d.command_shown AS command
FROM routine_definitions d
JOIN routine_schedules s ON s.id = d.schedule_id;
COMMENT ON VIEW routine_definition IS
    'The definitions of the schedules the caller may watch, arguments and command masked '
    '(routines_export gives the owner its own as written).';
GRANT SELECT ON routine_definition TO pgjobs_user;

-- Today's routines grouped by group, computer, status or schedule: each group's status is
-- RUNNING when all of it runs, else its most pressing status, with the count of each.
CREATE FUNCTION routine_groups(by text DEFAULT 'group', realtime boolean DEFAULT NULL,
                               schedule text DEFAULT NULL)
RETURNS TABLE (group_key text, status text, routines integer, failing integer, counts jsonb)
LANGUAGE c STABLE AS 'MODULE_PATHNAME', 'routine_groups';
COMMENT ON FUNCTION routine_groups IS
    'Today''s routines grouped (by group, computer, status or schedule; realtime or batch only, one '
    'schedule only): RUNNING when all of a group runs, else its most pressing status, and counts.';
GRANT EXECUTE ON FUNCTION routine_groups TO pgjobs_user;

CREATE VIEW routine_messages WITH (security_invoker = true) AS
SELECT s.schedule, s.owner::regrole AS owner, l.routine, l.at, l.level, l.message,
       l.sender::regrole AS sender, l.command
FROM routine_log l
JOIN routine_schedules s ON s.id = l.schedule_id;
COMMENT ON VIEW routine_messages IS
    'What routines said and the commands sent for them (sender null: the scheduler).';
GRANT SELECT ON routine_messages TO pgjobs_user;

-- ---- Definitions, the switch, messages and a person's commands: src/api/routines.rs ----

-- The owner part of OWNER/NAME, as an identity (null for a plain NAME, an unknown role: 0).
CREATE FUNCTION _routines_named_owner(name text) RETURNS oid
LANGUAGE sql STABLE
RETURN CASE WHEN strpos(name, '/') > 0
            THEN coalesce(_identity_of(to_regrole(substring(name FROM '^(.*)/[^/]*$'))), 0) END;

CREATE FUNCTION _routine_log_command(schedule_id bigint, routine text, what text, sender oid) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    INSERT INTO routine_log (schedule_id, routine, level, message, sender, command)
    VALUES (schedule_id, routine, 'info',
            'SCHED: ' || what || ' of ' || routine
            || CASE WHEN sender IS NULL THEN ' by the scheduler' ELSE ' sent by ' || sender::regrole::text END,
            sender, true);
END;

-- Whether the run a day row points at has not finished.
CREATE FUNCTION _routine_run_alive(d routine_days) RETURNS boolean
LANGUAGE sql STABLE
RETURN d.job_id IS NOT NULL AND EXISTS (SELECT FROM jobs j WHERE j.id = d.job_id);

-- ---- The scheduler ----

CREATE FUNCTION _last_line(t text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN nullif((regexp_match(rtrim(t, E' \t\r\n'), '([^\n]*)$'))[1], '');

-- The last line a run wrote (masked: operators read it), and when: from a job's progress (the
-- stream written last) or a finished job's result.
CREATE FUNCTION _routine_output(said jsonb, changed timestamptz)
RETURNS TABLE (line text, at timestamptz)
LANGUAGE sql IMMUTABLE
BEGIN ATOMIC
    SELECT _mask_text(o.line), coalesce(o.at, changed)
    FROM (VALUES (_last_line(said ->> 'stdout'), (said ->> 'stdout_at')::timestamptz, 1),
                 (_last_line(said ->> 'stderr'), (said ->> 'stderr_at')::timestamptz, 2)) o(line, at, stream)
    WHERE o.line IS NOT NULL
    ORDER BY o.at DESC NULLS LAST, o.stream
    LIMIT 1;
END;

-- What is known of each routine of a schedule's day, and what follows from it
-- (pg_jobs_core::routine): its status, and the command due for it, if any.
CREATE FUNCTION _routine_decisions(schedule_id bigint, today date, at timestamptz)
RETURNS TABLE (routine text, started_at timestamptz, ended_at timestamptz, last_message text,
               last_level text, last_message_at timestamptz, status text, command text)
LANGUAGE sql STABLE
BEGIN ATOMIC
    SELECT f.routine, f.started_at, f.ended_at, f.last_message, f.last_level, f.last_message_at,
           r.status, r.command
    FROM (
        SELECT d.routine, d.realtime, d.external, d.posted_at, d.restarts,
               d.restart_asked_by IS NOT NULL AS restart_asked, d.ending_since IS NOT NULL AS ending,
               x.run, x.started_at, x.ended_at,
               CASE WHEN d.realtime OR d.runtimes = '{}' THEN d.due_since
                    ELSE (SELECT max((today + t) AT TIME ZONE s.time_zone) FROM unnest(d.runtimes) t
                          WHERE (today + t) AT TIME ZONE s.time_zone <= _routine_decisions.at) END AS due_at,
               cardinality(_routine_waits_for(d.schedule_id, today, d.dependencies)) = 0 AS dependencies_done,
               greatest(m.at, x.output_at, x.started_at, x.ended_at) AS last_sign,
               n.message AS last_message, n.level AS last_level, n.at AS last_message_at
        FROM routine_days d
        JOIN routine_schedules s ON s.id = d.schedule_id
        LEFT JOIN LATERAL (
            SELECT CASE WHEN j.status = 'created' THEN 'waiting'
                        WHEN j.progress ->> 'token' = j.lease_token::text THEN 'running'
                        WHEN j.status = 'aborted' THEN 'running'
                        ELSE 'fetched' END AS run,
                   (j.progress ->> 'started_at')::timestamptz AS started_at, NULL::timestamptz AS ended_at,
                   o.line, o.at AS output_at
            FROM jobs j
            LEFT JOIN LATERAL _routine_output(j.progress, (j.progress ->> 'changed')::timestamptz) o ON true
            WHERE j.id = d.job_id
            UNION ALL
            SELECT CASE h.status WHEN 'completed' THEN 'completed' WHEN 'failed' THEN 'failed' ELSE 'cancelled' END,
                   coalesce(d.started_at, h.start_time), h.end_time, o.line, o.at
            FROM job_history h
            LEFT JOIN LATERAL _routine_output(h.result, h.end_time) o ON true
            WHERE h.id = d.job_id AND NOT EXISTS (SELECT FROM jobs j WHERE j.id = d.job_id)
        ) x ON true
        -- The latest of the routine's own messages (its sign of life), and the latest of any kind.
        LEFT JOIN LATERAL (
            SELECT l.at FROM routine_log l
            WHERE l.schedule_id = d.schedule_id AND l.routine = d.routine AND NOT l.command
              AND l.at >= today::timestamp AT TIME ZONE s.time_zone
            ORDER BY l.at DESC LIMIT 1
        ) m ON true
        LEFT JOIN LATERAL (
            SELECT c.message, c.level, c.at FROM (
                SELECT l.message, l.level, l.at FROM routine_log l
                WHERE l.schedule_id = d.schedule_id AND l.routine = d.routine
                  AND l.at >= today::timestamp AT TIME ZONE s.time_zone
                UNION ALL
                SELECT x.line, _routine_line_level(x.line), x.output_at WHERE x.line IS NOT NULL
            ) c ORDER BY c.at DESC NULLS LAST LIMIT 1
        ) n ON true
        WHERE d.schedule_id = _routine_decisions.schedule_id AND d.day = today
    ) f
    CROSS JOIN LATERAL _routine_decide(_routine_decisions.at, f.realtime, f.external,
                                       _routine_is_scheduler(f.routine), f.due_at, f.dependencies_done,
                                       f.run, f.posted_at, f.last_sign, f.last_level, f.restarts,
                                       f.restart_asked, f.ending) r;
END;

-- The status task: each routine's status and last message. A routine whose row is held (a
-- person's restart or stop in an open transaction) keeps its status until a later round.
CREATE FUNCTION _routines_status(schedule_id bigint, today date, at timestamptz) RETURNS void
LANGUAGE sql
BEGIN ATOMIC
    WITH f AS (
        SELECT * FROM _routine_decisions(_routines_status.schedule_id, today, _routines_status.at)
    ), changed AS (
        SELECT d.routine FROM routine_days d JOIN f ON f.routine = d.routine
        WHERE d.schedule_id = _routines_status.schedule_id AND d.day = today
          -- Every 2 seconds: only what changed is written (and locked).
          AND (d.status, d.last_message, d.last_level, d.last_message_at, d.started_at, d.ended_at)
              IS DISTINCT FROM (f.status, f.last_message, f.last_level, f.last_message_at,
                                coalesce(f.started_at, d.started_at), f.ended_at)
        FOR NO KEY UPDATE OF d SKIP LOCKED
    )
    UPDATE routine_days d
    SET status = f.status, last_message = f.last_message, last_level = f.last_level,
        last_message_at = f.last_message_at, started_at = coalesce(f.started_at, d.started_at),
        ended_at = f.ended_at
    FROM f JOIN changed c ON c.routine = f.routine
    WHERE d.schedule_id = _routines_status.schedule_id AND d.day = today AND d.routine = f.routine;
END;

-- The scheduler's round by hand (the tests), as the launcher runs it: every schedule's, each on
-- its own (one that fails is reported and the others go on).
CREATE FUNCTION _routines_tick(at timestamptz) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', '_routines_tick';

-- ---- The public functions (src/api/routines.rs) ----

CREATE FUNCTION routines_create(schedule text, time_zone text DEFAULT 'UTC') RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'routines_create';
COMMENT ON FUNCTION routines_create IS
    'Makes a routine schedule of yours (or sets the time zone of its runtimes); routines_put and '
    'routines_import make one in UTC when it does not exist. Names are each owner''s: another role '
    'may have a schedule of the same name.';
GRANT EXECUTE ON FUNCTION routines_create TO pgjobs_user;

CREATE FUNCTION routines_put(schedule text, routine text, group_name text DEFAULT '',
    realtime boolean DEFAULT false, runtimes text DEFAULT '', args text DEFAULT '',
    dependencies text DEFAULT '', computer text DEFAULT NULL, seq integer DEFAULT NULL,
    external boolean DEFAULT false, command text DEFAULT '')
RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'routines_put';
COMMENT ON FUNCTION routines_put IS
    'Adds a routine to your schedule or changes it; returns the number of routines. runtimes: '
    '''HH:MM,HH:MM''; dependencies: routines, comma-separated. Read by the scheduler at the next '
    'day, or now with routines_reload.';
GRANT EXECUTE ON FUNCTION routines_put TO pgjobs_user;

CREATE FUNCTION routines_remove(schedule text, routine text) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'routines_remove';
COMMENT ON FUNCTION routines_remove IS 'Removes a routine from your schedule''s definition.';
GRANT EXECUTE ON FUNCTION routines_remove TO pgjobs_user;

CREATE FUNCTION routines_import(schedule text, csv text) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'routines_import';
COMMENT ON FUNCTION routines_import IS
    'Replaces your schedule''s definition with a CSV (the columns of routines_export); all or nothing.';
GRANT EXECUTE ON FUNCTION routines_import TO pgjobs_user;

CREATE FUNCTION routines_export(schedule text) RETURNS text
LANGUAGE c AS 'MODULE_PATHNAME', 'routines_export';
COMMENT ON FUNCTION routines_export IS
    'Your schedule''s definition as CSV, arguments and commands as written (unmasked): '
    'routine,group,external,realtime,runtimes,args,dependencies,computer,seq,command.';
GRANT EXECUTE ON FUNCTION routines_export TO pgjobs_user;

CREATE FUNCTION routines_drop(schedule text) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'routines_drop';
COMMENT ON FUNCTION routines_drop IS 'Drops your schedule, its definition, state and messages (its running routines go on).';
GRANT EXECUTE ON FUNCTION routines_drop TO pgjobs_user;

CREATE FUNCTION routines_grant(schedule text, role regrole) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'routines_grant';
COMMENT ON FUNCTION routines_grant IS
    'Lets the members of a role you are a member of watch your schedule, switch its commands, restart '
    'and stop its routines (they read its arguments masked).';
GRANT EXECUTE ON FUNCTION routines_grant TO pgjobs_user;

CREATE FUNCTION routines_revoke(schedule text, role regrole) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'routines_revoke';
COMMENT ON FUNCTION routines_revoke IS 'Takes back routines_grant.';
GRANT EXECUTE ON FUNCTION routines_revoke TO pgjobs_user;

CREATE FUNCTION routines_reload(schedule text) RETURNS void
LANGUAGE c AS 'MODULE_PATHNAME', 'routines_reload';
COMMENT ON FUNCTION routines_reload IS
    'Has the scheduler read the definition into today''s state now, not at the next day.';
GRANT EXECUTE ON FUNCTION routines_reload TO pgjobs_user;

CREATE FUNCTION routines_mode(schedule text)
RETURNS TABLE (asked text, asked_by regrole, asked_at timestamptz, doing text,
               state_at timestamptz, not_known boolean)
LANGUAGE c AS 'MODULE_PATHNAME', 'routines_mode';
COMMENT ON FUNCTION routines_mode IS
    'A schedule''s switch: what was asked (observe or control), by whom (null: the setting '
    'pg_jobs.routines_start_mode), when, and what the scheduler reports it is doing.';
GRANT EXECUTE ON FUNCTION routines_mode TO pgjobs_user;

CREATE FUNCTION routines_set_mode(schedule text, mode text)
RETURNS TABLE (asked text, asked_by regrole, asked_at timestamptz, doing text,
               state_at timestamptz, not_known boolean)
LANGUAGE c AS 'MODULE_PATHNAME', 'routines_set_mode';
COMMENT ON FUNCTION routines_set_mode IS
    'observe: the scheduler keeps the status and sends no command; control: it starts and restarts '
    'routines (what was due is started at once). Kept across restarts.';
GRANT EXECUTE ON FUNCTION routines_set_mode TO pgjobs_user;

CREATE FUNCTION routine_restart(schedule text, routine text) RETURNS text
LANGUAGE c AS 'MODULE_PATHNAME', 'routine_restart';
COMMENT ON FUNCTION routine_restart IS
    'Ends the routine if it runs and starts it again, in either mode; logged with who sent it.';
GRANT EXECUTE ON FUNCTION routine_restart TO pgjobs_user;

CREATE FUNCTION routine_stop(schedule text, routine text) RETURNS text
LANGUAGE c AS 'MODULE_PATHNAME', 'routine_stop';
COMMENT ON FUNCTION routine_stop IS
    'Ends the routine, in either mode; logged with who sent it. A realtime routine is started '
    'again once silent for 45 s: remove it from the definition to keep it stopped.';
GRANT EXECUTE ON FUNCTION routine_stop TO pgjobs_user;

CREATE FUNCTION routine_message(routine text, level text, message text) RETURNS integer
LANGUAGE c AS 'MODULE_PATHNAME', 'routine_message';
COMMENT ON FUNCTION routine_message IS
    'A routine''s message (level info, warning, error or completed), kept for each schedule of '
    'yours that lists it; returns how many.';
GRANT EXECUTE ON FUNCTION routine_message TO pgjobs_user;
