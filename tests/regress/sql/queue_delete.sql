-- jobs_delete, as member roles: a waiting job removed, with no history; its key free again; the
-- job that depends on it and a waiter see it end as an abort would. Passed over, not refused: a
-- leased job, a SQL job, another identity's job, one that does not exist. Refused, nothing
-- changed: no ids, more than 1000, a null id.
SELECT regress.reset();
CREATE ROLE regress_deleter IN ROLE pgjobs_user;
CREATE ROLE regress_deleter_other IN ROLE pgjobs_user;
GRANT USAGE ON SCHEMA regress TO regress_deleter, regress_deleter_other;
SET ROLE regress_deleter;
SELECT pgjobs.jobs_add('keyed', queue => 'tidy', key => 'report:7', run_at => now() + interval '1 day') AS keyed \gset
SELECT pgjobs.jobs_add('after', queue => 'tidy', depends_on => ARRAY[:keyed]) AS after \gset
SELECT pgjobs.jobs_add('held', queue => 'held') AS held \gset
SELECT count(*) AS held_claimed FROM pgjobs.jobs_claim('w', ARRAY['held']);
SELECT pgjobs.jobs_add_sql('SELECT 1', run_at => now() + interval '1 day') AS sql_job \gset
RESET ROLE;
SELECT pgjobs.jobs_add('theirs', queue => 'tidy') AS theirs \gset
UPDATE pgjobs.jobs SET owner = 'regress_deleter_other'::regrole, claimable_by = 'regress_deleter_other'::regrole
WHERE id = :theirs;

-- Passed over: the leased job, the SQL job, another's, one that does not exist.
SELECT regress.fingerprint() AS before \gset
SELECT regress.as_role('regress_deleter', format('SELECT count(*) FROM pgjobs.jobs_delete(ARRAY[%s, %s, %s, 999999])',
                                                 :held, :sql_job, :theirs)) AS deleted;
SELECT regress.fingerprint() = :'before' AS unchanged;

-- Refused, nothing changed.
SELECT what, regress.as_role('regress_deleter', call) AS refused
FROM (VALUES
    ('no ids', 'SELECT count(*) FROM pgjobs.jobs_delete(''{}'')'),
    ('null ids', 'SELECT count(*) FROM pgjobs.jobs_delete(NULL)'),
    ('a null id', 'SELECT count(*) FROM pgjobs.jobs_delete(ARRAY[1, NULL])'),
    ('1001 ids', 'SELECT count(*) FROM pgjobs.jobs_delete(ARRAY(SELECT generate_series(1, 1001)::bigint))'))
    AS c(what, call);
SELECT regress.fingerprint() = :'before' AS unchanged;

-- Deleted: gone from jobs and from history; its key takes a new job; the job that depended on it
-- is blocked, as after an abort that its queue's history did not keep.
SET ROLE regress_deleter;
SELECT d = :keyed AS deleted FROM pgjobs.jobs_delete(ARRAY[:keyed, :held]) d;
SELECT count(*) AS left_anywhere FROM pgjobs.job_list WHERE id = :keyed;
SELECT pgjobs.jobs_add('keyed', queue => 'tidy', key => 'report:7') > :keyed AS key_free_again;
SELECT status, replace(error, :'keyed', 'N') AS blocked_by FROM pgjobs.jobs_result(:after);
SELECT count(*) AS deleted_again FROM pgjobs.jobs_delete(ARRAY[:keyed]);
RESET ROLE;

-- The other identity deletes its own job only; a superuser any.
SELECT regress.as_role('regress_deleter_other', format('SELECT string_agg(d::text, '','') FROM pgjobs.jobs_delete(ARRAY[%s, %s]) d', :theirs, :after)) = :'theirs' AS other_deleted_its_own;
SELECT count(*) AS superuser_deleted FROM pgjobs.jobs_delete(ARRAY[:after]);

SELECT regress.reset();
DELETE FROM pgjobs.job_runs;
DROP OWNED BY regress_deleter, regress_deleter_other;
DROP ROLE regress_deleter, regress_deleter_other;
