-- What one poster can make a post cost: the cycle check of a replaced job visits each job
-- upstream once (it followed every path, twice the work with each level of a lattice), up to a
-- bound with a clear error past it; and a transaction that posts many jobs holds a bounded
-- number of locks (one advisory lock per post, held to the commit, filled the server's lock
-- table for everyone).
SET TimeZone = 'UTC';
SELECT regress.reset();
TRUNCATE pgjobs.job_dependencies, pgjobs.batch_computers;
CREATE ROLE regress_lattice IN ROLE pgjobs_user;
SET ROLE regress_lattice;

-- A lattice: two jobs a level, each waiting for both jobs of the level below.
CREATE TEMP TABLE lattice (level integer, side integer, id bigint);
CREATE FUNCTION pg_temp.grow(top integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    n integer;
    side integer;
BEGIN
    FOR n IN coalesce((SELECT max(l.level) + 1 FROM lattice l), 0) .. top LOOP
        FOR side IN 1 .. 2 LOOP
            INSERT INTO lattice
            SELECT n, side, pgjobs.batch_post(format('step-%s-%s', n, side),
                                              depends_on => coalesce((SELECT array_agg(l.id::text ORDER BY l.id) FROM lattice l
                                                                      WHERE l.level = n - 1), '{}'));
        END LOOP;
    END LOOP;
END
$$;
SELECT pg_temp.grow(20);
SELECT count(*) AS jobs, count(*) FILTER (WHERE status = 'PENDING') AS pending,
       count(*) FILTER (WHERE status = 'WAITING') AS waiting
FROM pgjobs.batch_jobs;
-- The bottom job posted again to wait for the top: a cycle, refused, with its path (one job a
-- level), and nothing changed.
RESET ROLE;
SELECT regress.fingerprint() AS before \gset
SET ROLE regress_lattice;
SELECT regress.error_of(format($$SELECT pgjobs.batch_post('step-0-1', depends_on => ARRAY['%s'])$$,
                               (SELECT id FROM lattice WHERE level = 20 AND side = 1))) AS cycle_of_21_levels;
RESET ROLE;
SELECT regress.fingerprint() = :'before' AS cycle_changed_nothing;
SET ROLE regress_lattice;
-- A top job posted again with the same dependencies: no cycle, replaced.
SELECT pgjobs.batch_post('step-20-1', depends_on => (SELECT array_agg(id::text) FROM lattice WHERE level = 19))
       = (SELECT id FROM lattice WHERE level = 20 AND side = 1) AS top_replaced;

-- 200 levels: still found, the path through every level.
SELECT pg_temp.grow(199);
SELECT count(*) AS jobs FROM pgjobs.batch_jobs;
SELECT left(e, 46) AS cycle_of_200_levels, array_length(string_to_array(e, ' → '), 1) AS jobs_in_path
FROM regress.error_of(format($$SELECT pgjobs.batch_post('step-0-2', depends_on => ARRAY['%s'])$$,
                             (SELECT id FROM lattice WHERE level = 199 AND side = 2))) e;
SELECT pgjobs.batch_post('step-199-2', depends_on => (SELECT array_agg(id::text) FROM lattice WHERE level = 198))
       = (SELECT id FROM lattice WHERE level = 199 AND side = 2) AS top_of_200_replaced;
SELECT count(*) AS waits FROM pgjobs.job_dependencies;

-- Past the bound: a job that waits for more than 10,000 jobs (the fixture writes its waits
-- directly: ids of jobs that never were, as of a month dropped) makes a replace that would
-- wait for it refuse, with its own SQLSTATE, and change nothing.
SELECT pgjobs.batch_post('wide') AS wide \gset
SELECT pgjobs.batch_post('replaced-later') AS replaced_later \gset
RESET ROLE;
INSERT INTO pgjobs.job_dependencies (on_job, job_id, owner)
SELECT 1000000000 + g, :wide, 'regress_lattice'::regrole FROM generate_series(1, 10000) g;
SELECT regress.fingerprint() AS before \gset
SET ROLE regress_lattice;
SELECT regress.error_of(format($$SELECT pgjobs.batch_post('replaced-later', depends_on => ARRAY['%s'])$$, :wide)) AS too_far_upstream;
RESET ROLE;
SELECT regress.fingerprint() = :'before' AS bound_changed_nothing;
-- At the bound itself it is checked (10,000 jobs upstream: the wide job and 9,999 waits).
DELETE FROM pgjobs.job_dependencies WHERE job_id = :wide AND on_job = 1000010000;
SET ROLE regress_lattice;
SELECT pgjobs.batch_post('replaced-later', depends_on => ARRAY[:'wide']) = :replaced_later AS at_the_bound_replaced;
RESET ROLE;
DELETE FROM pgjobs.job_dependencies WHERE job_id = :wide;

-- Many posts in one transaction: the locks it holds do not grow with them.
SET ROLE regress_lattice;
BEGIN;
SELECT count(pgjobs.batch_post('many-' || g, run_at => now() + interval '1 day')) AS posted
FROM generate_series(1, 1000) g;
SELECT count(*) FILTER (WHERE locktype = 'advisory') <= 16 AS advisory_locks_bounded,
       count(*) < 100 AS locks_bounded
FROM pg_locks WHERE pid = pg_backend_pid();
-- The same commands again, in the same transaction: replaced, still no more locks.
SELECT count(DISTINCT pgjobs.batch_post('many-' || g, run_at => now() + interval '2 days')) AS replaced
FROM generate_series(1, 1000) g;
SELECT count(*) FILTER (WHERE locktype = 'advisory') <= 16 AS advisory_locks_bounded
FROM pg_locks WHERE pid = pg_backend_pid();
COMMIT;
RESET ROLE;
SELECT count(*) AS many_jobs FROM pgjobs.jobs WHERE payload ->> 'command' LIKE 'many-%';
SELECT count(*) AS tally_differences FROM pgjobs._batch_tally_differences();
