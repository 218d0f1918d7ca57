-- A worker's calls that name their jobs (complete, fail, retry, release, heartbeat, progress,
-- snooze, abort) find them by the primary key, whatever the statistics say; only a claim reads the
-- ready index. The ready index ends with the id, so any plan may probe an id through it, reading
-- the whole index for each: under a snapshot held for minutes, VACUUM left pgjobs.jobs with
-- reltuples 0 over 22,000 pages, every path looked equally cheap, and the completions were
-- planned that way (each read 200,000 entries and their heap tuples; the queue stopped). Here the
-- statistics say the same, and each call's reads of both indexes are counted: this backend's, not
-- yet reported, read in the transaction that made them (as regress queue_hot reads its updates).
SELECT regress.reset();
CREATE ROLE regress_probes IN ROLE pgjobs_user;
SET ROLE regress_probes;
SELECT count(*) AS added
FROM pgjobs.jobs_add_batch((SELECT jsonb_agg(jsonb_build_object('task', 'probe', 'payload', jsonb_build_object('n', n),
                                                             'max_attempts', 3))
                            FROM generate_series(1, 200) n));
RESET ROLE;
UPDATE pg_class SET reltuples = 0, relpages = pg_relation_size(oid) / current_setting('block_size')::integer
WHERE oid IN ('pgjobs.jobs'::regclass, 'pgjobs.jobs_pkey'::regclass, 'pgjobs.jobs_ready'::regclass);
SET ROLE regress_probes;
CREATE TEMP VIEW regress_probe_reads AS
SELECT pg_stat_get_xact_numscans('pgjobs.jobs_ready'::regclass) AS ready_scans,
       pg_stat_get_xact_tuples_returned('pgjobs.jobs_ready'::regclass) AS ready_read,
       pg_stat_get_xact_tuples_returned('pgjobs.jobs_pkey'::regclass) AS pkey_read;

-- The claim reads the ready index, and only its first entries.
BEGIN;
SELECT * FROM regress_probe_reads \gset start_
CREATE TEMP TABLE claimed AS SELECT * FROM pgjobs.jobs_claim('probe', n => 10);
SELECT count(*) AS claimed, min(r.ready_scans) - :start_ready_scans > 0 AS read_ready,
       min(r.ready_read) - :start_ready_read <= 20 AS read_few
FROM claimed, regress_probe_reads r;
COMMIT;

-- Each call naming jobs (at most 10) reads as many entries of the primary key, and none of the
-- ready index.
CREATE FUNCTION pg_temp.probes(call text, OUT ready_read bigint, OUT pkey_probes boolean)
LANGUAGE plpgsql AS $$
DECLARE
    before record;
BEGIN
    SELECT * INTO before FROM regress_probe_reads;
    EXECUTE call;
    SELECT r.ready_read - before.ready_read, r.pkey_read - before.pkey_read BETWEEN 1 AND 10
    INTO ready_read, pkey_probes FROM regress_probe_reads r;
END
$$;
-- A job not claimed, found before: reads of the table to find it are not the call's.
CREATE TEMP TABLE waiting AS
SELECT id FROM pgjobs.jobs WHERE task = 'probe' AND status = 'created' ORDER BY id DESC LIMIT 1;
BEGIN;
SELECT v.call, p.* FROM (VALUES
    ('SELECT count(*) FROM claimed c, pgjobs.jobs_heartbeat(c.id, c.lease_token) h'),
    ('SELECT count(*) FROM claimed c, pgjobs.jobs_progress(c.id, c.lease_token, ''{"step": 1}'') p'),
    ('SELECT pgjobs.jobs_complete(array_agg(id), array_agg(lease_token)) FROM (SELECT * FROM claimed ORDER BY id LIMIT 2) c'),
    ('SELECT pgjobs.jobs_complete(id, lease_token) FROM (SELECT * FROM claimed ORDER BY id OFFSET 2 LIMIT 1) c'),
    ('SELECT pgjobs.jobs_fail(array_agg(id), array_agg(lease_token), array_agg(''retry''::text)) FROM (SELECT * FROM claimed ORDER BY id OFFSET 3 LIMIT 2) c'),
    ('SELECT pgjobs.jobs_release(array_agg(id), array_agg(lease_token)) FROM (SELECT * FROM claimed ORDER BY id OFFSET 5 LIMIT 2) c'),
    ('SELECT pgjobs.jobs_abort(id) FROM (SELECT * FROM claimed ORDER BY id OFFSET 7 LIMIT 1) c'),
    ('SELECT pgjobs.jobs_snooze(id, lease_token, ''1 hour'') FROM (SELECT * FROM claimed ORDER BY id OFFSET 8 LIMIT 1) c'),
    ('SELECT pgjobs.jobs_abort(id) FROM waiting'),
    ('SELECT pgjobs.jobs_complete(array_agg(id), array_agg(lease_token)) FROM (SELECT * FROM claimed ORDER BY id OFFSET 9) c')
) v(call), pg_temp.probes(v.call) p;
COMMIT;
SELECT status, count(*) FROM pgjobs.jobs WHERE task = 'probe' GROUP BY status ORDER BY status;
SELECT status, count(*) FROM pgjobs.job_history WHERE task = 'probe' GROUP BY status ORDER BY status;
DROP TABLE claimed, waiting;
DROP VIEW regress_probe_reads;
DROP FUNCTION pg_temp.probes;
RESET ROLE;
ANALYZE pgjobs.jobs;
DROP ROLE regress_probes;

-- A member's reads of its live jobs can find them by index, never only by reading every
-- identity's jobs: its queue jobs through jobs_ready (whose first column is who may claim them,
-- their owner), the SQL and batch jobs the extension runs for it through jobs_extension_owner
-- (policy owner_reads; job_opaque_ids says the same). Sequential scans are priced out, so a read
-- that had no index path would still be one, and counted.
CREATE ROLE regress_probes_few IN ROLE pgjobs_user;
CREATE ROLE regress_probes_many IN ROLE pgjobs_user;
SET ROLE regress_probes_many;
SELECT count(*) AS added FROM pgjobs.jobs_add_batch((SELECT jsonb_agg(jsonb_build_object('task', 'many'))
                                                     FROM generate_series(1, 500)));
SET ROLE regress_probes_few;
SELECT count(*) AS added FROM pgjobs.jobs_add_batch('[{"task": "few"}, {"task": "few", "queue": "other"}]');
SELECT count(*) AS added FROM pgjobs.jobs_add_sql('SELECT 1', run_at => now() + interval '1 day');
RESET ROLE;
ANALYZE pgjobs.jobs;
SET enable_seqscan = off;
SET ROLE regress_probes_few;
BEGIN;
SELECT pg_stat_get_xact_numscans('pgjobs.jobs'::regclass) AS start_seq \gset
SELECT count(*) AS own_live_jobs FROM pgjobs.jobs;
SELECT count(*) AS own_opaque_ids FROM pgjobs.job_opaque_ids;
SELECT count(*) AS found FROM pgjobs.jobs_find(status => 'created');
SELECT queue, ready, scheduled FROM pgjobs.jobs_queues ORDER BY queue;
SELECT pg_stat_get_xact_numscans('pgjobs.jobs'::regclass) - :start_seq AS sequential_scans_of_jobs;
COMMIT;
-- Only finished jobs are completed or failed: jobs_find does not read jobs for them (it read every
-- live job newest first, for none: a second with a million queued).
CREATE TEMP VIEW regress_reads_of_jobs AS
SELECT sum(pg_stat_get_xact_numscans(c.oid)) AS scans FROM pg_class c
WHERE c.oid = 'pgjobs.jobs'::regclass OR c.oid IN (SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = 'pgjobs.jobs'::regclass);
SELECT pgjobs.jobs_complete(c.id, c.lease_token) AS completed FROM pgjobs.jobs_claim('w', ARRAY['other'], 1) c;
BEGIN;
SELECT scans AS start_scans FROM regress_reads_of_jobs \gset
SELECT count(*) AS failed_found FROM pgjobs.jobs_find(status => 'failed');
SELECT count(*) AS completed_found FROM pgjobs.jobs_find(status => 'completed', queue => 'other');
SELECT scans - :start_scans AS reads_of_jobs FROM regress_reads_of_jobs;
SELECT count(*) AS created_found FROM pgjobs.jobs_find(status => 'created');
SELECT scans - :start_scans > 0 AS live_jobs_read FROM regress_reads_of_jobs;
COMMIT;
DROP VIEW regress_reads_of_jobs;
RESET ROLE;
RESET enable_seqscan;
-- What that relies on holds for every row: a job claimable by another identity than its owner's
-- is refused, even to a direct write.
SELECT regress.error_of($$UPDATE pgjobs.jobs SET claimable_by = 'regress_probes_many'::regrole
                          WHERE owner = 'regress_probes_few'::regrole AND task = 'few'$$) AS claimable_by_another;
SELECT regress.reset();
DROP ROLE regress_probes_few, regress_probes_many;
