-- The access model on the queue and schedule objects, cell by cell, as non-superuser roles:
-- an owner, a proxy of the owner, another identity, a worker's identity (not registered for
-- the owner), and a role without pgjobs_user. Denied cells are checked as closely as allowed ones.
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.schedules, pgjobs.proxies;

CREATE ROLE regress_owner;
CREATE ROLE regress_proxy;
CREATE ROLE regress_other;
CREATE ROLE regress_worker;
CREATE ROLE regress_nobody;
GRANT pgjobs_user TO regress_owner, regress_proxy, regress_other, regress_worker;
-- The owner may register regress_proxy because it can already act as it.
GRANT regress_proxy TO regress_owner;


-- The owner adds two jobs and registers its proxy; the proxy adds a third, owned by the owner.
SELECT regress.as_role('regress_owner', $$SELECT pgjobs.jobs_add('owned', '{"secret": 1}')$$) AS job_1;
SELECT regress.as_role('regress_owner', $$SELECT pgjobs.jobs_add('owned_too', queue => 'q2')$$) AS job_2;
SELECT regress.as_role('regress_owner', $$SELECT pgjobs.jobs_add_proxy('regress_proxy')$$) AS proxy_added;
SELECT regress.as_role('regress_proxy', $$SELECT pgjobs.jobs_add('by_proxy')$$) AS job_3;
SELECT regress.as_role('regress_other', $$SELECT pgjobs.jobs_add('others')$$) AS job_4;
SELECT id, owner, task FROM pgjobs.job_list ORDER BY id;

-- Reading: each role sees its identity's rows of every table and view, and nothing else.
SELECT role, object,
       regress.as_role(role, format('SELECT coalesce(string_agg(x::text, '','' ORDER BY x), ''nothing'') FROM (SELECT %s AS x FROM pgjobs.%s) r', key, object)) AS sees
FROM (VALUES ('regress_owner'), ('regress_proxy'), ('regress_other'), ('regress_worker'), ('regress_nobody')) AS r(role),
     (VALUES ('jobs', 'id'), ('job_history', 'id'), ('job_list', 'id'),
             ('schedules', 'name'), ('jobs_schedules', 'name'), ('job_runs', 'job_id'),
             ('proxies', 'proxy::regrole'), ('job_keys', 'job_id'), ('launcher_state', 'pid')) AS o(object, key)
ORDER BY object, role;
SELECT role, regress.as_role(role, $$SELECT string_agg(id::text, ',' ORDER BY id) FROM pgjobs.jobs_find()$$) AS finds,
       regress.as_role(role, $$SELECT string_agg(queue || ':' || jobs, ',') FROM pgjobs.jobs_counts()$$) AS counts
FROM (VALUES ('regress_owner'), ('regress_proxy'), ('regress_other'), ('regress_nobody')) AS r(role);

-- Changing jobs: the owner (and its proxy) may change name, description, link and listed of
-- its jobs and nothing else; rows are added and removed only through the functions.
SELECT role, statement, regress.as_role(role, statement) AS result
FROM (VALUES ('regress_owner'), ('regress_proxy'), ('regress_other'), ('regress_nobody')) AS r(role),
     (VALUES ($$UPDATE pgjobs.jobs SET name = 'renamed', link = 'https://example.org' WHERE id = 1 RETURNING name$$),
             ($$UPDATE pgjobs.jobs SET task = 'hijacked' WHERE id = 1 RETURNING task$$),
             ($$UPDATE pgjobs.jobs SET owner = 10 WHERE id = 1 RETURNING owner$$),
             ($$UPDATE pgjobs.jobs SET payload = '{}' WHERE id = 1 RETURNING id$$),
             ($$INSERT INTO pgjobs.jobs (owner, claimable_by, task, queue, priority, run_at, max_attempts, backoff, max_backoff, lease, payload, due_at)
                VALUES (10, 10, 't', 'q', 0, now(), 1, '1s', '1s', '1s', '{}', now()) RETURNING id$$),
             ($$DELETE FROM pgjobs.jobs WHERE id = 1 RETURNING id$$),
             ($$DELETE FROM pgjobs.job_history RETURNING id$$)) AS s(statement)
ORDER BY role, statement;
SELECT id, task, name, link FROM pgjobs.jobs ORDER BY id;

-- Claiming: a worker claims its identity's jobs only; the proxy works for the owner.
SELECT regress.as_role('regress_other', $$SELECT coalesce(string_agg(id::text, ','), 'nothing') FROM pgjobs.jobs_claim('w-other', ARRAY['default', 'q2'], 10)$$) AS other_claims;
SELECT regress.as_role('regress_worker', $$SELECT coalesce(string_agg(id::text, ','), 'nothing') FROM pgjobs.jobs_claim('w-worker', ARRAY['default', 'q2'], 10)$$) AS worker_claims;
SELECT regress.as_role('regress_proxy', $$SELECT string_agg(id::text, ',' ORDER BY id) FROM pgjobs.jobs_claim('w-proxy', ARRAY['default'], 10)$$) AS proxy_claims;
SELECT regress.as_role('regress_nobody', $$SELECT string_agg(id::text, ',') FROM pgjobs.jobs_claim('w-nobody')$$) AS nobody_claims;

-- Every function that acts with more rights than its caller refuses a wrong owner, with the
-- error of a job that does not exist, and changes nothing; a stolen token is no use either. The
-- internal functions that act for any owner are not for members at all.
SELECT regress.fingerprint() AS before \gset
SELECT format('%s', lease_token) AS token_3 FROM pgjobs.jobs WHERE id = 3 \gset
SELECT role, replace(statement, :'token_3', '<token of job 3>') AS statement, regress.as_role(role, statement) AS result
FROM (VALUES ('regress_other'), ('regress_worker'), ('regress_nobody')) AS r(role),
     (VALUES ($$SELECT pgjobs.jobs_abort(2)$$),
             (format($$SELECT pgjobs.jobs_complete(3, %L)$$, :'token_3')),
             (format($$SELECT pgjobs.jobs_fail(3, %L, 'x')$$, :'token_3')),
             (format($$SELECT pgjobs.jobs_release(ARRAY[3::bigint], ARRAY[%L::uuid])$$, :'token_3')),
             (format($$SELECT pgjobs.jobs_release(3, %L)$$, :'token_3')),
             (format($$SELECT lease_state FROM pgjobs.jobs_heartbeat(3, %L)$$, :'token_3')),
             (format($$SELECT lease_state FROM pgjobs.jobs_progress(3, %L, '{"stolen": true}')$$, :'token_3')),
             (format($$SELECT pgjobs.jobs_snooze(3, %L, '1 hour')$$, :'token_3')),
             ($$SELECT status FROM pgjobs.jobs_result(3)$$),
             ($$SELECT count(*) FROM pgjobs.jobs_reschedule(ARRAY[2::bigint])$$),
             ($$SELECT count(*) FROM pgjobs.jobs_delete(ARRAY[2::bigint])$$),
             ($$SELECT pgjobs.jobs_add_proxy('regress_proxy')$$),
             ($$SELECT pgjobs.jobs_add_proxy('regress_other', root => 'regress_owner')$$),
             ($$SELECT pgjobs.jobs_remove_proxy('regress_proxy')$$),
             ($$SELECT pgjobs._finish(ARRAY[2::bigint], NULL, '{created}', 'aborted', NULL)$$),
             ($$SELECT pgjobs._add(ARRAY[ROW('t', '{}', 'default', 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::pgjobs.job_spec], 10, false, false)$$),
             ($$SELECT count(*) FROM pgjobs.jobs_history_drop('2000-01-01')$$)) AS s(statement)
ORDER BY role, statement;
SELECT regress.fingerprint() = :'before' AS unchanged;

-- The owner's proxy postpones the owner's waiting job and completes the claimed one; the owner
-- aborts its waiting one.
SELECT regress.as_role('regress_proxy', $$SELECT count(*) FROM pgjobs.jobs_reschedule(ARRAY[2::bigint], now() + interval '1 minute')$$) AS proxy_postpones;
SELECT regress.as_role('regress_proxy', format($$SELECT pgjobs.jobs_complete(3, %L, '{"done": true}')$$, :'token_3')) AS proxy_completes;
SELECT regress.as_role('regress_owner', $$SELECT pgjobs.jobs_abort(2)$$) AS owner_aborts;
SELECT id, owner::regrole, status, result FROM pgjobs.job_history ORDER BY id;

-- Schedules belong to their owner; another identity's name is its own.
SELECT regress.as_role('regress_owner', $$SELECT pgjobs.jobs_schedule('nightly', '@daily', '{"task": "n"}')$$) IS NOT NULL AS owner_scheduled;
SELECT regress.as_role('regress_other', $$SELECT pgjobs.jobs_schedule('nightly', '@hourly', '{"task": "n"}')$$) IS NOT NULL AS other_scheduled_same_name;
SELECT role, statement, regress.as_role(role, statement) AS result
FROM (VALUES ('regress_proxy'), ('regress_worker'), ('regress_nobody')) AS r(role),
     (VALUES ($$SELECT pgjobs.jobs_alter_schedule('nightly', '@weekly')$$),
             ($$SELECT pgjobs.jobs_disable_schedule('nightly')$$),
             ($$SELECT pgjobs.jobs_unschedule('nightly')$$)) AS s(statement)
ORDER BY role, statement;
SELECT name, owner, schedule, enabled FROM pgjobs.jobs_schedules ORDER BY owner::text;

-- A SQL job is the caller's: it will run with the caller's rights.
SELECT regress.as_role('regress_other', $$SELECT pgjobs.jobs_add_sql('SELECT 1', run_at => now() + interval '1 day')$$) IS NOT NULL AS other_added_sql;
SELECT owner, queue, task FROM pgjobs.job_list WHERE queue = 'pg_jobs.sql';

-- A proxy removed: its very next statement sees nothing of its root's, and what it adds is its own.
SELECT regress.as_role('regress_owner', $$SELECT pgjobs.jobs_remove_proxy('regress_proxy')$$) AS removed;
SELECT regress.as_role('regress_proxy', $$SELECT count(*) FROM pgjobs.job_list$$) AS proxy_sees;
SELECT regress.as_role('regress_proxy', $$SELECT pgjobs.jobs_add('now_mine')$$) IS NOT NULL AS proxy_added_own;
SELECT owner, task FROM pgjobs.job_list WHERE task = 'now_mine';

-- Public fields: every role reads listed jobs, and any job by its opaque id, and never more
-- than opaque id, name, description and link.
UPDATE pgjobs.jobs SET name = 'public job', description = 'for everyone', listed = true WHERE id = 1;
UPDATE pgjobs.job_history SET name = 'unlisted' WHERE id = 2;
-- The owner reads its job's opaque id (to share it) from job_opaque_ids.
SELECT regress.as_role('regress_owner', $$SELECT opaque_id FROM pgjobs.job_opaque_ids WHERE id = 2$$) AS job_2_opaque \gset
SELECT role, regress.as_role(role, $$SELECT string_agg(name, ',') FROM pgjobs.jobs_public$$) AS listed,
       regress.as_role(role, format($$SELECT name FROM pgjobs.jobs_public_lookup(%L)$$, :'job_2_opaque')) AS by_id,
       regress.as_role(role, $$SELECT count(*) FROM pgjobs.jobs_public_lookup('00000000-0000-0000-0000-000000000000')$$) AS no_such_job
FROM (VALUES ('regress_owner'), ('regress_other'), ('regress_worker'), ('regress_nobody')) AS r(role);
SELECT table_name, string_agg(column_name::text, ', ' ORDER BY ordinal_position) AS columns
FROM information_schema.columns WHERE table_schema = 'pgjobs' AND table_name = 'jobs_public'
GROUP BY table_name;
SELECT pg_get_function_result('pgjobs.jobs_public_lookup'::regproc) AS lookup_returns;

-- A hostile search_path: look-alike functions and an always-true operator planted in a schema
-- before pgjobs change nothing about what the functions check.
CREATE SCHEMA regress_evil AUTHORIZATION regress_other;
SET ROLE regress_other;
CREATE FUNCTION regress_evil.identity() RETURNS oid LANGUAGE sql AS $$ SELECT 'regress_owner'::regrole::oid $$;
CREATE FUNCTION regress_evil._is_admin(oid) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE FUNCTION regress_evil.current_setting(text) RETURNS text LANGUAGE sql AS $$ SELECT '1000' $$;
CREATE FUNCTION regress_evil.always(oid, oid) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR regress_evil.= (LEFTARG = oid, RIGHTARG = oid, FUNCTION = regress_evil.always);
CREATE FUNCTION regress_evil.eq_bigint(bigint, bigint) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$;
CREATE OPERATOR regress_evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = regress_evil.eq_bigint);
SET search_path = regress_evil, pg_catalog, pgjobs, public;
SELECT regress.error_of('SELECT pgjobs.jobs_abort(1)') AS abort_owners_job;
SELECT count(*) FILTER (WHERE task IN ('owned', 'owned_too', 'by_proxy')) AS owners_jobs_seen
FROM pgjobs.jobs WHERE owner = 'regress_owner'::regrole::oid;
SELECT pgjobs.jobs_add('evil', max_attempts => NULL) IS NOT NULL AS added;
RESET search_path;
RESET ROLE;
SELECT owner, task, max_attempts FROM pgjobs.job_list WHERE task = 'evil';
SELECT id, status FROM pgjobs.job_list WHERE id = 1;

-- A parallel plan's leader evaluates the policies' (SELECT identity()) for its workers, in
-- parallel mode, where no new snapshot may be taken: the proxy's first read after the proxies
-- changed (its identity no longer known to this backend) sees its root's jobs; it failed (XX000,
-- cannot update SecondarySnapshot during a parallel operation).
CREATE FUNCTION regress.plan_is_parallel(statement text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || statement LOOP
        IF line LIKE '%Gather%' THEN
            RETURN true;
        END IF;
    END LOOP;
    RETURN false;
END
$$;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
-- A change of proxies (none here) clears the cached identities, so that the plan below asks.
UPDATE pgjobs.proxies SET root = root WHERE false;
SET ROLE regress_proxy;
SELECT regress.plan_is_parallel($$SELECT count(*) FROM pgjobs.jobs WHERE task <> 'evil'$$) AS parallel_plan;
SELECT count(*) AS roots_jobs_read_in_parallel FROM pgjobs.jobs WHERE task <> 'evil';
RESET ROLE;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
DROP FUNCTION regress.plan_is_parallel;

SET client_min_messages = warning;
DROP SCHEMA regress_evil CASCADE;
RESET client_min_messages;
SELECT regress.reset();
TRUNCATE pgjobs.schedules, pgjobs.proxies;
DROP OWNED BY regress_owner, regress_proxy, regress_other, regress_worker, regress_nobody;
DROP ROLE regress_owner, regress_proxy, regress_other, regress_worker, regress_nobody;
