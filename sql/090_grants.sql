-- Loaded last: who may call which function, and what pg_dump keeps.

-- Nothing is granted to PUBLIC. Members of pgjobs_user read their own rows (row-level security)
-- and call the public functions; each public function passes a ticket naming its caller to a
-- SECURITY DEFINER function (_jobs_*), which checks it before it writes. The remaining _
-- functions are internal: only the extension's owner (and so the background worker) runs them.

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
    jobs_schedule(text, text, jsonb, jsonb),
    jobs_alter_schedule(text, text, jsonb, jsonb),
    jobs_enable_schedule(text), jobs_disable_schedule(text),
    jobs_unschedule(text),
    jobs_add_proxy(regrole, regrole),
    jobs_remove_proxy(regrole)
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
