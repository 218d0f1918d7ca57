-- Another owner's opaque ids are secrets: whoever knows one reads that job's or group's public
-- fields (jobs_public_lookup, compute_group_public) and may join or link to it. EXPLAIN ANALYZE
-- counts the rows that row-level security or a view's own condition removed, and the planner's
-- estimates follow the column's statistics; so a member that may write a predicate on another
-- owner's opaque_id finds it by bisection (about 130 range probes). Here member B probes every
-- relation where it could name owner A's ids: each probe must be refused, or show the same plan
-- and the same counts whether or not the range holds A's id. A still reads its own ids. A job's
-- id is no column at all (its id and owner encrypted, src/api/opaque_ids.rs): B can neither name
-- it nor compute it, and an id B makes up or changes names no job.

CREATE ROLE regress_leak_a;  -- owns the secrets
CREATE ROLE regress_leak_b;  -- probes for them
GRANT pgjobs_user TO regress_leak_a, regress_leak_b;
GRANT USAGE ON SCHEMA regress TO regress_leak_a, regress_leak_b;

SET ROLE regress_leak_a;
SELECT pgjobs.jobs_add('leak_live') AS a_live \gset
SELECT pgjobs.jobs_add('leak_done') AS a_done \gset
SELECT pgjobs.jobs_abort(:a_done) AS a_done_status;
RESET ROLE;
SET ROLE regress_leak_b;
SELECT pgjobs.jobs_add('leak_b') AS b_job \gset
RESET ROLE;
SELECT pgjobs._job_opaque_id(:a_live, 'regress_leak_a'::regrole) AS a_live_id \gset
SELECT pgjobs._job_opaque_id(:a_done, 'regress_leak_a'::regrole) AS a_done_id \gset
-- A's groups: one unlisted and holding B's job (so B's compute_groups_jobs_by_job names it, by
-- design), one unlisted and unknown to B: the secret.
INSERT INTO pgjobs.compute_groups (owner, name) VALUES ('regress_leak_a'::regrole, 'A known to B')
RETURNING id AS a_known_group \gset
INSERT INTO pgjobs.compute_groups (owner, name) VALUES ('regress_leak_a'::regrole, 'A secret')
RETURNING id AS a_group, opaque_id AS a_group_id \gset
INSERT INTO pgjobs.compute_group_jobs (compute_group_id, job_id) VALUES (:a_known_group, :b_job), (:a_group, :a_live);
ANALYZE pgjobs.jobs, pgjobs.job_history, pgjobs.compute_groups, pgjobs.compute_group_jobs;

-- The plans of a query over the range [lo, hi] with the bounds taken out, or the SQLSTATE that
-- refused it; planned as it comes and with sequential scans off, as a prober would, so that an
-- index on the column is used wherever it can be. No parallel plans (the workers launched vary
-- from run to run) and no JIT (the cost of a disabled scan would make every plan compile, for
-- seconds). A decoy range of the same shape holds no row.
CREATE FUNCTION regress.probe(query text, lo uuid, hi uuid, options text DEFAULT 'ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF')
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    seqscan text;
    line text;
    plan text := '';
BEGIN
    PERFORM set_config('max_parallel_workers_per_gather', '0', true);
    PERFORM set_config('jit', 'off', true);
    FOREACH seqscan IN ARRAY ARRAY['on', 'off'] LOOP
        PERFORM set_config('enable_seqscan', seqscan, true);
        FOR line IN EXECUTE format('EXPLAIN (%s) ', options) || format(query, lo, hi) LOOP
            plan := plan || replace(replace(line, lo::text, 'LO'), hi::text, 'HI') || E'\n';
        END LOOP;
    END LOOP;
    PERFORM set_config('enable_seqscan', 'on', true);
    RETURN plan;
EXCEPTION WHEN OTHERS THEN
    RETURN SQLSTATE;
END
$$;
CREATE FUNCTION regress.probe_all(secret uuid, relations text[], query text)
RETURNS TABLE (relation text, explain_analyze text, estimates text)
LANGUAGE plpgsql AS $$
DECLARE
    decoy uuid := 'ffffffff-ffff-7fff-bfff-ffffffffffff';
    hit text;
    miss text;
BEGIN
    FOREACH relation IN ARRAY relations LOOP
        hit := regress.probe(format(query, relation), secret, secret);
        miss := regress.probe(format(query, relation), decoy, decoy);
        explain_analyze := CASE WHEN hit ~ '^\w{5}$' THEN 'refused ' || hit
                                WHEN hit = miss THEN 'same'
                                ELSE 'DIFFERS' END;
        hit := regress.probe(format(query, relation), secret, secret, 'COSTS ON');
        miss := regress.probe(format(query, relation), decoy, decoy, 'COSTS ON');
        estimates := CASE WHEN hit ~ '^\w{5}$' THEN 'refused ' || hit
                          WHEN hit = miss THEN 'same'
                          ELSE 'DIFFERS' END;
        RETURN NEXT;
    END LOOP;
END
$$;

SET ROLE regress_leak_b;
-- A's live job.
SELECT * FROM regress.probe_all(:'a_live_id',
    ARRAY['jobs', 'job_history', 'job_list', 'jobs_find()', 'jobs_public', 'job_opaque_ids'],
    'SELECT 1 FROM pgjobs.%s WHERE opaque_id BETWEEN %%L AND %%L');
-- A's finished job.
SELECT * FROM regress.probe_all(:'a_done_id',
    ARRAY['job_history', 'job_list', 'jobs_find()', 'jobs_public', 'job_opaque_ids'],
    'SELECT 1 FROM pgjobs.%s WHERE opaque_id BETWEEN %%L AND %%L');
-- A's unlisted group.
SELECT * FROM regress.probe_all(:'a_group_id',
    ARRAY['compute_groups', 'compute_groups_public', 'compute_group_opaque_ids'],
    'SELECT 1 FROM pgjobs.%s WHERE opaque_id BETWEEN %%L AND %%L');
SELECT * FROM regress.probe_all(:'a_group_id', ARRAY['compute_groups_jobs_by_job'],
    'SELECT 1 FROM pgjobs.%s WHERE compute_group_opaque_id BETWEEN %%L AND %%L');
-- No privilege on a group's column at all, whatever the query; no column for a job's.
SELECT relation, has_column_privilege(relation, 'opaque_id', 'SELECT') AS may_read_opaque_id
FROM unnest(ARRAY['pgjobs.compute_groups']) relation;
SELECT count(*) AS job_opaque_id_columns FROM information_schema.columns
WHERE table_schema = 'pgjobs' AND table_name IN ('jobs', 'job_history') AND column_name = 'opaque_id';
SELECT regress.error_of('SELECT count(*) FROM pgjobs.jobs WHERE opaque_id IS NOT NULL');
SELECT regress.error_of('SELECT opaque_id FROM pgjobs.job_history');
SELECT regress.error_of('SELECT * FROM pgjobs.compute_groups');
-- B may not compute the id of A's unlisted job; naming itself as its owner computes an id that
-- names no job; an id changed in one bit, or made up, names none either.
SELECT regress.error_of(format('SELECT pgjobs._job_opaque_id(%s, %L::regrole)', :a_live, 'regress_leak_a')) AS computing_refused;
SELECT count(*) AS forged_owner_finds FROM pgjobs.jobs_public_lookup(pgjobs._job_opaque_id(:a_live, 'regress_leak_b'::regrole));
SELECT count(*) AS changed_finds FROM pgjobs.jobs_public_lookup(
    (SELECT overlay(opaque_id::text PLACING CASE WHEN right(opaque_id::text, 1) = '0' THEN '1' ELSE '0' END FROM 36)::uuid
     FROM pgjobs.job_opaque_ids WHERE id = :b_job));
SELECT count(*) AS made_up_finds FROM generate_series(1, 200) n,
    LATERAL pgjobs.jobs_public_lookup(md5(n::text)::uuid);
-- B still sees its own job's id, the group that holds its job, and the public rows.
SELECT id = :b_job AS own_job, opaque_id IS NOT NULL AS has_id FROM pgjobs.job_opaque_ids;
SELECT count(*) AS groups_seen FROM pgjobs.compute_group_opaque_ids;
SELECT job_id = :b_job AS own_job, compute_group_id = :a_known_group AS group FROM pgjobs.compute_groups_jobs_by_job;
SELECT count(*) AS jobs_public, (SELECT count(*) FROM pgjobs.compute_groups_public) AS groups_public
FROM pgjobs.jobs_public;
RESET ROLE;

-- A reads its own ids, live and finished, filters on them, and uses them.
SET ROLE regress_leak_a;
SELECT id = :a_live AS live, opaque_id = :'a_live_id' AS live_id_right FROM pgjobs.job_opaque_ids WHERE id = :a_live;
SELECT count(*) AS found_by_id FROM pgjobs.job_opaque_ids WHERE opaque_id IN (:'a_live_id', :'a_done_id');
SELECT name FROM pgjobs.compute_group_opaque_ids g JOIN pgjobs.compute_groups c USING (id)
WHERE g.opaque_id = :'a_group_id';
UPDATE pgjobs.compute_groups SET join_key = 'a-key' WHERE id = :a_group;
SELECT pgjobs.compute_group_set_secret(opaque_id, 'a secret of sixteen characters') FROM pgjobs.compute_group_opaque_ids WHERE id = :a_group;
UPDATE pgjobs.jobs SET name = 'shared by link' WHERE id = :a_live;
RESET ROLE;
-- Whoever A gives the ids to can use them.
SET ROLE regress_leak_b;
SELECT pgjobs.compute_group_check_secret(:'a_group_id', 'a-key', 'a secret of sixteen characters') AS joins,
       (SELECT name FROM pgjobs.jobs_public_lookup(:'a_live_id')) AS job_by_link,
       (SELECT count(*) FROM pgjobs.jobs_public_lookup(:'a_done_id')) AS finished_job_found;
RESET ROLE;
-- Once A lists its job, its id is public: jobs_public shows it, the same id.
SET ROLE regress_leak_a;
UPDATE pgjobs.jobs SET listed = true WHERE id = :a_live;
RESET ROLE;
SET ROLE regress_leak_b;
SELECT opaque_id = :'a_live_id' AS listed_id_right FROM pgjobs.jobs_public WHERE name = 'shared by link';
SELECT pgjobs._job_opaque_id(:a_live, 'regress_leak_a'::regrole) = :'a_live_id' AS computes_listed;
RESET ROLE;

-- A's join credentials in plain text (a worker presents them): B's estimates for a condition on
-- them followed the statistics of A's rows too. Now B may not name those columns of credential,
-- and credential_secrets shows B only its own rows, with no estimate or index for a condition.
SET ROLE regress_leak_a;
INSERT INTO pgjobs.creds_list (label) VALUES ('a joins') RETURNING id AS a_list \gset
INSERT INTO pgjobs.credential (creds_list_id, compute_group_opaque_id, identifier, secret)
SELECT :a_list, :'a_group_id', 'a-key-' || i, 'a-secret-' || i FROM generate_series(1, 50) i;
RESET ROLE;
ANALYZE pgjobs.credential;
SET ROLE regress_leak_b;
SELECT column_name, regress.error_of(format('EXPLAIN SELECT 1 FROM pgjobs.credential WHERE %I < ''m''', column_name)) AS refused
FROM unnest(ARRAY['identifier', 'secret']) column_name;
SELECT regress.error_of($$EXPLAIN SELECT 1 FROM pgjobs.credential WHERE compute_group_opaque_id IS NOT NULL$$) AS group_refused;
SELECT count(*) AS own_credentials FROM pgjobs.credential_secrets;
SELECT regress.probe($$SELECT * FROM pgjobs.credential_secrets WHERE secret BETWEEN %L::text AND %L::text$$,
                     '00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff', 'COSTS ON')
     = regress.probe($$SELECT * FROM pgjobs.credential_secrets WHERE secret BETWEEN %L::text AND %L::text$$,
                     '00000000-0000-0000-0000-000000000000', '00000000-0000-0000-0000-000000000001', 'COSTS ON')
       AS estimates_the_same;
RESET ROLE;
SET ROLE regress_leak_a;
SELECT count(*) AS a_reads_its_secrets FROM pgjobs.credential_secrets WHERE secret LIKE 'a-secret-%';
RESET ROLE;

-- Clean up.
DELETE FROM pgjobs.creds_list WHERE id = :a_list;
SELECT pgjobs.jobs_abort(:a_live) AS a_live_status, pgjobs.jobs_abort(:b_job) AS b_status;
DELETE FROM pgjobs.job_history WHERE id IN (:a_live, :a_done, :b_job);
DELETE FROM pgjobs.compute_groups WHERE id IN (:a_known_group, :a_group);
DROP FUNCTION regress.probe_all(uuid, text[], text);
DROP FUNCTION regress.probe(text, uuid, uuid, text);
DROP OWNED BY regress_leak_a, regress_leak_b;
DROP ROLE regress_leak_a, regress_leak_b;
