-- Loaded last: who may call which function, and what pg_dump keeps.

-- Nothing is granted to PUBLIC. Members of pgjobs_user read their own rows (row-level security)
-- and call the public functions, C functions of the library that read their caller and write as
-- the extension's owner only inside their own statements (src/api/call.rs). The remaining _
-- functions are internal: only the extension's owner (and so the background worker) runs them,
-- except the few that policies, views and inlined SQL functions call as the caller. Each
-- function's grant follows its declaration in sql/ (members of pgjobs_agent call the agent's
-- functions, sql/085_batch.sql; pgjobs_api, the web server's role, _api_token_role); those
-- declared in Rust (#[pg_extern]) are granted here.
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @extschema@ FROM PUBLIC;
GRANT EXECUTE ON FUNCTION identity, _current_role, _opaque_id, retry_delay_seconds,
    schedule_next_slot, _batch_status, _batch_status_rank, _batch_status_word, _mask_args,
    _mask_text, _queue_minute_counts, _routine_is_scheduler, _routine_failing,
    _routine_status_rank, _routine_status_word, job_flag_names, capability_names, worker_flag_names
TO pgjobs_user;

-- pg_dump keeps the rows of every table of the extension and where every sequence has got to;
-- not launcher_state, which says which process runs now, nor installation_key, which each
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
          AND c.relkind IN ('r', 'S') AND c.oid NOT IN ('launcher_state'::regclass, 'installation_key'::regclass)
    LOOP
        PERFORM pg_extension_config_dump(member, '');
    END LOOP;
END
$$;
