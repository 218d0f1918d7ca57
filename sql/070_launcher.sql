-- The launcher's side: its heartbeat and its round. src/bgworker.rs calls _launcher_tick() in a
-- transaction of its own, then hands ready SQL jobs to dynamic workers.

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
                                'routines', 'compute', 'run history', 'history months',
                                'batch counts'] LOOP
        BEGIN
            CASE part
            WHEN 'lost runs' THEN PERFORM _end_lost_runs(at);
            WHEN 'overdue runs' THEN PERFORM _stop_overdue_sql_jobs(at);
            WHEN 'expired leases' THEN PERFORM _rescue_expired() WHERE _leases_due();
            WHEN 'schedules' THEN PERFORM _fire_schedules(at);
            WHEN 'routines' THEN PERFORM _routines_tick(at);
            WHEN 'compute' THEN PERFORM _compute_tick(at);
            WHEN 'run history' THEN
                DELETE FROM job_runs r
                WHERE r.started_at < at - make_interval(days => current_setting('pg_jobs.history_days')::integer);
            WHEN 'history months' THEN PERFORM jobs_history_prepare(12, wait => false);
            WHEN 'batch counts' THEN PERFORM _batch_tally_fold();
            END CASE;
        EXCEPTION WHEN OTHERS THEN
            RAISE WARNING 'pg_jobs launcher: % failed: %', part, SQLERRM;
        END;
    END LOOP;

    RETURN least(
        (SELECT min(s.next_slot) FROM schedules s WHERE s.enabled),
        (SELECT min(s.run_at) FROM jobs s
         WHERE s.claimable_by = _extension_claimant() AND s.queue = _sql_queue() AND s.status = 'created'),
        _leases_next(),
        (SELECT min(r.deadline) FROM job_runs r WHERE r.status = 'running'),
        -- Routine schedules are looked at every 2 seconds.
        (SELECT at + interval '2 seconds' WHERE EXISTS (SELECT FROM routine_schedules)),
        -- Compute slices out or results to fold: the watchdog and the fold every second.
        (SELECT at + interval '1 second'
         WHERE EXISTS (SELECT FROM compute_slices s WHERE s.lease_token IS NOT NULL)
            OR EXISTS (SELECT FROM slice_reports r WHERE r.folded_seq IS NULL)
            OR EXISTS (SELECT FROM compute_tasks)),
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
          AND NOT _is_executor(r.pid)
        RETURNING r.job_id, r.pid
    ), leased AS (
        SELECT j.id FROM jobs j JOIN lost l
            ON j.id = l.job_id AND j.locked_by = _executor_name(l.pid)
        FOR UPDATE OF j SKIP LOCKED
    )
    UPDATE jobs j SET locked_until = least(j.locked_until, at - interval '1 microsecond')
    FROM leased l WHERE j.id = l.id
    RETURNING _leases_note(j.locked_until);
END;

GRANT SELECT ON launcher TO pgjobs_user;
