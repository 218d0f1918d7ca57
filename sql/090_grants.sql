-- Loaded last: who may call which function, and what pg_dump keeps.

-- Nothing is granted to PUBLIC. Members of pgjobs_user read their own rows (row-level security)
-- and call the public functions, C functions of the library that read their caller and write as
-- the extension's owner only inside their own statements (src/api/call.rs). The remaining _
-- functions are internal: only the extension's owner (and so the background worker) runs them,
-- except the few that policies, views and inlined SQL functions call as the caller.

REVOKE ALL ON ALL FUNCTIONS IN SCHEMA @extschema@ FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    identity(), _current_role(), _join_address_ok(text), _opaque_id(), _job_opaque_id(bigint, oid), _invalid(text, text), _row_count(integer, text), _finite_date(date, text), _utc_month(timestamptz), _utc_midnight(date),
    retry_delay_seconds(integer, double precision, double precision),
    schedule_next_slot(text, text, timestamptz), _schedule_next_epoch(text, text, double precision),
    jobs_add(text, jsonb, text, integer, timestamptz, integer, interval, interval, interval, text, text, interval, text, bigint[], text[], text),
    jobs_add_batch(jsonb), jobs_unblock(bigint), jobs_dependency_results(bigint, uuid),
    jobs_claim(text, text[], integer, interval),
    jobs_heartbeat(bigint, uuid, interval), jobs_progress(bigint, uuid, jsonb, interval),
    jobs_snooze(bigint, uuid, interval), jobs_result(bigint), jobs_wait(bigint[], interval),
    jobs_complete(bigint[], uuid[], jsonb[]), jobs_complete(bigint, uuid, jsonb),
    jobs_complete_and_claim(bigint[], uuid[], jsonb[], text, text[], integer, interval),
    jobs_fail(bigint[], uuid[], text[]), jobs_fail(bigint, uuid, text), jobs_release(bigint[], uuid[]),
    jobs_abort(bigint), jobs_reschedule(bigint[], timestamptz), jobs_delete(bigint[]),
    jobs_ready_signal(text),
    jobs_queue_history(text, text), jobs_dead_letter(text, text), jobs_retry(bigint[]),
    jobs_retry_where(text, text, date, text, integer), jobs_pause(text), jobs_resume(text), jobs_limit(text, integer), jobs_key_limit(text, integer, boolean, text), jobs_key_rate_limit(text, integer, interval, text), jobs_key_unlimit(text, text), jobs_rate_limit(text, integer, interval), jobs_unlimit(text),
    jobs_find(job_status, text, text, text, date, integer, integer, integer), jobs_counts(date),
    jobs_add_sql(text, timestamptz, integer, integer, interval, interval, interval, text, text),
    jobs_schedule(text, text, jsonb, jsonb),
    jobs_alter_schedule(text, text, jsonb, jsonb),
    jobs_enable_schedule(text), jobs_disable_schedule(text),
    jobs_unschedule(text), jobs_run_schedule(text),
    jobs_add_proxy(regrole, regrole),
    jobs_remove_proxy(regrole),
    jobs_api_token_create(text), jobs_api_token_revoke(bigint),
    batch_post(text, text[], text, text, text, text, boolean, text[], timestamptz, integer, integer, jsonb, jsonb, jsonb),
    batch_cancel(bigint[]), batch_cancel_where(date, text[], text, text, text), batch_release(bigint),
    batch_find(date, text[], text, integer, integer), batch_get(text),
    batch_groups(text, date, text[], text), batch_group_jobs(text, text, date, text[], text, integer, integer),
    -- What the batch views and reading functions call as the caller.
    _extension_claimant(), _is_batch_queue(text), _text_array(jsonb), _bigint_array(jsonb),
    _batch_status(text, boolean, boolean, boolean), _batch_status_rank(text), _batch_status_word(integer),
    _mask_args(text[]), _mask_text(text), _batch_selection(date, text[], text), _batch_month_list(), _batch_unpartitioned_months(), _history_month_partitions(), _batch_group_key(text, timestamptz, text, text, text, text, text),
    _batch_check_reading(text, text[], integer, integer),
    _queues(boolean), _queue_live_counts(), _queue_minute_counts(),
    _batch_label(jsonb), _job_blocked(bigint), _blocked_by(bigint), _batch_row_status(job_status, timestamptz, bigint, jsonb, uuid), _batch_active_counts(),
    routines_create(text, text),
    routines_put(text, text, text, boolean, text, text, text, text, integer, boolean, text),
    routines_remove(text, text), routines_import(text, text), routines_export(text), routines_drop(text),
    routines_grant(text, regrole), routines_revoke(text, regrole), routines_reload(text),
    routines_mode(text), routines_set_mode(text, text),
    routine_restart(text, text), routine_stop(text, text), routine_message(text, text, text),
    routine_groups(text, boolean, text),
    compute_deploy(jsonb), compute_add_slices(bigint, jsonb, integer), compute_pause(bigint),
    compute_resume(bigint), compute_close(bigint), compute_cancel(bigint), compute_fund(bigint, numeric),
    compute_worker_register(text, jsonb, jsonb, double precision, double precision, double precision, jsonb),
    compute_worker_join(uuid, text, text), compute_worker_join_challenge(uuid), compute_worker_join_signed(uuid, text, text),
    compute_worker_leave(uuid),
    compute_fetch(integer), compute_progress(uuid, integer[]), compute_return(uuid, integer[]),
    compute_reject(uuid, text, text, integer),
    compute_submit(uuid, integer[], text[], double precision[], double precision[], double precision[], bigint[], bigint[]),
    compute_result_text(text), compute_market_value(),
    -- What job_fin_data calls as the caller.
    _compute_pending(bigint, numeric),
    -- What the routine views, policies and routine_groups call as the caller.
    _granted_to(oid, oid[]), _routines_heard(timestamptz), _routine_waits_for(bigint, date, text[]), _routine_runtimes_text(time[]),
    _routine_is_scheduler(text), _routine_failing(text),
    _routine_status_rank(text), _routine_status_word(integer)
TO pgjobs_user;

-- An agent's role (a member of pgjobs_agent) registers its computer and takes, renews and
-- reports the batch jobs that computer may run, and nothing else.
GRANT EXECUTE ON FUNCTION
    batch_register(text, integer, jsonb), batch_ready_signals(text), batch_cancel_signal(text),
    batch_claim(text, integer),
    batch_started(bigint, uuid, integer), batch_heartbeat(bigint[], uuid[], text[], text[]),
    batch_finish(bigint, uuid, integer, interval, text, text, boolean), batch_hand_back(bigint[], uuid[]),
    batch_report_and_claim(text, integer, bigint[], uuid[], integer[], bigint[], uuid[], integer[],
                           interval[], text[], text[], boolean[]),
    -- What the policy of jobs calls as the caller: an agent's role is refused the table, not this.
    _extension_claimant()
TO pgjobs_agent;

-- The web server's role (a member of pgjobs_api) learns the role a token acts as, and nothing else.
GRANT EXECUTE ON FUNCTION _api_token_role(text) TO pgjobs_api;

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
