-- A table of the extension whose statistics say it is empty while it has pages (measured by a
-- VACUUM or ANALYZE after a drain, before the next burst of adds) is planned as holding rows in
-- proportion to its pages, as PostgreSQL plans a table never measured (src/estimates.rs). Planned
-- as holding one row, every index path cost as little as a probe of one id, and reads of one job
-- were planned as reads of every job through an index that their conditions implied. Here jobs
-- holds 20,000 jobs, 2,000 of them batch jobs; ANALYZE measures them, and then the table's size
-- is set to what a VACUUM of it empty leaves (the columns' statistics stay those of the ANALYZE).
SELECT regress.reset();
CREATE ROLE regress_estimates IN ROLE pgjobs_user;
SET ROLE regress_estimates;
SELECT count(*) AS added
FROM pgjobs.jobs_add_batch((SELECT jsonb_agg('{"task": "noop"}'::jsonb) FROM generate_series(1, 18000)));
-- Statistics that saw no batch job, then 2,000 posted: a post of one more counts its job, found
-- by its id, not through an index of every batch job (which those statistics price as empty).
RESET ROLE;
ANALYZE pgjobs.jobs;
SET ROLE regress_estimates;
SELECT count(*) AS posted
FROM pgjobs.batch_post_many((SELECT jsonb_agg(jsonb_build_object('command', 'true', 'args', jsonb_build_array(n::text)))
                             FROM generate_series(1, 2000) n));
CREATE TEMP VIEW regress_pages AS
SELECT sum(pg_stat_get_xact_blocks_fetched(r)) AS pages
FROM (SELECT 'pgjobs.jobs'::regclass UNION ALL SELECT indexrelid FROM pg_index WHERE indrelid = 'pgjobs.jobs'::regclass) t(r);
BEGIN;
SELECT pages AS start_pages FROM regress_pages \gset
SELECT pgjobs.batch_post('true', ARRAY['one more']) > 0 AS posted;
SELECT pages - :start_pages < 40 AS a_few_pages FROM regress_pages;
ROLLBACK;
SELECT id AS batch_job, hash AS batch_hash FROM pgjobs.batch_jobs ORDER BY id DESC LIMIT 1 \gset
RESET ROLE;
ANALYZE pgjobs.jobs;
CREATE TEMP TABLE regress_other AS SELECT n FROM generate_series(1, 20000) n;
CREATE FUNCTION pg_temp.rows_planned(query text) RETURNS float8
LANGUAGE plpgsql AS $$
DECLARE
    plan json;
BEGIN
    EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
    RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::float8;
END
$$;

BEGIN;
UPDATE pg_class SET reltuples = 0, relpages = pg_relation_size(oid) / current_setting('block_size')::integer
WHERE oid IN ('pgjobs.jobs'::regclass, 'regress_other'::regclass)
   OR oid IN (SELECT indexrelid FROM pg_index WHERE indrelid = 'pgjobs.jobs'::regclass);
-- The rows of jobs from its pages; a table of no extension keeps PostgreSQL's estimate.
SELECT pg_temp.rows_planned('SELECT * FROM pgjobs.jobs') > 10000 AS jobs_rows_from_pages,
       pg_temp.rows_planned('SELECT * FROM regress_other') AS other_rows;
-- A member's read of one of its batch jobs, by id and by hash, reads a few pages of jobs and its
-- indexes, not those of every batch job.
SELECT pages AS start_pages FROM regress_pages \gset
SELECT regress.as_role('regress_estimates', format('SELECT status FROM pgjobs.batch_jobs WHERE id = %s', :batch_job)) AS by_id;
SELECT pages - :start_pages < 15 AS a_few_pages FROM regress_pages;
SELECT pages AS start_pages FROM regress_pages \gset
SELECT regress.as_role('regress_estimates', format('SELECT status FROM pgjobs.batch_get(%L)', :'batch_hash')) AS by_hash;
SELECT pages - :start_pages < 15 AS a_few_pages FROM regress_pages;
ROLLBACK;
