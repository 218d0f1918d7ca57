-- Claims start past the last job their queue's claims took (src/api/heads.rs): a claim does not
-- read again the jobs other workers hold or the entries of jobs finished since the last vacuum.
-- Every change that puts a job below that start moves it back: an add, a release, a claim that
-- rolls back. (pg_jobs.claim_rescan_interval, after which a claim reads from the start anyway,
-- is an hour here, then 0.)
SELECT regress.reset();
SET pg_jobs.claim_rescan_interval = '1h';
CREATE ROLE regress_head IN ROLE pgjobs_user;
SET ROLE regress_head;
-- The entries of the ready index this transaction's statements read.
CREATE TEMP VIEW regress_head_reads AS
SELECT pg_stat_get_xact_tuples_returned('pgjobs.jobs_ready'::regclass) AS entries;
SELECT count(*) AS added
FROM pgjobs.jobs_add_batch((SELECT jsonb_agg(jsonb_build_object('task', 'head', 'payload', jsonb_build_object('n', n)))
                            FROM generate_series(1, 100) n));
-- 90 claimed and held, then one more; the next claim reads past them, not through them. (The
-- first claim after adds may not move the start past them: it cannot tell its own snapshot's
-- adds from those that committed after it looked.)
SELECT count(*) AS held FROM pgjobs.jobs_claim('w', n => 90);
SELECT payload FROM pgjobs.jobs_claim('w', n => 1);
BEGIN;
SELECT entries FROM regress_head_reads \gset start_
SELECT payload FROM pgjobs.jobs_claim('w', n => 1);
SELECT entries - :start_entries < 10 AS read_past_the_held FROM regress_head_reads;
COMMIT;

-- An add of a more urgent job, or of one due earlier, is claimed next.
SELECT pgjobs.jobs_add('urgent', priority => -1) > 0 AS added;
CREATE TEMP TABLE regress_head_urgent AS SELECT id, lease_token, task FROM pgjobs.jobs_claim('w', n => 1);
SELECT task FROM regress_head_urgent;
SELECT pgjobs.jobs_add('overdue', run_at => now() - interval '1 day') > 0 AS added;
SELECT task FROM pgjobs.jobs_claim('w', n => 1);
-- The urgent job given back by its worker, once claims went past it, is claimed next.
SELECT payload FROM pgjobs.jobs_claim('w', n => 1);
SELECT count(*) AS released FROM regress_head_urgent h, pgjobs.jobs_release(ARRAY[h.id], ARRAY[h.lease_token]);
SELECT task FROM pgjobs.jobs_claim('w', n => 1);
-- A job added, or given back, in the claim's own transaction is below the start until that
-- transaction commits, but the transaction sees it, and so does its claim.
BEGIN;
SELECT pgjobs.jobs_add('own', run_at => now() - interval '3 days') > 0 AS added;
SELECT task FROM pgjobs.jobs_claim('w', n => 1);
ROLLBACK;
SELECT pgjobs.jobs_add('urgent again', priority => -5) > 0 AS added;
CREATE TEMP TABLE regress_head_again AS SELECT id, lease_token, task FROM pgjobs.jobs_claim('w', n => 1);
SELECT task FROM regress_head_again;
SELECT payload FROM pgjobs.jobs_claim('w', n => 1);
SELECT payload FROM pgjobs.jobs_claim('w', n => 1);
BEGIN;
SELECT count(*) AS released FROM regress_head_again h, pgjobs.jobs_release(ARRAY[h.id], ARRAY[h.lease_token]);
SELECT task FROM pgjobs.jobs_claim('w', n => 1);
ROLLBACK;
-- A claim that rolls back, or whose subtransaction does, gives its job back to the next claim.
BEGIN;
SELECT payload FROM pgjobs.jobs_claim('w', n => 1);
ROLLBACK;
SELECT payload FROM pgjobs.jobs_claim('w', n => 1);
BEGIN;
SAVEPOINT s;
SELECT payload FROM pgjobs.jobs_claim('w', n => 1);
ROLLBACK TO SAVEPOINT s;
COMMIT;
SELECT payload FROM pgjobs.jobs_claim('w', n => 1);

-- With the interval at 0, every claim reads from the start, through every job held.
RESET ROLE;
SET pg_jobs.claim_rescan_interval = 0;
SET ROLE regress_head;
BEGIN;
SELECT entries FROM regress_head_reads \gset start_
SELECT payload FROM pgjobs.jobs_claim('w', n => 1);
SELECT entries - :start_entries > 90 AS read_from_the_start FROM regress_head_reads;
COMMIT;
-- A member may not change it.
SELECT regress.error_of('SET pg_jobs.claim_rescan_interval = ''1h''') AS member_sets;
RESET ROLE;
RESET pg_jobs.claim_rescan_interval;
DROP OWNED BY regress_head;
DROP ROLE regress_head;
SELECT regress.reset();
