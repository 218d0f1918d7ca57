-- The launcher's side: its heartbeat and its round. src/bgworker/launcher.rs calls _launcher_tick() in a
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
BEGIN ATOMIC
    INSERT INTO launcher_state AS l (pid, started_at, heartbeat_at, doing)
    VALUES (pid, started_at, clock_timestamp(), doing)
    ON CONFLICT (singleton) DO UPDATE
    SET pid = excluded.pid, started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at,
        doing = excluded.doing;
END;

-- One round of the launcher's work at `at`: every domain's maintenance service (src/api/services.rs);
-- returns when it wants to be woken next.
CREATE FUNCTION _launcher_tick(at timestamptz DEFAULT statement_timestamp()) RETURNS timestamptz
LANGUAGE c AS 'MODULE_PATHNAME', '_launcher_tick';

GRANT SELECT ON launcher TO pgjobs_user;
