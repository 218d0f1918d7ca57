-- No member may LOCK a relation of pgjobs in a mode stronger than ACCESS SHARE, and ACCESS SHARE
-- only where it may SELECT the whole relation: a stronger lock held in an open transaction
-- stops every other session, the launcher included. LOCK accepts only table-level grants
-- (INSERT, UPDATE, DELETE or TRUNCATE for the modes above ACCESS SHARE), so members write through
-- column-level grants and delete through functions. Every relation of the schema is tried,
-- found in pg_class, so that a relation added later is covered without a change here; the month
-- partitions of job_history too (their names carry the month, so they are shown as one line).

CREATE ROLE regress_locker;  -- an ordinary member, not a superuser
GRANT pgjobs_user TO regress_locker;
SELECT (SELECT count(*) FROM pgjobs.jobs_history_prepare(1)) >= 0 AS months_prepared;

-- The modes LOCK took, and the SQLSTATEs of the ones it refused. A lock it took is released at
-- once (the block is rolled back) so that the next mode is tried on its own.
CREATE FUNCTION regress.lock_modes(rel regclass, OUT taken text, OUT refused text)
LANGUAGE plpgsql AS $$
DECLARE
    mode text;
    states text[] := '{}';
    modes text[] := '{}';
BEGIN
    FOREACH mode IN ARRAY ARRAY['ACCESS SHARE', 'ROW SHARE', 'ROW EXCLUSIVE', 'SHARE UPDATE EXCLUSIVE',
                                'SHARE', 'SHARE ROW EXCLUSIVE', 'EXCLUSIVE', 'ACCESS EXCLUSIVE'] LOOP
        BEGIN
            EXECUTE format('LOCK TABLE %s IN %s MODE NOWAIT', rel, mode);
            modes := modes || mode;
            RAISE EXCEPTION USING ERRCODE = 'RGLCK';
        EXCEPTION
            WHEN SQLSTATE 'RGLCK' THEN NULL;
            WHEN OTHERS THEN
                IF NOT SQLSTATE = ANY (states) THEN
                    states := states || SQLSTATE;
                END IF;
        END;
    END LOOP;
    taken := array_to_string(modes, ', ');
    refused := array_to_string(states, ', ');
END
$$;
GRANT USAGE ON SCHEMA regress TO regress_locker;

SET ROLE regress_locker;
CREATE TEMP TABLE locks AS
SELECT regexp_replace(c.relname, '^job_history_\d{6}$', 'job_history_<month>') AS relation,
       c.relkind, has_table_privilege(c.oid, 'SELECT') AS may_select, l.taken, l.refused
FROM pg_class c, regress.lock_modes(c.oid) l
WHERE c.relnamespace = 'pgjobs'::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S');
RESET ROLE;

-- 42501: no privilege; 42809: a sequence, which LOCK refuses whoever asks.
SELECT DISTINCT relation, relkind, may_select, taken, refused FROM locks ORDER BY relation;
-- The rule itself: no line here.
SELECT DISTINCT relation, taken FROM locks
WHERE taken <> '' AND (taken <> 'ACCESS SHARE' OR NOT may_select) ORDER BY relation;
SELECT count(*) FILTER (WHERE relation = 'job_history_<month>') > 1 AS partitions_checked FROM locks;

DROP TABLE locks;
DROP FUNCTION regress.lock_modes(regclass);
DROP OWNED BY regress_locker;
DROP ROLE regress_locker;

-- Advisory locks: any role may take any key, so the extension's keys are ones no member can
-- compute (_lock_key: a hash keyed by installation_key). Its classes, listed in one place:
SELECT unnest(enum_range(NULL::pgjobs.lock_class)) AS lock_class;
-- Every advisory lock the extension takes is keyed so, by _lock_key in the call or in the
-- variable the call names: no line here.
SELECT p.oid::regprocedure AS function, m[1] AS unkeyed_advisory_lock
FROM pg_proc p, regexp_matches(p.prosrc, 'pg_(?:try_)?advisory_\w+\(\s*(\w+)', 'g') m
WHERE p.pronamespace = 'pgjobs'::regnamespace
  AND m[1] <> '_lock_key' AND p.prosrc !~ (m[1] || '\s*:=\s*_lock_key\(')
ORDER BY 1::text;
-- And no member can compute a key, nor read the secret.
CREATE ROLE regress_locker IN ROLE pgjobs_user;
SET ROLE regress_locker;
SELECT regress.error_of('SELECT pgjobs._lock_key(''compute_fold'', ''0'')') AS compute_a_key;
SELECT regress.error_of('SELECT key FROM pgjobs.installation_key') AS read_the_secret;
RESET ROLE;
DROP ROLE regress_locker;
