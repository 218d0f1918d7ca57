-- What a member may call. Every public function; of the internal ones (named _...), only those
-- that policies, views and inlined SQL functions call as the caller. Nothing is granted to PUBLIC.
-- A new grant shows up here: _identity_of, which lists every proxy's root, was granted once.
SELECT p.oid::regprocedure AS internal_function_members_may_call
FROM pg_proc p
WHERE p.pronamespace = 'pgjobs'::regnamespace AND p.proname LIKE '\_%'
  AND has_function_privilege('pgjobs_user', p.oid, 'EXECUTE')
ORDER BY p.oid::regprocedure::text COLLATE "C";
SELECT p.oid::regprocedure AS granted_to_public
FROM pg_proc p
WHERE p.pronamespace = 'pgjobs'::regnamespace
  AND (p.proacl IS NULL OR EXISTS (SELECT FROM aclexplode(p.proacl) a WHERE a.grantee = 0))
ORDER BY p.oid::regprocedure::text COLLATE "C";

CREATE ROLE regress_member IN ROLE pgjobs_user;
SELECT regress.as_role('regress_member', $$SELECT pgjobs._identity_of('postgres'::regrole)::text$$) AS identity_of_another;
-- The check of join credentials the scheduler's SQL calls, which runs as the extension's owner and
-- counts failures against the identity it is given, is not the members': they cannot name another
-- caller to it.
SELECT regress.as_role('regress_member', $$SELECT pgjobs._join_check('postgres'::regrole, NULL, NULL, NULL)::text$$) AS join_check_as_another;
-- A call runs as the extension's owner only inside its own statements: after a call that failed
-- there (an error raised by its checks after a statement, and one raised inside a statement) and
-- was caught, the caller is still itself, with its own rights.
SET ROLE regress_member;
DO $$
BEGIN
    BEGIN
        PERFORM pgjobs.jobs_complete(999, gen_random_uuid());
    EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'caught: %', SQLERRM;
    END;
    BEGIN
        PERFORM pgjobs.jobs_schedule('tz', '@hourly', '{"task": "t"}', '{"time_zone": "utc"}');
    EXCEPTION WHEN OTHERS THEN
        RAISE NOTICE 'caught: %', SQLERRM;
    END;
END
$$;
SELECT current_user AS still_the_caller;
SELECT count(*) FROM pgjobs.job_keys;
RESET ROLE;
DROP ROLE regress_member;
